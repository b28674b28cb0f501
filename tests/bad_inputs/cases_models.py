"""Bad-input cases of the model side (issue 20): damaged or mistyped checkpoints (``precomet.json`` of the wrong
shape or field types, a ``max_length`` beyond the encoder, non-finite heads or predictions) through ``predict``,
``select --checkpoint`` and ``export``; device and option mistakes of ``predict``; unreadable or mistyped
``train`` configurations, overrides and targets; an embedding cache folder that is a file."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import torch

from tests.bad_inputs import GOOD, TARGETS, Case, P, S, T, edit_meta, shipped_checkpoint

SRC = {"src.txt": "hello world\nanother source\n"}
PT = {"targets.jsonl": TARGETS}
SC = S.replace("--method metric_var --metric m", "--checkpoint ckpt")
CUDA_BUILT = torch.backends.cuda.is_built()


def _meta_bytes(content: bytes):
    def prepare(folder: Path) -> None:
        (shipped_checkpoint(folder) / "precomet.json").write_bytes(content)

    return prepare


def _meta(**change):
    return lambda folder: edit_meta(folder, **change)


def _head(change, *, build=shipped_checkpoint):
    """The checkpoint ``build`` makes in ``folder/ckpt`` with ``change(tensors)`` applied to its head."""

    def prepare(folder: Path) -> None:
        from safetensors.torch import load_file, save_file

        head = build(folder) / "head.safetensors"
        tensors = load_file(str(head))
        change(tensors)
        save_file(tensors, str(head))

    return prepare


def _first_weight(value: float):
    def change(tensors: dict) -> None:
        name = sorted(k for k in tensors if k.endswith("weight"))[0]
        tensors[name].view(-1)[0] = value

    return change


def _overflow(tensors: dict) -> None:
    """Finite weights whose output overflows float32: every hidden unit saturates at 1, the last layer sums 3e38s
    (in every head of an ensemble: ``members.I.head.*``)."""
    for prefix in {k.split("head.")[0] for k in tensors if "head." in k}:
        layers = sorted(k for k in tensors if k.startswith(prefix + "head.") and k.endswith("weight"))
        for name in layers[:-1]:
            tensors[name].zero_()
            tensors[name.replace("weight", "bias")].fill_(50.0)
        tensors[layers[-1]].fill_(3e38)
        tensors[layers[-1].replace("weight", "bias")].fill_(3e38)


def _no_head(folder: Path) -> None:
    (shipped_checkpoint(folder) / "head.safetensors").unlink()


def tiny_hf_checkpoint(folder: Path, **change) -> Path:
    """A Hugging Face encoder checkpoint (tiny random XLM-R, 128 tokens, untrained head) in ``folder/ckpt``,
    written by :func:`save_checkpoint` without a Trainer; ``change`` is applied to its precomet.json."""
    from precomet.encoders.transformer import load_transformer
    from precomet.estimator.checkpoint import save_checkpoint
    from precomet.estimator.model import EstimatorNetwork
    from precomet.estimator.tiny import build_tiny_encoder

    encoder_dir = build_tiny_encoder(folder / "_encoder", texts=["hello world", "another source"] * 5, seed=0)
    encoder = load_transformer(encoder_dir, name=str(encoder_dir))
    torch.manual_seed(0)
    network = EstimatorNetwork(32, hidden_sizes=(8,), dropout=0.1)
    meta = {
        "target": {"method": "metric_avg", "normalisation": ["zscore"]},
        "direction": "higher_first",
        "standardisation": {"mean": 0.0, "std": 1.0},
        "pooling": "mean",
        "hidden_sizes": [8],
        "dropout": 0.1,
        "max_length": 64,
        "encoder": str(encoder_dir),
    }
    save_checkpoint(folder / "ckpt", network=network, meta=meta, encoder=encoder)
    shutil.rmtree(encoder_dir)
    if change:
        path = folder / "ckpt" / "precomet.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    return folder / "ckpt"


def _encoder_file(name: str, damage):
    """A tiny Hugging Face checkpoint whose ``encoder/name`` is replaced by ``damage(its bytes)``."""

    def prepare(folder: Path) -> None:
        path = tiny_hf_checkpoint(folder) / "encoder" / name
        path.write_bytes(damage(path.read_bytes()))

    return prepare


def _torch_file(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _lightning(meta: dict, state: dict | None = None) -> bytes:
    return _torch_file({"precomet": meta, "state_dict": state if state is not None else {}})


GOOD_META = {
    "target": {"method": "m"},
    "direction": "higher_first",
    "standardisation": {"mean": 0.0, "std": 1.0},
    "pooling": "mean",
    "hidden_sizes": [8],
    "max_length": 64,
    "encoder_path": "/nonexistent/encoder",
}

CASES = {
    # ---- precomet.json of the wrong shape or with mistyped fields (predict, select --checkpoint)
    "predict-meta-is-a-list": Case(P.split(), SRC, ("precomet.json", "not a JSON object"), _meta_bytes(b"[1, 2]")),
    "predict-meta-is-a-number": Case(P.split(), SRC, ("precomet.json", "not a JSON object"), _meta_bytes(b"3")),
    "predict-meta-is-a-string": Case(P.split(), SRC, ("precomet.json", "not a JSON object"), _meta_bytes(b'"x"')),
    "predict-meta-invalid-json": Case(P.split(), SRC, ("precomet.json", "invalid JSON"), _meta_bytes(b"{")),
    "predict-meta-binary": Case(P.split(), SRC, ("precomet.json", "UTF-8"), _meta_bytes(b"\x00\xff\xfe\x13binary")),
    "predict-meta-max-length-text": Case(P.split(), SRC, ("precomet.json", "max_length"), _meta(max_length="long")),
    "predict-meta-max-length-negative": Case(P.split(), SRC, ("precomet.json", "max_length"), _meta(max_length=-1)),
    "predict-meta-max-length-beyond-encoder": Case(
        P.split(), SRC, ("precomet.json", "max_length", "100000", "512"), _meta(max_length=100000)
    ),
    "predict-meta-dropout-one": Case(P.split(), SRC, ("precomet.json", "dropout"), _meta(dropout=1.0)),
    "predict-meta-encoder-number": Case(P.split(), SRC, ("precomet.json", "encoder"), _meta(encoder=3)),
    "predict-meta-standardisation-text": Case(
        P.split(), SRC, ("precomet.json", "standardisation"), _meta(standardisation="x")
    ),
    "predict-meta-std-nan": Case(
        P.split(), SRC, ("precomet.json", "standardisation.std"), _meta(standardisation={"mean": 0, "std": "NaN"})
    ),
    "predict-meta-std-zero": Case(
        P.split(), SRC, ("precomet.json", "standardisation.std"), _meta(standardisation={"mean": 0, "std": 0})
    ),
    "predict-meta-mean-infinite": Case(
        P.split(),
        SRC,
        ("precomet.json", "standardisation.mean"),
        _meta(standardisation={"mean": float("inf"), "std": 1}),
    ),
    "predict-meta-target-text": Case(P.split(), SRC, ("precomet.json", "target"), _meta(target="metric_avg")),
    "predict-meta-target-method-number": Case(P.split(), SRC, ("precomet.json", "target"), _meta(target={"method": 1})),
    "predict-meta-direction-unknown": Case(P.split(), SRC, ("precomet.json", "direction"), _meta(direction="up")),
    "predict-meta-pooling-number": Case(P.split(), SRC, ("precomet.json", "pooling"), _meta(pooling=3)),
    "predict-meta-backbone-unknown-encoder": Case(
        P.split(), SRC, ("precomet.json", "backbone", "'nope'"), _meta(backbone={"name": "nope"})
    ),
    "select-checkpoint-meta-is-a-list": Case(
        SC.split(), {"items.jsonl": GOOD}, ("precomet.json", "not a JSON object"), _meta_bytes(b"[]")
    ),
    "select-checkpoint-meta-max-length-text": Case(
        SC.split(), {"items.jsonl": GOOD}, ("precomet.json", "max_length"), _meta(max_length="long")
    ),
    # ---- heads: NaN weights, predictions that overflow
    "predict-head-overflows": Case(P.split(), SRC, ("ckpt", "non-finite prediction", "hello world"), _head(_overflow)),
    "select-checkpoint-head-overflows": Case(
        SC.split(), {"items.jsonl": GOOD}, ("ckpt", "non-finite prediction", "one two"), _head(_overflow)
    ),
    "predict-hf-head-nan": Case(
        P.split(), SRC, ("head.safetensors", "non-finite"), _head(_first_weight(float("nan")), build=tiny_hf_checkpoint)
    ),
    "predict-hf-head-overflows": Case(
        P.split(), SRC, ("ckpt", "non-finite prediction", "hello world"), _head(_overflow, build=tiny_hf_checkpoint)
    ),
    "predict-hf-max-length-beyond-positions": Case(
        P.split(), SRC, ("precomet.json", "max_length", "100000"), lambda d: tiny_hf_checkpoint(d, max_length=100000)
    ),
    "predict-hf-encoder-config-garbage": Case(
        P.split(), SRC, ("ckpt/encoder", "damaged"), _encoder_file("config.json", lambda b: b"\x00garbage")
    ),
    "predict-hf-encoder-config-a-list": Case(
        P.split(), SRC, ("ckpt/encoder", "damaged"), _encoder_file("config.json", lambda b: b"[1]")
    ),
    "predict-hf-encoder-weights-truncated": Case(
        P.split(), SRC, ("ckpt/encoder", "damaged"), _encoder_file("model.safetensors", lambda b: b[:500])
    ),
    "predict-hf-encoder-tokenizer-garbage": Case(
        P.split(), SRC, ("ckpt/encoder", "damaged"), _encoder_file("tokenizer.json", lambda b: b"{garbage")
    ),
    "predict-hf-encoder-wider-than-head": Case(
        P.split(),
        SRC,
        ("ckpt/encoder", "damaged"),
        _encoder_file("config.json", lambda b: json.dumps({**json.loads(b), "hidden_size": 64}).encode()),
    ),
    # ---- predict options
    "predict-devices-zero": Case((P + " --devices 0").split(), SRC, ("--devices",), shipped_checkpoint),
    "predict-devices-negative": Case((P + " --devices -2").split(), SRC, ("--devices",), shipped_checkpoint),
    "predict-device-meta": Case((P + " --device meta").split(), SRC, ("--device", "meta"), shipped_checkpoint),
    "predict-hf-device-cuda-int8": Case(
        (P + " --device cuda --precision int8").split(), SRC, ("cuda",), tiny_hf_checkpoint
    ),
    # ---- train: configuration file, overrides, targets
    "train-config-binary": Case(
        (T + " --config c.yaml").split(), {**PT, "c.yaml": b"\x00\x01\xff\xfe\x00"}, ("c.yaml",)
    ),
    "train-config-latin1": Case(
        (T + " --config c.yaml").split(),
        {**PT, "c.yaml": "model:\n  encoder: caf\xe9\n".encode("latin-1")},
        ("c.yaml",),
    ),
    "train-override-gradient-clip-nan": Case(
        (T + " --trainer.gradient_clip_val nan").split(), PT, ("trainer.gradient_clip_val",)
    ),
    "train-override-gradient-clip-text": Case(
        (T + " --trainer.gradient_clip_val lots").split(), PT, ("trainer.gradient_clip_val",)
    ),
    "train-override-val-check-interval-nan": Case(
        (T + " --trainer.val_check_interval .nan").split(), PT, ("trainer.val_check_interval",)
    ),
    "train-override-progress-bar-text": Case(
        (T + " --trainer.enable_progress_bar maybe").split(), PT, ("trainer.enable_progress_bar",)
    ),
    "train-override-seed-negative": Case((T + " --seed_everything -1").split(), PT, ("seed_everything",)),
    "train-override-devices-zero": Case((T + " --trainer.devices 0").split(), PT, ("devices",)),
    "train-override-precision-unknown": Case((T + " --trainer.precision 7-bit").split(), PT, ("precision",)),
    "train-override-strategy-unknown": Case((T + " --trainer.strategy nope").split(), PT, ("nope",)),
    "train-override-strategy-spawn": Case(
        (T + " --trainer.strategy ddp_spawn --trainer.accelerator cpu").split(),
        PT,
        ("ddp_spawn", "trainer.strategy ddp"),
    ),
    "train-backbone-unknown": Case((T + " --model.backbone nope").split(), PT, ("model.backbone", "nope")),
    # ---- export of Lightning files that are not (well-formed) precomet training checkpoints
    "export-metadata-package-text": Case(
        ["export", "x.ckpt", "-o", "{d}/est"],
        {"x.ckpt": _lightning({**GOOD_META, "encoder_package": "minilm"})},
        ("x.ckpt", "encoder_package"),
    ),
    "export-metadata-max-length-text": Case(
        ["export", "x.ckpt", "-o", "{d}/est"],
        {"x.ckpt": _lightning({**GOOD_META, "max_length": "long"})},
        ("x.ckpt", "max_length"),
    ),
    "export-state-dict-not-a-mapping": Case(
        ["export", "x.ckpt", "-o", "{d}/est"],
        {"x.ckpt": _torch_file({"precomet": GOOD_META, "state_dict": [1, 2]})},
        ("x.ckpt", "precomet"),
    ),
    # ---- pairwise protocol options
    "diffuse-evaluate-margin-negative": Case(
        ["diffuse", "evaluate", "--data", "items.jsonl", "--systems", "A,B", "--margin", "-1", "--seeds", "1"],
        {"items.jsonl": GOOD},
        ("margin", "-1"),
    ),
}

if not CUDA_BUILT:  # on a CUDA build these are valid requests
    CASES["predict-hf-device-cuda"] = Case(
        (P + " --device cuda").split(), SRC, ("--device cuda", "no CUDA"), tiny_hf_checkpoint
    )
    CASES["train-override-accelerator-cuda"] = Case(
        (T + " --trainer.accelerator cuda").split(), PT, ("trainer.accelerator", "no CUDA")
    )
