"""Issue 34, round three: results that belong to other data (a score file computed on other sources, a subset
selected from another campaign with the same ids), invisible-only lines, targets nothing can be learnt from and
costs whose total overflows."""

from __future__ import annotations

import json
from pathlib import Path

from precomet.provenance import items_hash, sources_hash
from tests.bad_inputs import GOOD, SHIPPED, TARGETS, Case, items, jsonl
from tests.bad_inputs.cases_models import _head

E5 = str(Path(__file__).resolve().parent.parent.parent / "configs" / "precomet-e5.yaml")
SRC = "first source\nsecond source\nthird source\n"
OTHER = ["another text", "second source", "third source"]


def _scores(signature: dict, ids=("1", "2", "3")) -> str:
    rows = [{"signature": signature}] + [{"id": i, "utility": float(n)} for n, i in enumerate(ids)]
    return "".join(json.dumps(row) + "\n" for row in rows)


PREDICTED_ELSEWHERE = _scores({"tool": "precomet predict", "data_hash": sources_hash(OTHER)})
SIGNED_ELSEWHERE = _scores({"tool": "precomet utilities", "sources_hash": sources_hash(OTHER)})
ITEM_SCORES = _scores({"tool": "precomet utilities", "sources_hash": sources_hash(["x"] * 4)}, ids="abcd")
_SRC = [row["src"] for row in items()]
RELABELLED = _scores(  # the scores of items a and b, their texts swapped since (ids relabelled)
    {"tool": "precomet utilities", "items_hash": items_hash("abcd", [_SRC[1], _SRC[0], *_SRC[2:]])}, ids="abcd"
)
SUBSET_ELSEWHERE = "".join(
    json.dumps({"id": i, "src": f"not the source of {i}", "doc": i, "domain": "all", "cost": 1.0, "utility": 0.5})
    + "\n"
    for i in "ab"
)
CONSTANT = "".join(
    json.dumps({"id": str(i), "src": f"source {i}", "target": 0.25, "campaign": "x", "doc": str(i)}) + "\n"
    for i in range(12)
)


def _case(argv: str, files: dict, says: tuple[str, ...]) -> Case:
    return Case(argv.split(), files, says)


