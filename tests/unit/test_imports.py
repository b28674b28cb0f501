"""What importing precomet pulls in, checked in fresh interpreters: the layer rules (a lower layer never imports a
higher one) and the lazy imports that keep ``precomet benchmark``, ``--help`` and ``info`` quick to start.
No wall-time asserts: the guard is which modules end up in ``sys.modules``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precomet.io import write_jsonl
from precomet.simulate import METRIC, simulate_campaign
from tests.conftest import loaded_after

HEAVY = (
    "scipy.special",
    "scipy.stats",
    "scipy.sparse",
    "scipy.cluster",
    "sklearn",
    "torch",
    "transformers",
    "sentence_transformers",
    "pytorch_lightning",
    "matplotlib",
    "matplotlib.pyplot",
    "pulp",
    "sacrebleu",
    "pandas",
    "pyro",
    "py_irt",
    "datasets",
    "pyarrow",
    "tqdm",
    "yaml",
)
"""Modules the benchmark path, the parser and the library's import must not load: each is imported inside the
function that needs it (numpy and threadpoolctl are the only third-party imports left)."""


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(name for name in HEAVY if name in modules)


def test_utilities_do_not_import_pairwise_or_higher_layers():
    modules = loaded_after("import precomet.utilities")
    assert not [m for m in modules if m.startswith(("precomet.pairwise", "precomet.benchmark", "precomet.commands"))]


def test_library_modules_never_import_commands():
    modules = loaded_after(
        "import precomet.benchmark, precomet.benchmark.crowd, precomet.benchmark.oracle, precomet.metaeval,"
        " precomet.rank, precomet.selection, precomet.io, precomet.utilities, precomet.pairwise.protocol,"
        " precomet.pairwise.ratings"
    )
    assert not [m for m in modules if m.startswith(("precomet.commands", "precomet.cli"))]


@pytest.mark.parametrize(
    "code",
    [
        "import precomet.cli; precomet.cli.build_parser(only='benchmark')",
        "import precomet.cli; precomet.cli.build_parser(only='info')",
        "import precomet.benchmark, precomet.metaeval, precomet.utilities, precomet.io, precomet.selection, "
        "precomet.benchmark.crowd",
    ],
)
def test_parser_and_benchmark_path_import_no_heavy_module(code):
    assert heavy_in(loaded_after(code)) == []


def test_full_parser_for_help_imports_no_heavy_module_but_yaml():
    """``precomet --help`` builds every subcommand; ``commands/train.py`` imports the estimator config (yaml) at
    module level, the one exception."""
    assert heavy_in(loaded_after("import precomet.cli; precomet.cli.build_parser()")) in ([], ["yaml"])


@pytest.fixture
def simulated(tmp_path) -> Path:
    path = tmp_path / "sim.jsonl"
    write_jsonl(simulate_campaign(n_items=60, n_systems=4, seed=0), path)
    return path


def test_benchmark_command_runs_without_heavy_modules(simulated, tmp_path):
    """The whole ``precomet benchmark`` of metric utilities (random baseline, parity, no oracle), in a fresh
    interpreter through ``cli.main``."""
    out = tmp_path / "b.json"
    argv = [
        "benchmark",
        "--data",
        str(simulated),
        "--methods",
        "metric_avg,metric_var,metric_cons",
        "--metric",
        METRIC,
        "--props",
        "0.2,0.5",
        "--seeds",
        "3",
        "--permutations",
        "20",
        "--no-oracle",
        "-o",
        str(out),
    ]
    modules = loaded_after(f"from precomet.cli import main\nassert main({argv!r}) == 0")
    assert json.loads(out.read_text())["methods"].keys() == {"metric_avg", "metric_var", "metric_cons"}
    assert heavy_in(modules) == []


def test_info_command_imports_no_heavy_module(simulated):
    argv = ["info", "--data", str(simulated)]
    assert heavy_in(loaded_after(f"from precomet.cli import main\nassert main({argv!r}) == 0")) == []
