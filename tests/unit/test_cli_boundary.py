"""The boundary between the library and the CLI: library errors name parameters (a Python caller never reads about
command-line options), the CLI shows the options; ``cli.main`` run in-process leaves the caller's warning filters,
logging and progress setting as they were."""

from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pytest

from precomet import cli
from precomet.benchmark import BenchmarkPlan, parse_props, run_benchmark
from precomet.errors import DataError, PrecometError
from precomet.io import load, write_jsonl
from precomet.progress import progress_enabled
from precomet.simulate import simulate_campaign
from precomet.utilities import compute_utility
from tests.conftest import FIXTURES


@pytest.fixture
def simulated(tmp_path):
    path = tmp_path / "sim.jsonl"
    campaign = simulate_campaign(n_items=60, n_systems=3, seed=0)
    write_jsonl(campaign, path)
    return campaign, path


def library_calls(campaign):
    """Calls that used to raise messages naming CLI options, and the parameter each message must name instead."""
    return [
        (lambda: load(FIXTURES / "esa_tiny"), "campaign=NAME"),
        (lambda: load(FIXTURES / "wmt_release_tiny", campaign="wmt21/en-de", human="mqm"), "human='mqm'"),
        (lambda: parse_props("1:x"), "props='1:x'"),
        (lambda: run_benchmark(campaign, BenchmarkPlan(methods=["metric_var"], seeds=2, oracle=False)), "metric=NAME"),
        (lambda: run_benchmark(campaign, BenchmarkPlan(methods=[], seeds=2, oracle=False)), "methods=..."),
        (
            lambda: run_benchmark(campaign, BenchmarkPlan(methods=["nope"], seeds=2, oracle=False)),
            "external={NAME: utilities}",
        ),
        (
            lambda: run_benchmark(
                campaign, BenchmarkPlan(methods=["metric_var"], metric="MetricSim", props=[0.01], oracle=False)
            ),
            "props=...",
        ),
        (
            lambda: run_benchmark(
                campaign, BenchmarkPlan(methods=["metric_var"], metric="MetricSim", seeds=0, oracle=False)
            ),
            "seeds=0",
        ),
    ]


def test_a_python_caller_reads_parameter_names_not_options(simulated):
    campaign, _ = simulated
    for call, parameter in library_calls(campaign):
        with pytest.raises(PrecometError) as error:
            call()
        assert parameter in str(error.value)
        assert "--" not in str(error.value), str(error.value)


def test_a_missing_score_error_names_the_option_not_the_cli_flag():
    campaign = simulate_campaign(n_items=5, n_systems=2, seed=0)
    matrix = campaign.score("MetricSim").copy()
    matrix[0, 0] = np.nan
    with pytest.raises(PrecometError, match=r"options=\{'missing': 'exclude'\}") as error:
        compute_utility(campaign.with_scores("MetricSim", matrix), "metric_var", metric="MetricSim")
    assert "--" not in str(error.value)


def test_a_library_error_names_its_parameter(simulated):
    campaign, _ = simulated
    with pytest.raises(PrecometError) as error:
        run_benchmark(campaign, BenchmarkPlan(methods=["metric_var"], seeds=2, oracle=False))
    assert error.value.param == "metric" and error.value.params == ("metric",)
    assert "(metric=NAME)" in str(error.value)
    assert "(--metric NAME)" in error.value.spelled(cli.OPTIONS)


@pytest.mark.parametrize(
    ("error", "python", "shown"),
    [
        (
            PrecometError("x: needs {campaign}NAME", param="campaign"),
            "x: needs campaign=NAME",
            "x: needs --campaign NAME",
        ),
        (PrecometError("{human}'mqm' is not available", param="human"), "human='mqm' is", "--human 'mqm' is"),
        (
            PrecometError("(or {external})", param="external"),
            "(or external={NAME: utilities})",
            "(or --utility-file NAME=FILE)",
        ),
        (
            PrecometError("raise {time_limit}... or pass {allow_gap}", param=("time_limit", "allow_gap")),
            "raise time_limit=... or pass allow_gap=True",
            "raise --time-limit ... or pass --allow-gap",
        ),
        (
            PrecometError("pass {options}", param="options"),
            "pass options={'missing': 'exclude'}",
            "pass --exclude-missing",
        ),
        (PrecometError("{seeds}0: needs 1 seed", param="seeds"), "seeds=0: needs 1 seed", "--seeds 0: needs 1 seed"),
        (
            PrecometError("{metric} and {props} stay", param="props"),
            "{metric} and props= stay",
            "{metric} and --props  stay",
        ),
        (
            PrecometError("{'a': 1} for {metric}NAME", param="metric"),
            "{'a': 1} for metric=NAME",
            "{'a': 1} for --metric NAME",
        ),
        (
            DataError("f.jsonl", "give {metric}NAME", line=3, param="metric"),
            "f.jsonl:3: give metric=NAME",
            "f.jsonl:3: give --metric NAME",
        ),
    ],
)
def test_errors_spell_parameters_for_python_and_the_cli(error, python, shown):
    assert python in str(error)
    assert shown in error.spelled(cli.OPTIONS)


