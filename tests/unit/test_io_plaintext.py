"""Plain-text sources (issue 21): one source per line, ids = 1-based line numbers, --docs/--domains alongside,
blank lines refused with file:line, sources-only campaigns refused where outputs or scores are needed."""

from __future__ import annotations

import json

import pytest

from precomet.cli import main
from precomet.errors import DataError, PrecometError
from precomet.io import detect_format, load
from precomet.io.plaintext import is_sources_only, load_text


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_three_lines_are_three_items_with_line_number_ids(tmp_path):
    path = _write(tmp_path / "sources.txt", "Hello, world.\n  Spaces kept  \nDritte Zeile\n")
    campaign = load(path)
    assert list(campaign.ids) == ["1", "2", "3"]
    assert list(campaign.src) == ["Hello, world.", "  Spaces kept  ", "Dritte Zeile"]
    assert list(campaign.doc) == ["1", "2", "3"] and set(campaign.domain) == {"all"}
    assert campaign.systems == () and not campaign.outputs and not campaign.scores and campaign.ref is None
    assert is_sources_only(campaign) and campaign.name == "sources"
    assert detect_format(path) == "text"


def test_crlf_and_no_final_newline(tmp_path):
    path = _write(tmp_path / "s.TXT", "a\r\nb")
    assert list(load(path).src) == ["a", "b"]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_universal_newlines_in_sources_docs_and_domains(tmp_path, ending):
    path = _write(tmp_path / "s.txt", ending.join(["one", "two", "three"]) + ending)
    docs = _write(tmp_path / "docs.txt", "d1\rd1\r\nd2\n")  # mixed line ends in one file
    campaign = load_text(path, docs=docs)
    assert list(campaign.src) == ["one", "two", "three"] and list(campaign.doc) == ["d1", "d1", "d2"]


def test_unicode_separators_stay_inside_a_line(tmp_path):
    path = _write(tmp_path / "s.txt", "one\u2028still one\u0085and\x0cone\ntwo\n")
    assert list(load(path).src) == ["one\u2028still one\u0085and\x0cone", "two"]


def test_text_switch_reads_any_name_and_other_suffixes_are_not_text(tmp_path):
    path = _write(tmp_path / "sources.src", "one\ntwo\n")
    with pytest.raises(DataError, match="unsupported input format"):
        load(path)
    assert list(load(path, text=True).ids) == ["1", "2"]
    assert detect_format(path, text=True) == "text"
    with pytest.raises(DataError, match="is a directory"):
        load(tmp_path, text=True)


@pytest.mark.parametrize(
    "text, line",
    [
        ("a\n\nb\n", 2),
        ("a\nb\n   \n", 3),
        ("\na\n", 1),
        ("a\nb\n\n", 3),
        ("a\r\rb\r", 2),
        ("a\n\u200b\nb\n", 2),
        ("a\nb\n\ufeff\u200e\n", 3),
        ("a\n\u2060 \u00a0\n", 2),
    ],
)
def test_blank_line_refused_naming_file_and_line(tmp_path, text, line):
    path = _write(tmp_path / "s.txt", text)
    with pytest.raises(DataError, match=f"s.txt:{line}: blank line"):
        load(path)


def test_empty_file_refused(tmp_path):
    with pytest.raises(DataError, match="s.txt: empty file"):
        load(_write(tmp_path / "s.txt", ""))


def test_docs_and_domains_alongside(tmp_path):
    src = _write(tmp_path / "s.txt", "a\nb\nc\n")
    docs = _write(tmp_path / "docs.txt", "d1\nd2\nd1\n")
    domains = _write(tmp_path / "domains.txt", "news\nchat\nnews\n")
    campaign = load_text(src, docs=docs, domains=domains)
    assert list(campaign.doc) == ["d1", "d2", "d1"] and list(campaign.domain) == ["news", "chat", "news"]
    assert list(load(src, docs=docs).doc) == ["d1", "d2", "d1"]


