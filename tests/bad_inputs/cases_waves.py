"""``precomet waves`` (issue 50): wave sizes, judgements of another pool or given twice, systems the pool does not
have, batch names, priors and metrics that are missing, a manifest of another pool, and replay without scores."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from precomet.cli import main
from tests.bad_inputs import GOOD, Case

W = "waves --data items.jsonl --chooser random --batch {d}/w.jsonl"


def judged(rows: list[tuple[str, str, str, float]]) -> str:
    """Canonical JSONL judgements: (id, src, system, human) rows, one line per item."""
    items: dict[str, dict] = {}
    for item_id, src, system, value in rows:
        items.setdefault(item_id, {"id": item_id, "src": src, "scores": {}})["scores"][system] = {"human": value}
    return "".join(json.dumps(item) + "\n" for item in items.values())


def first_wave(folder: Path) -> None:
    """The manifest of a first wave drawn on ``items.jsonl`` (target 0.95)."""
    argv = ["waves", "--data", str(folder / "items.jsonl"), "--chooser", "random", "--manifest", str(folder / "m.json")]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # its notices are not the case's error
        assert main([*argv, "--size", "2"]) == 0


OTHER_MANIFEST = json.dumps(
    {"manifest": "precomet waves", "pool_hash": "0" * 16, "level": "item", "size": "5%", "planned": 20,
     "metric": None, "waves": []}
)  # fmt: skip

NO_OUTPUT_OF_B = "".join(
    json.dumps({"id": f"x{i}", "src": f"source {i}", "tgt": {"A": "a", **({} if i == 2 else {"B": "b"})}}) + "\n"
    for i in range(6)
)


def damaged_manifest(folder: Path, field: str | None = "unit_probability") -> None:
    """The first wave's manifest with a field of its wave record removed (``None``: its settings' ``target``)."""
    first_wave(folder)
    manifest = json.loads((folder / "m.json").read_text())
    (manifest["waves"][0] if field is not None else manifest["settings"]).pop(field or "target")
    (folder / "m.json").write_text(json.dumps(manifest))


CASES = {
    "waves-damaged-manifest": Case(
        f"{W} --manifest m.json".split(),
        {"items.jsonl": GOOD},
        ("damaged waves manifest", "unit_probability"),
        prepare=damaged_manifest,
    ),
    "waves-manifest-missing-a-field": Case(
        f"{W} --manifest m.json".split(),
        {"items.jsonl": GOOD},
        ("m.json", "damaged waves manifest", "target"),
        prepare=lambda folder: damaged_manifest(folder, field=None),
    ),
    "waves-pool-with-a-missing-output": Case(
        "waves --data pool.jsonl --batch {d}/w.jsonl".split(),
        {"pool.jsonl": NO_OUTPUT_OF_B},
        ("'x2'", "'B'", "no output"),
    ),
    "waves-doc-level-without-documents": Case(
        f"{W} --level doc".split(), {"items.jsonl": GOOD}, ("--level doc", "no documents")
    ),
    "waves-target-changed-mid-campaign": Case(
        f"{W} --manifest m.json --target 0.9".split(),
        {"items.jsonl": GOOD},
        ("--target 0.9", "0.95", "manifest"),
        prepare=first_wave,
    ),
    "waves-size-garbage": Case(f"{W} --size lots".split(), {"items.jsonl": GOOD}, ("wave size", "lots")),
    "waves-judgements-of-another-pool": Case(
        f"{W} --judgements j.jsonl".split(),
        {"items.jsonl": GOOD, "j.jsonl": judged([("zz", "elsewhere", "A", 1.0)])},
        ("j.jsonl", "not in the pool", "zz"),
    ),
    "waves-judgements-another-source-text": Case(
        f"{W} --judgements j.jsonl".split(),
        {"items.jsonl": GOOD, "j.jsonl": judged([("a", "not the pool's text", "A", 1.0)])},
        ("j.jsonl", "another source text"),
    ),
    "waves-judgements-twice": Case(
        f"{W} --judgements j.jsonl j2.jsonl".split(),
        {
            "items.jsonl": GOOD,
            "j.jsonl": judged([("a", "one two", "A", 1.0)]),
            "j2.jsonl": judged([("a", "one two", "A", 2.0)]),
        },
        ("j2.jsonl", "judged again", "j.jsonl"),
    ),
    "waves-judgement-of-an-unknown-system": Case(
        f"{W} --judgements j.jsonl".split(),
        {"items.jsonl": GOOD, "j.jsonl": judged([("a", "one two", "Z", 1.0)])},
        ("j.jsonl", "'Z'", "not one of the pool's"),
    ),
    "waves-batch-json-names-no-tool": Case(
        "waves --data items.jsonl --chooser random --batch {d}/w.json".split(),
        {"items.jsonl": GOOD},
        ("w.json", "Appraise and Pearmut", "--batch-format appraise", "--pearmut"),
    ),
    "waves-batch-format-without-batch": Case(
        "waves --data items.jsonl --chooser random --report {d}/r.json --batch-format appraise".split(),
        {"items.jsonl": GOOD},
        ("--batch-format", "--batch PATH"),
    ),
    "waves-batch-suffix": Case(
        "waves --data items.jsonl --chooser random --batch {d}/w.txt".split(),
        {"items.jsonl": GOOD},
        ("--batch", ".jsonl"),
    ),
    "waves-prior-without-a-utility": Case(
        "waves --data items.jsonl --chooser prior --batch {d}/w.jsonl".split(),
        {"items.jsonl": GOOD},
        ("--chooser prior", "--utility"),
    ),
    "waves-metric-the-pool-lacks": Case(
        "waves --data items.jsonl --metric zz --batch {d}/w.jsonl".split(), {"items.jsonl": GOOD}, ("--metric zz",)
    ),
    "waves-replay-output-on-a-live-call": Case(f"{W} -o {{d}}/x.json".split(), {"items.jsonl": GOOD}, ("-o", "replay")),
    "waves-manifest-of-another-pool": Case(
        f"{W} --manifest m.json".split(), {"items.jsonl": GOOD, "m.json": OTHER_MANIFEST}, ("m.json", "another pool")
    ),
    "waves-pearmut-without-outputs": Case(
        "waves --data s.txt --pearmut {d}/p.json".split(), {"s.txt": "one\ntwo\nthree\n"}, ("--pearmut", "outputs")
    ),
    "waves-replay-without-human-scores": Case(
        "waves replay --data s.txt --runs 2".split(), {"s.txt": "one\ntwo\nthree\n"}, ("s.txt", "no human scores")
    ),
}
