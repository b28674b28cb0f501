import json
import math

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.cli import main
from precomet.errors import DataError, PrecometError
from precomet.io import load
from precomet.io.mtme import list_campaigns, list_protocols, load_mtme, metric_name


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.fixture
def mtme_root(tmp_path):
    """wmt99/en-de: 3 segments, systems A, B + reference pseudo-systems refA and synthetic_ref."""
    base = tmp_path / "wmt99"
    _write(base / "sources" / "en-de.txt", ["one", "two", "three"])
    _write(base / "references" / "en-de.refA.txt", ["eins", "zwei", "drei"])
    _write(base / "documents" / "en-de.docs", ["news\td1", "news\td1", "chat\td2"])
    for system, lines in {
        "A": ["eins", "zwo", "drei"],
        "B": ["ein", "zwei", "drai"],
        "refA": ["eins", "zwei", "drei"],
        "synthetic_ref": ["1", "2", "3"],
        "C": ["x", "y", "z"],
    }.items():
        _write(base / "system-outputs" / "en-de" / f"{system}.txt", lines)
    _write(
        base / "human-scores" / "en-de.mqm.seg.score",
        [
            "A\t-1.0",
            "A\tNone",
            "A\t0",
            "B\t-5",
            "B\t-2.5",
            "B\t-0.1",
            "refA\t0",
            "refA\t0",
            "refA\t-1",
            "C\tNone",
            "C\tNone",
            "C\tNone",
        ],
    )
    _write(base / "human-scores" / "en-de.da-sqm.seg.score", ["A\t90", "A\t80", "A\t70", "B\t60", "B\t50", "B\t40"])
    _write(
        base / "metric-scores" / "en-de" / "BLEU-refA.seg.score",
        ["A\t10", "A\t20", "A\t30", "B\t1", "B\t2", "B\t3", "synthetic_ref\t5", "synthetic_ref\t5", "synthetic_ref\t5"],
    )
    return tmp_path


def test_tiny_mtme(mtme_root):
    c = load_mtme(mtme_root, "wmt99/en-de", human="mqm")
    assert c.systems == ("A", "B")  # refs excluded, C has no human score
    assert c.src.tolist() == ["one", "two", "three"] and c.ref.tolist() == ["eins", "zwei", "drei"]
    assert c.doc.tolist() == ["d1", "d1", "d2"] and c.domain.tolist() == ["news", "news", "chat"]
    np.testing.assert_array_equal(c.score(HUMAN), [[-1.0, -5], [math.nan, -2.5], [0, -0.1]])
    np.testing.assert_array_equal(c.score("BLEU"), [[10, 1], [20, 2], [30, 3]])
    assert c.protocol == "mqm" and c.lp == "en-de" and c.ids[0] == "wmt99/en-de/0"


def test_include_refs(mtme_root):
    c = load_mtme(mtme_root, "wmt99/en-de", human="mqm", include_refs=True)
    assert c.systems == ("A", "B", "refA")


def test_load_drops_incomplete_and_reports(mtme_root):
    c = load(mtme_root, campaign="wmt99/en-de", human="mqm")
    assert c.ids.tolist() == ["wmt99/en-de/0", "wmt99/en-de/2"]
    assert "1 items" in c.info["dropped"]


def test_listing_and_names(mtme_root):
    assert list_campaigns(mtme_root) == ["wmt99/en-de"]
    assert list_protocols(mtme_root, "wmt99/en-de") == ["da-sqm", "mqm"]
    assert metric_name("MetricX-23-c-refA.seg.score") == "MetricX-23-c"
    assert metric_name("CometKiwi-src.seg.score") == "CometKiwi"
    assert metric_name("metricx_xxl_MQM_2020-refA.seg.score") == "metricx_xxl_MQM_2020"


