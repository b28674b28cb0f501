"""Prediction: length-sorted batches through a loaded estimator, results in input order."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.estimator.backbone import BackboneEstimator
from precomet.estimator.checkpoint import Estimator, check_device, check_predictions, load_estimator
from precomet.estimator.data import (
    length_sorted_batches,
    pad_batch,
    tokenize,
    warn_truncated,
)
from precomet.progress import progress as progress_bar
from precomet.progress import progress_enabled
from precomet.values import is_blank

if TYPE_CHECKING:
    from precomet.estimator.model import UtilityEstimator

logger = logging.getLogger(__name__)


def check_batch_size(batch_size: int) -> int:
    """``batch_size``, refused unless >= 1."""
    if batch_size < 1:
        raise PrecometError(f"batch_size must be >= 1, got {batch_size}")
    return batch_size


def run_batches(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    ids: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
    device: str,
    progress: bool | None = None,
    desc: str = "predict",
) -> torch.Tensor:
    """Apply ``fn(input_ids, attention_mask)`` to length-sorted batches; rows come back in input order."""
    check_batch_size(batch_size)
    if not ids:
        raise PrecometError("no sources to run")
    out = torch.empty(0)
    batches = length_sorted_batches([len(x) for x in ids], batch_size)
    with torch.inference_mode():
        for batch in progress_bar(batches, desc=desc, unit="batch", enabled=progress):
            input_ids, mask = pad_batch([ids[i] for i in batch], pad_id)
            values = fn(input_ids.to(device), mask.to(device)).float().cpu()
            if not out.numel():
                out = torch.empty((len(ids), *values.shape[1:]), dtype=values.dtype)
            out[torch.as_tensor(batch)] = values
    return out


def check_sources(sources: Sequence[str]) -> list[str]:
    """Non-empty list of non-empty strings; errors name the first bad position and count the others."""
    sources = list(sources)
    if not sources:
        raise PrecometError("no sources to score (empty list)")
    bad = [i for i, s in enumerate(sources) if not isinstance(s, str) or is_blank(s)]
    if bad:
        raise PrecometError(f"empty source at position {bad[0]} ({len(bad)} empty source(s) in {len(sources)})")
    return sources


PRECISIONS = ("fp32", "int8")
"""``int8``: dynamic int8 quantisation (per-channel weights) of every ``nn.Linear`` (CPU only): 2-3.5x
faster, predictions close to but not identical with fp32 (benchmarks/results/estimator.md: Pearson ~0.98)."""


def quantize_int8(estimator: Estimator) -> Estimator:
    """A copy of ``estimator`` (on CPU) whose linear layers run in dynamic int8; the input is unchanged."""
    import dataclasses
    import warnings

    with warnings.catch_warnings():  # torch.ao's migration notice; the eager API still works in torch 2.x
        warnings.simplefilter("ignore")
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        # per-output-channel weight scales: correlation with fp32 ~0.98 instead of ~0.955 per tensor
        model = quantize_dynamic(
            estimator.model.cpu().eval(), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )
    return dataclasses.replace(estimator, model=model)


def predict_sources(
    checkpoint_dir: str | Path | Estimator | BackboneEstimator,
    sources: Sequence[str],
    *,
    batch_size: int = 64,
    device: str = "cpu",
    progress: bool | None = None,
    precision: str = "fp32",
    devices: int | str | list[int] | None = None,
    strategy: str | None = None,
    accelerator: str | None = None,
) -> np.ndarray:
    """Utility (higher = annotate first) of each source, in input order. Sources longer than the
    checkpoint's ``max_length`` tokens are truncated and counted in a warning. ``precision="int8"``
    quantises a copy of the model (CPU only, see :data:`PRECISIONS`). With ``devices`` (Lightning's
    ``Trainer(devices=, strategy=, accelerator=)``, e.g. ``devices=4, strategy="ddp"``) prediction runs
    through ``Trainer.predict`` (:mod:`precomet.estimator.multidevice`) and ``device`` is ignored."""
    if precision not in PRECISIONS:
        raise PrecometError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    device = check_device(device)
    _check_devices(devices)
    if devices is None and (strategy is not None or accelerator is not None):
        raise PrecometError("strategy and accelerator need devices (the Lightning predict path)")
    if precision == "int8" and devices is not None:
        raise PrecometError("precision int8 runs on the single-device path only (without devices)")
    if precision == "int8" and device != "cpu":
        raise PrecometError(f"precision int8 runs on CPU only, got device {device!r}")
    sources = check_sources(sources)
    device = "cpu" if devices is not None else device
    estimator = (
        checkpoint_dir
        if isinstance(checkpoint_dir, (Estimator, BackboneEstimator))
        else load_estimator(checkpoint_dir, device=device)
    )
    if isinstance(estimator, BackboneEstimator):
        if precision != "fp32" or devices is not None or device != "cpu":
            raise PrecometError(
                f"estimator on backbone {estimator.meta['backbone']['name']!r} runs its encoder's own CPU engine:"
                " precision, devices and device do not apply (leave them at their defaults)"
            )
        return estimator.predict(sources, progress=progress)
    if precision == "int8":
        estimator = quantize_int8(estimator)
    ids, n_truncated = tokenize(estimator.tokenizer, sources, max_length=estimator.max_length)
    warn_truncated(n_truncated, len(sources), estimator.max_length)
    pad_id = estimator.tokenizer.pad_token_id or 0
    if devices is not None:
        from precomet.estimator.multidevice import predict_lightning

        show = progress_enabled(progress)
        values = predict_lightning(
            estimator.model.eval(),
            ids,
            pad_id=pad_id,
            batch_size=check_batch_size(batch_size),
            devices=devices,
            strategy=strategy,
            accelerator=accelerator,
            progress=show,
        )
    else:
        model = estimator.model.to(device).eval()
        values = run_batches(model, ids, pad_id=pad_id, batch_size=batch_size, device=device, progress=progress)
    utilities = estimator.to_utility(values.double()).numpy()
    return check_predictions(utilities, sources, checkpoint=estimator.path or "(in memory)")


def _check_devices(devices: Any) -> None:
    """``devices`` of the Lightning path: ``None``, a count >= 1, a non-empty list of GPU indices, or text
    (``"auto"``, ``"0,1"``: Lightning's own)."""
    if devices is None or isinstance(devices, str):
        return
    if isinstance(devices, bool) or not (
        (isinstance(devices, int) and devices >= 1)
        or (
            isinstance(devices, list)
            and devices
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices)
        )
    ):
        raise PrecometError(
            f"{{devices}}{devices!r} is not a number of devices >= 1 or a list of GPU indices", param="devices"
        )


def predict_campaign(
    checkpoint_dir: str | Path | Estimator | BackboneEstimator,
    campaign: Campaign,
    *,
    batch_size: int = 64,
    device: str = "cpu",
    progress: bool | None = None,
    precision: str = "fp32",
    devices: int | str | list[int] | None = None,
    strategy: str | None = None,
    accelerator: str | None = None,
) -> np.ndarray:
    """:func:`predict_sources` on ``campaign.src`` (aligned with ``campaign.ids``)."""
    return predict_sources(
        checkpoint_dir,
        list(campaign.src),
        batch_size=batch_size,
        device=device,
        progress=progress,
        precision=precision,
        devices=devices,
        strategy=strategy,
        accelerator=accelerator,
    )


def compute_features(
    model: UtilityEstimator,
    ids: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
    device: str = "cpu",
    progress: bool | None = None,
) -> torch.Tensor:
    """Pooled features of a (frozen, eval-mode) estimator for caching: (N, H) or (N, L, H)."""
    was_training = model.training
    model.eval()
    try:
        return run_batches(
            model.features, ids, pad_id=pad_id, batch_size=batch_size, device=device, progress=progress, desc="encode"
        )
    finally:
        model.train(was_training)
