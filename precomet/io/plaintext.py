"""Plain-text sources: one source per line, as sacrebleu and ``comet-score -s`` read them.

* Item ids are the 1-based line numbers (``"1"``, ``"2"``, …), so an id points at the line an editor shows.
* Line ends are universal newlines, decided once for sources, ``docs`` and ``domains`` alike: ``\\n``, ``\\r\\n``
  and a lone ``\\r`` each end a line, even mixed in one file (as Python and sacrebleu read text); U+2028 and the
  other Unicode separators stay inside the line.
* A blank line (empty, white space, or only invisible characters such as U+200B or U+FEFF) is refused naming
  ``file:line``: sacrebleu keeps it as an empty segment, but an empty source cannot be annotated, and skipping it
  would shift every later id.
* ``docs`` / ``domains``: optional files alongside, one document id / domain per source line (same number of
  lines, none blank); without them every item is its own document and the domain is ``all``.
* The campaign has no systems, outputs, references or scores (a *sources-only* campaign); cost is the length
  estimate. Commands that need outputs or scores refuse it; :func:`is_sources_only` tells them apart.

A file is read as plain text when its name ends in ``.txt`` (any case), or when the caller says so
(``text=True`` in :func:`precomet.io.load`, ``--text`` on the command line).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from precomet.campaign import Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.text import read_lines
from precomet.values import is_blank, is_invisible

TEXT_SUFFIX = ".txt"
SOURCES_ONLY = "sources only (plain text): no systems, outputs, references or scores"
"""The ``info["input"]`` note of a campaign read from plain text (printed by ``precomet info``)."""


def is_text_path(path: str | Path) -> bool:
    """Whether ``path`` is read as plain-text sources by default (its name ends in ``.txt``)."""
    return Path(path).suffix.lower() == TEXT_SUFFIX


def read_text_sources(path: str | Path) -> list[str]:
    """The sources of a plain-text file, one per line (line endings removed, text kept as it is); a blank line
    or a file without any line raises :class:`DataError` naming the file (and line)."""
    return _read_column(path, "source", hint="an empty source cannot be annotated; remove the line or fill it in")


def _read_column(path: str | Path, what: str, *, hint: str) -> list[str]:
    # a byte-order mark starts a file, never a line's text: one inside (`cat a.txt b.txt`) starts the next file
    lines = [line[1:] if line.startswith("\ufeff") else line for line in read_lines(path, universal=True)]
    if not lines:
        raise DataError(path, f"empty file; expected one {what} per line")
    for number, line in enumerate(lines, start=1):
        if is_blank(line):
            raise DataError(path, f"blank line: expected one {what} per line ({hint})", line=number)
    return lines


def read_alongside(path: str | Path, n: int, *, what: str, sources: str | Path) -> list[str]:
    """One ``what`` (``document id``, ``domain``) per line of ``path``, aligned with the ``n`` lines of ``sources``,
    in Unicode normal form C (a value typed with a combining accent is the same value); a different number of
    lines, a blank line or an invisible character in a value raises :class:`DataError` naming ``path`` (and the
    line)."""
    values = _read_column(path, what, hint=f"line N gives the {what} of source line N")
    if len(values) != n:
        where = len(values) + 1 if len(values) < n else n + 1
        raise DataError(
            path,
            f"{len(values)} lines, but {sources} has {n} sources; expected one {what} per source line"
            + (" (this file ends early)" if len(values) < n else " (this line has no source)"),
            line=where if len(values) > n else None,
        )
    for number, value in enumerate(values, start=1):
        hidden = [char for char in value if is_invisible(char) and not char.isspace()]
        if hidden:  # "doc1" and "doc1\u200b" would be two documents that look alike
            raise DataError(
                path,
                f"the {what} {value.strip()!r} holds the invisible character U+{ord(hidden[0]):04X}; two values that"
                " look alike would then differ: remove it",
                line=number,
            )
    return [unicodedata.normalize("NFC", value.strip()) for value in values]  # "café" typed two ways: one value


def load_text(
    path: str | Path,
    *,
    docs: str | Path | None = None,
    domains: str | Path | None = None,
    name: str | None = None,
) -> Campaign:
    """A sources-only campaign from a plain-text file (see the module docstring); ``docs`` / ``domains`` name the
    files of document ids / domains alongside it."""
    path = Path(path)
    sources = read_text_sources(path)
    n = len(sources)
    ids = [str(number) for number in range(1, n + 1)]
    doc = read_alongside(docs, n, what="document id", sources=path) if docs is not None else None
    domain = read_alongside(domains, n, what="domain", sources=path) if domains is not None else None
    return Campaign.build(
        ids=ids,
        src=sources,
        systems=[],
        doc=doc,
        domain=domain,
        name=name or path.stem,
        info={"input": SOURCES_ONLY},
    )


def is_sources_only(campaign: Campaign) -> bool:
    """Whether ``campaign`` has sources only: no system (so no outputs and no scores), e.g. read from plain text."""
    return not campaign.systems


def require_systems(
    campaign: Campaign,
    *,
    what: str,
    instead: str,
    needs: str = "system outputs and scores",
    where: str | None = None,
) -> None:
    """Refuse a sources-only ``campaign`` for ``what`` (e.g. ``"utility 'metric_var'"``), saying what is missing
    (``needs``), where (``where``, default: the campaign's name) and what to use ``instead``."""
    if is_sources_only(campaign):
        place = where or f"campaign {campaign.name!r}"
        raise PrecometError(f"{what} needs {needs}, but {place} has sources only (no systems); {instead}")
