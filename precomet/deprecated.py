"""Old spellings of the public API that still work, with a warning, for one minor version.

0.19.0 moved the options of :func:`precomet.benchmark.run_benchmark` and :func:`precomet.selection.select_subset`
into frozen option records (:class:`~precomet.benchmark.BenchmarkPlan`, :class:`~precomet.selection.SubsetPlan`);
their old keyword arguments build the record here, with one :class:`DeprecationWarning` that names the new form,
until :data:`REMOVED_IN`."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

P = TypeVar("P")

REMOVED_IN = "0.20.0"
"""The version whose functions no longer take the old keyword arguments."""


def plan_from_keywords(
    function: str,
    plan_class: Callable[..., P],
    plan: P,
    keywords: Mapping[str, Any],
    *,
    default: Any = None,
    stacklevel: int = 3,
) -> P:
    """``plan``, or the ``plan_class`` record built from the old keyword arguments ``keywords`` of ``function`` (with
    one :class:`DeprecationWarning` naming the new form); ``plan`` itself when no old keyword is given. A keyword that
    is no field of ``plan_class``, or old keywords beside a ``plan`` other than the ``default``, is refused with a
    :class:`TypeError`, as Python refuses a bad argument."""
    if not keywords:
        return plan
    known = {f.name for f in fields(plan_class)}  # type: ignore[arg-type]
    unknown = [name for name in keywords if name not in known]
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    name = getattr(plan_class, "__name__", "the plan")
    if plan is not default:
        raise TypeError(
            f"{function}() got both a {name} and the keyword argument(s) {', '.join(keywords)}; put them in the {name}"
        )
    given = ", ".join(f"{key}=..." for key in keywords)
    warnings.warn(
        f"{function}(..., {given}) is deprecated: pass {function}(..., {name}({given})); the keyword arguments work"
        f" until precomet {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return plan_class(**keywords)
