"""Loader for Google's mt-metrics-eval directory layout (``<root>/wmtYY/{sources,references,...}``).

``load_mtme(root, "wmt23/en-de", human="mqm")`` reads sources, references, documents/domains, the
system outputs, the human segment scores of one protocol (stored under ``human``) and every metric's
segment scores (``MetricX-23-c-refA.seg.score`` -> score ``MetricX-23-c``). Reference pseudo-systems
(``refA``, ``refB``, ``synthetic_ref``, anything with a file in ``references/``) are excluded unless
``include_refs``; systems without any human score are excluded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.text import read_lines
from precomet.values import finite_number, is_blank

PROTOCOL_PREFERENCE = ("mqm", "da-sqm", "wmt-appraise", "wmt", "wmt-z", "wmt-appraise-z")
_REF_SUFFIX = re.compile(r"-(ref[A-Za-z0-9_]*|src)$")


def is_mtme_root(path: Path) -> bool:
    return path.is_dir() and any((child / "sources").is_dir() for child in path.glob("wmt*"))


def list_campaigns(root: str | Path) -> list[str]:
    """Every ``wmtYY/xx-yy`` under an mt-metrics-eval root."""
    root = Path(root)
    return sorted(f"{src.parent.parent.name}/{src.stem}" for src in root.glob("wmt*/sources/*.txt"))


def list_protocols(root: str | Path, campaign: str) -> list[str]:
    year, lp = _split(campaign)
    files = (Path(root) / year / "human-scores").glob(f"{lp}.*.seg.score")
    return sorted(f.name[len(lp) + 1 : -len(".seg.score")] for f in files)


def _split(campaign: str) -> tuple[str, str]:
    if campaign.count("/") != 1:
        raise PrecometError(f"campaign must look like 'wmt23/en-de', got {campaign!r}")
    year, lp = campaign.split("/")
    return year, lp


def read_seg_scores(path: Path, n_items: int) -> dict[str, np.ndarray]:
    """``system<TAB>score`` lines, one block of ``n_items`` lines per system; ``None`` -> NaN."""
    lines = read_lines(path)
    systems: dict[str, list[str]] = {}
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if len(parts) != 2:
            raise DataError(path, f"expected 'system<TAB>score', got {line[:60]!r}", line=number)
        systems.setdefault(parts[0], []).append(parts[1])
    scores: dict[str, Any] = {}  # an array per system; None (unparsable) only until the check below raises
    for system, values in systems.items():
        if len(values) != n_items:
            raise DataError(
                path, f"system {system!r} has {len(values)} scores, expected {n_items} (one per source line)"
            )
        try:
            scores[system] = np.array([v if v != "None" else "nan" for v in values], dtype=float)
        except ValueError:
            scores[system] = None
        if scores[system] is None or not np.isfinite(scores[system][[v != "None" for v in values]]).all():
            position = 0
            for number, line in enumerate(lines, start=1):
                system_name, value = line.split("\t")
                if system_name != system:
                    continue
                position += 1
                if value != "None":  # position = the 1-based segment line of the sources
                    finite_number(
                        value, what=f"segment {position}, system {system!r}, field 'score'", path=path, line=number
                    )
    return scores


def metric_name(filename: str) -> str:
    """``MetricX-23-c-refA.seg.score`` -> ``MetricX-23-c``; ``CometKiwi-src.seg.score`` -> ``CometKiwi``."""
    return _REF_SUFFIX.sub("", filename[: -len(".seg.score")])


def load_mtme(
    root: str | Path,
    campaign: str,
    *,
    human: str | None = None,
    include_refs: bool = False,
) -> Campaign:
    """Load one campaign; ``human=None`` picks the first of :data:`PROTOCOL_PREFERENCE` available."""
    root = Path(root)
    if not root.exists():
        raise DataError(root, "no such directory")
    found = list_campaigns(root)
    if campaign not in found:
        raise PrecometError(f"{root}: unknown campaign {campaign!r}; found {found or 'none'}")
    year, lp = _split(campaign)
    base = root / year
    src = read_lines(base / "sources" / f"{lp}.txt")
    n = len(src)
    blank = next((number for number, text in enumerate(src, start=1) if is_blank(text)), None)
    if blank is not None:
        raise DataError(base / "sources" / f"{lp}.txt", "empty source line", line=blank)

    protocols = list_protocols(root, campaign)
    if human is None:
        human = next((p for p in PROTOCOL_PREFERENCE if p in protocols), None)
    elif human not in protocols:
        raise PrecometError(f"{campaign}: unknown human protocol {human!r}; available: {protocols or 'none'}")

    ref_names = sorted(p.name[len(lp) + 1 : -len(".txt")] for p in (base / "references").glob(f"{lp}.*.txt"))
    refs = {name: read_lines(base / "references" / f"{lp}.{name}.txt") for name in ref_names}
    for name, lines in refs.items():
        if len(lines) != n:
            raise DataError(base / "references" / f"{lp}.{name}.txt", f"{len(lines)} lines, but the source has {n}")

    outputs = {}
    for path in sorted((base / "system-outputs" / lp).glob("*.txt")):
        lines = read_lines(path)
        if len(lines) != n:
            raise DataError(path, f"{len(lines)} lines, but {base / 'sources' / (lp + '.txt')} has {n}")
        outputs[path.stem] = lines

    human_path = base / "human-scores" / f"{lp}.{human}.seg.score"
    human_scores = read_seg_scores(human_path, n) if human else {}
    pseudo_refs = set(ref_names) | {s for s in [*outputs, *human_scores] if s.startswith("ref") or s == "synthetic_ref"}
    unread = [
        s
        for s, values in human_scores.items()
        if s not in outputs and (include_refs or s not in pseudo_refs) and not np.isnan(values).all()
    ]
    if unread:  # its scores would be dropped without a word
        raise DataError(
            base / "system-outputs" / lp / f"{unread[0]}.txt",
            f"no output file for system {unread[0]!r}, which {human_path.name} rates"
            + (f" ({len(unread)} such systems: {', '.join(unread[:5])})" if len(unread) > 1 else ""),
        )
    systems = [s for s in outputs if include_refs or s not in pseudo_refs]
    if human:
        systems = [s for s in systems if s in human_scores and not np.isnan(human_scores[s]).all()]

    scores = {}
    if human:
        scores[HUMAN] = {s: human_scores[s] for s in systems}
    for path in sorted((base / "metric-scores" / lp).glob("*.seg.score")):
        name = metric_name(path.name)
        if name in scores:
            name = path.name[: -len(".seg.score")]
        metric = read_seg_scores(path, n)
        scores[name] = {s: metric[s] for s in systems if s in metric}

    docs_path = base / "documents" / f"{lp}.docs"
    domain, doc = None, None
    if docs_path.exists():
        rows = [line.split("\t") for line in read_lines(docs_path)]
        if len(rows) != n or any(len(r) != 2 for r in rows):
            raise DataError(docs_path, f"expected {n} lines of 'domain<TAB>doc'")
        domain, doc = [r[0] for r in rows], [r[1] for r in rows]

    main_ref = "refA" if "refA" in refs else (ref_names[0] if ref_names else None)
    return Campaign.build(
        ids=[f"{campaign}/{i}" for i in range(n)],
        src=src,
        systems=systems,
        outputs={s: outputs[s] for s in systems},
        scores=scores,
        ref=refs[main_ref] if main_ref else None,
        doc=doc,
        domain=domain,
        name=campaign,
        lp=lp,
        protocol=human,
        info={"documents file": str(docs_path)} if docs_path.exists() else None,
    )
