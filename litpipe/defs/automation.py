"""What Dagster's daemon builds by itself: the automation conditions of litpipe's assets and the
sensor that evaluates them (Dagster's declarative automation, not a scheduler of litpipe's).

- A paper's stages: a new paper (its partition added by the new-papers or Zotero sensor) or a
  changed code version (a prompt, a model, a chunk setting) requests the partitions
  concerned, and everything downstream of them in the same tick, once nothing they read is
  missing or in progress (a stage built again otherwise is followed by whoever built it). The
  daemon's first evaluation requests every partition missing then (papers registered before
  it, a home `litpipe run` left half built).
- A collection's stages: the same, a paper that failed (missing) not holding them back: the
  collection leaves it out, as `litpipe run` does. Requested in the same tick as its new
  papers, they join their backfill, which builds them once the papers are.
- The nightly digest: yesterday's partition (UTC days) at 02:00 UTC, as its schedule did.

Request-partitioned assets (`related_work`, `query_summaries`, `collection_answer`: `litpipe
related-work`, `ask`), the evaluations and the vector store's maintenance (its own schedule)
have none: the standing questions of `collection_answer` are the `standing_questions_sensor`'s
(`litpipe.defs.standing_questions` says why).

Dagster's conditions know partitions, not a collection's members: every collection's
`AllPartitionMapping` dependency on the papers sees any paper's update, so a night's papers
rebuild every collection once; the LLM cache answers its unchanged calls.
"""

from __future__ import annotations

import dagster as dg

from litpipe.defs.jobs import RUN_TAGS, collection_pipeline, nightly_digest_job, paper_pipeline
from litpipe.defs.partitions import collections, nightly, papers

AUTOMATION_SENSOR = "automation_condition_sensor"
# When the digest of the day that just ended is built: 02:00 rather than midnight leaves the
# papers that arrived late in the day time to be ingested and answered; one still running is
# listed in the digest as not yet analysed.
NIGHTLY_DIGEST_CRON = "0 2 * * *"
# The assets with a condition: every per-paper and per-collection stage, and the digest.
AUTOMATED = paper_pipeline.selection | collection_pipeline.selection | nightly_digest_job.selection


def _changed(upstream: dg.AutomationCondition) -> dg.AutomationCondition:
    """A partition added, `upstream` (what of its dependencies starts it), the code version
    changed: true from then until the partition is requested or built. On the condition's
    first evaluation, every partition missing then."""
    # Dagster types `code_version_changed` for assets only and `since_last_handled` for assets
    # or checks (its type parameter is invariant): the trigger is typed as any condition.
    trigger: dg.AutomationCondition = (
        dg.AutomationCondition.newly_missing()
        | upstream
        | dg.AutomationCondition.code_version_changed()
    )
    # The first evaluation counts as handled (`since_last_handled` resets on
    # `initial_evaluation`), and a partition missing then never becomes newly missing: the
    # papers the new-papers sensor registers before the automation sensor's first tick (the
    # daemon starts both at once, in no fixed order) would never be built.
    already_missing: dg.AutomationCondition = (
        dg.AutomationCondition.missing() & dg.AutomationCondition.initial_evaluation()
    )
    return trigger.since_last_handled() | already_missing


def paper_stage_condition() -> dg.AutomationCondition:
    """`AutomationCondition.eager()`, and a changed code version too (which eager ignores),
    where a stage follows its upstream stages only when those are requested in the same tick.

    Eager's `any_deps_updated` also fires on an upstream stage built by a run the automation
    did not request: the retry of a killed worker's batch (Dagster's run retries) rebuilds
    that batch's stages, and the daemon soak saw the next stages of 7 of its 10 papers
    requested again while it ran (`in_progress` missed the retry), built twice. What else
    builds a paper's stage again asks for the stages after it itself: the new-papers sensor
    (a changed file: every stage of the paper), `litpipe run`, the UI's "materialize
    downstream"."""
    requested_upstream: dg.AutomationCondition = dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.will_be_requested()
    )
    return (
        _changed(requested_upstream)
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("new, code version changed, or upstream requested with it")


def collection_stage_condition() -> dg.AutomationCondition:
    """`paper_stage_condition`, where a missing paper does not hold the collection back: its
    steps leave out a paper that failed, as `litpipe run`'s do. Dagster requests a stage of
    another partitions definition in the same tick, but never in the same run: a new
    collection's stages join the backfill of its new papers, which builds them after those."""
    return (
        _changed(dg.AutomationCondition.any_deps_updated())
        & ~dg.AutomationCondition.any_deps_missing().ignore(paper_pipeline.selection)
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("eager, a paper missing or not, or code version changed")


def nightly_digest_condition() -> dg.AutomationCondition:
    """The latest day (yesterday: the partitions have no end offset) once 02:00 UTC passed."""
    # Typed as any condition, as `_changed`'s trigger is.
    tick: dg.AutomationCondition = dg.AutomationCondition.cron_tick_passed(
        NIGHTLY_DIGEST_CRON, "UTC"
    )
    return (
        dg.AutomationCondition.in_latest_time_window()
        & tick.since_last_handled()
        & ~dg.AutomationCondition.in_progress()
    ).with_label(f"the day that ended, at {NIGHTLY_DIGEST_CRON} UTC")


def with_automation(spec: dg.AssetSpec) -> dg.AssetSpec:
    """The asset's spec with its condition, by its partitions (declared here, for the whole
    graph, rather than in each asset's module): `Definitions.map_asset_specs` maps it."""
    conditions = {
        papers: paper_stage_condition,
        collections: collection_stage_condition,
        nightly: nightly_digest_condition,
    }
    declare = conditions.get(spec.partitions_def) if spec.partitions_def is not None else None
    return spec if declare is None else spec.replace_attributes(automation_condition=declare())


def automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """The sensor of Dagster's daemon that evaluates the conditions, every 30 s. A tick that
    requests several partitions of an asset asks for one backfill (`emit_backfills`), which the
    backfill daemon runs as the assets' `BackfillPolicy` says: runs of up to
    `operations.batch_size` neighbouring papers."""
    return dg.AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=AUTOMATED,
        run_tags=RUN_TAGS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Builds what the assets' automation conditions ask for: new papers and "
        "collections, what is downstream of a stage built again or of changed code, the "
        "nightly digest at 02:00 UTC.",
    )
