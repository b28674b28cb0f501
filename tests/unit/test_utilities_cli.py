"""`precomet utilities`: output format, signature, bad input exits 2."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from precomet.cli import main
from precomet.io import write_jsonl
from precomet.io.utility_files import read_utilities


def test_cli_writes_signature_and_items_in_order(tiny_campaign, tmp_path, capsys):
    data = tmp_path / "tiny.jsonl"
    write_jsonl(tiny_campaign, data)
    out = tmp_path / "u.jsonl"
    assert (
        main(
            [
                "utilities",
                "--data",
                str(data),
                "--method",
                "metric_var",
                "--metric",
                "human",
                "--systems",
                "s1,s3",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    ids, values, signature = read_utilities(out)
    assert ids == ["a", "b", "c", "d"] and np.allclose(values, [1.0, 0.0, 6.25, 0.25])
    assert signature["method"] == "metric_var" and signature["systems"] == ["s1", "s3"] and signature["seed"] == 0
    assert {"data_hash", "precomet_version", "options", "metric"} <= set(signature)
    first = json.loads(out.read_text().splitlines()[0])
    assert list(first) == ["signature"]


def test_cli_options_and_irt_export(tiny_campaign, tmp_path):
    data = tmp_path / "tiny.jsonl"
    write_jsonl(tiny_campaign, data)
    out = tmp_path / "d.jsonl"
    assert (
        main(
            [
                "utilities",
                "--data",
                str(data),
                "--method",
                "diversity",
                "--option",
                "similarity=unigram",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert np.allclose(read_utilities(out)[1], [2 / 3, 2 / 3, 0, 2 / 3])
    params = tmp_path / "irt.json"
    assert (
        main(
            [
                "utilities",
                "--data",
                str(data),
                "--method",
                "irt_diffdisc",
                "--metric",
                "human",
                "--option",
                "epochs=20",
                "--save-irt",
                str(params),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    fitted = json.loads(params.read_text())
    assert fitted["item_ids"] == ["a", "b", "c", "d"]
    expected = np.array(fitted["difficulty"]) * np.array(fitted["discrimination"])
    assert np.allclose(read_utilities(out)[1], expected)


def test_cli_bad_input_exits_2(tiny_campaign, tmp_path, capsys):
    data = tmp_path / "tiny.jsonl"
    write_jsonl(tiny_campaign, data)
    out = str(tmp_path / "x.jsonl")
    base = ["utilities", "--data", str(data), "-o", out]
    assert main(base + ["--method", "bogus"]) == 2
    assert "metric_var" in capsys.readouterr().err
    assert main(base + ["--method", "metric_var"]) == 2
    assert "needs --metric" in capsys.readouterr().err
    assert main(base + ["--method", "metric_var", "--metric", "human", "--systems", "s1,zz"]) == 2
    assert "zz" in capsys.readouterr().err
    assert main(base + ["--method", "metric_var", "--metric", "human", "--option", "bad"]) == 2
    assert main(base + ["--method", "kmeans"]) == 2
    assert "budget" in capsys.readouterr().err


def test_comma_list_type():
    from precomet.commands.common import comma_list

    assert comma_list(" a, b ,c") == ["a", "b", "c"]
    for typo in (" , ", "a,,b", "a,b,", "a,b,a"):  # an empty or repeated name is a typo, not a list
        with pytest.raises(argparse.ArgumentTypeError):
            comma_list(typo)
