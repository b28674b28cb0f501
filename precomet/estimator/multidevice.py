"""Prediction through Lightning's predict loop (``Trainer.predict``) for one or several devices.

Works with every reader (:mod:`precomet.estimator.estimator`). Each rank scores every ``world_size``-th
length-sorted step of sources; ranks with fewer steps run a one-row filler step so that all ranks take the same
number of steps. Every step all-gathers ``(index, value)`` padded to
the step size (index -1 = filler or padding, dropped), so every rank ends with all predictions in input
order; at the end each rank saves them to a directory chosen by the calling process, which is how the
results of spawned workers (``ddp_spawn``, where ``Trainer.predict`` returns nothing) come back.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities.exceptions import MisconfigurationException
from torch.utils.data import DataLoader

from precomet.errors import PrecometError
from precomet.estimator.data import length_sorted_batches
from precomet.estimator.estimator import Reader
from precomet.quiet import quiet_third_party

FILLER = -1

STEP_BATCHES = 8
"""Batches per predict step: each step scores ``STEP_BATCHES × batch_size`` sources through the reader, which
batches them itself (so a sentence encoder encodes, and caches, whole steps rather than single batches)."""


class PredictModule(pl.LightningModule):
    """``predict_step`` over the reader's scores of length-sorted steps of sources; the rank's share of the steps
    comes from :meth:`predict_dataloader`; the merged predictions are saved as ``out_dir/rank-R.npy`` (identical
    on every rank)."""

    def __init__(self, reader: Reader, sources: Sequence[str], *, batch_size: int, out_dir: str) -> None:
        super().__init__()
        self.reader, self.network = reader, reader.network  # an attribute, so Lightning places it on the device
        self.sources, self.batch_size, self.out_dir = list(sources), batch_size, out_dir
        self.step_size = batch_size * STEP_BATCHES
        self.lengths = reader.lengths(self.sources)  # warns once about truncated sources
        self.gathered: list[tuple[torch.Tensor, torch.Tensor]] = []

    def rank_batches(self, rank: int, world_size: int) -> list[list[int]]:
        """This rank's steps (positions into the sources; position ``len(sources)`` is the filler row)."""
        steps = [b.tolist() for b in length_sorted_batches(self.lengths, self.step_size)]
        mine = steps[rank::world_size]
        return mine + [[len(self.sources)]] * (-(-len(steps) // world_size) - len(mine))

    def collate(self, positions: list[int]) -> dict[str, torch.Tensor]:
        index = [p if p < len(self.sources) else FILLER for p in positions]
        return {"index": torch.tensor(index, dtype=torch.long)}

    def predict_dataloader(self) -> DataLoader:
        steps = self.rank_batches(self.trainer.global_rank, self.trainer.world_size)
        # one dataset item = one step; torch types ``dataset`` as Dataset, but any sequence works (documented)
        return DataLoader(steps, batch_size=None, collate_fn=self.collate)  # type: ignore[arg-type]

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        texts = [self.sources[max(i, 0)] for i in batch["index"].tolist()]
        values = self.reader.standardised(
            texts, batch_size=self.batch_size, device=str(self.device), progress=False, warn=False
        ).to(self.device)
        fill = self.step_size - len(values)
        padded = {
            "index": torch.nn.functional.pad(batch["index"], (0, fill), value=FILLER),
            "value": torch.nn.functional.pad(values, (0, fill)),
        }
        # a dict like ``padded`` (Lightning types the result as any collection)
        gathered: Any = self.all_gather(padded)  # (world_size, step_size) each; (step_size,) on one device
        self.gathered.append((gathered["index"].reshape(-1).cpu(), gathered["value"].reshape(-1).cpu()))
        return self.gathered[-1]

    def on_predict_epoch_end(self) -> None:
        np.save(Path(self.out_dir) / f"rank-{self.global_rank}.npy", merge(self.gathered, len(self.sources)))
        self.gathered.clear()


def merge(outputs: Sequence[tuple[torch.Tensor, torch.Tensor]], n: int) -> np.ndarray:
    """Gathered ``(index, value)`` pairs -> float32 array of length ``n`` in input order (fillers dropped)."""
    index = torch.cat([i for i, _ in outputs])
    value = torch.cat([v for _, v in outputs])
    keep = index != FILLER
    index, value = index[keep], value[keep]
    counts = torch.bincount(index, minlength=n)
    if len(counts) != n or not bool((counts == 1).all()):
        raise RuntimeError(f"distributed prediction covered {int((counts > 0).sum())} of {n} sources unevenly")
    out = torch.empty(n, dtype=torch.float32)
    out[index] = value
    return out.numpy()


def predict_lightning(
    reader: Reader,
    sources: Sequence[str],
    *,
    batch_size: int,
    devices: int | str | list[int],
    strategy: str | None = None,
    accelerator: str | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Standardised scores (float32, input order) of ``reader`` through ``Trainer.predict``."""
    with tempfile.TemporaryDirectory(prefix="precomet-predict-") as out_dir, quiet_third_party():
        trainer = predict_trainer(devices=devices, strategy=strategy, accelerator=accelerator, progress=progress)
        module = PredictModule(reader, sources, batch_size=batch_size, out_dir=out_dir)
        trainer.predict(module, return_predictions=False)
        saved = sorted(Path(out_dir).glob("rank-*.npy"))
        if not saved:
            raise RuntimeError("Trainer.predict wrote no predictions")
        return torch.from_numpy(np.load(saved[0], allow_pickle=False))


def predict_trainer(
    *,
    devices: int | str | list[int],
    strategy: str | None,
    accelerator: str | None,
    progress: bool,
    num_nodes: int | None = None,
    callbacks: Sequence[pl.Callback] = (),
) -> pl.Trainer:
    """A ``Trainer`` for prediction only (no logger, checkpoints or distributed sampler; ``num_nodes`` machines, 1
    when ``None``); settings Lightning refuses raise one :class:`PrecometError` naming those given."""
    try:
        return pl.Trainer(
            accelerator=accelerator or "auto",
            devices=devices,
            num_nodes=1 if num_nodes is None else num_nodes,
            strategy=strategy or "auto",
            logger=False,
            enable_checkpointing=False,
            enable_model_summary=False,
            enable_progress_bar=progress,
            use_distributed_sampler=False,
            callbacks=list(callbacks),
        )
    except (MisconfigurationException, ModuleNotFoundError, ValueError, TypeError, RuntimeError) as err:
        nodes = "" if num_nodes is None else f" {{num_nodes}}{num_nodes!r},"
        named: tuple[str, ...] = ("devices", "strategy", "accelerator")
        if num_nodes is not None:
            named = ("devices", "num_nodes", "strategy", "accelerator")
        raise PrecometError(
            f"{{devices}}{devices!r},{nodes} {{strategy}}{strategy or 'auto'!r},"
            f" {{accelerator}}{accelerator or 'auto'!r} are refused by Lightning: {' '.join(str(err).split())[:300]}",
            param=named,
        ) from None
