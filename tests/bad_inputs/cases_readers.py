"""Bad-input cases of the input readers (issue 20): encodings (latin-1, UTF-16, NUL bytes), JSON nested too deeply,
repeated keys and over-long numbers, 400-digit scores, non-text fields, path-like names found in the data, broken
saved-dataset metadata and duplicate rows — each refused naming the file and the line or field."""

from __future__ import annotations

import json
from pathlib import Path

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
    esa_tree,
    items,
    jsonl,
    release_da_file,
    release_tree,
    shipped_checkpoint,
    with_score,
)

LATIN1 = GOOD.replace("three four five", "trois quatre cinq é").encode("latin-1")  # line 2 is not UTF-8
DEEP = "[" * 200_000
BIG = "1" + "0" * 400  # a 400-digit integer: no float holds it
HUGE = "1" * 5000  # over Python's integer-digit limit
INFO = ["info", "--data", "items.jsonl"]
CONVERT = ["convert", "--data", "x.csv", "-o", "{d}/out.jsonl"]
ESA = ["info", "--data", "esa", "--campaign", "en-cs"]
MTME = ["info", "--data", "mtme", "--campaign", "wmt23/en-de"]
RELEASE = ["info", "--data", "release", "--campaign", "wmt22/en-de"]
HF = ["convert", "--data", "ds", "-o", "{d}/out.jsonl"]
TED_HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
RANK = ["rank", "--data", "items.jsonl", "-o", "{d}/r.json"]


def esa_system_path(folder: Path) -> None:
    """A rated system named like a path: it would read txt/sources/en-cs.txt as its outputs."""
    wave = esa_tree(folder) / "humeval" / "wave1.csv"
    wave.write_text(wave.read_text().replace("ann1,A,1,", "ann1,../../sources/en-cs,1,", 1))


def esa_latin1(folder: Path) -> None:
    wave = esa_tree(folder) / "humeval" / "wave1.csv"
    wave.write_bytes(wave.read_bytes().replace(b"ann1,A,1,", b"ann\xe9,A,1,", 1))


def esa_sources_utf16(folder: Path) -> None:
    sources = esa_tree(folder) / "txt" / "sources" / "en-cs.txt"
    sources.write_bytes(sources.read_text(encoding="utf-8").encode("utf-16"))


def _mtme(folder: Path, **replace: bytes) -> None:
    """A tiny mt-metrics-eval root (wmt23/en-de, 2 lines, systems A and B); ``replace`` = {file key: bytes}."""
    base = folder / "mtme" / "wmt23"
    files = {
        "sources": (base / "sources" / "en-de.txt", b"Hello\nBye\n"),
        "ref": (base / "references" / "en-de.refA.txt", b"Hallo\nTschuss\n"),
        "A": (base / "system-outputs" / "en-de" / "A.txt", b"Hallo\nTschau\n"),
        "B": (base / "system-outputs" / "en-de" / "B.txt", b"Hi\nBye\n"),
        "mqm": (base / "human-scores" / "en-de.mqm.seg.score", b"A\t-1\nA\t-2\nB\t0\nB\t-1\n"),
    }
    for key, (path, content) in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(replace.get(key, content))


def release_output_latin1(folder: Path) -> None:
    output = release_tree(folder) / "txt" / "system-outputs" / "generaltest2022.en-de.hyp.M1.de"
    output.write_bytes(output.read_bytes().rstrip(b"\n") + b" caf\xe9\n")


def release_huge_sid(folder: Path) -> None:
    scores = release_da_file(folder)
    scores.write_text(f"SYS SID RAW.SCR Z.SCR N\nM1.3 1 80 0.5 1\nM1.3 {HUGE} 70 0.1 1\n")


def _dataset(folder: Path) -> Path:
    import datasets

    datasets.Dataset.from_list(items()).save_to_disk(str(folder / "ds"))
    for cache in (folder / "ds").glob("cache-*"):
        cache.unlink()
    return folder / "ds"


