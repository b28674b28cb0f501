"""The checkpoint directory (see checkpoints/README.md) and ``.ckpt`` export.

``DIR/precomet.json`` (metadata), ``DIR/encoder/`` (``save_pretrained`` weights in safetensors plus the
tokenizer), ``DIR/head.safetensors`` (MLP head and scalar-mix weights). A checkpoint whose encoder was
frozen and comes from an installed package (``minilm``) names the package instead of copying the encoder
(``encoder_package`` in the metadata, with the sha256 of its weights, checked on load): a few MB instead
of ~90. Loading never touches the network and never unpickles; :func:`export_checkpoint` is the only place
that reads a Lightning ``.ckpt``, with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from precomet import __version__
from precomet.encoders.registry import ENCODERS, fine_tunable_folder
from precomet.encoders.transformer import weights_digest
from precomet.errors import PrecometError
from precomet.estimator.backbone import EnsembleHead, FeatureHead, backbone_encoder
from precomet.estimator.estimator import Estimator, TokenReader, VectorReader, check_device
from precomet.estimator.metadata import FORMAT_VERSION, Backbone, CheckpointMeta, check_meta, portable
from precomet.estimator.model import UtilityEstimator, load_encoder, resolve_model
from precomet.io import jsonsafe
from precomet.io.text import read_json
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import check_output

logger = logging.getLogger(__name__)

META = "precomet.json"
HEAD = "head.safetensors"
COVERAGE_PREFIX = "coverage."
"""Tensors of ``head.safetensors`` under this prefix are the coverage (:mod:`precomet.estimator.coverage`), not the
head's weights."""
ENCODER = "encoder"


def packaged_encoder(name: str, *, frozen: bool) -> dict[str, str] | None:
    """``{"name", "weights_sha256"}`` when ``name`` is a registered encoder whose weights an installed package ships
    (``minilm``) and the encoder is frozen (so the package's weights are exactly the ones the head was trained on),
    else ``None``."""
    if not frozen or name not in ENCODERS or fine_tunable_folder(name) is None:
        return None
    return {"name": name, "weights_sha256": weights_digest(resolve_model(name))}


def save_checkpoint(out_dir: str | Path, *, model: UtilityEstimator, tokenizer: Any, meta: dict[str, Any]) -> Path:
    """Write the directory format, all files or none; ``meta`` gets ``format_version`` and ``precomet_version``
    added. With an ``encoder_package`` in ``meta`` the encoder is not copied (see the module doc)."""
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
    """``precomet.json``: ``meta`` with ``format_version`` and ``precomet_version``, validated
    (:func:`~precomet.estimator.metadata.check_meta`) and without the training machine's paths."""
    full = portable({"format_version": FORMAT_VERSION, "precomet_version": __version__, **meta})
    check_meta(full, where=f"checkpoint metadata for {path}")
    with open(path, "w", encoding="utf-8") as handle:
        jsonsafe.dump(full, handle, indent=2, sort_keys=True)
        handle.write("\n")


