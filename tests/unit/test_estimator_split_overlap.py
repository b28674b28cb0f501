"""Near-duplicate sources in the dev split and the leak guard: rows that share a sentence or a long word /
character run stay on one side (WMT23 en-de paragraphs contain WMT23 sentence-level sources)."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precomet.errors import PrecometError
from precomet.estimator.data import group_split
from precomet.estimator.leakage import NEAR, NearDuplicates, connected_groups, drop_sources, normalise_source
from precomet.estimator.targets import leave_one_campaign_out

WORDS = 8  # the default run lengths, written out: the oracle below does not read them from the code
CHARS = 16
MIN_SENTENCE = 20


def _filler(tag: str, n: int) -> str:
    """``n`` words that occur in no other filler (``tag`` differs)."""
    return " ".join(f"{tag}{k}" for k in range(n))


def _together(*texts: str, near: NearDuplicates | None = NEAR) -> bool:
    """Are the first two texts in one group (each row its own document)?"""
    rows = [{"src": t} for t in texts]
    labels = connected_groups(rows, list(range(len(rows))), near=near)
    return bool(labels[0] == labels[1])


# ---------------------------------------------------------------- hand-made links
def test_a_paragraph_and_the_sentence_level_source_inside_it_are_one_group():
    sentence = "The Merseyside Police department said a police officer was hurt."  # 10 words
    paragraph = f"Police arrested 15 people on Friday. {sentence.upper()}  They threw objects."
    assert _together(paragraph, sentence)
    assert not _together(paragraph, sentence, near=None)  # the exact-text rule alone misses it
    # 4 words, 28 characters: only the sentence link catches it
    assert _together(
        f"{_filler('a', 9)}. It was incredibly dangerous! {_filler('b', 3)}", "it was  incredibly dangerous!"
    )
    short = "Police said so."
    assert not _together(f"{_filler('a', 9)}. {short} {_filler('b', 3)}", short)  # < 20 characters: no link


def test_texts_sharing_an_8_word_run_link_and_a_7_word_run_does_not():
    run8, run7 = _filler("r", 8), _filler("r", 7)
    assert _together(f"{_filler('a', 5)} {run8} {_filler('b', 5)}", f"{_filler('c', 3)} {run8}")
    assert not _together(f"{_filler('a', 5)} {run7} {_filler('b', 5)}", f"{_filler('c', 3)} {run7}")
    assert not _together(f"{_filler('a', 5)} {run8}", f"{_filler('c', 3)} {run8}", near=NearDuplicates(words=9))
    # a sentence of 20+ characters is shared but cut differently: "x." ends a sentence only before a space
    assert not _together("aaaa bbbb cccc dddd eeee.ffff", "aaaa bbbb cccc dddd eeee. ffff")


def test_unspaced_texts_sharing_a_16_character_run_link():
    run16 = "今天北京的天气非常好我们一起去公园"[:16]
    assert len(run16) == CHARS
    assert _together(f"昨天上海下雨了所以{run16}散步吧", f"明年{run16}了")
    assert _together(f"昨天上海下雨了所以{run16[:8]} {run16[8:]}散步吧", f"明年{run16}了")  # a stray space
    assert not _together(f"昨天上海下雨了所以{run16[:15]}散步吧", f"明年{run16[:15]}了")
    sentence = "这是一个很长的句子它有二十多个字符并且出现在两个文本里。"
    assert len(sentence) >= MIN_SENTENCE and _together(f"你好。{sentence}再见", f"{sentence}谢谢")


def test_groups_hold_documents_and_texts_as_before_and_log_the_near_links(caplog):
    rows = [
        {"src": "alpha one.", "doc": 0},
        {"src": "Alpha  ONE.", "doc": 1},  # same text as row 0
        {"src": "beta two.", "doc": 1},  # same document as row 1
        {"src": f"{_filler('p', 4)}. {_filler('s', 8)}.", "doc": 2},
        {"src": f"{_filler('s', 8)}.", "doc": 3},  # a sentence of row 3
        {"src": "gamma three.", "doc": 4},
    ]
    with caplog.at_level(logging.INFO, logger="precomet.estimator.leakage"):
        labels = connected_groups(rows, [r["doc"] for r in rows])
    assert labels.tolist() == [0, 0, 0, 3, 3, 5]
    assert "2 rows in 1 groups are held together by a shared sentence" in caplog.text
    assert connected_groups(rows, [r["doc"] for r in rows], near=None).tolist() == [0, 0, 0, 3, 4, 5]


def test_drop_sources_and_leave_one_campaign_out_drop_near_duplicates(caplog):
    sentence = f"{_filler('s', 6)} and then some more."
    rows = [
        {"campaign": "para", "id": 0, "src": f"Intro text here. {sentence} Outro text."},
        {"campaign": "para", "id": 1, "src": f"{_filler('x', 3)} {_filler('run', 8)} {_filler('y', 2)}"},
        {"campaign": "para", "id": 2, "src": "nothing shared with the held-out campaign"},
        {"campaign": "para", "id": 6, "src": f"{_filler('run', 7)} and a row of its own"},
        {"campaign": "sent", "id": 3, "src": sentence},
        {"campaign": "sent", "id": 4, "src": f"{_filler('run', 8)} end"},
        {"campaign": "sent", "id": 5, "src": "nothing shared with the held-out campaign"},
    ]
    with caplog.at_level(logging.INFO):
        train, held = leave_one_campaign_out(rows, "sent")
    assert [r["id"] for r in train] == [6]  # 0: a sentence, 1: an 8-word run, 2: the text of a held-out row
    assert [r["id"] for r in held] == [3, 4, 5]
    assert "dropped 1 row(s) with a left-out source text and 2 more sharing a sentence" in caplog.text
    train, _ = leave_one_campaign_out(rows, "sent", near=None)
    assert [r["id"] for r in train] == [0, 1, 6]
    kept, dropped = drop_sources(rows[:3], [sentence])
    assert dropped == 1 and [r["id"] for r in kept] == [1, 2]


def test_near_duplicate_settings_are_checked():
    with pytest.raises(PrecometError, match="near-duplicate words must be a positive integer, got 0"):
        NearDuplicates(words=0)
    with pytest.raises(PrecometError, match="near-duplicate chars"):
        NearDuplicates(chars=2.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- property: no link across the split
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _features(text: str) -> tuple[str, set[str], set[tuple[str, ...] | str]]:
    """Oracle: the normalised text, its sentences of 20+ characters, and its 8-word runs (16-character runs
    when it has no space at all)."""
    norm = normalise_source(text)
    sentences = {s.strip() for s in _SENTENCE_END.split(norm) if len(s.strip()) >= MIN_SENTENCE}
    if " " in norm:
        words = norm.split(" ")
        runs: set[tuple[str, ...] | str] = {tuple(words[k : k + WORDS]) for k in range(len(words) - WORDS + 1)}
    else:
        runs = {norm[k : k + CHARS] for k in range(len(norm) - CHARS + 1)}
    return norm, sentences, runs


def _linked(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] or bool(a[1] & b[1]) or bool(a[2] & b[2])


VOCAB = ["river", "Stone", "cloud", "lamp", "ORBIT", "quiet", "maple", "tide", "ember", "flute", "gravel", "hinge"]
HAN = "山水风云日月星火木金土石田禾"
word = st.sampled_from(VOCAB)
sentence_words = st.lists(word, min_size=3, max_size=12).map(lambda ws: " ".join(ws) + ".")
han_piece = st.text(alphabet=HAN, min_size=4, max_size=24)


@st.composite
def row_sets(draw):
    spaced = draw(st.booleans())
    if spaced:
        shared = draw(st.lists(sentence_words, min_size=1, max_size=5))  # whole sentences and 8+-word runs
        runs = draw(st.lists(st.lists(word, min_size=WORDS, max_size=WORDS + 2).map(" ".join), max_size=3))
        piece = st.one_of(sentence_words, st.sampled_from(shared), *(st.sampled_from(runs),) * bool(runs))
        text = st.lists(piece, min_size=1, max_size=6).map(" ".join)
    else:
        shared = draw(st.lists(st.text(alphabet=HAN, min_size=CHARS, max_size=CHARS + 6), min_size=1, max_size=4))
        piece = st.one_of(han_piece, st.sampled_from(shared), han_piece.map(lambda s: s + "。"))
        text = st.lists(piece, min_size=1, max_size=5).map("".join)
    n = draw(st.integers(4, 40))
    return [
        {"campaign": f"c{draw(st.integers(0, 2))}", "doc": str(draw(st.integers(0, 12))), "src": draw(text)}
        for _ in range(n)
    ]


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@settings(max_examples=120, deadline=None)
@given(row_sets(), st.integers(0, 3))
def test_no_training_row_shares_a_sentence_or_a_long_run_with_a_dev_row(rows, seed):
    try:
        train, dev = group_split(rows, by="doc", fraction=0.3, seed=seed)
    except PrecometError as err:
        assert "only 1 group" in str(err)
        return
    assert sorted([*train, *dev]) == list(range(len(rows)))
    features = [_features(r["src"]) for r in rows]
    for i in train:
        for j in dev:
            assert not _linked(features[i], features[j]), (rows[i]["src"], rows[j]["src"])
            assert (rows[i]["campaign"], rows[i]["doc"]) != (rows[j]["campaign"], rows[j]["doc"])


# ---------------------------------------------------------------- real data: WMT23 paragraphs and sentences
@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_wmt23_en_de_paragraphs_and_sentence_level_sources_split_apart(raw_data):
    paragraphs = raw_data / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt"
    docs = raw_data / "mt-metrics-eval-v2" / "wmt23" / "documents" / "en-de.docs"
    sentence_files = sorted((raw_data / "wmt-news-systems" / "wmt23" / "txt" / "sources").glob("*.en-*.src.en"))
    sentence_files = [p for p in sentence_files if ".en-de." not in p.name]  # en-de is the paragraph file again
    if not paragraphs.exists() or not docs.exists() or not sentence_files:
        pytest.skip(f"WMT23 en-de paragraphs or sentence-level sources not found under {raw_data}")
    rows = [
        {"campaign": "mte/wmt23/en-de", "doc": line.split("\t")[-1], "src": src}
        for src, line in zip(
            paragraphs.read_text(encoding="utf-8").splitlines(), docs.read_text(encoding="utf-8").splitlines()
        )
    ]
    for path in sentence_files:  # the release has no document ids: one line, one document (as its loader does)
        lines = path.read_text(encoding="utf-8").splitlines()
        rows += [{"campaign": path.name, "doc": str(i), "src": src} for i, src in enumerate(lines)]
    train, dev = group_split(rows, by="doc", fraction=0.2, seed=0)
    assert len(dev) > 0.1 * len(rows) and len(train) > 0.5 * len(rows)

    def index(side):  # oracle: texts, sentences and 8-word runs of one side
        features = [_features(rows[i]["src"]) for i in side]
        return [
            {f[0] for f in features},
            set().union(*(f[1] for f in features)),
            set().union(*(f[2] for f in features)),
        ]

    for part, dev_part in zip(index(train), index(dev)):
        assert not part & dev_part
    # the exact-text rule alone leaves paragraphs and their sentences on both sides
    old_train, old_dev = group_split(rows, by="doc", fraction=0.2, seed=0, near=None)
    assert any(a & b for a, b in zip(index(old_train)[1:], index(old_dev)[1:]))
