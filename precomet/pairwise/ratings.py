"""Ratings from pairwise preferences: online Elo, Bradley-Terry (maximum likelihood), bootstrap intervals,
an LLM-judge position-bias report and judge-vs-human agreement.

Both rating methods report on the Elo scale (``initial`` + ``scale`` · log-base-``base`` strength). Ties
count as half a win for each side (``ties="half"``) or are dropped (``ties="drop"``). The bootstrap resamples
records with replacement (default 1000 rounds, LMSYS/H4 recipe) and reports the median and 5th/95th
percentiles; Elo runs all rounds at once (one vectorised update per game position), Bradley-Terry fits all
rounds in one L-BFGS problem (scipy) whose blocks are independent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import binomtest

from precomet.errors import PrecometError
from precomet.pairwise.preference import Preferences

log = logging.getLogger(__name__)

TIES = ("half", "drop")
ORDERS = ("given", "shuffle")


def _games(
    prefs: Preferences, models: Sequence[str] | None, ties: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    if ties not in TIES:
        raise PrecometError(f"unknown ties option {ties!r}; valid: {list(TIES)}")
    models = list(prefs.models if models is None else models)
    prefs.check_models(models)
    keep = np.ones(len(prefs), dtype=bool) if ties == "half" else prefs.label != "tie"
    if not keep.any():
        raise PrecometError(f"{prefs.source}: no games to rate (ties={ties!r})")
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[m] for m in prefs.model_a[keep]], dtype=int)
    b = np.array([index[m] for m in prefs.model_b[keep]], dtype=int)
    return models, a, b, prefs.score_a()[keep]


def _elo(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, n_models: int, *, k: float, base: float, scale: float, initial: float
) -> np.ndarray:
    """Online Elo over games ``(R, n)`` (R independent sequences); returns ``(R, n_models)`` ratings."""
    rounds = np.arange(a.shape[0])
    ratings = np.full((a.shape[0], n_models), float(initial))
    for t in range(a.shape[1]):
        ia, ib = a[:, t], b[:, t]
        expected = 1.0 / (1.0 + base ** ((ratings[rounds, ib] - ratings[rounds, ia]) / scale))
        delta = k * (s[:, t] - expected)
        ratings[rounds, ia] += delta
        ratings[rounds, ib] -= delta
    return ratings


def _cells(a: np.ndarray, b: np.ndarray, s: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, ...]:
    """Collapse games into distinct (a, b, score) cells with per-round counts ``(R, cells)`` of ``draws``."""
    cells, inverse = np.unique(np.stack([a, b, s]), axis=1, return_inverse=True)
    inverse = inverse.reshape(-1)
    rounds, n_cells = draws.shape[0], cells.shape[1]
    offsets = (np.arange(rounds) * n_cells)[:, None]
    counts = np.bincount((offsets + inverse[draws]).ravel(), minlength=rounds * n_cells).reshape(rounds, n_cells)
    return cells[0].astype(int), cells[1].astype(int), cells[2], counts.astype(float)


def _bradley_terry(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, weights: np.ndarray, n_models: int, *, ridge: float
) -> np.ndarray:
    """Maximum-likelihood strengths (natural log scale, centred) for ``R`` weightings of the same games.

    ``weights`` is ``(R, n)``; each row is an independent problem, all solved together by L-BFGS-B."""
    rounds = weights.shape[0]
    win, loss = weights * s, weights * (1.0 - s)
    offsets = (np.arange(rounds) * n_models)[:, None]
    index_a, index_b = (offsets + a).ravel(), (offsets + b).ravel()

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = flat.reshape(rounds, n_models)
        margin = theta[:, a] - theta[:, b]
        nll = win * np.logaddexp(0.0, -margin) + loss * np.logaddexp(0.0, margin)
        d_margin = (loss * expit(margin) - win * expit(-margin)).ravel()
        grad = np.bincount(index_a, d_margin, rounds * n_models) - np.bincount(index_b, d_margin, rounds * n_models)
        return nll.sum() + 0.5 * ridge * np.square(flat).sum(), grad + ridge * flat

    result = minimize(
        objective,
        np.zeros(rounds * n_models),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 10000, "gtol": 1e-10, "ftol": 1e-15},
    )
    if not result.success:
        log.warning("Bradley-Terry fit: %s", result.message)
    theta = result.x.reshape(rounds, n_models)
    return theta - theta.mean(axis=1, keepdims=True)


def elo_ratings(
    prefs: Preferences,
    *,
    k: float = 4.0,
    base: float = 10.0,
    scale: float = 400.0,
    initial: float = 1000.0,
    order: str = "given",
    ties: str = "half",
    models: Sequence[str] | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Online Elo with K-factor ``k`` over the records in file order (``order="given"``) or shuffled by ``seed``."""
    if order not in ORDERS:
        raise PrecometError(f"unknown Elo order {order!r}; valid: {list(ORDERS)}")
    models, a, b, s = _games(prefs, models, ties)
    perm = np.random.default_rng(seed).permutation(len(a)) if order == "shuffle" else np.arange(len(a))
    ratings = _elo(
        a[None, perm], b[None, perm], s[None, perm], len(models), k=k, base=base, scale=scale, initial=initial
    )
    return dict(zip(models, ratings[0].tolist()))


