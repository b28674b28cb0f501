"""Results carry the data they belong to, and the commands that read them back check it.

* A result's signature records ``sources_hash``: sha256 of its items' source texts in the result's item order,
  joined by ``\\x1f`` (first 16 hex digits). ``precomet predict`` has always signed its sources this way as
  ``data_hash``; every signature of a campaign now carries ``sources_hash`` besides the campaign's own
  ``data_hash``.
* Every signature of a campaign (and ``predict``'s) also records ``items_hash``: its items as ``(id, source)``
  pairs in any order (:func:`items_hash`).
* A utility file (``select --scores``, ``benchmark --scores``) is checked by looking up the source text of each of
  its ids in ``--data`` and hashing the pairs (files of precomet 0.8.0 and later; any order) or the texts in the
  file's order (older files): another text under the same ids (another campaign, an edited or relabelled file)
  gives another hash, and the file is refused; so is a signed file with ids ``--data`` lacks.
* A subset (``rank --subset``) carries each item's ``src``: every row is compared with ``--data`` by id. Its
  manifest records ``sources_hash`` (of the data it was selected from) and ``ids_hash`` (the same hash over the
  subset's sorted ids): a manifest of other data or of another subset is refused.
* ``--force`` turns a refusal into a warning that names the file (the user insists).
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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


_HASH = re.compile(r"[0-9a-f]{16}")
_ITEMS = re.compile(r"[0-9a-f]{32}")


_ITEMS_MOD = 1 << 128


def item_digest(item_id: str, source: str) -> int:
    """One item's share of :func:`items_hash` (128 bits of sha256 of ``id \x1f source``, the source in Unicode
    normal form C)."""
    text = f"{item_id}\x1f{_nfc(source)}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(text).digest()[:16], "big")


def items_hash(ids: Iterable[str], sources: Iterable[str]) -> str:
    """The items of a result as ``(id, source)`` pairs, whatever their order: the sum of their
    :func:`item_digest` modulo 2**128, 32 hex digits (a file sorted since it was written keeps it; the same
    texts under other ids change it)."""
    return items_hash_of(sum(item_digest(str(i), s) for i, s in zip(ids, sources, strict=True)))


def items_hash_of(total: int) -> str:
    """:func:`items_hash` from a running sum of :func:`item_digest` (a pool hashed chunk by chunk)."""
    return f"{total % _ITEMS_MOD:032x}"


def signed_sources_hash(signature: Mapping[str, Any], *, where: str | Path = "the signature") -> str | None:
    """The sources hash a result's signature records (``None``: a file without one or with ``null``, e.g. written
    by hand); a recorded hash that is not 16 hex digits is refused, naming ``where`` (it would silently disable the
    check)."""
    if signature.get("sources_hash") is not None:
        field, recorded = "sources_hash", signature["sources_hash"]
    elif signature.get("tool") == "precomet predict" and signature.get("data_hash") is not None:
        field, recorded = "data_hash", signature["data_hash"]  # predict signed its sources so before sources_hash
    else:
        return None
    if not (isinstance(recorded, str) and _HASH.fullmatch(recorded)):
        raise PrecometError(
            f"{where}: the signature's {field!r} must be 16 hex digits (a hash of the sources), got {recorded!r};"
            " compute the file again, or remove the field"
        )
    return recorded


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
    items than ``source_of`` (id -> source of ``--data``) holds: its ``items_hash`` (any order) or, for files
    written before precomet 0.8.0, its ``sources_hash`` (in file order) differs, or it holds ids ``--data``
    lacks; with ``force``, warn instead. A file without either hash is not checked."""
    recorded_items = signature.get("items_hash")
    if recorded_items is not None and not (isinstance(recorded_items, str) and _ITEMS.fullmatch(recorded_items)):
        raise PrecometError(
            f"{path}: the signature's 'items_hash' must be 32 hex digits, got {recorded_items!r}; compute the file"
            " again, or remove the field"
        )
    expected = signed_sources_hash(signature, where=path)
    if recorded_items is None and expected is None:
        return
    lacking = [item_id for item_id in file_ids if item_id not in source_of]
    if lacking:
        _refuse_or_warn(
            f"{path} was computed on other data than --data: {len(lacking)} of its {len(file_ids)} ids are not in"
            f" --data (e.g. {lacking[0]!r})",
            force=force,
            remedy="compute it again on --data",
        )
        return
    texts = [source_of[item_id] for item_id in file_ids]
    if recorded_items is not None:
        recorded, actual, how = recorded_items, items_hash(file_ids, texts), "items hash (ids and texts)"
    else:
        recorded, actual, how = str(expected), sources_hash(texts), "sources hash (texts in file order)"
        if recorded in _composed_hashes(texts):  # the same texts, composed otherwise
            return
    if actual != recorded:
        _refuse_or_warn(
            f"{path} was computed on other sources than --data: its signature's {how} is {recorded}, but --data"
            f" under its {len(file_ids)} ids gives {actual} (other texts under the same ids: another campaign, an"
            " edited or relabelled file)",
            force=force,
            remedy="compute it again on --data",
        )


