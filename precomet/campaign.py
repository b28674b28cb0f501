"""The columnar evaluation campaign every part of precomet works on.

A :class:`Campaign` holds, for ``N`` items and ``S`` systems:

* ``ids``, ``src``, ``ref`` (optional), ``doc``, ``domain`` — length-``N`` object arrays;
* ``cost`` — length-``N`` float array: seconds to judge *one output* of the item (one judgement), so an item
  costs that times the outputs judged on it (:meth:`Campaign.judgements`; :mod:`precomet.costs`);
* ``outputs`` — ``{system: length-N object array}`` (may be empty when only scores exist);
* ``scores`` — ``{score name: (N, S) float array}``, NaN = missing. Human judgements live under
  :data:`HUMAN`; automatic metrics under their own names (``MetricX-23-c``, ``chrF``, ...).

Every operation returns a new ``Campaign``; arrays handed in by callers are copied, never mutated. A campaign is
immutable: its arrays are read-only and ``outputs``, ``scores`` and ``info`` are read-only mappings.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from precomet.errors import CampaignError, PrecometError
from precomet.values import is_blank

HUMAN = "human"
"""Score name under which loaders store the human judgements of a campaign."""

COST_PER_CHAR = 0.15
COST_INTERCEPT = 33.7


def estimate_cost(src: Sequence[str] | np.ndarray) -> np.ndarray:
    """Annotation time in seconds estimated from source length: ``0.15 * len(src) + 33.7``.

    The linear fit of real WMT23 ESA annotation times on source characters from the paper (§5.2).
    """
    return length_cost(source_length(src))


def length_cost(length: np.ndarray) -> np.ndarray:
    """The length model of :func:`estimate_cost` on character counts: ``0.15 · length + 33.7`` seconds."""
    return COST_PER_CHAR * np.asarray(length, dtype=float) + COST_INTERCEPT


def source_length(src: Sequence[str] | np.ndarray) -> np.ndarray:
    """Characters of every source (float array): what the length cost model and the ``rank-length`` cost
    objective read."""
    return np.array([len(s) for s in src], dtype=float)


class ReadOnlyMapping(dict):
    """A dict that refuses every change (``TypeError``): a private copy of a mapping that still is a dict, so
    ``json.dumps`` and ``== {...}`` work on it (unlike ``types.MappingProxyType`` it can be pickled)."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(data or {})

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this mapping is read-only (part of an immutable precomet object)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
        return type(self), (dict(self),)

    def __repr__(self) -> str:
        return f"ReadOnlyMapping({dict(self)!r})"


def locked(column: np.ndarray) -> np.ndarray:
    """A read-only view of ``column`` made read-only too: a view of a read-only array cannot be made writeable."""
    column.flags.writeable = False
    view = column.view()
    view.flags.writeable = False
    return view


def _text_column(values: Iterable[Any], what: str, n: int | None = None) -> np.ndarray:
    values = list(values)
    column = np.empty(len(values), dtype=object)
    column[:] = [None if v is None else str(v) for v in values]
    if n is not None and len(column) != n:
        raise CampaignError(f"{what}: expected {n} values, got {len(column)}")
    return column