def test_cli_shows_the_option_for_a_library_error(capsys):
    assert cli.main(["info", "--data", str(FIXTURES / "esa_tiny")]) == 2
    assert "needs --campaign NAME; found ['en-cs']" in capsys.readouterr().err


def test_cli_benchmark_error_names_options(simulated, tmp_path, capsys):
    _, path = simulated
    argv = [
        "benchmark",
        "--data",
        str(path),
        "--methods",
        "metric_var",
        "--props",
        "0.5",
        "-o",
        str(tmp_path / "b.json"),
    ]
    assert cli.main(argv) == 2
    assert "(--metric NAME)" in capsys.readouterr().err


def test_main_in_process_leaves_warnings_logging_and_progress_as_they_were(simulated, tmp_path, monkeypatch):
    _, path = simulated
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a plain interpreter: main's logging.basicConfig then acts
    monkeypatch.setattr(root, "level", logging.ERROR)
    filters, level = list(warnings.filters), root.level
    progress = progress_enabled()
    for argv in (
        ["info", "--data", str(path)],
        ["-v", "--no-progress", "info", "--data", str(path)],
        ["info", "--data", str(tmp_path / "missing.jsonl")],
        [
            "benchmark",
            "--data",
            str(path),
            "--methods",
            "metric_var",
            "--metric",
            "MetricSim",
            "--seeds",
            "2",
            "--props",
            "0.5",
            "--permutations",
            "10",
            "--no-oracle",
            "-o",
            str(tmp_path / "b.json"),
        ],
    ):
        cli.main(argv)
        assert warnings.filters == filters, argv
        assert root.handlers == [] and root.level == level, argv
        assert progress_enabled() == progress, argv


def test_errors_a_reviewer_found_in_python_syntax_name_the_cli_options(tmp_path, capsys):
    """Library errors that suggested ``budget=100``, ``balance='domain'`` or ``text=True`` on the command line."""
    items = tmp_path / "items.jsonl"
    items.write_text("".join(f'{{"id": "{i}", "src": "s{i}", "domain": "{"ab"[i % 2]}"}}\n' for i in range(4)))
    assert cli.main(["utilities", "--data", str(items), "--method", "kmeans", "-o", str(tmp_path / "u.jsonl")]) == 2
    assert "e.g. --budget 100" in capsys.readouterr().err
    argv = ["select", "--data", str(items), "--method", "random", "--budget", "2", "-o", str(tmp_path / "s.jsonl")]
    assert cli.main([*argv, "--balance", "domain", "--quotas", '{"a": 1, "b": 1}']) == 2
    assert "give either --balance domain or --quotas, not both" in capsys.readouterr().err
    assert cli.main(["info", "--data", str(tmp_path), "--text"]) == 2
    assert "is a directory; --text reads a file of sources" in capsys.readouterr().err
    for call, python in [
        (lambda: compute_utility(load(items), "kmeans"), "e.g. budget=100"),
        (lambda: load(tmp_path, text=True), "text=True reads a file"),
    ]:
        with pytest.raises(PrecometError, match=re.escape(python)):
            call()


def test_a_sources_file_of_another_suffix_and_a_sources_only_campaign_are_told_what_to_do(tmp_path, capsys):
    sources = tmp_path / "test.src"
    sources.write_text("one source\nanother source\n")
    assert cli.main(["info", "--data", str(sources)]) == 2
    assert "a file of sources, one per line, reads with --text" in capsys.readouterr().err
    assert cli.main(["info", "--data", str(sources), "--text"]) == 0
    with pytest.raises(PrecometError, match=r"utility 'metric_avg' reads the systems' outputs or scores, but campaign"):
        compute_utility(load(sources, text=True), "metric_avg", metric="human")
