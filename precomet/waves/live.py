"""A live campaign in waves: the manifest of the waves drawn so far, the judgements so far, and the next wave.

The manifest (a JSON file the command keeps beside the batches) records, for every wave and before its draw:
the chooser, the inclusion probability of every open unit, every system's share of cells ``q``, the cells that
were already judged, the predictor's per-system values, and the cells drawn. That is all the weighting of
:mod:`precomet.waves.estimate` needs, so the estimates of a later call are the ones a replay computes. It also records
each wave's design (:class:`~precomet.waves.design.Design`), from which every probability is recomputed when the
manifest is read, and the Pearmut campaign id its ``--pearmut`` file was written under, so that only this campaign's
annotations are read back. Calls on one manifest are serialised by :func:`campaign_lock`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from precomet import __version__
from precomet.campaign import Campaign
from precomet.costs import format_duration
from precomet.errors import PrecometError
from precomet.metaeval.cluster_rules import split_clusters_wmt
from precomet.outputs.lock import waiting_lock
from precomet.waves.choosers import Chooser, make_chooser
from precomet.waves.design import DEFAULT_FLOOR, Design
from precomet.waves.estimate import Estimates, Predictor, Wave
from precomet.waves.judgements import ALL_SYSTEMS, Judgements
from precomet.waves.plan import LEVELS, WaveSize, sampling_units
from precomet.waves.step import PoolArrays, Step, WaveSettings, items_needed, planned_looks, take_step
from precomet.waves.stop import wave_level
from precomet.waves.target import Target

MANIFEST_VERSION = 2
DESIGN = "design"
"""A wave record's field: what its inclusion probabilities were computed from (:class:`Design`: every open unit's
chooser score and size, the budget and the floor); reading the manifest recomputes them from it (absent in a manifest
of precomet <= 0.20, whose probabilities are checked against the floor only)."""
PROBABILITY_TOLERANCE = 1e-9
"""Relative difference allowed between a recorded probability and the one its design gives (the bisection's own
precision is 1e-12; a machine's summation order moves it less)."""
PEARMUT_CAMPAIGN = "pearmut_campaign"
"""A wave record's field: the Pearmut campaign id its ``--pearmut`` file was written under (absent without one)."""


LOCK_SUFFIX = ".precomet-lock"
"""A campaign's lock file is ``.<manifest name>.precomet-lock`` beside the manifest (by its real path)."""


def manifest_lock_path(manifest: Path) -> Path:
    """The lock file of the campaign whose manifest is ``manifest``: beside the manifest's real path (symbolic links
    and ``..`` resolved), so every spelling of one manifest names one lock, whatever the pool file is called."""
    real = Path(os.path.realpath(manifest))
    return real.parent / f".{real.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def campaign_lock(manifest: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the campaign's lock file (:func:`manifest_lock_path`) for one live call —
    reading the manifest, drawing the next wave and writing it: two calls on one manifest at once then run one after
    the other, and the second reads the wave the first added, instead of both drawing a wave of the same number and
    the manifest keeping one of them (the other's batch then judged for a wave it does not know). The manifest is
    what two calls contend for, not the pool file: two copies of one pool are one campaign when they share a
    manifest. The lock file is removed when the call ends (a waiting call then locks a new one). Without ``fcntl``,
    or where the folder takes no lock file, nothing is locked (and the manifest's commit says why it cannot write)."""
    path = manifest_lock_path(manifest)
    made = None
    if not path.parent.exists():  # a new folder for the manifest: made now, so that two first calls share a lock
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True)
            made = path.parent
    try:
        with waiting_lock(path):
            yield
    finally:
        if made is not None:
            with contextlib.suppress(OSError):
                made.rmdir()  # only when the call left it empty


def pool_output_systems(pool: Campaign, source: Any = None) -> tuple[str, ...] | None:
    """The systems whose outputs the pool holds (``None``: a pool of sources); a system missing an output on some
    item is refused, since a campaign in waves judges every system on every item it draws, and so are a single
    system and one named ``*`` (errors name ``source``, default the pool's name)."""
    where = source if source is not None else pool.name
    systems = tuple(s for s in pool.systems if s in pool.outputs)
    if ALL_SYSTEMS in systems:
        raise PrecometError(
            f"{where}: a system named {ALL_SYSTEMS!r}, which the waves manifest reads as every system: rename it"
        )
    if len(systems) == 1:
        raise PrecometError(
            f"{where}: outputs of one system only ({systems[0]!r}): a campaign in waves ranks two systems or more"
        )
    for system in systems:
        missing = [i for i, output in zip(pool.ids, pool.outputs[system]) if output is None]
        if missing:
            raise PrecometError(
                f"{where}: item {missing[0]!r} has no output of system {system!r} ({len(missing)} such item(s)):"
                " a campaign in waves judges every system on every item it draws; drop those items or that system"
            )
    return systems or None


def _cells_to_json(mask: np.ndarray, ids: np.ndarray, systems: tuple[str, ...]) -> dict[str, list[str]]:
    return {str(ids[i]): [systems[s] for s in np.flatnonzero(mask[i])] for i in np.flatnonzero(mask.any(axis=1))}


def _cells_from_json(record: dict[str, list[str]], index: dict[str, int], systems: tuple[str, ...]) -> np.ndarray:
    """The cells of a record that :meth:`Manifest.read` checked (items of the pool, systems of the pool or ``*``); a
    system the judgements do not name yet has no column, and :meth:`Manifest.systems` makes the command ask for
    its judgements."""
    mask = np.zeros((len(index), len(systems)), dtype=bool)
    for item, names in record.items():
        for name in names:
            if name == ALL_SYSTEMS:
                mask[index[item], :] = True
            elif name in systems:
                mask[index[item], systems.index(name)] = True
    return mask


class _Damaged(Exception):
    """A manifest field that is not what precomet wrote: ``(field, problem)``."""


def _number(value: Any, field: str, *, low: float, high: float, low_open: bool = False, high_open: bool = False):
    """``value`` as a float in the range (``low``/``high`` open when asked), or :class:`_Damaged`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Damaged(field, f"is {value!r}, not a number")
    number = float(value)
    if (
        not math.isfinite(number)
        or number < low
        or number > high
        or (low_open and number == low)
        or (high_open and number == high)
    ):
        bounds = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise _Damaged(field, f"is {value!r}, not a number in {bounds}")
    return number


def _check_cells(value: Any, field: str, index: dict[str, int], systems: tuple[str, ...] | None) -> None:
    """A record of cells: ``{item id: [system, ...]}`` over the pool's items and systems (or ``*``)."""
    if not isinstance(value, dict):
        raise _Damaged(field, f"is {type(value).__name__}, not an object of item id -> systems")
    for item, names in value.items():
        if item not in index:
            raise _Damaged(field, f"names item {item!r}, which the pool does not hold")
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise _Damaged(f"{field}[{item!r}]", "is not a list of system names")
        unknown = [name for name in names if name != ALL_SYSTEMS and systems is not None and name not in systems]
        if unknown:
            raise _Damaged(f"{field}[{item!r}]", f"names system {unknown[0]!r}, which the pool does not have")


def _check_probabilities(k: int, record: dict[str, Any], opened: list[str], values: list[float], floor: float) -> None:
    """Wave ``k``'s recorded probabilities against its design: recomputed from the recorded :class:`Design` (every
    one must match), or — a wave recorded without one (precomet <= 0.20) — against the floor the design keeps every
    probability above, ``min(1, floor × their mean)`` (``floor``: the campaign's)."""
    where = f"waves[{k}]"
    if DESIGN not in record:
        if record["weighted"] and values:
            least = min(1.0, floor * float(np.mean(values)))
            for key, value in zip(opened, values):
                if value < least * (1 - PROBABILITY_TOLERANCE):
                    raise _Damaged(
                        f"{where}.unit_probability",
                        f"gives unit {key!r} (wave {k + 1}) probability {value!r}, below the design's floor"
                        f" ({least:.6g} = {floor:g} × their mean)",
                    )
        return
    design = _design_from_json(record[DESIGN], f"{where}.{DESIGN}", len(opened), top_k=not record["weighted"])
    for key, value, expected in zip(opened, values, design.probabilities()):
        if not math.isclose(value, expected, rel_tol=PROBABILITY_TOLERANCE, abs_tol=1e-15):
            raise _Damaged(
                f"{where}.unit_probability",
                f"gives unit {key!r} (wave {k + 1}) inclusion probability {value!r}, which is not what the recorded"
                f" design gives ({float(expected):.6g})",
            )


def _design_from_json(value: Any, field: str, n_units: int, *, top_k: bool) -> Design:
    """A recorded :class:`Design` of ``n_units`` open units, or :class:`_Damaged` naming its field."""
    if not isinstance(value, dict):
        raise _Damaged(field, f"is {type(value).__name__}, not a design record (an object)")
    columns = []
    for name, low_open in (("unit_score", False), ("unit_size", True)):
        column = value.get(name)
        if not isinstance(column, list) or len(column) != n_units:
            raise _Damaged(f"{field}.{name}", f"must be a list of {n_units} numbers, one per open unit")
        columns.append([_number(x, f"{field}.{name}", low=0.0, high=math.inf, low_open=low_open) for x in column])
    budget = _number(value.get("budget"), f"{field}.budget", low=0.0, high=math.inf, low_open=True)
    floor = _number(value.get("floor"), f"{field}.floor", low=0.0, high=1.0, low_open=True)
    return Design(np.array(columns[0]), np.array(columns[1]), budget, floor, top_k)


def _check_wave(
    k: int,
    record: Any,
    index: dict[str, int],
    keys: dict[str, int],
    units: np.ndarray,
    systems: tuple[str, ...] | None,
    floor: float = DEFAULT_FLOOR,
) -> None:
    """Wave record ``k`` (0-based) as :func:`wave_record` writes it, or :class:`_Damaged` naming its field."""
    where = f"waves[{k}]"
    if not isinstance(record, dict):
        raise _Damaged(where, f"is {type(record).__name__}, not a wave record (an object)")
    fields = ("number", "chooser", "weighted", "open_units", "unit_probability", "system_probability", "known",
              "drawn", "look_level", "predictor")  # fmt: skip
    missing = [name for name in fields if name not in record]
    if missing:
        raise _Damaged(f"{where}.{missing[0]}", "is missing")
    if record["number"] != k + 1 or isinstance(record["number"], bool):
        raise _Damaged(f"{where}.number", f"is {record['number']!r}; the waves are numbered 1, 2, ... in order")
    if not isinstance(record["chooser"], str) or not isinstance(record["weighted"], bool):
        raise _Damaged(f"{where}.chooser/weighted", "must be a name and true/false")
    opened = record["open_units"]
    if not isinstance(opened, list) or not all(isinstance(u, str) and u in keys for u in opened):
        bad = next((u for u in opened if not (isinstance(u, str) and u in keys)), opened) if isinstance(
            opened, list) else opened  # fmt: skip
        raise _Damaged(f"{where}.open_units", f"names {bad!r}, not a sampling unit of the pool")
    probability = record["unit_probability"]
    if not isinstance(probability, list) or len(probability) != len(opened):
        raise _Damaged(f"{where}.unit_probability", f"must be a list of {len(opened)} numbers, one per open unit")
    values = [_number(p, f"{where}.unit_probability", low=0.0, high=1.0) for p in probability]
    shares = record["system_probability"]
    if not isinstance(shares, dict):
        raise _Damaged(f"{where}.system_probability", "is not an object of system -> share")
    for name, q in shares.items():
        if systems is not None and name not in systems:
            raise _Damaged(f"{where}.system_probability", f"names system {name!r}, which the pool does not have")
        _number(q, f"{where}.system_probability[{name!r}]", low=0.0, high=1.0, low_open=True)
    _check_cells(record["known"], f"{where}.known", index, systems)
    _check_cells(record["drawn"], f"{where}.drawn", index, systems)
    if record["weighted"]:
        chance = dict(zip((keys[u] for u in opened), values))
        for item in record["drawn"]:
            if chance.get(int(units[index[item]]), 0.0) <= 0.0:
                raise _Damaged(
                    f"{where}.unit_probability", f"gives item {item!r}, which the wave drew, no chance of being drawn"
                )
    _check_probabilities(k, record, opened, values, floor)
    _number(record["look_level"], f"{where}.look_level", low=0.0, high=1.0, low_open=True, high_open=True)
    if PEARMUT_CAMPAIGN in record and not isinstance(record[PEARMUT_CAMPAIGN], str):
        raise _Damaged(f"{where}.{PEARMUT_CAMPAIGN}", f"is {record[PEARMUT_CAMPAIGN]!r}, not a campaign id")
    predictor = record["predictor"]
    if not isinstance(predictor, dict) or not isinstance(predictor.get("offsets"), dict):
        raise _Damaged(f"{where}.predictor", "is not an object with 'offsets' and 'slope'")
    for name, offset in predictor["offsets"].items():
        _number(offset, f"{where}.predictor.offsets[{name!r}]", low=-math.inf, high=math.inf)
    _number(predictor.get("slope"), f"{where}.predictor.slope", low=-math.inf, high=math.inf)


def _size_in_this_unit(
    data: dict[str, Any], settings: WaveSettings, systems: tuple[str, ...] | None, path: Path
) -> tuple[WaveSettings, tuple[str, ...]]:
    """A wave size in time written by precomet < 0.20, which charged an item's cost once for all its systems, as
    the same waves in annotator time (every judged cell at its item's seconds per output): the amount times the
    systems. The campaign keeps its waves; the manifest is written back in the new unit."""
    written = str(data.get("precomet", "0"))
    if settings.size.kind != "seconds" or _version(written) >= (0, 20):
        return settings, ()
    if not systems:
        raise PrecometError(
            f"{path}: written by precomet {written}, whose wave size {settings.size.text} counted an item's time once"
            " for all its systems; this pool names no systems, so the size cannot be restated in annotator time:"
            " continue the campaign with the precomet that wrote it"
        )
    seconds = settings.size.amount * len(systems)
    size = WaveSize("seconds", seconds, f"{seconds:g}s")
    note = (
        f"the manifest was written by precomet {written}, whose --size {settings.size.text} counted an item's time"
        f" once for its {len(systems)} systems: the same waves are {format_duration(seconds)} of annotator time"
        f" (every judgement counted), kept as --size {size.text}"
    )
    return replace(settings, size=size), (note,)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2]) or (0,)


