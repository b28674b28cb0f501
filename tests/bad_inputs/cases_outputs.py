"""Issue 20's output and option cases: an output that is (or would replace) an input, a file name the file system
cannot take, a trailing '/', non-finite or out-of-range option values, duplicated subset ids, an interactive
annotator whose input ends. Every one exits 2 before anything is written; the inputs stay byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

from tests.bad_inputs import GOOD, PREFS, TARGETS, UTILITIES, B, Case, E, S, U, esa_tree, shipped_checkpoint

P_TXT = "predict --checkpoint ckpt --data src.txt -o {d}/p.jsonl"
D_SELECT = "diffuse select --data items.jsonl --systems A,B --budget 2"
D_ITERATE = "diffuse iterate --data items.jsonl --systems A,B --score m --n-min 2"
D_EVALUATE = "diffuse evaluate --data items.jsonl --systems A,B --score m --budgets 2 --seeds 1"
RANK = "rank --data items.jsonl --rounds 10"
BT = "build-targets --data items.jsonl --method metric_var --metric m"


def link(name: str, to: str):
    """A preparation: ``name`` becomes a symbolic link to ``to`` (both in the test folder)."""

    def prepare(folder: Path) -> None:
        os.symlink(folder / to, folder / name)

    return prepare


def _clobber(argv: str | list[str], files: dict, says: tuple[str, ...], prepare=None) -> Case:
    return Case(argv.split() if isinstance(argv, str) else argv, files, says, prepare)


CASES = {
    # ---- an output that is an input: refused before any work, the input untouched
    "convert-output-is-the-input": _clobber(
        "convert --data items.jsonl -o {d}/items.jsonl", {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "convert-output-is-the-input-by-another-path": _clobber(
        "convert --data items.jsonl -o {d}/sub/../items.jsonl",
        {"items.jsonl": GOOD, "sub/keep": ""},
        ("items.jsonl", "is the input"),
    ),
    "convert-output-is-a-link-to-the-input": _clobber(
        "convert --data items.jsonl -o {d}/link.jsonl",
        {"items.jsonl": GOOD},
        ("link.jsonl", "is the input"),
        link("link.jsonl", "items.jsonl"),
    ),
    "convert-output-is-the-input-through-proc": _clobber(
        "convert --data items.jsonl -o /proc/self/cwd/items.jsonl",
        {"items.jsonl": GOOD},
        ("items.jsonl", "is the input"),
    ),
    "select-output-replaces-checkpoint-meta-through-proc": _clobber(
        S.replace("--method metric_var --metric m", "--checkpoint ckpt").replace(
            "{d}/subset.jsonl", "/proc/self/cwd/ckpt/precomet.json"
        ),
        {"items.jsonl": GOOD},
        ("precomet.json", "input folder"),
        shipped_checkpoint,
    ),
    "convert-output-replaces-a-file-of-the-input-folder": _clobber(
        "convert --data esa --campaign en-cs -o {d}/esa/humeval/wave1.csv",
        {},
        ("wave1.csv", "input folder"),
        esa_tree,
    ),
    "select-output-is-the-input": _clobber(
        S.replace("{d}/subset.jsonl", "{d}/items.jsonl"), {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "select-manifest-is-the-input": _clobber(
        S.replace("items.jsonl", "s.manifest.json").replace("{d}/subset.jsonl", "{d}/s.jsonl"),
        {"s.manifest.json": GOOD},
        ("s.manifest.json", "is the input"),
    ),
    "select-output-is-the-scores-file": _clobber(
        S.replace("--method metric_var --metric m", "--utility-file u.jsonl").replace(
            "{d}/subset.jsonl", "{d}/u.jsonl"
        ),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES},
        ("u.jsonl", "is the input"),
    ),
    "select-output-inside-the-checkpoint": _clobber(
        S.replace("--method metric_var --metric m", "--checkpoint ckpt").replace(
            "{d}/subset.jsonl", "{d}/ckpt/precomet.json"
        ),
        {"items.jsonl": GOOD},
        ("precomet.json", "input folder"),
        shipped_checkpoint,
    ),
    "utilities-output-is-the-input": _clobber(
        U.replace("{d}/u.jsonl", "{d}/items.jsonl"), {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "utilities-save-irt-is-the-input": _clobber(
        U.replace("metric_avg", "irt_diff") + " --save-irt {d}/items.jsonl",
        {"items.jsonl": GOOD},
        ("items.jsonl", "is the input"),
    ),
    "predict-output-is-the-sources": _clobber(
        P_TXT.replace("{d}/p.jsonl", "{d}/src.txt"),
        {"src.txt": "hello\n"},
        ("src.txt", "is the input"),
        shipped_checkpoint,
    ),
    "predict-output-replaces-the-checkpoint-meta": _clobber(
        P_TXT.replace("{d}/p.jsonl", "{d}/ckpt/precomet.json"),
        {"src.txt": "hello\n"},
        ("precomet.json", "input folder"),
        shipped_checkpoint,
    ),
    "build-targets-output-is-the-input": _clobber(
        BT + " -o {d}/items.jsonl", {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "build-targets-output-is-the-holdout": _clobber(
        BT + " --holdout h.jsonl -o {d}/h.jsonl", {"items.jsonl": GOOD, "h.jsonl": GOOD}, ("h.jsonl", "is the input")
    ),
    "benchmark-json-is-the-scores-file": _clobber(
        B.replace("{d}/b.json", "{d}/u.jsonl") + " --utility-file ext=u.jsonl",
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES},
        ("u.jsonl", "is the input"),
    ),
    "benchmark-json-is-the-data": _clobber(
        B.replace("{d}/b.json", "{d}/items.jsonl"), {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "elo-save-prefs-is-the-prefs": _clobber(
        E + " --save-prefs {d}/prefs.csv", {"prefs.csv": PREFS}, ("prefs.csv", "is the input")
    ),
    "elo-json-is-the-agreement-file": _clobber(
        E + " --agree-with a.csv -o {d}/a.csv", {"prefs.csv": PREFS, "a.csv": PREFS}, ("a.csv", "is the input")
    ),
    "elo-json-is-the-campaign": _clobber(
        "elo --data items.jsonl --score m --rounds 5 -o {d}/items.jsonl",
        {"items.jsonl": GOOD},
        ("items.jsonl", "is the input"),
    ),
    "rank-json-is-the-subset": _clobber(
        RANK + " --subset s.jsonl -o {d}/s.jsonl",
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": "b"}\n'},
        ("s.jsonl", "is the input"),
    ),
    "rank-json-is-the-manifest-beside-the-subset": _clobber(
        RANK + " --subset s.jsonl -o {d}/s.manifest.json",
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": "b"}\n', "s.manifest.json": "{}"},
        ("s.manifest.json", "is the input"),
    ),
    "rank-plot-is-the-data-by-link": _clobber(
        RANK + " -o {d}/r.json --plot {d}/fig.png",
        {"items.jsonl": GOOD},
        ("fig.png", "is the input"),
        link("fig.png", "items.jsonl"),
    ),
    "diffuse-out-is-the-input": _clobber(
        D_SELECT + " -o {d}/items.jsonl", {"items.jsonl": GOOD}, ("items.jsonl", "is the input")
    ),
    "train-out-folder-holds-the-targets": _clobber(
        "train --train est/t.jsonl -o {d}/est", {"est/t.jsonl": TARGETS}, ("est", "t.jsonl", "inside")
    ),
    "train-out-is-the-config": _clobber(
        "train --train t.jsonl --config c.yaml -o {d}/c.yaml",
        {"t.jsonl": TARGETS, "c.yaml": "seed_everything: 1\n"},
        ("c.yaml", "is the input"),
    ),
    "export-out-folder-holds-the-lightning-file": _clobber(
        "export est/x.ckpt -o {d}/est", {"est/x.ckpt": "not a checkpoint"}, ("est", "x.ckpt", "inside")
    ),
    # ---- output names
    "convert-output-with-a-trailing-slash": _clobber(
        "convert --data items.jsonl -o {d}/newdir/", {"items.jsonl": GOOD}, ("newdir/", "trailing '/'")
    ),
    "convert-output-name-too-long": _clobber(
        "convert --data items.jsonl -o {d}/" + "n" * 250 + ".jsonl", {"items.jsonl": GOOD}, ("256 bytes", "255")
    ),
    "convert-output-device-is-full": _clobber(
        "convert --data items.jsonl -o /dev/full", {"items.jsonl": GOOD}, ("/dev/full", "no space left on device")
    ),
    "train-out-is-stdout": _clobber("train --train t.jsonl -o -", {"t.jsonl": TARGETS}, ("-", "standard output")),
    # ---- option values that used to give a wrong answer or an internal error
    "elo-margin-nan": _clobber(E + " --margin nan", {"prefs.csv": PREFS}, ("--margin", "'nan'")),
    "elo-data-margin-inf": _clobber(
        "elo --data items.jsonl --score m --rounds 5 --margin inf", {"items.jsonl": GOOD}, ("--margin", "'inf'")
    ),
    "elo-margin-negative": _clobber(E + " --margin -1", {"prefs.csv": PREFS}, ("--margin", "'-1'")),
    "diffuse-iterate-margin-nan": _clobber(D_ITERATE + " --margin nan", {"items.jsonl": GOOD}, ("--margin", "'nan'")),
    "diffuse-iterate-p-nan": _clobber(D_ITERATE + " --p nan", {"items.jsonl": GOOD}, ("--p", "'nan'")),
    "diffuse-iterate-p-above-one": _clobber(D_ITERATE + " --p 1.5", {"items.jsonl": GOOD}, ("--p", "'1.5'")),
    "diffuse-iterate-n-min-zero": _clobber(D_ITERATE + " --n-min 0", {"items.jsonl": GOOD}, ("--n-min", "'0'")),
    "diffuse-evaluate-test-fraction-nan": _clobber(
        D_EVALUATE + " --test-fraction nan", {"items.jsonl": GOOD}, ("--test-fraction", "'nan'")
    ),
    "diffuse-evaluate-p-inf": _clobber(D_EVALUATE + " --p 0.1 inf", {"items.jsonl": GOOD}, ("--p", "'inf'")),
    "diffuse-evaluate-seeds-zero": _clobber(D_EVALUATE + " --seeds 0", {"items.jsonl": GOOD}, ("--seeds", "'0'")),
    "diffuse-select-budget-negative": _clobber(
        D_SELECT.replace("--budget 2", "--budget -2"), {"items.jsonl": GOOD}, ("--budget", "'-2'")
    ),
    "select-budget-zero": _clobber(S.replace("--budget 2", "--budget 0"), {"items.jsonl": GOOD}, ("--budget", "'0'")),
    "utilities-budget-negative": _clobber(
        U.replace("metric_avg", "kmeans") + " --budget -1", {"items.jsonl": GOOD}, ("--budget", "'-1'")
    ),
    "select-seed-negative": _clobber(S + " --seed -1", {"items.jsonl": GOOD}, ("--seed", "'-1'")),
    "utilities-seed-too-large": _clobber(U + " --seed 4294967296", {"items.jsonl": GOOD}, ("--seed", "'4294967296'")),
    "benchmark-seed-negative": _clobber(B + " --seed -3", {"items.jsonl": GOOD}, ("--seed", "'-3'")),
    "rank-seed-negative": _clobber(RANK + " --seed -1", {"items.jsonl": GOOD}, ("--seed", "'-1'")),
    "elo-seed-negative": _clobber(E + " --seed -1", {"prefs.csv": PREFS}, ("--seed", "'-1'")),
    "build-targets-seed-negative": _clobber(
        BT + " --seed -1 -o {d}/t.jsonl", {"items.jsonl": GOOD}, ("--seed", "'-1'")
    ),
    "demo-seed-negative": _clobber("demo -o {d}/demo --seed -5", {}, ("--seed", "'-5'")),
    "diffuse-iterate-seed-negative": _clobber(D_ITERATE + " --seed -1", {"items.jsonl": GOOD}, ("--seed", "'-1'")),
    "elo-rounds-beyond-memory": _clobber(
        E + " --rounds 1000000000", {"prefs.csv": PREFS}, ("--rounds", "'1000000000'")
    ),
    "rank-rounds-beyond-a-million": _clobber(
        RANK + " --rounds 2000000", {"items.jsonl": GOOD}, ("--rounds", "1000000")
    ),
    "benchmark-permutations-huge": _clobber(
        B.replace("--permutations 10", "--permutations 99999999999999999999"),
        {"items.jsonl": GOOD},
        ("--permutations", "'99999999999999999999'"),
    ),
    "select-quotas-true": _clobber(
        S.split() + ["--quotas", '{"all": true}'], {"items.jsonl": GOOD}, ("quotas", "true/false")
    ),
    "select-quotas-nested-deeply": _clobber(
        S.split() + ["--quotas", "[" * 100000], {"items.jsonl": GOOD}, ("--quotas", "nested too deeply")
    ),
    "utilities-option-nested-deeply": _clobber(
        U.replace("metric_avg", "irt_diff").split() + ["--option", "lr=" + "[" * 100000],
        {"items.jsonl": GOOD},
        ("--option lr", "nested too deeply"),
    ),
    # ---- subsets and annotators
    "rank-subset-duplicate-id": _clobber(
        RANK + " --subset s.jsonl",
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": "b"}\n{"id": "a"}\n'},
        ("s.jsonl:3", "duplicate id 'a'", "line 1"),
    ),
    "rank-subset-id-is-a-list": _clobber(
        RANK + " --subset s.jsonl",
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": ["b"]}\n'},
        ("s.jsonl:2", "'id'", "list"),
    ),
    "diffuse-iterate-interactive-end-of-input": Case(
        (D_ITERATE + " --oracle interactive").split(),
        {"items.jsonl": GOOD},
        ("--oracle interactive", "input ended"),
        stdin="",
    ),
}
