"""Prediction through Lightning's predict loop (``Trainer.predict``) for one or several devices.

Each rank scores every ``world_size``-th length-sorted batch; ranks with fewer batches run a one-row filler
batch so that all ranks take the same number of steps. Every step all-gathers ``(index, value)`` padded to
``batch_size`` (index -1 = filler or padding, dropped), so every rank ends with all predictions in input
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
from precomet.estimator.data import length_sorted_batches, pad_batch
from precomet.quiet import quiet_third_party

FILLER = -1


class PredictModule(pl.LightningModule):
    """``predict_step`` over token ids; the rank's share of the batches comes from :meth:`predict_dataloader`;
    the merged predictions are saved as ``out_dir/rank-R.npy`` (identical on every rank)."""

    def __init__(
        self, model: torch.nn.Module, ids: Sequence[Sequence[int]], *, pad_id: int, batch_size: int, out_dir: str
    ) -> None:
        super().__init__()
        self.model = model
        self.ids, self.pad_id, self.batch_size, self.out_dir = [list(x) for x in ids], pad_id, batch_size, out_dir
        self.gathered: list[tuple[torch.Tensor, torch.Tensor]] = []

    def rank_batches(self, rank: int, world_size: int) -> list[list[int]]:
        """This rank's batches (positions into the dataset; position ``len(ids)`` is the filler row)."""
        batches = [b.tolist() for b in length_sorted_batches([len(x) for x in self.ids], self.batch_size)]
        mine = batches[rank::world_size]
        return mine + [[len(self.ids)]] * (-(-len(batches) // world_size) - len(mine))

    def collate(self, positions: list[int]) -> dict[str, torch.Tensor]:
        index = [p if p < len(self.ids) else FILLER for p in positions]
        input_ids, mask = pad_batch([self.ids[max(i, 0)] for i in index], self.pad_id)
        return {"index": torch.tensor(index, dtype=torch.long), "input_ids": input_ids, "attention_mask": mask}

    def predict_dataloader(self) -> DataLoader:
        batches = self.rank_batches(self.trainer.global_rank, self.trainer.world_size)
        # one dataset item = one batch; torch types ``dataset`` as Dataset, but any sequence works (documented)
        return DataLoader(batches, batch_size=None, collate_fn=self.collate)  # type: ignore[arg-type]

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        values = self.model(batch["input_ids"], batch["attention_mask"]).float()
        fill = self.batch_size - len(values)
        padded = {
            "index": torch.nn.functional.pad(batch["index"], (0, fill), value=FILLER),
            "value": torch.nn.functional.pad(values, (0, fill)),
        }
        # a dict like ``padded`` (Lightning types the result as any collection)
        gathered: Any = self.all_gather(padded)  # (world_size, batch_size) each; (batch_size,) on one device
        self.gathered.append((gathered["index"].reshape(-1).cpu(), gathered["value"].reshape(-1).cpu()))
        return self.gathered[-1]

    def on_predict_epoch_end(self) -> None:
        np.save(Path(self.out_dir) / f"rank-{self.global_rank}.npy", merge(self.gathered, len(self.ids)))
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
    model: torch.nn.Module,
    ids: Sequence[Sequence[int]],
    *,
    pad_id: int,
    batch_size: int,
    devices: int | str | list[int],
    strategy: str | None = None,
    accelerator: str | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Standardised predictions (float32, input order) of ``model`` through ``Trainer.predict``."""
    with tempfile.TemporaryDirectory(prefix="precomet-predict-") as out_dir, quiet_third_party():
        module = PredictModule(model, ids, pad_id=pad_id, batch_size=batch_size, out_dir=out_dir)
        trainer = predict_trainer(devices=devices, strategy=strategy, accelerator=accelerator, progress=progress)
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
