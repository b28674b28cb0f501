"""``precomet waves`` fault matrix (issue 51, ``benchmarks/waves_matrix.py``): the cases it found that were not a
clean error — a damaged or hand-edited manifest (internal errors, silent acceptance, errors that did not name the
file or the field), human scores whose squares overflow, exports without a single judgement, a pool of one system
or with a system named ``*``, an unknown figure format, and options the call would ignore."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from precomet.cli import main
from tests.bad_inputs import GOOD, Case, items, jsonl
from tests.bad_inputs.cases_waves import judged

W = "waves --data items.jsonl --chooser random --manifest m.json --batch {d}/w2.jsonl"
R = "waves replay --data items.jsonl --chooser random --runs 2"


def first_wave(folder: Path) -> None:
    """The manifest of a first wave drawn on ``items.jsonl`` (3 of its 4 items expected; seed 0 draws some)."""
    argv = ["waves", "--data", str(folder / "items.jsonl"), "--chooser", "random", "--manifest", str(folder / "m.json")]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main([*argv, "--size", "3"]) == 0
    assert json.loads((folder / "m.json").read_text())["waves"][0]["drawn"]


def edited(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    """The first wave's manifest (``m.json``, on ``items.jsonl``) with ``change`` applied to its JSON."""

    def prepare(folder: Path) -> None:
        first_wave(folder)
        manifest = json.loads((folder / "m.json").read_text())
        change(manifest)
        (folder / "m.json").write_text(json.dumps(manifest))

    return prepare


