"""BENCHMARKS.md is assembled, never edited; every results file names its command; every number of the hand-written
findings and of the documentation's claims is in the results they read (``benchmarks/check_numbers.py`` lists
them all)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import check_numbers as check  # noqa: E402  (benchmarks/check_numbers.py)
from assemble_benchmarks_md import FINDINGS, SECTIONS, render  # noqa: E402
from regenerate import REGISTRY, chosen  # noqa: E402


def test_benchmarks_md_is_what_the_assembler_makes():
    assert (REPO / "BENCHMARKS.md").read_text(encoding="utf-8") == render(), (
        "BENCHMARKS.md was edited by hand or not reassembled: run .venv/bin/python benchmarks/assemble_benchmarks_md.py"
    )


def test_every_results_file_is_a_generated_section_with_its_command():
    problems = [p for p in check.structure_problems() if "BENCHMARKS.md" not in p and "not generated yet" not in p]
    assert problems == []


def test_every_section_has_been_generated():
    assert [p for p in check.structure_problems() if "not generated yet" in p] == []


def test_every_published_number_traces_to_a_results_file():
    assert check.untraced() == []


def test_registry_names_are_unique_and_every_output_is_a_section():
    names = [b.name for b in REGISTRY]
    assert len(names) == len(set(names))
    sections = {name for name, _ in SECTIONS}
    assert {n for b in REGISTRY for n in b.writes if n.endswith(".md")} <= sections - FINDINGS
    assert all(not b.expensive for b in chosen(None, everything=False))
    assert {b.name for b in chosen(None, everything=True)} == set(names)


def test_numbers_skip_code_names_versions_dates_and_references():
    text = (
        "wmt23 en-de with MetricX-23-c, subset2evaluate 1.0.27, on 2026-11-23 (issue 11, Table 4, Eq. 12): "
        "`bench.py --seeds 100`, 5 runs, goal ≤ 30 s; measured 95.21 SPA, 66 %, 7,525 sources, 5 %, 1.9× and 460 items."
    )
    assert [n for n, _ in check.numbers(text)] == ["95.21", "66", "7525", "5", "1.9", "460"]


@pytest.fixture
def results(tmp_path):
    """A results folder: one script-written table and its findings, and a README with one claims paragraph."""
    (tmp_path / "cost-aware.md").write_text("Command: `x`\n\n| a | 95.21 | 0.66 |\n| b | 1,234 |\n")
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "run.json").write_text('{"spa": 0.97366, "n": [12, 3]}')
    readme = tmp_path / "README.md"
    readme.write_text(
        "<!-- claims: benchmarks/results/deep/ -->\nSPA 97.37 and 97.4 on 12 systems.\n<!-- /claims -->\n"
    )
    return tmp_path, readme


def test_a_number_traces_when_the_results_it_reads_show_it(results):
    folder, readme = results
    findings = folder / "cost-aware-findings.md"
    findings.write_text("Reads: benchmarks/results/cost-aware.md\n\nSPA 95.21 (95.2), 1234 items, 0.66 and 0.7.\n")
    assert check.untraced(folder, [readme]) == []


def test_an_invented_number_or_one_of_another_run_does_not_trace(results):
    folder, readme = results
    findings = folder / "cost-aware-findings.md"
    findings.write_text("Reads: benchmarks/results/cost-aware.md\n\nSPA 95.22, 97.37 (in deep/, not read here).\n")
    readme.write_text(readme.read_text().replace("97.4", "97.5"))
    assert [line.split(" (")[0] for line in check.untraced(folder, [readme])] == [
        "benchmarks/results/cost-aware-findings.md: 95.22",
        "benchmarks/results/cost-aware-findings.md: 97.37",
        "README.md claims 1: 97.5",
    ]


def test_claims_of_the_docs_and_the_checkpoint_readme_are_checked_too():
    labels = {label.split(" claims")[0] for label in check.readings() if " claims " in label}
    assert {"README.md", "docs/estimator.md", "docs/pairwise.md", "checkpoints/README.md"} <= labels
