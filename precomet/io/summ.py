"""SummEval and REALSumm pickles (as shipped by neulab/BARTScore ``SUM/<dataset>/data.pkl``).

Structure: ``{doc_id: {"src": str, "ref_summ": str, "sys_summs": {system: {"sys_summ": str,
"scores": {name: float}}}}}``. Items = documents, systems = summarisers, outputs = summaries, ``ref`` =
``ref_summ``. The file is read with an unpickler whose ``find_class`` refuses every class, so a pickle that
would import or call anything raises :class:`~precomet.errors.DataError` instead of running code.

Human scores (:data:`HUMAN_DIMENSIONS`): SummEval's expert ``coherence``, ``consistency``, ``fluency``,
``relevance`` (1–5) are kept under their names and their sum is ``human``; REALSumm's
``litepyramid_recall`` is kept and also stored as ``human``. Any other score key is kept under its name.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError
from precomet.values import finite_number

HUMAN_DIMENSIONS = {
    "summeval": ("coherence", "consistency", "fluency", "relevance"),
    "realsumm": ("litepyramid_recall",),
}


class _ClassFound(Exception):
    pass


class _NoClassUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise _ClassFound(f"{module}.{name}")


def safe_unpickle(path: str | Path):
    """Unpickle builtin containers and scalars only; any class reference raises :class:`DataError`."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    try:
        return _NoClassUnpickler(io.BytesIO(path.read_bytes())).load()
    except _ClassFound as found:
        raise DataError(
            path, f"pickle refers to class {found}; only plain dicts, lists, strings and numbers are accepted"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as err:
        raise DataError(path, f"not a readable pickle ({type(err).__name__}: {err})") from None


def load_summ_pickle(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load a SummEval/REALSumm-style pickle (the dataset is recognised from its score names)."""
    path = Path(path)
    data = safe_unpickle(path)
    if not isinstance(data, Mapping) or not data:
        raise DataError(path, f"expected a non-empty dict of documents, got {type(data).__name__}")
    docs = [str(d) for d in data]
    first_doc: dict[str, object] = {}
    for doc_id in data:
        if str(doc_id) in first_doc:
            raise DataError(
                path, f"duplicate document id {str(doc_id)!r} (keys {first_doc[str(doc_id)]!r} and {doc_id!r})"
            )
        first_doc[str(doc_id)] = doc_id
    systems: dict[str, None] = {}
    names: dict[str, None] = {}
    for doc_id, entry in data.items():
        where = f"document {doc_id!r}"
        if isinstance(entry, Mapping) and isinstance(entry.get("sys_summs"), Mapping):
            keys = [str(system) for system in entry["sys_summs"]]
            repeated = sorted({key for key in keys if keys.count(key) > 1})
            if repeated:
                raise DataError(path, f"{where}: duplicate system name(s) {repeated}")
        if not isinstance(entry, Mapping) or not isinstance(entry.get("sys_summs"), Mapping):
            raise DataError(path, f"{where}: expected a dict with 'src', 'ref_summ' and 'sys_summs'")
        if not isinstance(entry.get("src"), str) or not entry["src"].strip():
            raise DataError(path, f"{where}: empty or missing source text 'src'")
        for system, summ in entry["sys_summs"].items():
            if not isinstance(summ, Mapping) or not isinstance(summ.get("sys_summ"), str):
                raise DataError(path, f"{where}, system {system!r}: expected {{'sys_summ': str, 'scores': dict}}")
            systems[str(system)] = None
            names.update(dict.fromkeys(str(k) for k in (summ.get("scores") or {})))
    dataset = next((d for d, dims in HUMAN_DIMENSIONS.items() if set(dims) <= set(names)), None)
    if dataset is None:
        raise DataError(path, f"no known human score set among {sorted(names)}; expected one of {HUMAN_DIMENSIONS}")
    system_list = list(systems)
    column = {s: j for j, s in enumerate(system_list)}
    matrices = {k: np.full((len(docs), len(system_list)), np.nan) for k in names}
    outputs = {s: [None] * len(docs) for s in system_list}
    for i, entry in enumerate(data.values()):
        for system, summ in entry["sys_summs"].items():
            outputs[str(system)][i] = summ["sys_summ"]
            for key, value in (summ.get("scores") or {}).items():
                matrices[str(key)][i, column[str(system)]] = finite_number(
                    value, what=f"document {docs[i]!r}, system {system!r}, score {key!r}", path=path, text=False
                )
    dims = HUMAN_DIMENSIONS[dataset]
    scores = {HUMAN: sum(matrices[d] for d in dims), **matrices}
    refs = [entry.get("ref_summ") for entry in data.values()]
    return Campaign.build(
        ids=docs,
        src=[entry["src"] for entry in data.values()],
        systems=system_list,
        outputs=outputs,
        scores=scores,
        ref=refs if all(isinstance(r, str) for r in refs) else None,
        doc=docs,
        domain=["news"] * len(docs),
        name=name or dataset,
        protocol=dataset,
        info={"human": " + ".join(dims)},
    )