def wave(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["waves"][0]


def raw(text: bytes) -> Callable[[Path], None]:
    def prepare(folder: Path) -> None:
        first_wave(folder)
        (folder / "m.json").write_bytes(text)

    return prepare


def manifest_case(change: Callable[[dict[str, Any]], object], *says: str) -> Case:
    return Case(W.split(), {"items.jsonl": GOOD}, ("m.json", "damaged waves manifest", *says), prepare=edited(change))


HUGE = judged([("a", "one two", "A", 1e308), ("a", "one two", "B", 1.0), ("a", "one two", "C", 2.0)])
PEARMUT_HUGE = json.dumps(
    [{"user_id": "u", "item_i": 0, "item": [{"item_id": "a"}], "annotation": [{"A": {"score": 1e308}}]}]
)
REPLAY_HUGE = judged([("a", "one two", "A", 1e300), ("a", "one two", "B", 1.0), ("b", "three", "A", 2.0),
                      ("b", "three", "B", 3.0)])  # fmt: skip
BAD_ROWS_ONLY = "ann1,A,1,BAD,eng,deu,50,a#A,False,[],1.0,2.0\n"
ONE_SYSTEM = jsonl([{"id": f"x{i}", "src": f"source {i}", "tgt": {"A": "a"}} for i in range(4)])
STAR = jsonl([{"id": f"x{i}", "src": f"source {i}", "tgt": {"*": "a", "B": "b"}} for i in range(4)])
ONE_JUDGED_SYSTEM = jsonl([{k: v for k, v in row.items() if k != "tgt"} | {"scores": {"A": {"human": 1.0}}}
                           for row in items()])  # fmt: skip

CASES = {
    # a damaged or hand-edited manifest: every field checked on reading, errors name the file and the field
    "waves-matrix-manifest-not-utf8": Case(
        W.split(), {"items.jsonl": GOOD}, ("m.json", "not a waves manifest"), prepare=raw(b"\xff\xfe\x00garbage")
    ),
    "waves-matrix-manifest-waves-a-string": manifest_case(lambda m: m.update(waves="abc"), "'waves'"),
    "waves-matrix-manifest-wave-not-an-object": manifest_case(lambda m: m.update(waves=[5]), "waves[0]"),
    "waves-matrix-manifest-without-system-shares": manifest_case(
        lambda m: wave(m).pop("system_probability"), "waves[0].system_probability", "missing"
    ),
    "waves-matrix-manifest-without-known": manifest_case(lambda m: wave(m).pop("known"), "waves[0].known"),
    "waves-matrix-manifest-without-look-level": manifest_case(lambda m: wave(m).pop("look_level"), "look_level"),
    "waves-matrix-manifest-look-level-text": manifest_case(lambda m: wave(m).update(look_level="abc"), "look_level"),
    "waves-matrix-manifest-planned-zero": manifest_case(lambda m: m.update(planned=0), "'planned'"),
    "waves-matrix-manifest-planned-text": manifest_case(lambda m: m.update(planned="x"), "'planned'"),
    "waves-matrix-manifest-size-garbage": manifest_case(lambda m: m["settings"].update(size="abc"), "'settings.size'"),
    "waves-matrix-manifest-level-unknown": manifest_case(
        lambda m: m["settings"].update(level="sentence"), "'settings.level'"
    ),
    "waves-matrix-manifest-target-out-of-range": manifest_case(
        lambda m: m["settings"]["target"].update(share=2.0), "'settings.target.share'"
    ),
    "waves-matrix-manifest-probability-nan": manifest_case(
        lambda m: wave(m)["unit_probability"].__setitem__(0, float("nan")), "unit_probability"
    ),
    "waves-matrix-manifest-probability-above-one": manifest_case(
        lambda m: wave(m)["unit_probability"].__setitem__(0, 5.0), "unit_probability"
    ),
    "waves-matrix-manifest-no-chance-for-a-drawn-item": manifest_case(
        lambda m: wave(m).update(unit_probability=[0.0] * len(wave(m)["unit_probability"])), "no chance"
    ),
    # issue 61: a probability edited to a value the recorded design does not give (silently reweighted the means)
    "waves-matrix-manifest-probability-edited-tiny": manifest_case(
        lambda m: wave(m)["unit_probability"].__setitem__(0, 1e-9), "waves[0].unit_probability", "recorded design"
    ),
    "waves-matrix-manifest-probability-edited-up": manifest_case(
        lambda m: wave(m)["unit_probability"].__setitem__(0, 0.9), "waves[0].unit_probability", "recorded design"
    ),
    "waves-matrix-manifest-design-budget-edited": manifest_case(
        lambda m: wave(m)["design"].update(budget=1.0), "waves[0].unit_probability", "recorded design"
    ),
    "waves-matrix-manifest-design-scores-short": manifest_case(
        lambda m: wave(m)["design"].update(unit_score=[1.0]), "waves[0].design.unit_score", "one per open unit"
    ),
    "waves-matrix-replay-score-overflows": Case(
        R.split(), {"items.jsonl": REPLAY_HUGE}, ("items.jsonl", "'a'", "'A'", "out of range")
    ),
    "waves-matrix-manifest-probabilities-short": manifest_case(
        lambda m: wave(m).update(unit_probability=wave(m)["unit_probability"][:1]), "one per open unit"
    ),
    "waves-matrix-manifest-open-unit-unknown": manifest_case(
        lambda m: wave(m)["open_units"].__setitem__(0, "zz"), "open_units", "'zz'"
    ),
    "waves-matrix-manifest-drawn-unknown-item": manifest_case(
        lambda m: wave(m)["drawn"].update(zz=["A"]), "drawn", "'zz'"
    ),
    "waves-matrix-manifest-drawn-unknown-system": manifest_case(
        lambda m: next(iter(wave(m)["drawn"].values())).append("Q"), "drawn", "'Q'"
    ),
    "waves-matrix-manifest-offset-text": manifest_case(
        lambda m: wave(m)["predictor"]["offsets"].update(A="x"), "predictor.offsets"
    ),
    "waves-matrix-manifest-waves-renumbered": manifest_case(lambda m: m["waves"].append(dict(wave(m))), "number"),
    "waves-matrix-manifest-future-version": Case(
        W.split(),
        {"items.jsonl": GOOD},
        ("m.json", "version 99", "reads versions 1 and 2"),
        prepare=edited(lambda m: m.update(version=99)),
    ),
    # judgements: scores whose squares overflow, exports without a judgement, the manifest's name for every system
    "waves-matrix-judgement-overflows": Case(
        f"{W} --judgements j.jsonl".split(),
        {"items.jsonl": GOOD, "j.jsonl": HUGE},
        ("j.jsonl", "'a'", "'A'", "out of range"),
    ),
    "waves-matrix-pearmut-score-overflows": Case(
        f"{W} --pearmut-annotations p.json".split(),
        {"items.jsonl": GOOD, "p.json": PEARMUT_HUGE},
        ("p.json", "out of range"),
    ),
    "waves-matrix-appraise-export-without-a-judgement": Case(
        f"{W} --appraise-annotations a.csv".split(),
        {"items.jsonl": GOOD, "a.csv": BAD_ROWS_ONLY},
        ("a.csv", "not a single judgement"),
    ),
    "waves-matrix-judgements-without-a-human-score": Case(
        f"{W} --judgements j.jsonl".split(),
        {"items.jsonl": GOOD, "j.jsonl": jsonl([{"id": "a", "src": "one two", "scores": {"A": {"human": None}}}])},
        ("j.jsonl", "not a single human score"),
    ),
    "waves-matrix-judged-system-named-star": Case(
        "waves --data s.txt --batch {d}/w.jsonl --judgements j.jsonl".split(),
        {"s.txt": "one\ntwo\n", "j.jsonl": judged([("1", "one", "*", 1.0), ("1", "one", "B", 2.0)])},
        ("j.jsonl", "'*'"),
    ),
    # pools
    "waves-matrix-pool-of-one-system": Case(
        "waves --data p.jsonl --batch {d}/w.jsonl".split(), {"p.jsonl": ONE_SYSTEM}, ("p.jsonl", "one system")
    ),
    "waves-matrix-pool-system-named-star": Case(
        "waves --data p.jsonl --batch {d}/w.jsonl".split(), {"p.jsonl": STAR}, ("p.jsonl", "'*'")
    ),
    "waves-matrix-replay-of-one-system": Case(
        "waves replay --data j.jsonl --runs 2".split(), {"j.jsonl": ONE_JUDGED_SYSTEM}, ("j.jsonl", "two")
    ),
    "waves-matrix-replay-metric-the-pool-lacks": Case(
        f"{R} --metric zz".split(), {"items.jsonl": GOOD}, ("--metric zz", "items.jsonl", "no such score")
    ),
    # options the call would not read, or could not write
    "waves-matrix-plot-format-unknown": Case(
        "waves --data items.jsonl --plot {d}/f.txt".split(), {"items.jsonl": GOOD}, ("--plot", "f.txt", ".png")
    ),
    "waves-matrix-runs-on-a-live-call": Case(
        "waves --data items.jsonl --batch {d}/w.jsonl --runs 5".split(), {"items.jsonl": GOOD}, ("--runs", "replay")
    ),
    "waves-matrix-encoder-for-random-waves": Case(
        "waves --data items.jsonl --chooser random --encoder length --batch {d}/w.jsonl".split(),
        {"items.jsonl": GOOD},
        ("--encoder", "learn"),
    ),
    "waves-matrix-prior-for-length-waves": Case(
        "waves --data items.jsonl --chooser length --utility metric_var --metric m --batch {d}/w.jsonl".split(),
        {"items.jsonl": GOOD},
        ("--utility", "length"),
    ),
    **{
        f"waves-matrix-replay-with-{flag[2:]}": Case(
            [*R.split(), flag, value], {"items.jsonl": GOOD}, (flag, "live campaign")
        )
        for flag, value in (
            ("--batch", "{d}/w.jsonl"),
            ("--manifest", "{d}/m.json"),
            ("--judgements", "items.jsonl"),
            ("--pearmut-annotations", "items.jsonl"),
            ("--appraise-annotations", "items.jsonl"),
            ("--report", "{d}/r.json"),
            ("--pearmut", "{d}/p.json"),
            ("--plot", "{d}/f.png"),
        )
    },
}
