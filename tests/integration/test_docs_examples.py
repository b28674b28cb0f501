"""Every ```bash/```sh and ```python block of README.md and docs/*.md runs, on the real data (issue 21).

One test per block (id = file:line). The blocks of one file run in order in one fresh folder, so a block may use
what an earlier block of the same file wrote; the Python blocks of one file share one interpreter (as a reader
pasting them into one session would), each bash block runs alone under ``bash -euo pipefail``. The folder is laid
out the way the docs write their paths: ``../shared/data/raw`` is the real data, and ``checkpoints/`` and
``configs/`` hold the repository's files (linked one by one, so a block that trains into ``checkpoints/NEW``
writes into the temporary folder, never into the repository). ``precomet`` on PATH is this interpreter's and the
package imported is this source tree's.

A block preceded by ``<!-- docs-test: skip REASON -->`` is reported as skipped with that reason; keep those for
what cannot run offline on CPU (the test suite itself, an encoder that is not installed, a GPU).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RAW, REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGS = {"bash": "bash", "sh": "bash", "python": "python"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s+(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
TIMEOUT = 900  # seconds per block


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "bash" or "python"
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def extract_blocks(path: Path) -> list[Block]:
    """The fenced bash/sh/python blocks of a Markdown file, with the skip reason written on the line before."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, lang = i, match.group(1).lower()
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        if lang in LANGS:
            before = lines[start - 1] if start > 0 else ""
            skip = SKIP.search(before)
            code = "\n".join(lines[start + 1 : i]) + "\n"
            blocks.append(Block(path, start + 1, LANGS[lang], code, skip.group(1) if skip else None))
        i += 1
    return blocks


BLOCKS = [block for doc in DOCS for block in extract_blocks(doc)]


def test_extract_blocks(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n```bash\necho 1\n```\n\n<!-- docs-test: skip needs a GPU -->\n```python\nprint(2)\n```\n"
        "```\nnot code\n```\n```sh\necho 3\n```\n"
    )
    got = [(b.line, b.lang, b.code, b.skip) for b in extract_blocks(doc)]
    assert got == [
        (2, "bash", "echo 1\n", None),
        (7, "python", "print(2)\n", "needs a GPU"),
        (13, "bash", "echo 3\n", None),
    ]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    env.update(MPLBACKEND="Agg", TQDM_DISABLE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.update(HF_DATASETS_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


def _make_folder(root: Path, name: str) -> Path:
    """``root/shared/data/raw`` -> the real data; ``root/NAME`` the working folder with checkpoints/ and configs/."""
    raw = root / "shared" / "data" / "raw"
    if not raw.exists():
        raw.parent.mkdir(parents=True)
        raw.symlink_to(RAW.resolve(), target_is_directory=True)
    work = root / name
    work.mkdir()
    for sub in ("checkpoints", "configs"):
        (work / sub).mkdir()
        for entry in (REPO / sub).iterdir():
            (work / sub / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return work


# The Python blocks of one file share one interpreter: it reads a block's path per line on stdin, runs it in one
# namespace with stdout/stderr (file descriptors included) sent to the block's log, and answers one JSON line.
DRIVER = r"""
import json, os, sys, traceback
proto = os.fdopen(os.dup(1), "w")
namespace = {"__name__": "__main__"}
for line in sys.stdin:
    path, log = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "w") as out:
        os.dup2(out.fileno(), 1); os.dup2(out.fileno(), 2)
        ok = True
        try:
            exec(compile(open(path, encoding="utf-8").read(), path, "exec"), namespace)
        except BaseException:
            ok = False
            traceback.print_exc()
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(saved[0], 1); os.dup2(saved[1], 2)
    proto.write(json.dumps(ok) + "\n"); proto.flush()
"""


class DocSession:
    """The folder (and the Python interpreter) shared by the blocks of one Markdown file."""

    def __init__(self, work: Path):
        self.work = work
        self.env = _environment()
        self.python: subprocess.Popen[str] | None = None

    def run(self, block: Block) -> tuple[bool, str]:
        script = self.work / f".block-{block.line}.{'py' if block.lang == 'python' else 'sh'}"
        script.write_text(block.code, encoding="utf-8")
        if block.lang == "bash":
            try:
                out = subprocess.run(
                    ["bash", "-euo", "pipefail", script.name],
                    cwd=self.work,
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT,
                )
            except subprocess.TimeoutExpired as err:
                return False, f"timed out after {TIMEOUT} s\n{err.stdout or ''}{err.stderr or ''}"
            return out.returncode == 0, out.stdout + out.stderr
        if self.python is None:
            self.python = subprocess.Popen(
                [sys.executable, "-c", DRIVER],
                cwd=self.work,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        assert self.python.stdin is not None and self.python.stdout is not None
        log = self.work / f".block-{block.line}.log"
        self.python.stdin.write(json.dumps([str(script), str(log)]) + "\n")
        self.python.stdin.flush()
        ready, _, _ = select.select([self.python.stdout], [], [], TIMEOUT)
        answer = self.python.stdout.readline() if ready else ""
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if not answer:
            self.close()
            return False, f"the interpreter died or timed out after {TIMEOUT} s\n{text}"
        return bool(json.loads(answer)), text

    def close(self) -> None:
        if self.python is not None:
            self.python.kill()
            self.python.wait()
            self.python = None


@pytest.fixture(scope="module")
def doc_sessions(tmp_path_factory):
    if not RAW.exists():
        pytest.skip(f"real data not found at {RAW} (set PRECOMET_RAW_DATA)")
    root = tmp_path_factory.mktemp("docs")
    sessions: dict[Path, DocSession] = {}

    def get(doc: Path) -> DocSession:
        if doc not in sessions:
            sessions[doc] = DocSession(_make_folder(root, doc.stem))
        return sessions[doc]

    yield get
    for session in sessions.values():
        session.close()


def run_block(block: Block, doc_sessions) -> None:  # noqa: ANN001 -- the fixture's getter
    if block.skip:
        pytest.skip(block.skip)
    session = doc_sessions(block.doc)
    started = time.perf_counter()
    ok, output = session.run(block)
    seconds = time.perf_counter() - started
    print(f"{block.id}: {seconds:.1f} s")
    assert ok, f"{block.id} failed after {seconds:.1f} s in {session.work}:\n{output[-6000:]}"


def _page_tests(doc: Path) -> type:
    """One class per page: a page's blocks share one session (folder, interpreter), so under ``--dist loadscope`` they
    run on one xdist worker, in order, while pages run side by side."""
    blocks = [block for block in BLOCKS if block.doc == doc]

    @pytest.mark.slow
    @pytest.mark.realdata
    @pytest.mark.docs
    @pytest.mark.timeout(TIMEOUT + 60)
    @pytest.mark.parametrize("block", blocks, ids=[block.id for block in blocks])
    def test_doc_block(self, block: Block, doc_sessions) -> None:  # noqa: ANN001
        run_block(block, doc_sessions)

    name = "TestDocs" + "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", doc.stem) if part)
    return type(name, (), {"test_doc_block": test_doc_block})


for _doc in DOCS:
    _page = _page_tests(_doc)
    globals()[_page.__name__] = _page
