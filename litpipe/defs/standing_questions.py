"""The night's re-answering of standing questions: the `standing_questions_sensor` asks for a
`collection_answer` run of each standing question (`litpipe.workflows.standing_questions`)
whose collection changed since its latest answer (a paper added, retracted or re-ingested:
`collection_versions`), or that was never answered, and of no other.

A sensor rather than an automation condition on `collection_answer`: Dagster's conditions
know partitions, not a collection's members nor which requests are standing. The asset's
`AllPartitionMapping` dependency on the papers sees every paper's update, so a condition would
ask every question of every collection (a one-off `litpipe ask` among them) again for any
paper's change. The sensor applies the rule `litpipe ask` applies (the collection's papers and
the data versions of their chunks and embeddings, recorded on each materialization) to the
standing questions only: an unchanged collection's questions are not run at all.

A run's key names the collection's state (`<key>@<collection_versions>`), so a collection is
answered once per state: while a night's papers are still being built, a tick every
STANDING_TICK_SECONDS may answer an intermediate state, and the last tick of the night the
final one; each is a version of the answer's history, and the digest shows the day's change
from the version kept before the day to the one kept at its end.
"""

from __future__ import annotations

import dagster as dg

from litpipe.catalog import Catalog
from litpipe.defs.assets.collection_answer import (
    ASSET,
    collection_versions,
    recorded_collection_versions,
)
from litpipe.defs.jobs import RUN_TAGS, collection_answer_job
from litpipe.defs.partitions import collection_questions
from litpipe.defs.resources import CatalogResource
from litpipe.defs.stored_requests import request_store
from litpipe.schemas.standing_questions import StandingQuestion
from litpipe.settings import HomePaths
from litpipe.workflows.standing_questions import registered

STANDING_SENSOR = "standing_questions_sensor"
# Collections change when papers arrive (the new-papers sensor ticks every minute): every ten
# minutes bounds the intermediate versions a night of arrivals leaves.
STANDING_TICK_SECONDS = 600


def changed_questions(
    instance: dg.DagsterInstance, catalog: Catalog, questions: list[StandingQuestion]
) -> dict[str, str]:
    """Of `questions`, the keys of those whose collection changed since their latest answer
    (or never answered), each with its collection's versions now; a question of an unknown
    or empty collection is left for when it has papers."""
    known = set(catalog.collections())
    now: dict[str, str] = {}
    changed = {}
    for question in questions:
        collection = question.request.collection
        if collection not in known:
            continue
        if collection not in now:
            members = catalog.papers(collection)
            now[collection] = collection_versions(instance, members) if members else ""
        if (
            now[collection]
            and recorded_collection_versions(instance, question.key) != now[collection]
        ):
            changed[question.key] = now[collection]
    return changed


def build_standing_questions_sensor(paths: HomePaths) -> dg.SensorDefinition:
    @dg.sensor(
        name=STANDING_SENSOR,
        job=collection_answer_job,
        minimum_interval_seconds=STANDING_TICK_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Answers again each standing question (`litpipe ask --watch`, "
        "[[questions]] of litpipe.toml) whose collection changed since its latest answer: a "
        "paper added, retracted or re-ingested; the questions of an unchanged collection are "
        "not run.",
    )
    def standing_questions_sensor(
        context: dg.SensorEvaluationContext, catalog: CatalogResource
    ) -> dg.SensorResult:
        questions = {question.key: question for question in registered(paths.home)}
        changed = changed_questions(context.instance, catalog.catalog(), list(questions.values()))
        store = request_store(paths)
        for key in changed:
            # The step reads its request from the store, as `litpipe ask` leaves it.
            if not store.exists([ASSET], key):
                store.write([ASSET], key, questions[key].request)
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(run_key=f"{key}@{versions}", partition_key=key, tags=RUN_TAGS)
                for key, versions in changed.items()
            ],
            dynamic_partitions_requests=[collection_questions.build_add_request(sorted(changed))]
            if changed
            else [],
        )

    return standing_questions_sensor
