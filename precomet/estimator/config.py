"""The training configuration: :data:`DEFAULTS`, :func:`load_config` (defaults < YAML file < overrides) and
the checks. Sections, keys, defaults, the ``--section.key VALUE`` syntax and the precedence are documented
once, in docs/estimator.md, "Configuration".

It imports neither torch nor Lightning, so that ``precomet --help`` stays fast.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from precomet.errors import PrecometError
from precomet.values import check_like

DEFAULTS: dict[str, Any] = {
    "seed_everything": 12,
    "model": {
        "backbone": "",  # registered sentence encoder (e5-small, minilm, surface, length, hf:DIR), frozen; "" = none
        "encoder": "xlm-roberta-large",  # hub id or local directory (save_pretrained layout), without backbone
        "pooling": "mean",  # mean | mix (layer-wise scalar mix, then mean pooling)
        "hidden_sizes": [2048, 1024],
        "dropout": 0.1,
        "encoder_lr": 1.0e-6,
        "head_lr": 1.5e-5,
        "layerwise_decay": 0.95,
        "weight_decay": 0.0,
        "freeze_fraction": 0.3,  # encoder frozen for this fraction of the first epoch
        "freeze_encoder": False,  # frozen for the whole run: pooled features are computed once and cached
        "ensemble": 1,  # with a backbone: heads trained with seeds seed_everything, +1, …; they predict together
    },
    "data": {
        "batch_size": 16,
        "effective_batch_size": 128,  # gradient accumulation = ceil(effective / (batch_size * devices))
        "max_length": 256,
        "dev_fraction": 0.1,
        "group_by": "doc",  # dev split unit when no --dev is given: doc | campaign
        "bucket_batches": 50,  # length buckets span this many batches
        "num_workers": 0,
        "cache_dir": "",  # with a backbone: keep its vectors here ("" = the cache every command shares)
    },
    "early_stopping": {"monitor": "val_pearson", "mode": "max", "patience": 2},
    "trainer": {
        "max_epochs": 5,
        "accelerator": "auto",
        "devices": 1,
        "strategy": "auto",
        "num_nodes": 1,
        "precision": "32-true",
        "gradient_clip_val": None,
        "deterministic": False,
        "log_every_n_steps": 10,
        "val_check_interval": None,
        "limit_train_batches": None,
        "enable_progress_bar": None,  # None: on when stderr is a terminal
    },
}
FREE_TYPED = {
    f"trainer.{k}"
    for k in (
        "accelerator",
        "devices",
        "strategy",
        "num_nodes",
        "precision",
        "val_check_interval",
        "limit_train_batches",
    )
}
"""Keys passed to Lightning unchanged, whose type varies (``devices: auto`` or ``[0, 1]``); every other key must
have the type of its default (:func:`precomet.values.check_like`)."""
OPTIONAL_NUMBERS = {"trainer.gradient_clip_val"}
"""Keys whose default is ``None`` and whose value, when given, is a finite number >= 0."""
CHOICES = {
    ("model", "pooling"): ("mean", "mix"),
    ("data", "group_by"): ("doc", "campaign"),
    ("early_stopping", "mode"): ("min", "max"),
}
AT_LEAST = {
    ("data", "batch_size"): 1,
    ("data", "effective_batch_size"): 1,
    ("data", "max_length"): 1,
    ("data", "bucket_batches"): 1,
    ("data", "num_workers"): 0,
    ("early_stopping", "patience"): 0,
    ("trainer", "max_epochs"): 1,
    ("trainer", "log_every_n_steps"): 1,
    ("model", "encoder_lr"): 0.0,
    ("model", "head_lr"): 0.0,
    ("model", "weight_decay"): 0.0,
    ("model", "ensemble"): 1,
}
"""Smallest valid value of numeric keys (checked once the config is merged)."""


def _load_yaml(text: str) -> Any:
    """``yaml.safe_load``, refusing a key given twice in one mapping (plain YAML keeps the last one silently)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 -- a SafeLoader subclass


def override_keys() -> list[str]:
    """Every ``section.key`` (and top-level key) a command line may override."""
    keys = []
    for section, value in DEFAULTS.items():
        keys += [f"{section}.{k}" for k in value] if isinstance(value, dict) else [section]
    return keys


SHIPPED: dict[str, Any] = {
    "seed_everything": 0,
    "model": {"backbone": "e5-small", "hidden_sizes": [256, 64], "dropout": 0.1, "head_lr": 1.0e-3},
    "data": {"batch_size": 128, "effective_batch_size": 128, "dev_fraction": 0.1, "cache_dir": ""},
    "early_stopping": {"monitor": "val_pearson", "mode": "max", "patience": 4},
    "trainer": {"max_epochs": 40, "accelerator": "cpu"},
}
"""The shipped estimator's configuration (``configs/precomet-e5.yaml``, a test keeps the two equal): a frozen
multilingual-e5-small (about 100 languages, offline, CPU) and a small MLP head. ``precomet train`` without
``--config`` trains it."""


