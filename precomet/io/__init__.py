"""Loaders: every supported input format -> :class:`~precomet.campaign.Campaign`.

:func:`load` detects the format from the path; the format-specific loaders are importable too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.jsonl import load_jsonl, write_jsonl
from precomet.io.mtme import is_mtme_root, load_mtme

__all__ = ["load", "load_jsonl", "write_jsonl", "load_mtme", "detect_format"]


def detect_format(path: str | Path) -> str:
    """The name of the loader that reads ``path`` (see :data:`LOADERS`)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if path.is_dir():
        if is_mtme_root(path):
            return "mt-metrics-eval"
        raise DataError(path, "directory is not an mt-metrics-eval root (wmtYY/sources/...)")
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith(".jsonl") or suffixes.endswith(".json"):
        return "jsonl"
    raise DataError(path, f"unsupported input format {path.suffix!r}; supported: {', '.join(LOADERS)}")


def _load_mtme(path: Path, campaign: str | None, human: str | None) -> Campaign:
    if campaign is None:
        from precomet.io.mtme import list_campaigns

        raise PrecometError(f"{path}: an mt-metrics-eval root needs --campaign; found {list_campaigns(path)}")
    return load_mtme(path, campaign, human=human)


def _load_jsonl(path: Path, campaign: str | None, human: str | None) -> Campaign:
    return load_jsonl(path)


LOADERS = {
    "mt-metrics-eval": _load_mtme,
    "jsonl": _load_jsonl,
}


def load(
    path: str | Path,
    *,
    campaign: str | None = None,
    human: str | None = None,
    complete: bool = True,
) -> Campaign:
    """Load any supported input. With ``complete`` (default), items lacking a human score for some kept
    system are dropped and the count is recorded in ``campaign.info['dropped']``."""
    path = Path(path)
    loaded = LOADERS[detect_format(path)](path, campaign, human)
    if complete and HUMAN in loaded.scores:
        loaded, dropped = loaded.complete(HUMAN)
        if dropped:
            loaded = replace(loaded, info={**loaded.info, "dropped": f"{dropped} items without a human score for every system"})
    return loaded
