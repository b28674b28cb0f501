"""Bad input through the dispatcher and the CLI: a one-line error naming the problem, exit status 2."""

from __future__ import annotations

import collections
import pickle
import shutil
from pathlib import Path

import pytest

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (CLI data arguments, expected message fragment)."""
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    cases = {
        "non-numeric score": (
            "a,x,1\nb,y,oops\n",
            r"dup.csv:3: item 'b', system 'A', score 'human': must be a finite number",
        ),
        "duplicate id": ("a,x,1\na,y,2\n", r"dup.csv:3: duplicate id 'a'"),
        "empty source": ("a,,1\n", r"dup.csv:2: item 'a': empty source"),
    }
    inputs = {}
    for name, (body, message) in cases.items():
        path = csv_dir / name.replace(" ", "_") / "dup.csv"
        path.parent.mkdir()
        path.write_text("id,src,score:human:A\n" + body, encoding="utf-8")
        inputs[name] = ([str(path)], message)
    cost = csv_dir / "cost.csv"
    cost.write_text("id,src,cost,score:human:A\na,x,-1,3\n", encoding="utf-8")
    inputs["negative cost"] = ([str(cost)], r"cost.csv:2: item 'a', field 'cost': must be a positive finite number")
    utf = csv_dir / "utf.csv"
    utf.write_bytes(b"id,src\na,\xc3\x28\n")
    inputs["invalid UTF-8"] = ([str(utf)], r"utf.csv:2: invalid UTF-8")
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(collections.Counter(a=1)))
    inputs["pickle with a class"] = ([str(evil)], r"evil.pkl: pickle refers to class collections.Counter")
    esa = tmp_path / "esa"
    shutil.copytree(FIXTURES / "esa_tiny", esa)
    inputs["unknown campaign"] = ([str(esa), "--campaign", "en-xx"], r"unknown campaign 'en-xx'; found \['en-cs'\]")
    inputs["unknown protocol"] = (
        [str(esa), "--campaign", "en-cs", "--human", "da"],
        r"unknown human protocol 'da'; available: \['esa'\]",
    )
    lines = esa / "esa_lines"
    shutil.copytree(esa, lines)
    (lines / "txt" / "system-outputs" / "en-cs" / "A.txt").write_text("CANARY\nx\n", encoding="utf-8")
    inputs["output line counts"] = ([str(lines), "--campaign", "en-cs"], r"A.txt: 2 lines, but .*en-cs.txt has 4")
    inputs["missing path"] = ([str(tmp_path / "nope.csv")], r"nope.csv: no such file or directory")
    inputs["unknown format"] = (
        [str(FIXTURES / "esa_tiny" / "txt" / "documents" / "en-cs.docs")],
        r"unsupported input format '.docs'",
    )
    return inputs


CASES = [
    "non-numeric score",
    "duplicate id",
    "empty source",
    "negative cost",
    "invalid UTF-8",
    "pickle with a class",
    "unknown campaign",
    "unknown protocol",
    "output line counts",
    "missing path",
    "unknown format",
]


@pytest.mark.parametrize("case", CASES)
def test_load_raises_precomet_error(tmp_path, case):
    args, message = _bad_inputs(tmp_path)[case]
    campaign = args[args.index("--campaign") + 1] if "--campaign" in args else None
    human = args[args.index("--human") + 1] if "--human" in args else None
    with pytest.raises(PrecometError, match=message):
        load(args[0], campaign=campaign, human=human)


@pytest.mark.parametrize("command", ["convert", "info"])
@pytest.mark.parametrize("case", CASES)
def test_cli_exits_2_without_traceback(tmp_path, capsys, command, case):
    args, message = _bad_inputs(tmp_path)[case]
    extra = ["-o", str(tmp_path / "out.jsonl")] if command == "convert" else []
    assert main([command, "--data", *args, *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith(f"precomet {command}: error: ")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("path", ["mqm_tiny_ende.tsv", "mqm_tiny_ende.avg_seg_scores.tsv", "tiny.csv", "esa_tiny"])
def test_cli_convert_each_fixture(tmp_path, capsys, path):
    out = tmp_path / "items.jsonl"
    extra = ["--campaign", "en-cs"] if path == "esa_tiny" else []
    assert main(["convert", "--data", str(FIXTURES / path), *extra, "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    from precomet.io import load_jsonl

    round_trip = load_jsonl(out)
    original = load(FIXTURES / path, campaign=extra[1] if extra else None)
    assert list(round_trip.ids) == list(original.ids) and round_trip.systems == original.systems
