import numpy as np

from precomet.selection.random_fill import random_fill


def test_item_level_fill_skips_units_that_do_not_fit():
    order = np.array([0.1, 0.2, 0.3, 0.4])  # random order = 0, 1, 2, 3
    weight = np.array([5.0, 10.0, 3.0, 1.0])
    # 5 fits, 10 does not (15 > 10), 3 fits (8), 1 fits (9)
    assert random_fill(order, weight, 10.0).tolist() == [0, 2, 3]


def test_random_order_not_cheapness_decides():
    rng = np.random.default_rng(0)
    weight = np.where(np.arange(200) < 100, 1.0, 10.0)  # half cheap, half expensive
    sizes = [len(random_fill(rng.random(200), weight, 275.0)) for _ in range(50)]
    # a knapsack over random utilities would take all 100 cheap items first; a random fill takes ~50 items
    assert 35 < np.mean(sizes) < 70


def test_domain_rounds_keep_counts_equal_and_documents_whole():
    domain = np.array(["a", "a", "a", "b", "b", "c", "c", "c"], dtype=object)
    doc = np.array(["d1", "d1", "d2", "d3", "d4", "d5", "d6", "d6"], dtype=object)
    weight = np.ones(8)
    for seed in range(20):
        order = np.random.default_rng(seed).random(8)
        chosen = random_fill(order, weight, 6.0, domain=domain, doc=doc, level="doc", balance="domain")
        assert weight[chosen].sum() <= 6.0
        docs = set(doc[chosen])
        assert all(set(np.flatnonzero(doc == d)) <= set(chosen) for d in docs)  # whole documents
        counts = [len({d for d in docs if domain[np.flatnonzero(doc == d)[0]] == k}) for k in "abc"]
        # round 1 (one document per domain) costs at most 2 + 1 + 2 = 5 <= 6 and always fits; round 2 would take
        # all 8 items: exactly one document per domain, the first of its domain in the random order (unit mean)
        assert counts == [1, 1, 1]
        for k in "abc":
            own = sorted(set(doc[domain == k]))
            first = min(own, key=lambda d: order[doc == d].mean())
            assert docs & set(own) == {first}
