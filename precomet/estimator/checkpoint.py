"""The checkpoint directory (see checkpoints/README.md): one way to write it (:func:`export_lightning`, from the
Lightning ``.ckpt`` of the best epoch) and one way to read it (:func:`load_estimator`).

``DIR/precomet.json`` (metadata), ``DIR/head.safetensors`` (the network but its encoder: MLP head, scalar mix,
standardisation) and, for a Hugging Face encoder, ``DIR/encoder/`` (``save_pretrained`` weights in safetensors plus
the tokenizer). A registered encoder (``backbone``) is never copied, nor an encoder frozen from an installed package
(``encoder_package``, with the sha256 of its weights, checked on load). Loading never touches the network and never
unpickles; a Lightning ``.ckpt`` is read with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from precomet import __version__
from precomet.encoders import SentenceEncoder
from precomet.encoders.registry import ENCODERS, fine_tunable_folder, model_folder
from precomet.encoders.transformer import TransformerEncoder, load_transformer, weights_digest
from precomet.errors import PrecometError
from precomet.estimator.backbone import POOLING, backbone_encoder, token_encoder
from precomet.estimator.estimator import Estimator, Reader, check_device
from precomet.estimator.metadata import FORMAT_VERSION, CheckpointMeta, check_meta, portable
from precomet.estimator.model import EnsembleHead, EstimatorNetwork
from precomet.io import jsonsafe
from precomet.io.text import read_json
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import check_not_inputs, check_output

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
    return {"name": name, "weights_sha256": weights_digest(model_folder(name))}


def save_checkpoint(
    out_dir: str | Path, *, network: EstimatorNetwork, meta: dict[str, Any], encoder: tuple[Any, Any] | None = None
) -> Path:
    """Write the directory format, all files or none; ``meta`` gets ``format_version`` and ``precomet_version``
    added; ``encoder`` (a Hugging Face ``(model, tokenizer)``) is saved as ``encoder/`` (see the module doc)."""
    with output_set() as out:
        write_checkpoint_files(out.directory(out_dir), network=network, meta=meta, encoder=encoder)
    return Path(out_dir)


def write_checkpoint_files(
    out_dir: Path, *, network: EstimatorNetwork, meta: dict[str, Any], encoder: tuple[Any, Any] | None = None
) -> None:
    """The files of :func:`save_checkpoint` written straight into ``out_dir`` (a temporary directory of an
    output set)."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    if encoder is not None:
        model, tokenizer = encoder
        model.save_pretrained(out_dir / ENCODER, safe_serialization=True)
        tokenizer.save_pretrained(out_dir / ENCODER)
    save_file(network.head_state(), str(out_dir / HEAD))
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


def check_max_length(meta: CheckpointMeta, limit: int | None, *, where: Any, encoder: str) -> None:
    """Refuse a ``max_length`` beyond what the encoder can read (``limit`` tokens; ``None``: no limit)."""
    if limit is not None and meta.max_length > limit:
        raise PrecometError(
            f"{where}: field 'max_length' is {meta.max_length}, beyond the {limit} tokens encoder {encoder} reads"
            " (its position embeddings)"
        )


def build_network(meta: CheckpointMeta, encoder: SentenceEncoder, *, where: Any = META) -> EstimatorNetwork:
    """A freshly initialised network of the shape ``meta`` describes, over ``encoder``'s vectors."""
    mix_layers = encoder.hidden_states() if isinstance(encoder, TransformerEncoder) and meta.pooling == "mix" else None
    if meta.backbone is None and meta.pooling not in POOLINGS:
        raise PrecometError(f"{where}: pooling {meta.pooling!r} is not one of {list(POOLINGS)}")
    try:
        return EstimatorNetwork.over(
            encoder, hidden_sizes=meta.hidden_sizes, dropout=meta.dropout, mix_layers=mix_layers
        )
    except (TypeError, ValueError, RuntimeError) as err:
        raise PrecometError(
            f"{where}: pooling {meta.pooling!r}, hidden_sizes {meta.hidden_sizes!r}, dropout {meta.dropout!r} do not"
            f" describe a head ({err})"
        ) from None


