"""Issue 20, second look: what an adversarial run over every subcommand still found after the first matrix —
lone surrogates and numbers written as text in JSON, scores outside the protocol's range, options that a
combination would silently ignore or that repeat a value, a single domain to balance."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bad_inputs import (
    GOOD,
    PREFS,
    TARGETS,
    UTILITIES,
    B,
    Case,
    E,
    S,
    U,
    esa_score,
    items,
    jsonl,
    release_da_file,
    shipped_checkpoint,
)

D_EVALUATE = "diffuse evaluate --data items.jsonl --systems A,B --score m --seeds 1"
ANNOTATION = {"instruction": "say hi", "generator_1": "A", "generator_2": "B"}


def release_da(row: str):
    def prepare(folder: Path) -> None:
        scores = release_da_file(folder)
        scores.write_text(f"SYS SID RAW.SCR Z.SCR N\nM1.3 1 80 0.5 1\n{row}\n")

    return prepare


def _case(argv: str | list[str], files: dict, says: tuple[str, ...], prepare=None) -> Case:
    return Case(argv.split() if isinstance(argv, str) else argv, files, says, prepare)


CASES = {
    # ---- JSON text and numbers
    "hunt-jsonl-lone-surrogate-convert": _case(
        "convert --data x.jsonl -o {d}/o.jsonl",
        {"x.jsonl": jsonl(items()).replace('"one two"', '"one \\ud800 two"')},
        ("x.jsonl:1", "lone surrogate"),
    ),
    "hunt-jsonl-score-written-as-text": _case(
        "info --data x.jsonl",
        {"x.jsonl": jsonl(items()).replace('"human": 4,', '"human": "4",', 1)},
        ("x.jsonl:2", "score 'human'", "'4'"),
    ),
    "hunt-jsonl-cost-written-as-text": _case(
        S.replace("items.jsonl", "x.jsonl"),
        {"x.jsonl": jsonl(items(i0={"cost": "12"}))},
        ("x.jsonl:1", "field 'cost'"),
    ),
    "hunt-utility-written-as-text": _case(
        S.replace("--method metric_var --metric m", "--utility-file u.jsonl"),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace('"utility": 0.1', '"utility": "0.1"')},
        ("u.jsonl:1", "field 'utility'"),
    ),
    "hunt-alpaca-preference-written-as-text": _case(
        "elo --prefs annotations.json --rounds 10",
        {"annotations.json": json.dumps([{**ANNOTATION, "preference": "1.9"}])},
        ("annotations.json", "record 0", "preference"),
    ),
    "hunt-prefs-label-and-likert": _case(
        "elo --prefs p.csv --rounds 10",
        {"p.csv": "item,model_a,model_b,label,likert\n1,A,B,a,3\n2,B,A,b,6\n"},
        ("p.csv:2", "not both"),
    ),
    # ---- scores outside the protocol's range
    "hunt-esa-score-above-100": _case(
        "convert --data esa --campaign en-cs -o {d}/o.jsonl", {}, ("wave1.csv:", "[0, 100]", "'150'"), esa_score("150")
    ),
    "hunt-esa-score-negative": _case(
        "info --data esa --campaign en-cs", {}, ("wave1.csv:", "[0, 100]"), esa_score("-5")
    ),
    "hunt-da-raw-score-above-100": _case(
        "info --data release --campaign wmt22/en-de",
        {},
        ("ad-seg-scores-en-de.csv:3", "RAW.SCR", "'250'"),
        release_da("M1.3 2 250 0.1 1"),
    ),
    "hunt-da-negative-count": _case(
        "info --data release --campaign wmt22/en-de",
        {},
        ("ad-seg-scores-en-de.csv:3", "'N'", "'-3'"),
        release_da("M1.3 2 70 0.1 -3"),
    ),
    # ---- repeated values
    "hunt-benchmark-props-twice": _case(
        B.replace("--props 0.5", "--props 0.5,0.5"), {"items.jsonl": GOOD}, ("--props", "twice")
    ),
    "hunt-diffuse-budgets-empty-range": _case(D_EVALUATE + " --budgets 5:1:1", {"items.jsonl": GOOD}, ("--budgets",)),
    "hunt-diffuse-budgets-zero": _case(D_EVALUATE + " --budgets 0,2", {"items.jsonl": GOOD}, ("--budgets", "'0,2'")),
    "hunt-diffuse-p-twice": _case(D_EVALUATE + " --budgets 2 --p 0.2 0.2", {"items.jsonl": GOOD}, ("--p",)),
    "hunt-utilities-systems-empty-name": _case(U + " --systems A,,B", {"items.jsonl": GOOD}, ("--systems", "'A,,B'")),
    "hunt-elo-models-twice": _case(E + " --models A,A", {"prefs.csv": PREFS}, ("--models", "twice")),
    # ---- options the combination would ignore
    "hunt-elo-prefs-with-score": _case(E + " --score m", {"prefs.csv": PREFS}, ("--score", "applies to --data")),
    "hunt-elo-prefs-with-campaign": _case(
        E + " --campaign wmt23/en-de", {"prefs.csv": PREFS}, ("--campaign", "applies to --data")
    ),
    "hunt-elo-bt-with-k": _case(E + " --method bt --k 8", {"prefs.csv": PREFS}, ("--k", "--method bt")),
    "hunt-elo-data-with-likert-ties": _case(
        "elo --data items.jsonl --rounds 5 --likert-ties", {"items.jsonl": GOOD}, ("--likert-ties", "--prefs")
    ),
    "hunt-select-cost-objective-with-a-count": _case(
        S + " --cost-objective paper", {"items.jsonl": GOOD}, ("--cost-objective", "cost budgets")
    ),
    "hunt-select-balance-one-domain": _case(
        S + " --balance domain", {"items.jsonl": GOOD}, ("--balance domain", "one domain")
    ),
    "hunt-benchmark-balance-one-domain": _case(
        B + " --balance domain", {"items.jsonl": GOOD}, ("--balance domain", "one domain")
    ),
    "hunt-utilities-budget-not-used": _case(U + " --budget 3", {"items.jsonl": GOOD}, ("--budget", "metric_avg")),
    "hunt-predict-campaign-on-text": _case(
        "predict --checkpoint ckpt --data src.txt --campaign wmt23/en-de -o {d}/p.jsonl",
        {"src.txt": "hello\n"},
        ("src.txt", "'wmt23/en-de'"),
        shipped_checkpoint,
    ),
    # ---- outputs and configs
    "hunt-convert-output-suffix-csv": _case(
        "convert --data items.jsonl -o {d}/o.csv", {"items.jsonl": GOOD}, ("o.csv", ".jsonl", ".parquet")
    ),
    "hunt-convert-output-empty": _case(
        ["convert", "--data", "items.jsonl", "-o", ""], {"items.jsonl": GOOD}, ("empty",)
    ),
    "hunt-train-config-key-twice": _case(
        "train --train t.jsonl --config c.yaml -o {d}/est",
        {"t.jsonl": TARGETS, "c.yaml": "seed_everything: 1\nseed_everything: 2\n"},
        ("c.yaml", "'seed_everything' appears twice"),
    ),
    "hunt-rank-scores-overflow-a-mean": _case(
        "rank --data x.jsonl --rounds 10",
        {"x.jsonl": jsonl(items()).replace('"human": 4,', '"human": 1e308,').replace('"human": 3,', '"human": 1e308,')},
        ("too large to average",),
    ),
    "hunt-rank-subset-unknown-id-names-the-file": _case(
        "rank --data items.jsonl --rounds 10 --subset s.jsonl",
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": "zz"}\n'},
        ("--subset s.jsonl", "'zz'"),
    ),
    "hunt-diffuse-encoder-missing-folder": _case(
        "diffuse select --data items.jsonl --systems A,B --budget 2 --encoder ./no-such-model",
        {"items.jsonl": GOOD},
        ("./no-such-model", "no such folder"),
    ),
}
