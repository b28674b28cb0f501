"""Loaders: every supported input format -> :class:`~precomet.campaign.Campaign`.

:func:`load` detects the format from the path; the format-specific loaders are importable too. A new format is
one module and one :func:`register_format` call. How outputs are written safely lives in :mod:`precomet.outputs`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fnmatch import fnmatchcase
from pathlib import Path

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.annotation_times import annotation_cost, load_wmt23_esa
from precomet.io.csvfile import load_csv
from precomet.io.esa import is_wmt24_esa_root, list_esa_campaigns, load_wmt24_esa
from precomet.io.hf import (
    PARQUET_SUFFIX,
    is_saved_dataset,
    is_saved_dataset_dict,
    list_splits,
    load_parquet,
    load_saved_dataset,
    write_parquet,
)
from precomet.io.jsonl import load_jsonl, write_jsonl
from precomet.io.mtme import is_mtme_root, load_mtme
from precomet.io.mtme import list_campaigns as list_mtme_campaigns
from precomet.io.plaintext import is_text_path, load_text
from precomet.io.summ import load_summ_pickle
from precomet.io.ted import load_mqm_avg, load_mqm_tsv
from precomet.io.wmt_release import is_wmt_release_root, list_release_campaigns, load_wmt_release
from precomet.registration import register

__all__ = [
    "load",
    "load_jsonl",
    "write_jsonl",
    "load_mtme",
    "detect_format",
    "load_mqm_tsv",
    "load_mqm_avg",
    "load_wmt24_esa",
    "load_summ_pickle",
    "load_csv",
    "annotation_cost",
    "load_wmt23_esa",
    "load_wmt_release",
    "list_release_campaigns",
    "is_wmt_release_root",
    "list_esa_campaigns",
    "list_campaigns",
    "match_campaigns",
    "load_parquet",
    "load_saved_dataset",
    "write_parquet",
    "load_text",
    "register_format",
]


def detect_format(path: str | Path, *, text: bool = False) -> str:
    """The name of the loader that reads ``path`` (see :data:`LOADERS`); ``text`` reads a file as plain-text
    sources whatever its name (a ``.txt`` file is read so anyway)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if text and path.is_dir():
        raise DataError(path, "is a directory; {text} reads a file of sources, one per line", param="text")
    if text:
        return "text"
    for name, matches in DETECTORS.items():
        if matches(path):
            return name
    if path.is_dir():
        if is_mtme_root(path):
            return "mt-metrics-eval"
        if is_wmt24_esa_root(path):
            return "wmt24-esa"
        if is_wmt_release_root(path):
            return "wmt-release"
        if is_saved_dataset_dict(path):
            return "hf-dataset-dict"
        if is_saved_dataset(path):
            return "hf-dataset"
        if path.name.startswith("wmt") and is_wmt_release_root(path.parent):
            raise DataError(
                path,
                f"this is one year of a WMT release: pass its parent {path.parent} and {{campaign}}NAME",
                param="campaign",
            )
        raise DataError(
            path,
            "directory is neither an mt-metrics-eval root (wmtYY/sources/...), WMT24 ESA (humeval/, txt/)"
            ", a WMT release root (wmtYY/txt/sources/<testset>.<lp>.src.<sl>) nor a saved datasets Dataset/DatasetDict",
        )
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith(".jsonl") or suffixes.endswith(".json"):
        return "jsonl"
    if path.name.endswith(".avg_seg_scores.tsv"):
        return "mqm-avg"
    if suffixes.endswith(".tsv"):
        return "mqm-tsv"
    if suffixes.endswith(".pkl") or suffixes.endswith(".pickle"):
        return "summ-pickle"
    if suffixes.endswith(".csv"):
        return "csv"
    if suffixes.endswith(PARQUET_SUFFIX):
        return "parquet"
    if is_text_path(path):
        return "text"
    raise DataError(
        path,
        f"unsupported input format {path.suffix!r}; supported: {', '.join(LOADERS)}; a file of sources, one per line,"
        " reads with {text}",
        param="text",
    )


def _load_mtme(path: Path, campaign: str | None, human: str | None) -> Campaign:
    if campaign is None:
        raise PrecometError(
            f"{path}: an mt-metrics-eval root needs {{campaign}}NAME; found {list_mtme_campaigns(path)}",
            param="campaign",
        )
    return load_mtme(path, campaign, human=human)


def _no_options(loader):
    def load_file(path: Path, campaign: str | None, human: str | None) -> Campaign:
        loaded = loader(path)
        _check_only_protocol(path, human, loaded.protocol)
        return loaded

    return load_file


def _check_only_protocol(path: Path, human: str | None, protocol: str | None) -> None:
    """A file with one human score accepts ``--human`` naming it: ``human`` or its protocol (``mqm``)."""
    if human not in (None, HUMAN, protocol):
        named = f" ({protocol!r})" if protocol else ""
        raise PrecometError(
            f"{path}: this format has one human protocol{named}; {{human}}{human!r} is not available", param="human"
        )


def _load_esa(path: Path, campaign: str | None, human: str | None) -> Campaign:
    if campaign is None:
        raise PrecometError(
            f"{path}: a WMT24 ESA directory needs {{campaign}}NAME; found {list_esa_campaigns(path)}",
            param="campaign",
        )
    if human not in (None, "esa"):
        raise PrecometError(f"{path}: unknown human protocol {human!r}; available: ['esa']")
    return load_wmt24_esa(path, campaign)


