import json

import pytest

from precomet.cli import main


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for step in range(1, 8):
        assert f"== {step}." in out
    bench = json.loads((tmp_path / "benchmark.json").read_text())
    assert set(bench["methods"]) == {"metric_var", "diversity", "estimator (sources only)"}
    assert (tmp_path / "benchmark.png").stat().st_size > 10_000
    manifest = json.loads((tmp_path / "blind-subset.manifest.json").read_text())
    assert manifest["status"] == "optimal" and len(set(manifest["domains"].values())) == 1
    subset = [json.loads(line) for line in (tmp_path / "blind-subset.jsonl").read_text().splitlines()]
    assert manifest["budget"]["unit"] == "cost"
    assert sum(row["cost"] for row in subset) <= manifest["budget"]["capacity"] + 1e-6
    assert (tmp_path / "estimator" / "precomet.json").exists()
