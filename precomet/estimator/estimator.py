"""The loaded estimator: one reader whatever the encoder.

An :class:`Estimator` is a :class:`Reader` (a frozen sentence encoder and the network that reads its vectors) plus
the ``precomet.json`` metadata that turns the network's standardised scores into utilities. The encoder is a
registered one (:mod:`precomet.encoders`: e5-small run by its own engine, MiniLM, ``hf:DIR``, …) or the checkpoint's
own Hugging Face encoder (fine-tuned, or read with a layer-wise mix), run as a registered
:class:`~precomet.encoders.transformer.TransformerEncoder`; either way its vectors are cached by the encoder's
identity. Everything downstream — one device, int8, Lightning devices, shards across machines, pools in chunks —
uses only the :class:`Reader`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from precomet.encoders import SentenceEncoder, encode_cached
from precomet.errors import PrecometError
from precomet.estimator.data import check_batch_size, warn_truncated
from precomet.estimator.metadata import CheckpointMeta
from precomet.values import is_blank

PRECISIONS = ("fp32", "int8")
"""``int8``: dynamic int8 quantisation (per-channel weights) of every ``nn.Linear`` of the network and of a Hugging
Face encoder (CPU only): faster for a Hugging Face encoder, predictions close to but not identical with fp32. An
encoder run by its own engine (e5-small) keeps it; only the head is quantised there, which saves nothing
measurable."""


@dataclass(frozen=True)
class Reader:
    """A frozen sentence encoder and the network (an
    :class:`~precomet.estimator.model.EstimatorNetwork` or an :class:`~precomet.estimator.model.EnsembleHead`)
    that reads its vectors."""

    encoder: SentenceEncoder
    network: torch.nn.Module

    def lengths(self, sources: Sequence[str]) -> list[int]:
        """One length per source to sort batches by (characters); warns once about sources that will be
        truncated."""
        self.warn_truncated(sources)
        return [len(s) for s in sources]

    def warn_truncated(self, sources: Sequence[str]) -> None:
        """Count the sources longer than the encoder reads in one warning (encoders that truncate tokens)."""
        limit = self.encoder.max_tokens
        if limit is not None:
            warn_truncated(self.encoder.count_truncated(sources), len(sources), limit)

    def standardised(
        self, sources: Sequence[str], *, batch_size: int, device: str, progress: bool | None = None, warn: bool = True
    ) -> torch.Tensor:
        """Float32 scores on the CPU, in input order; ``warn=False`` leaves truncation warnings to :meth:`lengths`.
        ``batch_size`` sizes the encoder's batches where a caller may (a Hugging Face model)."""
        check_batch_size(batch_size)
        if warn:
            self.warn_truncated(sources)
        encoder = self.encoder.batched(batch_size).to(device)  # the encoder runs where the head runs
        features = torch.from_numpy(encode_cached(encoder, list(sources), progress=progress)).float()
        head: Any = self.network.to(device).eval()
        with torch.inference_mode():
            return head.score_features(features.to(device)).float().cpu()

    def int8(self) -> Reader:
        """A copy whose network's linear layers, and the encoder's where it allows, run in dynamic int8 on the CPU
        (see :data:`PRECISIONS`)."""
        with warnings.catch_warnings():  # torch.ao's migration notice; the eager API still works in torch 2.x
            warnings.simplefilter("ignore")
            # per-output-channel weight scales: correlation with fp32 ~0.98 instead of ~0.955 per tensor
            network = quantize_dynamic(
                self.network.cpu().eval(), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
            )
        return Reader(encoder=self.encoder.int8(), network=network)