def _settings(data: dict[str, Any], n_items: int) -> WaveSettings:
    """The campaign's settings: version 2 stores them whole; version 1 (precomet 0.16–0.19) stored the level, size,
    target share and confidence, and ran the all-pairs target, which it keeps."""
    if "settings" not in data:
        missing = [k for k in ("level", "size", "target", "confidence") if k not in data]
        if missing:
            raise _Damaged(missing[0], "is missing")
        if data["level"] not in LEVELS:
            raise _Damaged("level", f"is {data['level']!r}, not one of {', '.join(LEVELS)}")
        share = _number(data["target"], "target", low=0.0, high=1.0, low_open=True)
        confidence = _number(data["confidence"], "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
        record = {"size": data["size"], "level": data["level"], "confidence": confidence}
        record["target"] = {"kind": "all-pairs", "share": share}
    else:
        record = data["settings"]
        if not isinstance(record, dict) or not isinstance(record.get("target"), dict):
            raise _Damaged("settings", "is not a settings record with a target")
    if not isinstance(record.get("size"), str):
        raise _Damaged("settings.size", f"is {record.get('size')!r}, not a wave size")
    for name in ("allocation", "top_k", "anytime", "excuse_ties"):
        if name in record and not isinstance(record[name], bool):
            raise _Damaged(f"settings.{name}", f"is {record[name]!r}, not true or false")
    for name in ("floor", "system_floor"):
        if name in record:
            _number(record[name], f"settings.{name}", low=0.0, high=1.0, low_open=True)
    if record.get("anytime") is False or record.get("excuse_ties") is True:
        raise _Damaged("settings", "holds an ablation (anytime false or excuse_ties true), never a live campaign's")
    try:
        return WaveSettings.from_dict(record, n_items)
    except PrecometError as err:
        field = SETTING_FIELDS.get(err.param or "", err.param or "size")
        raise _Damaged(f"settings.{field}", f"is not valid ({err})") from None
    except (TypeError, ValueError) as err:
        raise _Damaged("settings", f"is not a valid settings record ({err})") from None


SETTING_FIELDS = {"target_kind": "target.kind", "target": "target.share", "zone": "target.zone"}
"""Where a manifest stores the setting a validation error names."""


@dataclass
class Manifest:
    """The waves drawn so far (module docstring), as stored in the manifest file."""

    pool_hash: str
    settings: WaveSettings
    planned: int
    metric: str | None
    waves: list[dict[str, Any]]
    path: Path | None = None  # the file it was read from (named by the errors of :meth:`rebuild`)
    notes: tuple[str, ...] = ()  # what reading it changed, for the call's notices

    @property
    def level(self) -> str:
        return self.settings.level

    @property
    def size(self) -> str:
        return self.settings.size.text

    @classmethod
    def read(cls, path: Path, pool: Campaign, systems: tuple[str, ...] | None = None) -> Manifest:
        """The manifest at ``path``, every field checked as precomet writes it (``systems``: the pool's systems,
        when it has outputs): a hand-edited or damaged field is an error naming the file and the field."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise PrecometError(f"{path}: not a waves manifest (not JSON text: {err})") from None
        if not isinstance(data, dict) or data.get("manifest") != "precomet waves":
            raise PrecometError(f"{path}: not a precomet waves manifest")
        if data.get("pool_hash") != pool.data_hash():
            raise PrecometError(
                f"{path}: this manifest belongs to another pool (its data hash differs from --data's): give the pool"
                " the waves were drawn from"
            )
        version = data.get("version", 1)
        if version not in (1, MANIFEST_VERSION):
            raise PrecometError(
                f"{path}: a waves manifest of version {version!r}, and this precomet ({__version__}) reads versions"
                f" 1 and {MANIFEST_VERSION}: continue the campaign with the precomet that wrote it"
            )
        try:
            return cls._checked(data, path, pool, systems)
        except _Damaged as err:
            field, problem = err.args
            raise PrecometError(
                f"{path}: a damaged waves manifest: '{field}' {problem} (edited by hand? restore the file precomet"
                " wrote)"
            ) from None

    @classmethod
    def _checked(cls, data: dict[str, Any], path: Path, pool: Campaign, systems: tuple[str, ...] | None) -> Manifest:
        missing = [k for k in ("planned", "metric", "waves") if k not in data]
        if missing:
            raise _Damaged(missing[0], "is missing")
        settings = _settings(data, len(pool))
        planned = data["planned"]
        if isinstance(planned, bool) or not isinstance(planned, int) or planned < 1:
            raise _Damaged("planned", f"is {planned!r}, not a number of looks >= 1")
        if data["metric"] is not None and not isinstance(data["metric"], str):
            raise _Damaged("metric", f"is {data['metric']!r}, not a metric name")
        if not isinstance(data["waves"], list):
            raise _Damaged("waves", f"is {type(data['waves']).__name__}, not a list of wave records")
        index = {str(i): k for k, i in enumerate(pool.ids)}
        units = sampling_units(pool.doc, settings.level)
        keys = {key: u for u, key in enumerate(_unit_keys(pool, settings.level))}
        for k, record in enumerate(data["waves"]):
            _check_wave(k, record, index, keys, units, systems, settings.floor)
        settings, notes = _size_in_this_unit(data, settings, systems, path)
        return cls(data["pool_hash"], settings, planned, data["metric"], list(data["waves"]), path, notes)

    def check_settings(self, *, target: Target, confidence: float, metric: str | None) -> None:
        """Refuse settings other than the campaign's: its stop rule spends its error level by the target and the
        confidence from the first wave on, and its waves were weighted with the metric's predictor."""
        kept = self.settings
        for name, given, fixed in (
            ("target_kind", target.kind, kept.target.kind),
            ("target", target.share, kept.target.share),
            ("zone", target.zone, kept.target.zone),
            ("tie_z", target.z, kept.target.z),
            ("confidence", confidence, kept.confidence),
        ):
            if given != fixed:
                raise PrecometError(
                    f"{{{name}}}{given}: the manifest's campaign runs with {fixed} (target: {kept.target.describe()};"
                    f" confidence {kept.confidence:g}), and its stop rule spends its error level by them from the first"
                    " wave on; give the same value",
                    param=name,
                )
        if metric != self.metric:
            raise PrecometError(
                f"{{metric}}{metric}: the manifest's waves were weighted with the metric {self.metric!r}; give the same"
                " metric on every call of one campaign",
                param="metric",
            )

    def systems(self) -> set[str]:
        """The systems the recorded waves name (in their judged cells and system shares)."""
        named = set()
        for record in self.waves:
            named.update(record["system_probability"])
            for names in record["known"].values():
                named.update(names)
        return named - {ALL_SYSTEMS}

    def pearmut_identity(self) -> dict[str, Any]:
        """What a Pearmut campaign id's key hashes (:func:`precomet.io.pearmut.pearmut_campaign_id`): the pool and the
        campaign's first wave as recorded, less the ids recorded after it was drawn (so every wave keeps the key)."""
        first = {k: v for k, v in self.waves[0].items() if k != PEARMUT_CAMPAIGN} if self.waves else {}
        return {"pool": self.pool_hash, "first_wave": first}

    def pearmut_campaigns(self, pool_name: str) -> frozenset[str]:
        """The Pearmut campaign ids of this campaign's waves: those recorded when ``--pearmut`` wrote them, and the
        id each wave would have on the pool named ``pool_name`` (a manifest that records none: precomet <= 0.20.0),
        and for a wave without a recorded design (precomet <= 0.20.0) the id precomet <= 0.19 wrote,
        ``<pool>_wave<k>``."""
        from precomet.io.pearmut import pearmut_campaign_id

        identity = self.pearmut_identity()
        recorded = {record[PEARMUT_CAMPAIGN] for record in self.waves if PEARMUT_CAMPAIGN in record}
        derived = {pearmut_campaign_id(pool_name, identity, int(record["number"])) for record in self.waves}
        legacy = re.sub(r"[^A-Za-z0-9_.-]+", "_", pool_name)
        before = {f"{legacy}_wave{int(record['number'])}" for record in self.waves if DESIGN not in record}
        return frozenset(recorded | derived | before)

    def with_pearmut_campaign(self, campaign_id: str) -> Manifest:
        """The manifest with its last wave recording the Pearmut campaign id its file was written under."""
        return replace(self, waves=[*self.waves[:-1], {**self.waves[-1], PEARMUT_CAMPAIGN: campaign_id}])

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": "precomet waves",
            "version": MANIFEST_VERSION,
            "precomet": __version__,
            "pool_hash": self.pool_hash,
            "settings": self.settings.to_dict(),
            "planned": self.planned,
            "metric": self.metric,
            "waves": self.waves,
        }

    def rebuild(self, pool: Campaign, systems: tuple[str, ...]) -> list[Wave]:
        """The recorded waves as :class:`Wave` objects over ``systems`` (cells drawn before the systems were known
        — a pool without outputs — stand for every system); the predictor reads the manifest's metric."""
        metric = metric_matrix(pool, self.metric, systems)
        index = {str(i): k for k, i in enumerate(pool.ids)}
        units = sampling_units(pool.doc, self.level)
        keys = _unit_keys(pool, self.level)
        position = {key: u for u, key in enumerate(keys)}
        try:
            return [self._wave(record, pool, systems, metric, index, units, position) for record in self.waves]
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise PrecometError(
                f"{self.path or 'the waves manifest'}: a damaged waves manifest: a wave record is unreadable"
                f" ({type(err).__name__}: {err})"
            ) from None

    def _wave(
        self,
        record: dict[str, Any],
        pool: Campaign,
        systems: tuple[str, ...],
        metric: np.ndarray | None,
        index: dict[str, int],
        units: np.ndarray,
        position: dict[str, int],
    ) -> Wave:
        """One recorded wave as a :class:`Wave` (see :meth:`rebuild`)."""
        return Wave(
            number=int(record["number"]),
            units=units,
            open_units=np.array([position[str(key)] for key in record["open_units"]], dtype=int),
            unit_probability=np.asarray(record["unit_probability"], dtype=float),
            system_probability=np.array([float(record["system_probability"].get(s, 1.0)) for s in systems]),
            known=_cells_from_json(record["known"], index, systems),
            drawn=_cells_from_json(record["drawn"], index, systems),
            predictor=Predictor(
                np.array([float(record["predictor"]["offsets"].get(s, 0.0)) for s in systems]),
                float(record["predictor"]["slope"]),
            ).values(metric, len(pool)),
            chooser=str(record["chooser"]),
            weighted=bool(record["weighted"]),
        )


