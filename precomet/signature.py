"""One signature on every result (as sacrebleu puts one on every score): which tool and method produced it,
with which parameters, on which data, with which seed and precomet version."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from precomet.campaign import Campaign


def signature(
    tool: str,
    *,
    method: str | None = None,
    campaign: Campaign | str | None = None,
    data_hash: str | None = None,
    seed: int | None = None,
    **parameters: Any,
) -> dict[str, Any]:
    """The signature dict of a result: ``tool``, ``method``, ``precomet_version``, the campaign's name,
    language pair, human protocol, item count and data hash (``campaign`` may also be just a name; ``data_hash``
    is for results without a campaign), ``seed``, then ``parameters`` (values that are not JSON become their
    ``repr``)."""
    from precomet import __version__

    result: dict[str, Any] = {"tool": tool, "method": method, "precomet_version": __version__}
    if isinstance(campaign, str):
        result["campaign"] = campaign
    elif campaign is not None:
        result.update(
            campaign=campaign.name,
            lp=campaign.lp,
            protocol=campaign.protocol,
            n_items=len(campaign),
            data_hash=campaign.data_hash(),
        )
    if data_hash is not None and "data_hash" not in result:
        result["data_hash"] = data_hash
    result["seed"] = seed
    result.update({key: jsonable(value) for key, value in parameters.items()})
    return result


def jsonable(value: Any) -> Any:
    """``value`` when JSON can write it (mappings converted to dicts), else its ``repr``."""
    if isinstance(value, Mapping):
        value = {key: jsonable(item) for key, item in value.items()}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
