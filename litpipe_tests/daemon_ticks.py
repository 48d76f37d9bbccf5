"""What Dagster's daemon makes of a sensor's tick, in a test: it adds the partitions the tick
asks for, launches its runs, and its automation condition sensor then requests what the
assets' conditions say (`litpipe.defs.automation`), evaluated here with
`dg.evaluate_automation_conditions` from one tick to the next."""

from __future__ import annotations

import dagster as dg

from litpipe.defs.automation import AUTOMATED
from litpipe.defs.jobs import RUN_TAGS
from litpipe.defs.staleness import PAPER_SOURCE
from litpipe_tests.daemon_soak import PAPER_ASSETS


class Daemon:
    """The daemon of one instance, its automation's cursor kept from tick to tick. Its
    automation condition sensor ticks first (`automation_first`), or after the test's first
    sensor tick: the daemon starts both sensors at once, and either may tick first."""

    def __init__(
        self, instance: dg.DagsterInstance, defs: dg.Definitions, *, automation_first: bool = True
    ) -> None:
        self.instance = instance
        self.last: dg.EvaluateAutomationConditionsResult | None = None
        if automation_first:
            self.automation(defs)

    def automation(self, defs: dg.Definitions) -> dg.EvaluateAutomationConditionsResult:
        """One tick of the automation condition sensor."""
        self.last = dg.evaluate_automation_conditions(
            defs,
            self.instance,
            asset_selection=AUTOMATED,
            cursor=self.last.cursor if self.last is not None else None,
        )
        return self.last

    def papers_built(self, defs: dg.Definitions, result: dg.SensorResult) -> list[str]:
        """The papers whose stages get built after the tick: those it requests a run of every
        stage for, and those the automation requests then, with all their stages at once."""
        for request in result.dynamic_partitions_requests:
            name = request.partitions_def_name
            known = set(self.instance.get_dynamic_partitions(name))
            new = [key for key in request.partition_keys or [] if key not in known]
            if new:
                self.instance.add_dynamic_partitions(name, new)
        rebuilt = set()
        for run in result.run_requests:
            assert run.asset_selection is None, run  # the sensor's: every per-paper stage
            assert RUN_TAGS.items() <= run.tags.items()
            assert run.partition_key is not None
            rebuilt.add(run.partition_key)
        evaluation = self.automation(defs)
        new_papers = evaluation.get_requested_partitions(PAPER_SOURCE)
        for stage in PAPER_ASSETS:
            assert new_papers <= evaluation.get_requested_partitions(dg.AssetKey(stage)), stage
        return sorted(rebuilt | {paper for paper in new_papers if paper is not None})
