"""The first bad-input cases (issue 12): non-finite numbers, silently accepted fields, wrong option types,
unwritable outputs, damaged checkpoints, pairwise and rank inputs."""

from __future__ import annotations

import json

from tests.bad_inputs import (
    CSV_HEADER,
    GOOD,
    PREFS,
    TARGETS,
    UTILITIES,
    B,
    Case,
    E,
    P,
    S,
    T,
    U,
    edit_meta,
    esa_inf,
    items,
    jsonl,
    shipped_checkpoint,
    ted_inf,
    truncated_head,
    with_score,
)

CASES = {
    # ---- non-finite numbers, refused where they are read (file, line, item, system, field)
    "jsonl-inf-score-info": Case(
        ["info", "--data", "items.jsonl"],
        {"items.jsonl": with_score("Infinity")},
        ("items.jsonl:2", "item 'b'", "system 'A'", "score 'm'", "finite"),
    ),
    "jsonl-nan-score-convert": Case(
        ["convert", "--data", "items.jsonl", "-o", "{d}/out.jsonl"],
        {"items.jsonl": with_score("NaN")},
        ("items.jsonl:2", "score 'm'", "finite"),
    ),
    "jsonl-neg-inf-utilities": Case(
        U.split(), {"items.jsonl": with_score("-Infinity")}, ("items.jsonl:2", "system 'A'", "score 'm'")
    ),
    "jsonl-inf-score-metric-var": Case(
        U.replace("metric_avg", "metric_var").split(),
        {"items.jsonl": with_score("1e999")},
        ("items.jsonl:2", "score 'm'"),
    ),
    "jsonl-inf-score-benchmark": Case(
        B.split(), {"items.jsonl": with_score("Infinity")}, ("items.jsonl:2", "score 'm'")
    ),
    "jsonl-inf-cost-select": Case(
        S.split(),
        {"items.jsonl": jsonl(items(i2={"cost": "X"}), raw_replace=('"X"', "Infinity"))},
        ("items.jsonl:3", "item 'c'", "field 'cost'"),
    ),
    "jsonl-string-cost": Case(
        S.split(), {"items.jsonl": jsonl(items(i0={"cost": "cheap"}))}, ("items.jsonl:1", "item 'a'", "field 'cost'")
    ),
    "csv-inf-score": Case(
        ["convert", "--data", "x.csv", "-o", "{d}/out.jsonl"],
        {"x.csv": CSV_HEADER + "a,hello,,h,1,2\nb,bye,,b,inf,3\n"},
        ("x.csv:3", "item 'b'", "system 'A'", "score 'human'"),
    ),
    "csv-nan-cost": Case(
        ["info", "--data", "x.csv"],
        {"x.csv": CSV_HEADER + "a,hello,nan,h,1,2\n"},
        ("x.csv:2", "item 'a'", "field 'cost'"),
    ),
    "ted-inf-avg-score": Case(
        ["info", "--data", "mqm_tiny_ende.avg_seg_scores.tsv"],
        {},
        ("avg_seg_scores.tsv:3", "sysA", "mqm_avg_score"),
        ted_inf,
    ),
    "esa-inf-score": Case(
        ["info", "--data", "esa", "--campaign", "en-cs"], {}, ("wave1.csv:", "system 'A'", "field 'score'"), esa_inf
    ),
    "scores-file-infinity-select": Case(
        S.replace("--method metric_var --metric m --budget 2", "--utility-file u.jsonl --budget 2").split(),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace("0.3", "Infinity")},
        ("u.jsonl:3", "item 'c'", "field 'utility'"),
    ),
    "scores-file-nan-benchmark": Case(
        (B + " --utility-file ext=u.jsonl").split(),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace("0.2", "NaN")},
        ("u.jsonl:2", "item 'b'", "field 'utility'"),
    ),
    "targets-nan-train": Case(
        T.split(), {"targets.jsonl": TARGETS.replace("3.0", "NaN")}, ("targets.jsonl:4", "target")
    ),
    # ---- silently accepted before
    "jsonl-item-without-id": Case(
        ["info", "--data", "items.jsonl"],
        {"items.jsonl": jsonl([{k: v for k, v in r.items() if k != "id" or r["id"] != "c"} for r in items()])},
        ("items.jsonl:3", "no 'id'"),
    ),
    "jsonl-tgt-is-a-list": Case(
        U.split(), {"items.jsonl": jsonl(items(i1={"tgt": ["x", "y", "z"]}))}, ("items.jsonl:2", "'tgt'", "list")
    ),
    "jsonl-scores-is-a-list": Case(
        ["info", "--data", "items.jsonl"],
        {"items.jsonl": jsonl(items(i0={"scores": [1, 2]}))},
        ("items.jsonl:1", "'scores'"),
    ),
    "jsonl-src-is-a-dict": Case(
        ["info", "--data", "items.jsonl"],
        {"items.jsonl": jsonl(items(i3={"src": {"en": "x"}}))},
        ("items.jsonl:4", "'src'"),
    ),
    "jsonl-duplicate-id": Case(
        S.split(),
        {"items.jsonl": jsonl(items(i2={"id": "a"}))},
        ("items.jsonl:3", "duplicate item id 'a'", "items.jsonl:1"),
    ),
    "csv-duplicate-tgt-column": Case(
        ["convert", "--data", "x.csv", "-o", "{d}/out.jsonl"],
        {"x.csv": "id,src,tgt:A,tgt:A\na,hello,h1,h2\n"},
        ("x.csv:1", "duplicate column 'tgt:A'"),
    ),
    "select-level-doc-without-documents": Case(
        (S + " --level doc").split(), {"items.jsonl": GOOD}, ("--level doc", "no documents")
    ),
    "benchmark-level-doc-without-documents": Case(
        (B + " --level doc").split(), {"items.jsonl": GOOD}, ("--level doc", "no documents")
    ),
    "select-negative-time-limit": Case(
        (S + " --time-limit -1").split(), {"items.jsonl": GOOD}, ("--time-limit", "'-1'")
    ),
    "benchmark-zero-time-limit": Case((B + " --time-limit 0").split(), {"items.jsonl": GOOD}, ("--time-limit", "'0'")),
    "benchmark-zero-seeds": Case(
        B.replace("--seeds 2", "--seeds 0").split(), {"items.jsonl": GOOD}, ("--seeds", "'0'")
    ),
    "elo-negative-k": Case((E + " --k -4").split(), {"prefs.csv": PREFS}, ("--k", "'-4'")),
    "build-targets-exclude-matches-nothing": Case(
        [
            "build-targets",
            "--data",
            "items.jsonl",
            "--method",
            "metric_var",
            "--exclude",
            "nothing*",
            "-o",
            "{d}/t.jsonl",
        ],
        {"items.jsonl": GOOD},
        ("--exclude", "'nothing*'"),
    ),
    "predict-empty-text-file": Case(P.split(), {"src.txt": "\n\n"}, ("src.txt", "empty"), shipped_checkpoint),
    # ---- wrong types of options and config values
    "utilities-option-lr-foo": Case(
        (U.replace("metric_avg", "irt_diff") + " --option lr=foo").split(),
        {"items.jsonl": GOOD},
        ("option 'lr'", "'foo'"),
    ),
    "utilities-option-epochs-float": Case(
        (U.replace("metric_avg", "irt_diff") + " --option epochs=1.5").split(),
        {"items.jsonl": GOOD},
        ("option 'epochs'", "integer"),
    ),
    "build-targets-option-wrong-type": Case(
        [
            "build-targets",
            "--data",
            "items.jsonl",
            "--method",
            "diversity",
            "--option",
            "similarity=3",
            "-o",
            "{d}/t.jsonl",
        ],
        {"items.jsonl": GOOD},
        ("option 'similarity'", "string"),
    ),
    "train-config-dropout-lots": Case(
        (T + " --config c.yaml").split(),
        {"targets.jsonl": TARGETS, "c.yaml": "model:\n  dropout: lots\n"},
        ("c.yaml", "model.dropout", "'lots'"),
    ),
    "train-override-max-epochs-foo": Case(
        (T + " --trainer.max_epochs foo").split(), {"targets.jsonl": TARGETS}, ("trainer.max_epochs", "'foo'")
    ),
    "train-config-hidden-sizes-text": Case(
        (T + " --config c.yaml").split(),
        {"targets.jsonl": TARGETS, "c.yaml": "model:\n  hidden_sizes: wide\n"},
        ("model.hidden_sizes", "'wide'"),
    ),
    "train-override-dropout-out-of-range": Case(
        (T + " --model.dropout 2").split(), {"targets.jsonl": TARGETS}, ("model.dropout", "[0, 1)")
    ),
    "train-override-batch-size-zero": Case(
        (T + " --data.batch_size 0").split(), {"targets.jsonl": TARGETS}, ("data.batch_size", ">= 1")
    ),
    "train-config-early-stopping-mode": Case(
        (T + " --config c.yaml").split(),
        {"targets.jsonl": TARGETS, "c.yaml": "early_stopping:\n  mode: sideways\n"},
        ("early_stopping.mode", "'sideways'"),
    ),
    "demo-proportion-out-of-range": Case(
        ["demo", "-o", "{d}/demo", "--proportion", "1.5"], {}, ("--proportion", "'1.5'")
    ),
    # ---- outputs that cannot be written: checked before the work
    "convert-output-is-a-directory": Case(
        ["convert", "--data", "items.jsonl", "-o", "{d}/folder"],
        {"items.jsonl": GOOD, "folder/keep": ""},
        ("folder", "is a directory"),
    ),
    "select-output-under-a-file": Case(
        S.replace("{d}/subset.jsonl", "{d}/items.jsonl/subset.jsonl").split(),
        {"items.jsonl": GOOD},
        ("items.jsonl", "is a file"),
    ),
    "select-manifest-path-is-a-directory": Case(
        S.split(), {"items.jsonl": GOOD, "subset.manifest.json/keep": ""}, ("subset.manifest.json", "is a directory")
    ),
    "utilities-save-irt-onto-a-directory": Case(
        (U.replace("metric_avg", "irt_diff") + " --save-irt {d}/irt").split(),
        {"items.jsonl": GOOD, "irt/keep": ""},
        ("irt", "is a directory"),
    ),
    "benchmark-plot-unknown-format": Case((B + " --plot {d}/b.xyz").split(), {"items.jsonl": GOOD}, ("b.xyz", ".png")),
    "benchmark-json-under-a-file": Case(
        B.replace("{d}/b.json", "{d}/items.jsonl/b.json").split(), {"items.jsonl": GOOD}, ("items.jsonl", "is a file")
    ),
    "elo-figure-onto-a-directory": Case(
        (E + " --plot {d}/fig.png -o {d}/e.json").split(),
        {"prefs.csv": PREFS, "fig.png/keep": ""},
        ("fig.png", "is a directory"),
    ),
    "elo-json-and-figure-same-path": Case(
        (E + " --plot {d}/out.png -o {d}/out.png").split(), {"prefs.csv": PREFS}, ("out.png", "two outputs")
    ),
    "elo-save-prefs-bad-suffix": Case(
        (E + " --save-prefs {d}/p.txt -o {d}/e.json").split(), {"prefs.csv": PREFS}, ("p.txt", ".csv")
    ),
    "diffuse-out-is-a-directory": Case(
        ["diffuse", "select", "--data", "items.jsonl", "--systems", "A,B", "--budget", "2", "-o", "{d}/sel"],
        {"items.jsonl": GOOD, "sel/keep": ""},
        ("sel", "is a directory"),
    ),
    "build-targets-output-is-a-directory": Case(
        ["build-targets", "--data", "items.jsonl", "--method", "metric_var", "-o", "{d}/t"],
        {"items.jsonl": GOOD, "t/keep": ""},
        ("t", "is a directory"),
    ),
    "predict-output-is-a-directory": Case(
        P.replace("{d}/p.jsonl", "{d}/pdir").split(),
        {"src.txt": "hello\n", "pdir/keep": ""},
        ("pdir", "is a directory"),
        shipped_checkpoint,
    ),
    "train-out-is-an-existing-file": Case(
        T.replace("{d}/est", "{d}/targets.jsonl").split(), {"targets.jsonl": TARGETS}, ("targets.jsonl", "is the input")
    ),
    "export-onto-an-existing-file": Case(
        ["export", "x.ckpt", "-o", "{d}/x.ckpt"], {"x.ckpt": "not a checkpoint"}, ("x.ckpt", "is the input")
    ),
    "demo-out-is-an-existing-file": Case(["demo", "-o", "{d}/demo"], {"demo": "a file"}, ("demo", "is a file")),
    # ---- damaged checkpoints (also through select --checkpoint)
    "predict-truncated-head": Case(P.split(), {"src.txt": "hello\n"}, ("head.safetensors", "damaged"), truncated_head),
    "predict-head-shape-mismatch": Case(
        P.split(),
        {"src.txt": "hello\n"},
        ("head.safetensors", "do not match"),
        lambda folder: edit_meta(folder, hidden_sizes=[7]),
    ),
    "select-checkpoint-truncated-head": Case(
        S.replace("--method metric_var --metric m", "--checkpoint ckpt").split(),
        {"items.jsonl": GOOD},
        ("head.safetensors", "damaged"),
        truncated_head,
    ),
    "predict-meta-hidden-sizes-not-a-list": Case(
        P.split(),
        {"src.txt": "hello\n"},
        ("precomet.json", "hidden_sizes"),
        lambda folder: edit_meta(folder, hidden_sizes="big"),
    ),
    "export-not-a-lightning-file": Case(
        ["export", "x.ckpt", "-o", "{d}/est"], {"x.ckpt": "not a checkpoint"}, ("x.ckpt", "weights-only")
    ),
    # ---- preference and campaign inputs of the pairwise tools
    "elo-unknown-label": Case(E.split(), {"prefs.csv": PREFS.replace("tie", "maybe")}, ("prefs.csv", "maybe")),
    "diffuse-iterate-three-systems": Case(
        ["diffuse", "iterate", "--data", "items.jsonl", "--systems", "A,B,C"], {"items.jsonl": GOOD}, ("two systems",)
    ),
    "elo-model-name-is-a-list": Case(
        ["elo", "--prefs", "p.jsonl", "-o", "{d}/e.json"],
        {"p.jsonl": json.dumps({"item": 1, "model_a": "A", "model_b": ["B"], "label": "a"}) + "\n"},
        ("p.jsonl:1", "'model_b'"),
    ),
    "utilities-kmeans-n-init-zero": Case(
        [
            "utilities",
            "--data",
            "items.jsonl",
            "--method",
            "kmeans",
            "--budget",
            "2",
            "--option",
            "n_init=0",
            "-o",
            "{d}/u.jsonl",
        ],
        {"items.jsonl": GOOD},
        ("'n_init'", "0"),
    ),
    "info-campaign-on-a-single-campaign-file": Case(
        ["info", "--data", "items.jsonl", "--campaign", "wmt23/en-de"],
        {"items.jsonl": GOOD},
        ("items.jsonl", "'wmt23/en-de'"),
    ),
    "convert-human-protocol-on-jsonl": Case(
        ["convert", "--data", "items.jsonl", "--human", "mqm", "-o", "{d}/o.jsonl"],
        {"items.jsonl": GOOD},
        ("items.jsonl", "--human 'mqm'"),
    ),
    "select-unknown-solver-with-top-k": Case((S + " --solver nope").split(), {"items.jsonl": GOOD}, ("solver 'nope'",)),
    "select-proportion-nan": Case(
        S.replace("--budget 2", "--proportion nan").split(), {"items.jsonl": GOOD}, ("--proportion", "'nan'")
    ),
    "select-budget-cost-inf": Case(
        S.replace("--budget 2", "--budget-cost inf").split(), {"items.jsonl": GOOD}, ("--budget-cost", "'inf'")
    ),
    "predict-unknown-device": Case(
        (P + " --device gpu0").split(), {"src.txt": "hello\n"}, ("--device 'gpu0'",), shipped_checkpoint
    ),
    # ---- rank: after the annotation
    "rank-unknown-score": Case(
        ["rank", "--data", "items.jsonl", "--score", "bleu", "-o", "{d}/r.json"], {"items.jsonl": GOOD}, ("'bleu'",)
    ),
    "rank-rounds-zero": Case(
        ["rank", "--data", "items.jsonl", "--rounds", "0", "-o", "{d}/r.json"],
        {"items.jsonl": GOOD},
        ("--rounds", "'0'"),
    ),
    "rank-confidence-one": Case(
        ["rank", "--data", "items.jsonl", "--confidence", "1", "-o", "{d}/r.json"],
        {"items.jsonl": GOOD},
        ("--confidence", "'1'"),
    ),
    "rank-subset-unknown-id": Case(
        ["rank", "--data", "items.jsonl", "--subset", "s.jsonl", "-o", "{d}/r.json"],
        {"items.jsonl": GOOD, "s.jsonl": '{"id": "a"}\n{"id": "zz"}\n'},
        ("'zz'",),
    ),
    "rank-plot-unknown-format": Case(
        ["rank", "--data", "items.jsonl", "-o", "{d}/r.json", "--plot", "{d}/r.gif"],
        {"items.jsonl": GOOD},
        ("r.gif",),
    ),
    "rank-inf-human-score": Case(
        ["rank", "--data", "items.jsonl", "-o", "{d}/r.json"],
        {"items.jsonl": jsonl(items(), raw_replace=('"human": 4, "m": 0.2', '"human": Infinity, "m": 0.2'))},
        ("items.jsonl:2", "human"),
    ),
    "elo-data-inf-score": Case(
        ["elo", "--data", "items.jsonl", "--score", "m", "--rounds", "5", "-o", "{d}/e.json"],
        {"items.jsonl": with_score("Infinity")},
        ("items.jsonl:2", "score 'm'"),
    ),
    # ---- outputs named like another format; every item dropped at loading
    "utilities-output-named-parquet": Case(
        U.replace("u.jsonl", "u.parquet").split(), {"items.jsonl": GOOD}, ("u.parquet", "JSON Lines", ".jsonl")
    ),
    "build-targets-output-named-csv": Case(
        ["build-targets", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "-o", "{d}/t.csv"],
        {"items.jsonl": GOOD},
        ("t.csv", "JSON Lines"),
    ),
    "predict-output-named-parquet": Case(
        P.replace("p.jsonl", "p.parquet").split(),
        {"src.txt": "a\nb\n"},
        ("p.parquet", "JSON Lines"),
        shipped_checkpoint,
    ),
    "convert-every-item-dropped": Case(
        ["convert", "--data", "items.jsonl", "-o", "{d}/c.jsonl"],
        {
            "items.jsonl": jsonl(
                [
                    {"id": "a", "src": "x", "tgt": {"A": "y", "B": "z"}, "scores": {"A": {"human": 1}}},
                    {"id": "b", "src": "x2", "tgt": {"A": "y", "B": "z"}, "scores": {"B": {"human": 1}}},
                ]
            )
        },
        ("items.jsonl", "none of its 2 item(s)", "--keep-incomplete"),
    ),
    "info-one-line-file-with-a-repeated-key": Case(
        ["info", "--data", "items.jsonl"],
        {"items.jsonl": '{"id": "a", "src": "x", "src": "y"}\n'},
        ("items.jsonl:1", "key 'src' appears twice"),
    ),
    "utilities-diversity-outputs-missing-in-two-systems": Case(
        [
            "utilities",
            "--data",
            "items.jsonl",
            "--method",
            "diversity",
            "--option",
            "similarity=chrf",
            "-o",
            "{d}/u.jsonl",
        ],
        {
            "items.jsonl": jsonl(
                [
                    {"id": "a", "src": "One", "tgt": {"A": "x", "B": None, "C": "z"}},
                    {"id": "b", "src": "Two", "tgt": {"A": "x", "B": "y", "C": None}},
                    {"id": "c", "src": "Three", "tgt": {"A": "x", "B": "y", "C": "z"}},
                ]
            )
        },
        ("item 'a'", "2 item(s) lack an output", "['B', 'C']"),
    ),
}