def metric_matrix(pool: Campaign, metric: str | None, systems: tuple[str, ...]) -> np.ndarray | None:
    """The pool's scores of ``metric`` for ``systems`` (``N × S``), or ``None`` without a metric."""
    if metric is None or not systems:
        return None
    if metric not in pool.scores:
        raise PrecometError(f"the pool has no {metric!r} scores ({', '.join(pool.scores) or 'none'})", param="metric")
    return np.asarray(pool.score(metric), dtype=float)[:, pool.system_index(systems)]


def _unit_keys(pool: Campaign, level: str) -> list[str]:
    if level == "item":
        return [str(i) for i in pool.ids]
    return [str(d) for d in np.unique(np.asarray(pool.doc, dtype=str))]


def live_step(
    pool: Campaign,
    judgements: Judgements,
    waves: list[Wave],
    *,
    settings: WaveSettings,
    chooser: Chooser,
    seed: int,
    planned: int,
    metric: str | None = None,
    level: float | None = None,
    draw: bool = True,
) -> Step:
    """The campaign's step (:func:`precomet.waves.step.take_step`, seeded ``(seed, wave number)``) on the judgements
    so far (``level``: the error level the manifest decided for this look before its wave was drawn). A judgement the
    manifest saw when it drew a wave and that is missing now is an error: every wave's weights count on it."""
    scores = judgements.scores
    for wave in waves:
        lost = wave.known & np.isnan(scores)
        if lost.any():
            item, system = np.argwhere(lost)[0]
            raise PrecometError(
                f"item {pool.ids[item]!r}, system {judgements.systems[system]!r} was judged when wave {wave.number} was"
                f" drawn, and no judgement file given now holds it ({int(lost.sum())} such cell(s)): give every"
                " judgement file of the campaign",
                param="judgements",
            )
    arrays = PoolArrays(
        units=sampling_units(pool.doc, settings.level),
        cost=np.asarray(pool.cost, dtype=float),
        metric=metric_matrix(pool, metric, judgements.systems),
        planned=planned,
    )
    return take_step(scores, waves, settings, chooser, arrays, seed=(seed,), report=True, level=level, draw=draw)