def test_bad_inputs(mtme_root):
    with pytest.raises(PrecometError, match=r"unknown campaign 'wmt99/fr-de'; found \['wmt99/en-de'\]"):
        load_mtme(mtme_root, "wmt99/fr-de")
    with pytest.raises(PrecometError, match=r"unknown human protocol 'esa'; available: \['da-sqm', 'mqm'\]"):
        load_mtme(mtme_root, "wmt99/en-de", human="esa")
    _write(mtme_root / "wmt99" / "system-outputs" / "en-de" / "B.txt", ["only one line"])
    with pytest.raises(DataError, match=r"B.txt: 1 lines, but .*en-de.txt has 3"):
        load_mtme(mtme_root, "wmt99/en-de")


def test_a_rated_system_without_its_output_file_is_an_error_not_dropped(mtme_root):
    (mtme_root / "wmt99" / "system-outputs" / "en-de" / "B.txt").unlink()
    with pytest.raises(DataError, match=r"B.txt: no output file for system 'B', which en-de.mqm.seg.score rates"):
        load_mtme(mtme_root, "wmt99/en-de", human="mqm")
    (mtme_root / "wmt99" / "system-outputs" / "en-de" / "A.txt").unlink()
    with pytest.raises(DataError, match=r"\(2 such systems: A, B\)"):
        load_mtme(mtme_root, "wmt99/en-de", human="mqm")
    (mtme_root / "wmt99" / "system-outputs" / "en-de" / "C.txt").unlink()  # rates nothing: not asked for
    (mtme_root / "wmt99" / "system-outputs" / "en-de" / "refA.txt").unlink()  # a reference, left out anyway
    with pytest.raises(DataError, match=r"2 such systems: A, B\)$"):
        load_mtme(mtme_root, "wmt99/en-de", human="mqm")


def test_an_empty_source_line_names_its_file_and_line(mtme_root):
    _write(mtme_root / "wmt99" / "sources" / "en-de.txt", ["one", "  ", "three"])
    with pytest.raises(DataError) as caught:
        load_mtme(mtme_root, "wmt99/en-de", human="mqm")
    assert caught.value.spelled().endswith("sources/en-de.txt:2: empty source line")


def test_non_numeric_score_names_line(mtme_root):
    _write(
        mtme_root / "wmt99" / "human-scores" / "en-de.mqm.seg.score",
        ["A\t-1", "A\tbad", "A\t0", "B\t-5", "B\t-2.5", "B\t-0.1"],
    )
    with pytest.raises(
        DataError,
        match=r"en-de.mqm.seg.score:2: segment 2, system 'A', field 'score': must be a finite number, got 'bad'",
    ):
        load_mtme(mtme_root, "wmt99/en-de", human="mqm")


def test_cli_convert_and_errors(mtme_root, tmp_path, capsys):
    out = tmp_path / "items.jsonl"
    assert (
        main(["convert", "--data", str(mtme_root), "--campaign", "wmt99/en-de", "--human", "da-sqm", "-o", str(out)])
        == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and rows[0]["scores"]["A"] == {"human": 90, "BLEU": 10}
    assert "wrote 3 items" in capsys.readouterr().out
    assert main(["info", "--data", str(mtme_root), "--campaign", "wmt99/xx-yy"]) == 2
    err = capsys.readouterr().err
    assert "unknown campaign" in err and "Traceback" not in err
    assert main(["info", "--data", str(tmp_path / "missing")]) == 2


@pytest.mark.realdata
@pytest.mark.parametrize(
    "campaign, human, items, systems",
    [
        ("wmt23/en-de", "mqm", 460, 12),
        ("wmt23/en-de", "da-sqm", 549, 12),
        ("wmt23/zh-en", "mqm", 1177, 15),
        ("wmt23/zh-en", "da-sqm", 884, 15),
        ("wmt22/zh-en", "mqm", 1875, 14),
    ],
)
def test_real_campaign_counts(raw_data, campaign, human, items, systems):
    c = load(raw_data / "mt-metrics-eval-v2", campaign=campaign, human=human)
    assert (len(c), len(c.systems)) == (items, systems)
    assert not np.isnan(c.score(HUMAN)).any()
    assert "MetricX-23-c" in c.scores if campaign.startswith("wmt23") else "COMET-22" in c.scores
