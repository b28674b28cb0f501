"""``precomet diffuse select|iterate|evaluate``: DiffUse selection, annotate-until-decided, and the protocol."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from precomet.commands.common import (
    Paths,
    add_data_arguments,
    add_output_argument,
    comma_list,
    data_inputs,
    load_campaign,
    margin,
    open_share,
    positive_int,
    repeats,
    require_outputs,
    seed,
)
from precomet.errors import PrecometError

HELP = "DiffUse: select items whose output differences are representative; iterate until a winner is reliable"


def _common(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument(
        "--systems",
        type=comma_list,
        help="comma-separated systems to compare (default: all; DiffUse on > 2 uses centred concatenation)",
    )
    parser.add_argument(
        "--encoder",
        help="a registered encoder: minilm (default, offline all-MiniLM-L6-v2), e5-small, hf:DIR, st:NAME (a"
        " sentence-transformers name or path)",
    )
    parser.add_argument("--cache-dir", help="directory for the embedding cache (reused across runs)")


def _oracle_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--score", default="human", help="score that decides preferences (default: human)")
    parser.add_argument("--margin", type=margin, default=0.0, help="score differences within this margin are ties")
    parser.add_argument("--lower-is-better", action="store_true", help="the score is an error count (lower wins)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    select = actions.add_parser(
        "select",
        help="DiffUse representatives for a budget, largest cluster first",
        description="Cluster the differences between two systems' outputs (DiffUse, Ashury-Tahan et al. 2024) and"
        " pick one representative item per cluster, largest cluster first, up to --budget items.",
    )
    _common(select)
    select.add_argument("--budget", type=positive_int, required=True, help="number of items to select")
    add_output_argument(select, "write the selection with its signature as JSON", required=False)
    iterate = actions.add_parser(
        "iterate",
        help="Algorithm 1: annotate until the hypergeometric risk <= p",
        description="Annotate items one at a time in DiffUse order (Ashury-Tahan et al. 2024, Algorithm 1) until the"
        " risk that the majority preference is wrong falls to --p or --max-budget is reached; answers come from"
        " --score (a simulated annotator) or the terminal (--oracle interactive).",
    )
    _common(iterate)
    _oracle_arguments(iterate)
    iterate.add_argument(
        "--oracle",
        choices=["score", "interactive"],
        default="score",
        help="answer from --score (simulated annotator) or ask on the terminal",
    )
    iterate.add_argument(
        "--order", choices=["diffuse", "random"], default="diffuse", help="item order (random: seeded)"
    )
    iterate.add_argument("--p", type=open_share, default=0.2, help="risk threshold (default 0.2)")
    iterate.add_argument("--n-min", type=positive_int, default=5, help="initial number of items (default 5)")
    iterate.add_argument("--max-budget", type=positive_int, default=200, help="maximum annotations (default 200)")
    iterate.add_argument("--seed", type=seed, default=0, help="seed of --order random (default 0)")
    evaluate = actions.add_parser(
        "evaluate",
        help="success rate of DiffUse vs random over pairs, seeds and budgets",
        description="The protocol of Ashury-Tahan et al. (2024): over every pair of systems, seeds and budgets, how"
        " often DiffUse's and random's subsets pick the full test set's winner, and how Algorithm 1 does.",
    )
    _common(evaluate)
    _oracle_arguments(evaluate)
    evaluate.add_argument("--budgets", default="5:200:5", help="START:STOP:STEP or a comma list (default 5:200:5)")
    evaluate.add_argument("--seeds", type=repeats, default=10, help="random splits per pair (default 10)")
    evaluate.add_argument(
        "--test-fraction", type=open_share, default=0.8, help="share of the items each split evaluates on (default 0.8)"
    )
    evaluate.add_argument(
        "--p", type=open_share, nargs="*", default=[0.2, 0.1], help="thresholds of the iterative table"
    )
    evaluate.add_argument("--n-min", type=positive_int, default=5, help="Algorithm 1's initial items (default 5)")
    evaluate.add_argument(
        "--max-budget", type=positive_int, default=200, help="Algorithm 1's maximum annotations (default 200)"
    )
    add_output_argument(evaluate, "write the result (tables + signature) as JSON", required=False)


def _budgets(text: str) -> list[int]:
    try:
        if ":" in text:
            start, stop, step = (int(x) for x in text.split(":"))
            budgets = list(range(start, stop + 1, step))
        else:
            budgets = [int(x) for x in text.split(",")]
    except ValueError:
        raise PrecometError(f"--budgets: expected START:STOP:STEP or a comma list of integers, got {text!r}") from None
    if not budgets or min(budgets) < 1 or len(set(budgets)) < len(budgets):
        raise PrecometError(f"--budgets: expected distinct budgets >= 1, got {text!r} ({budgets or 'none'})")
    return budgets


def _thresholds(values: list[float]) -> list[float]:
    """``evaluate --p``: at least one threshold, none twice."""
    if not values or len(set(values)) < len(values):
        raise PrecometError(f"--p: expected one or more distinct thresholds in (0, 1), got {values}")
    return values


def _interactive_oracle(campaign, systems):
    def ask(index: int) -> str:
        print(f"\nitem {campaign.ids[index]}\nsource: {campaign.src[index]}", file=sys.stderr)
        for tag, system in zip("ab", systems):
            print(f"[{tag}] {campaign.outputs[system][index]}", file=sys.stderr)
        try:
            return input("better output (a / b / tie): ")
        except EOFError:  # stdin closed or exhausted: the annotation stops here, nothing is decided
            raise PrecometError(
                f"--oracle interactive: the input ended before item {campaign.ids[index]!r} was answered"
            ) from None

    return ask


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=data_inputs(args), outputs=[getattr(args, "output", None)])


def run(args: argparse.Namespace) -> int:
    from precomet.pairwise import diffuse

    if getattr(args, "output", None):
        from precomet.outputs.paths import check_output

        check_output(args.output)
    campaign = load_campaign(args)
    require_outputs(
        campaign, args, what=f"diffuse {args.action}", needs="system outputs", instead="give a campaign with outputs"
    )
    if args.action == "select":
        chosen = diffuse.diffuse_select(
            campaign, budget=args.budget, systems=args.systems, encoder=args.encoder, cache_dir=args.cache_dir
        )
        for rank, index in enumerate(chosen, start=1):
            print(f"{rank}\t{campaign.ids[index]}")
        if args.output:
            from precomet.signature import signature
            from precomet.utilities.embed import encoder_name

            run = signature(
                "precomet diffuse select",
                method="diffuse",
                campaign=campaign,
                budget=args.budget,
                systems=args.systems or list(campaign.systems),
                encoder=encoder_name(args.encoder),
            )
            _write_json(args.output, dict(signature=run, ids=[campaign.ids[i] for i in chosen]))
        return 0
    if args.action == "iterate":
        return _iterate(args, campaign, diffuse)
    from precomet.pairwise.protocol import evaluate_pairwise

    result = evaluate_pairwise(
        campaign,
        score=args.score,
        systems=args.systems,
        budgets=_budgets(args.budgets),
        seeds=args.seeds,
        test_fraction=args.test_fraction,
        margin=args.margin,
        higher_is_better=not args.lower_is_better,
        p_values=_thresholds(args.p),
        n_min=args.n_min,
        max_budget=args.max_budget,
        encoder=args.encoder,
        cache_dir=args.cache_dir,
    )
    print(result.to_markdown())
    if args.output:
        _write_json(args.output, result.to_dict())
    return 0


def _iterate(args: argparse.Namespace, campaign, diffuse) -> int:
    from precomet.pairwise.protocol import preference_signs

    systems = args.systems or list(campaign.systems)
    if len(systems) != 2:
        raise PrecometError(f"iterate compares exactly two systems (--systems A,B), got {systems}")
    if args.oracle == "interactive":
        oracle = _interactive_oracle(campaign, systems)
    else:
        scores = campaign.score(args.score)[:, campaign.system_index(systems)] * (-1.0 if args.lower_is_better else 1.0)
        signs = preference_signs(scores[:, 0], scores[:, 1], margin=args.margin)
        oracle = diffuse.sign_oracle(signs)
    max_budget = min(args.max_budget, len(campaign))
    if args.order == "diffuse":
        tree = diffuse.campaign_tree(campaign, systems=systems, encoder=args.encoder, cache_dir=args.cache_dir)
        result = diffuse.iterate_tree(tree, oracle, p=args.p, n_min=args.n_min, max_budget=max_budget)
    else:
        order = np.random.default_rng(args.seed).permutation(len(campaign))
        result = diffuse.iterate_order(order, oracle, p=args.p, n_min=args.n_min, max_budget=max_budget)
    names = {"a": systems[0], "b": systems[1], "tie": "tie"}
    verdict = f"winner {names[result.winner]}" if result.decided else f"inconclusive (leader: {names[result.leader]})"
    votes = [result.labels[i] for i in result.decision_items]
    print(
        f"{verdict}; sf = {result.sf:.4f} (p = {args.p}); {result.n_annotations} annotations used; decision on "
        f"{len(votes)} items: {votes.count('a')} {systems[0]}, {votes.count('b')} {systems[1]}, {votes.count('tie')} "
        "ties"
    )
    for index, label in result.labels.items():
        print(f"{campaign.ids[index]}\t{names[label]}")
    return 0


def _write_json(path: str, payload: dict) -> None:
    from precomet.io import jsonsafe
    from precomet.outputs.atomic import atomic_write

    with atomic_write(path) as handle:
        jsonsafe.dump(payload, handle, indent=1, default=float)