def check_subset_sources(
    path: str | Path, rows: Sequence[tuple[str, str | None]], source_of: Mapping[str, str], *, force: bool = False
) -> None:
    """Refuse the subset ``path`` (its ``(id, src)`` rows; ``src`` is ``None`` in files written before subsets
    carried it) when a row's source is not the source of that id in ``--data``; with ``force``, warn instead."""
    differ = [
        (item_id, src) for item_id, src in rows if src is not None and _nfc(source_of.get(item_id, src)) != _nfc(src)
    ]
    if differ:
        item_id, src = differ[0]
        _refuse_or_warn(
            f"--subset {path}: {len(differ)} of {len(rows)} item(s) have another source text in --data, so it was"
            f" selected from other data (id {item_id!r}: the subset has {_short(src)}, --data has"
            f" {_short(source_of[item_id])})",
            force=force,
            remedy="give the --data it was selected from, or select again on this --data",
        )


def check_manifest_belongs(
    manifest: Mapping[str, Any],
    subset_ids: Sequence[str],
    data_sources: Sequence[Iterable[str]],
    *,
    force: bool = False,
) -> None:
    """Refuse a subset manifest (:func:`precomet.rank.read_manifest`) that describes a selection from other
    sources than ``--data`` (``data_sources``: the sources of each view of it select may have drawn from, e.g.
    every item and the fully rated ones) or another subset than ``subset_ids``; with ``force``, warn. Hashes a
    manifest lacks (written before they existed) are not checked."""
    where = manifest["file"]
    recorded = signed_sources_hash(manifest, where=where)
    views = [list(sources) for sources in data_sources]
    actual = [sources_hash(view) for view in views]
    if recorded is not None and recorded not in actual + [h for view in views for h in _composed_hashes(view)]:
        _refuse_or_warn(
            f"{where}: the selection ran on other sources than --data (sources hash {recorded}, --data"
            f" {' or '.join(dict.fromkeys(actual))}), so its method, budget and item count describe other data",
            force=force,
            remedy="give the manifest of this subset (--manifest), or the --data it was selected from",
        )
    ids_hash = manifest.get("ids_hash")
    if ids_hash is not None and ids_hash != sources_hash(sorted(subset_ids)):
        _refuse_or_warn(
            f"{where}: the manifest describes another subset ({manifest.get('n_selected')} items selected; the"
            f" subset has {len(subset_ids)}, and other ids)",
            force=force,
            remedy="give the manifest of this subset (--manifest)",
        )


@dataclass(frozen=True)
class SubsetMatch:
    """The ``--data`` ids of a subset's rows matched by source text (:func:`match_by_source`)."""

    ids: list[str]
    by_text: int
    """Rows whose id is not one of ``--data`` and that were found by their source text."""
    guessed: int
    """Of those, rows whose text ``--data`` holds several times, none in the row's document or at its line."""

    def note(self, path: str | Path) -> str:
        guessed = (
            f"; {self.guessed} of them by a text --data holds several times (the first such item not already taken)"
            if self.guessed
            else ""
        )
        return (
            f"--subset {path}: {self.by_text} of its {len(self.ids)} ids are not ids of --data (selected from another"
            f" format of these sources, e.g. plain text): matched by source text{guessed}"
        )


def match_by_source(
    path: str | Path,
    rows: Sequence[tuple[str, str | None, str | None]],
    data_ids: Sequence[str],
    data_src: Sequence[str],
    data_doc: Sequence[str],
) -> SubsetMatch:
    """The ``--data`` id of each subset row ``(id, src, doc)``: its own id when ``--data`` has it, else the item
    with the row's source text; among items sharing that text, the one in the row's document, else the one at
    the row's line number (plain-text ids count lines from 1), else the first not already taken. A row whose
    text ``--data`` lacks (or whose every item is taken) is refused, as is a row without ``src``."""
    index = {item_id: i for i, item_id in enumerate(data_ids)}
    by_text: dict[str, list[int]] = {}
    for i, text in enumerate(data_src):
        by_text.setdefault(_nfc(text), []).append(i)
    taken = {index[item_id] for item_id, _, _ in rows if item_id in index}
    ids, found, guessed, lacking = [], 0, 0, []
    for item_id, src, doc in rows:
        if item_id in index:
            ids.append(item_id)
            continue
        free = [i for i in by_text.get(_nfc(src), []) if i not in taken] if src is not None else []
        if not free:
            lacking.append(item_id)
            continue
        line = int(item_id) - 1 if item_id.isdecimal() else -1
        pick = next((i for i in free if doc is not None and data_doc[i] == doc), line if line in free else None)
        if pick is None:
            pick, guessed = free[0], guessed + (len(free) > 1)
        taken.add(pick)
        ids.append(data_ids[pick])
        found += 1
    if lacking:
        without_src = any(src is None for _, src, _ in rows)
        raise PrecometError(
            f"--subset {path}: {len(lacking)} of its {len(rows)} item(s) are neither ids of --data nor"
            + (" matched by source text" if not without_src else " (its rows carry no 'src' to match them by)")
            + f" (e.g. {lacking[0]!r}); give the --data it was selected from"
            + ("" if not without_src else ", or select again with precomet 0.8.0 or later (subsets carry 'src')")
        )
    return SubsetMatch(ids=ids, by_text=found, guessed=guessed)


def _composed_hashes(texts: Sequence[str]) -> list[str]:
    """:func:`sources_hash` of ``texts`` in Unicode normal forms C and D: a result signed on the same texts typed
    with precomposed or combining accents."""
    return [sources_hash(unicodedata.normalize(form, text) for text in texts) for form in ("NFC", "NFD")]


def _nfc(text: str) -> str:
    """``text`` in Unicode normal form C: "café" with a combining accent is the same text as with "é"."""
    return unicodedata.normalize("NFC", text)


def _short(text: str | None, width: int = 40) -> str:
    text = text or ""
    return repr(text if len(text) <= width else text[: width - 1] + "…")
