"""The typed result of :func:`precomet.benchmark.run_benchmark` (a :class:`~precomet.record.Record`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from precomet.record import Record
from precomet.signature import Signature


@dataclass(frozen=True)
class BenchmarkResult(Record):
    """Methods against random selection on one campaign.

    ``props`` are the budget proportions and ``budgets`` what they stand for (item counts, or annotation cost when
    the signature's ``budget_unit`` is ``"cost"``); ``random`` is random's summary over its seeds; ``methods``,
    ``controls`` (the length control row) and ``oracle`` (the headroom row, ``None`` unless asked for) hold one row
    each: ``spa``, ``clusters``, ``corr`` and their ``*_by_prop`` lists, ``spa_gain``, ``parity``, ``parity_by_prop``,
    the verdict against ``null_orderings`` random orderings (``p_value``, ``parity_p_value``, ``parity_ci90``,
    ``spa_gain_ci90``, ``null``: :func:`precomet.benchmark.null.verdict`) and ``seconds``; ``null`` holds the random
    orderings' own ``spa_gain`` and ``parity`` (what :func:`precomet.benchmark.pooled.pool_results` pools; ``None``
    without a null); ``controls_skipped`` gives the reason a control row is left out; ``cost`` the total annotation
    seconds and where they came from; ``recommendation`` the one-line answer
    (:func:`precomet.benchmark.recommendation`). As JSON, ``n_items`` is written ``items``."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"oracle", "null"})

    campaign: str
    n_items: int = field(metadata={"key": "items"})
    systems: Sequence[str]
    props: Sequence[float]
    budgets: Sequence[float]
    random: Mapping[str, Any]
    methods: Mapping[str, Mapping[str, Any]]
    controls: Mapping[str, Mapping[str, Any]]
    controls_skipped: Mapping[str, str]
    oracle: Mapping[str, Any] | None
    null_orderings: int
    null: Mapping[str, Any] | None
    cost: Mapping[str, Any]
    signature: Signature
    recommendation: Mapping[str, Any] = field(default_factory=dict)

    def with_signature(self, **parameters: Any) -> BenchmarkResult:
        """A copy whose signature also records ``parameters`` (e.g. the command line's input files)."""
        return self.replaced(signature=self.signature.with_parameters(**parameters))
