"""Data for the estimator: grouped dev split, tokenisation with counted truncation, length-bucketed
batches and the ``LightningDataModule`` (token ids, or cached pooled features for a frozen encoder)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from precomet.errors import PrecometError
from precomet.estimator.leakage import NEAR, NearDuplicates, connected_groups

logger = logging.getLogger(__name__)


def group_split(
    rows: Sequence[dict[str, Any]],
    *,
    by: str = "doc",
    fraction: float = 0.1,
    seed: int = 0,
    near: NearDuplicates | None = NEAR,
) -> tuple[np.ndarray, np.ndarray]:
    """``(train_idx, dev_idx)`` where whole groups go to dev: ``by="campaign"`` keeps campaigns together,
    ``by="doc"`` keeps (campaign, doc) documents together, and rows whose normalised source texts are equal,
    or share a sentence or a long word/character run (``near``, default 8 words / 16 characters; ``None``:
    equal texts only), are always in one group (:func:`~precomet.estimator.leakage.connected_groups`): no
    source text, and no sentence or passage of one, is on both sides, even when several campaigns translate
    it or one campaign's paragraphs contain another's sentences (WMT23 en-de)."""
    if by not in ("doc", "campaign"):
        raise PrecometError(f"group_by must be 'doc' or 'campaign', got {by!r}")
    keys = [r["campaign"] if by == "campaign" else (r["campaign"], str(r["doc"])) for r in rows]
    labels = connected_groups(rows, keys, near=near)
    groups, sizes = np.unique(labels, return_counts=True)
    if len(groups) < 2:
        raise PrecometError(
            f"cannot make a dev split by {by}: only {len(groups)} group(s) of rows not linked by a shared source text,"
            " sentence or passage; give separate dev targets ({dev}FILE) or train without a dev split"
            " ({dev_fraction}0)",
            param=("dev", "dev_fraction"),
        )
    order = np.random.default_rng(seed).permutation(len(groups))
    dev_groups: set[int] = set()
    count, wanted = 0, max(1, round(fraction * len(rows)))
    for g in order[:-1]:  # the last group always stays in train
        if count >= wanted:
            break
        dev_groups.add(int(groups[g]))
        count += int(sizes[g])
    is_dev = np.isin(labels, list(dev_groups))
    return np.flatnonzero(~is_dev), np.flatnonzero(is_dev)


_TALLY: ContextVar[list[int] | None] = ContextVar("precomet_truncated", default=None)


def warn_truncated(n_truncated: int, n_total: int, max_length: int) -> None:
    """Warn that ``n_truncated`` of ``n_total`` sources were cut at ``max_length`` tokens (inside
    :func:`truncation_tally`: counted, and warned about once at its end)."""
    tally = _TALLY.get()
    if tally is not None:
        tally[:] = [tally[0] + n_truncated, tally[1] + n_total, max_length]
    elif n_truncated:
        logger.warning(
            "%d of %d sources are longer than max_length=%d tokens and were truncated", n_truncated, n_total, max_length
        )


@contextmanager
def truncation_tally() -> Iterator[None]:
    """One truncation warning, with the totals, for all the predictions of the block (a pool read in chunks) when
    it completes, instead of one per call."""
    tally = [0, 0, 0]
    token = _TALLY.set(tally)
    try:
        yield
    finally:
        _TALLY.reset(token)
    warn_truncated(*tally)


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` right-padded to the longest sequence."""
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, x in enumerate(ids):
        input_ids[row, : len(x)] = torch.as_tensor(x, dtype=torch.long)
        mask[row, : len(x)] = 1
    return input_ids, mask


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices sorted by decreasing length, cut into batches (deterministic; for eval and prediction)."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def check_batch_size(batch_size: int) -> int:
    """``batch_size``, refused unless >= 1."""
    if batch_size < 1:
        raise PrecometError(f"batch_size must be >= 1, got {batch_size}")
    return batch_size


class BucketBatchSampler(Sampler[list[int]]):
    """Training batches of similar length: shuffle, sort within buckets of ``bucket_batches`` batches, cut,
    shuffle the batch order. Seeded per epoch (``set_epoch``); shards batches over ``world_size`` ranks, every
    rank the same number (DDP steps together): when the batches do not divide evenly, the first few of the
    shuffled order are repeated (as ``DistributedSampler`` pads), so no rank is left without a batch."""

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        *,
        seed: int,
        bucket_batches: int = 50,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.lengths = np.asarray(lengths)
        self.batch_size, self.seed, self.bucket = batch_size, seed, max(1, bucket_batches) * batch_size
        self.rank, self.world_size, self.epoch = rank, world_size, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, self.epoch])
        perm = rng.permutation(len(self.lengths))
        batches = []
        for start in range(0, len(perm), self.bucket):
            chunk = perm[start : start + self.bucket]
            chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
            batches += [chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        order = rng.permutation(len(batches))
        padded = np.resize(order, -(-len(batches) // self.world_size) * self.world_size)  # repeats from the start
        return [batches[i] for i in padded[self.rank :: self.world_size]]

    def __iter__(self) -> Iterator[list[int]]:
        return iter([b.tolist() for b in self._batches()])  # Lightning calls set_epoch before each epoch

    def __len__(self) -> int:
        return len(self._batches())


class _Rows(Dataset):
    def __init__(self, inputs: Any, targets: np.ndarray) -> None:
        self.inputs, self.targets = inputs, np.asarray(targets, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i: int) -> tuple[Any, float]:
        return self.inputs[i], float(self.targets[i])


class TargetDataModule(pl.LightningDataModule):
    """Train/dev splits already standardised. ``inputs`` are token-id lists, or a float tensor of cached
    pooled features (frozen encoder), one entry per row."""

    def __init__(
        self,
        *,
        train_inputs: Any,
        train_targets: np.ndarray,
        dev_inputs: Any,
        dev_targets: np.ndarray,
        pad_id: int,
        batch_size: int,
        bucket_batches: int = 50,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.train_set, self.dev_set = _Rows(train_inputs, train_targets), _Rows(dev_inputs, dev_targets)
        self.pad_id, self.batch_size, self.bucket_batches = pad_id, batch_size, bucket_batches
        self.num_workers, self.seed = num_workers, seed
        self.cached = isinstance(train_inputs, torch.Tensor)

    def _lengths(self, rows: _Rows) -> list[int]:
        return [0] * len(rows) if self.cached else [len(x) for x in rows.inputs]

    def collate(self, batch: list[tuple[Any, float]]) -> dict[str, torch.Tensor]:
        target = torch.tensor([t for _, t in batch], dtype=torch.float32)
        if self.cached:
            return {"features": torch.stack([x for x, _ in batch]), "target": target}
        input_ids, mask = pad_batch([x for x, _ in batch], self.pad_id)
        return {"input_ids": input_ids, "attention_mask": mask, "target": target}

    def train_dataloader(self) -> DataLoader:
        rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
        sampler = BucketBatchSampler(
            self._lengths(self.train_set),
            self.batch_size,
            seed=self.seed,
            bucket_batches=self.bucket_batches,
            rank=rank,
            world_size=world,
        )
        return DataLoader(self.train_set, batch_sampler=sampler, collate_fn=self.collate, num_workers=self.num_workers)

    def val_dataloader(self) -> DataLoader:
        batches = [b.tolist() for b in length_sorted_batches(self._lengths(self.dev_set), self.batch_size)]
        return DataLoader(self.dev_set, batch_sampler=batches, collate_fn=self.collate, num_workers=self.num_workers)
