"""precomet: choose the test items worth human evaluation of NLG models."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("precomet")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+local"

from precomet.campaign import HUMAN, Campaign, estimate_cost  # noqa: E402
from precomet.errors import CampaignError, DataError, PrecometError  # noqa: E402

__all__ = ["Campaign", "HUMAN", "estimate_cost", "PrecometError", "DataError", "CampaignError", "__version__"]
