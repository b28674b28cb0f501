"""The on-disk encoder cache every command shares: vectors by encoder identity and text, kept between runs.

Where: ``$PRECOMET_CACHE`` when set, else ``$XDG_CACHE_HOME/precomet`` (``~/.cache/precomet``); ``precomet
--no-cache`` (or :func:`no_disk_cache` in Python) skips it; an explicit ``cache_dir`` (a utility's option, the
training config's ``data.cache_dir``) replaces it. Layout: ``ROOT/<encoder key>/<segment>.npz``, where the encoder
key is the encoder's name and a hash of its :meth:`~precomet.encoders.SentenceEncoder.identity` (a model folder's
files, names and contents; a package's version), so two encoders never share vectors.

Each save adds one segment (text hashes, vectors and a sha256 over the encoder key, the hashes and the vectors),
written to a temporary and renamed into place: concurrent runs never write the same file twice over, and a reader
never sees half a segment. A segment that is not a complete, checksummed file of finite vectors of the encoder's
length (truncated, edited, another encoder's, anything that would need unpickling) is reported, removed and its
texts encoded again; anything else in the folder is left alone. The single file per encoder that precomet 0.8
kept (``ROOT/<encoder key>.npz``, checksummed the same way) is read as one more segment. Nothing is ever evicted:
remove the folder to reclaim its space.

Each folder also holds its metadata, :data:`META` (JSON: the encoder key, the encoder's identity, the vectors' length
and dtype), written with its first segment. It tells a run how long the vectors are without loading the model, so a
run whose texts are all cached loads none (:func:`~precomet.encoders.encode_cached`). Metadata that names another
encoder, another dtype, or another length than the encoder's own, is reported and removed with the folder's
segments: they are not served, their texts are encoded again. Damaged metadata is reported and removed alone (the
segments are checked on their own). A folder of an earlier precomet has no metadata: its segments are read as
before, their length checked against the encoder's (an encoder that cannot tell its length without its model loads
it once), and the metadata is written then. Earlier versions ignore the file (it is not a segment).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.npyio import NpzFile

from precomet.environment import variable
from precomet.errors import PrecometError
from precomet.outputs.atomic import clean_leftovers, kept_file

log = logging.getLogger(__name__)

ENV = "PRECOMET_CACHE"
SUFFIX = ".npz"
META = "precomet-cache.json"
"""The metadata file of an encoder's folder (:class:`CacheMeta`)."""
META_FORMAT = 1
DTYPE = "float32"
"""The dtype of every vector kept (segments are written as float32)."""
_SEGMENT = re.compile(r"[0-9a-f]{32}")
_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("precomet_disk_cache", default=True)


@contextmanager
def no_disk_cache(skip: bool = True) -> Iterator[None]:
    """Inside the block (with ``skip``), calls that name no ``cache_dir`` neither read nor write the shared cache."""
    token = _ENABLED.set(not skip)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def shared_cache_dir() -> Path | None:
    """The shared cache folder (see the module docstring), ``None`` inside :func:`no_disk_cache`."""
    if not _ENABLED.get():
        return None
    given = variable(ENV)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "precomet"


NPZ_UNREADABLE = (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile, zlib.error)
"""What ``np.load`` raises on a truncated, garbage or pickle-bearing file (``allow_pickle=False``)."""


@dataclass
class CacheUse:
    """What the encoder caches did during one command: the distinct texts looked up and those encoded anew."""

    folder: Path | None = None
    looked_up: set[int] = field(default_factory=set)
    encoded: set[int] = field(default_factory=set)
    saved: int = 0
    """Vectors written to disk (what an interrupted command leaves for the next run)."""
    encoders: set[str] = field(default_factory=set)

    def summary(self) -> str:
        """One line for the user: how many texts were encoded and how many came from the caches."""
        where = f" (kept in {self.folder}; --no-cache skips it)" if self.folder is not None else " (no disk cache)"
        found = len(self.looked_up - self.encoded)
        return (
            f"encoder cache: {len(self.encoded):,} text(s) encoded with {', '.join(sorted(self.encoders))},"
            f" {found:,} of {len(self.looked_up):,} distinct text(s) read from the caches{where}"
        )


_USE: contextvars.ContextVar[CacheUse | None] = contextvars.ContextVar("precomet_cache_use", default=None)


@contextmanager
def counting_cache_use() -> Iterator[CacheUse]:
    """Count every :func:`~precomet.encoders.encode_cached` call inside the block (one command)."""
    use = CacheUse()
    token = _USE.set(use)
    try:
        yield use
    finally:
        _USE.reset(token)


