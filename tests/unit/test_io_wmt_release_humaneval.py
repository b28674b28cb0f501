"""WMT release layout with crowd DA human scores (wmtYY/humaneval/**/ad-seg-scores-<lp>.csv), whose segment ids
number the test set sorted by document id (wmtYY/documents/<lp>.docs): tiny hand-made roots in tmp_path with
hand-computed matrices, every error case, the 14 to-English campaigns of ../shared/data/raw/wmt-news-systems-toen
and their sid-map files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import DataError, PrecometError
from precomet.io import list_release_campaigns, load, load_wmt_release
from precomet.io.wmt_release import HUMAN_N, HUMAN_RAW, sid_lines

NAN = np.nan
HEADER = "SYS SID RAW.SCR Z.SCR N \n"  # the real files end every line with a space
# 3 source lines; systems Allegro.eu (a dot in the name), B, and C (an output, but no score);
# HUMAN.1 / HUMAN-B are human references, Ghost.4 is scored without an output file
SCORES = (
    HEADER
    + "Allegro.eu.2 1 70 0.5 2 \n"
    + "Allegro.eu.2 3 40 -0.25 1 \n"
    + "B.0 1 90 1.25 3 \n"
    + "B.0 2 10 -1.5 1 \n"
    + "B.0 3 55.5 0.125 2 \n"
    + "HUMAN.1 1 99 1.75 1 \n"
    + "HUMAN-B 2 98 1.5 1 \n"
    + "Ghost.4 2 50 0 1 \n"
    + "\n"
)
CSV = "wmt21/humaneval/newstest2021-toen/ad-seg-scores-de-en.csv"
DOCS = "-\td1\n-\td1\nnews\td2\n"  # sorted by document id, the lines keep their order: SID k = line k


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_root(tmp_path: Path, scores: str = SCORES, src: str = "Eins.\nZwei.\nDrei.\n", docs: str = DOCS) -> Path:
    root = tmp_path / "toen"
    write(root, "wmt21/documents/de-en.docs", docs)
    txt = "wmt21/txt/"
    write(root, txt + "sources/newstest2021.de-en.src.de", src)
    write(root, txt + "references/newstest2021.de-en.ref.A.en", "One.\nTwo.\nThree.\n")
    for system in ("Allegro.eu", "B", "C"):
        write(root, txt + f"system-outputs/newstest2021.de-en.hyp.{system}.en", f"{system}1\n{system}2\n{system}3\n")
    write(root, CSV, scores)
    return root


# ---------------------------------------------------------------------------------------------- loading
def test_hand_computed_matrices_and_info(tmp_path):
    root = make_root(tmp_path)
    campaign = load_wmt_release(root, "wmt21/de-en")
    assert campaign.systems == ("Allegro.eu", "B", "C")  # no HUMAN*, no Ghost
    assert list(campaign.ids) == ["0", "1", "2"] and campaign.protocol == "da"
    assert sorted(campaign.scores) == [HUMAN, HUMAN_N, HUMAN_RAW] == ["human", "human_n", "human_raw"]
    np.testing.assert_array_equal(
        campaign.score(HUMAN), [[0.5, 1.25, NAN], [NAN, -1.5, NAN], [-0.25, 0.125, NAN]]
    )  # Z.SCR
    np.testing.assert_array_equal(campaign.score(HUMAN_RAW), [[70, 90, NAN], [NAN, 10, NAN], [40, 55.5, NAN]])
    np.testing.assert_array_equal(campaign.score(HUMAN_N), [[2, 3, NAN], [NAN, 1, NAN], [1, 2, NAN]])  # N
    assert list(campaign.doc) == ["d1", "d1", "d2"] and list(campaign.domain) == ["all", "all", "news"]
    info = campaign.info
    assert info["human scores"] == (
        f"{CSV} (crowd DA: human = Z.SCR, human_raw = RAW.SCR, human_n = N, the judgements behind each cell)"
    )
    assert "sorted by document id" in info["human alignment"] and "documents/de-en.docs" in info["layout"]
    assert info["human coverage"] == "0 of 3 items scored for every system, 3 for at least one"
    assert info["human references scored"] == "HUMAN-B, HUMAN.1 (not systems; not loaded)"
    assert info["scored without output"] == "Ghost.4 (no output file; dropped)"
    assert info["systems without human score"] == "C"


def test_segment_ids_number_the_test_set_sorted_by_document_id(tmp_path):
    """Documents b, a, b: sorted by id (stable) the lines are 1, 0, 2, so SID 1 scores line 1, SID 2 line 0,
    SID 3 line 2. A numeric or locale sort would put "d10" before "d9" differently: the sort is by code point."""
    root = make_root(tmp_path, docs="-\tb\n-\ta\n-\tb\n")
    campaign = load_wmt_release(root, "wmt21/de-en")
    np.testing.assert_array_equal(
        campaign.score(HUMAN), [[NAN, -1.5, NAN], [0.5, 1.25, NAN], [-0.25, 0.125, NAN]]
    )  # the first two rows of test_hand_computed_matrices_and_info, swapped
    assert list(campaign.doc) == ["b", "a", "b"]
    assert sid_lines(["b", "a", "b"]) == [1, 0, 2]
    assert sid_lines(["d9", "d10", "D1", "d9"]) == [2, 1, 0, 3]  # code points: "D" < "d", "d1…" < "d9"


def test_without_documents_the_scores_are_not_loaded(tmp_path):
    root = make_root(tmp_path)
    (root / "wmt21/documents/de-en.docs").unlink()
    campaign = load_wmt_release(root, "wmt21/de-en")
    assert campaign.scores == {} and campaign.protocol is None
    assert campaign.info["human scores"] == (
        f"{CSV} not loaded: its segment ids number the test set sorted by document id, and"
        " wmt21/documents/de-en.docs (one '<domain>\\t<docid>' line per source line) is missing"
    )


@pytest.mark.parametrize(
    ("docs", "message"),
    [("-\td1\n-\td1\n", r"de-en.docs: 2 lines, but the sources file has 3"), ("-\td1\nd1\n-\td2\n", r":2: expected")],
)
def test_bad_documents_file(tmp_path, docs, message):
    with pytest.raises(DataError, match=message):
        load_wmt_release(make_root(tmp_path, docs=docs), "wmt21/de-en")


def test_coverage_counts_full_rows(tmp_path):
    root = make_root(tmp_path)
    (root / "wmt21/txt/system-outputs/newstest2021.de-en.hyp.C.en").unlink()
    campaign = load_wmt_release(root, "wmt21/de-en")
    assert campaign.systems == ("Allegro.eu", "B")
    np.testing.assert_array_equal(campaign.score(HUMAN), [[0.5, 1.25], [NAN, -1.5], [-0.25, 0.125]])
    assert campaign.info["human coverage"] == "2 of 3 items scored for every system, 3 for at least one"
    assert "systems without human score" not in campaign.info
    # load() completes on `human` by default: the item 1 lacks Allegro.eu's score
    completed = load(root, campaign="wmt21/de-en")
    assert list(completed.ids) == ["0", "2"]
    assert completed.info["dropped"] == "1 items without a human score for every system"
    np.testing.assert_array_equal(completed.score(HUMAN_RAW), [[70, 90], [40, 55.5]])


def test_empty_source_line_drops_its_scores(tmp_path):
    campaign = load_wmt_release(make_root(tmp_path, src="Eins.\n \nDrei.\n"), "wmt21/de-en")
    assert list(campaign.ids) == ["0", "2"]
    np.testing.assert_array_equal(campaign.score(HUMAN), [[0.5, 1.25, NAN], [-0.25, 0.125, NAN]])
    assert campaign.info["human coverage"] == "0 of 2 items scored for every system, 2 for at least one"


def test_a_name_equal_to_an_output_is_taken_as_it_is(tmp_path):
    root = make_root(tmp_path, scores=HEADER + "M.2 1 50 0.5 1\nM.2.7 2 60 0.75 1\nB 3 10 -1 1\n")
    write(root, "wmt21/txt/system-outputs/newstest2021.de-en.hyp.M.2.en", "a\nb\nc\n")
    campaign = load_wmt_release(root, "wmt21/de-en")
    assert campaign.systems == ("Allegro.eu", "B", "C", "M.2")
    np.testing.assert_array_equal(campaign.score(HUMAN)[:, 3], [0.5, 0.75, NAN])
    np.testing.assert_array_equal(campaign.score(HUMAN)[:, 1], [NAN, NAN, -1])  # no suffix at all


def test_human_protocol_option_of_load(tmp_path):
    root = make_root(tmp_path)
    assert load(root, campaign="wmt21/de-en", human="da", complete=False).protocol == "da"
    with pytest.raises(PrecometError, match=r"unknown human protocol 'mqm'; available: \['da'\]"):
        load(root, campaign="wmt21/de-en", human="mqm")


def test_livonian_file_named_lv_en(tmp_path):
    root = tmp_path / "toen"
    write(root, "wmt22/txt/sources/generaltest2022.liv-en.src.liv", "Tere.\nÕ.\n")
    write(root, "wmt22/txt/system-outputs/generaltest2022.liv-en.hyp.T.en", "Hello.\nOh.\n")
    write(root, "wmt22/humaneval/DA/newstest2022-toen/ad-seg-scores-lv-en.csv", HEADER + "T.1 2 80 0.5 1\n")
    write(root, "wmt22/documents/liv-en.docs", "-\tx\n-\ty\n")
    write(root, "wmt22/documents/lv-en.docs", "-\tx\n-\ty\n")
    campaign = load_wmt_release(root, "wmt22/liv-en")
    np.testing.assert_array_equal(campaign.score(HUMAN), [[NAN], [0.5]])
    assert campaign.info["human scores"].startswith("wmt22/humaneval/DA/newstest2022-toen/ad-seg-scores-lv-en.csv")
    # a year with an lv-en campaign of its own keeps its file: liv-en then has none
    write(root, "wmt22/txt/sources/generaltest2022.lv-en.src.lv", "Labdien.\nJā.\n")
    write(root, "wmt22/txt/system-outputs/generaltest2022.lv-en.hyp.T.en", "Good day.\nYes.\n")
    assert list_release_campaigns(root) == ["wmt22/liv-en", "wmt22/lv-en"]
    assert load_wmt_release(root, "wmt22/liv-en").scores == {}
    np.testing.assert_array_equal(load_wmt_release(root, "wmt22/lv-en").score(HUMAN_RAW), [[NAN], [80]])


def test_several_test_sets_for_the_pair_leave_the_file_unassigned(tmp_path):
    root = make_root(tmp_path)
    write(root, "wmt21/txt/sources/florestest2021.de-en.src.de", "Ja.\n")
    campaign = load_wmt_release(root, "wmt21/newstest2021/de-en")
    assert campaign.scores == {} and campaign.protocol is None
    assert campaign.info["human scores"] == (
        f"{CSV} not loaded: wmt21 has 2 test sets for de-en (florestest2021, newstest2021)"
        " and the file does not say which it scores"
    )


def test_year_without_humaneval_loads_as_before(tmp_path):
    root = make_root(tmp_path)
    (root / CSV).unlink()
    campaign = load_wmt_release(root, "wmt21/de-en")
    assert campaign.scores == {} and campaign.protocol is None
    assert not any(key.startswith("human") for key in campaign.info)
    with pytest.raises(PrecometError, match=r"has no human scores; human='da' is not available"):
        load(root, campaign="wmt21/de-en", human="da")


# ---------------------------------------------------------------------------------------------- errors
def test_several_files_for_one_pair(tmp_path):
    root = make_root(tmp_path)
    write(root, "wmt21/humaneval/other/ad-seg-scores-de-en.csv", SCORES)
    with pytest.raises(
        DataError,
        match=r"wmt21/humaneval: 2 human score files for de-en \(newstest2021-toen/ad-seg-scores-de-en.csv,"
        r" other/ad-seg-scores-de-en.csv\); expected one",
    ):
        load_wmt_release(root, "wmt21/de-en")


def test_a_file_and_its_alias_for_one_pair(tmp_path):
    root = tmp_path / "toen"
    write(root, "wmt22/txt/sources/generaltest2022.liv-en.src.liv", "Tere.\n")
    for pair in ("liv-en", "lv-en"):
        write(root, f"wmt22/humaneval/DA/ad-seg-scores-{pair}.csv", HEADER)
    with pytest.raises(DataError, match=r"2 human score files for liv-en \(.*liv-en.csv, .*lv-en.csv\)"):
        load_wmt_release(root, "wmt22/liv-en")


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ("SYS SID RAW Z.SCR N\nB.0 1 90 1.25 3\n", r":1: expected the header 'SYS SID RAW.SCR Z.SCR N', got \['SYS'"),
        ("", r":1: expected the header 'SYS SID RAW.SCR Z.SCR N', got 'an empty file'"),
        (HEADER + "B.0 1 90 1.25 3\nB.0 2 10 -1.5\n", r":3: expected 5 whitespace-separated fields, got 4"),
        (HEADER + "B.0 1 90 1.25 3 x\n", r":2: expected 5 whitespace-separated fields, got 6"),
        (
            HEADER + "B.0 1 abc 1.25 3\n",
            r":2: system 'B.0', SID 1, field 'RAW.SCR': must be a finite number, got 'abc'",
        ),
        (HEADER + "B.0 1 90 nan 3\n", r":2: system 'B.0', SID 1, field 'Z.SCR': must be a finite number, got 'nan'"),
        (HEADER + "B.0 1 inf 0.5 3\n", r":2: system 'B.0', SID 1, field 'RAW.SCR': must be a finite number, got 'inf'"),
        (HEADER + "B.0 1.5 90 0.5 3\n", r":2: system 'B.0': SID must be an integer line number 1..3 .*, got '1.5'"),
        (HEADER + "B.0 x 90 0.5 3\n", r":2: system 'B.0': SID must be an integer line number 1..3 .*, got 'x'"),
        (HEADER + "B.0 0 90 0.5 3\n", r":2: system 'B.0': SID must be an integer line number 1..3 .*, got '0'"),
        (HEADER + "B.0 2 9 0.5 3\nB.0 4 90 0.5 3\n", r":3: system 'B.0': SID must be an integer .*, got '4'"),
        (
            HEADER + "B.0 2 9 0.5 3\nB.0 2 9 0.5 3\n",
            r":3: duplicate score for system 'B.0' \(B\), SID 2 \(first on line 2\)",
        ),
        (
            HEADER + "B.0 2 9 0.5 3\nB.7 2 9 0.5 3\n",
            r":3: duplicate score for system 'B.7' \(B\), SID 2 \(first on line 2\)",
        ),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, scores, message):
    root = make_root(tmp_path, scores=scores)
    with pytest.raises(DataError, match=r"ad-seg-scores-de-en.csv" + message):
        load_wmt_release(root, "wmt21/de-en")


# ---------------------------------------------------------------------------------------------- real data
# items × systems (outputs; HUMAN* and Nemo are not systems) per campaign, counted in the files
REAL = {
    "wmt21/cs-en": (1000, 8),
    "wmt21/de-en": (1000, 19),
    "wmt21/ha-en": (997, 14),
    "wmt21/is-en": (1000, 10),
    "wmt21/ja-en": (1005, 16),
    "wmt21/ru-en": (1000, 10),
    "wmt21/zh-en": (1948, 23),
    "wmt22/cs-en": (1448, 11),
    "wmt22/de-en": (1984, 9),
    "wmt22/ja-en": (2008, 14),
    "wmt22/liv-en": (420, 5),
    "wmt22/ru-en": (2016, 10),
    "wmt22/uk-en": (2018, 10),
    "wmt22/zh-en": (1875, 12),
}


@pytest.fixture
def toen_root(raw_data) -> Path:
    root = raw_data / "wmt-news-systems-toen"
    if not root.exists():
        pytest.skip(f"WMT to-English release data not found at {root}")
    return root


@pytest.mark.realdata
def test_real_wmt21_de_en(toen_root):
    campaign = load_wmt_release(toen_root, "wmt21/de-en")
    assert (len(campaign), len(campaign.systems)) == (1000, 19)
    assert not any(s.startswith("HUMAN") or s.startswith("Nemo") for s in campaign.systems)
    assert campaign.score(HUMAN).shape == campaign.score(HUMAN_RAW).shape == (1000, 19)
    assert campaign.info["human references scored"] == "HUMAN.0 (not systems; not loaded)"
    assert campaign.info["scored without output"] == "Nemo.7 (no output file; dropped)"
    assert campaign.info["systems without human score"] == "NVIDIA-NeMo"
    scored = ~np.isnan(campaign.score(HUMAN))
    assert scored.any(axis=1).all()  # every item has some score
    others = [j for j, s in enumerate(campaign.systems) if s != "NVIDIA-NeMo"]
    assert scored[:, others].mean() > 0.9  # dense for the scored systems
    # file line: UF.15 974 95 1.00232936586798 4; sid-map/de-en.tsv: SID 974 = line 687 (1-based), doc wn.de.700458
    uf, item = campaign.systems.index("UF"), campaign.index_of(["686"])[0]
    assert campaign.score(HUMAN)[item, uf] == 1.00232936586798 and campaign.score(HUMAN_RAW)[item, uf] == 95
    assert campaign.score(HUMAN_N)[item, uf] == 4 and campaign.doc[item] == "wn.de.700458"


@pytest.mark.realdata
def test_real_wmt22_liv_en(toen_root):
    campaign = load_wmt_release(toen_root, "wmt22/liv-en")
    assert (len(campaign), len(campaign.systems)) == (420, 5)
    assert campaign.info["human scores"].endswith(
        "ad-seg-scores-lv-en.csv (crowd DA: human = Z.SCR, human_raw = RAW.SCR, human_n = N, the judgements behind"
        " each cell)"
    )
    assert campaign.info["human coverage"] == "391 of 420 items scored for every system, 420 for at least one"
    assert (~np.isnan(campaign.score(HUMAN))).mean() > 0.95


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@pytest.mark.realdata
def test_real_all_13_campaigns(toen_root):
    assert list_release_campaigns(toen_root) == sorted(REAL)
    for name, shape in REAL.items():
        campaign = load_wmt_release(toen_root, name)
        assert (len(campaign), len(campaign.systems)) == shape, name
        assert campaign.score(HUMAN).shape == shape and campaign.protocol == "da", name
        assert not any(s.startswith(("HUMAN", "Nemo")) for s in campaign.systems), name
        scored = ~np.isnan(campaign.score(HUMAN))
        assert scored.any(axis=1).all(), name
        assert scored[:, scored.any(axis=0)].mean() > 0.8, name
        assert np.isnan(campaign.score(HUMAN)).tolist() == np.isnan(campaign.score(HUMAN_RAW)).tolist(), name


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@pytest.mark.realdata
def test_every_sid_map_file_is_the_loaders_alignment(toen_root):
    """For all 14 campaigns: sid_lines on documents/<pair>.docs equals sid-map/<pair>.tsv row for row, and every
    row of the segment-score file lands, through the loader, on the line the sid-map names."""
    from precomet.io.wmt_release import read_documents

    maps = sorted(toen_root.glob("wmt*/sid-map/*.tsv"))
    assert len(maps) == 14
    for path in maps:
        year, pair = path.parent.parent.name, path.stem
        rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
        n = len(rows)
        _, docids = read_documents(toen_root / year / "documents" / f"{pair}.docs", n)
        assert [line + 1 for line in sid_lines(docids)] == [int(r[1]) for r in rows], path
        assert [int(r[0]) for r in rows] == list(range(1, n + 1)) and [docids[int(r[1]) - 1] for r in rows] == [
            r[2] for r in rows
        ], path
        campaign = load_wmt_release(toen_root, f"{year}/{pair}")
        line_of = {int(r[0]): int(r[1]) - 1 for r in rows}
        csv = next((toen_root / year / "humaneval").rglob(f"ad-seg-scores-{'lv-en' if pair == 'liv-en' else pair}.csv"))
        checked = 0
        for text in csv.read_text(encoding="utf-8").splitlines()[1::97]:  # every 97th row
            system, sid, raw, z, count = text.split()
            name = system if system in campaign.systems else system.rsplit(".", 1)[0]
            if name not in campaign.systems or str(line_of[int(sid)]) not in set(campaign.ids):
                continue
            item, j = campaign.index_of([str(line_of[int(sid)])])[0], campaign.systems.index(name)
            assert campaign.score(HUMAN)[item, j] == float(z) and campaign.score(HUMAN_N)[item, j] == int(count)
            checked += 1
        assert checked > 20, path


@pytest.mark.realdata
@pytest.mark.slow
def test_aligned_da_agrees_with_chrf_in_every_campaign(toen_root):
    """The symptom the alignment cures: within-system Pearson of DA z with sentence chrF is positive (> 0.1) in
    every campaign once aligned (it was ~0.01 with SID read as the line)."""
    from precomet.utilities.reference import reference_scores

    for name in list_release_campaigns(toen_root):
        campaign = load_wmt_release(toen_root, name)
        chrf = reference_scores(campaign, "chrf")
        human = campaign.score(HUMAN)
        ok = ~np.isnan(human) & ~np.isnan(chrf)
        a = np.where(ok, human, np.nan) - np.nanmean(np.where(ok, human, np.nan), axis=0)
        b = np.where(ok, chrf, np.nan) - np.nanmean(np.where(ok, chrf, np.nan), axis=0)
        assert np.corrcoef(a[ok], b[ok])[0, 1] > 0.1, name
