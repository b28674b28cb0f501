"""A few-second pairwise example on a SYNTHETIC campaign (for ``precomet demo``)."""

from __future__ import annotations

import numpy as np

from precomet.pairwise.diffuse import campaign_tree, iterate_order, iterate_tree, sign_oracle
from precomet.pairwise.preference import from_scores
from precomet.pairwise.protocol import preference_signs
from precomet.pairwise.ratings import bootstrap_ratings


def hashed_words(texts: list[str]) -> np.ndarray:
    """A fast model-free encoder (sklearn's hashed word counts) used when no sentence encoder is wanted."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=256, alternate_sign=False, norm="l2").transform(texts).toarray()


def demo_pairwise(*, seed: int = 0, n_items: int = 200, encoder=hashed_words) -> str:
    """DiffUse vs random on one simulated system pair, Algorithm 1, and bootstrapped Bradley-Terry ratings.
    Returns the report text. ``encoder=None`` uses the offline MiniLM instead of hashed word counts."""
    from precomet.simulate import simulate_campaign

    campaign = simulate_campaign(n_items=n_items, n_systems=4, seed=seed)
    pair = list(campaign.systems[:2])
    human = campaign.score("human")[:, campaign.system_index(pair)]
    signs = preference_signs(human[:, 0], human[:, 1], margin=1.0)
    winner = int(np.sign(signs.sum()))
    tree = campaign_tree(campaign, systems=pair, encoder=encoder)
    rng = np.random.default_rng(seed)
    lines = [
        f"SYNTHETIC campaign, {n_items} items; {pair[0]} vs {pair[1]}: {pair[0] if winner > 0 else pair[1]} "
        f"wins on the full set ({(signs > 0).sum()} vs {(signs < 0).sum()}, {(signs == 0).sum()} ties)"
    ]
    for budget in (5, 10, 20):
        diffuse_ok = np.sign(signs[tree.select(budget)].sum()) == winner
        random_ok = np.mean(
            [np.sign(signs[rng.choice(n_items, budget, replace=False)].sum()) == winner for _ in range(200)]
        )
        lines.append(
            f"  budget {budget:>2}: DiffUse picks the winner: {'yes' if diffuse_ok else 'no'}; random: "
            f"{100 * random_ok:.0f}% of 200 draws"
        )
    oracle = sign_oracle(signs)
    for name, run in (
        ("DiffUse", iterate_tree(tree, oracle, p=0.1, max_budget=100)),
        ("random", iterate_order(rng.permutation(n_items), oracle, p=0.1, max_budget=100)),
    ):
        verdict = pair[0 if run.winner == "a" else 1] if run.decided else "inconclusive"
        lines.append(f"  annotate until decided (p = 0.1), {name}: {verdict} after {run.n_annotations} annotations")
    table = bootstrap_ratings(from_scores(campaign, margin=1.0), method="bt", rounds=200, seed=seed)
    lines += ["Bradley-Terry ratings from per-item human preferences (200 bootstrap rounds):", table.to_text()]
    return "\n".join(lines)
