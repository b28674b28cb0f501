"""The loaded estimator: one class whatever reads the sources.

An :class:`Estimator` is a *reader* (what turns sources into the network's standardised scores) plus the
``precomet.json`` metadata that turns those scores into utilities. Two readers exist:

- :class:`TokenReader`: a Hugging Face encoder, fine-tuned or frozen, with its pooling and head: one network over
  token ids, run on any torch device;
- :class:`VectorReader`: a registered sentence encoder (:mod:`precomet.encoders`, e.g. the shipped e5-small run by
  its own engine, vectors cached on disk) whose vectors a head reads; the head runs on any torch device.

Everything downstream — one device, int8, Lightning devices, shards across machines, pools in chunks — uses only
the :class:`Reader` protocol, so it works with every backbone.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from precomet.encoders import SentenceEncoder, encode_cached
from precomet.errors import PrecometError
from precomet.estimator.data import check_batch_size, run_batches, tokenize, warn_truncated
from precomet.estimator.metadata import CheckpointMeta
from precomet.values import is_blank

PRECISIONS = ("fp32", "int8")
"""``int8``: dynamic int8 quantisation (per-channel weights) of every ``nn.Linear`` of the network (CPU only): faster
for a Hugging Face encoder, predictions close to but not identical with fp32. A sentence encoder keeps its own engine;
only its head is quantised, which saves nothing measurable."""


class Reader(Protocol):
    """Turns sources into standardised scores (higher or lower first as ``direction`` says)."""

    @property
    def network(self) -> torch.nn.Module:
        """The torch part (placed on a device, quantised, moved by Lightning)."""
        ...

    def lengths(self, sources: Sequence[str]) -> list[int]:
        """One length per source to sort batches by; warns once about sources that will be truncated."""
        ...

    def standardised(
        self, sources: Sequence[str], *, batch_size: int, device: str, progress: bool | None = None, warn: bool = True
    ) -> torch.Tensor:
        """Float32 scores on the CPU, in input order; ``warn=False`` leaves truncation warnings to :meth:`lengths`."""
        ...

    def with_network(self, network: torch.nn.Module) -> Reader:
        """The same reader around another network (e.g. its int8 copy)."""
        ...


@dataclass(frozen=True)
class TokenReader:
    """A Hugging Face encoder with its pooling and head, one network over token ids."""

    network: torch.nn.Module
    tokenizer: Any
    max_length: int

    def lengths(self, sources: Sequence[str]) -> list[int]:
        ids, n_truncated = tokenize(self.tokenizer, sources, max_length=self.max_length)
        warn_truncated(n_truncated, len(sources), self.max_length)
        return [len(x) for x in ids]

    def standardised(
        self, sources: Sequence[str], *, batch_size: int, device: str, progress: bool | None = None, warn: bool = True
    ) -> torch.Tensor:
        ids, n_truncated = tokenize(self.tokenizer, sources, max_length=self.max_length)
        if warn:
            warn_truncated(n_truncated, len(sources), self.max_length)
        network = self.network.to(device).eval()
        pad_id = self.tokenizer.pad_token_id or 0
        return run_batches(network, ids, pad_id=pad_id, batch_size=batch_size, device=device, progress=progress)

    def with_network(self, network: torch.nn.Module) -> TokenReader:
        return replace(self, network=network)


@dataclass(frozen=True)
class VectorReader:
    """A registered sentence encoder, frozen and run by its own engine, and a head over its vectors
    (:class:`~precomet.estimator.backbone.FeatureHead` or an ensemble of them)."""

    encoder: SentenceEncoder
    network: torch.nn.Module

    def lengths(self, sources: Sequence[str]) -> list[int]:
        return [len(s) for s in sources]

    def standardised(
        self, sources: Sequence[str], *, batch_size: int, device: str, progress: bool | None = None, warn: bool = True
    ) -> torch.Tensor:
        check_batch_size(batch_size)  # the head reads every vector at once: one row per source, small
        encoder = self.encoder.to(device)  # e5-small's torch engine encodes where the head runs (Lightning's rank)
        features = torch.from_numpy(encode_cached(encoder, list(sources), progress=progress)).float()
        head: Any = self.network.to(device).eval()
        with torch.inference_mode():
            return head.score_features(features.to(device)).float().cpu()

    def with_network(self, network: torch.nn.Module) -> VectorReader:
        return replace(self, network=network)


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
        """A copy whose network's linear layers run in dynamic int8 on the CPU (see :data:`PRECISIONS`)."""
        with warnings.catch_warnings():  # torch.ao's migration notice; the eager API still works in torch 2.x
            warnings.simplefilter("ignore")

            # per-output-channel weight scales: correlation with fp32 ~0.98 instead of ~0.955 per tensor
            network = quantize_dynamic(
                self.model.cpu().eval(), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
            )
        return replace(self, reader=self.reader.with_network(network))

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
