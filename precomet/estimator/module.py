"""The ``LightningModule``: MSE loss on standardised targets, AdamW with separate encoder / head learning
rates and layer-wise learning-rate decay, encoder frozen for a fraction of the first epoch, validation
Pearson / Spearman / Kendall."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from scipy.stats import kendalltau, pearsonr, spearmanr

from precomet.estimator.model import EstimatorNetwork

_LAYER = re.compile(r"\.layers?\.(\d+)\.")


def encoder_depth(name: str, n_layers: int) -> int:
    """0 for embeddings, i + 1 for transformer layer i, ``n_layers + 1`` for anything above."""
    if "embed" in name:
        return 0
    match = _LAYER.search(name)
    return int(match.group(1)) + 1 if match else n_layers + 1


def correlations(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson, Spearman and Kendall (tau-b); NaN when either side is constant or too short."""
    if len(pred) < 2 or np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return {"pearson": math.nan, "spearman": math.nan, "kendall": math.nan}
    return {
        "pearson": float(pearsonr(pred, gold)[0]),
        "spearman": float(spearmanr(pred, gold)[0]),
        "kendall": float(kendalltau(pred, gold)[0]),
    }


class EstimatorModule(pl.LightningModule):
    """Wraps a :class:`EstimatorNetwork`; ``meta`` (plain JSON types) is stored in every ``.ckpt`` so that
    ``precomet export`` can rebuild the network without unpickling anything else."""

    def __init__(
        self,
        model: EstimatorNetwork,
        *,
        encoder_lr: float,
        head_lr: float,
        layerwise_decay: float = 0.95,
        weight_decay: float = 0.0,
        freeze_fraction: float = 0.0,
        fine_tune: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.encoder_lr, self.head_lr, self.decay, self.weight_decay = (
            encoder_lr,
            head_lr,
            layerwise_decay,
            weight_decay,
        )
        self.freeze_fraction, self.fine_tune = freeze_fraction, fine_tune
        self.meta = dict(meta or {})
        self._unfreeze_at: int | None = None
        self._val: list[tuple[torch.Tensor, torch.Tensor]] = []
        if not fine_tune:
            self.model.encoder.requires_grad_(False)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if "features" in batch:
            return self.model.score_features(batch["features"])
        return self.model(batch["input_ids"], batch["attention_mask"])

    # ------------------------------------------------------------------ optimisation
    def configure_optimizers(self) -> torch.optim.Optimizer:
        head = [p for n, p in self.model.named_parameters() if not n.startswith("encoder.")]
        groups: list[dict[str, Any]] = [{"params": head, "lr": self.head_lr}]
        if self.fine_tune:
            encoder: Any = self.model.encoder  # a TokenVectors module when the encoder is fine-tuned
            n_layers = int(encoder.config.num_hidden_layers)
            by_depth: dict[int, list[torch.nn.Parameter]] = {}
            for name, param in encoder.named_parameters():
                by_depth.setdefault(encoder_depth(name, n_layers), []).append(param)
            for depth, params in sorted(by_depth.items()):
                groups.append({"params": params, "lr": self.encoder_lr * self.decay ** (n_layers + 1 - depth)})
        return torch.optim.AdamW(groups, weight_decay=self.weight_decay)

    def on_train_epoch_start(self) -> None:
        if not self.fine_tune or self.current_epoch > 0 or self.freeze_fraction <= 0:
            return
        self._unfreeze_at = math.ceil(self.freeze_fraction * self.trainer.num_training_batches)
        self.model.encoder.requires_grad_(False)

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        if self._unfreeze_at is not None and batch_idx >= self._unfreeze_at:
            self.model.encoder.requires_grad_(True)
            self._unfreeze_at = None

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = torch.nn.functional.mse_loss(self(batch), batch["target"])
        size = len(batch["target"])
        # this process's loss at every step, unsynced (no collective per step); the epoch's mean over all processes
        self.log("train_loss_step", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=size)
        self.log("train_loss_epoch", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=size, sync_dist=True)
        return loss

    # ------------------------------------------------------------------ validation
    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        pred = self(batch)
        self._val.append((pred.detach().cpu(), batch["target"].cpu()))
        loss = torch.nn.functional.mse_loss(pred, batch["target"])
        self.log("val_loss", loss, on_epoch=True, batch_size=len(pred), sync_dist=True)

    def on_validation_epoch_end(self) -> None:
        if not self._val:
            return
        pred = torch.cat([p for p, _ in self._val]).double().numpy()
        gold = torch.cat([g for _, g in self._val]).double().numpy()
        self._val.clear()
        for name, value in correlations(pred, gold).items():
            self.log(f"val_{name}", -1.0 if math.isnan(value) else value, prog_bar=name == "pearson", sync_dist=True)

    # ------------------------------------------------------------------ checkpoint metadata
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["precomet"] = self.meta