@dataclass(frozen=True, eq=False)
class Campaign:
    """Items × systems with texts, scores and per-item metadata. Build it with :meth:`build`."""

    ids: np.ndarray
    src: np.ndarray
    systems: tuple[str, ...]
    outputs: Mapping[str, np.ndarray]
    scores: Mapping[str, np.ndarray]
    doc: np.ndarray
    domain: np.ndarray
    cost: np.ndarray
    ref: np.ndarray | None = None
    name: str = "campaign"
    lp: str | None = None
    protocol: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Lock every column and mapping: a campaign is immutable, so caches keyed on it (e.g. the
        meta-evaluation's full-set reference) can never go stale. Columns are read-only views of read-only arrays,
        which numpy does not let anyone make writeable again (``setflags(write=True)`` raises)."""
        for name in ("ids", "src", "doc", "domain", "cost", "ref"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, locked(getattr(self, name)))
        object.__setattr__(self, "outputs", ReadOnlyMapping({s: locked(c) for s, c in self.outputs.items()}))
        object.__setattr__(self, "scores", ReadOnlyMapping({k: locked(m) for k, m in self.scores.items()}))
        object.__setattr__(self, "info", ReadOnlyMapping(self.info))

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        """Pickle and deep-copy through the constructor, so copies are locked too."""
        return type(self), tuple(getattr(self, f.name) for f in fields(self))

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        *,
        ids: Sequence[Any] | None = None,
        src: Sequence[str],
        systems: Sequence[str],
        outputs: Mapping[str, Sequence[str | None]] | None = None,
        scores: Mapping[str, Any] | None = None,
        ref: Sequence[str | None] | None = None,
        doc: Sequence[Any] | None = None,
        domain: Sequence[Any] | None = None,
        cost: Sequence[float | None] | np.ndarray | None = None,
        name: str = "campaign",
        lp: str | None = None,
        protocol: str | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> Campaign:
        """Validate and copy the given columns into a new campaign.

        ``ids`` default to ``"0" … "N-1"``; ``doc`` to the item id (each item its own document);
        ``domain`` to ``"all"``; ``cost`` (or any ``None`` in it) to :func:`estimate_cost` of the sources.
        ``scores[name]`` is an ``(N, S)`` array-like, or ``{system: length-N values}``.
        """
        n = len(src)
        systems = tuple(str(s) for s in systems)
        if len(set(systems)) != len(systems):
            raise CampaignError(f"duplicate system names in {list(systems)}")
        ids_col = _text_column(range(n) if ids is None else ids, "ids", n)
        seen: dict[str, int] = {}
        for position, item_id in enumerate(ids_col):
            if item_id in seen:
                raise CampaignError(f"duplicate item id {item_id!r} at items {seen[item_id]} and {position}")
            seen[item_id] = position
        src_col = _text_column(src, "src", n)
        for item_id, text in zip(ids_col, src_col):
            if text is None or is_blank(text):
                raise CampaignError(f"item {item_id!r}: empty source text")
        out_cols = {}
        for system, texts in (outputs or {}).items():
            if system not in systems:
                raise CampaignError(f"outputs given for unknown system {system!r}; systems are {list(systems)}")
            out_cols[system] = _text_column(texts, f"outputs of system {system!r}", n)
        score_cols = {score: _score_matrix(values, systems, n, score) for score, values in (scores or {}).items()}
        for score, matrix in score_cols.items():
            _check_no_infinity(matrix, ids_col, systems, score)
        if cost is None:
            cost_col = estimate_cost(src_col)
        else:  # a missing (None) entry gets the length estimate
            cost_col = np.array([math.nan if c is None else c for c in cost], dtype=float)
            unknown = np.array([c is None for c in cost], dtype=bool)
            if len(unknown) == n and unknown.any():
                cost_col[unknown] = estimate_cost(src_col[unknown])
        if cost_col.shape != (n,):
            raise CampaignError(f"cost: expected {n} values, got shape {cost_col.shape}")
        bad = np.flatnonzero(~np.isfinite(cost_col) | (cost_col <= 0))
        if len(bad):
            i = int(bad[0])
            raise CampaignError(
                f"item {ids_col[i]!r}: cost must be a positive finite number, got {cost_col[i]!r}"
                f" ({len(bad)} item(s) affected)"
            )
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(cost_col.sum(dtype=float))
        if overflows:
            i = int(np.argmax(cost_col))
            raise CampaignError(
                f"cost: the {n} item costs add up to more than the largest number (item {ids_col[i]!r} costs"
                f" {cost_col[i]:.3g}); give costs in seconds"
            )
        return cls(
            ids=ids_col,
            src=src_col,
            systems=systems,
            outputs=out_cols,
            scores=score_cols,
            doc=ids_col.copy() if doc is None else _text_column(doc, "doc", n),
            domain=_text_column(["all"] * n if domain is None else domain, "domain", n),
            cost=cost_col,
            ref=None if ref is None else _text_column(ref, "ref", n),
            name=name,
            lp=lp,
            protocol=protocol,
            info=dict(info or {}),
        )

    # ------------------------------------------------------------------ basic access
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def score_names(self) -> list[str]:
        return list(self.scores)

    def score(self, name: str) -> np.ndarray:
        """The ``(N, S)`` matrix of a score name (read-only, like every column); unknown names list the valid ones."""
        if name not in self.scores:
            raise CampaignError(
                f"campaign {self.name!r} has no score {name!r}; available: {sorted(self.scores) or 'none'}"
            )
        return self.scores[name]

    def index_of(self, ids: Iterable[Any]) -> np.ndarray:
        """Positions of the given item ids; unknown ids raise naming a few of them."""
        lookup = {item_id: i for i, item_id in enumerate(self.ids)}
        wanted = [str(i) for i in ids]
        missing = [i for i in wanted if i not in lookup]
        if missing:
            raise CampaignError(
                f"{len(missing)} id(s) not in campaign {self.name!r}: {missing[:5]}"
                + (" …" if len(missing) > 5 else "")
            )
        return np.array([lookup[i] for i in wanted], dtype=int)

    def system_index(self, systems: Iterable[str]) -> np.ndarray:
        """Positions of the given systems; unknown names raise listing the valid ones."""
        systems = list(systems)
        unknown = [s for s in systems if s not in self.systems]
        if unknown:
            raise CampaignError(f"unknown system(s) {unknown}; campaign {self.name!r} has {list(self.systems)}")
        return np.array([self.systems.index(s) for s in systems], dtype=int)

    # ------------------------------------------------------------------ transformations
    def take(self, indices: Sequence[int] | np.ndarray) -> Campaign:
        """A campaign with the items at ``indices`` (in that order; each at most once), or where a boolean mask of
        one entry per item is true."""
        given = np.asarray(indices)
        if given.dtype == bool:
            if given.shape != (len(self),):
                raise CampaignError(
                    f"a boolean mask of the items needs {len(self)} entries (one per item of campaign"
                    f" {self.name!r}), got shape {given.shape}"
                )
            given = np.flatnonzero(given)
        elif given.size and not np.issubdtype(given.dtype, np.integer):
            raise CampaignError(f"item indices must be whole numbers (or a boolean mask), got {given.dtype} values")
        idx = given.astype(int).reshape(-1)
        bad = idx[(idx < 0) | (idx >= len(self))]
        if len(bad):
            raise CampaignError(
                f"item index {int(bad[0])} out of range for campaign {self.name!r} of {len(self)} items"
            )
        counts = np.bincount(idx, minlength=len(self))  # linear: take runs on whole pools
        if len(idx) and counts.max() > 1:
            first = int(np.flatnonzero(counts > 1)[0])
            raise CampaignError(f"item index {first} given {int(counts[first])} times: a campaign holds each item once")
        return replace(
            self,
            ids=self.ids[idx],
            src=self.src[idx],
            outputs={s: col[idx] for s, col in self.outputs.items()},
            scores={k: m[idx] for k, m in self.scores.items()},
            doc=self.doc[idx],
            domain=self.domain[idx],
            cost=self.cost[idx],
            ref=None if self.ref is None else self.ref[idx],
        )

    def take_ids(self, ids: Iterable[Any]) -> Campaign:
        """A campaign with the items of the given ids (in that order)."""
        return self.take(self.index_of(ids))

    def restrict_systems(self, systems: Iterable[str]) -> Campaign:
        """A campaign with only the given systems (in that order; each at most once)."""
        if isinstance(systems, str):
            raise CampaignError(f"systems must be a list of system names, got the text {systems!r}")
        systems = list(systems)
        repeated = sorted({s for s in systems if systems.count(s) > 1})
        if repeated:
            raise CampaignError(f"system(s) {repeated} given more than once")
        cols = self.system_index(systems)
        return replace(
            self,
            systems=tuple(systems),
            outputs={s: self.outputs[s] for s in systems if s in self.outputs},
            scores={k: m[:, cols] for k, m in self.scores.items()},
        )

    def complete(self, score: str = HUMAN) -> tuple[Campaign, int]:
        """Keep only items scored (non-NaN) for every system under ``score``; return it and the dropped count."""
        keep = np.flatnonzero(~np.isnan(self.score(score)).any(axis=1))
        return self.take(keep), len(self) - len(keep)

    def with_scores(self, name: str, matrix: Any) -> Campaign:
        """A campaign with score ``name`` added or replaced."""
        scores = dict(self.scores)
        scores[name] = _score_matrix(matrix, self.systems, len(self), name)
        _check_no_infinity(scores[name], self.ids, self.systems, name)
        return replace(self, scores=scores)

    def judgements(self) -> np.ndarray:
        """Outputs judged when an item is annotated (int array): its systems with an output, or every system when
        the campaign has no output texts (scores only); 0 for a campaign of sources only."""
        if not self.outputs:
            return np.full(len(self), len(self.systems), dtype=int)
        return np.sum([[text is not None for text in self.outputs[s]] for s in self.outputs], axis=0, dtype=int)

    def with_cost(self, cost: Sequence[float] | np.ndarray) -> Campaign:
        """A campaign with new per-output costs (validated as in :meth:`build`)."""
        return Campaign.build(**{**self._columns(), "cost": cost})

    def _columns(self) -> dict[str, Any]:
        return dict(
            ids=self.ids,
            src=self.src,
            systems=self.systems,
            outputs=self.outputs,
            scores=self.scores,
            ref=self.ref,
            doc=self.doc,
            domain=self.domain,
            cost=self.cost,
            name=self.name,
            lp=self.lp,
            protocol=self.protocol,
            info=self.info,
        )

    # ------------------------------------------------------------------ item view
    def iter_items(self) -> Iterator[dict[str, Any]]:
        """Items as dicts in the subset2evaluate-compatible format (see :mod:`precomet.io.jsonl`)."""
        for i in range(len(self)):
            item: dict[str, Any] = {"id": self.ids[i], "src": self.src[i]}
            if self.ref is not None:
                item["ref"] = self.ref[i]
            if self.outputs:
                item["tgt"] = {s: self.outputs[s][i] for s in self.systems if s in self.outputs}
            if self.scores:
                item["scores"] = {
                    s: {k: _json_float(m[i, j]) for k, m in self.scores.items() if not math.isnan(m[i, j])}
                    for j, s in enumerate(self.systems)
                }
            item.update(cost=float(self.cost[i]), domain=self.domain[i], doc=self.doc[i], campaign=self.name)
            item.update({key: value for key, value in (("lp", self.lp), ("protocol", self.protocol)) if value})
            yield item

    def data_hash(self) -> str:
        """A short content hash of everything a result can depend on (ids, texts, systems, outputs, documents,
        domains, scores, costs) for result signatures."""
        digest = hashlib.sha256()
        texts = [
            self.ids,
            self.src,
            self.systems,
            self.doc,
            self.domain,
            *(self.outputs.get(s, ()) for s in self.systems),
        ]
        for column in texts + [() if self.ref is None else self.ref]:
            for value in column:
                digest.update(b"\x00" if value is None else str(value).encode("utf-8"))
                digest.update(b"\x1f")
            digest.update(b"\x1e")
        for name in sorted(self.scores):
            digest.update(name.encode("utf-8"))
            digest.update(np.ascontiguousarray(self.scores[name]).tobytes())
        digest.update(np.ascontiguousarray(self.cost).tobytes())
        return digest.hexdigest()[:16]

    def summary(self) -> str:
        """A few human-readable lines: items, systems, score names, domains, documents, cost."""
        domains = ", ".join(f"{d} {c}" for d, c in zip(*np.unique(self.domain.astype(str), return_counts=True)))
        lines = [
            f"campaign   {self.name}"
            + (f" ({self.lp})" if self.lp else "")
            + (f", human protocol {self.protocol}" if self.protocol else ""),
            f"items      {len(self)} in {len(set(self.doc))} documents; domains: {domains}",
            f"systems    {len(self.systems)}" + (f": {', '.join(self.systems)}" if self.systems else " (sources only)"),
            f"scores     {', '.join(self.score_names) or 'none'}",
            f"outputs    {'yes' if self.outputs else 'no'}; references {'yes' if self.ref is not None else 'no'}",
            f"cost       {self.cost.mean():,.6g} s per judgement of one output on average"
            + (f"; all items: {_annotator_time(self)}" if self.systems else " (no systems: judgements unknown)")
            if len(self)
            else "cost       -",
        ]
        lines += [f"note       {key}: {value}" for key, value in self.info.items()]
        return "\n".join(lines)


def _annotator_time(campaign: Campaign) -> str:
    judged = campaign.judgements()
    seconds = float(campaign.cost @ judged)
    return f"{judged.sum():,} judgements, {seconds:,.6g} s ({seconds / 3600:,.4g} h) of annotator time"


def _json_float(value: float) -> float | int:
    """A whole number as an int (``4``, not ``4.0``); ``-0.0`` stays a float, so the data hash survives a round trip."""
    value = float(value)
    return int(value) if value.is_integer() and math.copysign(1.0, value) > 0 else value


def _check_no_infinity(matrix: np.ndarray, ids: np.ndarray, systems: Sequence[str], name: str) -> None:
    """NaN means "not scored"; ±inf is never a score (the loaders refuse it with file and line; this is the
    last guard for campaigns built in code)."""
    bad = np.isinf(matrix)
    if bad.any():
        row, col = (int(x[0]) for x in np.nonzero(bad))
        raise CampaignError(
            f"item {ids[row]!r}, system {systems[col]!r}, score {name!r}: expected a finite number, got"
            f" {matrix[row, col]!r} ({int(bad.sum())} value(s) affected)"
        )


def _score_matrix(values: Any, systems: tuple[str, ...], n: int, name: str) -> np.ndarray:
    if isinstance(values, Mapping):
        unknown = [s for s in values if s not in systems]
        if unknown:
            raise CampaignError(f"score {name!r}: unknown system(s) {unknown}")
        matrix = np.full((n, len(systems)), np.nan)
        for j, system in enumerate(systems):
            if system in values:
                column = np.asarray(values[system], dtype=float)
                if column.shape != (n,):
                    raise CampaignError(f"score {name!r}, system {system!r}: expected {n} values, got {column.shape}")
                matrix[:, j] = column
        return matrix
    try:
        matrix = np.array(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise CampaignError(f"score {name!r}: values are not numeric ({err})") from None
    if matrix.shape != (n, len(systems)):
        raise CampaignError(f"score {name!r}: expected shape {(n, len(systems))}, got {matrix.shape}")
    return matrix


def require_documents(campaign: Campaign) -> None:
    """Refuse document-level selection (``level='doc'``) on an input without documents (every item its own
    document, ``doc`` = the item id): it would silently behave as item level."""
    if len(campaign) and all(doc == item_id for doc, item_id in zip(campaign.doc, campaign.ids)):
        raise PrecometError(
            f"{{doc_level}}: campaign {campaign.name!r} has no documents (no 'doc' field: every item is its own"
            " document); give documents in the input or select items",
            param="doc_level",
        )
