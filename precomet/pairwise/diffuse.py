"""DiffUse (Ashury-Tahan et al., ACL 2024), pairwise side: :func:`iterate_tree` is Algorithm 1 (§6.2) with the
hypergeometric stopping rule of App. A.3; :func:`iterate_order` is the same "annotate until decided" loop for
any fixed item order. The representation, the Ward tree and the DiffUse *utility* live one layer down in
:mod:`precomet.utilities.diffuse`, the selection of representatives in :mod:`precomet.selection.representatives`;
both are re-exported here.
"""

from __future__ import annotations

import functools
import heapq
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from precomet.errors import PrecometError
from precomet.selection.representatives import diffuse_select  # noqa: F401 -- re-exported, as the tree below
from precomet.utilities.diffuse import (  # noqa: F401 -- re-exported: DiffUse in one place for its users
    DiffuseTree,
    campaign_tree,
    difference_vectors,
    diffuse_tree,
    diffuse_utility,
)

log = logging.getLogger(__name__)

LABELS = ("a", "b", "tie")
_SIGN_LABELS = {1: "a", -1: "b", 0: "tie"}


def sign_oracle(signs: np.ndarray) -> Callable[[int], str]:
    """A simulated annotator answering item ``k`` from a preference sign: +1 ``"a"``, -1 ``"b"``, 0 ``"tie"``."""
    signs = np.asarray(signs)
    return lambda k: _SIGN_LABELS[int(signs[k])]


# ---------------------------------------------------------------------------------------------- iterative
def stopping_sf(votes: int, labelled: int, population: int) -> float:
    """Hypergeometric ``sf(k−1; N, N/2, n)``: the chance of ``votes`` or more wins among ``labelled`` items
    drawn from ``population`` items of which half favour the current leader (App. A.3)."""
    if labelled == 0:
        return 1.0
    return float(_sf_row(population, labelled)[votes])


@functools.lru_cache(maxsize=4096)
def _sf_row(population: int, labelled: int) -> np.ndarray:
    from scipy.stats import hypergeom

    return hypergeom.sf(np.arange(-1, labelled), population, population // 2, labelled)


@dataclass(frozen=True)
class IterativeResult:
    """Outcome of an "annotate until decided" run; indices refer to the items handed in."""

    winner: str | None
    leader: str
    decided: bool
    sf: float
    decision_items: np.ndarray
    labels: dict[int, str]

    @property
    def n_annotations(self) -> int:
        return len(self.labels)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: item indices as numbers, the labels in the order they were asked."""
        return {
            "winner": self.winner,
            "leader": self.leader,
            "decided": self.decided,
            "sf": float(self.sf),
            "decision_items": [int(i) for i in self.decision_items],
            "labels": [{"item": int(i), "label": label} for i, label in self.labels.items()],
            "n_annotations": self.n_annotations,
        }


def check_label(answer: object, item: object) -> str:
    """Normalise an oracle answer to ``a``/``b``/``tie``; anything else raises naming the item."""
    label = answer.strip().lower() if isinstance(answer, str) else answer
    if label not in LABELS:
        raise PrecometError(f"oracle answered {answer!r} for item {item!r}; expected one of {list(LABELS)}")
    return label


class _Annotator:
    def __init__(self, oracle: Callable[[int], object], population: int, p: float) -> None:
        self.oracle, self.population, self.p = oracle, population, p
        self.labels: dict[int, str] = {}

    def label(self, item: int) -> str:
        if item not in self.labels:
            self.labels[item] = check_label(self.oracle(item), item)
        return self.labels[item]

    @overload
    def result(self, items: Sequence[int], *, final: Literal[True]) -> IterativeResult: ...
    @overload
    def result(self, items: Sequence[int], *, final: bool) -> IterativeResult | None: ...
    def result(self, items: Sequence[int], *, final: bool) -> IterativeResult | None:
        labels = [self.label(int(i)) for i in items]
        a, b = labels.count("a"), labels.count("b")
        leader = "a" if a > b else "b" if b > a else "tie"
        sf = stopping_sf(max(a, b), len(labels), self.population) if leader != "tie" else 1.0
        decided = sf <= self.p
        if not (decided or final):
            return None
        return IterativeResult(
            winner=leader if decided else None,
            leader=leader,
            decided=decided,
            sf=sf,
            decision_items=np.array(items, dtype=int),
            labels=dict(self.labels),
        )


def _check_iteration(
    n_items: int, p: float, n_min: int, max_budget: int | None, population: int | None
) -> tuple[int, int]:
    if not 0 < p < 1:
        raise PrecometError(f"threshold p must be in (0, 1), got {p}")
    max_budget = n_items if max_budget is None else max_budget
    if not 1 <= n_min <= max_budget:
        raise PrecometError(f"need 1 <= n_min ({n_min}) <= max_budget ({max_budget})")
    if max_budget > n_items:
        raise PrecometError(f"max_budget {max_budget} exceeds the {n_items} items available")
    population = n_items if population is None else population
    if population < n_items:
        raise PrecometError(f"population {population} is smaller than the {n_items} items")
    return max_budget, population


def iterate_tree(
    tree: DiffuseTree,
    oracle: Callable[[int], object],
    *,
    p: float = 0.2,
    n_min: int = 5,
    max_budget: int | None = None,
    population: int | None = None,
) -> IterativeResult:
    """Algorithm 1: label ``n_min`` representatives, then split the most recently merged cluster, replacing
    its representative by those of its two halves, until ``sf <= p`` or ``max_budget`` labels are used.
    ``oracle(index)`` must answer ``a``, ``b`` or ``tie``; the decision set holds the current representatives."""
    max_budget, population = _check_iteration(len(tree), p, n_min, max_budget, population)
    annotator = _Annotator(oracle, population, p)
    nodes = [-int(node) for node in tree.clusters(n_min)]
    heapq.heapify(nodes)
    while True:
        current = sorted(tree.representative(-node) for node in nodes)
        outcome = annotator.result(current, final=False)
        if outcome is not None:
            return outcome
        node = -nodes[0]
        if node < len(tree):  # every cluster is a single item
            return annotator.result(current, final=True)
        halves = tree.children(node)
        new = {tree.representative(h) for h in halves} - set(annotator.labels)
        if len(annotator.labels) + len(new) > max_budget:
            return annotator.result(current, final=True)
        heapq.heapreplace(nodes, -halves[0])
        heapq.heappush(nodes, -halves[1])


def iterate_order(
    order: Sequence[int] | np.ndarray,
    oracle: Callable[[int], object],
    *,
    p: float = 0.2,
    n_min: int = 5,
    max_budget: int | None = None,
    population: int | None = None,
) -> IterativeResult:
    """Label items in the given order (``n_min`` first, then one at a time) until ``sf <= p`` or ``max_budget``."""
    order = [int(i) for i in order]
    if len(set(order)) != len(order):
        raise PrecometError("the item order lists an item twice")
    max_budget, population = _check_iteration(len(order), p, n_min, max_budget, population)
    annotator = _Annotator(oracle, population, p)
    for used in range(n_min, max_budget):
        outcome = annotator.result(order[:used], final=False)
        if outcome is not None:
            return outcome
    return annotator.result(order[:max_budget], final=True)