def bt_ratings(
    prefs: Preferences,
    *,
    base: float = 10.0,
    scale: float = 400.0,
    initial: float = 1000.0,
    ties: str = "half",
    models: Sequence[str] | None = None,
    ridge: float = 1e-4,
    seed: int = 0,
) -> dict[str, float]:
    """Bradley-Terry maximum likelihood (tiny ``ridge`` keeps undefeated models finite) on the Elo scale.
    Deterministic; ``seed`` is accepted for the common signature."""
    del seed
    models, a, b, s = _games(prefs, models, ties)
    ca, cb, cs, counts = _cells(a, b, s, np.arange(len(a))[None])
    theta = _bradley_terry(ca, cb, cs, counts, len(models), ridge=ridge)
    return dict(zip(models, (initial + scale / np.log(base) * theta[0]).tolist()))


RATING_METHODS: dict[str, Callable[..., dict[str, float]]] = {"elo": elo_ratings, "bt": bt_ratings}


@dataclass(frozen=True)
class RatingTable:
    """Point ratings with bootstrap median and 5/95 percentiles, sorted best first."""

    method: str
    models: tuple[str, ...]
    rating: np.ndarray
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    games: np.ndarray
    win_rate: np.ndarray
    rounds: int
    seed: int

    def rows(self) -> list[dict[str, Any]]:
        return [
            dict(
                model=m,
                rating=round(float(r), 1),
                median=round(float(md), 1),
                p5=round(float(lo), 1),
                p95=round(float(hi), 1),
                games=int(g),
                win_rate=round(float(w), 4),
            )
            for m, r, md, lo, hi, g, w in zip(
                self.models, self.rating, self.median, self.low, self.high, self.games, self.win_rate
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: the method, bootstrap rounds and seed, and :meth:`rows`."""
        return {"method": self.method, "rounds": self.rounds, "seed": self.seed, "ratings": self.rows()}

    def to_text(self) -> str:
        lines = [f"{'model':<34} {'rating':>8} {'median':>8} {'p5':>8} {'p95':>8} {'games':>6} {'win%':>6}"]
        lines += [
            f"{r['model']:<34} {r['rating']:>8.1f} {r['median']:>8.1f} {r['p5']:>8.1f} {r['p95']:>8.1f}"
            f" {r['games']:>6d} {100 * r['win_rate']:>6.1f}"
            for r in self.rows()
        ]
        return "\n".join(lines)


def bootstrap_ratings(
    prefs: Preferences,
    *,
    method: str = "elo",
    rounds: int = 1000,
    seed: int = 0,
    ties: str = "half",
    models: Sequence[str] | None = None,
    k: float = 4.0,
    base: float = 10.0,
    scale: float = 400.0,
    initial: float = 1000.0,
    ridge: float = 1e-4,
) -> RatingTable:
    """Ratings with bootstrap intervals: each round resamples the records with replacement (Elo plays the
    resample in its drawn, random order, as in the LMSYS notebook)."""
    if method not in RATING_METHODS:
        raise PrecometError(f"unknown rating method {method!r}; valid: {sorted(RATING_METHODS)}")
    if rounds < 1:
        raise PrecometError(f"bootstrap rounds must be >= 1, got {rounds}")
    models, a, b, s = _games(prefs, models, ties)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a), size=(rounds, len(a)))
    if method == "elo":
        point = elo_ratings(
            prefs, k=k, base=base, scale=scale, initial=initial, ties=ties, models=models, order="given"
        )
        boot = _elo(a[draws], b[draws], s[draws], len(models), k=k, base=base, scale=scale, initial=initial)
    else:
        point = bt_ratings(prefs, base=base, scale=scale, initial=initial, ties=ties, models=models, ridge=ridge)
        ca, cb, cs, counts = _cells(a, b, s, draws)
        boot = initial + scale / np.log(base) * _bradley_terry(ca, cb, cs, counts, len(models), ridge=ridge)
    games = np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    wins = np.bincount(a, s, len(models)) + np.bincount(b, 1.0 - s, len(models))
    rating = np.array([point[m] for m in models])
    low, median, high = np.percentile(boot, [5, 50, 95], axis=0)
    order = np.argsort(-median, kind="stable")
    return RatingTable(
        method=method,
        models=tuple(np.array(models, dtype=object)[order]),
        rating=rating[order],
        median=median[order],
        low=low[order],
        high=high[order],
        games=games[order],
        win_rate=np.divide(wins, games, out=np.zeros(len(models)), where=games > 0)[order],
        rounds=rounds,
        seed=seed,
    )


def plot_ratings(table: RatingTable, path: str | Path, *, title: str | None = None) -> None:
    """A PNG of bootstrap medians with 5–95% intervals (a bare matplotlib Figure: no backend switch)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 0.45 * len(table.models) + 1.2))
    ax = fig.subplots()
    y = np.arange(len(table.models))[::-1]
    ax.errorbar(table.median, y, xerr=[table.median - table.low, table.high - table.median], fmt="o", capsize=3)
    ax.set_yticks(y, table.models)
    ax.set_xlabel(f"{table.method.upper()} rating (bootstrap median, 5–95%, {table.rounds} rounds)")
    ax.set_title(title or f"{table.method.upper()} ratings")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ------------------------------------------------------------------------------------- judge diagnostics