@dataclass(frozen=True)
class Estimator:
    """A loaded checkpoint: its reader (network in eval mode) and its ``precomet.json`` metadata."""

    reader: Reader
    meta: CheckpointMeta
    path: Path | None = None

    @property
    def model(self) -> torch.nn.Module:
        """The reader's network."""
        return self.reader.network

    def to_utility(self, standardised: torch.Tensor) -> torch.Tensor:
        return to_utility(self.meta, standardised)

    def utilities(self, standardised: torch.Tensor, sources: Sequence[str]) -> np.ndarray:
        """Utilities (higher = annotate first) from the reader's scores, refused when any is not finite."""
        values = self.to_utility(standardised.double()).numpy()
        return check_predictions(values, sources, checkpoint=self.path or "(in memory)")

    def int8(self) -> Estimator:
        """A copy whose reader runs in dynamic int8 on the CPU (see :data:`PRECISIONS`)."""
        return replace(self, reader=self.reader.int8())

    def predict(
        self,
        sources: Sequence[str],
        *,
        batch_size: int = 64,
        device: str = "cpu",
        progress: bool | None = None,
        precision: str = "fp32",
    ) -> np.ndarray:
        """Utility (higher = annotate first) of each source, in input order, on one ``device``. Sources longer than
        the reader reads are truncated and counted in a warning."""
        device = check_precision(precision, device)
        sources = check_sources(sources)
        estimator = self.int8() if precision == "int8" else self
        values = estimator.reader.standardised(sources, batch_size=batch_size, device=device, progress=progress)
        return self.utilities(values, sources)


def to_utility(meta: CheckpointMeta, standardised: torch.Tensor) -> torch.Tensor:
    """Undo the training standardisation recorded in ``meta`` and orient so that higher = annotate first."""
    value = standardised * meta.standardisation.std + meta.standardisation.mean
    return value if meta.direction == "higher_first" else -value


def check_precision(precision: str, device: str) -> str:
    """``device`` checked (:func:`check_device`) after refusing an unknown ``precision``, then int8 off the CPU."""
    if precision not in PRECISIONS:
        raise PrecometError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    device = check_device(device)
    if precision == "int8" and device != "cpu":
        raise PrecometError(f"precision int8 runs on CPU only, got device {device!r}")
    return device


def check_sources(sources: Sequence[str]) -> list[str]:
    """Non-empty list of non-empty strings; errors name the first bad position and count the others."""
    sources = list(sources)
    if not sources:
        raise PrecometError("no sources to score (empty list)")
    bad = [i for i, s in enumerate(sources) if not isinstance(s, str) or is_blank(s)]
    if bad:
        raise PrecometError(f"empty source at position {bad[0]} ({len(bad)} empty source(s) in {len(sources)})")
    return sources


def check_predictions(utilities: Any, sources: Sequence[str], *, checkpoint: Any) -> np.ndarray:
    """``utilities`` as a float array, refused when any is NaN or infinite (a damaged or overflowing head): never
    written out as ``null``. The error names ``checkpoint`` and the first source concerned."""
    values = np.asarray(utilities, dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        first = str(sources[int(bad[0])])
        shown = first if len(first) <= 60 else first[:57] + "..."
        raise PrecometError(
            f"checkpoint {checkpoint}: non-finite prediction (NaN or inf) for {bad.size} of {len(values)} sources,"
            f" the first at position {int(bad[0])} ({shown!r}); the checkpoint is damaged"
        )
    return values


def check_device(device: Any) -> str:
    """``device`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``) when this machine can run on it; otherwise a
    :class:`PrecometError` naming the parameter ``device`` and saying why (a torch build without CUDA, no GPU
    visible, an index beyond the GPUs there are), before anything is loaded."""
    name = str(device).strip()
    try:
        parsed = torch.device(name)
    except (RuntimeError, ValueError, TypeError) as err:
        raise PrecometError(
            f"{{device}}{name!r} is not a device name such as cpu, cuda or cuda:1 ({str(err).split(':')[0]})",
            param="device",
        ) from None
    if parsed.type == "cpu":
        return name
    if parsed.type == "cuda":
        if not torch.backends.cuda.is_built():
            raise PrecometError(
                f"{{device}}{name}: this torch build has no CUDA (torch {torch.__version__} is CPU-only); use"
                " {device}cpu or install a CUDA build of torch",
                param="device",
            )
        count = torch.cuda.device_count()
        if count == 0:
            raise PrecometError(
                f"{{device}}{name}: no CUDA GPU is visible on this machine; use {{device}}cpu", param="device"
            )
        if parsed.index is not None and parsed.index >= count:
            raise PrecometError(
                f"{{device}}{name}: this machine has {count} CUDA GPU(s), numbered 0 to {count - 1}", param="device"
            )
        return name
    if parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise PrecometError(
                f"{{device}}{name}: Apple MPS is not available on this machine; use {{device}}cpu", param="device"
            )
        return name
    raise PrecometError(
        f"{{device}}{name!r}: precomet runs on cpu, cuda[:N] or mps, not {parsed.type!r}", param="device"
    )
