"""The checkpoint directory (see checkpoints/README.md) and ``.ckpt`` export.

``DIR/precomet.json`` (metadata), ``DIR/encoder/`` (``save_pretrained`` weights in safetensors plus the
tokenizer), ``DIR/head.safetensors`` (MLP head and scalar-mix weights). A checkpoint whose encoder was
frozen and comes from an installed package (``minilm``) names the package instead of copying the encoder
(``encoder_package`` in the metadata, with the sha256 of its weights, checked on load): a few MB instead
of ~90. Loading never touches the network and never unpickles; :func:`export_checkpoint` is the only place
that reads a Lightning ``.ckpt``, with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import torch

from precomet import __version__
from precomet.encoders.transformer import weights_digest
from precomet.errors import PrecometError
from precomet.estimator.backbone import EnsembleHead, FeatureHead, backbone_encoder, ensemble_members
from precomet.estimator.estimator import Estimator, TokenReader, VectorReader, check_device
from precomet.estimator.model import ALIASES, UtilityEstimator, load_encoder, resolve_model
from precomet.io import jsonsafe
from precomet.io.atomic import output_set
from precomet.io.output_paths import check_output

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
META = "precomet.json"
HEAD = "head.safetensors"
ENCODER = "encoder"
REQUIRED_META = ("format_version", "target", "direction", "standardisation", "pooling", "hidden_sizes", "max_length")


def packaged_encoder(name: str, *, frozen: bool) -> dict[str, str] | None:
    """``{"name", "weights_sha256"}`` when ``name`` is an installed-package encoder alias and the encoder is
    frozen (so the package's weights are exactly the ones the head was trained on), else ``None``."""
    if not frozen or name not in ALIASES:
        return None
    return {"name": name, "weights_sha256": weights_digest(resolve_model(name))}


def save_checkpoint(out_dir: str | Path, *, model: UtilityEstimator, tokenizer: Any, meta: dict[str, Any]) -> Path:
    """Write the directory format, all files or none; ``meta`` gets ``format_version`` and ``precomet_version``
    added. With ``meta["encoder_package"]`` the encoder is not copied (see the module doc)."""
    with output_set() as out:
        write_checkpoint_files(out.directory(out_dir), model=model, tokenizer=tokenizer, meta=meta)
    return Path(out_dir)


def write_checkpoint_files(out_dir: Path, *, model: UtilityEstimator, tokenizer: Any, meta: dict[str, Any]) -> None:
    """The files of :func:`save_checkpoint` written straight into ``out_dir`` (a temporary directory of an
    output set)."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    if not meta.get("encoder_package"):
        model.encoder.save_pretrained(out_dir / ENCODER, safe_serialization=True)
        tokenizer.save_pretrained(out_dir / ENCODER)
    save_file(model.head_state(), str(out_dir / HEAD))
    write_meta(out_dir / META, meta)


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """``precomet.json``: ``meta`` with ``format_version`` and ``precomet_version``, checked for the required fields."""
    full = {"format_version": FORMAT_VERSION, "precomet_version": __version__, **meta}
    missing = [k for k in REQUIRED_META if k not in full]
    if missing:
        raise PrecometError(f"checkpoint metadata lacks {missing}")
    with open(path, "w", encoding="utf-8") as handle:
        jsonsafe.dump(full, handle, indent=2, sort_keys=True)
        handle.write("\n")


def read_meta(checkpoint_dir: str | Path) -> dict[str, Any]:
    """``precomet.json`` after checking that every file of the format is present, the version is known and
    every field the estimator uses has its type (:func:`check_meta`)."""
    path = Path(checkpoint_dir)
    if not path.is_dir():
        raise PrecometError(f"{path}: checkpoint directory not found")
    missing = [n for n in (META, HEAD) if not (path / n).is_file()]
    if missing:
        raise PrecometError(f"{path}: not a precomet checkpoint, missing {missing} (see checkpoints/README.md)")
    odd = (
        [p for p in (path / ENCODER).rglob("*") if not (p.is_file() or p.is_dir())] if (path / ENCODER).is_dir() else []
    )
    if odd:  # a device or FIFO in place of a weights file would hang the loader
        raise PrecometError(f"{odd[0]}: not a regular file; the checkpoint is damaged")
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as err:
        raise PrecometError(f"{path / META}: invalid JSON ({err.msg}); precomet.json is not a JSON object") from None
    except UnicodeDecodeError:
        raise PrecometError(f"{path / META}: not UTF-8 text; precomet.json is not a JSON object") from None
    except OSError as err:
        raise PrecometError(f"{path / META}: cannot read ({err.strerror or err})") from None
    if not isinstance(meta, dict):
        raise PrecometError(
            f"{path / META}: precomet.json is not a JSON object (got a JSON {_JSON_KINDS.get(type(meta), 'value')})"
        )
    if not (meta.get("encoder_package") or meta.get("backbone")):
        missing = [] if (path / ENCODER / "config.json").is_file() else [f"{ENCODER}/config.json"]
        if not any((path / ENCODER).glob("*.safetensors")):
            missing.append(f"{ENCODER}/*.safetensors")
        if missing:
            raise PrecometError(f"{path}: not a precomet checkpoint, missing {missing} (see checkpoints/README.md)")
    version = meta.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise PrecometError(f"{path / META}: unknown format_version {version!r}; this precomet reads {FORMAT_VERSION}")
    absent = [k for k in REQUIRED_META if k not in meta]
    if absent:
        raise PrecometError(f"{path / META}: missing field(s) {absent}")
    check_meta(meta, where=path / META)
    return meta


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}

DIRECTIONS = ("higher_first", "lower_first")
"""``direction``: whether a higher standardised prediction means annotate first (``lower_first`` is negated)."""


def _field(where: Any, name: str, value: Any, expected: str) -> PrecometError:
    return PrecometError(f"{where}: field {name!r} must be {expected}, got {value!r}"[:400])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_meta(meta: dict[str, Any], *, where: Any = META) -> None:
    """Raise :class:`PrecometError` naming ``where`` and the field unless every field an estimator reads has
    its type and range: ``target`` (object with a ``method`` name), ``direction``, ``standardisation`` (finite
    ``mean``, finite ``std`` > 0), ``pooling``, ``hidden_sizes`` (positive integers), ``max_length`` (an
    integer >= 0), ``dropout`` (in [0, 1)), ``encoder`` / ``encoder_path`` (text), ``encoder_package`` and
    ``backbone`` (objects), and when present ``training_languages`` (a language profile) and
    ``training_domains`` (null or counts per domain)."""
    target = meta.get("target")
    if not isinstance(target, dict) or not isinstance(target.get("method"), str):
        raise _field(where, "target", target, 'an object {"method": NAME, "normalisation": [...]}')
    normalisation = target.get("normalisation", [])
    if not isinstance(normalisation, list) or not all(isinstance(n, str) for n in normalisation):
        raise _field(where, "target.normalisation", normalisation, "a list of names")
    if meta.get("direction") not in DIRECTIONS:
        raise _field(where, "direction", meta.get("direction"), f"one of {list(DIRECTIONS)}")
    stats = meta.get("standardisation")
    if not isinstance(stats, dict):
        raise _field(where, "standardisation", stats, 'an object {"mean": NUMBER, "std": NUMBER}')
    if not _is_number(stats.get("mean")):
        raise _field(where, "standardisation.mean", stats.get("mean"), "a finite number")
    if not _is_number(stats.get("std")) or stats["std"] <= 0:
        raise _field(where, "standardisation.std", stats.get("std"), "a finite number > 0")
    if not isinstance(meta.get("pooling"), str):
        raise _field(where, "pooling", meta.get("pooling"), "a name (mean, mix or sentence-encoder)")
    sizes = meta.get("hidden_sizes")
    if not isinstance(sizes, list) or not all(_is_int(h) and h >= 1 for h in sizes):
        raise _field(where, "hidden_sizes", sizes, "a list of positive integers (layer widths)")
    if not _is_int(meta.get("max_length")) or meta["max_length"] < 0:
        raise _field(where, "max_length", meta.get("max_length"), "an integer >= 0 (tokens per source)")
    dropout = meta.get("dropout", 0.1)
    if not _is_number(dropout) or not 0 <= dropout < 1:
        raise _field(where, "dropout", dropout, "a number in [0, 1)")
    for name in ("encoder", "encoder_path"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise _field(where, name, meta[name], "a model name or directory (text)")
    package = meta.get("encoder_package")
    if package is not None and not (
        isinstance(package, dict)
        and isinstance(package.get("name"), str)
        and isinstance(package.get("weights_sha256"), str)
    ):
        raise _field(where, "encoder_package", package, 'null or an object {"name": ..., "weights_sha256": ...}')
    backbone = meta.get("backbone")
    if backbone is not None and not (isinstance(backbone, dict) and isinstance(backbone.get("name"), str)):
        raise _field(where, "backbone", backbone, "an object with the encoder's name")
    if backbone is None and meta["max_length"] < 1:
        raise _field(where, "max_length", meta["max_length"], "an integer >= 1 (tokens per source)")
    _check_training_languages(meta.get("training_languages"), where=where)
    domains = meta.get("training_domains")
    if domains is not None and not _is_counts(domains):
        raise _field(where, "training_domains", domains, "null or an object {domain: number of rows}")


def _is_counts(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _is_int(n) and n >= 0 for k, n in value.items())


def _check_training_languages(profile: Any, *, where: Any) -> None:
    """``training_languages`` (optional: checkpoints written before precomet recorded it have none) is an object
    with ``counts`` ({ISO 639-1 code: sources}), ``sample`` and ``sources`` (integers >= 0) and, if present,
    ``shares`` ({code: number in [0, 1]})."""
    if profile is None:
        return
    expected = 'an object {"counts": {language: sources}, "sample": N, "sources": N, ...}'
    if not isinstance(profile, dict):
        raise _field(where, "training_languages", profile, expected)
    if not _is_counts(profile.get("counts")):
        raise _field(where, "training_languages.counts", profile.get("counts"), "an object {language: sources}")
    for name in ("sample", "sources"):
        if name in profile and not (_is_int(profile[name]) and profile[name] >= 0):
            raise _field(where, f"training_languages.{name}", profile[name], "an integer >= 0")
    shares = profile.get("shares", {})
    in_range = isinstance(shares, dict) and all(_is_number(v) and 0 <= v <= 1 for v in shares.values())
    if not (in_range and all(isinstance(k, str) for k in shares)):
        raise _field(where, "training_languages.shares", shares, "an object {language: share in [0, 1]}")


def check_max_length(meta: dict[str, Any], limit: int | None, *, where: Any, encoder: str) -> None:
    """Refuse a ``max_length`` beyond what the encoder can read (``limit`` tokens; ``None``: no limit)."""
    if limit is not None and meta["max_length"] > limit:
        raise PrecometError(
            f"{where}: field 'max_length' is {meta['max_length']}, beyond the {limit} tokens encoder {encoder} reads"
            " (its position embeddings)"
        )


def encoder_token_limit(encoder: Any, tokenizer: Any) -> int | None:
    """Tokens per text a Hugging Face encoder reads: its position embeddings (less RoBERTa's padding offset)
    and the tokenizer's own limit; ``None`` when neither is known."""
    limits: list[int] = []
    config: Any = getattr(encoder, "config", None)
    positions: Any = getattr(config, "max_position_embeddings", None)
    if _is_int(positions):
        roberta = "roberta" in str(getattr(config, "model_type", ""))
        offset = int(getattr(config, "pad_token_id", 0) or 0) + 1 if roberta else 0
        limits.append(positions - offset)
    own: Any = getattr(tokenizer, "model_max_length", None)
    if _is_int(own) and own < 100_000:  # tokenizers without a limit report a huge number
        limits.append(own)
    return min(limits) if limits else None


def build_model(encoder: torch.nn.Module, meta: dict[str, Any], *, where: Any = META) -> UtilityEstimator:
    try:
        return UtilityEstimator(
            encoder,
            pooling=meta["pooling"],
            hidden_sizes=tuple(meta["hidden_sizes"]),
            dropout=float(meta.get("dropout", 0.1)),
        )
    except (TypeError, ValueError, RuntimeError, PrecometError) as err:
        raise PrecometError(
            f"{where}: pooling {meta.get('pooling')!r}, hidden_sizes {meta.get('hidden_sizes')!r}, dropout"
            f" {meta.get('dropout')!r} do not describe a head ({err})"
        ) from None


def _load_weights(model: UtilityEstimator, state: dict[str, Any], *, where: Any, strict: bool) -> Any:
    """``model.load_state_dict`` with a one-line error naming the file when names or shapes do not match."""
    try:
        return model.load_state_dict(state, strict=strict)
    except RuntimeError as err:
        detail = " ".join(str(err).split())
        raise PrecometError(f"{where}: weights do not match the head described in {META} ({detail[:300]})") from None


def load_estimator(checkpoint_dir: str | Path, *, device: str = "cpu") -> Estimator:
    """Load a checkpoint directory offline (safetensors only), its network on ``device`` in eval mode: a
    :class:`~precomet.estimator.estimator.TokenReader` for a Hugging Face encoder checkpoint, a
    :class:`~precomet.estimator.estimator.VectorReader` for a ``backbone`` (registered sentence encoder) one."""
    from safetensors.torch import load_file

    path = Path(checkpoint_dir)
    device = check_device(device)
    meta = read_meta(path)
    try:
        head = load_file(str(path / HEAD))
    except Exception as err:  # noqa: BLE001 -- safetensors raises its own SafetensorError for truncated/corrupt files
        raise PrecometError(
            f"{path / HEAD}: not a readable safetensors file ({err}); the checkpoint is damaged"
        ) from None
    bad = [name for name, tensor in head.items() if not torch.isfinite(tensor.float()).all()]
    if bad:
        raise PrecometError(
            f"{path / HEAD}: the head holds non-finite weights (NaN or inf in {', '.join(sorted(bad)[:3])}); the"
            " checkpoint is damaged"
        )
    reader = _vector_reader(path, meta, head) if meta.get("backbone") else _token_reader(path, meta, head)
    reader.network.to(device).eval()
    return Estimator(reader=reader, meta=meta, path=path)


def _token_reader(path: Path, meta: dict[str, Any], head: dict[str, torch.Tensor]) -> TokenReader:
    """The Hugging Face encoder (copied into the checkpoint or from its package) with the head's weights."""
    encoder, tokenizer = load_encoder(_encoder_location(path, meta))
    check_max_length(meta, encoder_token_limit(encoder, tokenizer), where=path / META, encoder=str(path / ENCODER))
    model = build_model(encoder, meta, where=path / META)
    result = _load_weights(model, head, where=path / HEAD, strict=False)
    missing = [k for k in result.missing_keys if not k.startswith("encoder.")]
    if missing or result.unexpected_keys:
        raise PrecometError(
            f"{path / HEAD}: head does not match precomet.json (missing {missing}, unexpected {result.unexpected_keys})"
        )
    return TokenReader(network=model, tokenizer=tokenizer, max_length=int(meta["max_length"]))


def _vector_reader(path: Path, meta: dict[str, Any], head: dict[str, torch.Tensor]) -> VectorReader:
    """The registered encoder the checkpoint names (its identity checked) with the head, or the ensemble of heads."""
    encoder = backbone_encoder(meta, where=path / META)
    check_max_length(meta, encoder.max_tokens, where=path / META, encoder=repr(encoder.name))
    members = ensemble_members(meta, where=path / META)
    try:
        heads = [
            FeatureHead(encoder.dim, hidden_sizes=meta["hidden_sizes"], dropout=float(meta.get("dropout", 0.1)))
            for _ in range(members or 1)
        ]
    except (TypeError, ValueError, RuntimeError) as err:
        raise PrecometError(
            f"{path / META}: hidden_sizes {meta.get('hidden_sizes')!r}, dropout {meta.get('dropout')!r} do"
            f" not describe a head ({err})"
        ) from None
    model: FeatureHead | EnsembleHead = EnsembleHead(heads, meta["ensemble"]["scaling"]) if members else heads[0]
    try:
        model.load_state_dict(head, strict=True)
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(f"{path / HEAD}: weights do not match the head in precomet.json ({detail})") from None
    bad_std = sum(int((member.feature_std <= 0).sum()) for member in heads)
    if bad_std:  # training stores standard deviations, floored at 1e-8 and set to 1 below it: never <= 0
        raise PrecometError(
            f"{path / HEAD}: feature_std holds {bad_std} value(s) <= 0, which no training writes (a"
            " standard deviation is positive); the checkpoint is damaged"
        )
    return VectorReader(encoder=encoder, network=model)


def _encoder_location(path: Path, meta: dict[str, Any]) -> str:
    """``DIR/encoder``, or the installed package's encoder after checking its weights are the trained-on ones."""
    package = meta.get("encoder_package")
    if not package:
        return str(path / ENCODER)
    if not isinstance(package, dict) or package.get("name") not in ALIASES:
        raise PrecometError(
            f"{path / META}: encoder_package {package!r} is not an installed encoder; known: {sorted(ALIASES)}"
        )
    location = resolve_model(package["name"])
    if weights_digest(location) != package.get("weights_sha256"):
        raise PrecometError(
            f"{path}: the installed encoder {package['name']!r} ({location}) has other weights than the one this"
            " estimator was trained on; install the package version named in precomet.json or retrain"
        )
    return str(location)


def export_checkpoint(ckpt_path: str | Path, out_dir: str | Path, *, extra_meta: dict[str, Any] | None = None) -> Path:
    """Turn a Lightning ``.ckpt`` written by ``precomet train`` into the directory format (all files or none);
    ``extra_meta`` (e.g. the training history) is added to ``precomet.json``."""
    check_output(out_dir, directory=True)
    model, tokenizer, meta = read_lightning_checkpoint(ckpt_path, extra_meta=extra_meta)
    logger.info("exported %s to %s", ckpt_path, out_dir)
    return save_checkpoint(out_dir, model=model, tokenizer=tokenizer, meta=meta)


def read_lightning_checkpoint(
    ckpt_path: str | Path, *, extra_meta: dict[str, Any] | None = None
) -> tuple[UtilityEstimator, Any, dict[str, Any]]:
    """``(model in eval mode, tokenizer, metadata)`` of a Lightning ``.ckpt`` written by ``precomet train``."""
    ckpt_path = Path(ckpt_path)
    if not ckpt_path.is_file():
        raise PrecometError(f"{ckpt_path}: checkpoint file not found")
    try:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 -- torch raises UnpicklingError / RuntimeError for foreign or corrupt files
        raise PrecometError(f"{ckpt_path}: cannot read as a weights-only Lightning checkpoint ({err})") from None
    meta = ckpt.get("precomet") if isinstance(ckpt, dict) else None
    if not isinstance(meta, dict) or not isinstance(ckpt.get("state_dict"), dict):
        raise PrecometError(f"{ckpt_path}: not written by precomet train (no 'precomet' metadata)")
    if meta.get("backbone"):
        raise PrecometError(
            f"{ckpt_path}: an estimator on a sentence-encoder backbone; its checkpoint directory is written by"
            " precomet train itself (export applies to Hugging Face encoder estimators)"
        )
    check_meta(meta, where=f"{ckpt_path} (precomet metadata)")
    package = meta.get("encoder_package")
    location = package["name"] if package else meta.get("encoder_path")
    if not isinstance(location, str):
        raise PrecometError(f"{ckpt_path}: precomet metadata names no encoder (encoder_path or encoder_package)")
    encoder, tokenizer = load_encoder(location)
    model = build_model(encoder, meta, where=ckpt_path)
    state = {
        k[len("model.") :]: v
        for k, v in ckpt["state_dict"].items()
        if isinstance(k, str) and k.startswith("model.") and isinstance(v, torch.Tensor)
    }
    bad = [k for k, v in state.items() if not k.startswith("encoder.") and not torch.isfinite(v.float()).all()]
    if bad:
        raise PrecometError(f"{ckpt_path}: non-finite weights (NaN or inf in {', '.join(sorted(bad)[:3])})")
    _load_weights(model, state, where=ckpt_path, strict=True)
    return model.eval(), tokenizer, {**meta, **(extra_meta or {})}
