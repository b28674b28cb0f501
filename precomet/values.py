"""One rule per kind of input value, used by every loader and option parser.

* :func:`finite_number` — a score, cost, utility or target read from a file must be a finite number:
  ``NaN`` / ``inf`` literals are refused where they are read (a missing value is written as an empty cell
  or ``null``/``None``, never as ``NaN``), with the file, line, item, system and field in the message.
* :func:`is_blank` — a text (a source, a document id, a domain) is blank when it holds nothing visible: only white
  space and invisible format or control characters (U+200B zero-width space, U+FEFF, U+200E/F direction marks, …).
* :func:`check_like` — an option or config value must have the type of its default (``lr=foo`` is refused
  where it is parsed, not deep inside a fit).
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from precomet.errors import CampaignError, DataError, PrecometError


def finite_number(
    value: Any, *, what: str, path: Any = None, line: int | None = None, positive: bool = False, text: bool = True
) -> float:
    """``value`` (a JSON number or a text cell) as a finite float; otherwise raise ``"{what}: must be a finite
    number, got …"``, as a :class:`~precomet.errors.DataError` of ``path`` (and ``line``) when given, else a
    :class:`~precomet.errors.CampaignError`. ``what`` names the item, system and field (``"item 'a', system
    'A', score 'human'"``). With ``positive`` the number must also be > 0 (costs). ``text=False`` refuses a
    number written as text (``"1"``): in JSON a number is a number; text cells are for CSV/TSV readers."""
    if isinstance(value, bool) or value is None or (not text and isinstance(value, str)):
        number = None
    elif isinstance(value, float):  # the common case, without a try
        number = float(value)
    elif isinstance(value, int):
        try:
            number = float(value)
        except OverflowError:  # a 400-digit integer
            number = math.inf
    else:
        try:
            number = float(value)  # text cells (float() strips whitespace), numpy scalars
        except (TypeError, ValueError):
            number = None
        except OverflowError:
            number = math.inf
    kind = "a positive finite number" if positive else "a finite number"
    if number is None or not math.isfinite(number) or (positive and number <= 0):
        shown = repr(value)
        shown = shown if len(shown) <= 40 else f"{shown[:30]}… ({len(shown)} characters)"
        message = f"{what}: must be {kind}, got {shown}"
        raise CampaignError(message) if path is None else DataError(path, message, line=line)
    return number


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: every character is white space or an invisible format (Cf) or control (Cc)
    character, so a line of only U+200B or U+FEFF+U+200E is blank like an empty one."""
    return all(char.isspace() or unicodedata.category(char) in ("Cf", "Cc") for char in text)


def check_like(value: Any, default: Any, *, what: str) -> Any:
    """``value`` checked against the type of ``default`` (the value used when the option is not given):
    a float default takes any finite number, an int default an integer, a bool default a bool, a string
    default a string; ``None`` and container defaults accept anything (checked by their consumer)."""
    if default is None or isinstance(default, (list, tuple, dict)):
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise PrecometError(f"{what} must be true or false, got {value!r}")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise PrecometError(f"{what} must be an integer, got {value!r}")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PrecometError(f"{what} must be a finite number, got {value!r}")
    elif isinstance(default, str) and not isinstance(value, str):
        raise PrecometError(f"{what} must be a string, got {value!r}")
    return value
