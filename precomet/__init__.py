"""precomet: choose the test items worth human evaluation of NLG models."""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("precomet")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+local"

from precomet.errors import CampaignError, DataError, PrecometError  # noqa: E402

__all__ = ["Campaign", "HUMAN", "estimate_cost", "PrecometError", "DataError", "CampaignError", "__version__"]


def __getattr__(name: str) -> Any:
    """``Campaign``, ``HUMAN`` and ``estimate_cost`` load numpy on first use, not on ``import precomet``: the command
    line installs its Ctrl-C handling before anything heavy is imported."""
    if name in ("Campaign", "HUMAN", "estimate_cost"):
        from precomet import campaign

        return getattr(campaign, name)
    raise AttributeError(f"module 'precomet' has no attribute {name!r}")