def position_bias(prefs: Preferences) -> dict[str, Any]:
    """First-position win rate among decided records whose display order is known (binomial test vs 0.5),
    and the flip rate over (item, model pair) groups judged in both orders: the share of groups whose
    verdict names a different winning model (or a tie against a win) when the order is swapped."""
    known = prefs.take(np.flatnonzero(prefs.first_known))
    first, second = int((known.label == "a").sum()), int((known.label == "b").sum())
    report: dict[str, Any] = dict(
        records=len(known), first_wins=first, second_wins=second, ties=len(known) - first - second
    )
    report["first_win_rate"] = first / (first + second) if first + second else float("nan")
    report["p_value"] = float(binomtest(first, first + second, 0.5).pvalue) if first + second else float("nan")
    verdicts: dict[tuple[str, str, str], dict[str, str]] = {}
    for item, a, b, label in zip(known.item, known.model_a, known.model_b, known.label):
        winner = a if label == "a" else b if label == "b" else "tie"
        verdicts.setdefault((item, *sorted((a, b))), {}).setdefault(a, winner)
    both = [v for v in verdicts.values() if len(v) == 2]
    flips = sum(len(set(v.values())) > 1 for v in both)
    report.update(pairs_both_orders=len(both), flips=flips, flip_rate=flips / len(both) if both else float("nan"))
    return report


def _canonical(prefs: Preferences) -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for item, a, b, label in zip(prefs.item, prefs.model_a, prefs.model_b, prefs.label):
        flip = a > b
        out.setdefault((item, *sorted((a, b))), {"a": "b", "b": "a"}.get(label, label) if flip else label)
    return out


def agreement(judge: Preferences, reference: Preferences) -> dict[str, float]:
    """Accuracy and Cohen's κ (sklearn) of ``judge`` against ``reference`` labels on the (item, model pair)
    keys both cover (first record per key, oriented by model name); also accuracy on pairs neither calls a tie."""
    from sklearn.metrics import cohen_kappa_score

    x, y = _canonical(judge), _canonical(reference)
    keys = sorted(set(x) & set(y))
    if not keys:
        raise PrecometError(f"{judge.source} and {reference.source} share no (item, model pair)")
    lx, ly = np.array([x[k] for k in keys]), np.array([y[k] for k in keys])
    decided = (lx != "tie") & (ly != "tie")
    return dict(
        pairs=len(keys),
        accuracy=float((lx == ly).mean()),
        kappa=float(cohen_kappa_score(lx, ly, labels=["a", "b", "tie"]))
        if len(set(lx) | set(ly)) > 1
        else float("nan"),
        decided_pairs=int(decided.sum()),
        decided_accuracy=float((lx[decided] == ly[decided]).mean()) if decided.any() else float("nan"),
    )
