"""Property tests: whatever the input, the budget, the domain constraints and whole documents hold."""

from __future__ import annotations

import copy
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precomet.errors import PrecometError
from precomet.selection import SubsetPlan, select_subset
from tests.conftest import assert_unchanged


@st.composite
def campaigns(draw):
    n = draw(st.integers(3, 40))
    utility = draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n))
    cost = draw(st.lists(st.floats(1, 200, allow_nan=False), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(0, 500), min_size=n, max_size=n))
    n_docs = draw(st.integers(1, n))
    doc = [f"d{draw(st.integers(0, n_docs - 1))}" for _ in range(n)]
    doc_domain = {d: draw(st.sampled_from(["news", "chat", "speech"])) for d in sorted(set(doc))}
    domain = [doc_domain[d] for d in doc]
    share = draw(st.floats(0.05, 1.0))
    level = draw(st.sampled_from(["item", "doc"]))
    mode = draw(st.sampled_from(["plain", "balance", "counts", "shares"]))
    cost_aware = draw(st.booleans())
    objective = draw(st.sampled_from(["rank-length", "rank-cost", "paper"]))
    return (
        np.array(utility),
        np.array(cost),
        np.array(length),
        np.array(doc),
        np.array(domain),
        share,
        level,
        mode,
        cost_aware,
        objective,
    )


# the only refusals a valid input may get: the budget or the domain constraints cannot be met
INFEASIBLE = re.compile(
    r"below the cheapest|cannot give each|balance needs|has only|cost at least|no unit to select"
    r"|no selection satisfies|budget share|less than one item"
)


def _units(doc, level):
    """Item positions of every unit (an item, or a whole document), in first-appearance order."""
    unit_of = doc if level == "doc" else np.arange(len(doc)).astype(str)
    return {u: np.flatnonzero(unit_of == u) for u in dict.fromkeys(unit_of.tolist())}


def _capacity(cost, share, cost_aware):
    """The budget as select_subset documents it: share of the total cost, or floor(share · N) items."""
    return share * cost.sum() if cost_aware else float(np.floor(share * len(cost) + 1e-9))


def _witness(cost, doc, domain, share, level, mode, cost_aware):
    """Item positions of a selection that plainly meets the budget and the domain constraints, or None when
    there is no obvious one. A refusal is only allowed when this finds nothing (so an always-refusing
    select_subset fails the property test)."""
    weight = cost if cost_aware else np.ones(len(cost))
    capacity = _capacity(cost, share, cost_aware)
    units = _units(doc, level)
    unit_weight = {u: float(weight[m].sum()) for u, m in units.items()}
    by_domain = {}
    for u, members in units.items():
        by_domain.setdefault(domain[members[0]], []).append(u)
    for names in by_domain.values():
        names.sort(key=unit_weight.get)
    cheapest_each = [names[0] for names in by_domain.values()]
    equal = len(set(unit_weight.values())) == 1
    if mode == "plain":
        pick = [min(units, key=unit_weight.get)]
    elif mode == "counts" or (mode == "balance" and not equal):  # one unit of every domain
        pick = cheapest_each
    elif mode == "balance":  # equal weights: the whole budget is spread, floor(slots / domains) units each
        per = int(np.floor(capacity / next(iter(unit_weight.values())) + 1e-9)) // len(by_domain)
        if not 1 <= per <= min(len(names) for names in by_domain.values()):
            return None
        pick = [u for names in by_domain.values() for u in names[:per]]
    elif mode == "shares" and not equal:  # every domain's cheapest unit within its own share of the budget
        if max(unit_weight[u] for u in cheapest_each) > capacity / len(by_domain) * (1 - 1e-9):
            return None
        pick = cheapest_each
    else:  # equal-weight shares are rounded to counts: no obvious witness
        return None
    if sum(unit_weight[u] for u in pick) > capacity * (1 - 1e-9):
        return None
    return np.sort(np.concatenate([units[u] for u in pick]))


def _check(chosen, cost, doc, domain, share, level, mode, cost_aware):
    """Every promise a selection must keep: distinct items, the budget, whole documents, the domain rule."""
    names = sorted(set(domain))
    assert len(chosen) > 0 and len(set(chosen.tolist())) == len(chosen)
    capacity = _capacity(cost, share, cost_aware)
    spent = cost[chosen].sum() if cost_aware else len(chosen)
    assert spent <= capacity + 1e-6
    if level == "doc":  # documents are taken whole
        taken = set(doc[chosen])
        assert sorted(chosen.tolist()) == [i for i in range(len(doc)) if doc[i] in taken]
    unit_of = doc if level == "doc" else np.arange(len(doc)).astype(str)
    per_domain = {d: len(set(unit_of[chosen][domain[chosen] == d])) for d in names}
    if mode == "balance":
        assert len(set(per_domain.values())) == 1
    if mode == "counts":
        assert all(c == 1 for c in per_domain.values())
    if mode == "shares" and cost_aware:
        assert all(cost[chosen][domain[chosen] == d].sum() <= capacity / len(names) + 1e-6 for d in names)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns())
def test_constraints_always_hold(case):
    utility, cost, length, doc, domain, share, level, mode, cost_aware, objective = case
    names = sorted(set(domain))
    options: dict = {"proportion": share}
    if mode == "balance":
        options["balance"] = "domain"
    elif mode == "counts":
        options["quotas"] = {d: 1 for d in names}
    elif mode == "shares":
        options["quotas"] = {d: 1 / len(names) for d in names}
    data = dict(cost=cost, length=length) if cost_aware else {}
    if cost_aware:
        options["cost_objective"] = objective
    inputs = copy.deepcopy([utility, cost, length, doc, domain, options, data])
    rule = (cost, doc, domain, share, level, mode, cost_aware)
    try:
        # gap 1e-6, not 0: CBC can stop at a relative gap of ~1e-8 that floating point cannot close
        plan = SubsetPlan(level=level, gap_tolerance=1e-6, **options)
        sel = select_subset(utility, plan, domain=domain, doc=doc, **data)
    except PrecometError as err:  # an infeasible budget is refused with its reason, never a silent empty subset
        assert INFEASIBLE.search(str(err)), str(err)
        witness = _witness(*rule)
        if witness is not None:
            _check(witness, *rule)
            raise AssertionError(f"refused ({err}) although items {witness.tolist()} meet every constraint") from err
        sel = None
    assert_unchanged(inputs, [utility, cost, length, doc, domain, options, data])  # the caller's arrays and options
    if sel is None:
        return
    _check(sel.indices, *rule)
    assert sel.bound >= sel.objective - 1e-9 and sel.status == "optimal"
