"""``precomet demo``: the main job end to end on simulated (synthetic) campaigns — no download."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "run the main job end to end on a seeded simulator of historical campaigns (synthetic data)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="demo-output", help="folder for the demo's outputs")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from precomet.io import write_jsonl
    from precomet.simulate import simulate_history

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("precomet demo — SYNTHETIC campaigns from precomet.simulate (no real data, no download)\n")
    history = simulate_history(seed=args.seed)
    for campaign in history:
        path = out / f"{campaign.name.replace('/', '_')}.jsonl"
        write_jsonl(campaign, path)
        print(campaign.summary())
        print(f"-> {path}\n")
    print(f"outputs in {out.resolve()}")
    return 0