def record_use(*, encoder: str, folder: Path | None, looked_up: list[str], encoded: list[str]) -> None:
    """Add one :func:`~precomet.encoders.encode_cached` call (text keys looked up, and encoded) to the counts of the
    current command, if any."""
    use = _USE.get()
    if use is None:
        return
    use.looked_up.update(int(key[:16], 16) for key in looked_up)
    use.encoded.update(int(key[:16], 16) for key in encoded)
    use.encoders.add(encoder)
    use.folder = folder if folder is not None else use.folder


def usable_folder(cache_dir: Path, *, explicit: bool) -> Path | None:
    """``cache_dir`` when it is (or can become) a folder. A folder given by the user that is a file or a symbolic
    link leading nowhere, or lies under one, is refused before any work; the default one is skipped with a warning
    (the command still runs)."""
    folder = cache_dir.absolute()
    broken = next((p for p in (folder, *folder.parents) if os.path.islink(p) and not p.exists()), None)
    while not folder.exists():
        folder = folder.parent
    if folder.is_dir() and broken is None:
        return cache_dir
    if broken is not None:  # a link to itself, to a loop or to nothing: "a file" would mislead
        which = (
            "is a symbolic link that leads nowhere (to itself, a loop or a missing place)"
            if broken == cache_dir.absolute()
            else f"lies under {broken}, a symbolic link that leads nowhere (to itself, a loop or a missing place)"
        )
    else:
        which = "is a file" if folder == cache_dir.absolute() else f"lies under {folder}, a file"
    if explicit:
        raise PrecometError(f"cache folder {cache_dir} {which}, not a folder")
    log.warning("the encoder cache folder %s %s; running without it (set %s to move it)", cache_dir, which, ENV)
    return None


def _checksum(encoder_key: str, keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    digest = hashlib.sha256(encoder_key.encode() + b"\0" + "\n".join(keys.tolist()).encode() + b"\0")
    digest.update(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8)


def segments(folder: Path) -> list[Path]:
    """The segment files of one encoder's cache folder (named by a 32-digit hash); nothing else there counts."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*" + SUFFIX) if _SEGMENT.fullmatch(p.stem))


def _legacy_file(folder: Path) -> Path:
    return folder.with_name(folder.name + SUFFIX)  # precomet 0.8 kept one file per encoder, checksummed alike


def holds_vectors(folder: Path) -> bool:
    """Whether ``folder`` (or the single file of precomet 0.8 beside it) holds any segment."""
    return bool(segments(folder)) or _legacy_file(folder).is_file()


@dataclass(frozen=True)
class CacheMeta:
    """What an encoder's cache folder holds (:data:`META`): whose vectors (the encoder key, and the identity it
    hashes, for whoever reads the folder), how long, which dtype."""

    encoder_key: str
    identity: dict[str, Any]
    dim: int
    dtype: str = DTYPE

    def same_vectors(self, other: CacheMeta) -> bool:
        """Whether both describe the same vectors: encoder key (which hashes the identity), length and dtype."""
        return (self.encoder_key, self.dim, self.dtype) == (other.encoder_key, other.dim, other.dtype)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": META_FORMAT,
            "encoder_key": self.encoder_key,
            "identity": self.identity,
            "dim": self.dim,
            "dtype": self.dtype,
        }


def _parse_meta(text: str) -> CacheMeta | str:
    """The metadata in ``text``, or what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError as err:
        return f"not JSON ({err})"
    if not isinstance(data, dict) or data.get("format") != META_FORMAT:
        return f"not precomet cache metadata of format {META_FORMAT}"
    key, identity, dim, dtype = (data.get(name) for name in ("encoder_key", "identity", "dim", "dtype"))
    if not isinstance(key, str) or not isinstance(identity, dict) or not isinstance(dtype, str):
        return "encoder_key, identity or dtype missing or of the wrong type"
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        return f"dim {dim!r}, expected a positive integer"
    return CacheMeta(key, identity, dim, dtype)


def _read_meta(folder: Path) -> CacheMeta | str | None:
    """``folder``'s metadata, what is wrong with it, or ``None`` when it has none."""
    try:
        text = (folder / META).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        return f"unreadable: {err}"
    return _parse_meta(text)


