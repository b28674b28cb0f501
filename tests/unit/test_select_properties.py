"""Property tests: whatever the input, the budget, the domain constraints and whole documents hold."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precomet.errors import PrecometError
from precomet.select import select_subset


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
    return np.array(utility), np.array(cost), np.array(length), np.array(doc), np.array(domain), share, level, mode, cost_aware, objective


# the only refusals a valid input may get: the budget or the domain constraints cannot be met
INFEASIBLE = re.compile(
    r"below the cheapest|cannot give each|balance needs|cost at least|no unit to select|no selection satisfies|budget share"
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns())
def test_constraints_always_hold(case):
    utility, cost, length, doc, domain, share, level, mode, cost_aware, objective = case
    names = sorted(set(domain))
    kwargs = {}
    if mode == "balance":
        kwargs["balance"] = "domain"
    elif mode == "counts":
        kwargs["quotas"] = {d: 1 for d in names}
    elif mode == "shares":
        kwargs["quotas"] = {d: 1 / len(names) for d in names}
    if cost_aware:
        kwargs.update(cost=cost, proportion=share, cost_objective=objective, length=length)
    else:
        kwargs.update(proportion=share)
    try:
        sel = select_subset(utility, domain=domain, doc=doc, level=level, gap_tolerance=0.0, **kwargs)
    except PrecometError as err:  # an infeasible budget is refused with its reason, never a silent empty subset
        assert INFEASIBLE.search(str(err)), str(err)
        return
    chosen = sel.indices
    assert len(chosen) > 0 and len(set(chosen.tolist())) == len(chosen)
    capacity = share * cost.sum() if cost_aware else round(share * len(utility))
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
    assert sel.bound >= sel.objective - 1e-9 and sel.status == "optimal"
