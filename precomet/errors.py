"""Exception types. Every error precomet raises on bad input derives from :class:`PrecometError`;
the CLI turns those into a one-line message and exit status 2."""

from __future__ import annotations

from collections.abc import Mapping

SUGGESTED = {
    "allow_gap": "allow_gap=True",
    "balance": "balance='domain'",
    "complete": "complete=False",
    "external": "external={NAME: utilities}",
    "doc_level": "level='doc'",
    "options": "options={'missing': 'exclude'}",
    "quotas": "quotas={domain: count}",
    "text": "text=True",
}
"""Parameters an error suggests with one value, as a Python caller writes them (any other reads ``name=``)."""


class PrecometError(ValueError):
    """Bad input or an impossible request; the message says what and where.

    An error about parameters names them in ``param`` (one name or a tuple; :attr:`param` is the first,
    :attr:`params` all) and writes each in ``message`` as a field ``{name}`` before its value:
    ``PrecometError("choose the metric ({metric}NAME)", param="metric")`` reads ``metric=NAME`` in ``str(err)``,
    and :meth:`spelled` lets the CLI write its option (``--metric NAME``) instead."""

    def __init__(self, message: str, *, param: str | tuple[str, ...] | None = None) -> None:
        self.params: tuple[str, ...] = (param,) if isinstance(param, str) else tuple(param or ())
        self.param: str | None = self.params[0] if self.params else None
        self.template = message
        super().__init__(self.spelled())

    def spelled(self, flags: Mapping[str, str] | None = None) -> str:
        """The message with each parameter field written as ``flags`` spells it (the CLI: its options), else as a
        Python caller writes it (``name=``, or the setting of :data:`SUGGESTED`)."""
        message = self.template
        for name in self.params:
            spelling = (flags or {}).get(name) or SUGGESTED.get(name, f"{name}=")
            message = message.replace(f"{{{name}}}", spelling)
        return message


class DataError(PrecometError):
    """A data file that cannot be read as its format requires (names the file and line)."""

    def __init__(self, path, message: str, *, line: int | None = None, param: str | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(message, param=param)

    def spelled(self, flags: Mapping[str, str] | None = None) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else f"{self.path}"
        return f"{where}: {super().spelled(flags)}"


class CampaignError(PrecometError):
    """Invalid campaign content or an invalid request on a campaign."""


class OutputError(PrecometError):
    """An output that cannot be written (a directory in the way, a parent that is a file, no permission)."""


class SolverGapWarning(UserWarning):
    """A knapsack solution used as found, not certified optimal (``allow_gap=True``); the message gives its gap.
    Filter it by category (``warnings.simplefilter("ignore", SolverGapWarning)`` in a ``catch_warnings`` block)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during work that kept part of its result: :attr:`kept` says what, for the command line's
    interrupt message (which adds the command that resumes)."""

    def __init__(self, kept: str) -> None:
        super().__init__(kept)
        self.kept = kept
