"""One signature on every result (as sacrebleu puts one on every score): which tool and method produced it,
with which parameters, on which data, with which seed and precomet version."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from precomet import __version__
from precomet.provenance import items_hash as campaign_items_hash
from precomet.provenance import sources_hash as campaign_sources_hash

if TYPE_CHECKING:
    from precomet.campaign import Campaign


@dataclass(frozen=True, eq=False)
class Signature(Mapping[str, Any]):
    """Which tool and method produced a result, with which precomet version, on which data (``dataset``: the
    campaign's name, language pair, human protocol, item count and data hash, or only the name or hash given),
    with which ``seed`` and ``parameters`` (JSON-ready values). Immutable: :meth:`with_parameters` gives a new
    one. Reads like its JSON (``sig["tool"]``, ``sig["budget_unit"]``), equals the dict it is written as, and
    :meth:`to_dict` is that dict."""

    tool: str
    method: str | None
    precomet_version: str
    dataset: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: tool, method, version, the dataset fields, seed, then the parameters."""
        head = {"tool": self.tool, "method": self.method, "precomet_version": self.precomet_version}
        return {**head, **self.dataset, "seed": self.seed, **{k: _copy(v) for k, v in self.parameters.items()}}

    def with_parameters(self, **parameters: Any) -> Signature:
        """A copy with ``parameters`` added (or replaced), e.g. the command line's file names."""
        added = {key: jsonable(value) for key, value in parameters.items()}
        return replace(self, parameters=MappingProxyType({**self.parameters, **added}))

    def __getitem__(self, key: str) -> Any:  # the field to_dict() writes last for a key wins, as there
        if key in self.parameters:
            return _copy(self.parameters[key])
        if key == "seed":
            return self.seed
        if key in self.dataset:
            return self.dataset[key]
        return {"tool": self.tool, "method": self.method, "precomet_version": self.precomet_version}[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(["tool", "method", "precomet_version", *self.dataset, "seed", *self.parameters]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def signature(
    tool: str,
    *,
    method: str | None = None,
    campaign: Campaign | str | None = None,
    data_hash: str | None = None,
    sources_hash: str | None = None,
    items_hash: str | None = None,
    seed: int | None = None,
    **parameters: Any,
) -> Signature:
    """The signature of a result: ``tool``, ``method``, ``precomet_version``, the campaign's name, language pair,
    human protocol, item count, data hash, sources hash and items hash (:mod:`precomet.provenance`; ``campaign``
    may also be just a name; ``data_hash``, ``sources_hash`` and ``items_hash`` are for results without a
    campaign), ``seed``, then ``parameters`` (values that are not JSON become their ``repr``)."""
    data: dict[str, Any] = {}
    if isinstance(campaign, str):
        data["campaign"] = campaign
    elif campaign is not None:
        data.update(
            campaign=campaign.name,
            lp=campaign.lp,
            protocol=campaign.protocol,
            n_items=len(campaign),
            data_hash=campaign.data_hash(),
            sources_hash=campaign_sources_hash(campaign.src),
            items_hash=campaign_items_hash(map(str, campaign.ids), campaign.src),
        )
    if data_hash is not None and "data_hash" not in data:
        data["data_hash"] = data_hash
    if sources_hash is not None and "sources_hash" not in data:
        data["sources_hash"] = sources_hash
    if items_hash is not None and "items_hash" not in data:
        data["items_hash"] = items_hash
    params = {key: jsonable(value) for key, value in parameters.items()}
    return Signature(
        tool, method, __version__, dataset=MappingProxyType(data), seed=seed, parameters=MappingProxyType(params)
    )


def _copy(value: Any) -> Any:
    """A fresh copy of a JSON value (a caller editing ``to_dict()`` never edits the signature)."""
    return json.loads(json.dumps(value)) if isinstance(value, (dict, list)) else value


def jsonable(value: Any) -> Any:
    """``value`` when JSON can write it (mappings converted to dicts), else its ``repr``."""
    if isinstance(value, Mapping):
        value = {key: jsonable(item) for key, item in value.items()}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
