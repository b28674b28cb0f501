"""SummEval / REALSumm pickles through the class-refusing unpickler."""

from __future__ import annotations

import collections
import os
import pickle

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import DataError
from precomet.io import detect_format, load
from precomet.io.summ import load_summ_pickle, safe_unpickle

TINY = {
    "doc-1": {
        "src": "A long article about cats.",
        "ref_summ": "Cats.",
        "sys_summs": {
            "M1": {
                "sys_summ": "About cats.",
                "scores": {"coherence": 4.0, "consistency": 5.0, "fluency": 3.0, "relevance": 2.0},
            },
            "M2": {
                "sys_summ": "Dogs.",
                "scores": {"coherence": 1.0, "consistency": 1.0, "fluency": 5.0, "relevance": 1.0},
            },
        },
    },
    7: {
        "src": "Another article.",
        "ref_summ": "Another.",
        "sys_summs": {
            "M1": {
                "sys_summ": "Article.",
                "scores": {"coherence": 2.0, "consistency": 2.0, "fluency": 2.0, "relevance": 2.0},
            },
            "M2": {
                "sys_summ": "Another one.",
                "scores": {"coherence": 3.0, "consistency": 4.0, "fluency": 5.0, "relevance": 1.0},
            },
        },
    },
}


def _write(tmp_path, data, name="data.pkl"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(data, protocol=3))
    return path


def test_summeval_style_hand_computed(tmp_path):
    campaign = load(_write(tmp_path, TINY))
    assert list(campaign.ids) == ["doc-1", "7"]
    assert campaign.systems == ("M1", "M2")
    np.testing.assert_array_equal(campaign.score(HUMAN), [[14, 8], [8, 13]])
    np.testing.assert_array_equal(campaign.score("fluency"), [[3, 5], [2, 5]])
    assert list(campaign.outputs["M2"]) == ["Dogs.", "Another one."]
    assert list(campaign.ref) == ["Cats.", "Another."]
    assert campaign.name == "summeval" and campaign.protocol == "summeval"


def test_realsumm_style(tmp_path):
    data = {
        1: {
            "src": "Text one.",
            "ref_summ": "One.",
            "sys_summs": {"a.txt": {"sys_summ": "x", "scores": {"litepyramid_recall": 0.25}}},
        },
        2: {
            "src": "Text two.",
            "ref_summ": "Two.",
            "sys_summs": {"a.txt": {"sys_summ": "y", "scores": {"litepyramid_recall": 0.5}}},
        },
    }
    campaign = load_summ_pickle(_write(tmp_path, data))
    np.testing.assert_array_equal(campaign.score(HUMAN), [[0.25], [0.5]])
    np.testing.assert_array_equal(campaign.score("litepyramid_recall"), [[0.25], [0.5]])
    assert campaign.name == "realsumm"


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo precomet-pwned > /dev/null",))


@pytest.mark.parametrize(
    ("payload", "class_name"),
    [(collections.OrderedDict(a=1), "collections.OrderedDict"), (_Evil(), "system"), ({"x": _Evil()}, "system")],
)
def test_pickle_with_a_class_is_refused(tmp_path, monkeypatch, payload, class_name):
    path = _write(tmp_path, payload, "evil.pkl")
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a))
    with pytest.raises(DataError, match=rf"evil.pkl: pickle refers to class .*{class_name}"):
        safe_unpickle(path)
    assert calls == []


def test_not_a_pickle_and_bad_structure(tmp_path):
    garbage = tmp_path / "garbage.pkl"
    garbage.write_bytes(b"this is not a pickle")
    with pytest.raises(DataError, match="garbage.pkl: not a readable pickle"):
        load_summ_pickle(garbage)
    with pytest.raises(DataError, match="expected a non-empty dict"):
        load_summ_pickle(_write(tmp_path, [1, 2]))
    empty_src = {"d": {**TINY["doc-1"], "src": "  "}}
    with pytest.raises(DataError, match=r"document 'd': empty or missing source"):
        load_summ_pickle(_write(tmp_path, empty_src))
    unknown = {"d": {"src": "s", "ref_summ": "r", "sys_summs": {"m": {"sys_summ": "x", "scores": {"rouge": 0.1}}}}}
    with pytest.raises(DataError, match=r"no known human score set among \['rouge'\]"):
        load_summ_pickle(_write(tmp_path, unknown))
    text_score = {
        "d": {
            "src": "s",
            "ref_summ": "r",
            "sys_summs": {"m": {"sys_summ": "x", "scores": {"litepyramid_recall": "high"}}},
        }
    }
    with pytest.raises(
        DataError, match=r"document 'd', system 'm', score 'litepyramid_recall': must be a finite number"
    ):
        load_summ_pickle(_write(tmp_path, text_score))
    number_as_text = {
        "d": {**text_score["d"], "sys_summs": {"m": {"sys_summ": "x", "scores": {"litepyramid_recall": "1"}}}}
    }
    with pytest.raises(DataError, match=r"score 'litepyramid_recall': must be a finite number"):  # as JSONL/CSV/HF
        load_summ_pickle(_write(tmp_path, number_as_text))


def test_detect_pickle(tmp_path):
    assert detect_format(_write(tmp_path, TINY)) == "summ-pickle"


@pytest.mark.realdata
def test_real_summeval(raw_data):
    campaign = load(raw_data / "summeval" / "SummEval.data.pkl")
    assert (len(campaign), len(campaign.systems)) == (100, 16)
    assert set(campaign.scores) == {HUMAN, "coherence", "consistency", "fluency", "relevance"}
    i = campaign.index_of(["dm-test-8764fb95bfad8ee849274873a92fb8d6b400eee2"])[0]
    j = campaign.system_index(["M11"])[0]
    assert campaign.score("coherence")[i, j] == pytest.approx(4 / 3)
    assert campaign.score(HUMAN)[i, j] == pytest.approx(4 / 3 + 1.0 + 3.0 + 5 / 3)


@pytest.mark.realdata
def test_real_realsumm(raw_data):
    campaign = load(raw_data / "realsumm" / "REALSumm.data.pkl")
    assert (len(campaign), len(campaign.systems)) == (100, 24)
    np.testing.assert_array_equal(campaign.score(HUMAN), campaign.score("litepyramid_recall"))
    assert not np.isnan(campaign.score(HUMAN)).any()
