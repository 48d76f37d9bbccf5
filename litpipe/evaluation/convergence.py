"""How the MAIS loop converges over many requests: the table MAIS reports (runs, approved
count and share, runs approved at their first iteration, mean and variance of the iterations of
approved runs), and at each iteration the judge's accuracy and the ACU accuracy (the share of
the atomic content units the summary holds); `litpipe.report.convergence` renders them as a
Markdown table and an SVG plot.
An iteration's accuracy is averaged over the runs that reached it: a run approved earlier has
no answer there to grade (carrying its last accuracy forward would flatter later iterations).
Its ACU accuracy, over those of them that had ACUs.

Pure Python over `QuerySummary` results: the asset, the CLI and a notebook share it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from litpipe.schemas import ConvergenceReport, IterationAccuracy, QuerySummary


def convergence_report(results: Sequence[QuerySummary]) -> ConvergenceReport:
    """The figures over `results`; an empty sequence gives zero runs and no means."""
    runs = len(results)
    approved = [r for r in results if r.status == "approved"]
    counts = [len(r.iterations) for r in approved]
    single = sum(count == 1 for count in counts)
    longest = max((len(r.iterations) for r in results), default=0)
    by_iteration = []
    for iteration in range(1, longest + 1):
        reached = [r.iterations[iteration - 1] for r in results if len(r.iterations) >= iteration]
        acus = [i.acu_accuracy for i in reached if i.acu_accuracy is not None]
        by_iteration.append(
            IterationAccuracy(
                iteration=iteration,
                runs=len(reached),
                mean_accuracy=statistics.fmean(i.verdict.accuracy for i in reached),
                mean_acu_accuracy=statistics.fmean(acus) if acus else None,
            )
        )
    return ConvergenceReport(
        runs=runs,
        approved=len(approved),
        approved_share=len(approved) / runs if runs else 0.0,
        single_iteration=single,
        single_iteration_share=single / runs if runs else 0.0,
        mean_iterations=statistics.fmean(counts) if counts else None,
        variance_iterations=statistics.variance(counts) if len(counts) > 1 else None,
        max_iterations=sorted({r.max_iterations for r in results}),
        accuracy_by_iteration=by_iteration,
        engines={
            agent: sorted({r.engines[agent] for r in results if agent in r.engines})
            for agent in dict.fromkeys(agent for r in results for agent in r.engines)
        },
    )
