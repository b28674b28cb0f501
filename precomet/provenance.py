"""Results carry the data they belong to, and the commands that read them back check it.

* A result's signature records ``sources_hash``: sha256 of its items' source texts in the result's item order,
  joined by ``\\x1f`` (first 16 hex digits). ``precomet predict`` has always signed its sources this way as
  ``data_hash``; every signature of a campaign now carries ``sources_hash`` besides the campaign's own
  ``data_hash``.
* A utility file (``select --scores``, ``benchmark --scores``) is checked by looking up the source text of each of
  its ids in ``--data`` and hashing them in the file's order: another text under the same ids (another campaign,
  an edited file) gives another hash, and the file is refused.
* A subset (``rank --subset``) carries each item's ``src``: every row is compared with ``--data`` by id.
* ``--force`` turns a refusal into a warning that names the file (the user insists).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from precomet.errors import PrecometError

log = logging.getLogger(__name__)


def sources_hash(sources: Iterable[str]) -> str:
    """sha256 of ``sources`` joined by ``\\x1f``, first 16 hex digits (see the module docstring)."""
    digest = hashlib.sha256()
    for position, source in enumerate(sources):
        digest.update(("\x1f" if position else "").encode() + source.encode("utf-8"))
    return digest.hexdigest()[:16]


def signed_sources_hash(signature: Mapping[str, Any]) -> str | None:
    """The sources hash a result's signature records (``None``: a file without one, e.g. written by hand)."""
    recorded = signature.get("sources_hash")
    if isinstance(recorded, str):
        return recorded
    if signature.get("tool") == "precomet predict" and isinstance(signature.get("data_hash"), str):
        return str(signature["data_hash"])  # predict signed its sources as data_hash before sources_hash existed
    return None


def _refuse_or_warn(message: str, *, force: bool, remedy: str) -> None:
    if force:
        log.warning("%s (used anyway: --force)", message)
    else:
        raise PrecometError(f"{message}; {remedy}, or give --force to use it anyway")


def check_scores_belong(
    path: str | Path,
    file_ids: Sequence[str],
    signature: Mapping[str, Any],
    source_of: Mapping[str, str],
    *,
    force: bool = False,
) -> None:
    """Refuse the utility file ``path`` (its ids in file order, its signature) when it was computed on other
    source texts than ``source_of`` (id -> source of ``--data``); with ``force``, warn instead. A file without a
    sources hash, or with ids ``--data`` lacks (these are refused elsewhere), is not checked here."""
    expected = signed_sources_hash(signature)
    if expected is None or any(item_id not in source_of for item_id in file_ids):
        return
    actual = sources_hash(source_of[item_id] for item_id in file_ids)
    if actual != expected:
        _refuse_or_warn(
            f"{path} was computed on other sources than --data: its signature's sources hash is {expected}, but the"
            f" sources of --data under its {len(file_ids)} ids hash to {actual} (the same ids with other texts:"
            " another campaign or an edited file)",
            force=force,
            remedy="compute it again on --data",
        )


def check_subset_sources(
    path: str | Path, rows: Sequence[tuple[str, str | None]], source_of: Mapping[str, str], *, force: bool = False
) -> None:
    """Refuse the subset ``path`` (its ``(id, src)`` rows; ``src`` is ``None`` in files written before subsets
    carried it) when a row's source is not the source of that id in ``--data``; with ``force``, warn instead."""
    differ = [(item_id, src) for item_id, src in rows if src is not None and source_of.get(item_id, src) != src]
    if differ:
        item_id, src = differ[0]
        _refuse_or_warn(
            f"--subset {path}: {len(differ)} of {len(rows)} item(s) have another source text in --data, so it was"
            f" selected from other data (id {item_id!r}: the subset has {_short(src)}, --data has"
            f" {_short(source_of[item_id])})",
            force=force,
            remedy="give the --data it was selected from, or select again on this --data",
        )


def _short(text: str | None, width: int = 40) -> str:
    text = text or ""
    return repr(text if len(text) <= width else text[: width - 1] + "…")
