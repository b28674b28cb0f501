"""The real Pearmut round trip: `precomet waves --pearmut` writes a campaign, Pearmut (installed from the registry
into a venv of a Python >= 3.12, cached under ``.pearmut-venvs/``) loads it with ``pearmut add`` and serves it on
127.0.0.1, a scripted annotator answers it through the HTTP API its annotate page uses (``/get-next-item``,
``/log-response``, ``/get-i-item``; the dashboard's ``/reset-campaign`` and ``/add-campaign``), and
``/download-annotations`` read back with ``--pearmut-annotations`` gives the report and next wave that
``--judgements`` gives on a canonical file of the same scores.

Where no Python >= 3.12 is found (pyenv's versions, ``python3.12``/``python3.13``/``python3.14`` on PATH, or
``$PRECOMET_PEARMUT_PYTHON``) the tests skip with the reason;
:func:`test_without_a_new_python_the_tests_skip_saying_why` checks that path. The server process is killed by the
fixture's finaliser whatever the test does."""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from precomet.cli import main

REPO = Path(__file__).resolve().parent.parent.parent
VENVS = REPO / ".pearmut-venvs"
PINNED = "1.1.6"
MINIMUM = (3, 12)
SYSTEMS = ("sysA", "sysB", "sysC")


# ------------------------------------------------------------------------------------------------ the interpreter
def _version(python: str) -> tuple[int, ...] | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return tuple(int(part) for part in done.stdout.split())


