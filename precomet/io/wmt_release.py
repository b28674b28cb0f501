"""Official WMT release layout (``wmt21-news-systems`` … ``wmt23-news-systems``, ``txt/`` folder): test-set
sources, references and every submitted system output, one segment per line, line-aligned. No scores.

Under a root, one directory per year (``wmt22``, any name starting with ``wmt``)::

    ROOT/wmtYY/txt/sources/<testset>.<lp>.src.<sl>              generaltest2022.en-de.src.en
    ROOT/wmtYY/txt/references/<testset>.<lp>.ref.<name>.<tl>    generaltest2022.en-de.ref.A.de
    ROOT/wmtYY/txt/system-outputs/<testset>.<lp>.hyp.<sys>.<tl> generaltest2022.en-de.hyp.Online-A.de

A campaign is one test set × language pair of one year, named ``wmtYY/<lp>`` (``wmt22/en-de``); when a
year holds several test sets for the same pair, only ``wmtYY/<testset>/<lp>`` names it (always accepted).
System and reference names may contain dots (``Allegro.eu``): they lie between ``.hyp.`` / ``.ref.`` and the
final ``.<tl>``.

Items = source lines (id = the 0-based line index as a string); lines with an empty source are dropped
(``info['dropped']``). Systems = every output file, sorted. ``ref`` = the first reference by sorted name;
``info['reference']`` names it and the others. The layout has no documents or domains: each item is its own
document, domain ``all``; cost is the default length estimate. A UTF-8 byte-order mark at the start of a file
(three WMT23 outputs have one) is removed.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from precomet.campaign import Campaign
from precomet.errors import DataError
from precomet.io.text import read_lines

__all__ = ["is_wmt_release_root", "list_release_campaigns", "load_wmt_release"]

log = logging.getLogger(__name__)

_SOURCE = re.compile(r"^(?P<testset>[^.]+)\.(?P<lp>[^.]+-[^.]+)\.src\.(?P<sl>[^.]+)$")
_TEXT = re.compile(r"^(?P<testset>[^.]+)\.(?P<lp>[^.]+-[^.]+)\.(?P<kind>ref|hyp)\.(?P<rest>.+)$")
_LAYOUT = "wmtYY/txt/sources/<testset>.<lp>.src.<sl>"


class _Source(NamedTuple):
    year: str
    testset: str
    lp: str
    path: Path


def _year_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("wmt*") if (p / "txt" / "sources").is_dir())


def _sources(root: Path) -> list[_Source]:
    found = []
    for year in _year_dirs(root):
        for path in sorted((year / "txt" / "sources").iterdir()):
            match = _SOURCE.match(path.name)
            if match and path.is_file():
                found.append(_Source(year.name, match["testset"], match["lp"], path))
            else:
                log.debug("%s: not a <testset>.<lp>.src.<sl> file; ignored", path)
    return found


def is_wmt_release_root(path: str | Path) -> bool:
    """A directory with ``wmt*/txt/sources/<testset>.<lp>.src.<sl>`` files (a WMT24 ESA root has
    ``txt/sources/<lp>.txt`` directly below it; an mt-metrics-eval root has ``wmtYY/sources/``)."""
    path = Path(path)
    return path.is_dir() and bool(_sources(path))


def _campaign_names(sources: list[_Source]) -> dict[str, _Source]:
    """Every accepted campaign name -> its source: ``wmtYY/<testset>/<lp>`` always, ``wmtYY/<lp>`` when
    the year has one test set for that pair."""
    testsets: dict[tuple[str, str], list[_Source]] = defaultdict(list)
    for source in sources:
        testsets[(source.year, source.lp)].append(source)
    names = {}
    for (year, lp), group in testsets.items():
        for source in group:
            names[f"{year}/{source.testset}/{lp}"] = source
        if len(group) == 1:
            names[f"{year}/{lp}"] = group[0]
    return names


def _listed(sources: list[_Source]) -> list[str]:
    """The one name per campaign that :func:`list_release_campaigns` shows."""
    count: dict[tuple[str, str], int] = defaultdict(int)
    for source in sources:
        count[(source.year, source.lp)] += 1
    return sorted(f"{s.year}/{s.lp}" if count[(s.year, s.lp)] == 1 else f"{s.year}/{s.testset}/{s.lp}" for s in sources)


def _checked_sources(root: Path) -> list[_Source]:
    if not root.is_dir():
        raise DataError(root, "no such directory")
    sources = _sources(root)
    if not sources:
        raise DataError(root, f"no WMT release campaign found: expected files {_LAYOUT}")
    return sources


def list_release_campaigns(root: str | Path) -> list[str]:
    """Sorted campaign names under a release root (``wmt22/en-de``; ``wmtYY/<testset>/<lp>`` where a year
    has several test sets for one pair). A root without any campaign raises :class:`DataError`."""
    return _listed(_checked_sources(Path(root)))


def _read(path: Path) -> list[str]:
    lines = read_lines(path)
    if lines and lines[0].startswith("\ufeff"):
        log.debug("%s: UTF-8 byte-order mark removed", path)
        lines[0] = lines[0][1:]
    return lines


def _texts(base: Path, folder: str, prefix: str, tl: str) -> dict[str, Path]:
    """``{name: path}`` of the files ``<prefix><name>.<tl>`` in ``base/folder``."""
    found: dict[str, Path] = {}
    directory = base / folder
    if not directory.is_dir():
        return found
    for path in directory.glob(f"{prefix}*"):
        name = path.name[len(prefix) :]
        if not name.endswith(f".{tl}") or len(name) == len(tl) + 1:
            raise DataError(path, f"expected a file name {prefix}<name>.{tl} (target language {tl!r})")
        found[name[: -len(tl) - 1]] = path
    return found


def _missing_source(root: Path, campaign: str, valid: list[str]) -> DataError:
    """The error for an unknown campaign; names the missing sources file when outputs or references exist."""
    parts = campaign.split("/")
    if len(parts) in (2, 3):
        year, lp = parts[0], parts[-1]
        base = root / year / "txt"
        texts = sorted(
            p
            for folder in ("system-outputs", "references")
            if (base / folder).is_dir()
            for p in (base / folder).iterdir()
            if (m := _TEXT.match(p.name)) and m["lp"] == lp and (len(parts) == 2 or m["testset"] == parts[1])
        )
        if texts:
            first = _TEXT.match(texts[0].name)
            assert first is not None  # texts holds only names that match
            testset = first["testset"]
            expected = base / "sources" / f"{testset}.{lp}.src.{lp.split('-')[0]}"
            return DataError(
                expected,
                f"no such file: campaign {campaign!r} has {len(texts)} output/reference file(s)"
                f" (e.g. {texts[0].name}) but no sources file; campaigns with sources: {valid}",
            )
    return DataError(root, f"unknown campaign {campaign!r}; found {valid}")


def load_wmt_release(root: str | Path, campaign: str) -> Campaign:
    """Load one campaign (``"wmt22/en-de"`` or ``"wmt22/generaltest2022/en-de"``) of a WMT release root."""
    root = Path(root)
    sources = _checked_sources(root)
    names = _campaign_names(sources)
    if campaign not in names:
        parts = campaign.split("/")
        if len(parts) == 2:
            options = sorted(f"{s.year}/{s.testset}/{s.lp}" for s in sources if (s.year, s.lp) == tuple(parts))
            if len(options) > 1:
                raise DataError(
                    root / parts[0],
                    f"campaign {campaign!r} is ambiguous: {len(options)} test sets for {parts[1]};"
                    f" choose one of {options}",
                )
        raise _missing_source(root, campaign, _listed(sources))
    source = names[campaign]
    tl = source.lp.split("-", 1)[1]
    base = root / source.year / "txt"
    src = _read(source.path)
    n = len(src)

    def aligned(path: Path, what: str) -> list[str]:
        lines = _read(path)
        if len(lines) != n:
            raise DataError(path, f"{what}: {len(lines)} lines, but the sources file {source.path} has {n}")
        return lines

    stem = f"{source.testset}.{source.lp}"
    ref_paths = _texts(base, "references", f"{stem}.ref.", tl)
    out_paths = _texts(base, "system-outputs", f"{stem}.hyp.", tl)
    systems = sorted(out_paths)
    outputs = {s: aligned(out_paths[s], f"system {s!r}") for s in systems}
    ref_names = sorted(ref_paths)
    ref = aligned(ref_paths[ref_names[0]], f"reference {ref_names[0]!r}") if ref_names else None
    for other in ref_names[1:]:
        aligned(ref_paths[other], f"reference {other!r}")

    keep = [i for i, text in enumerate(src) if text.strip()]
    info = {
        "layout": "WMT release txt: no documents or domains (each item is its own document, domain 'all')",
        "testset": source.testset,
        "reference": (
            f"{ref_names[0]} (first by name)"
            + (f"; also available: {', '.join(ref_names[1:])}" if ref_names[1:] else "")
            if ref_names
            else "none"
        ),
    }
    if len(keep) < n:
        dropped = [i for i, text in enumerate(src) if not text.strip()]
        shown = ", ".join(map(str, dropped[:10])) + (", …" if len(dropped) > 10 else "")
        info["dropped"] = f"{len(dropped)} lines with an empty source (0-based lines {shown}) of {source.path.name}"
    empty = {s: sum(1 for i in keep if not outputs[s][i].strip()) for s in systems}
    if any(empty.values()):
        info["empty outputs"] = ", ".join(f"{s} {k}" for s, k in empty.items() if k)
    if not systems:
        info["systems"] = f"no system-outputs/{stem}.hyp.*.{tl} files"
    return Campaign.build(
        ids=[str(i) for i in keep],
        src=[src[i] for i in keep],
        systems=systems,
        outputs={s: [outputs[s][i] for i in keep] for s in systems},
        ref=None if ref is None else [ref[i] for i in keep],
        name=campaign,
        lp=source.lp,
        info=info,
    )
