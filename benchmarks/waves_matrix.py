"""Fault matrix of ``precomet waves`` (issue 51): bad inputs, faults and races on ``precomet waves``, ``waves next``
and ``waves replay``, each run in a subprocess (timeout 60 s) in its own temporary folder and classified:

* ``clean``: exit 2, one ``precomet waves: error:`` line that names the culprit, nothing written, inputs untouched;
* ``correct``: the right result (checked per case);
* ``destructive``: an input, an earlier result or the manifest damaged or removed;
* ``silent``: exit 0 with a wrong answer or an ignored option;
* ``partial``: a failure that leaves some output behind;
* ``internal``: a traceback or exit 1 "internal error";
* ``vague``: an error that does not say which file / field / what to do, or names a hidden temporary;
* ``hang``: more than 60 s;
* ``refused``: a valid input refused.

Run: ``.venv/bin/python benchmarks/waves_matrix.py [-k NAME] [-j 2] [--json FILE] [--write]`` (``--write``
rewrites ``benchmarks/results/waves-matrix.md``; ``--before FILE`` adds an earlier run's classes beside this run's;
``--render FILE`` writes the markdown of a saved run without running). ``WAVES_MATRIX_CODE=DIR`` runs the cases
against the ``precomet`` package under ``DIR`` (e.g. a copy of the code before a fix)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRECOMET = [sys.executable, "-m", "precomet", "--no-progress"]
TIMEOUT = 60.0
CLASSES = ("clean", "correct", "destructive", "silent", "partial", "internal", "vague", "hang", "refused")
SYSTEMS = ("A", "B", "C")


# ------------------------------------------------------------------------------------------------ tiny inputs
def pool_rows(n: int = 30, systems: tuple[str, ...] = SYSTEMS, *, doc: bool = False, human: bool = False) -> list:
    rows = []
    for i in range(n):
        row: dict = {"id": f"s{i}", "src": f"source sentence {i} {'x' * (i % 7)}"}
        row["tgt"] = {s: f"{s} output {i}" for s in systems}
        if doc:
            row["doc"] = f"d{i // 3}"
        if human:
            row["scores"] = {s: {"human": float((i * 37 + k * 11) % 17) + 2.0 * k} for k, s in enumerate(systems)}
        rows.append(row)
    return rows


def jsonl(rows: list) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write(d: Path, name: str, content: str | bytes) -> Path:
    path = d / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def precomet(d: Path, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*PRECOMET, *argv], cwd=d, capture_output=True, text=True, timeout=TIMEOUT, env=_env(), check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"setup step failed: {argv}: {done.stderr}")
    return done


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.environ.get("WAVES_MATRIX_CODE", str(ROOT)), "PYTHONWARNINGS": "ignore"}


LIVE = ["waves", "--data", "pool.jsonl", "--chooser", "random", "--size", "6", "--manifest", "m.json"]


def pool(d: Path, **kw) -> Path:
    write(d, "pool.jsonl", jsonl(pool_rows(**kw)))
    return d


def first_wave(d: Path, *extra: str, **kw) -> Path:
    """A 30-item × 3-system pool, and its first wave: ``m.json`` and ``w1.jsonl``."""
    pool(d, **kw)
    precomet(d, [*LIVE, *extra, "--batch", "w1.jsonl"])
    return d


def cells(d: Path, name: str = "w1.jsonl") -> list[dict]:
    return [json.loads(line) for line in (d / name).read_text(encoding="utf-8").splitlines()]


def value(item: str, system: str) -> float:
    i = int(item.lstrip("s"))
    return float((i * 37 + SYSTEMS.index(system) * 11) % 17) + 2.0 * SYSTEMS.index(system)


def judged_items(batch: list[dict], score: Callable[[str, str], object] = value) -> list[dict]:
    items: dict[str, dict] = {}
    for c in batch:
        item = items.setdefault(c["id"], {"id": c["id"], "src": c["src"], "scores": {}})
        item["scores"][c["system"]] = {"human": score(c["id"], c["system"])}
    return list(items.values())


def answered(d: Path, *extra: str, score: Callable[[str, str], object] = value, **kw) -> Path:
    """The first wave and its judgements ``j1.jsonl``."""
    first_wave(d, *extra, **kw)
    write(d, "j1.jsonl", jsonl(judged_items(cells(d), score)))
    return d


def j1_raw(text: Callable[[list[dict]], str | bytes]) -> Callable[[Path], None]:
    """The first wave, and ``j.x`` = ``text(its cells)``."""

    def prepare(d: Path) -> None:
        first_wave(d)
        write(d, "j.jsonl", text(cells(d)))

    return prepare


def csv_judgements(batch: list[dict], sep: str = ",") -> str:
    items = judged_items(batch)
    header = ["id", "src", *(f"score:human:{s}" for s in SYSTEMS)]
    lines = [sep.join(header)]
    for item in items:
        lines.append(
            sep.join([item["id"], item["src"], *(str(item["scores"].get(s, {}).get("human", "")) for s in SYSTEMS)])
        )
    return "\n".join(lines) + "\n"


def campaign_id(d: Path, wave: int = 0) -> str:
    """The Pearmut campaign id that ``--pearmut`` recorded for a wave (since 0.20.1 an export is read only for the
    campaign ids the manifest records; a JSONL log under its file name, ``<campaign id>.jsonl``)."""
    return manifest_of(d)["waves"][wave]["pearmut_campaign"]


def pearmut_records(batch: list[dict], score: Callable[[str, str], object] = value, annotators: int = 1) -> list:
    by_item: dict[str, dict] = {}
    for c in batch:
        by_item.setdefault(c["id"], {})[c["system"]] = {"score": score(c["id"], c["system"])}
    records = []
    for a in range(annotators):
        for k, (item, annotation) in enumerate(by_item.items()):
            scored = {m: {"score": s["score"] + a if isinstance(s["score"], (int, float)) else s["score"]}
                      for m, s in annotation.items()}  # fmt: skip
            records.append({"user_id": f"u{a}", "item_i": k, "item": [{"item_id": item}], "annotation": [scored]})
    return records


def pearmut_export(
    batch: list[dict], campaign: str, score: Callable[[str, str], object] = value, annotators: int = 1
) -> str:
    """Pearmut's annotation download (``{campaign_id: [record, …]}``) of ``batch`` under ``campaign``."""
    return json.dumps({campaign: pearmut_records(batch, score, annotators)})


def appraise_first(d: Path, *, rows: Callable[[list[dict]], list[str]] | None = None) -> Path:
    """Pool with docs, an Appraise batch ``w1.json``, and ``a.csv`` = its scores (or ``rows(items)``)."""
    pool(d, doc=True)
    precomet(d, [*LIVE, "--batch", "w1.json", "--batch-format", "appraise"])
    items = [item for batch in json.loads((d / "w1.json").read_text()) for item in batch["items"]]
    lines = rows(items) if rows else appraise_rows(items)
    write(d, "a.csv", "\n".join(lines) + "\n")
    return d


def appraise_rows(items: list[dict], score: Callable[[int], str] = lambda k: str((k * 37) % 17 * 5)) -> list[str]:
    return [
        f"ann1,{it['targetID']},{it['itemID']},TGT,eng,deu,{score(k)},{it['documentID']},False,[],1.0,2.0"
        for k, it in enumerate(items)
    ]


def edit_manifest(change: Callable[[dict], object], *, answer: bool = True) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        (answered if answer else first_wave)(d)
        data = json.loads((d / "m.json").read_text())
        change(data)
        (d / "m.json").write_text(json.dumps(data))

    return prepare


def raw_manifest(text: Callable[[str], str | bytes]) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        answered(d)
        new = text((d / "m.json").read_text())
        write(d, "m.json", new)

    return prepare


def _without(key: str) -> Callable[[dict], object]:
    return lambda m: wave0(m).pop(key)


def wave0(data: dict) -> dict:
    return data["waves"][0]


# ------------------------------------------------------------------------------------------------ result checks
@dataclass
class Run:
    rc: int | None
    out: str
    err: str
    seconds: float
    timed_out: bool = False
    extra: dict = field(default_factory=dict)


Check = Callable[[Path, Run], str | None]  # None: correct; else why the result is wrong