def _candidates() -> Iterator[str]:
    if os.environ.get("PRECOMET_PEARMUT_PYTHON"):
        yield os.environ["PRECOMET_PEARMUT_PYTHON"]
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    if shutil.which("pyenv"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            roots.insert(
                0, subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip()
            )
    for root in filter(None, roots):
        versions = sorted(Path(root, "versions").glob("3.*/bin/python3"), key=lambda p: _natural(p.parent.parent.name))
        yield from (str(path) for path in reversed(versions))
    for name in ("python3.14", "python3.13", "python3.12"):
        found = shutil.which(name)
        if found:
            yield found
    yield sys.executable


def _natural(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


def find_new_python() -> tuple[str, tuple[int, ...]] | None:
    """A Python >= 3.12 (Pearmut's requirement) and its version, or ``None``."""
    for python in _candidates():
        version = _version(python)
        if version is not None and version[:2] >= MINIMUM:
            return python, version
    return None


def new_python_or_skip(finder: Callable[[], tuple[str, tuple[int, ...]] | None] = find_new_python):
    found = finder()
    if found is None:
        pytest.skip(
            "Pearmut needs Python >= 3.12 and none was found (pyenv versions, python3.12/3.13/3.14 on PATH,"
            " $PRECOMET_PEARMUT_PYTHON): the real Pearmut round trip is not run"
        )
    return found


def test_without_a_new_python_the_tests_skip_saying_why(monkeypatch, capsys):
    with pytest.raises(pytest.skip.Exception, match=r"Pearmut needs Python >= 3\.12 and none was found"):
        new_python_or_skip(lambda: None)
    monkeypatch.setattr(sys.modules[__name__], "_candidates", lambda: iter(["/nonexistent/python3"]))
    assert find_new_python() is None
    monkeypatch.setattr(sys.modules[__name__], "_version", lambda python: (3, 11, 7))
    monkeypatch.setattr(sys.modules[__name__], "_candidates", lambda: iter(["python-3.11"]))
    assert find_new_python() is None


# ------------------------------------------------------------------------------------------------ the venv
def pearmut_venv(python: str, version: tuple[int, ...], pearmut: str) -> Path:
    """``.pearmut-venvs/py<version>-pearmut-<pearmut>`` with Pearmut installed from the registry (built once, under
    a lock so that two pytest workers do not build it together)."""
    VENVS.mkdir(exist_ok=True)
    venv = VENVS / f"py{'.'.join(map(str, version))}-pearmut-{pearmut}"
    stamp = venv / ".installed"
    with open(VENVS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
            done = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"pearmut=={pearmut}"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"pip install pearmut=={pearmut} failed:\n{done.stdout}\n{done.stderr}"
            stamp.write_text(pearmut + "\n")
    return venv


def newest_release(python: str) -> str:
    done = subprocess.run(
        [python, "-m", "pip", "index", "versions", "pearmut"], capture_output=True, text=True, timeout=120
    )
    match = re.search(r"pearmut \(([^)]+)\)", done.stdout)
    assert match, f"pip index versions pearmut gave no version:\n{done.stdout}\n{done.stderr}"
    return match.group(1)


@pytest.fixture(scope="session")
def new_python():
    return new_python_or_skip()


# ------------------------------------------------------------------------------------------------ the server
class _Local(http.client.HTTPConnection):
    """HTTP to 127.0.0.1 through ``socket.connect`` (the tests' network guard lets only local addresses through)."""

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect((self.host, self.port))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PearmutServer:
    """Pearmut's app (``pearmut.app``, what ``pearmut run`` serves, there bound to 0.0.0.0) on 127.0.0.1 and a free
    port, with its data under ``root`` (``PEARMUT_ROOT``) and a known main token."""

    def __init__(self, venv: Path, root: Path) -> None:
        self.venv, self.root = venv, root
        root.mkdir(parents=True, exist_ok=True)
        self.token_main = "precomet-test-token"
        self.env = {**os.environ, "PEARMUT_ROOT": str(root), "PEARMUT_TOKEN_MAIN": self.token_main}
        self.port = 0
        self.process: subprocess.Popen | None = None

    def add(self, campaign_file: Path) -> None:
        """``pearmut add`` before the server starts (it refuses while one runs), else the dashboard's
        ``/add-campaign`` with the main token."""
        if self.process is None:
            done = subprocess.run(
                [str(self.venv / "bin" / "pearmut"), "add", str(campaign_file)],
                cwd=self.root,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0 and "Error" not in done.stdout, done.stdout + done.stderr
            return
        campaign = json.loads(campaign_file.read_text(encoding="utf-8"))
        answer = self.post("/add-campaign", {"campaign_data": campaign, "token_main": self.token_main})
        assert answer["status"] == "ok", answer

    def start(self) -> None:
        self.port = _free_port()
        code = (
            "import sys, uvicorn\nfrom pearmut.app import app\n"
            "uvicorn.run(app, host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')"
        )
        log = open(self.root / "server.log", "w")  # noqa: SIM115 -- kept open for the process's lifetime
        self.process = subprocess.Popen(
            [str(self.venv / "bin" / "python"), "-c", code, str(self.port)],
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"Pearmut's server exited: {(self.root / 'server.log').read_text()}")
            with contextlib.suppress(OSError):
                self.request("GET", "/index.html")
                return
            time.sleep(0.2)
        raise AssertionError(f"Pearmut's server did not answer in 60 s: {(self.root / 'server.log').read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        connection = _Local("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        status, data = self.request("POST", path, body)
        assert status == 200, f"POST {path} {body}: {status} {data!r}"
        return json.loads(data)

    def users(self, campaign_id: str) -> list[str]:
        return list(self.post("/dashboard-data", {"campaign_id": campaign_id})["data"])

    def token(self, campaign_id: str) -> str:
        return json.loads((self.root / "data" / "campaigns" / f"{campaign_id}.json").read_text())["token"]

    def download(self, path: Path, *campaign_ids: str) -> Path:
        query = urllib.parse.urlencode([("campaign_id", c) for c in campaign_ids])
        status, data = self.request("GET", f"/download-annotations?{query}")
        assert status == 200, data
        path.write_bytes(data)
        return path


@pytest.fixture
def pearmut_server(tmp_path) -> Iterator[Callable[[Path], PearmutServer]]:
    """A factory of servers (venv → server), every one stopped when the test ends, however it ends."""
    servers: list[PearmutServer] = []

    def make(venv: Path) -> PearmutServer:
        servers.append(PearmutServer(venv, tmp_path / f"pearmut{len(servers)}"))
        return servers[-1]

    try:
        yield make
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="session")
def pinned_venv(new_python) -> Path:
    return pearmut_venv(*new_python, PINNED)


# ------------------------------------------------------------------------------------------------ the annotator
def _hash(*parts: str) -> int:
    return zlib.crc32("\x1f".join(parts).encode("utf-8"))


def mqm_spans(item_id: str, model: str) -> tuple[list[dict[str, Any]], float]:
    """Error spans an MQM annotator marks on a cell, and their WMT score worked out by hand: major 5, minor 1,
    minor punctuation 0.1."""
    h = _hash(item_id, model, "mqm")
    major, minor, punctuation = h % 3, (h // 3) % 3, (h // 9) % 2
    spans = [{"start_i": 0, "end_i": 1, "severity": "major", "category": "Accuracy/Mistranslation"}] * major
    spans += [{"start_i": 2, "end_i": 3, "severity": "minor", "category": "Style/Awkward style"}] * minor
    spans += [{"start_i": 4, "end_i": 4, "severity": "minor", "category": "Linguistic conventions/Punctuation"}] * (
        punctuation
    )
    return [dict(span) for span in spans], -(5 * major + minor + 0.1 * punctuation)


class Annotator:
    """Answers documents as Pearmut's annotate page submits them, and keeps the score each judgement stands for
    (``truth[(user, item, model)]``): a slider score (ESA, DA) or, for MQM, the error spans' WMT score. A skipped
    item is submitted as ``null``; tutorial and attention-check items are answered within their validation rules."""

    def __init__(self, server: PearmutServer, campaign_id: str, *, skip: set[str] = frozenset()) -> None:
        self.server, self.campaign_id, self.skip = server, campaign_id, skip
        self.truth: dict[tuple[str, str, str], float] = {}
        self.extra: list[str] = []  # item_i of tutorial and attention-check documents answered

    def score(self, item: dict[str, Any], model: str) -> dict[str, Any]:
        item_id = item["item_id"]
        if item.get("precomet_protocol") == "MQM":
            spans, value = mqm_spans(item_id, model)
            return {"score": float(_hash(item_id, model) % 101), "error_spans": spans, "textfield": None}, value
        value = float(_hash(item_id, model) % 101)
        return {"score": value, "error_spans": [], "textfield": None}, value

    def answer(self, user: str, item_i: Any, payload: list[dict[str, Any]], *, shift: float = 0.0) -> None:
        annotation: list[Any] = []
        validations = []
        for item in payload:
            if "validation" in item:  # a tutorial or attention check: within its rule
                rule_of = item["validation"]
                entry = {}
                for model in item["tgt"]:
                    low, high = rule_of.get(model, {}).get("score", [50, 50])
                    entry[model] = {"score": (low + high) / 2, "error_spans": [], "textfield": None}
                annotation.append(entry)
                validations.append(True)
                continue
            if isinstance(item_i, str):  # a tutorial or attention-check item without a rule
                annotation.append(
                    {model: {"score": 50.0, "error_spans": [], "textfield": None} for model in item["tgt"]}
                )
                continue
            if item["item_id"] in self.skip:
                annotation.append(None)  # the annotate page's "skip"
                continue
            entry = {}
            for model in item["tgt"]:
                answer, value = self.score(item, model)
                if answer["score"] is not None:
                    answer["score"] = min(100.0, answer["score"] + shift)
                    value = value if item.get("precomet_protocol") == "MQM" else answer["score"]
                entry[model] = answer
                self.truth[(user, item["item_id"], model)] = value
            annotation.append(entry)
        now = time.time()
        payload_out: dict[str, Any] = {
            "annotation": annotation,
            "actions": [{"time": now - 5, "action": "load"}, {"time": now, "action": "submit"}],
            "item": payload,
        }
        if validations:
            payload_out["validations"] = validations
        answer = self.server.post(
            "/log-response",
            {"campaign_id": self.campaign_id, "user_id": user, "item_i": item_i, "payload": payload_out},
        )
        assert answer == "ok" or answer == {"status": "ok"}, answer

    def run(self, user: str, *, limit: int = 10_000) -> None:
        """Take documents with ``/get-next-item`` until Pearmut says goodbye (or ``limit`` documents)."""
        for _ in range(limit):
            reply = self.server.post("/get-next-item", {"campaign_id": self.campaign_id, "user_id": user})
            if reply["status"] == "goodbye":
                return
            item_i = reply["info"]["item_i"]
            if isinstance(item_i, str):
                self.extra.append(item_i)
            self.answer(user, item_i, reply["payload"])
        raise AssertionError(f"{self.campaign_id}/{user}: no goodbye after {limit} documents")

    def run_all(self) -> None:
        for user in self.server.users(self.campaign_id):
            self.run(user)

    def resubmit(self, user: str, item_i: int, shift: float) -> None:
        """The annotator goes back to a document (``/get-i-item``) and submits it again, scores moved by
        ``shift``: the later score of a cell replaces the earlier one."""
        reply = self.server.post("/get-i-item", {"campaign_id": self.campaign_id, "user_id": user, "item_i": item_i})
        self.answer(user, item_i, reply["payload"], shift=shift)

    def reset(self, user: str) -> None:
        """An administrator resets the user (dashboard): every earlier record of theirs is void."""
        token = self.server.token(self.campaign_id)
        status, data = self.server.request(
            "POST", "/reset-campaign", {"campaign_id": self.campaign_id, "user_id": user, "token": token}
        )
        assert status == 200, data
        self.truth = {key: value for key, value in self.truth.items() if key[0] != user}

    def canonical(self, path: Path, sources: dict[str, str]) -> Path:
        """The same judgements as a canonical file (several annotators of a cell averaged, as the reader does)."""
        cells: dict[str, dict[str, list[float]]] = {}
        for (_, item, model), value in self.truth.items():
            cells.setdefault(item, {}).setdefault(model, []).append(value)
        with open(path, "w", encoding="utf-8") as handle:
            for item, models in cells.items():
                scores = {m: {"human": sum(v) / len(v)} for m, v in models.items()}
                handle.write(json.dumps({"id": item, "src": sources[item], "scores": scores}) + "\n")
        return path


# ------------------------------------------------------------------------------------------------ precomet's side
def _pool(path: Path, n: int = 48) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            outputs = {s: f"{s} says {'x' * (i % 7)} number {i}" for s in SYSTEMS}
            handle.write(
                json.dumps(
                    {"id": f"seg{i}", "doc": f"doc{i // 4}", "src": f"source {i} " + "w" * (i % 11), "tgt": outputs}
                )
                + "\n"
            )
    return path


def _sources(pool: Path) -> dict[str, str]:
    return {row["id"]: row["src"] for row in map(json.loads, pool.read_text().splitlines())}


def _waves(pool: Path, manifest: Path, *options: str, seed: int = 0) -> None:
    argv = ["waves", "--data", str(pool), "--size", "12", "--chooser", "random", "--seed", str(seed)]
    assert main([*argv, "--manifest", str(manifest), *options]) == 0


def _drawn(campaign_file: Path) -> tuple[str, set[tuple[str, str]]]:
    campaign = json.loads(campaign_file.read_text(encoding="utf-8"))
    data = campaign["data"]
    documents = [d for task in data for d in task] if campaign["info"]["assignment"] == "task-based" else data
    return campaign["campaign_id"], {(item["item_id"], m) for doc in documents for item in doc for m in item["tgt"]}


def assert_same_next_step(tmp: Path, pool: Path, manifest: Path, export: list[Path], canonical: Path, **kw) -> dict:
    """The next call on ``--pearmut-annotations export`` and on ``--judgements canonical`` (each from a copy of the
    manifest): the same report, the same next wave and the same manifest. Returns the report."""
    outputs = {}
    for name, flag, files in (("pearmut", "--pearmut-annotations", export), ("canonical", "--judgements", [canonical])):
        folder = tmp / f"next-{name}"
        folder.mkdir()
        shutil.copy(manifest, folder / "m.json")
        _waves(
            pool,
            folder / "m.json",
            flag,
            *map(str, files),
            "--report",
            str(folder / "report.json"),
            "--batch",
            str(folder / "next.jsonl"),
            **kw,
        )
        outputs[name] = {f: (folder / f).read_text(encoding="utf-8") for f in ("report.json", "next.jsonl", "m.json")}
    assert outputs["pearmut"] == outputs["canonical"]
    return json.loads(outputs["pearmut"]["report.json"])


# ------------------------------------------------------------------------------------------------ the round trips
CASES = {
    "task-based": ("ESA", ["--pearmut-task-size", "10"]),
    "single-stream": ("DA", ["--pearmut-task-size", "15min"]),
    "dynamic": ("MQM", ["--pearmut-task-size", "12"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(CASES))
def test_every_assignment_round_trips_through_the_real_server(assignment, pinned_venv, pearmut_server, tmp_path):
    protocol, options = CASES[assignment]
    pool, manifest = _pool(tmp_path / "pool.jsonl"), tmp_path / "m.json"
    campaign_file = tmp_path / "wave1.pearmut.json"
    _waves(
        pool,
        manifest,
        "--pearmut",
        str(campaign_file),
        "--pearmut-assignment",
        assignment,
        "--pearmut-protocol",
        protocol,
        *options,
    )
    campaign_id, drawn = _drawn(campaign_file)
    server = pearmut_server(pinned_venv)
    server.add(campaign_file)
    server.start()
    users = server.users(campaign_id)
    assert len(users) == json.loads(campaign_file.read_text())["info"].get("users", len(users))
    assert len(users) > 1  # the task size split the wave into several annotator links
    skipped = sorted({item for item, _ in drawn})[:1]
    annotator = Annotator(server, campaign_id, skip=set(skipped))
    annotator.run_all()
    if assignment != "dynamic":
        user = next(user for user in users if any(key[0] == user for key in annotator.truth))
        annotator.resubmit(user, 0, shift=3.0)  # replaces that user's scores of document 0
    if assignment == "task-based":  # an administrator resets a user, who answers again from scratch
        annotator.reset(users[0])
        annotator.run(users[0])
    judged = {(item, model) for _, item, model in annotator.truth}
    assert judged == {cell for cell in drawn if cell[0] not in skipped}  # every drawn cell but the skipped item's
    export = server.download(tmp_path / "annotations.json", campaign_id)
    records = json.loads(export.read_text())[campaign_id]
    assert any(record["annotation"] == "__RESET__" for record in records) == (assignment == "task-based")
    canonical = annotator.canonical(tmp_path / "canonical.jsonl", _sources(pool))
    report = assert_same_next_step(tmp_path, pool, manifest, [export], canonical)
    assert report["judged_cells"] == len(judged)


@pytest.mark.slow
def test_two_waves_and_two_campaigns_of_one_pool_side_by_side_on_one_server(pinned_venv, pearmut_server, tmp_path):
    pool = _pool(tmp_path / "pool.jsonl")
    files = {name: tmp_path / f"{name}.pearmut.json" for name in ("a1", "b1", "a2")}
    manifests = {name: tmp_path / f"{name}-manifest.json" for name in "ab"}
    _waves(pool, manifests["a"], "--pearmut", str(files["a1"]))
    _waves(pool, manifests["b"], "--pearmut", str(files["b1"]), seed=1)  # another campaign of the same pool
    ids = {name: _drawn(path)[0] for name, path in files.items() if path.exists()}
    assert len(set(ids.values())) == 2 and all(i.endswith("_wave1") for i in ids.values())
    server = pearmut_server(pinned_venv)
    server.add(files["a1"])
    server.add(files["b1"])
    server.start()
    a1, b1 = Annotator(server, ids["a1"]), Annotator(server, ids["b1"])
    a1.run_all()
    b1.run_all()
    export_a1 = server.download(tmp_path / "a1.json", ids["a1"])
    # wave 2 of campaign a, drawn on wave 1's judgements, added to the running server beside a1 and b1
    _waves(pool, manifests["a"], "--pearmut-annotations", str(export_a1), "--pearmut", str(files["a2"]))
    ids["a2"] = _drawn(files["a2"])[0]
    assert ids["a2"] == ids["a1"].replace("_wave1", "_wave2")  # the campaign keeps its key
    server.add(files["a2"])
    a2 = Annotator(server, ids["a2"])
    a2.run_all()
    assert not set(a1.truth) & set(a2.truth)
    # both waves of campaign a in one download, with campaign b's wave beside them (the same pool's items): b's
    # records are left out, and the next step is the one of a's judgements alone
    export = server.download(tmp_path / "a.json", ids["a1"], ids["a2"], ids["b1"])
    a2.truth.update(a1.truth)
    canonical = a2.canonical(tmp_path / "a-canonical.jsonl", _sources(pool))
    report = assert_same_next_step(tmp_path, pool, manifests["a"], [export], canonical)
    assert report["judged_cells"] == len(a2.truth)
    export_b = server.download(tmp_path / "b.json", ids["b1"])
    assert {key for key in json.loads(export_b.read_text())} == {ids["b1"]}
    argv = ["waves", "--data", str(pool), "--size", "12", "--chooser", "random", "--manifest", str(manifests["a"])]
    assert main([*argv, "--pearmut-annotations", str(export_b)]) == 2  # only the other campaign's: refused


@pytest.mark.slow
def test_a_campaign_with_a_tutorial_and_attention_checks(pinned_venv, pearmut_server, tmp_path):
    pool, manifest = _pool(tmp_path / "pool.jsonl"), tmp_path / "m.json"
    tutorial, attention = tmp_path / "tutorial.json", tmp_path / "attention.json"
    tutorial.write_text(
        json.dumps(
            {  # as Pearmut's examples/tutorial: a campaign file whose documents are the tutorial
                "info": {"assignment": "task-based", "protocol": "ESA"},
                "campaign_id": "tutorial",
                "data": [
                    [
                        [
                            {
                                "src": "The cat sat.",
                                "tgt": {"tutorialA": "Die Katze saß.", "tutorialB": "Der Hund lief."},
                                "skippable": True,
                                "validation": {
                                    "tutorialA": {"warning": "A is right: 80-100.", "score": [80, 100]},
                                    "tutorialB": {"warning": "B is wrong: 0-30.", "score": [0, 30]},
                                },
                            }
                        ]
                    ]
                ],
            }
        )
    )
    attention.write_text(
        json.dumps(
            [
                [
                    {
                        "src": "Good morning.",
                        "tgt": {"check": "Guten Abend."},
                        "validation": {"check": {"score": [0, 40]}},
                    }
                ],
                [{"src": "Thank you.", "tgt": {"check": "Danke."}, "validation": {"check": {"score": [70, 100]}}}],
            ]
        )
    )
    campaign_file = tmp_path / "wave1.pearmut.json"
    _waves(
        pool,
        manifest,
        "--pearmut",
        str(campaign_file),
        "--pearmut-tutorial",
        str(tutorial),
        "--pearmut-attention",
        str(attention),
        "--pearmut-attention-rate",
        "0.5",
    )
    written = json.loads(campaign_file.read_text())
    assert len(written["data_welcome"]) == 1 and len(written["data_random"]) == 2
    assert written["info"]["data_random_prob"] == 0.5
    campaign_id, drawn = _drawn(campaign_file)
    server = pearmut_server(pinned_venv)
    server.add(campaign_file)
    server.start()
    annotator = Annotator(server, campaign_id)
    annotator.run_all()
    assert "welcome_0" in annotator.extra and any(i.startswith("random_") for i in annotator.extra)
    assert {(item, model) for _, item, model in annotator.truth} == drawn
    progress = server.post("/dashboard-data", {"campaign_id": campaign_id})["data"]
    assert all(entry["threshold_passed"] for entry in progress.values())  # the attention checks were passed
    export = server.download(tmp_path / "annotations.json", campaign_id)
    records = json.loads(export.read_text())[campaign_id]
    assert any(str(r.get("item_i")).startswith(("welcome_", "random_")) for r in records)
    canonical = annotator.canonical(tmp_path / "canonical.jsonl", _sources(pool))
    assert_same_next_step(tmp_path, pool, manifest, [export], canonical)


@pytest.mark.slow
def test_the_newest_pearmut_release_loads_and_exports_a_campaign(new_python, pearmut_server, tmp_path):
    newest = newest_release(new_python[0])
    if newest == PINNED:
        pytest.skip(f"the newest Pearmut release is the pinned {PINNED}, run by the other tests")
    venv = pearmut_venv(*new_python, newest)
    pool, manifest = _pool(tmp_path / "pool.jsonl"), tmp_path / "m.json"
    campaign_file = tmp_path / "wave1.pearmut.json"
    _waves(pool, manifest, "--pearmut", str(campaign_file), "--pearmut-task-size", "10")
    campaign_id, drawn = _drawn(campaign_file)
    server = pearmut_server(venv)
    server.add(campaign_file)
    server.start()
    annotator = Annotator(server, campaign_id)
    annotator.run_all()
    assert {(item, model) for _, item, model in annotator.truth} == drawn
    export = server.download(tmp_path / "annotations.json", campaign_id)
    canonical = annotator.canonical(tmp_path / "canonical.jsonl", _sources(pool))
    assert_same_next_step(tmp_path, pool, manifest, [export], canonical)
