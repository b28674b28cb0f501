"""Prediction through a loaded estimator (any backbone) on one device or Lightning devices, results in input order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.estimator.checkpoint import load_estimator
from precomet.estimator.data import check_batch_size
from precomet.estimator.estimator import Estimator, check_precision, check_sources
from precomet.estimator.multidevice import predict_lightning
from precomet.progress import progress_enabled

logger = logging.getLogger(__name__)


def predict_sources(
    estimator: Estimator | str | Path,
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
    """Utility (higher = annotate first) of each source, in input order, whatever the estimator's backbone;
    ``estimator`` is a loaded :class:`~precomet.estimator.estimator.Estimator` or its checkpoint directory (loaded
    on the device it runs on). Sources longer than the encoder reads are truncated and counted in a warning.
    ``precision="int8"`` quantises a copy of the network and of a Hugging Face encoder (CPU only, see
    :data:`~precomet.estimator.estimator.PRECISIONS`). With ``devices`` (Lightning's ``Trainer(devices=, strategy=,
    accelerator=)``, e.g. ``devices=4, strategy="ddp"``) prediction runs through ``Trainer.predict``
    (:mod:`precomet.estimator.multidevice`) and ``device`` is ignored."""
    device = check_precision(precision, device)
    _check_devices(devices)
    if devices is None and (strategy is not None or accelerator is not None):
        raise PrecometError("strategy and accelerator need devices (the Lightning predict path)")
    if precision == "int8" and devices is not None:
        raise PrecometError("precision int8 runs on the single-device path only (without devices)")
    sources = check_sources(sources)
    device = "cpu" if devices is not None else device
    if not isinstance(estimator, Estimator):
        estimator = load_estimator(estimator, device=device)
    if devices is None:
        return estimator.predict(sources, batch_size=batch_size, device=device, progress=progress, precision=precision)
    values = predict_lightning(
        estimator.reader,
        sources,
        batch_size=check_batch_size(batch_size),
        devices=devices,
        strategy=strategy,
        accelerator=accelerator,
        progress=progress_enabled(progress),
    )
    return estimator.utilities(values, sources)


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
    estimator: Estimator | str | Path,
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
        estimator,
        list(campaign.src),
        batch_size=batch_size,
        device=device,
        progress=progress,
        precision=precision,
        devices=devices,
        strategy=strategy,
        accelerator=accelerator,
    )
