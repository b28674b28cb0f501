"""Verdicts over several campaigns: per-campaign statistics pooled and tested against pooled random orderings.

Campaigns that share their items are not independent evidence (WMT24 en-cs and en-hi are the same items, en-ja
contains them): :func:`shared_item_groups` merges them, and :func:`pool_results` averages within a group first, so
a group counts once. The pooled null pairs the ``r``-th random ordering of every campaign (each campaign's null is
drawn independently of the others', and campaigns of one group that share their items share their orderings too),
so the pooled statistic of a selector that knows nothing is a draw from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from precomet.benchmark.null import PRIMARY, null_band_text, null_summary, p_value
from precomet.errors import PrecometError
from precomet.record import Record, as_json

MIN_SHARED = 0.1
"""Two campaigns are merged when they share at least this share of the smaller one's distinct sources."""


def shared_item_groups(sources: Mapping[str, Iterable[str]], *, min_shared: float = MIN_SHARED) -> list[list[str]]:
    """Campaign names grouped by shared items: ``sources`` maps each campaign to its source texts; two campaigns are
    linked when they share ≥ ``min_shared`` of the smaller one's distinct sources, and groups are the connected
    components (in the order the campaigns are given)."""
    names = list(sources)
    texts = {name: set(sources[name]) for name in names}
    parent = {name: name for name in names}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            smaller = min(len(texts[a]), len(texts[b]))
            if smaller and len(texts[a] & texts[b]) >= min_shared * smaller:
                parent[root(b)] = root(a)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(root(name), []).append(name)
    return list(groups.values())


def pool_results(
    results: Mapping[str, Record | Mapping[str, Any]], *, groups: Sequence[Sequence[str]] | None = None
) -> dict[str, Any]:
    """Pool benchmark results (``{campaign: result}``, each with its null) over campaigns: for every row present in
    all of them (methods and controls; the oracle too), the mean over groups of the per-group mean SPA gain and
    parity, tested against the same pooling of the random orderings (``p_value`` on the SPA gain,
    ``parity_p_value``, the null's median and 5–95 % band). ``groups`` (:func:`shared_item_groups`; default: every
    campaign alone) lists campaigns sharing items. Returns ``{"campaigns", "groups", "null_orderings", "rows"}``."""
    if not results:
        raise PrecometError("nothing to pool: give at least one benchmark result")
    json_results = {name: as_json(result) for name, result in results.items()}
    groups = [list(group) for group in (groups or [[name] for name in json_results])]
    grouped = [name for group in groups for name in group]
    if sorted(grouped) != sorted(json_results):
        raise PrecometError(f"groups {groups} must list every campaign of {sorted(json_results)} once", param="groups")
    missing = [name for name, result in json_results.items() if not result.get("null")]
    if missing:
        raise PrecometError(f"result(s) {missing} have no null of random orderings (null_orderings=0)")
    draws = min(len(result["null"][PRIMARY]) for result in json_results.values())

    def pooled(values: Mapping[str, Any]) -> Any:  # mean over groups of the mean within each group
        return np.mean([np.mean([values[name] for name in group], axis=0) for group in groups], axis=0)

    null = {
        key: pooled(
            {name: np.asarray(result["null"][key][:draws], dtype=float) for name, result in json_results.items()}
        )
        for key in (PRIMARY, "parity")
    }
    rows: dict[str, Any] = {}
    for name in _common_rows(json_results.values()):
        gain = float(pooled({c: _row(result, name)[PRIMARY] for c, result in json_results.items()}))
        parity = float(pooled({c: _row(result, name)["parity"] for c, result in json_results.items()}))
        rows[name] = {
            PRIMARY: gain,
            "p_value": p_value(gain, null[PRIMARY]),
            "parity": parity,
            "parity_p_value": p_value(parity, null["parity"], higher_is_better=False),
            "by_campaign": {
                c: {key: _row(result, name)[key] for key in (PRIMARY, "parity", "p_value")}
                for c, result in json_results.items()
            },
        }
    return {
        "campaigns": list(json_results),
        "groups": groups,
        "null_orderings": draws,
        "null": null_summary(null),
        "rows": rows,
    }


def _common_rows(results: Iterable[Mapping[str, Any]]) -> list[str]:
    names: list[str] | None = None
    for result in results:
        here = [*result["methods"], *(f"{n} (control)" for n in result.get("controls", {}))]
        here += ["oracle"] if result.get("oracle") else []
        names = here if names is None else [n for n in names if n in here]
    return names or []


def _row(result: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    if name == "oracle":
        return result["oracle"]
    if name.endswith(" (control)"):
        return result["controls"][name.removesuffix(" (control)")]
    return result["methods"][name]


def pooled_table(pooled: Mapping[str, Any]) -> str:
    """Plain-text table of :func:`pool_results`: pooled SPA gain, parity and their p-values per row, then the
    null's band and the groups."""
    width = max(20, *(len(name) + 1 for name in pooled["rows"]))
    lines = [f"{'row':<{width}} {'gain':>6} {'p':>6} {'parity':>7} {'p(parity)':>9}"]
    for name, row in pooled["rows"].items():
        lines.append(
            f"{name:<{width}} {100 * row[PRIMARY]:>+6.1f} {row['p_value']:>6.3f} {row['parity']:>7.1%}"
            f" {row['parity_p_value']:>9.3f}"
        )
    lines.append(f"null: {pooled['null_orderings']} pooled random orderings: {null_band_text(pooled['null'])}")
    lines.append("groups (campaigns sharing items count once): " + "; ".join(" + ".join(g) for g in pooled["groups"]))
    return "\n".join(lines)
