"""WMT release layout (wmtYY/txt/{sources,references,system-outputs}): tiny hand-made fixture, errors, CLI,
and the 22 real campaigns of ../shared/data/raw/wmt-news-systems."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import estimate_cost
from precomet.cli import main
from precomet.errors import DataError, PrecometError
from precomet.io import (
    detect_format,
    is_wmt_release_root,
    list_campaigns,
    list_release_campaigns,
    load,
    load_wmt_release,
)
from precomet.io.utility_files import read_utilities

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROOT = FIXTURES / "wmt_release_tiny"
TINY = ["wmt21/en-de", "wmt21/en-ja", "wmt22/en-de"]


@pytest.fixture
def root_copy(tmp_path) -> Path:
    root = tmp_path / "release"
    shutil.copytree(ROOT, root)
    return root


# ---------------------------------------------------------------------------------------------- loading
def test_campaign_names_and_detection():
    assert list_release_campaigns(ROOT) == TINY
    assert list_campaigns(ROOT) == TINY
    assert is_wmt_release_root(ROOT)
    assert detect_format(ROOT) == "wmt-release"


def test_tiny_campaign_hand_computed():
    campaign = load(ROOT, campaign="wmt21/en-de")
    assert campaign.name == "wmt21/en-de" and campaign.lp == "en-de" and campaign.protocol is None
    assert campaign.systems == ("Allegro.eu", "Online-A", "sysB")  # sorted; a dot inside a system name is kept
    assert list(campaign.ids) == ["0", "1", "2"]
    assert list(campaign.src) == ["The cat sat.", "It rained.", "Good night."]
    assert list(campaign.outputs["Allegro.eu"]) == ["Katze saß.", "Regen.", "Nacht."]
    assert list(campaign.outputs["sysB"]) == ["Die Katze sitzt.", "Es regnet.", "Gute Nacht."]
    assert list(campaign.ref) == ["Die Katze saß.", "Es regnete.", "Gute Nacht."]  # ref A, not B
    assert campaign.info["reference"] == "A (first by name); also available: B"
    assert campaign.info["testset"] == "newstest2021"
    assert "no documents/<pair>.docs" in campaign.info["layout"]
    assert "dropped" not in campaign.info and "empty outputs" not in campaign.info
    assert campaign.scores == {}
    assert list(campaign.doc) == ["0", "1", "2"]
    assert list(campaign.domain) == ["all", "all", "all"]
    np.testing.assert_allclose(campaign.cost, [0.15 * 12 + 33.7, 0.15 * 10 + 33.7, 0.15 * 11 + 33.7])
    np.testing.assert_allclose(campaign.cost, estimate_cost(campaign.src))


def test_three_part_name_is_accepted_and_kept_as_the_name():
    campaign = load_wmt_release(ROOT, "wmt21/newstest2021/en-ja")
    assert campaign.name == "wmt21/newstest2021/en-ja" and campaign.lp == "en-ja"
    assert campaign.systems == ("X", "Y")
    assert list(campaign.ref) == ["猫が座った。", "雨が降った。", "おやすみ。"]
    assert campaign.info["reference"] == "A (first by name)"


def test_empty_source_line_dropped_crlf_and_bom_removed():
    assert b"\r\n" in (ROOT / "wmt22/txt/references/generaltest2022.en-de.ref.A.de").read_bytes()
    assert (ROOT / "wmt22/txt/system-outputs/generaltest2022.en-de.hyp.M1.de").read_bytes().startswith(b"\xef\xbb\xbf")
    campaign = load(ROOT, campaign="wmt22/en-de")
    assert list(campaign.ids) == ["0", "2", "3"]  # line 1 is whitespace only
    assert list(campaign.src) == ["Hello.", "A new day.", "Bye."]
    assert list(campaign.ref) == ["Hallo.", "Ein neuer Tag.", "Tschüss."]  # no '\r'
    assert list(campaign.outputs["M1"]) == ["Hallo.", "Ein neuer Tag.", "Tschüss."]  # no BOM
    assert list(campaign.outputs["M2"]) == ["Hallo!", "Neuer Tag.", ""]
    assert campaign.info["dropped"] == "1 lines with an empty source (0-based lines 1) of generaltest2022.en-de.src.en"
    assert campaign.info["empty outputs"] == "M2 1"
    assert campaign.info["reference"] == "A (first by name)"


def test_several_test_sets_for_one_pair(root_copy):
    (root_copy / "wmt22/txt/sources/florestest2022.en-de.src.en").write_text("One.\nTwo.\n", encoding="utf-8")
    (root_copy / "wmt22/txt/system-outputs/florestest2022.en-de.hyp.F.de").write_text(
        "Eins.\nZwei.\n", encoding="utf-8"
    )
    names = ["wmt21/en-de", "wmt21/en-ja", "wmt22/florestest2022/en-de", "wmt22/generaltest2022/en-de"]
    assert list_release_campaigns(root_copy) == names
    with pytest.raises(
        DataError,
        match=r"wmt22: campaign 'wmt22/en-de' is ambiguous: 2 test sets for en-de; choose one of"
        r" \['wmt22/florestest2022/en-de', 'wmt22/generaltest2022/en-de'\]",
    ):
        load(root_copy, campaign="wmt22/en-de")
    flores = load(root_copy, campaign="wmt22/florestest2022/en-de")
    assert flores.systems == ("F",) and list(flores.outputs["F"]) == ["Eins.", "Zwei."] and flores.ref is None
    assert flores.info["reference"] == "none"
    assert load(root_copy, campaign="wmt22/generaltest2022/en-de").systems == ("M1", "M2")


# ---------------------------------------------------------------------------------------------- detection
def test_detection_does_not_collide_with_other_roots(tmp_path):
    mtme = tmp_path / "mtme"
    (mtme / "wmt23" / "sources").mkdir(parents=True)
    (mtme / "wmt23" / "sources" / "en-de.txt").write_text("a\n", encoding="utf-8")
    assert detect_format(mtme) == "mt-metrics-eval" and not is_wmt_release_root(mtme)
    esa = FIXTURES / "esa_tiny"
    assert detect_format(esa) == "wmt24-esa" and not is_wmt_release_root(esa)
    assert list_campaigns(esa) == ["en-cs"]
    # a parent holding an ESA root named wmt24-esa (txt/sources/<lp>.txt) is not a release root
    parent = tmp_path / "raw"
    shutil.copytree(esa, parent / "wmt24-esa")
    assert not is_wmt_release_root(parent)
    with pytest.raises(DataError, match="neither an mt-metrics-eval root"):
        detect_format(parent)


def test_list_campaigns_refuses_single_campaign_inputs():
    with pytest.raises(PrecometError, match=r"tiny.csv: a csv input holds a single campaign"):
        list_campaigns(FIXTURES / "tiny.csv")


def test_a_year_directory_points_to_its_parent():
    with pytest.raises(
        DataError, match=r"wmt22: this is one year of a WMT release: pass its parent .*wmt_release_tiny"
    ):
        load(ROOT / "wmt22", campaign="wmt22/en-de")


# ---------------------------------------------------------------------------------------------- errors
def test_output_with_wrong_line_count_names_both_files_and_counts(root_copy):
    (root_copy / "wmt21/txt/system-outputs/newstest2021.en-de.hyp.sysB.de").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"newstest2021.en-de.hyp.sysB.de: system 'sysB': 2 lines, but the sources file"
        r" .*wmt21/txt/sources/newstest2021.en-de.src.en has 3",
    ):
        load_wmt_release(root_copy, "wmt21/en-de")


def test_second_reference_with_wrong_line_count(root_copy):
    (root_copy / "wmt21/txt/references/newstest2021.en-de.ref.B.de").write_text("a\nb\nc\nd\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"newstest2021.en-de.ref.B.de: reference 'B': 4 lines, but .*en-de.src.en has 3"
    ):
        load(root_copy, campaign="wmt21/en-de")


def test_unknown_campaign_lists_the_valid_ones():
    with pytest.raises(
        DataError,
        match=r"wmt_release_tiny: unknown campaign 'wmt21/en-xx'; found"
        r" \['wmt21/en-de', 'wmt21/en-ja', 'wmt22/en-de'\]",
    ):
        load_wmt_release(ROOT, "wmt21/en-xx")


def test_missing_sources_file_is_named(root_copy):
    (root_copy / "wmt21/txt/sources/newstest2021.en-ja.src.en").unlink()
    assert list_release_campaigns(root_copy) == ["wmt21/en-de", "wmt22/en-de"]
    with pytest.raises(
        DataError,
        match=r"wmt21/txt/sources/newstest2021.en-ja.src.en: no such file: campaign 'wmt21/en-ja' has 3"
        r" output/reference file\(s\) .* but no sources file",
    ):
        load(root_copy, campaign="wmt21/en-ja")


def test_root_without_any_campaign(tmp_path):
    empty = tmp_path / "empty"
    (empty / "wmt22" / "txt" / "sources").mkdir(parents=True)
    (empty / "wmt22" / "txt" / "sources" / "README").write_text("nothing\n", encoding="utf-8")
    for call in (list_release_campaigns, lambda root: load_wmt_release(root, "wmt22/en-de")):
        with pytest.raises(DataError, match=r"empty: no WMT release campaign found: expected files wmtYY/txt/sources/"):
            call(empty)
    with pytest.raises(DataError, match=r"empty: directory is neither"):
        load(empty)


def test_output_file_without_the_target_language_suffix(root_copy):
    (root_copy / "wmt21/txt/system-outputs/newstest2021.en-de.hyp.sysC.txt").write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"newstest2021.en-de.hyp.sysC.txt: expected a file name .*<name>.de"):
        load(root_copy, campaign="wmt21/en-de")


def test_campaign_required_and_no_human_protocol():
    found = r"\['wmt21/en-de', 'wmt21/en-ja', 'wmt22/en-de'\]"
    with pytest.raises(PrecometError, match=r"needs campaign=NAME; found " + found):
        load(ROOT)
    for human in ("human", "mqm"):
        with pytest.raises(PrecometError, match=rf"has no human scores; human='{human}' is not available"):
            load(ROOT, campaign="wmt21/en-de", human=human)


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_info_convert_and_jsonl_round_trip(tmp_path, capsys):
    assert main(["info", "--data", str(ROOT), "--campaign", "wmt21/en-de"]) == 0
    out = capsys.readouterr().out
    assert "systems    3: Allegro.eu, Online-A, sysB" in out
    assert "scores     none" in out
    assert "note       reference: A (first by name); also available: B" in out
    jsonl = tmp_path / "x.jsonl"
    assert main(["convert", "--data", str(ROOT), "--campaign", "wmt22/en-de", "-o", str(jsonl)]) == 0
    assert "wrote 3 items" in capsys.readouterr().out
    first = json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])
    assert first == {
        "id": "0",
        "src": "Hello.",
        "ref": "Hallo.",
        "tgt": {"M1": "Hallo.", "M2": "Hallo!"},
        "cost": 0.15 * 6 + 33.7,
        "domain": "all",
        "doc": "0",
        "campaign": "wmt22/en-de",
        "lp": "en-de",
    }
    assert main(["info", "--data", str(jsonl)]) == 0
    assert "items      3 in 3 documents" in capsys.readouterr().out
    back = load(jsonl)
    assert back.name == "wmt22/en-de" and back.lp == "en-de" and back.scores == {} and back.systems == ("M1", "M2")
    assert list(back.ids) == ["0", "2", "3"] and list(back.outputs["M2"]) == ["Hallo!", "Neuer Tag.", ""]


def test_cli_score_utilities_fail_in_one_line(tmp_path, capsys):
    base = ["utilities", "--data", str(ROOT), "--campaign", "wmt21/en-ja", "-o", str(tmp_path / "u.jsonl")]
    for extra in ([], ["--metric", "human"]):
        assert main(base + ["--method", "metric_var", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(
            "precomet utilities: error: utility 'metric_var' needs scores, but campaign 'wmt21/en-ja' has none"
        )
        assert "utilities that need no score: diversity" in err


def test_cli_diversity_runs_on_outputs_only(tmp_path):
    out = tmp_path / "u.jsonl"
    args = ["utilities", "--data", str(ROOT), "--campaign", "wmt21/en-ja", "--method", "diversity"]
    assert main(args + ["--option", "similarity=chrf", "-o", str(out)]) == 0
    ids, values, signature = read_utilities(out)
    assert ids == ["0", "1", "2"] and signature["campaign"] == "wmt21/en-ja"
    assert values[0] == 0  # both systems wrote the same output
    assert (values[1:] > 0).all() and (values <= 1).all()


# ---------------------------------------------------------------------------------------------- real data
# (lines, systems, references) per campaign: systems from SOURCES.md §8, lines and references counted in the files
REAL = {
    "wmt21/en-cs": (1002, 10, "A", ["B"]),
    "wmt21/en-de": (1002, 20, "A", ["C", "D"]),
    "wmt21/en-ha": (1000, 14, "A", []),
    "wmt21/en-is": (1000, 11, "A", []),
    "wmt21/en-ja": (1000, 15, "A", []),
    "wmt21/en-ru": (1002, 9, "A", ["B"]),
    "wmt21/en-zh": (1002, 29, "A", ["B"]),
    "wmt22/en-cs": (2037, 10, "B", ["C"]),
    "wmt22/en-de": (2037, 9, "A", ["B"]),
    "wmt22/en-hr": (1671, 9, "A", ["stud"]),
    "wmt22/en-ja": (2037, 13, "A", []),
    "wmt22/en-liv": (420, 5, "A", []),
    "wmt22/en-ru": (2037, 11, "A", []),
    "wmt22/en-uk": (2037, 9, "A", []),
    "wmt22/en-zh": (2037, 13, "A", ["B"]),
    "wmt23/en-cs": (2074, 15, "refA", []),
    "wmt23/en-de": (557, 12, "refA", []),
    "wmt23/en-he": (2074, 12, "refA", ["refB"]),
    "wmt23/en-ja": (2074, 16, "refA", []),
    "wmt23/en-ru": (2074, 12, "refA", []),
    "wmt23/en-uk": (2074, 11, "refA", []),
    "wmt23/en-zh": (2074, 15, "refA", []),
}


@pytest.fixture
def release_root(raw_data) -> Path:
    root = raw_data / "wmt-news-systems"
    if not root.exists():
        pytest.skip(f"WMT release data not found at {root}")
    return root


@pytest.mark.realdata
def test_real_release_all_22_campaigns(release_root):
    assert detect_format(release_root) == "wmt-release"
    assert list_campaigns(release_root) == sorted(REAL)
    distinct = set()
    for name, (lines, n_systems, ref, others) in REAL.items():
        campaign = load(release_root, campaign=name)
        assert (len(campaign), len(campaign.systems)) == (lines, n_systems), name
        assert campaign.lp == name.split("/")[1] and campaign.name == name
        assert list(campaign.ids) == [str(i) for i in range(lines)]  # no empty source line in the release
        assert "dropped" not in campaign.info
        expected = f"{ref} (first by name)" + (f"; also available: {', '.join(others)}" if others else "")
        assert campaign.info["reference"] == expected, name
        assert campaign.scores == {} and campaign.ref is not None
        assert not any(text.startswith("\ufeff") for s in campaign.systems for text in campaign.outputs[s][:1])
        distinct.update(campaign.src)
    assert len(distinct) == 7556  # SOURCES.md §8


@pytest.mark.realdata
def test_real_release_oddities(release_root):
    assert "Allegro.eu" in load(release_root, campaign="wmt21/en-is").systems
    assert load(release_root, campaign="wmt22/en-ja").info["empty outputs"] == "Online-W 2"
    assert load(release_root, campaign="wmt23/en-ru").info["empty outputs"] == "ONLINE-W 1"
    raw = (release_root / "wmt23/txt/system-outputs/generaltest2023.en-de.hyp.AIRC.de").read_bytes()
    airc = load(release_root, campaign="wmt23/en-de").outputs["AIRC"]
    assert raw.startswith(b"\xef\xbb\xbf") and airc[0] == raw[3:].decode("utf-8").split("\n")[0]