def hf_state(text: str):
    def prepare(folder: Path) -> None:
        (_dataset(folder) / "state.json").write_text(text)

    return prepare


def hf_state_change(**change):
    def prepare(folder: Path) -> None:
        state = _dataset(folder) / "state.json"
        state.write_text(json.dumps({**json.loads(state.read_text()), **change}))

    return prepare


def hf_info_list(folder: Path) -> None:
    (_dataset(folder) / "dataset_info.json").write_text("[1, 2]")


def hf_dict_split_path(folder: Path) -> None:
    import datasets

    datasets.DatasetDict({"test": datasets.Dataset.from_list(items())}).save_to_disk(str(folder / "dd"))
    (folder / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["test", "../outside"]}))


def alpaca(record: dict) -> str:
    base = {"instruction": "say hi", "generator_1": "A", "generator_2": "B", "preference": 1.2}
    return json.dumps([{**base, **record}])


TIMED = jsonl(items(**{f"i{i}": {"id": f"t/{i}", "doc": "d"} for i in range(4)}))

CASES = {
    # ---- encodings: latin-1, UTF-16 (with and without a byte-order mark), in every kind of text input
    "readers-jsonl-latin1-info": Case(INFO, {"items.jsonl": LATIN1}, ("items.jsonl:2", "not UTF-8", "0xE9")),
    "readers-jsonl-utf16-convert": Case(
        ["convert", "--data", "items.jsonl", "-o", "{d}/o.jsonl"],
        {"items.jsonl": GOOD.encode("utf-16")},
        ("items.jsonl", "UTF-16"),
    ),
    "readers-jsonl-utf16-no-bom-select": Case(
        S.split(), {"items.jsonl": GOOD.encode("utf-16-le")}, ("items.jsonl:1", "NUL")
    ),
    "readers-jsonl-utf32-benchmark": Case(B.split(), {"items.jsonl": GOOD.encode("utf-32")}, ("items.jsonl", "UTF-32")),
    "readers-diffuse-latin1": Case(
        ["diffuse", "select", "--data", "items.jsonl", "--systems", "A,B", "--budget", "2"],
        {"items.jsonl": LATIN1},
        ("items.jsonl:2", "UTF-8", "0xE9"),
    ),
    "readers-csv-latin1-convert": Case(
        CONVERT,
        {"x.csv": (CSV_HEADER + "a,hello,,h,1,2\nb,caf\xe9,,b,1,3\n").encode("latin-1")},
        ("x.csv:3", "UTF-8", "0xE9"),
    ),
    "readers-csv-utf16-info": Case(
        ["info", "--data", "x.csv"], {"x.csv": (CSV_HEADER + "a,hello,,h,1,2\n").encode("utf-16")}, ("x.csv", "UTF-16")
    ),
    "readers-esa-csv-latin1": Case(ESA, {}, ("wave1.csv:2", "UTF-8", "0xE9"), esa_latin1),
    "readers-esa-sources-utf16": Case(ESA, {}, ("en-cs.txt", "UTF-16"), esa_sources_utf16),
    "readers-ted-tsv-latin1": Case(
        ["info", "--data", "t_ende.tsv"],
        {"t_ende.tsv": TED_HEADER.encode() + b"A\td\t1\t1\tr\tcaf\xe9\tx\tNo-error\tNo-error\n"},
        ("t_ende.tsv:2", "UTF-8", "0xE9"),
    ),
    "readers-mtme-sources-latin1": Case(
        MTME, {}, ("en-de.txt:2", "UTF-8", "0xE9"), lambda d: _mtme(d, sources=b"Hello\nCaf\xe9\n")
    ),
    "readers-mtme-output-utf16": Case(
        MTME, {}, ("A.txt", "UTF-16"), lambda d: _mtme(d, A="Hallo\nTschau\n".encode("utf-16"))
    ),
    "readers-release-output-latin1": Case(RELEASE, {}, ("hyp.M1.de:", "UTF-8", "0xE9"), release_output_latin1),
    "readers-prefs-csv-latin1": Case(
        E.split(), {"prefs.csv": (PREFS + "4,\xc9,B,a\n").encode("latin-1")}, ("prefs.csv:5", "UTF-8")
    ),
    "readers-prefs-csv-utf16": Case(E.split(), {"prefs.csv": PREFS.encode("utf-16")}, ("prefs.csv", "UTF-16")),
    "readers-prefs-agree-with-utf16": Case(
        (E + " --agree-with human.csv").split(),
        {"prefs.csv": PREFS, "human.csv": PREFS.encode("utf-16")},
        ("human.csv", "UTF-16"),
    ),
    "readers-scores-file-latin1-select": Case(
        S.replace("--method metric_var --metric m --budget 2", "--utility-file u.jsonl --budget 2").split(),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace('"b"', '"\xe9"').encode("latin-1")},
        ("u.jsonl:2", "UTF-8", "0xE9"),
    ),
    "readers-predict-text-latin1": Case(
        P.split(), {"src.txt": b"hello\ncaf\xe9\n"}, ("src.txt:2", "UTF-8", "0xE9"), shipped_checkpoint
    ),
    "readers-predict-text-utf16": Case(
        P.split(), {"src.txt": "hello\nworld\n".encode("utf-16")}, ("src.txt", "UTF-16"), shipped_checkpoint
    ),
    "readers-train-targets-utf16": Case(
        T.split(), {"targets.jsonl": TARGETS.encode("utf-16")}, ("targets.jsonl", "UTF-16")
    ),
    "readers-cost-from-times-latin1": Case(
        (S + " --cost-from-times times.csv").split(),
        {"items.jsonl": TIMED, "times.csv": b"ann\xe9,A,0,TGT,eng,deu,80,d#A,False,[],1.0,2.0\n"},
        ("times.csv:1", "UTF-8", "0xE9"),
    ),
    # ---- JSON nested too deeply, a key twice, an integer over the digit limit
    "readers-jsonl-deep-array-info": Case(
        INFO, {"items.jsonl": GOOD + DEEP + "\n"}, ("items.jsonl:5", "nested too deeply")
    ),
    "readers-jsonl-deep-in-src-select": Case(
        S.split(),
        {"items.jsonl": GOOD.replace('"src": "six"', '"src": ' + DEEP)},
        ("items.jsonl:3", "nested too deeply"),
    ),
    "readers-prefs-jsonl-deep": Case(
        ["elo", "--prefs", "prefs.jsonl", "--rounds", "10"],
        {"prefs.jsonl": '{"item": 1, "model_a": "A", "model_b": "B", "label": "a"}\n' + DEEP + "\n"},
        ("prefs.jsonl:2", "nested too deeply"),
    ),
    "readers-alpaca-deep": Case(
        ["elo", "--prefs", "annotations.json", "--rounds", "10"],
        {"annotations.json": DEEP},
        ("annotations.json", "nested"),
    ),
    "readers-subset-deep-rank": Case(
        RANK + ["--subset", "s.jsonl"],
        {"items.jsonl": GOOD, "s.jsonl": DEEP + "\n"},
        ("s.jsonl:1", "nested too deeply"),
    ),
    "readers-manifest-deep-rank": Case(
        RANK + ["--manifest", "m.json"], {"items.jsonl": GOOD, "m.json": DEEP}, ("m.json", "nested too deeply")
    ),
    "readers-manifest-utf16-rank": Case(
        RANK + ["--manifest", "m.json"],
        {"items.jsonl": GOOD, "m.json": json.dumps({"method": "random"}).encode("utf-16")},
        ("m.json", "UTF-16"),
    ),
    "readers-targets-deep-train": Case(
        T.split(), {"targets.jsonl": TARGETS + DEEP + "\n"}, ("targets.jsonl:7", "nested")
    ),
    "readers-jsonl-key-twice": Case(
        INFO,
        {"items.jsonl": jsonl(items(i1={"src": "X"}), raw_replace=('"src": "X"', '"src": "x", "src": "y"'))},
        ("items.jsonl:2", "'src'", "twice"),
    ),
    "readers-jsonl-5000-digit-score": Case(U.split(), {"items.jsonl": with_score(HUGE)}, ("items.jsonl:2", "digits")),
    # ---- 400-digit numbers: not a finite number, with file, line, item, system and field
    "readers-jsonl-400-digit-score-utilities": Case(
        U.split(), {"items.jsonl": with_score(BIG)}, ("items.jsonl:2", "item 'b'", "system 'A'", "score 'm'", "finite")
    ),
    "readers-jsonl-400-digit-cost-select": Case(
        S.split(),
        {"items.jsonl": jsonl(items(i0={"cost": "X"}), raw_replace=('"X"', BIG))},
        ("items.jsonl:1", "item 'a'", "field 'cost'", "finite"),
    ),
    "readers-utilities-400-digit": Case(
        S.replace("--method metric_var --metric m --budget 2", "--utility-file u.jsonl --budget 2").split(),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace("0.2", BIG)},
        ("u.jsonl:2", "item 'b'", "field 'utility'", "finite"),
    ),
    "readers-prefs-likert-400-digit": Case(
        ["elo", "--prefs", "prefs.jsonl", "--rounds", "10"],
        {"prefs.jsonl": f'{{"item": 1, "model_a": "A", "model_b": "B", "likert": {BIG}}}\n'},
        ("prefs.jsonl:1", "Likert"),
    ),
    "readers-alpaca-400-digit-preference": Case(
        ["elo", "--prefs", "annotations.json", "--rounds", "10"],
        {"annotations.json": alpaca({"preference": "X"}).replace('"X"', BIG)},
        ("annotations.json", "record 0", "finite"),
    ),
    "readers-release-huge-sid": Case(RELEASE, {}, ("ad-seg-scores-en-de.csv:3", "SID"), release_huge_sid),
    # ---- non-text fields where the format wants a text
    "readers-jsonl-src-number": Case(
        INFO, {"items.jsonl": jsonl(items(i0={"src": 12345}))}, ("items.jsonl:1", "'src'", "string")
    ),
    "readers-jsonl-doc-number-build-targets": Case(
        ["build-targets", "--data", "items.jsonl", "--method", "metric_var", "-o", "{d}/t.jsonl"],
        {"items.jsonl": jsonl(items(i2={"doc": 7}))},
        ("items.jsonl:3", "'doc'"),
    ),
    "readers-jsonl-campaign-list-info": Case(
        INFO, {"items.jsonl": jsonl(items(i0={"campaign": ["x"]}))}, ("items.jsonl:1", "'campaign'")
    ),
    "readers-jsonl-blank-src-rank": Case(
        RANK, {"items.jsonl": jsonl(items(i1={"src": "  "}))}, ("items.jsonl:2", "empty source")
    ),
    "readers-alpaca-instruction-number": Case(
        ["elo", "--prefs", "annotations.json", "--rounds", "10"],
        {"annotations.json": alpaca({"instruction": 42})},
        ("annotations.json", "record 0", "'instruction'"),
    ),
    "readers-jsonl-ref-number-convert": Case(
        ["convert", "--data", "items.jsonl", "-o", "{d}/o.jsonl"],
        {"items.jsonl": jsonl(items(i1={"ref": 3}))},
        ("items.jsonl:2", "'ref'", "string"),
    ),
    "readers-jsonl-domain-number-benchmark": Case(
        B.split(), {"items.jsonl": jsonl(items(i3={"domain": 1}))}, ("items.jsonl:4", "'domain'", "string")
    ),
    "readers-jsonl-empty-system-name": Case(
        INFO,
        {"items.jsonl": GOOD.replace('"A": "one two A"', '"": "one two A"')},
        ("items.jsonl:1", "empty system name"),
    ),
    "readers-jsonl-empty-score-name": Case(
        U.split(), {"items.jsonl": GOOD.replace('"m": 0.5', '"": 0.5')}, ("items.jsonl:1", "empty score name")
    ),
    "readers-csv-unclosed-quote": Case(
        ["info", "--data", "x.csv"], {"x.csv": 'id,src\na,"hello\nb,bye\n'}, ("x.csv:3", "malformed CSV")
    ),
    "readers-prefs-csv-text-after-quote": Case(
        E.split(), {"prefs.csv": PREFS + '4,"A"x,B,a\n'}, ("prefs.csv:5", "malformed CSV")
    ),
    # ---- names from the data that would become file paths
    "readers-esa-system-path": Case(ESA, {}, ("wave1.csv:2", "system name", "../../sources/en-cs"), esa_system_path),
    "readers-hf-split-path": Case(
        ["info", "--data", "dd", "--campaign", "test"], {}, ("dataset_dict.json", "'../outside'"), hf_dict_split_path
    ),
    "readers-hf-data-file-outside": Case(
        HF, {}, ("state.json", "../x.arrow"), hf_state_change(_data_files=[{"filename": "../x.arrow"}])
    ),
    # ---- broken saved-dataset metadata
    "readers-hf-state-invalid-json": Case(HF, {}, ("state.json:1", "invalid JSON"), hf_state("{not json")),
    "readers-hf-state-not-object": Case(HF, {}, ("state.json", "JSON object"), hf_state("[]")),
    "readers-hf-state-missing-key": Case(HF, {}, ("state.json", "'_data_files'"), hf_state("{}")),
    "readers-hf-state-wrong-type": Case(HF, {}, ("state.json", "'_split'"), hf_state_change(_split=3)),
    "readers-hf-dataset-info-list": Case(HF, {}, ("dataset_info.json", "JSON object"), hf_info_list),
    # ---- duplicates named with the file and both lines
    "readers-ted-avg-duplicate-row": Case(
        ["info", "--data", "t_ende.avg_seg_scores.tsv"],
        {
            "t_ende.avg_seg_scores.tsv": "system mqm_avg_score seg_id\nA -1 1\nA -2 1\n",
            "t_ende.tsv": TED_HEADER + "A\td\t1\t1\tr\thello\thallo\tNo-error\tNo-error\n",
        },
        ("avg_seg_scores.tsv:3", "duplicate", "line 2"),
    ),
    "readers-prefs-csv-short-row": Case(E.split(), {"prefs.csv": PREFS + "4,A,B\n"}, ("prefs.csv:5", "fields")),
    # ---- training targets and utility files: text ids, finite targets, one row per (campaign, id)
    "readers-targets-400-digit-target": Case(
        T.split(), {"targets.jsonl": TARGETS.replace("3.0", "1" + "0" * 400)}, ("targets.jsonl:4", "'target'", "finite")
    ),
    "readers-targets-repeated-row": Case(
        T.split(),
        {"targets.jsonl": TARGETS + TARGETS.splitlines()[0] + "\n"},
        ("targets.jsonl:7", "repeats", "targets.jsonl:1"),
    ),
    "readers-targets-id-is-a-list": Case(
        T.split(), {"targets.jsonl": TARGETS.replace('"id": "2"', '"id": [2]')}, ("targets.jsonl:3", "'id'", "list")
    ),
    "readers-scores-file-id-is-a-list": Case(
        S.replace("--method metric_var --metric m", "--utility-file u.jsonl").split(),
        {"items.jsonl": GOOD, "u.jsonl": UTILITIES.replace('"id": "b"', '"id": ["b"]')},
        ("u.jsonl:2", "'id'", "list"),
    ),
}
