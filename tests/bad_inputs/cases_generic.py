"""Generic broken inputs (issue 20): every file or folder a command reads — data, scores, subsets, manifests,
preferences, targets, configs, checkpoints, Lightning files — replaced in turn by a missing path, an empty
file, binary garbage, a folder, ``/dev/null``, JSON of the wrong shape, a blank line or NUL bytes. Each must be
refused with exit 2 and a line that names the path, never an internal error."""

from __future__ import annotations

from tests.bad_inputs import GOOD, PREFS, SHIPPED, TARGETS, UTILITIES, Case, items, jsonl

BROKEN: dict[str, tuple[str, str | bytes | None]] = {  # name -> (path given, content written there; None: none)
    "missing": ("nothere.jsonl", None),
    "empty": ("X.jsonl", b""),
    "garbage": ("X.jsonl", bytes(range(256)) * 4),
    "folder": ("Xdir", "FOLDER"),
    "dev-null": ("/dev/null", None),
    "json-list": ("X.jsonl", b"[1,2,3]\n"),
    "json-string": ("X.jsonl", b'"x"\n'),
    "json-null": ("X.jsonl", b"null\n"),
    "blank-line": ("X.jsonl", b"\n"),
    "nul-bytes": ("X.jsonl", b"\x00\x00\n"),
}
WMT_IDS = jsonl([dict(item, id=f"wmt23/en-de/{i + 1}") for i, item in enumerate(items())])  # for real times
VALID = {
    "items.jsonl": GOOD,
    "wmt.jsonl": WMT_IDS,
    "prefs.csv": PREFS,
    "t.jsonl": TARGETS,
    "u.jsonl": UTILITIES,
    "src.txt": "hello\nworld\n",
}
TEMPLATES = {  # {X} = the broken path
    "info": "info --data {X}",
    "convert": "convert --data {X} -o {d}/o.jsonl",
    "select-data": "select --data {X} --method metric_var --metric m --budget 2 -o {d}/s.jsonl",
    "select-scores": "select --data items.jsonl --utility-file {X} --budget 2 -o {d}/s.jsonl",
    "select-cost-from-times": "select --data wmt.jsonl --method metric_var --metric m --proportion 0.5"
    " --cost-from-times {X} -o {d}/s.jsonl",
    "utilities": "utilities --data {X} --method metric_avg --metric m -o {d}/u.jsonl",
    "benchmark-scores": "benchmark --data items.jsonl --methods metric_var --metric m --props 0.5 --seeds 2"
    " --permutations 10 --utility-file e={X} -o {d}/b.json",
    "rank-subset": "rank --data items.jsonl --subset {X} --rounds 10",
    "rank-manifest": "rank --data items.jsonl --manifest {X} --rounds 10",
    "elo-prefs": "elo --prefs {X} --rounds 10",
    "elo-agree-with": "elo --prefs prefs.csv --agree-with {X} --rounds 10",
    "train": "train --train {X} -o {d}/est",
    "train-dev": "train --train t.jsonl --dev {X} -o {d}/est",
    "train-config": "train --train t.jsonl --config {X} -o {d}/est",
    "predict-data": f"predict --checkpoint {SHIPPED} --data {{X}} -o {{d}}/p.jsonl",
    "predict-checkpoint": "predict --checkpoint {X} --data src.txt -o {d}/p.jsonl",
    "export": "export {X} -o {d}/est",
    "build-targets": "build-targets --data {X} --method metric_var --metric m -o {d}/t.jsonl",
    "build-targets-holdout": "build-targets --data items.jsonl --holdout {X} --method metric_var --metric m"
    " -o {d}/t.jsonl",
    "diffuse": "diffuse select --data {X} --systems A,B --budget 2",
}


def _case(template: str, path: str, content: str | bytes | None) -> Case:
    files: dict[str, str | bytes] = dict(VALID)
    if content == "FOLDER":
        files[f"{path}/keep"] = ""
    elif content is not None:
        files[path] = content
    return Case(template.replace("{X}", path).split(), files, (path.rsplit("/", 1)[-1],))


VALID_AS_EMPTY_CONFIG = {"empty", "json-null", "blank-line"}  # an empty YAML is "no settings": the defaults apply

CASES = {
    f"generic-{command}-{broken}": _case(template, path, content)
    for command, template in TEMPLATES.items()
    for broken, (path, content) in BROKEN.items()
    if not (command == "train-config" and broken in VALID_AS_EMPTY_CONFIG)
}
