"""The training configuration as a validated model: :class:`TrainConfig` (pydantic), :func:`load_config`
(defaults < YAML file < overrides), and :func:`recorded_config`, the part of it a checkpoint keeps. Sections,
keys, defaults, the ``--section.key VALUE`` syntax and the precedence are documented once, in
docs/estimator.md, "Configuration".

pydantic rather than jsonargparse: the same kind of model validates ``precomet.json``
(:mod:`precomet.estimator.metadata`), a file read back long after the command line that wrote it, and the
command line keeps its own ``--section.key`` options. It imports neither torch nor Lightning, so that
``precomet --help`` stays fast.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from precomet.errors import PrecometError

logger = logging.getLogger(__name__)


def _at_least(low: float) -> AfterValidator:
    def check(value: Any) -> Any:
        if value < low:
            raise ValueError(f"must be >= {low}")
        return value

    return AfterValidator(check)


def _within(low: float, high: float, shown: str) -> AfterValidator:
    """``value`` in the interval written ``shown`` ("[0, 1)", "(0, 1]", …) between ``low`` and ``high``."""
    low_open, high_open = shown.startswith("("), shown.endswith(")")

    def check(value: float) -> float:
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (above and below):
            raise ValueError(f"must be in {shown}")
        return value

    return AfterValidator(check)


def _number_text(value: Any) -> Any:
    """YAML 1.1 reads ``1e-3`` (no dot) as text: a number written so is a number."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Number = Annotated[float, BeforeValidator(_number_text), AfterValidator(_finite)]
Count = Annotated[int, _at_least(1)]
Rate = Annotated[Number, _at_least(0.0)]
Fraction = Annotated[Number, _within(0.0, 1.0, "[0, 1)")]
Free = Annotated[Any, AfterValidator(_finite)]
"""Passed to Lightning unchanged (``devices: auto`` or ``[0, 1]``): Lightning checks it (``check_trainer_settings``)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ModelConfig(_Section):
    # the encoder: a registered name (e5-small, minilm, surface, length, hf:DIR, st:NAME), a model folder or hub id
    backbone: Annotated[str, Field(min_length=1)] = "e5-small"
    fine_tune: bool = False  # train the encoder with the head (a Hugging Face model); false: frozen, vectors cached
    # encoder: the encoder's own vectors; mean, mix: a Hugging Face model's token means (last layer; layers mixed)
    pooling: Literal["encoder", "mean", "mix"] = "encoder"
    hidden_sizes: list[Count] = Field(default_factory=lambda: [2048, 1024])
    dropout: Fraction = 0.1
    encoder_lr: Rate = 1.0e-6
    head_lr: Rate = 1.5e-5
    layerwise_decay: Annotated[Number, _within(0.0, 1.0, "(0, 1]")] = 0.95
    weight_decay: Rate = 0.0
    freeze_fraction: Annotated[Number, _within(0.0, 1.0, "[0, 1]")] = 0.3  # of the first epoch
    ensemble: Count = 1  # frozen encoder: heads trained with seeds seed_everything, +1, …; they predict together


class DataConfig(_Section):
    batch_size: Count = 16
    effective_batch_size: Count = 128  # gradient accumulation = ceil(effective / (batch_size * devices))
    max_length: Count = 256
    dev_fraction: Fraction = 0.1
    group_by: Literal["doc", "campaign"] = "doc"  # dev split unit when no --dev is given
    bucket_batches: Count = 50  # length buckets span this many batches
    num_workers: Annotated[int, _at_least(0)] = 0
    cache_dir: str = ""  # with a backbone: keep its vectors here ("" = the cache every command shares)


class EarlyStoppingConfig(_Section):
    monitor: str = "val_pearson"
    mode: Literal["min", "max"] = "max"
    patience: Annotated[int, _at_least(0)] = 2


class TrainerConfig(_Section):
    max_epochs: Count = 5
    accelerator: Free = "auto"
    devices: Free = 1
    strategy: Free = "auto"
    num_nodes: Free = 1
    precision: Free = "32-true"
    gradient_clip_val: Rate | None = None
    deterministic: bool = False
    log_every_n_steps: Count = 10
    val_check_interval: Free = None
    limit_train_batches: Free = None
    enable_progress_bar: bool | None = None  # None: on when stderr is a terminal


class TrainConfig(_Section):
    """The whole configuration, as :func:`load_config` returns it and the training steps read it (attributes);
    ``model_dump()`` is the plain dict a checkpoint records (:func:`recorded_config`)."""

    seed_everything: Annotated[int, _within(0, 2**32, "[0, 2**32)")] = 12
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    early_stopping: EarlyStoppingConfig = Field(default_factory=EarlyStoppingConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)


DEFAULTS: dict[str, Any] = TrainConfig().model_dump()
"""The built-in defaults as a plain dict (the first layer of :func:`load_config`)."""

PACKAGED_CONFIG = Path(__file__).with_name("precomet-e5.yaml")
"""The shipped estimator's configuration (also at ``configs/precomet-e5.yaml``): a frozen multilingual-e5-small
(about 100 languages, offline, CPU) and a small MLP head. ``precomet train`` without ``--config`` trains it."""


FINE_TUNING_ONLY = {"model.encoder_lr", "model.layerwise_decay", "model.freeze_fraction"}
"""Keys that only an encoder being fine-tuned (``model.fine_tune: true``) reads."""
FROZEN_ONLY = {"model.ensemble", "data.cache_dir"}
"""Keys that only a frozen encoder (``model.fine_tune: false``) reads: its vectors are computed once."""
TOKENS_ONLY = {"data.max_length"}
"""Keys that only a Hugging Face encoder read by tokens (fine-tuned, or pooled ``mean`` or ``mix``) reads; an encoder
read as registered (``model.pooling: encoder``, frozen) keeps its own limits."""
MACHINE_LOCAL = {"data.cache_dir"}
"""Where this machine keeps things: never recorded in a checkpoint."""
RETIRED_KEYS = {"model.encoder": "model.backbone", "model.freeze_encoder": "model.fine_tune"}
"""Keys of 0.18 and earlier, renamed in 0.19.0 and read (with a warning) until 0.20.0; since 0.20.1 refused with the
new spelling (:func:`_refuse_retired`), never translated: in 0.18 ``model.encoder: X`` meant ``model.backbone: X``
mean pooled and fine-tuned, and ``model.freeze_encoder: B`` meant ``model.fine_tune: not B``, and read beside the
0.19 keys either would change what those say."""


def inapplicable_keys(config: TrainConfig) -> set[str]:
    """The ``section.key`` names that ``config`` holds but its encoder never reads: the fine-tuning keys of a frozen
    encoder, the frozen encoder's keys when it is fine-tuned, the token limit of an encoder read as registered."""
    if config.model.fine_tune:
        return set(FROZEN_ONLY)
    return FINE_TUNING_ONLY | (TOKENS_ONLY if config.model.pooling == "encoder" else set())