def setting(d: Path, name: str):
    """A setting of the campaign's manifest (version 2 keeps them under ``settings``)."""
    return manifest_of(d)["settings"][name]


def manifest_of(d: Path, name: str = "m.json") -> dict:
    return json.loads((d / name).read_text())


def drawn_cells(d: Path, wave: int = -1, name: str = "m.json") -> set[tuple[str, str]]:
    record = manifest_of(d, name)["waves"][wave]["drawn"]
    return {(item, s) for item, names in record.items() for s in names}


def batch_cells(d: Path, name: str) -> set[tuple[str, str]]:
    return {(c["id"], c["system"] or "*") for c in cells(d, name)}


def new_wave(batch: str = "w2.jsonl", waves: int = 2) -> Check:
    """A new wave drawn, recorded as wave ``waves`` and equal to the batch."""

    def check(d: Path, run: Run) -> str | None:
        if not (d / batch).exists():
            return f"no {batch} written"
        data = manifest_of(d)
        if len(data["waves"]) != waves:
            return f"manifest has {len(data['waves'])} waves, expected {waves}"
        if batch.endswith(".jsonl") and drawn_cells(d) != batch_cells(d, batch):
            return "the batch is not the manifest's last wave"
        if not drawn_cells(d):
            return "the new wave draws no cell: the campaign would wait for it forever"
        return None

    return check