def cached_dim(folder: Path, *, encoder_key: str, dim: int | None) -> int | None:
    """The length of the vectors ``folder`` holds, from its metadata; ``None`` when it has none (a new folder, or
    one of an earlier precomet). ``dim`` is the encoder's own length where it knows it without loading its model.
    Metadata naming another encoder, another dtype than :data:`DTYPE` or another length than ``dim`` is reported and
    removed with the folder's segments (:func:`discard`): they are not served. Damaged metadata is reported and
    removed alone: the segments are checked on their own."""
    meta = _read_meta(folder)
    if isinstance(meta, str):
        log.warning("%s: damaged encoder cache metadata (%s); removed", folder / META, meta)
        (folder / META).unlink(missing_ok=True)
        return None
    if meta is None:
        return None
    if meta.encoder_key != encoder_key:
        discard(folder, f"its metadata names encoder {meta.encoder_key!r}, not {encoder_key!r}")
        return None
    if meta.dtype != DTYPE:
        discard(folder, f"its metadata says its vectors are {meta.dtype}, precomet keeps {DTYPE}")
        return None
    if dim is not None and meta.dim != dim:
        discard(folder, f"its metadata says its vectors are {meta.dim} long, the encoder's are {dim}")
        return None
    return meta.dim


def write_meta(folder: Path, meta: CacheMeta) -> bool:
    """Write ``folder``'s metadata (renamed into place when complete); ``False`` when the folder cannot take it
    (the cache still works: the next run reads the segments as a folder without metadata)."""
    try:
        with kept_file(folder / META) as handle:
            handle.write(json.dumps(meta.to_dict(), sort_keys=True, default=str).encode("utf-8"))
    except OSError as err:
        log.debug("cannot write the encoder cache metadata in %s (%s)", folder, err)
        return False
    return True


def discard(folder: Path, reason: str) -> None:
    """Report that ``folder``'s vectors are not the encoder's (``reason``) and remove its segments and metadata (and
    the single file of precomet 0.8 beside it): their texts are encoded again."""
    log.warning("%s: encoder cache not served: %s; its segments are removed, their texts encoded again", folder, reason)
    for path in [*segments(folder), _legacy_file(folder), folder / META]:
        if path.is_file():
            path.unlink(missing_ok=True)
        _KNOWN.pop(path, None)


_KNOWN: dict[Path, tuple[tuple[int, int, int], np.ndarray]] = {}
"""Per segment read in this process: its stat stamp and the sorted 64-bit prefixes of its text keys, so that a
later call (the next chunk of a pool) skips the segments holding none of its texts without opening them."""


