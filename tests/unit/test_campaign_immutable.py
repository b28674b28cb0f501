"""A Campaign is immutable: every array and mapping refuses mutation, so caches keyed on it cannot go stale."""

import copy
import pickle

import numpy as np
import pytest

from precomet import metaeval
from precomet.campaign import HUMAN, Campaign


def _campaign() -> Campaign:
    rng = np.random.default_rng(0)
    return Campaign.build(
        src=[f"source {i}" for i in range(6)],
        systems=["a", "b", "c"],
        outputs={s: [f"{s} {i}" for i in range(6)] for s in "abc"},
        scores={HUMAN: rng.normal(size=(6, 3)), "metric": rng.normal(size=(6, 3))},
        info={"note": "x"},
    )


@pytest.mark.parametrize("mapping", ["outputs", "scores", "info"])
def test_mappings_refuse_item_assignment_and_deletion(mapping):
    campaign = _campaign()
    container = getattr(campaign, mapping)
    key = next(iter(container))
    with pytest.raises(TypeError):
        container[key] = container[key]
    with pytest.raises(TypeError):
        del container[key]
    for change in (lambda: container.update({}), container.clear, lambda: container.pop(key), container.popitem):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert key in container


def test_arrays_refuse_writes():
    campaign = _campaign()
    for column in [
        campaign.ids,
        campaign.src,
        campaign.cost,
        campaign.doc,
        campaign.domain,
        *campaign.outputs.values(),
        *campaign.scores.values(),
    ]:
        with pytest.raises(ValueError, match="read-only"):
            column[0] = column[1]


def test_attributes_refuse_rebinding():
    campaign = _campaign()
    with pytest.raises(AttributeError):
        campaign.scores = {}


def test_callers_dict_does_not_leak_into_the_campaign():
    scores = {HUMAN: np.zeros((2, 2))}
    campaign = Campaign(
        ids=np.array(["0", "1"], dtype=object),
        src=np.array(["x", "y"], dtype=object),
        systems=("a", "b"),
        outputs={},
        scores=scores,
        doc=np.array(["0", "1"], dtype=object),
        domain=np.array(["all", "all"], dtype=object),
        cost=np.ones(2),
    )
    scores["other"] = np.ones((2, 2))
    assert list(campaign.scores) == [HUMAN]


def test_cached_full_reference_cannot_go_stale():
    campaign = _campaign()
    before = metaeval.full_reference(campaign, permutations=20)
    with pytest.raises(TypeError):
        campaign.scores[HUMAN] = np.zeros((6, 3))
    with pytest.raises(ValueError):
        campaign.scores[HUMAN][:] = 0.0
    assert metaeval.full_reference(campaign, permutations=20) is before
    np.testing.assert_array_equal(before.matrix, campaign.score(HUMAN))
    changed = campaign.with_scores(HUMAN, np.zeros((6, 3)))
    assert metaeval.full_reference(changed, permutations=20).means.tolist() == [0.0, 0.0, 0.0]


def test_derived_campaigns_stay_immutable_and_copies_work():
    campaign = _campaign()
    for derived in (
        campaign.take([2, 0]),
        campaign.restrict_systems(["c", "a"]),
        campaign.with_scores("m2", np.ones((6, 3))),
        pickle.loads(pickle.dumps(campaign)),
        copy.deepcopy(campaign),
    ):
        with pytest.raises(TypeError):
            derived.scores[HUMAN] = None
        with pytest.raises(ValueError):
            derived.scores[HUMAN][0, 0] = 1.0
    clone = pickle.loads(pickle.dumps(campaign))
    assert clone.data_hash() == campaign.data_hash()