def clusters(estimates: Estimates, decided: np.ndarray) -> list[int]:
    """Cluster number of every system (1 = best), by the WMT rule (:func:`split_clusters_wmt`): a system opens a new
    cluster when a member of the current one is decided better than it (its pair decided at this look)."""
    order = np.argsort(-estimates.means, kind="stable")
    matrix = np.zeros((len(order), len(order)), dtype=bool)
    matrix[tuple(estimates.pairs[decided].T)] = True
    matrix |= matrix.T
    pvalues = np.where(matrix[np.ix_(order, order)], 0.0, 1.0)  # decided: "significant" at any level
    number = np.empty(len(order), dtype=int)
    for cluster, members in enumerate(split_clusters_wmt(order, pvalues, alpha=0.5), start=1):
        number[members] = cluster
    return number.tolist()


def step_report(
    step: Step, pool: Campaign, systems: tuple[str, ...], scores: np.ndarray, *, z: float, weighted: bool
) -> dict[str, Any]:
    """The report of a live step on the judged ``scores``: the target, the verdict, the ranking with intervals and
    clusters, the pairs taken as ties now (estimated within their width), what still separates the pairs in play (not
    settled: possibly ordered wrong beyond their width, ties included), and the forecast with its interval (the
    differences one standard error larger and smaller; hours = judgements still needed × the pool's seconds per
    judgement of one output); no forecast (``None``) before there is a ranking."""
    est, ver = step.estimates, step.verdict
    ranked = bool(len(systems)) and not np.isnan(est.means).any()
    number = clusters(est, ver.decided) if ranked else []
    order: list[int] = list(np.argsort(-est.means, kind="stable")) if ranked else []
    judged = ~np.isnan(scores)
    share = float(judged.sum() / max(judged.size, 1))
    forecast = step.forecast
    names = [(systems[a], systems[b]) for a, b in est.pairs.tolist()] if ranked else []

    open_cells = ~judged
    # seconds per judgement of one output (the cost model's unit), over the cells still open
    per_judgement = (
        float(np.broadcast_to(pool.cost[:, None], judged.shape)[open_cells].mean()) if open_cells.any() else 0
    )
    cells = max(judged.size, 1)

    def needed(at: float) -> dict[str, float]:
        judgements = int(np.ceil(max(at - share, 0.0) * cells))
        return {
            "items": items_needed(at, share, len(pool)),
            "judgements": judgements,
            "hours": judgements * per_judgement / 3600,
        }

    pairs_in_play = [] if not ranked else [
        {
            "pair": list(names[k]),
            "difference": float(est.differences[k]),
            "se": float(est.difference_se[k]),
            "tie_width": float(ver.widths[k]),
        }
        for k in np.flatnonzero(~ver.settled)
    ]  # fmt: skip
    return {
        "stop": ver.stop,
        "rule": ver.rule,
        "target": ver.target.to_dict() | {"description": ver.target.describe()},
        "confidence": ver.confidence,
        "agreement_lower_bound": ver.lower_bound,
        "expected_target_agreement": ver.expected_target,
        "expected_agreement": ver.expected,
        "level_this_look": ver.level,
        "waves": est.waves,
        "estimates": "inverse-probability weighted (AIPW over waves)"
        if weighted
        else "BIASED: plain means of a deterministic top-k choice",
        "judged_cells": int(judged.sum()),
        "judged_items": int(judged.any(axis=1).sum()) if judged.size else 0,
        "pool_items": len(pool),
        "pool_cells": int(judged.size),
        "predicted_stop_share": forecast.share if forecast and ranked else None,
        "predicted_stop_interval": [forecast.low, forecast.high] if forecast and ranked else None,
        "still_needed": {
            "estimate": needed(forecast.share),
            "low": needed(forecast.low),
            "high": needed(forecast.high),
        }
        if forecast and ranked
        else None,
        "ranking": [
            {
                "rank": rank,
                "system": systems[s],
                "mean": float(est.means[s]),
                "ci_low": float(est.means[s] - z * est.mean_se[s]),
                "ci_high": float(est.means[s] + z * est.mean_se[s]),
                "cluster": number[s],
            }
            for rank, s in enumerate(order, start=1)
        ],
        "ties": [list(names[k]) for k in np.flatnonzero(ver.ties)] if ranked else [],
        "decided_pairs": [list(names[k]) for k in np.flatnonzero(ver.decided)] if ranked else [],
        "undecided_pairs": [list(names[k]) for k in np.flatnonzero(~ver.decided)] if ranked else [],
        "pairs_in_play": pairs_in_play,
    }


