"""Official WMT release layout (``wmt21-news-systems`` … ``wmt23-news-systems``, ``txt/`` folder): test-set
sources, references and every submitted system output, one segment per line, line-aligned; for the
to-English pairs of WMT21/22, the official crowd DA segment scores (``humaneval/``).

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
``info['reference']`` names it and the others. Documents and domains come from ``ROOT/wmtYY/documents/<lp>.docs``
when it exists (mt-metrics-eval's format: one ``<domain or ->\t<docid>`` line per source line; ``-`` = ``all``,
:func:`read_documents`); otherwise each item is its own document, domain ``all``. Cost is the default length
estimate. A UTF-8 byte-order mark at the start of a file (three WMT23 outputs have one) is removed.

**Human scores** (crowd DA, ``humaneval/``): when a file ``ad-seg-scores-<lp>.csv`` for the campaign's pair
lies anywhere below ``ROOT/wmtYY/humaneval/`` (``wmt21/humaneval/newstest2021-toen/``,
``wmt22/humaneval/DA/newstest2022-toen/``), it is loaded: ``human`` = the annotator-standardised DA
(``Z.SCR``, the default human score), ``human_raw`` = the raw 0-100 DA (``RAW.SCR``); protocol ``da``.
``human_n`` = the number of judgements behind each cell (``N``). The file is whitespace-separated with the header
``SYS SID RAW.SCR Z.SCR N``. ``SID`` numbers the test set **sorted by document id** (a stable plain string sort:
:func:`sid_lines`; SOURCES.md §9), not its lines, so the scores are loaded only where the documents file exists
(``info['human scores']`` says why not otherwise) and ``info['human alignment']`` says how they were aligned. A
system name carries a trailing ``.<digits>`` suffix (``XMU.17`` = output ``….hyp.XMU.en``; a name that equals
an output name as it is is taken as it is).
``HUMAN``, ``HUMAN-B``, … (with or without suffix) are human references scored like systems: they are not
systems (``info['human references scored']``). Other scored names without an output file (``Nemo`` in WMT21
de-en and ru-en) are dropped (``info['scored without output']``); systems with an output but no score keep
NaN (``info['systems without human score']``). :data:`HUMANEVAL_ALIASES` names the files whose pair differs
from the campaign's (WMT22 ``lv-en`` = the campaign ``liv-en``). ``info['human scores']`` names the file,
``info['human coverage']`` counts the items scored for every system and for at least one. When a year holds
several test sets for the pair, the file cannot be assigned and is not loaded (``info['human scores']``
says so).
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError
from precomet.io.text import read_lines
from precomet.values import finite_number

__all__ = [
    "HUMANEVAL_ALIASES",
    "HUMAN_N",
    "HUMAN_RAW",
    "is_wmt_release_root",
    "list_release_campaigns",
    "load_wmt_release",
    "read_documents",
    "sid_lines",
]

log = logging.getLogger(__name__)

_SOURCE = re.compile(r"^(?P<testset>[^.]+)\.(?P<lp>[^.]+-[^.]+)\.src\.(?P<sl>[^.]+)$")
_TEXT = re.compile(r"^(?P<testset>[^.]+)\.(?P<lp>[^.]+-[^.]+)\.(?P<kind>ref|hyp)\.(?P<rest>.+)$")
_LAYOUT = "wmtYY/txt/sources/<testset>.<lp>.src.<sl>"

HUMAN_RAW = "human_raw"
"""Score name of the raw (0-100) DA; ``human`` holds the annotator-standardised (z) DA."""
HUMAN_N = "human_n"
"""Score name of the number of DA judgements behind each (item, system) cell (N): a weight, not a quality score."""

HUMANEVAL_ALIASES: dict[str, tuple[str, ...]] = {"liv-en": ("lv-en",)}
"""Campaign pair -> other pair names its ``ad-seg-scores-<pair>.csv`` may carry (WMT22 named the Livonian file
``lv-en``). An alias is not used in a year that has a campaign of the aliased pair itself."""

_HUMANEVAL_HEADER = ["SYS", "SID", "RAW.SCR", "Z.SCR", "N"]
_SUFFIX = re.compile(r"\.\d+$")


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
    return read_lines(path)  # a leading UTF-8 byte-order mark is removed there


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
    if len(parts) in (2, 3) and all(part and part not in (".", "..") and "\\" not in part for part in parts):
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


def _humaneval_file(root: Path, source: _Source, sources: list[_Source]) -> Path | None:
    """The one ``ad-seg-scores-<pair>.csv`` below ``ROOT/<year>/humaneval/`` for the campaign's pair (or an
    alias of it); ``None`` when there is none; several raise :class:`DataError` naming them."""
    folder = root / source.year / "humaneval"
    if not folder.is_dir():
        return None
    year_pairs = {s.lp for s in sources if s.year == source.year}
    pairs = [source.lp] + [a for a in HUMANEVAL_ALIASES.get(source.lp, ()) if a not in year_pairs]
    found = sorted(p for pair in pairs for p in folder.rglob(f"ad-seg-scores-{pair}.csv") if p.is_file())
    if len(found) > 1:
        shown = ", ".join(str(p.relative_to(folder)) for p in found)
        raise DataError(folder, f"{len(found)} human score files for {source.lp} ({shown}); expected one")
    return found[0] if found else None


class _HumanRow(NamedTuple):
    system: str  # as written in the file
    sid: int  # 1-based segment id: the position in the test set sorted by document id (sid_lines)
    raw: float
    z: float
    judgements: int  # N: how many ratings the cell's means average
    line: int


def read_documents(path: Path, n_lines: int) -> tuple[list[str], list[str]]:
    """``(domains, document ids)`` of a ``documents/<pair>.docs`` file: one ``<domain or ->\t<docid>`` line per
    source line (mt-metrics-eval's format); ``-`` becomes the domain ``all``."""
    lines = _read(path)
    if len(lines) != n_lines:
        raise DataError(path, f"{len(lines)} lines, but the sources file has {n_lines}: one line per source line")
    domains, docids = [], []
    for number, text in enumerate(lines, start=1):
        fields = text.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise DataError(path, f"expected '<domain or ->\\t<document id>', got {text!r}", line=number)
        domains.append("all" if fields[0].strip() == "-" else fields[0].strip())
        docids.append(fields[1].strip())
    return domains, docids


def sid_lines(docids: list[str]) -> list[int]:
    """The 0-based source line of every crowd-DA segment id, in SID order (SID ``k`` -> ``result[k - 1]``): the
    test set's lines sorted by document id (plain string sort by code point, stable: a document keeps its
    lines' order), the numbering of the WMT21-22 to-English crowd tasks (SOURCES.md §9)."""
    return sorted(range(len(docids)), key=lambda i: (docids[i], i))


def read_humaneval(path: Path, n_lines: int) -> list[_HumanRow]:
    """Rows of an ``ad-seg-scores-*.csv`` (header ``SYS SID RAW.SCR Z.SCR N``); ``SID`` must lie in
    ``1..n_lines``; blank lines are skipped."""
    lines = _read(path)
    if not lines or lines[0].split() != _HUMANEVAL_HEADER:
        got = lines[0].split() if lines else "an empty file"
        raise DataError(path, f"expected the header {' '.join(_HUMANEVAL_HEADER)!r}, got {got!r}", line=1)
    rows = []
    for number, text in enumerate(lines[1:], start=2):
        fields = text.split()
        if not fields:
            continue
        if len(fields) != len(_HUMANEVAL_HEADER):
            raise DataError(
                path, f"expected {len(_HUMANEVAL_HEADER)} whitespace-separated fields, got {len(fields)}", line=number
            )
        system, sid = fields[0], fields[1]
        if not re.fullmatch(r"[0-9]{1,18}", sid) or not 1 <= int(sid) <= n_lines:
            raise DataError(
                path,
                f"system {system!r}: SID must be an integer line number 1..{n_lines} of the sources file, got {sid!r}",
                line=number,
            )
        scores = [
            finite_number(value, what=f"system {system!r}, SID {sid}, field {field!r}", path=path, line=number)
            for field, value in (("RAW.SCR", fields[2]), ("Z.SCR", fields[3]))
        ]
        if not 0 <= scores[0] <= 100:  # the DA slider's range
            raise DataError(
                path,
                f"system {system!r}, SID {sid}, field 'RAW.SCR': must lie in [0, 100], got {fields[2]!r}",
                line=number,
            )
        if not re.fullmatch(r"[0-9]{1,9}", fields[4]) or int(fields[4]) < 1:
            raise DataError(
                path,
                f"system {system!r}, SID {sid}, field 'N': must be a count of ratings >= 1, got {fields[4]!r}",
                line=number,
            )
        rows.append(_HumanRow(system, int(sid), scores[0], scores[1], int(fields[4]), number))
    return rows


def _is_human_reference(name: str) -> bool:
    return name == "HUMAN" or name.startswith("HUMAN-")


def _human_scores(
    path: Path, root: Path, docids: list[str], systems: list[str], keep: list[int]
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``{human: (len(keep), S), human_raw: …, human_n: …}`` from one humaneval file whose SIDs number the test
    set sorted by ``docids`` (:func:`sid_lines`), and the ``info`` entries."""
    column = {s: j for j, s in enumerate(systems)}
    row_of = {line: i for i, line in enumerate(keep)}
    line_of_sid = sid_lines(docids)
    z = np.full((len(keep), len(systems)), np.nan)
    raw = np.full_like(z, np.nan)
    judgements = np.full_like(z, np.nan)
    seen: dict[tuple[str, int], int] = {}
    references: set[str] = set()
    without_output: set[str] = set()
    for row in read_humaneval(path, len(docids)):
        name = row.system if row.system in column else _SUFFIX.sub("", row.system)
        if (name, row.sid) in seen:
            raise DataError(
                path,
                f"duplicate score for system {row.system!r} ({name}), SID {row.sid}"
                f" (first on line {seen[(name, row.sid)]})",
                line=row.line,
            )
        seen[(name, row.sid)] = row.line
        line = line_of_sid[row.sid - 1]
        if _is_human_reference(name):
            references.add(row.system)
        elif name not in column:
            without_output.add(row.system)
        elif line in row_of:
            z[row_of[line], column[name]] = row.z
            raw[row_of[line], column[name]] = row.raw
            judgements[row_of[line], column[name]] = row.judgements
    scored = ~np.isnan(z)
    info = {
        "human scores": (
            f"{path.relative_to(root)} (crowd DA: {HUMAN} = Z.SCR, {HUMAN_RAW} = RAW.SCR, {HUMAN_N} = N, the"
            " judgements behind each cell)"
        ),
        "human alignment": (
            "SID k = the k-th line of the test set sorted by document id (plain string sort, stable; document ids"
            " from documents/; SOURCES.md §9), not the k-th source line"
        ),
        "human coverage": (
            f"{int(scored.all(axis=1).sum()) if systems else 0} of {len(keep)} items scored for every system,"
            f" {int(scored.any(axis=1).sum())} for at least one"
        ),
    }
    if references:
        info["human references scored"] = ", ".join(sorted(references)) + " (not systems; not loaded)"
    if without_output:
        info["scored without output"] = ", ".join(sorted(without_output)) + " (no output file; dropped)"
    unscored = [s for j, s in enumerate(systems) if not scored[:, j].any()]
    if unscored:
        info["systems without human score"] = ", ".join(unscored)
    return {HUMAN: z, HUMAN_RAW: raw, HUMAN_N: judgements}, info


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
    docs_path = root / source.year / "documents" / f"{source.lp}.docs"
    domains, docids = read_documents(docs_path, n) if docs_path.is_file() else (None, None)
    info = {
        "layout": (
            f"WMT release txt; documents and domains from {docs_path.relative_to(root)}"
            if docids
            else "WMT release txt: no documents/<pair>.docs (each item is its own document, domain 'all')"
        ),
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
    scores: dict[str, np.ndarray] = {}
    human_path = _humaneval_file(root, source, sources)
    if human_path is not None:
        testsets = sorted(s.testset for s in sources if (s.year, s.lp) == (source.year, source.lp))
        if len(testsets) > 1:
            info["human scores"] = (
                f"{human_path.relative_to(root)} not loaded: {source.year} has {len(testsets)} test sets for"
                f" {source.lp} ({', '.join(testsets)}) and the file does not say which it scores"
            )
        elif docids is None:
            info["human scores"] = (
                f"{human_path.relative_to(root)} not loaded: its segment ids number the test set sorted by document"
                f" id, and {docs_path.relative_to(root)} (one '<domain>\\t<docid>' line per source line) is missing"
            )
        else:
            scores, human_info = _human_scores(human_path, root, docids, systems, keep)
            info.update(human_info)
    return Campaign.build(
        ids=[str(i) for i in keep],
        src=[src[i] for i in keep],
        systems=systems,
        outputs={s: [outputs[s][i] for i in keep] for s in systems},
        ref=None if ref is None else [ref[i] for i in keep],
        doc=None if docids is None else [docids[i] for i in keep],
        domain=None if domains is None else [domains[i] for i in keep],
        scores=scores,
        name=campaign,
        lp=source.lp,
        protocol="da" if scores else None,
        info=info,
    )