CASES = {
    # ---- lines that show nothing
    "r3-info-text-zero-width-space-line": _case(
        "info --data s.txt", {"s.txt": "a\n\u200b\nb\n"}, ("s.txt:2", "blank line")
    ),
    "r3-select-text-bom-and-direction-mark-line": _case(
        "select --data s.txt --method random --budget 1 -o {d}/sub.jsonl",
        {"s.txt": "a\nb\n\ufeff\u200e\n"},
        ("s.txt:3", "blank line"),
    ),
    "r3-convert-domains-invisible-line": _case(
        "convert --data s.txt --domains dom.txt -o {d}/c.jsonl",
        {"s.txt": SRC, "dom.txt": "news\n\u2060\u00a0\nchat\n"},
        ("dom.txt:2", "blank line"),
    ),
    "r3-info-text-hangul-filler-line": _case(
        "info --data s.txt", {"s.txt": "a\n\u3164\nb\n"}, ("s.txt:2", "blank line")
    ),
    "r3-info-text-braille-blank-and-joiner-line": _case(
        "info --data s.txt", {"s.txt": "a\nb\n\u2800\u034f\ufe0f\n"}, ("s.txt:3", "blank line")
    ),
    "r3-info-text-combining-mark-only-line": _case(
        "info --data s.txt", {"s.txt": "a\n\u0301\nb\n"}, ("s.txt:2", "blank line")
    ),
    "r3-info-docs-value-with-zero-width-space": _case(
        "info --data s.txt --docs d.txt",
        {"s.txt": SRC, "d.txt": "d1\nd1\u200b\nd2\n"},
        ("d.txt:2", "document id", "U+200B"),
    ),
    "r3-info-domains-value-with-word-joiner": _case(
        "info --data s.txt --domains dom.txt",
        {"s.txt": SRC, "dom.txt": "news\nne\u2060ws\nchat\n"},
        ("dom.txt:2", "domain", "U+2060"),
    ),
    "r3-info-jsonl-src-of-invisible-characters": _case(
        "info --data x.jsonl", {"x.jsonl": jsonl(items(i2={"src": "\u200b\u200c"}))}, ("x.jsonl", "empty source")
    ),
    "r3-train-src-of-invisible-characters": _case(
        f"train --train t.jsonl --config {E5} -o {{d}}/est",
        {"t.jsonl": TARGETS.replace('"source 3"', '"\\u200b"')},
        ("t.jsonl", "empty 'src'"),
    ),
    # ---- results that belong to other data
    "r3-select-scores-predicted-on-other-text": _case(
        "select --data s.txt --utility-file p.jsonl --budget 1 -o {d}/sub.jsonl",
        {"s.txt": SRC, "p.jsonl": PREDICTED_ELSEWHERE},
        ("p.jsonl", "other sources than --data", "--force"),
    ),
    "r3-select-scores-signed-for-other-text": _case(
        "select --data s.txt --utility-file u.jsonl --budget 1 -o {d}/sub.jsonl",
        {"s.txt": SRC, "u.jsonl": SIGNED_ELSEWHERE},
        ("u.jsonl", "other sources than --data", "--force"),
    ),
    "r3-benchmark-scores-of-other-data": _case(
        "benchmark --data items.jsonl --utility-file est=u.jsonl --metric m --props 0.5 --seeds 2 --permutations 10"
        " -o {d}/b.json",
        {"items.jsonl": GOOD, "u.jsonl": ITEM_SCORES},
        ("u.jsonl", "other sources than --data", "--force"),
    ),
    "r3-select-scores-of-relabelled-ids": _case(
        "select --data items.jsonl --utility-file u.jsonl --budget 1 -o {d}/sub.jsonl",
        {"items.jsonl": GOOD, "u.jsonl": RELABELLED},
        ("u.jsonl", "items hash", "relabelled", "--force"),
    ),
    "r3-select-scores-signature-not-an-object": _case(
        "select --data s.txt --utility-file u.jsonl --budget 1 -o {d}/sub.jsonl",
        {"s.txt": SRC, "u.jsonl": '{"signature": "x"}\n{"id": "1", "utility": 1.0}\n'},
        ("u.jsonl:1", "'signature' must be an object"),
    ),
    "r3-benchmark-scores-sources-hash-not-a-hash": _case(
        "benchmark --data items.jsonl --utility-file est=u.jsonl --metric m --props 0.5 --seeds 2 --permutations 10"
        " -o {d}/b.json",
        {"items.jsonl": GOOD, "u.jsonl": _scores({"sources_hash": 12}, ids="abcd")},
        ("u.jsonl", "'sources_hash' must be 16 hex digits", "12"),
    ),
    "r3-benchmark-scores-with-ids-data-lacks": _case(
        "benchmark --data items.jsonl --utility-file est=u.jsonl --metric m --props 0.5 --seeds 2 --permutations 10"
        " -o {d}/b.json",
        {"items.jsonl": GOOD, "u.jsonl": _scores({"sources_hash": sources_hash(["x"] * 5)}, ids="abcdz")},
        ("u.jsonl", "other data than --data", "1 of its 5 ids", "'z'", "--force"),
    ),
    "r3-benchmark-scores-name-twice": _case(
        "benchmark --data items.jsonl --utility-file x=u.jsonl --utility-file x=u.jsonl --metric m --props 0.5"
        " --seeds 2 --permutations 10 -o {d}/b.json",
        {"items.jsonl": GOOD, "u.jsonl": _scores({}, ids="abcd")},
        ("--utility-file", "'x' is given twice"),
    ),
    "r3-benchmark-scores-named-random": _case(
        "benchmark --data items.jsonl --utility-file random=u.jsonl --metric m --props 0.5 --seeds 2 --permutations 10"
        " -o {d}/b.json",
        {"items.jsonl": GOOD, "u.jsonl": _scores({}, ids="abcd")},
        ("--utility-file random=u.jsonl", "random baseline", "another NAME"),
    ),
    "r3-rank-subset-of-another-campaign-same-ids": _case(
        "rank --data items.jsonl --subset sub.jsonl --rounds 20",
        {"items.jsonl": GOOD, "sub.jsonl": SUBSET_ELSEWHERE},
        ("--subset sub.jsonl", "2 of 2", "other data", "--force"),
    ),
    "r3-rank-subset-src-not-text": _case(
        "rank --data items.jsonl --subset sub.jsonl --rounds 20",
        {"items.jsonl": GOOD, "sub.jsonl": '{"id": "a", "src": 5}\n'},
        ("sub.jsonl:1", "'src' must be text"),
    ),
    "r3-rank-subset-src-null": _case(
        "rank --data items.jsonl --subset sub.jsonl --rounds 20",
        {"items.jsonl": GOOD, "sub.jsonl": '{"id": "a", "src": null}\n'},
        ("sub.jsonl:1", "'src' must be text, got null"),
    ),
    "r3-rank-subset-src-on-some-rows-only": _case(
        "rank --data items.jsonl --subset sub.jsonl --rounds 20",
        {"items.jsonl": GOOD, "sub.jsonl": '{"id": "a", "src": "x"}\n{"id": "b"}\n'},
        ("sub.jsonl:2", "lacks a 'src' while the row on line 1 has one"),
    ),
    # ---- training targets that teach nothing
    "r3-train-constant-targets": _case(
        f"train --train t.jsonl --config {E5} -o {{d}}/est",
        {"t.jsonl": CONSTANT},
        ("training targets are all 0.25", "constant"),
    ),
    # ---- the resume folder of predict
    "r3-predict-resume-dir-is-the-output": _case(
        f"predict --checkpoint {SHIPPED} --data s.txt --chunk-size 40 -o {{d}}/out.jsonl --resume-dir {{d}}/out.jsonl",
        {"s.txt": SRC},
        ("--resume-dir", "out.jsonl is or holds the output"),
    ),
    "r3-predict-resume-dir-holds-the-output": _case(
        f"predict --checkpoint {SHIPPED} --data s.txt -o {{d}}/kept/out.jsonl --resume-dir {{d}}/kept",
        {"s.txt": SRC, "kept/old.txt": "x"},
        ("--resume-dir", "kept is or holds the output"),
    ),
    "r3-predict-default-resume-folder-is-a-file": _case(
        f"predict --checkpoint {SHIPPED} --data s.txt -o {{d}}/out.jsonl",
        {"s.txt": SRC, "out.jsonl.chunks": "a file of the user's"},
        ("-o", "out.jsonl.chunks is a file", "--resume-dir DIR"),
    ),
    "r3-predict-negated-feature-std": Case(
        "predict --checkpoint ckpt --data s.txt -o {d}/p.jsonl".split(),
        {"s.txt": SRC},
        ("head.safetensors", "feature_std", "<= 0"),
        _head(lambda tensors: [tensors[k].neg_() for k in tensors if k.endswith("feature_std")]),
    ),
    # ---- budgets
    "r3-select-proportion-below-one-item": _case(
        "select --data items.jsonl --method metric_var --metric m --proportion 1e-300 -o {d}/s.jsonl",
        {"items.jsonl": GOOD},
        ("--proportion 1e-300 of 4 items", "less than one item", "at least 0.25"),
    ),
    # ---- costs
    "r3-info-costs-add-up-to-infinity": _case(
        "info --data x.jsonl",
        {"x.jsonl": jsonl(items(**{f"i{i}": {"cost": 1e308} for i in range(4)}))},
        ("cost", "add up to more than the largest number"),
    ),
}
