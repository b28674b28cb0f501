"""Issue 53: what a run pays for its encoder when the texts are already in the on-disk cache.

    .venv/bin/python benchmarks/bench_warm_cache.py                          # minilm, 250 items x 12 systems
    .venv/bin/python benchmarks/bench_warm_cache.py --encoder e5-small --encoder minilm

Texts: the outputs of the first ``--items`` WMT23 zh-en segments by ``--systems`` systems (sorted names, references
left out) from ../shared/data/raw (skipped with a message when absent): English, as DiffUse embeds them. Every
phase runs in a fresh process with its own ``PRECOMET_CACHE``, through :func:`precomet.utilities.embed.embed_texts`
(the door of DiffUse, diversity and k-means):

- ``encoder only``: the encoder's own throughput, ``encode()`` of the distinct texts with no cache (model load
  timed apart);
- ``cold``: an empty cache: the model loaded, every text encoded and saved;
- ``warm``: every text in the cache, under cProfile: the model loads counted (``TransformerEncoder._load`` that
  loads, e5's torch model built), and whether torch / transformers were imported at all;
- ``warm + model load``: the same warm run that also loads the model first, as precomet 0.16 did (it asked the
  model for the vectors' length): what the fix saves.

Writes what it prints to benchmarks/results/warm-cache.md (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)
from report import results_file  # benchmarks/report.py

CAMPAIGN = RAW / "mt-metrics-eval-v2" / "wmt23"
PAIR = "zh-en"
REFERENCES = {"refA", "refB", "synthetic_ref"}

CHILD = r"""
import cProfile, io, json, pstats, sys, time
phase, name, texts_file = sys.argv[1:4]
texts = json.load(open(texts_file, encoding="utf-8"))
start = time.perf_counter()
from precomet.encoders import e5, get_encoder
from precomet.encoders.disk import no_disk_cache
from precomet.encoders.transformer import TransformerEncoder
from precomet.utilities.embed import embed_texts
loads = {"n": 0}
real_load = TransformerEncoder._load
def counted_load(self):
    loads["n"] += self._loaded is None
    return real_load(self)
TransformerEncoder._load = counted_load
real_torch_e5 = e5.TorchE5
class CountedTorchE5(real_torch_e5):
    def __init__(self, *args, **kwargs):
        loads["n"] += 1
        super().__init__(*args, **kwargs)
e5.TorchE5 = CountedTorchE5
imported = time.perf_counter() - start
out = {"phase": phase, "texts": len(texts), "distinct": len(set(texts)), "import_s": imported}
if phase == "encoder":
    distinct = list(dict.fromkeys(texts))
    encoder = get_encoder(name)
    t0 = time.perf_counter()
    encoder.encode(distinct[:1], progress=False)  # loads the model
    t1 = time.perf_counter()
    with no_disk_cache():
        encoder.encode(distinct, progress=False)
    t2 = time.perf_counter()
    out |= {"load_s": t1 - t0, "encode_s": t2 - t1}
else:
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    if phase == "warm-load":  # what precomet 0.16 paid: the model loaded to learn the vectors' length
        encoder = get_encoder(name)
        if isinstance(encoder, TransformerEncoder):
            encoder._load()
        else:
            encoder._engine_model()
    embed_texts(texts, encoder=name)
    profile.disable()
    out["run_s"] = time.perf_counter() - t0
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats("cumulative").print_stats(8)
    out["profile"] = [line for line in stream.getvalue().splitlines() if line.strip()][-9:]
    loaders = {("transformer.py", "_load"), ("e5.py", "_engine_model")}
    out["load_calls"] = sum(v[0] for k, v in stats.stats.items() if (k[0].rsplit("/", 1)[-1], k[2]) in loaders)
out["model_loads"] = loads["n"]
out["torch_imported"] = "torch" in sys.modules
out["transformers_imported"] = "transformers" in sys.modules
print(json.dumps(out))
"""


def _texts(items: int, systems: int) -> list[str]:
    folder = CAMPAIGN / "system-outputs" / PAIR
    names = sorted(p.stem for p in folder.glob("*.txt") if p.stem not in REFERENCES)[:systems]
    texts: list[str] = []
    for name in names:
        lines = (folder / f"{name}.txt").read_text(encoding="utf-8").splitlines()
        texts += lines[:items]
    return texts


def _child(phase: str, encoder: str, texts_file: Path, cache: Path) -> dict:
    env = {**os.environ, "PRECOMET_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, phase, encoder, str(texts_file)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", action="append", help="registered encoder (repeatable; default minilm)")
    parser.add_argument("--items", type=int, default=250)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--out", type=Path, default=RESULTS / "warm-cache.md")
    args = parser.parse_args()
    if not CAMPAIGN.is_dir():
        print(f"skipped: the WMT23 campaign is not at {CAMPAIGN} (set PRECOMET_RAW_DATA)")
        return
    encoders = args.encoder or ["minilm"]
    texts = _texts(args.items, args.systems)
    with results_file(args.out, "Warm encoder cache: no model load (issue 53)"), tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        distinct = len(set(texts))
        print(
            f"WMT23 {PAIR}: first {args.items} segments x {args.systems} systems = {len(texts):,} outputs,"
            f" {distinct:,} distinct; each phase a fresh process (2-core CPU machine, shared).\n"
        )
        print("| encoder | phase | seconds | distinct texts/s | model loads | torch imported | process s |")
        print("|---|---|---:|---:|---:|---|---:|")
        profiles = {}
        for name in encoders:
            cache = Path(tmp) / f"cache-{name}"
            only = _child("encoder", name, texts_file, Path(tmp) / "unused")
            cold = _child("cold", name, texts_file, cache)
            warm = _child("warm", name, texts_file, cache)
            forced = _child("warm-load", name, texts_file, cache)
            rows = [
                ("model load", only["load_s"], None, only),
                ("encoder only (encode, no cache)", only["encode_s"], distinct / only["encode_s"], only),
                ("cold: load + encode + save", cold["run_s"], distinct / cold["run_s"], cold),
                ("warm: all cached", warm["run_s"], distinct / warm["run_s"], warm),
                ("warm + model load (as 0.16)", forced["run_s"], distinct / forced["run_s"], forced),
            ]
            for label, seconds, rate, result in rows:
                rate_text = f"{rate:,.0f}" if rate is not None else ""
                print(
                    f"| {name} | {label} | {seconds:.2f} | {rate_text} | {result['model_loads']} |"
                    f" {'yes' if result['torch_imported'] else 'no'} | {result['process_s']:.1f} |"
                )
            profiles[name] = warm
        for name, warm in profiles.items():
            calls, imported = warm["load_calls"], warm["transformers_imported"]
            print(f"\nWarm run of {name} under cProfile (top 8 by cumulative time). Calls of the model loaders")
            print(f"(`TransformerEncoder._load`, `E5Small._engine_model`): {calls}; transformers loaded: {imported}\n")
            print("```")
            print("\n".join(warm["profile"]))
            print("```")
        print(
            "\n`model loads`: TransformerEncoder._load calls that loaded a model plus e5 torch models built."
            " `process s`: the whole child process (interpreter start and imports included). precomet 0.16 loaded"
            " minilm (any hf: model) on a warm run; e5-small's length was a constant already, so its `warm + model"
            " load` row is what a load would cost, not what 0.16 paid."
        )


if __name__ == "__main__":
    main()
