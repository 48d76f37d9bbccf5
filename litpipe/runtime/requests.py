"""Submitting a user request (`litpipe ask`'s paper and query or collection and question,
`litpipe related-work`'s idea and table) as a partition of its own: the one path they take."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.defs.llm_steps import USAGE_SCOPE_TAG
from litpipe.defs.partitions import COLLECTION_QUESTIONS, QUERY_REQUESTS, RELATED_WORK_REQUESTS
from litpipe.defs.staleness import State, partition_states
from litpipe.runtime.execution import execute


@dataclass
class Submission:
    """What `submit_request` did: `result` is None when the request was fresh (no run)."""

    asset: str
    key: str
    partitions: str
    new_record: bool
    new_partition: bool
    result: dg.ExecuteInProcessResult | None
    seconds: float

    def withdraw(self, instance: dg.DagsterInstance, store: ArtifactStore) -> None:
        """Undoes what this submission added (its partition, its stored request), as if the
        request had been refused before anything was written; a run stays in the instance."""
        if self.new_partition:
            instance.delete_dynamic_partition(self.partitions, self.key)
        if self.new_record:
            store.path([self.asset], self.key).unlink(missing_ok=True)


def submit_request(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    *,
    job: str,
    partitions: str,
    asset: str,
    request: BaseModel,
    key: str,
    store: ArtifactStore,
    fresh: Callable[[], bool],
    scope: str,
    rewrite: bool = False,
    asset_selection: list[dg.AssetKey] | None = None,
) -> Submission:
    """Stores `request` under `key` (the partition's input, so written before the partition
    exists; again when `rewrite`, else only when missing), adds the `partitions` key, and runs
    `job` for it unless `fresh()` says its latest output stands (same code version, same
    inputs): then no run and no model call."""
    new_record = not store.exists([asset], key)
    if new_record or rewrite:
        store.write([asset], key, request)
    new_partition = not instance.has_dynamic_partition(partitions, key)
    if new_partition:
        instance.add_dynamic_partitions(partitions, [key])
    submission = Submission(asset, key, partitions, new_record, new_partition, None, 0.0)
    if fresh():
        return submission
    started = time.perf_counter()
    submission.result = execute(
        defs,
        instance,
        job,
        partition_key=key,
        asset_selection=asset_selection,
        tags={USAGE_SCOPE_TAG: scope},
    )
    submission.seconds = round(time.perf_counter() - started, 3)
    return submission


def request_states(
    instance: dg.DagsterInstance, defs: dg.Definitions, asset: str, keys: list[str]
) -> dict[str, State]:
    """The state of each of `keys` in the request-partitioned `asset` (by code version:
    `litpipe ask` also compares the data versions of the paper it summarizes)."""
    asset_key = dg.AssetKey(asset)
    return partition_states(instance, defs, [asset_key], keys)[asset_key]


def every_request_state(
    instance: dg.DagsterInstance, defs: dg.Definitions
) -> dict[str, dict[str, State]]:
    """Per request-partitioned asset with requests, each request's state (`request_states`)."""
    found: dict[str, dict[str, State]] = {}
    for asset, partitions in (
        ("query_summary", QUERY_REQUESTS),
        ("related_work", RELATED_WORK_REQUESTS),
        ("collection_answer", COLLECTION_QUESTIONS),
    ):
        keys = instance.get_dynamic_partitions(partitions)
        if keys:
            found[asset] = request_states(instance, defs, asset, list(keys))
    return found