def wave_record(
    wave: Wave,
    predictor: Predictor,
    pool: Campaign,
    systems: tuple[str, ...],
    level: str,
    *,
    look_level: float,
) -> dict[str, Any]:
    """The manifest entry of a freshly drawn wave (``systems`` empty: cells stand for every system, ``*``), with the
    error level its look will spend (decided before the draw)."""
    keys = _unit_keys(pool, level)
    names = systems if systems else (ALL_SYSTEMS,)
    return {
        "number": wave.number,
        "chooser": wave.chooser,
        "weighted": wave.weighted,
        "open_units": [keys[u] for u in wave.open_units],
        "unit_probability": [float(p) for p in wave.unit_probability],
        "system_probability": {s: float(q) for s, q in zip(systems, wave.system_probability)},
        "known": _cells_to_json(wave.known, pool.ids, names) if systems else {},
        "drawn": _cells_to_json(wave.drawn, pool.ids, names),
        "look_level": look_level,
        "predictor": {"offsets": {s: float(f) for s, f in zip(systems, predictor.offsets)}, "slope": predictor.slope},
        **({DESIGN: _design_to_json(wave.design)} if wave.design is not None else {}),
    }


def _design_to_json(design: Design) -> dict[str, Any]:
    return {
        "unit_score": [float(u) for u in design.unit_score],
        "unit_size": [float(w) for w in design.unit_size],
        "budget": float(design.budget),
        "floor": float(design.floor),
    }