def report_says(**expected) -> Check:
    def check(d: Path, run: Run) -> str | None:
        report = json.loads((d / "r.json").read_text())
        for key, want in expected.items():
            got = report.get(key)
            if callable(want):
                if not want(got):
                    return f"report {key} = {got!r}"
            elif got != want:
                return f"report {key} = {got!r}, expected {want!r}"
        bad = [k for k, v in report.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            return f"report has non-finite {bad}"
        return None

    return check


def all_of(*checks: Check) -> Check:
    def check(d: Path, run: Run) -> str | None:
        for c in checks:
            problem = c(d, run)
            if problem:
                return problem
        return None

    return check


def exists(*names: str) -> Check:
    return lambda d, run: next((f"{n} not written" for n in names if not (d / n).exists()), None)


def means_close(expected: dict[str, float], tol: float = 1e-6) -> Check:
    def check(d: Path, run: Run) -> str | None:
        ranking = {r["system"]: r["mean"] for r in json.loads((d / "r.json").read_text())["ranking"]}
        for s, m in expected.items():
            if s not in ranking or abs(ranking[s] - m) > tol:
                return f"mean of {s} = {ranking.get(s)}, expected {m}"
        return None

    return check


def first_wave_means(d: Path, offset: float = 0.0) -> dict[str, float]:
    """Wave 1's Horvitz-Thompson means (its predictor is 0 and its probabilities equal): sum(y / pi) / N."""
    wave = manifest_of(d)["waves"][0]
    pi = wave["unit_probability"][0]
    n = len(wave["open_units"])
    by: dict[str, float] = {}
    for c in cells(d):
        by[c["system"]] = by.get(c["system"], 0.0) + (value(c["id"], c["system"]) + offset) / pi / n
    return by


# ------------------------------------------------------------------------------------------------ the cases
@dataclass
class Case:
    name: str
    area: str
    argv: str  # after ``precomet``; split with shlex
    prepare: Callable[[Path], None] | None = None
    expect: str = "error"  # "error": a clean error is right; "ok": a correct result is
    says: tuple[str, ...] = ()  # fragments a clean error names
    check: Check | None = None  # for "ok"
    outputs: tuple[str, ...] = ("m.json",)  # existing files a success may replace
    runner: Callable[[Case, Path], Run] | None = None  # a special run (races, signals)
    note: str = ""


J = LIVE + ["--judgements", "j1.jsonl"]
JS = " ".join(J)
LS = " ".join(LIVE)
R = "waves replay --data judged.jsonl --chooser random --size 20% --runs 3"


def judged_pool(d: Path, n: int = 30, **kw) -> None:
    write(d, "judged.jsonl", jsonl(pool_rows(n, human=True, **kw)))


def with_items(edit: Callable[[list[dict]], list[dict]]) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        first_wave(d)
        write(d, "j.jsonl", jsonl(edit(judged_items(cells(d)))))

    return prepare


def set_score(v: object, k: int = 0) -> Callable[[list[dict]], list[dict]]:
    def edit(items: list[dict]) -> list[dict]:
        system = next(iter(items[k]["scores"]))
        items[k]["scores"][system]["human"] = v
        return items

    return edit


def raw_score(text: str) -> Callable[[Path], None]:
    """Judgements whose first score is the raw JSON ``text``."""

    def prepare(d: Path) -> None:
        first_wave(d)
        items = judged_items(cells(d), lambda i, s: "XX")
        body = jsonl(items).replace('"XX"', text, 1)
        body = body.replace('"XX"', "1.0")
        write(d, "j.jsonl", body)

    return prepare


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(*args, **kw) -> None:
        cases.append(Case(*args, **kw))

    jx = f"{LS} --judgements j.jsonl --batch w2.jsonl --report r.json"
    # --- judgement files
    add("judgements-empty", "judgements", jx, j1_raw(lambda b: ""), says=("j.jsonl",))
    add("judgements-blank-lines", "judgements", jx, j1_raw(lambda b: "\n\n  \n"), says=("j.jsonl",))
    add("judgements-garbage", "judgements", jx, j1_raw(lambda b: "not json at all\n"), says=("j.jsonl",))
    add("judgements-truncated-line", "judgements", jx, j1_raw(lambda b: jsonl(judged_items(b))[:-9]), says=("j.jsonl",))
    add("judgements-binary", "judgements", jx, j1_raw(lambda b: bytes(range(256)) * 4), says=("j.jsonl",))
    add("judgements-utf16", "judgements", jx, j1_raw(lambda b: jsonl(judged_items(b)).encode("utf-16")),
        says=("j.jsonl",))  # fmt: skip
    add("judgements-nan", "judgements", jx, raw_score("NaN"), says=("j.jsonl",))
    add("judgements-infinity", "judgements", jx, raw_score("Infinity"), says=("j.jsonl",))
    add("judgements-minus-infinity", "judgements", jx, raw_score("-Infinity"), says=("j.jsonl",))
    add("judgements-score-text", "judgements", jx, raw_score('"abc"'), says=("j.jsonl",))
    add("judgements-score-bool", "judgements", jx, raw_score("true"), says=("j.jsonl",))
    add("judgements-score-list", "judgements", jx, raw_score("[1, 2]"), says=("j.jsonl",))
    add("judgements-score-1e400", "judgements", jx, raw_score("1e400"), says=("j.jsonl",))
    add("judgements-score-1e308", "judgements", jx, raw_score("1e308"), says=("j.jsonl",),
        note="finite but its square overflows: the estimates would be inf/NaN")  # fmt: skip
    add("judgements-score-null", "judgements", jx, raw_score("null"), expect="ok", check=new_wave(),
        note="null = the cell is not judged (one cell of wave 1 missing at random)")  # fmt: skip
    add("judgements-negative-mqm", "judgements", jx, with_items(lambda items: [
        {**it, "scores": {s: {"human": -v["human"]} for s, v in it["scores"].items()}} for it in items]),
        expect="ok", check=new_wave())  # fmt: skip
    add("judgements-no-id", "judgements", jx, with_items(lambda items: [{k: v for k, v in items[0].items()
        if k != "id"}, *items[1:]]), says=("j.jsonl",))  # fmt: skip
    add("judgements-no-src", "judgements", jx, with_items(lambda items: [{k: v for k, v in it.items() if k != "src"}
        for it in items]), says=("j.jsonl", "src"), note="canonical JSONL needs src")  # fmt: skip
    add("judgements-duplicate-item-in-file", "judgements", jx, with_items(lambda items: [*items, items[0]]),
        says=("j.jsonl",))  # fmt: skip
    add("judgements-conflicting-duplicate-in-file", "judgements", jx, with_items(lambda items: [*items, {**items[0],
        "scores": {s: {"human": 99.0} for s in items[0]["scores"]}}]), says=("j.jsonl",))  # fmt: skip
    add("judgements-unknown-item", "judgements", jx, with_items(lambda items: [*items, {"id": "zz", "src": "q",
        "scores": {"A": {"human": 1.0}}}]), says=("j.jsonl", "zz"))  # fmt: skip
    add("judgements-unknown-system", "judgements", jx, with_items(lambda items: [{**items[0], "scores": {
        **items[0]["scores"], "Q": {"human": 1.0}}}, *items[1:]]), says=("j.jsonl", "Q"))  # fmt: skip
    add("judgements-no-human-key", "judgements", jx, with_items(lambda items: [{**it, "scores": {s: {"mqm": 1.0}
        for s in it["scores"]}} for it in items]), says=("j.jsonl", "human"))  # fmt: skip
    add("judgements-int-ids", "judgements", jx, with_items(lambda items: items), expect="ok", check=new_wave())
    add("judgements-csv", "judgements", jx.replace("j.jsonl", "j.csv"),
        lambda d: (first_wave(d), write(d, "j.csv", csv_judgements(cells(d))))[0], expect="ok",
        check=new_wave())  # fmt: skip
    add("judgements-tsv", "judgements", jx.replace("j.jsonl", "j.tsv"),
        lambda d: (first_wave(d), write(d, "j.tsv", csv_judgements(cells(d), "\t")))[0],
        says=("j.tsv",), note="a .tsv is read as an MQM TSV, not the CSV layout")  # fmt: skip
    add("judgements-csv-ragged", "judgements", jx.replace("j.jsonl", "j.csv"),
        lambda d: (first_wave(d), write(d, "j.csv", csv_judgements(cells(d)).replace("\n", ",extra\n", 2)))[0],
        says=("j.csv",))  # fmt: skip
    add("judgements-csv-bad-header", "judgements", jx.replace("j.jsonl", "j.csv"),
        lambda d: (first_wave(d), write(d, "j.csv", "who,what\n1,2\n"))[0], says=("j.csv",))  # fmt: skip
    add("judgements-csv-bom", "judgements", jx.replace("j.jsonl", "j.csv"),
        lambda d: (first_wave(d), write(d, "j.csv", "\ufeff" + csv_judgements(cells(d))))[0], expect="ok",
        check=new_wave())  # fmt: skip
    add(
        "judgements-directory",
        "judgements",
        jx,
        lambda d: (first_wave(d), (d / "j.jsonl").mkdir())[0],
        says=("j.jsonl",),
    )
    add("judgements-missing-file", "judgements", jx.replace("j.jsonl", "nothere.jsonl"), first_wave,
        says=("nothere.jsonl",))  # fmt: skip
    add("judgements-are-the-pool", "judgements", jx.replace("j.jsonl", "pool.jsonl"), first_wave, says=("pool.jsonl",))
    add("judgements-same-file-two-spellings", "judgements", f"{LS} --judgements j1.jsonl ./j1.jsonl --batch w2.jsonl",
        answered, says=("judged again",))  # fmt: skip
    add("judgements-huge-foreign", "judgements", jx, j1_raw(lambda b: "".join(
        f'{{"id": "x{i}", "src": "s", "scores": {{"A": {{"human": 1}}}}}}\n' for i in range(200_000))),
        says=("j.jsonl", "not in the pool"))  # fmt: skip
    add("judgements-huge-line", "judgements", jx, j1_raw(lambda b: '{"id": "s1", "src": "' + "y" * 20_000_000
        + '"}\n'), says=("j.jsonl",))  # fmt: skip
    add("judgements-partial-wave", "judgements", jx, with_items(lambda items: items[: max(1, len(items) // 2)]),
        expect="ok", check=new_wave())  # fmt: skip
    add(
        "judgements-one-system-of-wave",
        "judgements",
        jx,
        with_items(lambda items: [{**it, "scores": {"A": it["scores"]["A"]}} for it in items if "A" in it["scores"]]),
        expect="ok",
        check=lambda d, r: "says 'no judgements yet' with cells judged" if "no judgements yet" in r.out else None,
    )
    # fmt: skip
    add("judgements-off-wave-cells", "judgements", jx, with_items(lambda items: [*items, *({"id": f"s{i}",
        "src": pool_rows()[i]["src"], "scores": {s: {"human": 1.0} for s in SYSTEMS}} for i in range(30)
        if f"s{i}" not in {it["id"] for it in items})]), expect="ok", check=report_says(stop=True),
        outputs=(), note="every cell judged: the ranking is exact")  # fmt: skip
    add("judgements-some-off-wave-cells", "judgements", jx, with_items(lambda items: [*items, *({"id": f"s{i}",
        "src": pool_rows()[i]["src"], "scores": {s: {"human": 1.0} for s in SYSTEMS}} for i in range(30)
        if f"s{i}" not in {it["id"] for it in items})][: len(items) + 2]), expect="ok", check=new_wave(),
        note="cells judged off-wave are known to the next wave and counted exactly there")  # fmt: skip
    add("judgements-stdin-dash", "judgements", jx.replace("j.jsonl", "-"), first_wave, says=("-",))
    add("judgements-before-any-wave", "judgements", "waves --data pool.jsonl --manifest m.json --batch w1.jsonl"
        " --judgements j.jsonl --report r.json --size 6 --chooser random",
        lambda d: (pool(d), write(d, "j.jsonl", jsonl([{"id": "s1", "src": pool_rows()[1]["src"],
        "scores": {s: {"human": 1.0} for s in SYSTEMS}}])))[0], expect="ok", check=new_wave("w1.jsonl", 1),
        outputs=(), note="judgements before the first wave: known cells, counted exactly")  # fmt: skip
    # --- Pearmut exports (wave 1 written with --pearmut too: its campaign id, recorded in the manifest, is the one
    # an export must carry; ``text(cells, campaign id)`` is p.json)
    px = f"{LS} --pearmut-annotations p.json --batch w2.jsonl --report r.json"
    pw1 = ("--pearmut", "w1-pearmut.json")

    def pearmut_case(text: Callable[[list[dict], str], str | bytes], name: str = "p.json") -> Callable[[Path], None]:
        def prepare(d: Path) -> None:
            first_wave(d, *pw1)
            write(d, name.replace("{campaign}", campaign_id(d)), text(cells(d), campaign_id(d)))

        return prepare

    add("pearmut-empty", "pearmut", px, pearmut_case(lambda b, c: ""), says=("p.json",))
    add("pearmut-garbage", "pearmut", px, pearmut_case(lambda b, c: "{{{"), says=("p.json",))
    add("pearmut-not-list", "pearmut", px, pearmut_case(lambda b, c: '{"camp": 5}'), says=("p.json", "camp"))
    add("pearmut-no-annotation", "pearmut", px, pearmut_case(lambda b, c: json.dumps({c: [{"user_id": "u"}]})),
        says=("p.json", "annotation"))  # fmt: skip
    add("pearmut-nan", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(b, c).replace(
        '"score": ', '"score": NaN, "x": ', 1)), says=("p.json",))  # fmt: skip
    add("pearmut-text-score", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(b, c, lambda i, s: "abc")),
        says=("p.json",))  # fmt: skip
    add("pearmut-unknown-item", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(
        [{**b[0], "id": "zz"}, *b[1:]], c, lambda i, s: 1.0)), says=("p.json", "zz"))  # fmt: skip
    add("pearmut-unknown-model", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(
        [{**b[0], "system": "Q"}, *b[1:]], c, lambda i, s: 1.0)), says=("p.json", "Q"))  # fmt: skip
    add("pearmut-valid", "pearmut", px, pearmut_case(pearmut_export), expect="ok",
        check=all_of(new_wave(), lambda d, r: means_close(first_wave_means(d))(d, r), _no_false_notice))  # fmt: skip
    add("pearmut-two-annotators-averaged", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(b, c,
        annotators=2)), expect="ok", check=all_of(new_wave(), lambda d, r: means_close(first_wave_means(d, 0.5))(
        d, r)))  # fmt: skip
    add("pearmut-jsonl-log", "pearmut", px.replace("p.json", "{campaign}.jsonl"), pearmut_case(lambda b, c: "".join(
        json.dumps(r) + "\n" for r in pearmut_records(b)), name="{campaign}.jsonl"), expect="ok", check=new_wave(),
        note="Pearmut's log data/annotations/<campaign id>.jsonl, read under its own name")  # fmt: skip
    add("pearmut-and-jsonl-same-cell", "pearmut", f"{px} --judgements j1.jsonl", lambda d: (answered(d, *pw1),
        write(d, "p.json", pearmut_export(cells(d), campaign_id(d))))[0], says=("judged again",))  # fmt: skip
    add("pearmut-same-file-twice", "pearmut", px.replace("p.json", "p.json p.json"), pearmut_case(pearmut_export),
        says=("p.json", "judged again"))  # fmt: skip
    add("pearmut-huge-score", "pearmut", px, pearmut_case(lambda b, c: pearmut_export(b, c, lambda i, s: 1e308)),
        says=("p.json",), note="finite scores whose squares overflow")  # fmt: skip
    # --- Appraise CSV
    ax = f"{LS} --appraise-annotations a.csv --batch w2.json --batch-format appraise --report r.json"
    add("appraise-valid", "appraise", ax, appraise_first, expect="ok", check=all_of(new_wave("w2.json"),
        _no_false_notice))  # fmt: skip
    add("appraise-empty", "appraise", ax, lambda d: (appraise_first(d), write(d, "a.csv", ""))[0], says=("a.csv",),
        note="an empty export: no judgement at all")  # fmt: skip
    add("appraise-eleven-fields", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: [
        r.rsplit(",", 1)[0] for r in appraise_rows(it)]), says=("a.csv",))  # fmt: skip
    add("appraise-text-score", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: appraise_rows(
        it, lambda k: "abc")), says=("a.csv", "abc"))  # fmt: skip
    add("appraise-nan-score", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: appraise_rows(
        it, lambda k: "nan")), says=("a.csv",))  # fmt: skip
    add("appraise-item-zero", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: [
        "ann1,A,0,TGT,eng,deu,50,d0#A,False,[],1.0,2.0"]), says=("a.csv",))  # fmt: skip
    add("appraise-item-not-int", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: [
        "ann1,A,x1,TGT,eng,deu,50,d0#A,False,[],1.0,2.0"]), says=("a.csv",))  # fmt: skip
    add("appraise-unknown-system", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: [*appraise_rows(it),
        appraise_rows([{**next(i for i in it if i["itemType"] == "TGT"), "targetID": "Q"}])[0]]), says=("a.csv", "Q"),
        note="a row of the batch's own document and itemID, scored for a system the pool lacks")  # fmt: skip
    add("appraise-only-bad-rows", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: [
        r.replace(",TGT,", ",BAD,") for r in appraise_rows(it)]), says=("a.csv",),
        note="every row dropped: nothing of the file is used")  # fmt: skip
    add("appraise-two-annotators", "appraise", ax, lambda d: appraise_first(d, rows=lambda it: appraise_rows(it)
        + [r.replace("ann1", "ann2") for r in appraise_rows(it, lambda k: str((k * 37) % 17 * 5 + 4))]), expect="ok",
        check=new_wave("w2.json"))  # fmt: skip
    # --- the manifest
    mx = f"{JS} --batch w2.jsonl --report r.json"
    add("manifest-empty-file", "manifest", mx, raw_manifest(lambda t: ""), says=("m.json",))
    add("manifest-truncated", "manifest", mx, raw_manifest(lambda t: t[: len(t) // 2]), says=("m.json",))
    add("manifest-binary", "manifest", mx, raw_manifest(lambda t: b"\xff\xfe\x00garbage"), says=("m.json",))
    add("manifest-a-list", "manifest", mx, raw_manifest(lambda t: "[]"), says=("m.json",))
    add("manifest-a-directory", "manifest", mx, lambda d: (answered(d), (d / "m.json").unlink(),
        (d / "m.json").mkdir())[0], says=("m.json",))  # fmt: skip
    add("manifest-waves-a-string", "manifest", mx, edit_manifest(lambda m: m.update(waves="abc")), says=("m.json",))
    add("manifest-waves-null", "manifest", mx, edit_manifest(lambda m: m.update(waves=None)), says=("m.json",))
    add("manifest-wave-not-object", "manifest", mx, edit_manifest(lambda m: m.update(waves=[5])), says=("m.json",))
    for key in ("system_probability", "known", "drawn", "open_units", "look_level", "predictor", "number"):
        add(f"manifest-wave-without-{key}", "manifest", mx, edit_manifest(_without(key)), says=("m.json", key))
    add("manifest-look-level-text", "manifest", mx, edit_manifest(lambda m: wave0(m).update(look_level="abc")),
        says=("m.json", "look_level"))  # fmt: skip
    add("manifest-planned-zero", "manifest", mx, edit_manifest(lambda m: m.update(planned=0)),
        says=("m.json", "planned"))  # fmt: skip
    add("manifest-planned-text", "manifest", mx, edit_manifest(lambda m: m.update(planned="x")),
        says=("m.json", "planned"))  # fmt: skip
    # version-2 manifests keep the campaign's settings under "settings" ("target" a record: kind, share, z, zone)
    add("manifest-size-garbage", "manifest", mx, edit_manifest(lambda m: m["settings"].update(size="abc")),
        says=("m.json", "size"))  # fmt: skip
    add("manifest-level-unknown", "manifest", mx, edit_manifest(lambda m: m["settings"].update(level="sentence")),
        says=("m.json", "level"))  # fmt: skip
    add("manifest-target-out-of-range", "manifest", mx, edit_manifest(lambda m: m["settings"]["target"].update(
        share=2.0)), says=("m.json", "target"))  # fmt: skip
    add("manifest-probability-nan", "manifest", mx, edit_manifest(lambda m: wave0(m)["unit_probability"].__setitem__(
        0, float("nan"))), says=("m.json", "unit_probability"))  # fmt: skip
    add("manifest-probability-above-one", "manifest", mx, edit_manifest(
        lambda m: wave0(m).update(unit_probability=[5.0] * len(wave0(m)["unit_probability"]))),
        says=("m.json", "unit_probability"))  # fmt: skip
    add("manifest-probability-zero-for-drawn", "manifest", mx, edit_manifest(
        lambda m: wave0(m).update(unit_probability=[0.0] * len(wave0(m)["unit_probability"]))),
        says=("m.json", "unit_probability"))  # fmt: skip
    add("manifest-probability-short", "manifest", mx, edit_manifest(
        lambda m: wave0(m).update(unit_probability=wave0(m)["unit_probability"][:3])),
        says=("m.json", "unit_probability"))  # fmt: skip
    add("manifest-open-unit-unknown", "manifest", mx, edit_manifest(
        lambda m: wave0(m)["open_units"].__setitem__(0, "zz")), says=("m.json", "zz"))  # fmt: skip
    add("manifest-drawn-unknown-item", "manifest", mx, edit_manifest(lambda m: wave0(m)["drawn"].update(zz=["A"])),
        says=("m.json", "zz"))  # fmt: skip
    add("manifest-drawn-unknown-system", "manifest", mx, edit_manifest(
        lambda m: next(iter(wave0(m)["drawn"].values())).append("Q")), says=("m.json", "Q"))  # fmt: skip
    add("manifest-offset-text", "manifest", mx, edit_manifest(
        lambda m: wave0(m)["predictor"]["offsets"].update(A="x")), says=("m.json",))  # fmt: skip
    add("manifest-future-version", "manifest", mx, edit_manifest(lambda m: m.update(version=99)),
        says=("m.json", "version"))  # fmt: skip
    add("manifest-no-waves-yet", "manifest", f"{LS} --batch w1.jsonl --report r.json",
        lambda d: (pool(d), precomet(d, [*LIVE, "--batch", "w0.jsonl"]), (d / "w0.jsonl").unlink(),
                   _no_waves(d))[0], expect="ok", check=new_wave("w1.jsonl", 1))  # fmt: skip
    add("manifest-duplicate-wave-numbers", "manifest", mx, edit_manifest(
        lambda m: m["waves"].append(dict(wave0(m)))), says=("m.json",))  # fmt: skip
    add("manifest-is-the-pool", "manifest", f"{LS.replace('m.json', 'pool.jsonl')} --batch w.jsonl", pool,
        says=("pool.jsonl",))  # fmt: skip
    add("manifest-dash", "manifest", f"{LS.replace('m.json', '-')} --batch w.jsonl", pool, says=("--manifest",))
    add("manifest-dev-null", "manifest", f"{LS.replace('m.json', '/dev/null')} --batch w.jsonl", pool,
        says=("/dev/null",))  # fmt: skip
    add("manifest-new-folder", "manifest", f"{LS.replace('m.json', 'new/sub/m.json')} --batch w.jsonl", pool,
        expect="ok", check=exists("new/sub/m.json", "w.jsonl"))  # fmt: skip
    add("manifest-same-as-batch", "manifest", f"{LS} --batch m.json --batch-format appraise", pool, says=("m.json",))
    add("manifest-same-as-report", "manifest", f"{LS} --batch w.jsonl --report m.json", pool, says=("m.json",))
    add("manifest-ok-answered", "manifest", mx, answered, expect="ok",
        check=all_of(new_wave(), lambda d, r: means_close(first_wave_means(d))(d, r)))  # fmt: skip
    # --- options changed between waves
    add("change-confidence", "options", f"{mx} --confidence 0.8", answered, says=("--confidence 0.8", "0.9"))
    add("change-metric", "options", f"{mx} --metric m", lambda d: answered(d, human=False),
        says=("--metric",))  # fmt: skip
    add("change-level", "options", f"{mx} --level doc", lambda d: answered(d, doc=True), expect="ok",
        check=all_of(new_wave(), lambda d, r: None if setting(d, "level") == "item" else "level changed"),
    )  # fmt: skip
    add("change-size", "options", mx.replace("--size 6", "--size 20"), answered, expect="ok",
        check=all_of(new_wave(), lambda d, r: None if setting(d, "size") == "6" else "size changed"))  # fmt: skip
    add("change-chooser", "options", mx.replace("random", "length"), answered, expect="ok", check=new_wave())
    add("change-seed", "options", f"{mx} --seed 7", answered, expect="ok", check=new_wave())
    add("change-rule", "options", f"{mx} --rule expected", answered, expect="ok", check=new_wave(),
        note="every look's level is kept in the manifest whatever the rule")  # fmt: skip
    add("change-top-k", "options", f"{mx} --top-k", answered, expect="ok",
        check=all_of(new_wave(), lambda d, r: None if manifest_of(d)["waves"][-1]["weighted"] is False
        else "top-k wave recorded as weighted"))  # fmt: skip
    add("change-allocation", "options", f"{mx} --allocation", answered, expect="ok", check=new_wave())
    add("change-pool-one-item-edited", "options", mx, lambda d: (answered(d), write(d, "pool.jsonl",
        (d / "pool.jsonl").read_text().replace("source sentence 29", "source sentence 2 9")))[0],
        says=("m.json", "another pool"))  # fmt: skip
    # --- wave sizes
    sx = "waves --data pool.jsonl --chooser random --manifest m.json --batch w1.jsonl --report r.json --size"
    for size in ("0", "-5", "0%", "0cells", "abc", "5%%", "nan%", "1e3", "0.5", "inf", "-1h", "0h", "10 items"):
        add(f"size-{size}", "size", f"{sx} {shlex.quote(size)}" if not size.startswith("-") else f"{sx}={size}",
            pool, says=("size", size))  # fmt: skip
    add("size-above-pool", "size", f"{sx} 1000", pool, expect="ok",
        check=lambda d, r: None if len(batch_cells(d, "w1.jsonl")) == 90 else "not every cell drawn")  # fmt: skip
    add("size-150%", "size", f"{sx} 150%", pool, expect="ok",
        check=lambda d, r: None if len(batch_cells(d, "w1.jsonl")) == 90 else "not every cell drawn")  # fmt: skip
    add("size-huge-int", "size", f"{sx} 99999999999999999999999999", pool, expect="ok",
        check=lambda d, r: None if len(batch_cells(d, "w1.jsonl")) == 90 else "not every cell drawn")  # fmt: skip
    add("size-duration", "size", f"{sx} 90m", pool, expect="ok", check=new_wave("w1.jsonl", 1))
    add("size-cells", "size", f"{sx} 12cells", pool, expect="ok", check=new_wave("w1.jsonl", 1))
    add("size-one-cell", "size", f"{sx} 1cell", pool, expect="ok", check=new_wave("w1.jsonl", 1))
    add("size-spaces", "size", f"{sx} ' 10 %'", pool, expect="ok", check=new_wave("w1.jsonl", 1))
    add("size-tiny-share", "size", f"{sx} 1%", pool, expect="ok", check=new_wave("w1.jsonl", 1),
        note="0.3 items expected: a wave may draw nothing")  # fmt: skip
    add("size-empty-wave-then-next", "size", "waves --data p.jsonl --chooser random --size 2 --manifest m.json"
        " --batch w2.jsonl --report r.json", lambda d: (write(d, "p.jsonl", jsonl(pool_rows(4))), precomet(d, [
        "waves", "--data", "p.jsonl", "--chooser", "random", "--size", "2", "--manifest", "m.json", "--batch",
        "w1.jsonl"]))[0], expect="ok", check=_after_an_empty_wave)  # fmt: skip
    add("size-empty-wave-pearmut", "size", "waves --data p.jsonl --chooser random --size 2 --manifest m.json"
        " --batch w1.jsonl --pearmut p1.json", lambda d: write(d, "p.jsonl", jsonl(pool_rows(4))), expect="ok",
        check=lambda d, r: None if (d / "m.json").exists() else "no wave recorded")  # fmt: skip
    add("size-after-stop-every-cell", "size", f"{LS} --judgements j1.jsonl --batch w2.jsonl --report r.json",
        lambda d: (pool(d), precomet(d, [*LIVE, "--size", "1000", "--batch", "w1.jsonl"]),
                   write(d, "j1.jsonl", jsonl(judged_items(cells(d)))))[0], expect="ok",
        check=report_says(stop=True), outputs=())  # fmt: skip
    # --- pool files
    px2 = "waves --data p.jsonl --chooser random --size 6 --manifest m.json --batch w.jsonl --report r.json"
    add("pool-empty", "pool", px2, lambda d: write(d, "p.jsonl", ""), says=("p.jsonl",))
    add("pool-one-system", "pool", px2, lambda d: write(d, "p.jsonl", jsonl(pool_rows(systems=("A",)))),
        says=("p.jsonl", "two systems"), note="one system: there is no ranking to settle")  # fmt: skip
    add("pool-identical-systems", "pool", px2, lambda d: write(d, "p.jsonl", jsonl(
        [{**r, "tgt": {s: "same" for s in SYSTEMS}} for r in pool_rows()])), expect="ok",
        check=new_wave("w.jsonl", 1))  # fmt: skip
    add("pool-unicode", "pool", px2.replace("w.jsonl", "w.tsv"), lambda d: write(d, "p.jsonl", jsonl(
        [{"id": f"é{i}", "src": f"שלום 世界 🙂 {i}\u0301\t\"q\"", "tgt": {"Ä": f"α{i}\n", "B\u200d": "b"}}
         for i in range(20)])), expect="ok",
        check=lambda d, r: None if (d / "w.tsv").read_text(encoding="utf-8").count("🙂") >= 1 else "lost text",
    )  # fmt: skip
    add("pool-one-item", "pool", px2, lambda d: write(d, "p.jsonl", jsonl(pool_rows(1))), expect="ok",
        check=new_wave("w.jsonl", 1))  # fmt: skip
    add("pool-duplicate-ids", "pool", px2, lambda d: write(d, "p.jsonl", jsonl(pool_rows(5) + pool_rows(1))),
        says=("p.jsonl", "s0"))  # fmt: skip
    add("pool-system-named-star", "pool", px2, lambda d: write(d, "p.jsonl", jsonl(pool_rows(systems=("*", "B")))),
        says=("p.jsonl", "'*'"), note="'*' means every system in the manifest")  # fmt: skip
    add("pool-sources-txt", "pool", px2.replace("p.jsonl", "s.txt"), lambda d: write(d, "s.txt", "".join(
        f"line {i}\n" for i in range(30))), expect="ok", check=new_wave("w.jsonl", 1))  # fmt: skip
    add("pool-txt-blank-line", "pool", px2.replace("p.jsonl", "s.txt"), lambda d: write(d, "s.txt", "one\n\nthree\n"),
        says=("s.txt",))  # fmt: skip
    add("pool-missing-file", "pool", px2, None, says=("p.jsonl",))
    add("pool-doc-level-docs", "pool", px2 + " --level doc", lambda d: write(d, "p.jsonl", jsonl(pool_rows(doc=True))),
        expect="ok", check=new_wave("w.jsonl", 1))  # fmt: skip
    # --- outputs
    ox = "waves --data pool.jsonl --chooser random --size 6 --manifest m.json"
    add("out-batch-is-the-pool", "outputs", f"{ox} --batch pool.jsonl", pool, says=("pool.jsonl",))
    add("out-batch-dev-full", "outputs", f"{JS} --batch /dev/full", answered, says=("/dev/full",))
    add("out-report-dev-full", "outputs", f"{JS} --batch w2.jsonl --report /dev/full", answered,
        says=("/dev/full",))  # fmt: skip
    add("out-batch-under-a-file", "outputs", f"{ox} --batch pool.jsonl/w.jsonl", pool, says=("pool.jsonl",))
    add("out-batch-in-proc", "outputs", f"{ox} --batch /proc/w.jsonl", pool, says=("/proc/w.jsonl",))
    add("out-batch-a-directory", "outputs", f"{ox} --batch sub.jsonl", lambda d: (pool(d), (d / "sub.jsonl").mkdir()),
        says=("sub.jsonl",))  # fmt: skip
    add("out-batch-existing", "outputs", f"{ox} --batch w.jsonl", lambda d: (pool(d), write(d, "w.jsonl", "old\n")),
        expect="ok", outputs=("w.jsonl",), check=new_wave("w.jsonl", 1))  # fmt: skip
    add("out-batch-stdout", "outputs", f"{ox} --batch -", pool, says=("--batch -",),
        note="--batch is a file; '-' is documented for --report only")  # fmt: skip
    add("out-report-stdout", "outputs", f"{ox} --batch w.jsonl --report -", pool, expect="ok",
        check=lambda d, r: None if json.loads(r.out)["next_wave"]["number"] == 1 else "bad report")  # fmt: skip
    add("out-plot-bad-suffix", "outputs", f"{ox} --batch w.jsonl --plot fig.txt", pool, says=("fig.txt",))
    add("out-plot-png", "outputs", f"{ox} --batch w.jsonl --plot fig.png", pool, expect="ok", check=exists("fig.png"))
    add("out-pearmut-same-as-batch", "outputs", f"{ox} --batch w.json --batch-format appraise --pearmut w.json",
        pool, says=("w.json",))  # fmt: skip
    add("out-appraise-batch-sources-only", "outputs", "waves --data s.txt --batch w.json --batch-format appraise",
        lambda d: write(d, "s.txt", "one\ntwo\n"), says=("--batch", "w.json"))  # fmt: skip
    add("out-batch-uppercase-suffix", "outputs", f"{ox} --batch W.JSONL", pool, expect="ok",
        check=new_wave("W.JSONL", 1))  # fmt: skip
    add("out-batch-no-suffix", "outputs", f"{ox} --batch wave", pool, says=("wave",))
    add("out-no-outputs-at-all", "outputs", "waves --data pool.jsonl --size 6", pool, expect="ok", outputs=(),
        check=lambda d, r: None if "without --manifest" in r.err else "no warning")  # fmt: skip
    # --- next twice, races, interrupts
    add("next-twice-unanswered", "sequence", f"{LS} --batch w1.jsonl --report r.json", first_wave, expect="ok",
        outputs=("r.json",), check=lambda d, r: None if len(manifest_of(d)["waves"]) == 1 and "no new wave drawn"
        in r.err else "a second wave drawn on an unanswered one")  # fmt: skip
    add("next-twice-same-judgements", "sequence", f"{JS} --batch w3.jsonl --report r.json",
        lambda d: (answered(d), precomet(d, [*J, "--batch", "w2.jsonl"]))[0], expect="ok",
        check=lambda d, r: None if len(manifest_of(d)["waves"]) == 2 and not (d / "w3.jsonl").exists()
        else "a third wave drawn before wave 2 is answered")  # fmt: skip
    add("race-two-next-fresh", "race", f"{LS} --batch W.jsonl", lambda d: pool(d, n=20000), expect="ok",
        runner=_race, check=_race_check, outputs=("m.json", "w-a.jsonl", "w-b.jsonl"),
        note="two calls at once with their own seeds and batches")  # fmt: skip
    add("race-two-next-same-options", "race", f"{LS} --batch W.jsonl", lambda d: pool(d, n=20000), expect="ok",
        runner=lambda c, d: _race(c, d, seeds=False), check=_race_check)  # fmt: skip
    add("race-two-next-answered", "race", f"{JS} --batch W.jsonl", lambda d: answered(d, n=20000), expect="ok",
        runner=_race, check=_race_check, outputs=("m.json",))  # fmt: skip
    for sig in ("SIGINT", "SIGTERM"):
        for delay in (0.3, 0.8, 1.2, 1.6):
            add(f"interrupt-{sig}-{delay}s", "signal", f"{JS} --batch w2.jsonl --report r.json --plot f.png", answered,
                expect="ok", runner=_interrupt(getattr(signal, sig), delay), check=_all_or_nothing)  # fmt: skip
    # --- replay
    add("replay-valid", "replay", f"{R} -o out.json", judged_pool, expect="ok", check=exists("out.json"))
    add("replay-runs-zero", "replay", f"{R.replace('--runs 3', '--runs 0')}", judged_pool, says=("--runs",))
    add("replay-runs-negative", "replay", f"{R.replace('--runs 3', '--runs=-2')}", judged_pool, says=("--runs",))
    add("replay-runs-text", "replay", f"{R.replace('--runs 3', '--runs many')}", judged_pool, says=("--runs",))
    add("replay-seed-negative", "replay", f"{R} --seed=-1", judged_pool, says=("--seed",))
    add("replay-seed-huge", "replay", f"{R} --seed 99999999999999999999999", judged_pool, says=("--seed",))
    add("replay-chooser-unknown", "replay", R.replace("random", "best"), judged_pool, says=("--chooser", "best"))
    add("replay-metric-unknown", "replay", f"{R} --metric zz", judged_pool, says=("--metric", "zz"))
    add("replay-incomplete-pool", "replay", R, lambda d: write(d, "judged.jsonl", jsonl(pool_rows(30, human=True)[:-1]
        + [pool_rows(30)[-1]])), expect="ok", check=lambda d, r: None if "cells at stop" in r.out else "no result",
        note="an item without human scores is dropped (as rank does), the replay runs on the rest")  # fmt: skip
    add("replay-one-system", "replay", R, lambda d: judged_pool(d, systems=("A",)), says=("judged.jsonl", "two"))
    add("replay-nan-human", "replay", R, lambda d: write(d, "judged.jsonl", jsonl(pool_rows(30, human=True)).replace(
        '"human": 2.0', '"human": NaN', 1)), says=("judged.jsonl",))  # fmt: skip
    add("replay-output-dev-full", "replay", f"{R} -o /dev/full", judged_pool, says=("/dev/full",))
    add("replay-output-is-input", "replay", f"{R} -o judged.jsonl", judged_pool, says=("judged.jsonl",))
    for opt in ("--batch w.jsonl", "--manifest m.json", "--judgements judged.jsonl", "--report r.json",
                "--pearmut p.json", "--plot f.png"):  # fmt: skip
        add(f"replay-ignores-{opt.split()[0][2:]}", "replay", f"{R} {opt}", judged_pool, says=(opt.split()[0],),
            note="a live-campaign option on replay")  # fmt: skip
    add("live-ignores-runs", "replay", f"{LS} --batch w.jsonl --runs 5", pool, says=("--runs",),
        note="a replay option on a live call")  # fmt: skip
    add("replay-doc-level-without-docs", "replay", f"{R} --level doc", judged_pool, says=("--level doc",))
    add("replay-size-above-pool", "replay", R.replace("20%", "500"), judged_pool, expect="ok",
        check=lambda d, r: None if "cells at stop: median 100.0%" in r.out else "not the whole pool")  # fmt: skip
    # --- priors, encoders, utilities
    ux = "waves --data pool.jsonl --size 6 --manifest m.json --batch w.jsonl"
    add("utility-unknown", "prior", f"{ux} --utility nonsense --metric m", pool, says=("nonsense",))
    add("utility-needs-metric", "prior", f"{ux} --utility metric_var", pool, says=("metric_var",))
    uf = f"{ux} --utility-file u.jsonl"  # the prior from a utilities file (--scores before 0.18.0)
    add("scores-missing-file", "prior", uf, pool, says=("u.jsonl",))
    add("scores-garbage", "prior", uf, lambda d: (pool(d), write(d, "u.jsonl", "zzz\n")),
        says=("u.jsonl",))  # fmt: skip
    add("scores-nan", "prior", uf, lambda d: (pool(d), write(d, "u.jsonl", "".join(
        f'{{"id": "s{i}", "utility": {"NaN" if i == 3 else i}}}\n' for i in range(30)))), says=("u.jsonl",),
    )  # fmt: skip
    add("scores-missing-items", "prior", uf, lambda d: (pool(d), write(d, "u.jsonl", "".join(
        f'{{"id": "s{i}", "utility": {i}}}\n' for i in range(10)))), says=("u.jsonl",))  # fmt: skip
    add("scores-negative", "prior", f"{uf} --chooser prior", lambda d: (pool(d), write(
        d, "u.jsonl", "".join(f'{{"id": "s{i}", "utility": {-i}}}\n' for i in range(30)))), expect="ok",
        check=new_wave("w.jsonl", 1), note="utilities are ranks of usefulness; negative values are valid")  # fmt: skip
    add("scores-and-utility", "prior", f"{uf} --utility metric_var", pool, says=("--utility", "--utility-file"))
    add("encoder-unknown", "prior", f"{ux} --encoder nope", pool, says=("nope",))
    add("encoder-with-random-chooser", "prior", f"{ux} --chooser random --encoder length", pool,
        says=("--encoder",), note="--encoder feeds only learn")  # fmt: skip
    add("utility-with-length-chooser", "prior", f"{ux} --chooser length --utility metric_var --metric m",
        lambda d: write(d, "pool.jsonl", jsonl([{**r, "scores": {s: {"m": 0.1 * k} for k, s in enumerate(SYSTEMS)}}
        for r in pool_rows()])),
        says=("--utility",))  # fmt: skip
    add("level-doc-without-docs-next", "prior", f"{ux} --level doc --report r.json", pool, says=("--level doc",))
    add("target-one", "prior", f"{ux} --target 1", pool, expect="ok", check=new_wave("w.jsonl", 1))
    add("target-zero", "prior", f"{ux} --target 0", pool, says=("--target",))
    add("confidence-one", "prior", f"{ux} --confidence 1", pool, says=("--confidence",))
    return cases


def _after_an_empty_wave(d: Path, run: Run) -> str | None:
    if drawn_cells(d, 0):
        return "setup drew cells"
    if len(manifest_of(d)["waves"]) != 2 or json.loads((d / "r.json").read_text())["stop"]:
        return "stuck on, or stopped by, an empty wave 1 (seed 0 draws none of 4 items)"
    return None


def _no_false_notice(d: Path, run: Run) -> str | None:
    if "no --judgements given" in run.err:
        return "says the annotations given are not there ('no --judgements given ... unanswered')"
    return None


def _no_waves(d: Path) -> Path:
    data = manifest_of(d)
    data["waves"] = []
    (d / "m.json").write_text(json.dumps(data))
    return d


# ------------------------------------------------------------------------------------------------ special runs
def _race(case: Case, d: Path, seeds: bool = True) -> Run:
    """Two calls at once, each with its own batch (``w-a.jsonl``, ``w-b.jsonl``) and, with ``seeds``, its own
    seed."""
    start = time.monotonic()
    procs = [
        subprocess.Popen(
            [
                *PRECOMET,
                *shlex.split(case.argv.replace("W.jsonl", f"w-{tag}.jsonl")),
                *(["--seed", str(seed)] if seeds else []),
            ],
            cwd=d,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for tag, seed in (("a", 1), ("b", 2))
    ]
    try:
        results = [p.communicate(timeout=max(TIMEOUT - (time.monotonic() - start), 1)) for p in procs]
    except subprocess.TimeoutExpired:  # a hang, classified as one (the calls killed)
        for p in procs:
            p.kill()
        results = [p.communicate() for p in procs]
        return Run(None, results[0][0] + results[1][0], results[0][1] + results[1][1], TIMEOUT, timed_out=True)
    rcs = [p.returncode for p in procs]
    rc = 0 if 0 in rcs else max(rcs)
    return Run(rc, results[0][0] + results[1][0], results[0][1] + results[1][1], time.monotonic() - start,
               extra={"rcs": rcs})  # fmt: skip


def _race_check(d: Path, run: Run) -> str | None:
    rcs = run.extra["rcs"]
    written = [t for t in "ab" if (d / f"w-{t}.jsonl").exists()]
    if sorted(rcs) not in ([0, 0], [0, 2]):
        return f"exit codes {rcs}"
    data = manifest_of(d)
    recorded = {(item, s) for item, names in data["waves"][-1]["drawn"].items() for s in names}
    orphans = [t for t in written if batch_cells(d, f"w-{t}.jsonl") != recorded]
    if orphans:
        return f"batch w-{orphans[0]}.jsonl is not in the manifest (lost update: both drew wave {len(data['waves'])})"
    return None


def _interrupt(signum: int, delay: float) -> Callable[[Case, Path], Run]:
    def runner(case: Case, d: Path) -> Run:
        start = time.monotonic()
        proc = subprocess.Popen(
            [*PRECOMET, *shlex.split(case.argv)], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_env(),
        )  # fmt: skip
        time.sleep(delay)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=TIMEOUT)
        return Run(proc.returncode, out, err, time.monotonic() - start, extra={"interrupted": True})

    return runner


def _all_or_nothing(d: Path, run: Run) -> str | None:
    left = [p.name for p in d.rglob(".precomet-*")]
    if left:
        return f"temporaries left: {left}"
    if "Traceback" in run.err:
        return "traceback on interrupt"
    waves = len(manifest_of(d)["waves"])
    outputs = [n for n in ("w2.jsonl", "r.json", "f.png") if (d / n).exists()]
    if run.rc == 0:
        return None if waves == 2 and len(outputs) == 3 else f"exit 0 but {waves} waves, outputs {outputs}"
    if run.rc not in (130, -2, -15):
        return f"exit {run.rc} on interrupt"
    if waves == 2 and len(outputs) == 3:
        return None  # the signal came after the commit
    if waves == 1 and not outputs:
        return None
    return f"interrupted, yet {waves} waves in the manifest and outputs {outputs}"


# ------------------------------------------------------------------------------------------------ running
def snapshot(d: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        out[rel] = p.read_bytes() if p.is_file() else b"<dir>"
    return out


def run_case(case: Case) -> dict:
    with tempfile.TemporaryDirectory(prefix="wm-") as tmp:
        d = Path(tmp)
        try:
            if case.prepare is not None:
                case.prepare(d)
        except Exception as err:  # noqa: BLE001 -- a broken setup is reported, not classified
            return {"name": case.name, "area": case.area, "class": "setup-failed", "detail": str(err)[:300]}
        if "{campaign}" in case.argv:  # the Pearmut campaign id the setup's wave 1 recorded
            case = replace(case, argv=case.argv.replace("{campaign}", campaign_id(d)))
        before = snapshot(d)
        start = time.monotonic()
        if case.runner is not None:
            run = case.runner(case, d)
        else:
            try:
                done = subprocess.run(
                    [*PRECOMET, *shlex.split(case.argv)], cwd=d, capture_output=True, text=True, timeout=TIMEOUT,
                    env=_env(), stdin=subprocess.DEVNULL, check=False,
                )  # fmt: skip
                run = Run(done.returncode, done.stdout, done.stderr, time.monotonic() - start)
            except subprocess.TimeoutExpired as err:
                run = Run(None, str(err.stdout or ""), str(err.stderr or ""), TIMEOUT, timed_out=True)
        cls, detail = classify(case, d, before, run)
        err_line = next((line for line in run.err.splitlines() if "error:" in line), run.err.strip()[-200:])
        return {
            "name": case.name,
            "area": case.area,
            "class": cls,
            "detail": detail,
            "rc": run.rc,
            "seconds": round(run.seconds, 1),
            "stderr": err_line[:300],
        }


def classify(case: Case, d: Path, before: dict[str, bytes], run: Run) -> tuple[str, str]:
    if run.timed_out:
        return "hang", f"> {TIMEOUT:.0f} s"
    if "Traceback" in run.err or run.rc == 1 or "internal error" in run.err:
        line = next((x for x in run.err.splitlines() if "internal error" in x), run.err.strip().splitlines()[-1:])
        return "internal", str(line)[:200]
    after = snapshot(d)
    changed = [k for k in before if (k not in after or after[k] != before[k]) and not k.startswith(".precomet-")]
    created = [k for k in after if k not in before]
    if case.runner is not None:  # races and interrupts: their check decides
        problem = case.check(d, run) if case.check else None
        if problem is None:
            return "correct", ""
        if "temporaries" in problem or "outputs" in problem and run.rc != 0:
            return "partial", problem
        if "traceback" in problem:
            return "internal", problem
        return "silent", problem
    if run.rc != 0:
        if [k for k in changed if k not in ("m.json",)] or "m.json" in changed:
            return "destructive", f"changed: {changed}"
        if case.expect == "ok":
            return "refused", "a valid input refused"
        if created:
            return "partial", f"left: {created}"
        errors = [line for line in run.err.splitlines() if line.startswith("precomet") and "error:" in line]
        if run.rc != 2 or len(errors) != 1:
            return "vague", f"exit {run.rc}, {len(errors)} error lines"
        if ".precomet-" in errors[0]:
            return "vague", "names a hidden temporary"
        missing = [f for f in case.says if f not in errors[0]]
        if missing:
            return "vague", f"does not name {missing}"
        return "clean", ""
    unexpected = [k for k in changed if k not in case.outputs]
    if unexpected:
        return "destructive", f"changed: {unexpected}"
    if case.expect == "error":
        return "silent", "exit 0" + (f" ({case.note})" if case.note else "")
    problem = case.check(d, run) if case.check else None
    if problem:
        return "silent", problem
    return "correct", ""


CASES = _cases()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", help="only cases whose name contains this")
    parser.add_argument("-j", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/waves-matrix.md")
    parser.add_argument("--json", type=Path, help="save the results as JSON")
    parser.add_argument("--before", type=Path, help="JSON of an earlier run: its counts go beside this run's")
    parser.add_argument("--render", type=Path, help="write the markdown of this saved run (--json) instead of running")
    args = parser.parse_args()
    if args.render:
        before = json.loads(args.before.read_text()) if args.before else None
        write_markdown(json.loads(args.render.read_text()), before)
        return 0
    cases = [c for c in CASES if not args.k or args.k in c.name]
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "case names repeat"
    with ThreadPoolExecutor(args.j) as pool_:
        results = list(pool_.map(run_case, cases))
    for r in results:
        print(f"{r['class']:<12} {r['name']:<44} {r.get('detail', '')[:70]}  | {r.get('stderr', '')[:110]}")
    counts = Counter(r["class"] for r in results)
    print(
        " ".join(f"{c}={counts.get(c, 0)}" for c in (*CLASSES, "setup-failed") if counts.get(c)),
        f"total={len(results)}",
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if args.write:
        before = json.loads(args.before.read_text()) if args.before else None
        write_markdown(results, before)
    return 0


NOTES = [
    "Judgement calls in the expected outcomes (each case's `expect` in the driver):",
    "",
    "* A `null` human score is a cell not judged (missing at random within its wave), not an error.",
    "* Judgements of cells no wave drew are known cells: the next wave records them and counts them exactly"
    " (`known_total` of `wave_result`), so they are correct input; every cell judged makes the ranking exact (stop).",
    "* Changing `--rule`, `--chooser`, `--seed`, `--top-k` or `--allocation` between waves is allowed (each look's"
    " error level is kept in the manifest); `--size` and `--level` are kept from the manifest with a notice;"
    " `--target`, `--confidence` and `--metric` must not change (clean error).",
    "* A `.tsv` of judgements is the MQM TSV format, canonical JSONL needs `src`, and `--batch -` is refused"
    " (only `--report` takes `-`): clean errors, not refusals of valid input.",
    "* The weighted means are Horvitz-Thompson/AIPW estimates (sum of y / pi over the pool size), not plain means:"
    " the Pearmut and manifest cases check the report against that formula.",
    "* Races run two calls at once on a 20 000-item pool with different seeds and batches; a call is correct when the"
    " manifest's last wave is exactly the batch of every call that wrote one. Interrupts (SIGINT, SIGTERM after 0.3 to"
    " 1.6 s) are correct when exit 130 (or the signal, after the commit) leaves all outputs or none, and no"
    " temporaries.",
    "",
    "Fixes (files under `precomet/waves/` and `precomet/commands/waves.py`; regression tests in"
    " `tests/bad_inputs/cases_waves_matrix.py` and `tests/unit/test_waves.py`):",
    "",
    "* the manifest is checked field by field on reading (`Manifest.read`): errors name the file and the field;"
    " a newer manifest version is refused;",
    "* judgements: a score with |score| > 1e12 is refused (its square overflowed into a LinAlgError), a judgement"
    " file or export without a single judgement is refused, and a system named `*` (the manifest's every-system"
    " mark) is refused, as in the pool;",
    "* a pool with one system is refused (a ranking needs two), `waves replay` says so naming the file, and an"
    " unknown replay `--metric` names the flag;",
    "* options the call would not read are refused: live-campaign options on `replay`, `--runs` on a live call,"
    " `--encoder` without `--chooser learn`, `--utility`/`--scores` (now `--utility-file`) with `random`/`length`;"
    " `--plot` must be .png/.pdf/.svg;",
    "* a share may be written `10 %`;",
    "* a wave that drew no cell gets weight 0 (its zero variance made the rule stop on an all-zero ranking), is not"
    " awaited, and writes no `--pearmut` campaign (that was an error at every call, with the same seed);",
    "* the 'no --judgements given' notice no longer fires when Pearmut or Appraise annotations are given, and a"
    " report with some systems unjudged no longer says 'no judgements yet';",
    "* a live call with `--manifest` holds a lock on the pool file (`campaign_lock`): two calls at once run one after"
    " the other instead of both drawing the same wave (the manifest kept one, the other's batch was orphaned).",
]


def write_markdown(results: list[dict], before: list[dict] | None) -> None:
    counts = Counter(r["class"] for r in results)
    lines = [
        "# `precomet waves` fault matrix (issue 51)",
        "",
        "Command: `.venv/bin/python benchmarks/waves_matrix.py --write --before"
        " benchmarks/results/waves-matrix-before.json`",
        "",
        f"{len(results)} cases of bad inputs, faults and races on `precomet waves`, `waves next` and `waves replay`,"
        " each run in a subprocess (timeout 60 s) in its own temporary folder and classified (classes in"
        " `benchmarks/waves_matrix.py`).",
        "",
        "The `before fixes` column is the run recorded in benchmarks/results/waves-matrix-before.json: the same cases"
        " against the code of 0.16.0 (`WAVES_MATRIX_CODE=DIR` points the driver at a copy of that tree:"
        " `WAVES_MATRIX_CODE=/tmp/orig .venv/bin/python benchmarks/waves_matrix.py --json"
        " benchmarks/results/waves-matrix-before.json`).",
        "",
        "| class | " + ("before fixes | " if before else "") + "after fixes |",
        "|---|" + ("---:|" if before else "") + "---:|",
    ]
    old = Counter(r["class"] for r in before) if before else None
    for c in CLASSES:
        lines.append(f"| {c} | " + (f"{old.get(c, 0)} | " if old is not None else "") + f"{counts.get(c, 0)} |")
    lines.append("| **total** | " + (f"{len(before)} | " if before else "") + f"{len(results)} |")
    lines += ["", *NOTES]
    lines += ["", "| case | area | " + ("before | " if before else "") + "class | detail / error line |", "|---|---|"
              + ("---|" if before else "") + "---|---|"]  # fmt: skip
    was = {r["name"]: r["class"] for r in before} if before else {}
    for r in results:
        text = (r.get("detail") or r.get("stderr") or "").replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| {r['name']} | {r['area']} | " + (f"{was.get(r['name'], '')} | " if before else "")
                     + f"{r['class']} | {text} |")  # fmt: skip
    out = ROOT / "benchmarks" / "results" / "waves-matrix.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
