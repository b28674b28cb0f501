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


_SHOWS_NOTHING = frozenset(
    chr(code)
    for first, last in (
        (0x034F, 0x034F),  # combining grapheme joiner
        (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
        (0x17B4, 0x17B5),  # Khmer inherent vowels
        (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
        (0x2800, 0x2800),  # Braille pattern blank
        (0x3164, 0x3164),  # Hangul filler
        (0xFE00, 0xFE0F),  # variation selectors
        (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
        (0xE0100, 0xE01EF),  # variation selectors supplement
    )
    for code in range(first, last + 1)
)
"""Characters that render as nothing or as blank space without being white space or a format (Cf) or control (Cc)
character: Unicode's default-ignorable code points of other categories, and the Braille blank."""


def is_invisible(char: str) -> bool:
    """Whether the character ``char`` shows nothing: white space, an invisible format (Cf) or control (Cc)
    character, or one of the other default-ignorable code points (Hangul fillers, variation selectors, ...)."""
    return char.isspace() or char in _SHOWS_NOTHING or unicodedata.category(char) in ("Cf", "Cc")


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: every character is invisible (:func:`is_invisible`) or a combining mark
    with nothing to combine with (categories Mn, Me), so a line of only U+200B, U+FEFF+U+200E, U+3164 or U+0301
    is blank like an empty one."""
    return all(is_invisible(char) or unicodedata.category(char) in ("Mn", "Me") for char in text)


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
