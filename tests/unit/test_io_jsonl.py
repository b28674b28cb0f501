import json
import math

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import CampaignError, DataError
from precomet.io import load, load_jsonl, write_jsonl
from precomet.io.hf import from_dataset, to_dataset


def _same(a, b):
    assert a.ids.tolist() == b.ids.tolist() and a.src.tolist() == b.src.tolist()
    assert a.systems == b.systems and a.doc.tolist() == b.doc.tolist() and a.domain.tolist() == b.domain.tolist()
    assert a.cost.tolist() == pytest.approx(b.cost.tolist())
    assert {s: list(t) for s, t in a.outputs.items()} == {s: list(t) for s, t in b.outputs.items()}
    for name in a.scores:
        np.testing.assert_allclose(a.scores[name], b.scores[name])


def test_jsonl_round_trip(tiny_campaign, tmp_path):
    human = tiny_campaign.score(HUMAN).copy()
    human[0, 1] = math.nan
    campaign = tiny_campaign.with_scores(HUMAN, human)
    path = tmp_path / "items.jsonl"
    write_jsonl(campaign, path)
    back = load_jsonl(path)
    _same(campaign, back)
    assert back.name == "tiny"
    assert "human" not in json.loads(path.read_text().splitlines()[0])["scores"]["s2"]


def test_dataset_round_trip(tiny_campaign):
    _same(tiny_campaign, from_dataset(to_dataset(tiny_campaign)))


def test_subset2evaluate_style_items(tmp_path):
    path = tmp_path / "s2e.jsonl"
    rows = [
        {"i": 0, "src": "Hallo", "tgt": {"A": "Hello", "B": "Hi"}, "scores": {"A": {"human": 90}, "B": {"human": 70}}},
        {
            "i": 1,
            "src": "Welt",
            "tgt": {"A": "World", "B": "Earth"},
            "scores": {"A": {"human": 50}, "B": {"human": 60}},
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    c = load(path)
    assert c.ids.tolist() == ["0", "1"] and c.systems == ("A", "B")
    assert c.score(HUMAN).tolist() == [[90, 70], [50, 60]]
    assert c.cost[0] == pytest.approx(0.15 * 5 + 33.7)


@pytest.mark.parametrize(
    "content, error, message",
    [
        ('{"id": 1, "src": "a"}\n{"id": 1, "src": "b"}\n', CampaignError, "duplicate item id '1'"),
        ('{"id": 1, "src": ""}\n', CampaignError, "empty source"),
        (
            '{"id": 1, "src": "a", "scores": {"A": {"human": "good"}}}\n',
            CampaignError,
            "items.jsonl:1: item 1, system 'A', score 'human'",
        ),
        (
            '{"id": 1, "src": "a", "cost": -1}\n',
            CampaignError,
            "items.jsonl:1: item 1, field .cost.: must be a positive",
        ),
        ('{"id": 1, "src": "a"}\nnot json\n', DataError, "items.jsonl:2: invalid JSON"),
    ],
)
def test_bad_jsonl(tmp_path, content, error, message):
    path = tmp_path / "items.jsonl"
    path.write_text(content)
    with pytest.raises(error, match=message):
        load_jsonl(path)


def test_json_that_is_not_json_lines_is_told_so(tmp_path):
    items = [{"id": 1, "src": "a"}, {"id": 2, "src": "b"}]
    array, pretty, line = tmp_path / "array.json", tmp_path / "pretty.json", tmp_path / "line.jsonl"
    array.write_text(json.dumps(items, indent=1))
    pretty.write_text(json.dumps(items[0], indent=1))
    line.write_text(json.dumps(items) + "\n")
    with pytest.raises(DataError, match=r"is one JSON document \(an array\), not JSON Lines.*jq -c '\.\[\]'"):
        load(array)
    with pytest.raises(DataError, match=r"is one JSON document \(an object over several lines\)"):
        load(pretty)
    with pytest.raises(DataError, match=r"line.jsonl:1: expected a JSON object \(one item per line\), got an array"):
        load(line)
    (tmp_path / "broken.jsonl").write_text('{"id": 1,\n "src": "a"\n')  # neither: the line's own error
    with pytest.raises(DataError, match=r"broken.jsonl:1: invalid JSON"):
        load(tmp_path / "broken.jsonl")


def test_items_of_several_campaigns_are_refused_unless_named(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"id": "a", "src": "x", "campaign": "c1"}\n{"id": "b", "src": "y", "campaign": "c2"}\n')
    with pytest.raises(DataError, match=r"mixed.jsonl: its items name 2 campaigns \(c1, c2\); an input holds one"):
        load(path)
    assert load_jsonl(path, name="both").name == "both"
    path.write_text('{"id": "a", "src": "x", "campaign": "c1"}\n{"id": "b", "src": "y"}\n')
    assert load(path).name == "c1"


def test_invalid_utf8_names_line(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": 1, "src": "a"}\n{"id": 2, "src": "\xff"}\n')
    with pytest.raises(DataError, match="items.jsonl:2: invalid UTF-8"):
        load_jsonl(path)


def test_missing_path(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load(tmp_path / "nope.jsonl")


def test_items_of_which_only_some_name_a_domain_are_warned_about(tmp_path, caplog):
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "a", "src": "x", "domain": "news"}\n{"id": "b", "src": "y"}\n{"id": "c", "src": "z"}\n')
    with caplog.at_level("WARNING"):
        assert load(path).domain.tolist() == ["news", "all", "all"]
    assert "2 of 3 items have no 'domain' and form the domain 'all'" in caplog.text
    caplog.clear()
    path.write_text('{"id": "a", "src": "x"}\n{"id": "b", "src": "y"}\n')  # none: one domain, nothing to say
    with caplog.at_level("WARNING"):
        load(path)
    assert "domain" not in caplog.text


def test_language_pair_protocol_and_negative_zero_survive_a_round_trip(tiny_campaign, tmp_path):
    """convert dropped ``lp``/``protocol`` and wrote MQM's -0.0 as 0, changing the data hash of the same data."""
    from dataclasses import replace

    human = tiny_campaign.score(HUMAN).copy()
    human[0, 0] = -0.0
    campaign = replace(tiny_campaign.with_scores(HUMAN, human), lp="en-de", protocol="mqm")
    path = tmp_path / "items.jsonl"
    write_jsonl(campaign, path)
    back = load_jsonl(path)
    assert (back.lp, back.protocol) == ("en-de", "mqm") and back.data_hash() == campaign.data_hash()
    assert math.copysign(1.0, back.score(HUMAN)[0, 0]) < 0


def test_keys_that_are_no_item_field_are_warned_about_with_the_nearest_one(tmp_path, caplog):
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "a", "src": "x", "score": {"A": {"human": 1}}}\n{"id": "b", "src": "y", "note": 1}\n')
    with caplog.at_level("WARNING"):
        assert not load(path).scores
    assert "'note' (1 item(s)), 'score' (1 item(s); did you mean 'scores'?) are not item fields" in caplog.text
    write_jsonl(load(path), path)  # what precomet writes reads back without a word
    caplog.clear()
    with caplog.at_level("WARNING"):
        load(path)
    assert "not item fields" not in caplog.text