def recorded_config(config: TrainConfig) -> dict[str, Any]:
    """``config`` as a checkpoint records it (plain JSON values): without the keys its encoder never reads and
    without machine-local paths (:data:`MACHINE_LOCAL`)."""
    left_out = inapplicable_keys(config) | MACHINE_LOCAL
    recorded = config.model_dump()
    for dotted in left_out:
        section, _, key = dotted.partition(".")
        recorded[section].pop(key, None)
    return recorded


def override_keys() -> list[str]:
    """Every ``section.key`` (and top-level key) a command line may override."""
    keys = []
    for section, value in DEFAULTS.items():
        keys += [f"{section}.{k}" for k in value] if isinstance(value, dict) else [section]
    return keys


def shipped_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` on top of :data:`PACKAGED_CONFIG`, as ``{"section.key": value}``; a key of
    :data:`RETIRED_KEYS` is refused (:func:`_refuse_retired`)."""
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        _refuse_retired({section: {key: value}}, where="override")
    base = {
        f"{section}.{key}" if isinstance(values, dict) else section: value
        for section, values in _read_yaml(PACKAGED_CONFIG).items()
        for key, value in (values.items() if isinstance(values, dict) else [("", values)])
    }
    return {**base, **overrides}


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Defaults, updated by the YAML file at ``path`` then by ``{"section.key": value}`` overrides, validated by
    :class:`TrainConfig`. Override values given as strings are parsed as YAML scalars (``"3"`` -> 3, ``"[0, 1]"``
    -> list). A key the chosen setting never reads (``model.ensemble`` when fine-tuning, ``model.encoder_lr`` when
    frozen, …) set to something other than its default is refused, unless ``model.fine_tune`` itself is given:
    switching a config between frozen and fine-tuned leaves the other setting's keys unread (and unrecorded). The keys
    of :data:`RETIRED_KEYS` (0.18's) are refused with their new spelling."""
    given: dict[str, Any] = {}
    if path is not None:
        _merge(given, _refuse_retired(_read_yaml(Path(path)), where=str(path)), where=str(path))
    overridden: dict[str, Any] = {}
    for dotted, value in (overrides or {}).items():
        if isinstance(value, str):
            value = yaml.safe_load(value) if value.strip() else value
        section, _, key = dotted.partition(".")
        update = _refuse_retired({section: {key: value}} if key else {section: value}, where="override")
        _merge(given, update, where="override")
        _merge(overridden, update, where="override")
    try:
        config = TrainConfig.model_validate(given)
    except ValidationError as err:
        raise PrecometError(_first_error(err)) from None
    _refuse_inapplicable(given, overridden, config)
    return config


def _refuse_retired(update: dict[str, Any], *, where: str) -> dict[str, Any]:
    """``update`` (a file's mapping, or one override) unchanged, or :class:`PrecometError` naming ``where``, the
    first key of :data:`RETIRED_KEYS` it holds and what to write instead."""
    model = update.get("model")
    for dotted, new in RETIRED_KEYS.items():
        key = dotted.partition(".")[2]
        if not isinstance(model, dict) or key not in model:
            continue
        value, given = model[key], new.partition(".")[2] in model
        if given:  # both spellings: the old one would say something else than the new one beside it
            beside = model[new.partition(".")[2]]
            shown = str(beside).lower() if isinstance(beside, bool) else beside
            spelled, meant = f"only {new}", f" (given too: {new}: {shown})"
        elif key == "freeze_encoder":
            spelled = f"{new}: {str(not value).lower()}" if isinstance(value, bool) else f"{new}: true or false"
            meant = " (the negation)"
        else:
            spelled = f"{new}: {value}" if isinstance(value, str) and value else new
            meant = " (0.18 also mean pooled and fine-tuned it: model.pooling: mean, model.fine_tune: true)"
        raise PrecometError(
            f"{where}: {dotted} was renamed {new} in precomet 0.19.0 and is no longer read since 0.20.1; write"
            f' {spelled}{meant} (docs/estimator.md, "Configuration")'
        )
    return update


def _read_yaml(path: Path) -> dict[str, Any]:
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
        return {}
    if not isinstance(loaded, dict):
        raise PrecometError(
            f"{path}: config file must be a YAML mapping of sections (model:, data:, …), got a"
            f" {type(loaded).__name__}: {str(loaded)[:60]!r}"
        )
    return loaded


def _load_yaml(text: str) -> Any:
    """``yaml.safe_load``, refusing a key given twice in one mapping (plain YAML keeps the last one silently)."""

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


def _merge(given: dict[str, Any], update: dict[str, Any], *, where: str) -> None:
    """``update`` into ``given``, naming ``where`` for an unknown section or key (the model would only say
    "extra inputs are not permitted")."""
    for section, value in update.items():
        if section not in DEFAULTS:
            raise PrecometError(f"{where}: unknown config section {section!r}; valid: {list(DEFAULTS)}")
        if not isinstance(DEFAULTS[section], dict):
            given[section] = _checked(value, section, where)
            continue
        if not isinstance(value, dict):
            raise PrecometError(f"{where}: section {section!r} must be a mapping")
        for key, item in value.items():
            if key not in DEFAULTS[section]:
                raise PrecometError(
                    f"{where}: unknown key {section}.{key}; valid: {', '.join(sorted(DEFAULTS[section]))}"
                )
            given.setdefault(section, {})[key] = _checked(item, f"{section}.{key}", where)


def _checked(value: Any, dotted: str, where: str) -> Any:
    """``value`` validated alone as ``dotted``, so that the message names the file or override it came from."""
    section, _, key = dotted.partition(".")
    try:
        TrainConfig.model_validate({section: {key: value}} if key else {section: value})
    except ValidationError as err:
        raise PrecometError(f"{where}: {_first_error(err, given=value)}") from None
    return value


def _first_error(err: ValidationError, *, given: Any = None) -> str:
    """pydantic's first error as one line: ``section.key must be …, got VALUE`` (the whole ``given`` value when
    the error is about one element of it)."""
    error = err.errors()[0]
    dotted = ".".join(str(part) for part in error["loc"] if not isinstance(part, int))
    if given is not None and any(isinstance(part, int) for part in error["loc"]):
        error = {**error, "input": given}
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "literal_error":
        expected = f"one of {context.get('expected', '').replace(' or ', ', ')}"
        return f"{dotted} must be {expected}, got {error['input']!r}"
    if kind == "value_error":
        expected = str(context.get("error", error["msg"])).removeprefix("must be ")
    else:
        expected = _TYPE_WORDS.get(kind.removesuffix("_type").removesuffix("_parsing"), error["msg"].lower())
    if dotted == "model.hidden_sizes":
        expected = "a list of positive integers (layer widths)"
    return f"{dotted} must be {expected}, got {error['input']!r}"[:400]


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "text",
    "list": "a list",
    "model": "a mapping",
    "dict": "a mapping",
    "none_required": "null",
}
"""pydantic's error types as the words of the message."""


def _refuse_inapplicable(given: dict[str, Any], overridden: dict[str, Any], config: TrainConfig) -> None:
    """A key the chosen setting never reads, given a non-default value, would be silently ignored: refused. When
    ``model.fine_tune`` is an override (a common switch of one config file between frozen and fine-tuned), only the
    other overrides are checked: the file's keys for the other setting go unread (and unrecorded)."""
    switched = "fine_tune" in overridden.get("model", {})
    checked = overridden if switched else given
    ignored = sorted(
        f"{section}.{key}"
        for section, values in checked.items()
        if isinstance(values, dict)
        for key in values
        if f"{section}.{key}" in inapplicable_keys(config)
        and getattr(getattr(config, section), key) != DEFAULTS[section][key]
    )
    if ignored:
        model = config.model
        setting = "a fine-tuned encoder" if model.fine_tune else f"the frozen {model.backbone!r}"
        switch = "model.fine_tune false" if model.fine_tune else "model.fine_tune true"
        if not model.fine_tune and model.pooling == "encoder" and set(ignored) <= TOKENS_ONLY:
            setting += " read as registered"
            switch = "model.pooling mean or mix (a Hugging Face model read by tokens)"
        raise PrecometError(
            f"{', '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} not apply to {setting}; remove"
            f' {"it" if len(ignored) == 1 else "them"} or set {switch} (docs/estimator.md, "Configuration")'
        )