def _stamp(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


def _prefixes(keys: Iterable[str]) -> np.ndarray:
    return np.sort(np.fromiter((int(key[:16], 16) for key in keys), dtype=np.uint64))


def _may_hold(path: Path, wanted: np.ndarray) -> bool:
    """Whether the segment may hold one of the ``wanted`` prefixes: ``False`` only when this process read it
    before, unchanged since, and it holds none."""
    known = _KNOWN.get(path)
    return known is None or known[0] != _stamp(path) or bool(np.isin(wanted, known[1]).any())


def _load(path: Path, *, encoder_key: str, dim: int, wanted: set[str]) -> tuple[str, dict[str, np.ndarray]]:
    """``("", vectors of wanted keys)`` from a valid segment (``{}`` when it holds none of them), else ``(what is
    wrong, {})``. Only the keys are read from a segment that holds nothing wanted."""
    stamp = _stamp(path)
    stored = np.load(path, allow_pickle=False)
    if not isinstance(stored, NpzFile):
        return f"a single {type(stored).__name__}, not an .npz archive", {}
    with stored:
        if set(stored.files) != {"check", "keys", "vectors"}:
            return f"arrays {sorted(stored.files)}, expected ['check', 'keys', 'vectors']", {}
        if problem := _declared_sizes_problem(stored):
            return problem, {}
        keys = stored["keys"]
        if keys.ndim != 1 or keys.dtype.kind != "U" or not all(len(k) == 40 for k in keys.tolist()):
            return f"keys of shape {keys.shape} and dtype {keys.dtype}, expected text hashes", {}
        _KNOWN[path] = (stamp, _prefixes(keys.tolist()))
        if wanted.isdisjoint(keys.tolist()):
            return "", {}
        vectors, check = stored["vectors"], stored["check"]
    if vectors.dtype.kind != "f" or vectors.ndim != 2 or len(vectors) != len(keys):
        return f"vectors of shape {vectors.shape} and dtype {vectors.dtype} for {len(keys)} keys", {}
    if dim and vectors.shape[1] != dim:
        return f"vectors of length {vectors.shape[1]}, the encoder's are {dim} long", {}
    if not np.isfinite(vectors).all():
        return "non-finite vectors", {}
    if not np.array_equal(check, _checksum(encoder_key, keys, vectors)):
        return "its checksum does not match its keys and vectors (edited, reordered or another encoder's)", {}
    return "", {k: v for k, v in zip(keys.tolist(), vectors.astype(np.float32)) if k in wanted}


def _declared_sizes_problem(stored: NpzFile) -> str:
    """What is wrong with the arrays' headers (an object dtype, or a shape the stored bytes do not fill), read before
    any array is: a damaged header must not make numpy allocate what it declares."""
    archive = stored.zip
    if archive is None:
        return "a closed archive"
    for name in stored.files:
        info = archive.getinfo(f"{name}.npy")
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(member)
            if dtype.hasobject:
                return f"array {name!r} of Python objects"
            declared = math.prod(shape) * dtype.itemsize
            held = info.file_size - member.tell()
        if declared != held:
            return f"array {name!r} declares shape {shape} ({declared:,} bytes) but holds {held:,} bytes"
    return ""


def read_vectors(folder: Path, *, encoder_key: str, dim: int, wanted: set[str]) -> dict[str, np.ndarray]:
    """The cached vectors of the ``wanted`` text keys found in ``folder``'s segments. A damaged segment is
    reported, removed (its texts are then encoded again) and skipped."""
    found: dict[str, np.ndarray] = {}
    legacy = _legacy_file(folder)
    paths = [legacy] if legacy.is_file() else []
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise PrecometError(f"{folder}: the encoder cache entry is a file, not a folder; remove or rename it")
        paths = segments(folder) + paths
    prefixes = _prefixes(wanted)
    for path in paths:
        if len(found) == len(wanted):
            break
        if not path.is_file():
            raise PrecometError(f"{path}: an encoder cache segment is a folder or a special file; remove or rename it")
        if not _may_hold(path, prefixes):
            continue
        try:
            problem, vectors = _load(path, encoder_key=encoder_key, dim=dim, wanted=wanted - found.keys())
        except NPZ_UNREADABLE as err:
            problem, vectors = f"unreadable: {type(err).__name__}: {' '.join(str(err).split())[:200]}", {}
        if problem:
            log.warning("%s: damaged encoder cache segment (%s); removed, its texts are encoded again", path, problem)
            path.unlink(missing_ok=True)
            _KNOWN.pop(path, None)
            continue
        found.update(vectors)
    return found


def write_segment(
    folder: Path,
    vectors: dict[str, np.ndarray],
    *,
    encoder_key: str,
    explicit: bool = True,
    identity: dict[str, Any] | None = None,
) -> bool:
    """Add ``vectors`` (text key -> vector) to ``folder`` as one segment, renamed into place when complete. With the
    encoder's ``identity``, the folder's metadata (:data:`META`) is written when it has none, and a folder whose
    metadata names other vectors (another encoder, length or dtype) is emptied first (:func:`discard`): a folder
    holds one encoder's vectors of one length. A folder that cannot take the segment raises naming the remedies; for
    the default folder (not ``explicit``) that is a warning instead and ``False`` (the command goes on without keeping
    vectors)."""
    if not vectors:
        return True
    keys = np.array(list(vectors), dtype=str)
    stacked = np.stack(list(vectors.values())).astype(np.float32)
    meta = CacheMeta(encoder_key, identity or {}, int(stacked.shape[1]))
    recorded = _read_meta(folder) if identity is not None else None
    if isinstance(recorded, CacheMeta) and not recorded.same_vectors(meta):
        discard(folder, f"its metadata says {recorded.dim}-long vectors of {recorded.encoder_key!r}, now {meta.dim}")
        recorded = None
    name = hashlib.sha256("\n".join(keys.tolist()).encode()).hexdigest()[:32]
    path = folder / f"{name}{SUFFIX}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        clean_leftovers(folder)
        with kept_file(path) as handle:
            np.savez(handle, keys=keys, vectors=stacked, check=_checksum(encoder_key, keys, stacked))
    except OSError as err:
        problem = f"cannot keep encoder vectors in {folder} ({err.strerror or err})"
        if not explicit:
            log.warning("%s; going on without keeping them (set %s=DIR to move the cache)", problem, ENV)
            return False
        raise PrecometError(
            f"{problem}; free space there, move the cache with {ENV}=DIR, or run with --no-cache"
        ) from None
    _KNOWN[path] = (_stamp(path), _prefixes(keys.tolist()))
    if identity is not None and not isinstance(recorded, CacheMeta):
        write_meta(folder, meta)
    if (use := _USE.get()) is not None:
        use.saved += len(keys)
    return True
