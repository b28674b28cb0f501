import copy
import math

import numpy as np
import pytest

from precomet.campaign import HUMAN, Campaign, estimate_cost
from precomet.errors import CampaignError
from tests.conftest import assert_unchanged


def test_default_cost_is_length_estimate(tiny_campaign):
    c = Campaign.build(src=["abcd", "x" * 100], systems=["s"])
    assert c.cost.tolist() == pytest.approx([0.15 * 4 + 33.7, 0.15 * 100 + 33.7])
    assert estimate_cost(["ab"])[0] == pytest.approx(34.0)
    assert c.ids.tolist() == ["0", "1"] and c.doc.tolist() == ["0", "1"] and c.domain.tolist() == ["all", "all"]


def test_take_and_restrict_return_new_objects(tiny_campaign):
    before = copy.deepcopy(tiny_campaign._columns())
    sub = tiny_campaign.take([2, 0])
    assert sub.ids.tolist() == ["c", "a"]
    assert sub.score(HUMAN).tolist() == [[0.0, 10.0, 5.0], [1.0, 2.0, 3.0]]
    assert sub.outputs["s2"].tolist() == ["six", "one too"]
    assert sub.cost.tolist() == [5.0, 10.0]
    assert len(tiny_campaign) == 4
    only = tiny_campaign.restrict_systems(["s3", "s1"])
    assert only.systems == ("s3", "s1")
    assert only.score("metric")[0].tolist() == [0.1, 0.9]
    assert set(only.outputs) == {"s3", "s1"}
    assert tiny_campaign.take_ids(["d"]).src.tolist() == ["seven eight"]
    assert_unchanged(before, tiny_campaign._columns())  # the original is untouched, column by column


def test_columns_are_read_only(tiny_campaign):
    with pytest.raises(ValueError):
        tiny_campaign.score(HUMAN)[0, 0] = 99
    for column in (tiny_campaign.cost, tiny_campaign.src, tiny_campaign.outputs["s1"], tiny_campaign.take([1]).doc):
        with pytest.raises(ValueError):
            column[0] = column[0]


def test_take_rejects_out_of_range_and_negative_indices(tiny_campaign):
    for bad in ([4], [-1]):
        with pytest.raises(CampaignError, match=f"item index {bad[0]} out of range"):
            tiny_campaign.take(bad)


def test_build_copies_caller_arrays():
    human = np.array([[1.0], [2.0]])
    c = Campaign.build(src=["a", "b"], systems=["s"], scores={HUMAN: human})
    human[0, 0] = 42
    assert c.score(HUMAN)[0, 0] == 1.0


def test_complete_drops_items_with_missing_scores(tiny_campaign):
    human = tiny_campaign.score(HUMAN).copy()
    human[1, 2] = math.nan
    kept, dropped = tiny_campaign.with_scores(HUMAN, human).complete(HUMAN)
    assert dropped == 1 and kept.ids.tolist() == ["a", "c", "d"]


def test_iter_items_format(tiny_campaign):
    item = next(tiny_campaign.iter_items())
    assert item["id"] == "a" and item["tgt"]["s2"] == "one too"
    assert item["scores"]["s1"] == {"human": 1, "metric": 0.9}
    assert item["cost"] == 10.0 and item["domain"] == "news" and item["doc"] == "d1" and item["campaign"] == "tiny"


def test_data_hash_depends_on_content(tiny_campaign):
    assert tiny_campaign.data_hash() == tiny_campaign.take(range(4)).data_hash()
    assert tiny_campaign.data_hash() != tiny_campaign.take([1, 0, 2, 3]).data_hash()
    changed = Campaign.build(**{**tiny_campaign._columns(), "outputs": {**tiny_campaign.outputs, "s1": ["x"] * 4}})
    assert tiny_campaign.data_hash() != changed.data_hash()
    regrouped = Campaign.build(**{**tiny_campaign._columns(), "domain": ["a"] * 4})
    assert tiny_campaign.data_hash() != regrouped.data_hash()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(ids=["a", "a"]), "duplicate item id 'a'"),
        (dict(src=["ok", "  "]), "empty source"),
        (dict(cost=[1.0, float("nan")]), "cost must be a positive finite number"),
        (dict(cost=[1.0, -2.0]), "cost must be a positive finite number"),
        (dict(scores={HUMAN: [[1.0], ["x"]]}), "not numeric"),
        (dict(scores={HUMAN: {"nope": [1, 2]}}), "unknown system"),
        (dict(outputs={"s": ["a"]}), "expected 2 values"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    base = dict(ids=["a", "b"], src=["x", "y"], systems=["s"])
    with pytest.raises(CampaignError, match=message):
        Campaign.build(**{**base, **kwargs})


def test_unknown_names_list_valid_ones(tiny_campaign):
    with pytest.raises(CampaignError, match="available: \\['human', 'metric'\\]"):
        tiny_campaign.score("bleu")
    with pytest.raises(CampaignError, match="unknown system"):
        tiny_campaign.restrict_systems(["s9"])
    with pytest.raises(CampaignError, match="not in campaign"):
        tiny_campaign.take_ids(["zz"])
