"""Plain-text sources and the annotation batch (issue 21): blank lines, ``--docs``/``--domains`` files of the wrong
length, alongside files on an input that is not plain text, methods that need outputs or scores on sources only,
and ``select --batch`` paths and options that cannot work."""

from __future__ import annotations

from tests.bad_inputs import GOOD, SHIPPED, Case

SRC = "first source\nsecond, with a comma\nthird\n"
TEXT = {"s.txt": SRC}
SEL = "select --data s.txt --method random --budget 1 -o {d}/sub.jsonl"
SELJ = "select --data items.jsonl --method metric_var --metric m --budget 2 -o {d}/sub.jsonl"

CASES = {
    # ---- the text itself
    "info-text-blank-line": Case("info --data s.txt".split(), {"s.txt": "a\n\nb\n"}, ("s.txt:2", "blank line")),
    "info-text-white-space-line": Case("info --data s.txt".split(), {"s.txt": "a\nb\n \t \n"}, ("s.txt:3", "blank")),
    "convert-text-empty-file": Case("convert --data s.txt -o {d}/c.jsonl".split(), {"s.txt": ""}, ("s.txt", "empty")),
    "select-text-blank-line": Case(SEL.split(), {"s.txt": "a\n\n"}, ("s.txt:2", "blank line")),
    "predict-text-blank-line": Case(
        f"predict --checkpoint {SHIPPED} --data s.txt -o {{d}}/p.jsonl".split(),
        {"s.txt": "one\n\nthree\n"},
        ("s.txt:2", "blank line"),
    ),
    "predict-text-with-campaign": Case(
        f"predict --checkpoint {SHIPPED} --data s.txt --campaign x -o {{d}}/p.jsonl".split(),
        TEXT,
        ("s.txt", "single campaign"),
    ),
    "info-text-switch-on-a-folder": Case("info --data sdir --text".split(), {"sdir/keep": ""}, ("sdir", "directory")),
    "info-text-human": Case("info --data s.txt --human mqm".split(), TEXT, ("s.txt", "no human scores", "--human")),
    # ---- --docs / --domains alongside
    "info-docs-too-short": Case(
        "info --data s.txt --docs docs.txt".split(), {**TEXT, "docs.txt": "d1\nd2\n"}, ("docs.txt", "2 lines", "3")
    ),
    "select-docs-too-long": Case(
        (SEL + " --docs docs.txt").split(), {**TEXT, "docs.txt": "a\nb\nc\nd\n"}, ("docs.txt:4", "no source")
    ),
    "select-domains-too-short": Case(
        (SEL + " --domains dom.txt").split(), {**TEXT, "dom.txt": "news\n"}, ("dom.txt", "1 lines", "ends early")
    ),
    "convert-domains-blank-line": Case(
        "convert --data s.txt --domains dom.txt -o {d}/c.jsonl".split(),
        {**TEXT, "dom.txt": "news\n\nchat\n"},
        ("dom.txt:2", "blank line"),
    ),
    "convert-docs-missing-file": Case(
        "convert --data s.txt --docs nothere.txt -o {d}/c.jsonl".split(), TEXT, ("nothere.txt", "no such file")
    ),
    "info-docs-on-jsonl": Case(
        "info --data items.jsonl --docs docs.txt".split(),
        {"items.jsonl": GOOD, "docs.txt": "a\nb\nc\nd\n"},
        ("--docs applies", "plain-text sources", "items.jsonl"),
    ),
    "select-domains-on-jsonl": Case(
        (SELJ + " --domains dom.txt").split(),
        {"items.jsonl": GOOD, "dom.txt": "a\nb\nc\nd\n"},
        ("--domains", "plain-text sources"),
    ),
    "convert-output-is-the-docs-file": Case(
        "convert --data s.txt --docs docs.txt -o docs.txt".split(), {**TEXT, "docs.txt": "a\nb\nc\n"}, ("docs.txt",)
    ),
    # ---- sources only where outputs or scores are needed
    "select-text-metric-var": Case(
        "select --data s.txt --method metric_var --metric m --budget 1 -o {d}/sub.jsonl".split(),
        TEXT,
        ("--method metric_var", "needs system outputs and scores", "s.txt", "--checkpoint"),
    ),
    "select-text-diversity": Case(
        "select --data s.txt --method diversity --budget 1 -o {d}/sub.jsonl".split(),
        TEXT,
        ("--method diversity", "needs system outputs", "--checkpoint"),
    ),
    "select-text-level-doc-without-docs": Case((SEL + " --level doc").split(), TEXT, ("--level doc", "--docs FILE")),
    # ---- the annotation batch
    "select-batch-unknown-suffix": Case(
        (SEL + " --batch {d}/batch.xlsx").split(), TEXT, ("batch.xlsx", ".jsonl", ".csv", ".tsv")
    ),
    "select-batch-no-suffix": Case((SEL + " --batch {d}/batch").split(), TEXT, ("batch", "no suffix")),
    "select-batch-json-names-no-tool": Case(
        (SEL + " --batch {d}/batch.json").split(),
        TEXT,
        ("batch.json", "Appraise and Pearmut", "--batch-format appraise"),
    ),
    "select-batch-order-without-batch": Case((SEL + " --batch-order doc").split(), TEXT, ("--batch-order", "--batch")),
    "select-batch-order-unknown": Case(
        (SEL + " --batch {d}/b.csv --batch-order utility").split(), TEXT, ("--batch-order", "utility")
    ),
    "select-batch-is-the-input": Case((SEL + " --batch s.txt").split(), TEXT, ("s.txt",)),
    "select-batch-same-as-subset": Case(
        "select --data s.txt --method random --budget 1 -o {d}/x.jsonl --batch {d}/x.jsonl".split(),
        TEXT,
        ("x.jsonl", "two outputs"),
    ),
    "select-batch-is-a-directory": Case(
        (SEL + " --batch {d}/bdir.csv").split(), {**TEXT, "bdir.csv/keep": ""}, ("bdir.csv", "directory")
    ),
    "select-batch-parent-is-a-file": Case((SEL + " --batch {d}/s.txt/b.csv").split(), TEXT, ("s.txt/b.csv",)),
}