POOLINGS = ("mean", "mix", POOLING)
"""``pooling`` of a Hugging Face encoder: the mean of its last layer's token vectors, a trained layer-wise mix of
every layer's means, or its vectors as registered (``sentence-encoder``: the last layer's mean, L2-normalised)."""

_STANDARDISATION = ("feature_mean", "feature_std")


def load_estimator(checkpoint_dir: str | Path, *, device: str = "cpu") -> Estimator:
    """Load a checkpoint directory offline (safetensors only): its :class:`~precomet.estimator.estimator.Reader`
    (the encoder it names, checked, and its network on ``device`` in eval mode) and its metadata. The encoder's
    model is loaded only when a source must be encoded."""
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
    encoder = checkpoint_encoder(path, meta).to(device)
    reader = Reader(encoder=encoder, network=_network(path, meta, encoder, head))
    reader.network.to(device).eval()
    return Estimator(reader=reader, meta=meta, path=path)


def checkpoint_encoder(path: Path, meta: CheckpointMeta) -> SentenceEncoder:
    """The encoder whose vectors the checkpoint's network reads: the registered one it names (``backbone``, its
    identity checked), or its Hugging Face encoder (``encoder/``, or the installed package it was frozen from) as a
    :class:`~precomet.encoders.transformer.TransformerEncoder` pooled as it was trained."""
    if meta.backbone:
        encoder = backbone_encoder(meta.backbone, where=path / META)
        check_max_length(meta, encoder.max_tokens, where=path / META, encoder=repr(encoder.name))
        return encoder
    location = _encoder_location(path, meta)
    encoder = token_encoder(location, pooling=meta.pooling, max_length=meta.max_length)
    shown = str(path / ENCODER) if meta.encoder_package is None else repr(meta.encoder_package.name)
    check_max_length(meta, encoder.token_limit(), where=path / META, encoder=shown)
    return encoder


def _network(
    path: Path, meta: CheckpointMeta, encoder: SentenceEncoder, head: dict[str, torch.Tensor]
) -> EstimatorNetwork | EnsembleHead:
    """The network (or the ensemble of networks) with the head file's weights. A Hugging Face encoder's head written
    before 0.19 has no standardisation: it reads the vectors as they are (mean 0, std 1)."""
    members = [
        build_network(meta, encoder, where=path / META) for _ in range(meta.ensemble.members if meta.ensemble else 1)
    ]
    model: EstimatorNetwork | EnsembleHead = (
        EnsembleHead(members, meta.ensemble.scaling) if meta.ensemble else members[0]
    )
    legacy = meta.backbone is None and meta.ensemble is None  # 0.18's Hugging Face heads: never an ensemble
    if legacy and not any(name in head for name in _STANDARDISATION):
        head = {**head, **{name: getattr(members[0], name) for name in _STANDARDISATION}}
    first = next((t for k, t in head.items() if k.endswith("head.0.weight") and t.ndim == 2), None)
    if first is not None and first.shape[1] != len(members[0].feature_mean):
        source = f"encoder {meta.backbone.name!r}" if meta.backbone else str(path / ENCODER)
        raise PrecometError(
            f"{source} gives vectors of {len(members[0].feature_mean)} values, but the head in {path / HEAD} reads"
            f" {first.shape[1]}: the encoder is not the one the head was trained on, or the checkpoint is damaged"
        )
    try:
        model.load_state_dict(head, strict=True)
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(f"{path / HEAD}: weights do not match the head in precomet.json ({detail})") from None
    bad_std = sum(int((member.feature_std <= 0).sum()) for member in members)
    if bad_std:  # training stores standard deviations, floored at 1e-8 and set to 1 below it: never <= 0
        raise PrecometError(
            f"{path / HEAD}: feature_std holds {bad_std} value(s) <= 0, which no training writes (a"
            " standard deviation is positive); the checkpoint is damaged"
        )
    return model


