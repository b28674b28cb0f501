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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from precomet import __version__
from precomet.encoders.transformer import weights_digest
from precomet.errors import PrecometError
from precomet.estimator.model import UtilityEstimator
from precomet.io import jsonsafe
from precomet.io.atomic import check_output, output_set

if TYPE_CHECKING:
    from precomet.estimator.backbone import BackboneEstimator

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
META = "precomet.json"
HEAD = "head.safetensors"
ENCODER = "encoder"
REQUIRED_META = ("format_version", "target", "direction", "standardisation", "pooling", "hidden_sizes", "max_length")


@dataclass(frozen=True)
class Estimator:
    """A loaded checkpoint: the network (eval mode), its tokenizer and the ``precomet.json`` metadata."""

    model: UtilityEstimator
    tokenizer: Any
    meta: dict[str, Any]
    path: Path | None = None

    @property
    def max_length(self) -> int:
        return int(self.meta["max_length"])

    def to_utility(self, standardised: torch.Tensor) -> torch.Tensor:
        return to_utility(self.meta, standardised)


def to_utility(meta: dict[str, Any], standardised: torch.Tensor) -> torch.Tensor:
    """Undo the training standardisation recorded in ``meta`` and orient so that higher = annotate first."""
    stats = meta["standardisation"]
    value = standardised * float(stats["std"]) + float(stats["mean"])
    return value if meta["direction"] == "higher_first" else -value


def packaged_encoder(name: str, *, frozen: bool) -> dict[str, str] | None:
    """``{"name", "weights_sha256"}`` when ``name`` is an installed-package encoder alias and the encoder is
    frozen (so the package's weights are exactly the ones the head was trained on), else ``None``."""
    from precomet.estimator.model import ALIASES, resolve_model

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
    """``precomet.json`` after checking that every file of the format is present and the version is known."""
    path = Path(checkpoint_dir)
    if not path.is_dir():
        raise PrecometError(f"{path}: checkpoint directory not found")
    missing = [n for n in (META, HEAD) if not (path / n).is_file()]
    if missing:
        raise PrecometError(f"{path}: not a precomet checkpoint, missing {missing} (see checkpoints/README.md)")
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PrecometError(f"{path / META}: invalid JSON ({err.msg})") from None
    if not (isinstance(meta, dict) and (meta.get("encoder_package") or meta.get("backbone"))):
        missing = [] if (path / ENCODER / "config.json").is_file() else [f"{ENCODER}/config.json"]
        if not any((path / ENCODER).glob("*.safetensors")):
            missing.append(f"{ENCODER}/*.safetensors")
        if missing:
            raise PrecometError(f"{path}: not a precomet checkpoint, missing {missing} (see checkpoints/README.md)")
    version = meta.get("format_version") if isinstance(meta, dict) else None
    if version != FORMAT_VERSION:
        raise PrecometError(f"{path / META}: unknown format_version {version!r}; this precomet reads {FORMAT_VERSION}")
    absent = [k for k in REQUIRED_META if k not in meta]
    if absent:
        raise PrecometError(f"{path / META}: missing field(s) {absent}")
    return meta


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


def load_estimator(checkpoint_dir: str | Path, *, device: str = "cpu") -> Estimator | BackboneEstimator:
    """Load a checkpoint directory offline (safetensors only) onto ``device``, in eval mode: an
    :class:`Estimator` (Hugging Face encoder + head) or, for ``backbone`` checkpoints, a
    :class:`~precomet.estimator.backbone.BackboneEstimator` (registered encoder + head, on CPU)."""
    from safetensors.torch import load_file

    from precomet.estimator.model import load_encoder

    path = Path(checkpoint_dir)
    meta = read_meta(path)
    try:
        head = load_file(str(path / HEAD))
    except Exception as err:  # noqa: BLE001 -- safetensors raises its own SafetensorError for truncated/corrupt files
        raise PrecometError(
            f"{path / HEAD}: not a readable safetensors file ({err}); the checkpoint is damaged"
        ) from None
    if meta.get("backbone"):
        from precomet.estimator.backbone import load_backbone_estimator

        return load_backbone_estimator(path, meta, head)
    encoder, tokenizer = load_encoder(_encoder_location(path, meta))
    model = build_model(encoder, meta, where=path / META)
    result = _load_weights(model, head, where=path / HEAD, strict=False)
    missing = [k for k in result.missing_keys if not k.startswith("encoder.")]
    if missing or result.unexpected_keys:
        raise PrecometError(
            f"{path / HEAD}: head does not match precomet.json (missing {missing}, unexpected {result.unexpected_keys})"
        )
    return Estimator(model=model.to(device).eval(), tokenizer=tokenizer, meta=meta, path=path)


def _encoder_location(path: Path, meta: dict[str, Any]) -> str:
    """``DIR/encoder``, or the installed package's encoder after checking its weights are the trained-on ones."""
    package = meta.get("encoder_package")
    if not package:
        return str(path / ENCODER)
    from precomet.estimator.model import ALIASES, resolve_model

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
    from precomet.estimator.model import load_encoder

    ckpt_path = Path(ckpt_path)
    if not ckpt_path.is_file():
        raise PrecometError(f"{ckpt_path}: checkpoint file not found")
    try:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 -- torch raises UnpicklingError / RuntimeError for foreign or corrupt files
        raise PrecometError(f"{ckpt_path}: cannot read as a weights-only Lightning checkpoint ({err})") from None
    meta = ckpt.get("precomet") if isinstance(ckpt, dict) else None
    if not isinstance(meta, dict) or "state_dict" not in ckpt:
        raise PrecometError(f"{ckpt_path}: not written by precomet train (no 'precomet' metadata)")
    package = meta.get("encoder_package")
    encoder, tokenizer = load_encoder(package["name"] if package else meta["encoder_path"])
    model = build_model(encoder, meta, where=ckpt_path)
    state = {k[len("model.") :]: v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    _load_weights(model, state, where=ckpt_path, strict=True)
    return model.eval(), tokenizer, {**meta, **(extra_meta or {})}