def _load_release(path: Path, campaign: str | None, human: str | None) -> Campaign:
    if campaign is None:
        raise PrecometError(
            f"{path}: a WMT release root needs {{campaign}}NAME; found {list_release_campaigns(path)}",
            param="campaign",
        )
    loaded = load_wmt_release(path, campaign)
    if human is not None and loaded.protocol is None:
        raise PrecometError(
            f"{path}: WMT release campaign {campaign!r} has no human scores; {{human}}{human!r} is not available",
            param="human",
        )
    if human not in (None, loaded.protocol):
        raise PrecometError(f"{path}: unknown human protocol {human!r}; available: [{loaded.protocol!r}]")
    return loaded


def _load_dataset_dict(path: Path, campaign: str | None, human: str | None) -> Campaign:
    loaded = load_saved_dataset(path, split=campaign)
    _check_only_protocol(path, human, loaded.protocol)
    return loaded


LOADERS = {
    "mt-metrics-eval": _load_mtme,
    "jsonl": _no_options(load_jsonl),
    "wmt24-esa": _load_esa,
    "wmt-release": _load_release,
    "mqm-tsv": _no_options(load_mqm_tsv),
    "mqm-avg": _no_options(load_mqm_avg),
    "summ-pickle": _no_options(load_summ_pickle),
    "csv": _no_options(load_csv),
    "parquet": _no_options(load_parquet),
    "hf-dataset": _no_options(load_saved_dataset),
    "hf-dataset-dict": _load_dataset_dict,
    "text": _no_options(load_text),
}


DETECTORS: dict[str, Callable[[Path], bool]] = {}
"""Formats added by :func:`register_format`: name -> the test of a path, tried before the built-in rules."""


def register_format(
    name: str, loader: Callable[[Path], Campaign], *, detect: Callable[[Path], bool], replace: bool = False
) -> None:
    """Register the single-campaign input format ``name``: ``detect(path)`` says whether a path is in it and
    ``loader(path)`` reads it. From then on :func:`load`, :func:`detect_format` and every command's ``--data``
    accept it (registered formats are tried first, in registration order). A name already taken is refused unless
    ``replace=True``."""
    register(LOADERS, name, _no_options(loader), kind="input format", replace=replace)
    DETECTORS[name] = detect


MULTI_CAMPAIGN = {
    "mt-metrics-eval": list_mtme_campaigns,
    "wmt24-esa": list_esa_campaigns,
    "wmt-release": list_release_campaigns,
    "hf-dataset-dict": list_splits,
}


def list_campaigns(path: str | Path) -> list[str]:
    """The campaign names (values for ``campaign=`` / ``--campaign``) of a multi-campaign root:
    mt-metrics-eval (``wmt23/en-de``), WMT24 ESA (``en-cs``) or WMT release (``wmt22/en-de``).
    Single-campaign inputs (JSONL, CSV, TSV, pickle) raise :class:`PrecometError`."""
    path = Path(path)
    kind = detect_format(path)
    if kind not in MULTI_CAMPAIGN:
        raise PrecometError(
            f"{path}: a {kind} input holds a single campaign; campaigns are listed for {', '.join(MULTI_CAMPAIGN)} "
            "roots"
        )
    return MULTI_CAMPAIGN[kind](path)


def match_campaigns(path: str | Path, pattern: str) -> list[str]:
    """The campaign names of a multi-campaign root that match a glob (``wmt2[12]/en-*``, case-sensitive);
    a pattern matching none raises, listing the campaigns."""
    names = list_campaigns(path)
    matched = [name for name in names if fnmatchcase(name, pattern)]
    if not matched:
        raise PrecometError(f"{path}: pattern {pattern!r} matches no campaign; campaigns: {names}")
    return matched


def check_campaign_name(path: Path, kind: str, campaign: str | None) -> None:
    """Refuse a campaign name for a single-campaign input of format ``kind``."""
    if campaign is not None and kind not in MULTI_CAMPAIGN:
        raise PrecometError(
            f"{path}: a {kind} input holds a single campaign; a campaign name ({campaign!r}) applies to"
            f" {', '.join(MULTI_CAMPAIGN)} roots only"
        )


def load(
    path: str | Path,
    *,
    campaign: str | None = None,
    human: str | None = None,
    complete: bool = True,
    text: bool = False,
    docs: str | Path | None = None,
    domains: str | Path | None = None,
) -> Campaign:
    """Load any supported input. With ``complete`` (default), items lacking a human score for some kept
    system are dropped and the count is recorded in ``campaign.info['dropped']``.

    Plain-text sources (one per line, ids = 1-based line numbers; :mod:`precomet.io.plaintext`) are read from a
    ``.txt`` file, or from any file with ``text=True``; ``docs`` / ``domains`` name files with one document id /
    domain per source line, and apply to plain text only."""
    path = Path(path)
    kind = detect_format(path, text=text)
    check_campaign_name(path, kind, campaign)
    alongside = [name for name, value in (("docs", docs), ("domains", domains)) if value is not None]
    if kind == "text":
        if human not in (None, HUMAN):
            raise PrecometError(
                f"{path}: plain-text sources have no human scores; {{human}}{human!r} is not available", param="human"
            )
        return load_text(path, docs=docs, domains=domains)
    if alongside:
        raise PrecometError(
            f"{path}: {'=, '.join(alongside)}= apply to plain-text sources (a .txt file, or text=True), not to a"
            f" {kind} input; give documents and domains in the input itself (its 'doc' and 'domain' fields)"
        )
    loaded = LOADERS[kind](path, campaign, human)
    if complete and HUMAN in loaded.scores:
        loaded, dropped = loaded.complete(HUMAN)
        if dropped and not len(loaded):
            raise DataError(
                path,
                f"none of its {dropped} item(s) has a human score for every system (the systems were scored on"
                " different items); keep them with {complete}",
                param="complete",
            )
        if dropped:
            loaded = replace(
                loaded, info={**loaded.info, "dropped": f"{dropped} items without a human score for every system"}
            )
    return loaded
