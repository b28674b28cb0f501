"""For the benchmark scripts that print their tables: what they print also goes to their results file, under the
``Command:`` line of the very invocation that printed it."""

from __future__ import annotations

import io
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from paths import REPO  # benchmarks/paths.py


class _Tee(io.TextIOBase):
    """A text stream writing to several streams."""

    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def invocation() -> str:
    """This process's command as the results files write it: ``.venv/bin/python benchmarks/SCRIPT ARGS``."""
    script = Path(sys.argv[0]).resolve().relative_to(REPO)
    return " ".join([".venv/bin/python", str(script), *map(shlex.quote, sys.argv[1:])])


@contextmanager
def results_file(path: Path, title: str, *, fenced: bool = False) -> Iterator[None]:
    """Everything printed inside the block is also written to ``path`` (when the block ends without an error):
    ``# title``, the ``Command:`` line, then the printed text (in a code block when ``fenced``: plain-text tables)."""
    printed = io.StringIO()
    with redirect_stdout(_Tee(sys.stdout, printed)):
        yield
    body = printed.getvalue().strip("\n")
    body = f"```\n{body}\n```" if fenced else body
    path.write_text(f"# {title}\n\nCommand: `{invocation()}`\n\n{body}\n", encoding="utf-8")
    print(f"wrote {path}")
