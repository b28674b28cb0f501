"""Exception types. Every error precomet raises on bad input derives from :class:`PrecometError`;
the CLI turns those into a one-line message and exit status 2."""


class PrecometError(ValueError):
    """Bad input or an impossible request; the message says what and where."""


class DataError(PrecometError):
    """A data file that cannot be read as its format requires (names the file and line)."""

    def __init__(self, path, message: str, *, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class CampaignError(PrecometError):
    """Invalid campaign content or an invalid request on a campaign."""


class OutputError(PrecometError):
    """An output that cannot be written (a directory in the way, a parent that is a file, no permission)."""


class SolverGapWarning(UserWarning):
    """A knapsack solution used as found, not certified optimal (``allow_gap=True``); the message gives its gap.
    Filter it by category (``warnings.simplefilter("ignore", SolverGapWarning)`` in a ``catch_warnings`` block)."""
