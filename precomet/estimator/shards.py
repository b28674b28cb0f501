"""Prediction over a pool too large for one machine: a multi-process / multi-node ``Trainer.predict`` in which
each rank scores only its shard and writes it (:mod:`precomet.io.utility_files` for the directory format).

The processes come from the launcher: ``torchrun`` (env://), SLURM's ``srun`` (Lightning's SLURMEnvironment)
or, in one process, ``strategy="ddp_spawn"``. Every process reads the whole pool, but rank ``r`` of ``W``
scores only items ``r, r + W, ...`` in length-sorted steps, with every backbone; nothing is gathered across ranks (the
predict loop does not wrap the model in DDP, so the ranks need not take the same number of steps). At the end of
its epoch each rank writes its shard, all ranks meet at a barrier, and rank 0 writes ``shards.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import BasePredictionWriter
from torch.utils.data import DataLoader

from precomet.errors import PrecometError
from precomet.estimator.data import check_batch_size, length_sorted_batches
from precomet.estimator.estimator import Estimator, check_predictions, to_utility
from precomet.estimator.metadata import CheckpointMeta
from precomet.estimator.multidevice import STEP_BATCHES, predict_trainer
from precomet.io.utility_files import MANIFEST, shard_positions, write_manifest, write_shard
from precomet.quiet import quiet_third_party


class ShardModule(pl.LightningModule):
    """``predict_step`` over this rank's shard of ``sources`` in length-sorted steps of ``STEP_BATCHES × batch_size``
    sources, scored by the estimator's reader (any backbone); each step returns ``(positions, standardised)``."""

    def __init__(self, estimator: Estimator, sources: Sequence[str], *, batch_size: int) -> None:
        super().__init__()
        self.reader, self.network = estimator.reader, estimator.reader.network  # Lightning places the network
        self.sources, self.batch_size = list(sources), batch_size

    def predict_dataloader(self) -> DataLoader:
        positions = shard_positions(len(self.sources), self.trainer.global_rank, self.trainer.world_size)
        lengths = self.reader.lengths([self.sources[p] for p in positions])  # warns once about truncated sources
        steps = length_sorted_batches(lengths, self.batch_size * STEP_BATCHES)
        # one dataset item = one step; torch types ``dataset`` as Dataset, but any sequence works (documented)
        rows = [[positions[i] for i in step] for step in steps]
        return DataLoader(rows, batch_size=None, collate_fn=torch.tensor)  # type: ignore[arg-type]

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        texts = [self.sources[p] for p in batch.tolist()]
        values = self.reader.standardised(
            texts, batch_size=self.batch_size, device=str(self.device), progress=False, warn=False
        )
        return batch.cpu(), values


class ShardWriter(BasePredictionWriter):
    """Writes this rank's shard at the end of its epoch; after a barrier rank 0 writes the manifest."""

    def __init__(
        self, out_dir: Path, item_ids: Sequence[str], signature: Mapping[str, Any], meta: CheckpointMeta
    ) -> None:
        super().__init__(write_interval="epoch")
        self.out_dir, self.item_ids, self.signature, self.meta = out_dir, list(item_ids), dict(signature), meta

    def on_predict_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if trainer.global_rank == 0:  # until the new one is written, the folder reads as unfinished
            (self.out_dir / MANIFEST).unlink(missing_ok=True)

    def write_on_epoch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, predictions: Sequence[Any], batch_indices: Any
    ) -> None:
        rank, world_size, n = trainer.global_rank, trainer.world_size, len(self.item_ids)
        steps: Sequence[tuple[torch.Tensor, torch.Tensor]] = predictions
        index = torch.cat([i for i, _ in steps])
        order = torch.argsort(index)
        positions = index[order].tolist()
        if positions != list(shard_positions(n, rank, world_size)):
            raise RuntimeError(f"rank {rank} scored {len(positions)} items, not its shard of the pool")
        standardised = torch.cat([v for _, v in steps])[order]
        ids = [self.item_ids[p] for p in positions]
        utilities = check_predictions(
            to_utility(self.meta, standardised.double()).numpy(), ids, checkpoint=self.signature.get("checkpoint")
        )
        write_shard(self.out_dir, rank, world_size, ids, utilities, self.signature)
        trainer.strategy.barrier("precomet-shards")
        if rank == 0:
            write_manifest(self.out_dir, world_size, n, self.signature)


def predict_shards(
    estimator: Estimator,
    item_ids: Sequence[str],
    sources: Sequence[str],
    out_dir: str | Path,
    *,
    signature: Mapping[str, Any],
    batch_size: int = 64,
    devices: int | str | list[int] = 1,
    num_nodes: int = 1,
    strategy: str | None = None,
    accelerator: str | None = None,
    progress: bool = False,
) -> int:
    """Score the pool ``sources`` (ids ``item_ids``) as ``devices × num_nodes`` ranks, each writing its shard of
    utilities to ``out_dir`` (``signature`` on every shard and in the manifest). Returns this process's global
    rank (0 in the process that called a ``ddp_spawn`` run)."""
    if len(item_ids) != len(sources) or not sources:
        raise PrecometError(f"{len(item_ids)} ids for {len(sources)} sources; give one id per source, at least one")
    check_batch_size(batch_size)
    with quiet_third_party():
        trainer = predict_trainer(
            devices=devices,
            strategy=strategy,
            accelerator=accelerator,
            progress=progress,
            num_nodes=num_nodes,
            callbacks=[ShardWriter(Path(out_dir), item_ids, signature, estimator.meta)],
        )
        if trainer.world_size > len(sources):
            raise PrecometError(f"{trainer.world_size} processes for {len(sources)} sources: every shard needs one")
        trainer.predict(ShardModule(estimator, sources, batch_size=batch_size), return_predictions=False)
    return trainer.global_rank