def shipped_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` on top of :data:`SHIPPED`, as ``{"section.key": value}``; an override of ``model.encoder``
    alone (a Hugging Face encoder to fine-tune) drops the shipped backbone."""
    base = {
        f"{section}.{key}" if isinstance(values, dict) else section: value
        for section, values in SHIPPED.items()
        for key, value in (values.items() if isinstance(values, dict) else [("", values)])
    }
    if "model.encoder" in overrides and "model.backbone" not in overrides:
        base["model.backbone"] = ""
    return {**base, **overrides}


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, updated by the YAML file at ``path`` then by ``{"section.key": value}`` overrides.

    Override values given as strings are parsed as YAML scalars (``"3"`` -> 3, ``"[0, 1]"`` -> list).
    """
    import yaml

    config = copy.deepcopy(DEFAULTS)
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise PrecometError(f"{path}: config file not found")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise PrecometError(
                f"{path}: config file is not UTF-8 text (byte {err.start}); expected a YAML mapping of sections"
            ) from None
        except OSError as err:
            raise PrecometError(f"{path}: cannot read the config file ({err.strerror or err})") from None
        if "\x00" in text:
            raise PrecometError(f"{path}: config file is binary, not YAML text; expected a YAML mapping of sections")
        try:
            loaded = _load_yaml(text)
        except yaml.YAMLError as err:
            raise PrecometError(f"{path}: invalid YAML ({' '.join(str(err).split())[:300]})") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise PrecometError(
                f"{path}: config file must be a YAML mapping of sections (model:, data:, …), got a"
                f" {type(loaded).__name__}: {str(loaded)[:60]!r}"
            )
        _merge(config, loaded, where=str(path))
    for dotted, value in (overrides or {}).items():
        if isinstance(value, str):
            value = yaml.safe_load(value) if value.strip() else value
        section, _, key = dotted.partition(".")
        _merge(config, {section: {key: value}} if key else {section: value}, where="override")
    _check_choices(config)
    return config


def _merge(config: dict[str, Any], update: dict[str, Any], *, where: str) -> None:
    for section, value in update.items():
        if section not in DEFAULTS:
            raise PrecometError(f"{where}: unknown config section {section!r}; valid: {list(DEFAULTS)}")
        if not isinstance(DEFAULTS[section], dict):
            config[section] = _typed(value, section, DEFAULTS[section], where)
            continue
        if not isinstance(value, dict):
            raise PrecometError(f"{where}: section {section!r} must be a mapping")
        for key, item in value.items():
            if key not in DEFAULTS[section]:
                raise PrecometError(
                    f"{where}: unknown key {section}.{key}; valid: {', '.join(sorted(DEFAULTS[section]))}"
                )
            config[section][key] = _typed(item, f"{section}.{key}", DEFAULTS[section][key], where)


def _typed(value: Any, dotted: str, default: Any, where: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # .nan / .inf, whatever the key
        raise PrecometError(f"{where}: {dotted} must be a finite number, got {value!r}")
    if dotted in FREE_TYPED:
        return value
    if dotted in OPTIONAL_NUMBERS:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise PrecometError(f"{where}: {dotted} must be null or a finite number >= 0, got {value!r}")
        return value
    if dotted == "trainer.enable_progress_bar":
        if value is not None and not isinstance(value, bool):
            raise PrecometError(f"{where}: {dotted} must be true, false or null, got {value!r}")
        return value
    if isinstance(default, float) and isinstance(value, str):  # YAML 1.1 reads "1e-3" as a string
        try:
            value = float(value)
        except ValueError:
            pass
    return check_like(value, default, what=f"{where}: {dotted}")


def _check_choices(config: dict[str, Any]) -> None:
    for (section, key), valid in CHOICES.items():
        if config[section][key] not in valid:
            raise PrecometError(f"{section}.{key} must be one of {list(valid)}, got {config[section][key]!r}")
    for (section, key), low in AT_LEAST.items():
        if config[section][key] < low:
            raise PrecometError(f"{section}.{key} must be >= {low}, got {config[section][key]!r}")
    seed = config["seed_everything"]
    if not 0 <= seed < 2**32:
        raise PrecometError(f"seed_everything must be in [0, 2**32), got {seed!r}")
    sizes = config["model"]["hidden_sizes"]
    if not isinstance(sizes, list) or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in sizes):
        raise PrecometError(f"model.hidden_sizes must be a list of positive integers (layer widths), got {sizes!r}")
    if not 0.0 <= config["model"]["dropout"] < 1.0:
        raise PrecometError(f"model.dropout must be in [0, 1), got {config['model']['dropout']!r}")
    if not 0.0 < config["model"]["layerwise_decay"] <= 1.0:
        raise PrecometError(f"model.layerwise_decay must be in (0, 1], got {config['model']['layerwise_decay']!r}")
    if not 0.0 <= float(config["data"]["dev_fraction"]) < 1.0:
        raise PrecometError(f"data.dev_fraction must be in [0, 1), got {config['data']['dev_fraction']!r}")
    if not 0.0 <= float(config["model"]["freeze_fraction"]) <= 1.0:
        raise PrecometError(f"model.freeze_fraction must be in [0, 1], got {config['model']['freeze_fraction']!r}")
