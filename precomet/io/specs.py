"""``PATH[:CAMPAIGN]`` input specs (a glob in CAMPAIGN names several) and loading every campaign they name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.io import load, match_campaigns

GLOB = set("*?[")


def split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH[:CAMPAIGN]`` -> (path, campaign); a path that exists as given wins over the split."""
    if Path(spec).exists() or ":" not in spec:
        return spec, None
    path, campaign = spec.rsplit(":", 1)
    return path, campaign


def expand_spec(spec: str) -> list[tuple[str, str | None]]:
    """``PATH[:CAMPAIGN]`` with a glob in CAMPAIGN -> one ``(path, campaign)`` per matching campaign name."""
    path, name = split_spec(spec)
    if name is None or not GLOB & set(name):
        return [(path, name)]
    return [(path, n) for n in match_campaigns(path, name)]


def load_specs(specs: list[str], human: str | None, *, complete: bool = True) -> list[Campaign]:
    """Every campaign named by the specs (globs expanded); campaign names must be distinct. ``complete``:
    drop items without a human score for every system (as :func:`precomet.io.load`)."""
    campaigns: list[Campaign] = []
    origin: dict[str, str] = {}
    for spec in specs:
        for path, name in expand_spec(spec):
            campaign = load(path, campaign=name, human=human, complete=False)
            if complete and HUMAN in campaign.scores:  # a campaign left without items is the caller's to explain
                campaign = campaign.complete(HUMAN)[0]
            if name is not None and campaign.name != name:
                campaign = replace(campaign, name=name)
            if campaign.name in origin:
                raise PrecometError(
                    f"campaign name {campaign.name!r} comes from both {origin[campaign.name]} and {path};"
                    " targets are grouped by campaign name"
                )
            origin[campaign.name] = path
            campaigns.append(campaign)
    return campaigns