def _encoder_location(path: Path, meta: CheckpointMeta) -> Path:
    """``DIR/encoder``, or the installed package's encoder after checking its weights are the trained-on ones."""
    package = meta.encoder_package
    if package is None:
        return path / ENCODER
    if package.name not in ENCODERS or fine_tunable_folder(package.name) is None:
        packaged = sorted(name for name in ENCODERS if fine_tunable_folder(name) is not None)
        raise PrecometError(
            f"{path / META}: encoder_package {package.model_dump()!r} is not an installed encoder; known: {packaged}"
        )
    location = model_folder(package.name)
    if weights_digest(location) != package.weights_sha256:
        raise PrecometError(
            f"{path}: the installed encoder {package.name!r} ({location}) has other weights than the one this"
            " estimator was trained on; install the package version named in precomet.json or retrain"
        )
    return location


def export_checkpoint(ckpt_path: str | Path, out_dir: str | Path, *, extra_meta: dict[str, Any] | None = None) -> Path:
    """Turn a Lightning ``.ckpt`` written by ``precomet train`` into the directory format (all files or none);
    ``extra_meta`` (e.g. the training history) is added to ``precomet.json``. A folder holding ``ckpt_path`` (the
    training run's own directory) is refused: replacing it would delete the ``.ckpt`` being read."""
    check_output(out_dir, directory=True)
    check_not_inputs([out_dir], [ckpt_path])
    with output_set() as out:
        export_lightning(ckpt_path, out.directory(out_dir), extra_meta=extra_meta)
    logger.info("exported %s to %s", ckpt_path, out_dir)
    return Path(out_dir)


def export_lightning(ckpt_path: str | Path, out_dir: Path, *, extra_meta: dict[str, Any] | None = None) -> None:
    """The one export: the checkpoint directory's files of a Lightning ``.ckpt`` written by ``precomet train``,
    written into ``out_dir`` (a temporary directory of an output set): the head, the metadata with ``extra_meta``
    and, for a Hugging Face encoder not frozen from an installed package, the encoder (fine-tuned, or as it was)."""
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
    state = {
        k[len("model.") :]: v
        for k, v in ckpt["state_dict"].items()
        if isinstance(k, str) and k.startswith("model.") and isinstance(v, torch.Tensor)
    }
    head = {k: v for k, v in state.items() if not k.startswith("encoder.")}
    bad = [k for k, v in head.items() if not torch.isfinite(v.float()).all()]
    if bad:
        raise PrecometError(f"{ckpt_path}: non-finite weights (NaN or inf in {', '.join(sorted(bad)[:3])})")
    encoder = None
    if typed.backbone is None and typed.encoder_package is None:
        if typed.encoder_path is None:
            raise PrecometError(f"{ckpt_path}: precomet metadata names no encoder (encoder_path or encoder_package)")
        location = Path(typed.encoder_path)
        encoder = load_transformer(location, name=str(location))
        tuned = {k.removeprefix("encoder.model."): v for k, v in state.items() if k.startswith("encoder.model.")}
        if tuned:
            try:
                encoder[0].load_state_dict(tuned, strict=True)
            except RuntimeError as err:
                detail = " ".join(str(err).split())[:300]
                raise PrecometError(f"{ckpt_path}: encoder weights do not match {location} ({detail})") from None
    network = head_network(head, typed, where=ckpt_path)
    write_checkpoint_files(out_dir, network=network, meta={**meta, **(extra_meta or {})}, encoder=encoder)


def head_network(head: dict[str, torch.Tensor], meta: CheckpointMeta, *, where: Any) -> EstimatorNetwork:
    """A network (without its encoder) holding ``head``, its width and mix read from the tensors; refused when the
    weights' names or shapes are not the head ``meta`` describes."""
    dim = len(head["feature_mean"]) if "feature_mean" in head else 0
    mix = head.get("mix.weights")
    try:
        network = EstimatorNetwork(
            dim, hidden_sizes=meta.hidden_sizes, dropout=meta.dropout, mix_layers=None if mix is None else len(mix)
        )
        network.load_state_dict(head, strict=True)
    except (RuntimeError, TypeError, ValueError) as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(f"{where}: weights do not match the head described in {META} ({detail})") from None
    return network
