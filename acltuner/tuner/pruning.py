"""Pruning of losing branches (BestOf, ../shared/seeds/000_*): an (algorithm,
micro-kernel) branch whose best time after `after` measurements is worse than
the task's best by more than margin_pct gets no more random samples.  The
cost model may still pick from it (a branch pruned on a few unlucky
placements can come back when the model predicts it wins); only the
exploration stops feeding it.  The search and `records stats` both ask this
function, so what the stats report is what the search skipped.
"""
from __future__ import annotations

from collections.abc import Iterable

from acltuner.tuner.cost_model import Result


def pruned_branches(results: Iterable[Result], settings) -> set[tuple[str, str | None]]:
    """settings: PruningSettings (after, margin_pct); after None: pruning off."""
    if settings.after is None:
        return set()
    count: dict[tuple[str, str | None], int] = {}
    best: dict[tuple[str, str | None], float] = {}
    for r in results:
        branch = (r.config.algorithm, r.config.ukernel)
        count[branch] = count.get(branch, 0) + 1
        if r.ok and r.median_ms is not None:
            best[branch] = min(best.get(branch, r.median_ms), r.median_ms)
    if not best:
        return set()
    limit = min(best.values()) * (1 + settings.margin_pct / 100)
    return {b for b, n in count.items()
            if n >= settings.after and best.get(b, float("inf")) > limit}