@pytest.mark.parametrize("option", ["docs", "domains"])
@pytest.mark.parametrize(
    "content, says",
    [
        ("x\ny\n", r"2 lines, but .*s.txt has 3 sources.*ends early"),
        ("x\ny\nz\nw\n", r":4: 4 lines, but .*s.txt has 3 sources.*no source"),
        ("x\n\nz\n", r":2: blank line"),
    ],
)
def test_alongside_of_wrong_length_or_blank_refused_naming_the_file(tmp_path, option, content, says):
    src = _write(tmp_path / "s.txt", "a\nb\nc\n")
    other = _write(tmp_path / f"{option}.lst", content)
    with pytest.raises(DataError, match=f"{option}.lst{'' if says.startswith(':') else ': '}{says}"):
        load(src, **{option: other})


def test_docs_on_a_non_text_input_refused(tmp_path):
    items = _write(tmp_path / "items.jsonl", json.dumps({"id": "a", "src": "x"}) + "\n")
    docs = _write(tmp_path / "docs.txt", "d\n")
    with pytest.raises(PrecometError, match="apply to plain-text sources"):
        load(items, docs=docs)


def test_human_on_text_refused(tmp_path):
    with pytest.raises(PrecometError, match="no human scores"):
        load(_write(tmp_path / "s.txt", "a\n"), human="mqm")


def test_info_and_convert_on_text(tmp_path, capsys):
    src = _write(tmp_path / "s.txt", "Hello, world\nSecond\n")
    domains = _write(tmp_path / "dom.txt", "news\nchat\n")
    assert main(["info", "--data", str(src), "--domains", str(domains)]) == 0
    out = capsys.readouterr().out
    assert "items      2 in 2 documents; domains: chat 1, news 1" in out and "sources only" in out
    converted = tmp_path / "c.jsonl"
    assert main(["convert", "--data", str(src), "-o", str(converted)]) == 0
    rows = [json.loads(line) for line in converted.read_text().splitlines()]
    assert [(r["id"], r["src"]) for r in rows] == [("1", "Hello, world"), ("2", "Second")]
    assert list(load(converted).src) == ["Hello, world", "Second"]


def test_cli_text_switch_and_docs_on_jsonl(tmp_path, capsys):
    src = _write(tmp_path / "sources.lst", "a\nb\n")
    assert main(["info", "--data", str(src), "--text"]) == 0
    items = _write(tmp_path / "items.jsonl", json.dumps({"id": "a", "src": "x"}) + "\n")
    assert main(["info", "--data", str(items), "--docs", str(src)]) == 2
    assert "--docs applies to plain-text sources (a .txt file, or --text)" in capsys.readouterr().err


def test_select_metric_var_on_text_refused_with_what_to_pass(tmp_path, capsys):
    src = _write(tmp_path / "s.txt", "a\nb\nc\n")
    out = tmp_path / "subset.jsonl"
    argv = ["select", "--data", str(src), "--method", "metric_var", "--metric", "m", "--budget", "2", "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--method metric_var needs system outputs and scores" in err
    assert "for sources only use --checkpoint (predicted utilities)" in err
    assert not out.exists()


def test_select_system_free_method_on_text(tmp_path):
    src = _write(tmp_path / "s.txt", "a\nb\nc\nd\n")
    out = tmp_path / "subset.jsonl"
    assert main(["select", "--data", str(src), "--method", "random", "--budget", "2", "-o", str(out)]) == 0
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} <= {"1", "2", "3", "4"}


def test_sources_only_text_converts_to_parquet_and_back(tmp_path, capsys):
    """Issue 34: Parquet has no struct without fields, so a campaign without systems is written without them."""
    path = _write(tmp_path / "s.txt", "one\ntwo words\n")
    out = tmp_path / "s.parquet"
    assert main(["convert", "--data", str(path), "-o", str(out)]) == 0
    again = load(out)
    assert list(again.ids) == ["1", "2"] and list(again.src) == ["one", "two words"] and is_sources_only(again)
    capsys.readouterr()