@dataclass(frozen=True)
class LiveRequest:
    """One live call: the pool (``pool_systems``: its output systems, ``None`` without outputs), the manifest so far
    (``None`` on the first call or without one), the judgements read, the call's settings (a manifest keeps its size
    and level, with a notice, and refuses another target, confidence or metric; rule, allocation and top-k may change
    between waves), the chooser (built only when a wave is drawn), the seed and the metric the predictor reads."""

    pool: Campaign
    pool_systems: tuple[str, ...] | None
    manifest: Manifest | None
    judgements: Judgements
    settings: WaveSettings
    chooser: Callable[[], Chooser]
    seed: int = 0
    metric: str | None = None
    answered: bool = True  # False: no judgement file was given at all
    asked_size: str | None = None  # the wave size the call named (a manifest's own size is kept, with a notice)


@dataclass(frozen=True)
class LiveOutcome:
    """What a live call found and drew: the report, the next wave (``None``: stop, or the last wave awaits its
    judgements), the manifest to write with it, the systems the cells name, and notices for the user."""

    report: dict[str, Any]
    wave: Wave | None
    manifest: Manifest | None
    systems: tuple[str, ...]
    notices: tuple[str, ...]
    awaiting: int | None = None


def advance(request: LiveRequest, *, z: float | None = None) -> LiveOutcome:
    """One live call (:class:`LiveRequest`): the report of the campaign so far and, unless it stops or its last wave
    awaits judgements, the next wave and the manifest that records it (``z``: the report's interval width, default
    the two-sided ``confidence`` quantile)."""
    pool, manifest = request.pool, request.manifest
    notices: list[str] = []
    settings = request.settings
    if manifest is not None:
        manifest.check_settings(target=settings.target, confidence=settings.confidence, metric=request.metric)
        notices.extend(manifest.notes)
        if manifest.level != settings.level or request.asked_size not in (None, manifest.size):
            notices.append(f"the manifest fixes --size {manifest.size} --level {manifest.level} (kept)")
        settings = replace(manifest.settings, rule=settings.rule, allocation=settings.allocation, top_k=settings.top_k)
    judgements, systems = _systems_of(request, manifest)
    planned = (
        manifest.planned
        if manifest
        else planned_looks(settings, len(pool), len(systems), np.asarray(pool.cost, dtype=float))
    )
    waves = manifest.rebuild(pool, systems) if manifest else []
    if waves and not request.answered:
        notices.append(
            "no judgements given (--judgements, --pearmut-annotations, --appraise-annotations): the waves drawn so far"
            " count as unanswered"
        )
    # the last wave awaits its judgements while none of its cells has one; a wave that drew no cell (a small wave's
    # independent draws can come out empty) awaits nothing, and the next one is drawn on top of it
    awaiting = bool(waves) and waves[-1].drawn.any() and not (waves[-1].drawn & ~np.isnan(judgements.scores)).any()
    chooser = request.chooser() if not awaiting else make_chooser("random", np.ones(len(pool)))
    step = live_step(
        pool, judgements, waves, settings=settings, chooser=chooser, seed=request.seed, planned=planned,
        metric=request.metric, level=float(manifest.waves[-1]["look_level"]) if manifest and manifest.waves else None,
        draw=not awaiting,
    )  # fmt: skip
    z = NormalDist().inv_cdf(1 - (1 - settings.confidence) / 2) if z is None else z
    weighted = all(w.weighted for w in waves)
    report = step_report(step, pool, systems, judgements.scores, z=z, weighted=weighted)
    report["systems_known"] = bool(systems)
    judged = ~np.isnan(judgements.scores)
    report["waves_judged"] = sum(bool((w.drawn & judged).any()) for w in waves) if systems else 0
    if awaiting:
        report["awaiting_wave"] = waves[-1].number
    written = None
    if step.wave is not None:
        wave, predictor = step.wave, step.predictor
        assert predictor is not None  # drawn with the wave
        report["next_wave"] = {
            "number": wave.number,
            "items": int(wave.drawn.any(axis=1).sum()),
            "cells": int(wave.drawn.sum()) if systems else None,
            "seconds": float(pool.cost @ wave.drawn.sum(axis=1)) if systems else None,
            "chooser": chooser.label,
            "weighted": wave.weighted,
        }
        base = manifest or Manifest(pool.data_hash(), settings, planned, request.metric, [])
        look = wave_level(settings.confidence, wave.number, base.planned, anytime=settings.anytime)
        record = wave_record(wave, predictor, pool, systems, settings.level, look_level=look)
        written = replace(base, settings=settings, waves=[*base.waves, record])
    return LiveOutcome(report, step.wave, written, systems, tuple(notices), waves[-1].number if awaiting else None)


def _systems_of(request: LiveRequest, manifest: Manifest | None) -> tuple[Judgements, tuple[str, ...]]:
    judgements = request.judgements
    systems = judgements.systems
    missing = sorted(manifest.systems() - set(systems)) if manifest is not None else []
    if missing:
        raise PrecometError(
            f"the manifest's waves count on judgements of {', '.join(map(repr, missing))}, and no judgement file given"
            " now holds one: give every judgement file of the campaign"
        )
    if request.pool_systems is not None and not systems:
        systems = request.pool_systems
        judgements = Judgements(systems, np.full((len(request.pool), len(systems)), np.nan))
    return judgements, systems
