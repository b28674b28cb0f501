"""precomet: choose the test items worth human evaluation of NLG models."""

from typing import Any

from precomet.errors import CampaignError, DataError, PrecometError

__all__ = ["Campaign", "HUMAN", "estimate_cost", "PrecometError", "DataError", "CampaignError", "__version__"]


def __getattr__(name: str) -> Any:
    """``__version__``, ``Campaign``, ``HUMAN`` and ``estimate_cost`` load on first use, not on ``import precomet``
    (importlib.metadata, numpy): ``python -m precomet`` reaches its Ctrl-C handling before anything heavy runs."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("precomet")
        except PackageNotFoundError:  # running from a source tree that was not installed
            found = "0.0.0+local"
        globals()["__version__"] = found
        return found
    if name in ("Campaign", "HUMAN", "estimate_cost"):
        from precomet import campaign

        return getattr(campaign, name)
    raise AttributeError(f"module 'precomet' has no attribute {name!r}")
