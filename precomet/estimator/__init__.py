"""Source-based utility estimator ("PreCOMET"): build targets from historical campaigns, train an
encoder + MLP regressor with Lightning, save/load an offline checkpoint directory, predict utilities
(higher = annotate first) for new sources.

Heavy dependencies (torch, transformers, Lightning) are imported on first use of these functions.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__all__ = [
    "NearDuplicates",
    "build_targets",
    "export_checkpoint",
    "leave_one_campaign_out",
    "load_estimator",
    "predict_campaign",
    "predict_sources",
    "read_targets",
    "train",
    "train_on_campaigns",
    "write_targets",
]

_WHERE = {
    "predict_campaign": "precomet.estimator.predict",
    "predict_sources": "precomet.estimator.predict",
    "load_estimator": "precomet.estimator.checkpoint",
    "export_checkpoint": "precomet.estimator.checkpoint",
    "train": "precomet.estimator.training",
    "train_on_campaigns": "precomet.estimator.training",
    "build_targets": "precomet.estimator.targets",
    "read_targets": "precomet.estimator.targets",
    "write_targets": "precomet.estimator.targets",
    "leave_one_campaign_out": "precomet.estimator.targets",
    "NearDuplicates": "precomet.estimator.leakage",
}

if TYPE_CHECKING:
    from precomet.estimator.checkpoint import export_checkpoint, load_estimator
    from precomet.estimator.leakage import NearDuplicates
    from precomet.estimator.predict import predict_campaign, predict_sources
    from precomet.estimator.targets import (
        build_targets,
        leave_one_campaign_out,
        read_targets,
        write_targets,
    )
    from precomet.estimator.training import train, train_on_campaigns


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'precomet.estimator' has no attribute {name!r}")

    return getattr(import_module(_WHERE[name]), name)
