"""The checkpoint directory (see checkpoints/README.md) and ``.ckpt`` export.

``DIR/precomet.json`` (metadata), ``DIR/encoder/`` (``save_pretrained`` weights in safetensors plus the
tokenizer), ``DIR/head.safetensors`` (MLP head and scalar-mix weights). Loading never touches the network
and never unpickles; :func:`export_checkpoint` is the only place that reads a Lightning ``.ckpt``, with
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from precomet import __version__
from precomet.errors import PrecometError
from precomet.estimator.model import UtilityEstimator
from precomet.io.atomic import atomic_write

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
        """Undo the training standardisation and orient so that higher = annotate first."""
        stats = self.meta["standardisation"]
        value = standardised * float(stats["std"]) + float(stats["mean"])
        return value if self.meta["direction"] == "higher_first" else -value


def save_checkpoint(out_dir: str | Path, *, model: UtilityEstimator, tokenizer: Any, meta: dict[str, Any]) -> Path:
    """Write the directory format; ``meta`` gets ``format_version`` and ``precomet_version`` added."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.encoder.save_pretrained(out_dir / ENCODER, safe_serialization=True)
    tokenizer.save_pretrained(out_dir / ENCODER)
    save_file(model.head_state(), str(out_dir / HEAD))
    full = {"format_version": FORMAT_VERSION, "precomet_version": __version__, **meta}
    missing = [k for k in REQUIRED_META if k not in full]
    if missing:
        raise PrecometError(f"checkpoint metadata lacks {missing}")
    with atomic_write(out_dir / META) as handle:
        json.dump(full, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return out_dir


def read_meta(checkpoint_dir: str | Path) -> dict[str, Any]:
    """``precomet.json`` after checking that every file of the format is present and the version is known."""
    path = Path(checkpoint_dir)
    if not path.is_dir():
        raise PrecometError(f"{path}: checkpoint directory not found")
    missing = [n for n in (META, HEAD, f"{ENCODER}/config.json") if not (path / n).is_file()]
    if not any((path / ENCODER).glob("*.safetensors")):
        missing.append(f"{ENCODER}/*.safetensors")
    if missing:
        raise PrecometError(f"{path}: not a precomet checkpoint, missing {missing} (see checkpoints/README.md)")
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PrecometError(f"{path / META}: invalid JSON ({err.msg})") from None
    version = meta.get("format_version") if isinstance(meta, dict) else None
    if version != FORMAT_VERSION:
        raise PrecometError(f"{path / META}: unknown format_version {version!r}; this precomet reads {FORMAT_VERSION}")
    absent = [k for k in REQUIRED_META if k not in meta]
    if absent:
        raise PrecometError(f"{path / META}: missing field(s) {absent}")
    return meta


def build_model(encoder: torch.nn.Module, meta: dict[str, Any]) -> UtilityEstimator:
    return UtilityEstimator(
        encoder, pooling=meta["pooling"], hidden_sizes=tuple(meta["hidden_sizes"]), dropout=float(meta.get("dropout", 0.1))
    )


def load_estimator(checkpoint_dir: str | Path, *, device: str = "cpu") -> Estimator:
    """Load a checkpoint directory offline (safetensors only) onto ``device``, in eval mode."""
    from safetensors.torch import load_file

    from precomet.estimator.model import load_encoder

    path = Path(checkpoint_dir)
    meta = read_meta(path)
    encoder, tokenizer = load_encoder(str(path / ENCODER))
    model = build_model(encoder, meta)
    head = load_file(str(path / HEAD))
    result = model.load_state_dict(head, strict=False)
    missing = [k for k in result.missing_keys if not k.startswith("encoder.")]
    if missing or result.unexpected_keys:
        raise PrecometError(f"{path / HEAD}: head does not match precomet.json (missing {missing}, unexpected {result.unexpected_keys})")
    return Estimator(model=model.to(device).eval(), tokenizer=tokenizer, meta=meta, path=path)


def export_checkpoint(ckpt_path: str | Path, out_dir: str | Path) -> Path:
    """Turn a Lightning ``.ckpt`` written by ``precomet train`` into the directory format."""
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
    encoder, tokenizer = load_encoder(meta["encoder_path"])
    model = build_model(encoder, meta)
    state = {k[len("model."):]: v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    model.load_state_dict(state)
    logger.info("exported %s (epoch %s) to %s", ckpt_path, ckpt.get("epoch"), out_dir)
    return save_checkpoint(out_dir, model=model.eval(), tokenizer=tokenizer, meta=meta)