def read_meta(checkpoint_dir: str | Path) -> CheckpointMeta:
    """``precomet.json`` after checking that every file of the format is present, the version is known and
    every field the estimator uses has its type (:func:`~precomet.estimator.metadata.check_meta`)."""
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
    meta = read_json(path / META)  # errors name the file: invalid JSON, not UTF-8, nested too deeply, unreadable
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
    return check_meta(meta, where=path / META)


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_max_length(meta: CheckpointMeta, limit: int | None, *, where: Any, encoder: str) -> None:
    """Refuse a ``max_length`` beyond what the encoder can read (``limit`` tokens; ``None``: no limit)."""
    if limit is not None and meta.max_length > limit:
        raise PrecometError(
            f"{where}: field 'max_length' is {meta.max_length}, beyond the {limit} tokens encoder {encoder} reads"
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


def build_model(encoder: torch.nn.Module, meta: CheckpointMeta, *, where: Any = META) -> UtilityEstimator:
    try:
        return UtilityEstimator(
            encoder, pooling=meta.pooling, hidden_sizes=tuple(meta.hidden_sizes), dropout=meta.dropout
        )
    except (TypeError, ValueError, RuntimeError, PrecometError) as err:
        raise PrecometError(
            f"{where}: pooling {meta.pooling!r}, hidden_sizes {meta.hidden_sizes!r}, dropout"
            f" {meta.dropout!r} do not describe a head ({err})"
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
    head = {name: tensor for name, tensor in head.items() if not name.startswith(COVERAGE_PREFIX)}
    bad = [name for name, tensor in head.items() if not torch.isfinite(tensor.float()).all()]
    if bad:
        raise PrecometError(
            f"{path / HEAD}: the head holds non-finite weights (NaN or inf in {', '.join(sorted(bad)[:3])}); the"
            " checkpoint is damaged"
        )
    if meta.backbone:
        reader: TokenReader | VectorReader = _vector_reader(path, meta, meta.backbone, head, device)
    else:
        reader = _token_reader(path, meta, head)
    reader.network.to(device).eval()
    return Estimator(reader=reader, meta=meta, path=path)


def _token_reader(path: Path, meta: CheckpointMeta, head: dict[str, torch.Tensor]) -> TokenReader:
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
    return TokenReader(network=model, tokenizer=tokenizer, max_length=meta.max_length)


def _vector_reader(
    path: Path, meta: CheckpointMeta, backbone: Backbone, head: dict[str, torch.Tensor], device: str
) -> VectorReader:
    """The registered encoder the checkpoint names (its identity checked; on ``device`` where it can run there)
    with the head, or the ensemble of heads."""
    encoder = backbone_encoder(backbone, where=path / META).to(device)
    check_max_length(meta, encoder.max_tokens, where=path / META, encoder=repr(encoder.name))
    members = meta.ensemble.members if meta.ensemble else 1
    try:
        heads = [FeatureHead(encoder.dim, hidden_sizes=meta.hidden_sizes, dropout=meta.dropout) for _ in range(members)]
    except (TypeError, ValueError, RuntimeError) as err:
        raise PrecometError(
            f"{path / META}: hidden_sizes {meta.hidden_sizes!r}, dropout {meta.dropout!r} do not describe a head"
            f" ({err})"
        ) from None
    model: FeatureHead | EnsembleHead = EnsembleHead(heads, meta.ensemble.scaling) if meta.ensemble else heads[0]
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


def _encoder_location(path: Path, meta: CheckpointMeta) -> str:
    """``DIR/encoder``, or the installed package's encoder after checking its weights are the trained-on ones."""
    package = meta.encoder_package
    if package is None:
        return str(path / ENCODER)
    packaged = sorted(name for name in ENCODERS if fine_tunable_folder(name) is not None)
    if package.name not in packaged:
        raise PrecometError(
            f"{path / META}: encoder_package {package.model_dump()!r} is not an installed encoder; known: {packaged}"
        )
    location = resolve_model(package.name)
    if weights_digest(location) != package.weights_sha256:
        raise PrecometError(
            f"{path}: the installed encoder {package.name!r} ({location}) has other weights than the one this"
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
    typed = check_meta(meta, where=f"{ckpt_path} (precomet metadata)")
    if typed.backbone:
        raise PrecometError(
            f"{ckpt_path}: an estimator on a sentence-encoder backbone; its checkpoint directory is written by"
            " precomet train itself (export applies to Hugging Face encoder estimators)"
        )
    location = typed.encoder_package.name if typed.encoder_package else typed.encoder_path
    if location is None:
        raise PrecometError(f"{ckpt_path}: precomet metadata names no encoder (encoder_path or encoder_package)")
    encoder, tokenizer = load_encoder(location)
    model = build_model(encoder, typed, where=ckpt_path)
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
