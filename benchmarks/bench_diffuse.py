"""DiffUse benchmarks: selection speed against subset2evaluate 1.0.27 and the success-rate protocol on real data.

    .venv/bin/python benchmarks/bench_diffuse.py speed      # 1000 items × 12 systems (WMT23 zh-en), ours vs peer
    .venv/bin/python benchmarks/bench_diffuse.py protocol   # WMT23 en-de / zh-en, TED en-de / zh-en (MQM)

Embeddings (offline all-MiniLM-L6-v2) are cached in benchmarks/out/embed-cache. The peer runs in
benchmarks/.peer-venv (``bash benchmarks/peer_env.sh``) via subprocess, fed the same embeddings through a
stub ``load_model`` so that its time is selection only; its own encoding would add the encoding time
reported on the line "embedding 12000 outputs".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT.parent / "shared" / "data" / "raw"
CACHE = ROOT / "benchmarks" / "out" / "embed-cache"
PEER_SCRIPT = r"""
import json, sys, time, numpy as np
from subset2evaluate.methods import diffuse
emb = np.load(sys.argv[1]); data = json.load(open(sys.argv[2])); budget = int(sys.argv[3])
class Stub:
    def encode(self, texts):
        assert len(texts) == len(emb)
        return emb
start = time.perf_counter()
utility = diffuse(data, budget=budget, load_model=Stub())
print(json.dumps({"seconds": time.perf_counter() - start, "selected": [i for i, u in enumerate(utility) if u]}))
"""


def _torch_single_thread() -> None:
    import torch

    torch.set_num_threads(1)


def speed(args: argparse.Namespace) -> None:
    from precomet.io import load
    from precomet.pairwise.diffuse import campaign_tree
    from precomet.pairwise.embed import embed_outputs

    campaign = load(RAW / "mt-metrics-eval-v2", campaign="wmt23/zh-en", human="mqm")
    campaign = campaign.take(np.arange(args.items)).restrict_systems(campaign.systems[: args.systems])
    start = time.perf_counter()
    emb = embed_outputs(campaign, cache_dir=CACHE)
    print(f"embedding {emb.shape[0] * emb.shape[1]} outputs (cache {CACHE}): {time.perf_counter() - start:.1f} s")
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        selected = campaign_tree(campaign, embeddings=emb).select(args.budget)
        times.append(time.perf_counter() - start)
    ours = float(np.median(times))
    print(f"precomet DiffUse select (budget {args.budget}, {len(campaign)} items × {len(campaign.systems)} systems,"
          f" representation dim {emb.shape[1] * emb.shape[2]}): median {ours:.3f} s over {args.repeats} runs")
    peer_python = ROOT / "benchmarks" / ".peer-venv" / "bin" / "python"
    if args.skip_peer or not peer_python.exists():
        print("peer skipped (run bash benchmarks/peer_env.sh first)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "emb.npy", emb.reshape(-1, emb.shape[2]).astype(np.float32))
        items = [{"tgt": {s: campaign.outputs[s][i] for s in campaign.systems}} for i in range(len(campaign))]
        (Path(tmp) / "data.json").write_text(json.dumps(items))
        (Path(tmp) / "peer.py").write_text(PEER_SCRIPT)
        out = subprocess.run(
            [str(peer_python), str(Path(tmp) / "peer.py"), str(Path(tmp) / "emb.npy"), str(Path(tmp) / "data.json"), str(args.budget)],
            check=True, capture_output=True, text=True,
        )
    peer = json.loads(out.stdout.strip().splitlines()[-1])
    overlap = len(set(peer["selected"]) & set(selected.tolist()))
    print(f"subset2evaluate 1.0.27 diffuse (same embeddings, selection only): {peer['seconds']:.1f} s;"
          f" {len(peer['selected'])} items, {overlap} shared with ours (it averages over the embedding axis)")
    print(f"speed-up (selection only): {peer['seconds'] / ours:.0f}x")


def protocol(args: argparse.Namespace) -> None:
    from precomet.io import load
    from precomet.pairwise.embed import embed_outputs
    from precomet.pairwise.protocol import evaluate_pairwise

    sets = {
        "WMT23 en-de (MQM)": lambda: load(RAW / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm"),
        "WMT23 zh-en (MQM)": lambda: load(RAW / "mt-metrics-eval-v2", campaign="wmt23/zh-en", human="mqm"),
        "TED en-de (MQM)": lambda: load(RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv"),
        "TED zh-en (MQM)": lambda: load(RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv"),
    }
    for name, loader in sets.items():
        if args.only and args.only not in name:
            continue
        campaign = loader()
        emb = embed_outputs(campaign, cache_dir=CACHE)
        start = time.perf_counter()
        result = evaluate_pairwise(campaign, embeddings=emb, seeds=args.seeds, margin=args.margin)
        seconds = time.perf_counter() - start
        sig = result.signature
        print(f"\n### {name}: {len(campaign)} items, {len(campaign.systems)} systems, {sig['pairs']} pairs × "
              f"{args.seeds} seeds × {len({r['budget'] for r in result.success})} budgets, test set {sig['test_items']} items, "
              f"tie margin {args.margin}; evaluation {seconds:.1f} s (embeddings cached)\n")
        table = result.to_markdown().splitlines()
        budgets_shown = {5, 10, 20, 30, 50, 75, 100, 150, 200}
        print("\n".join(line for line in table[:2]))
        print("\n".join(line for line in table[2:] if line.startswith("| ") and line.split("|")[1].strip().isdigit()
                        and int(line.split("|")[1]) in budgets_shown))
        print("\n".join(table[table.index(""):]))
        diffuse_mean = np.mean([r["success"] for r in result.success if r["method"] == "diffuse"])
        random_mean = np.mean([r["success"] for r in result.success if r["method"] == "random"])
        print(f"\nmean success over all budgets: DiffUse {100 * diffuse_mean:.1f}%, random {100 * random_mean:.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--items", type=int, default=1000)
    s.add_argument("--systems", type=int, default=12)
    s.add_argument("--budget", type=int, default=100)
    s.add_argument("--repeats", type=int, default=5)
    s.add_argument("--skip-peer", action="store_true")
    p = sub.add_parser("protocol")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--margin", type=float, default=0.0)
    p.add_argument("--only", help="run only data sets whose name contains this text")
    args = parser.parse_args()
    _torch_single_thread()
    {"speed": speed, "protocol": protocol}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
