"""Which asset partitions are missing or stale, read from the instance's materialization tags.

The same rule Dagster's UI applies: a partition is stale when its code version changed since it
was materialized, when an upstream partition now has another data version than the one it was
built from, or when an upstream partition is itself stale or missing. And one Dagster has no
notion of: a partition some of whose items the offline engine wrote in its model's place (the
reply was unusable, the server down) is stale for that model, so the next run asks them again;
their valid replies are cached, so only the fallen-back items cost a call. An offline route has
another code version: it rebuilds, or leaves alone, by the rules above.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, NamedTuple

import dagster as dg

# The root of a paper's assets: its data version, the first 16 hex digits of the content's
# sha256, tells whether a paper's current content was ever built.
PAPER_SOURCE = dg.AssetKey("paper_source")
# Dagster records one data version for all the partitions of a run over several (a batch of
# papers): each partition's own is kept in this metadata entry, and read before the tag.
PARTITION_VERSION = "data_version"
_CODE_VERSION_TAG = "dagster/code_version"
_DATA_VERSION_TAG = "dagster/data_version"
_INPUT_DATA_VERSION_TAG = "dagster/input_data_version/"
_INPUT_EVENT_POINTER_TAG = "dagster/input_event_pointer/"
# A collection asset's metadata entry: the fingerprint of the papers it read (the catalog's
# members, without those retracted), which `changed_elsewhere` compares with the papers it would
# read now. The papers read can only say which of them changed, not that one is gone.
MEMBERS = "members_fingerprint"
# The metadata entry counting a step's (or a paper's) items written offline in the model's
# place (`llm_steps.usage_metadata` of `LLMUsage.fallbacks`).
FALLBACKS = "llm_fallbacks"


def members_fingerprint(paper_ids: list[str]) -> str:
    """The fingerprint of a set of papers, as `MEMBERS` records it."""
    return hashlib.sha256("\n".join(sorted(paper_ids)).encode()).hexdigest()[:16]


class State(StrEnum):
    FRESH = "fresh"
    MISSING = "missing"
    CODE_CHANGED = "stale: code changed"
    UPSTREAM_CHANGED = "stale: upstream changed"
    FELL_BACK = "stale: written offline in the model's place"


def partition_states(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    keys: list[dg.AssetKey],
    partitions: list[str],
    fallbacks_before: int | None = None,
) -> dict[dg.AssetKey, dict[str, State]]:
    """States of same-partitioned assets, `keys` in topological order (upstream first). With
    `fallbacks_before` (a storage id), only the materializations up to it are stale for their
    fallbacks: a command that rebuilt one with fallbacks again does not ask them a third time."""
    graph = defs.resolve_asset_graph()
    records = {key: _latest_records(instance, key, partitions) for key in keys}
    states: dict[dg.AssetKey, dict[str, State]] = {}
    for key in keys:
        code = graph.get(key).code_version
        upstream = [parent for parent in graph.get(key).parent_keys if parent in states]
        states[key] = {}
        for partition in partitions:
            own = records[key].get(partition)
            if own is None:
                state = State.MISSING
            elif own.tags.get(_CODE_VERSION_TAG) != code:
                state = State.CODE_CHANGED
            elif fallbacks(own.metadata) and (
                fallbacks_before is None or own.storage_id <= fallbacks_before
            ):
                state = State.FELL_BACK
            elif any(states[parent][partition] is not State.FRESH for parent in upstream) or any(
                _input_changed(instance, own, parent, partition, records[parent].get(partition))
                for parent in upstream
            ):
                state = State.UPSTREAM_CHANGED
            else:
                state = State.FRESH
            states[key][partition] = state
    return states


def changed_elsewhere(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    keys: list[dg.AssetKey],
    partition: str,
    read: Callable[[dg.AssetKey], list[str]],
) -> set[dg.AssetKey]:
    """Those of `keys` (same-partitioned assets, built for `partition`) whose input from another
    partitions definition changed since they last read it: one of the partitions `read(parent)`
    says they read of it (a collection's papers, a paper's collection) was materialized after
    that read with another data version than it had then, or they read other partitions than
    those now (`MEMBERS`: a paper retracted or gone). `partition_states` compares only
    same-partition inputs: an `AllPartitionMapping` input's recorded data version covers every
    partition, the collection's papers and all others. A partition never materialized was not
    read and has nothing new: it changes nothing."""
    graph = defs.resolve_asset_graph()
    changed: set[dg.AssetKey] = set()
    for key in keys:
        partitions_def = graph.get(key).partitions_def
        parents = [
            parent
            for parent in graph.get(key).parent_keys
            if graph.get(parent).partitions_def not in (None, partitions_def)
        ]
        own = _latest_records(instance, key, [partition]).get(partition) if parents else None
        if own is None:
            continue  # no such input, or missing: built anyway
        for parent in parents:
            partitions = read(parent)
            recorded = own.metadata.get(MEMBERS)
            # Recorded by assets built since it was (older ones say nothing of it).
            if recorded is not None and str(recorded.value) != members_fingerprint(partitions):
                changed.add(key)
                break
            latest = _latest_records(instance, parent, partitions)
            if any(
                _input_changed(instance, own, parent, name, record)
                for name, record in latest.items()
            ):
                changed.add(key)
                break
    return changed


def build_next(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    keys: list[dg.AssetKey],
    partition: str,
    read: Callable[[dg.AssetKey], list[str]],
    pending: set[dg.AssetKey] | None = None,
    within: list[dg.AssetKey] | None = None,
    fallbacks_before: int | None = None,
) -> list[dg.AssetKey]:
    """The next level to materialize of the partition's `keys` (`next_to_build`), read from the
    instance now: their states (among `within`, default `keys`; `fallbacks_before` as
    `partition_states` takes it), the ones whose input from another partition changed
    (`changed_elsewhere`, `read` naming what they read of it) and `pending`, the ones the
    caller wants built anyway."""
    return build_next_each(
        instance,
        defs,
        keys,
        [partition],
        lambda _: read,
        pending or set(),
        within,
        fallbacks_before,
    )[partition]


def build_next_each(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    keys: list[dg.AssetKey],
    partitions: list[str],
    read_for: Callable[[str], Callable[[dg.AssetKey], list[str]]],
    pending: set[dg.AssetKey] | None = None,
    within: list[dg.AssetKey] | None = None,
    fallbacks_before: int | None = None,
) -> dict[str, list[dg.AssetKey]]:
    """`build_next` for each of `partitions`, their states read from the instance at once."""
    states = partition_states(instance, defs, within or keys, partitions, fallbacks_before)
    return {
        partition: next_to_build(
            defs,
            keys,
            states,
            partition,
            changed_elsewhere(instance, defs, keys, partition, read_for(partition))
            | (pending or set()),
        )
        for partition in partitions
    }


def next_to_build(
    defs: dg.Definitions,
    keys: list[dg.AssetKey],
    states: dict[dg.AssetKey, dict[str, State]],
    partition: str,
    pending: set[dg.AssetKey],
) -> list[dg.AssetKey]:
    """What to materialize now of the partition's `keys` (topological order) so that nothing is
    built while its inputs are unsettled: the stale or `pending` ones (an input from another
    partition changed) none of whose stale ancestors is left out. An asset stale only because
    an ancestor is waits for that ancestor to run, and then runs only if what it reads came
    back changed. Empty: the partition is up to date."""
    stale = [key for key in keys if states[key][partition] is not State.FRESH or key in pending]
    todo: list[dg.AssetKey] = []
    for key in stale:
        must = (
            not todo
            or key in pending
            or states[key][partition] in (State.CODE_CHANGED, State.MISSING, State.FELL_BACK)
        )
        waits = [a for a in ancestors(defs, key, keys) if a in stale and a not in todo]
        if must and not waits:
            todo.append(key)
    return todo


def ancestors(
    defs: dg.Definitions, key: dg.AssetKey, within: list[dg.AssetKey]
) -> set[dg.AssetKey]:
    """`key`'s ancestors among `within`."""
    graph = defs.resolve_asset_graph()
    found: set[dg.AssetKey] = set()
    frontier = [key]
    while frontier:
        for parent in graph.get(frontier.pop()).parent_keys:
            if parent in within and parent not in found:
                found.add(parent)
                frontier.append(parent)
    return found


def latest_storage_id(instance: dg.DagsterInstance) -> int:
    """The instance's latest event: what a command that loops over `build_next` passes as
    `fallbacks_before`, read when it starts."""
    return instance.event_log_storage.get_maximum_record_id() or 0


def fallback_counts(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: list[str]
) -> dict[str, int]:
    """Per partition of `key` whose latest materialization has any, its items written offline
    in the model's place."""
    counted = {
        partition: fallbacks(record.metadata)
        for partition, record in _latest_records(instance, key, partitions).items()
    }
    return {partition: count for partition, count in counted.items() if count}


def fallbacks(metadata: Mapping[str, Any]) -> int:
    """How many items of a materialization the offline engine wrote in its model's place."""
    entry = metadata.get(FALLBACKS)
    value = getattr(entry, "value", entry)
    return value if isinstance(value, int) else 0


class _Record(NamedTuple):
    storage_id: int
    tags: dict[str, str]
    metadata: dict[str, Any]


def _input_changed(
    instance: dg.DagsterInstance,
    own: _Record,
    parent: dg.AssetKey,
    partition: str,
    parent_record: _Record | None,
) -> bool:
    recorded = own.tags.get(_INPUT_DATA_VERSION_TAG + parent.to_user_string())
    current = parent_record.tags.get(_DATA_VERSION_TAG) if parent_record else None
    if recorded is None or current is None or parent_record is None:
        return True
    # For a partitioned input Dagster records the sha256 of the partition's data version.
    if recorded in (current, hashlib.sha256(current.encode()).hexdigest()):
        return False
    # A run over several partitions (a backfill's batch), or an input of all partitions, records
    # one hash over all of them: then, as Dagster's own stale status does, the input counts as
    # changed only when the upstream partition was materialized after the run read it (the
    # event pointer) and came back with another data version than it had then.
    pointer = own.tags.get(_INPUT_EVENT_POINTER_TAG + parent.to_user_string(), "")
    if not pointer.isdigit():
        return True
    if parent_record.storage_id <= int(pointer):
        return False
    then = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=parent, asset_partitions=[partition], before_storage_id=int(pointer) + 1
        ),
        limit=1,
    ).records
    materialization = then[0].asset_materialization if then else None
    if materialization is None:
        return True
    read = _partition_version(materialization.tags or {}, materialization.metadata or {})
    return read != _partition_version(parent_record.tags, parent_record.metadata)


def _partition_version(tags: Mapping[str, str], metadata: Mapping[str, Any]) -> str | None:
    """A partition's own data version: its `PARTITION_VERSION` entry, else its tag."""
    entry = metadata.get(PARTITION_VERSION)
    return str(entry.value) if entry is not None else tags.get(_DATA_VERSION_TAG)


def latest_materialization_tags(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: list[str]
) -> dict[str, dict[str, str]]:
    return {
        partition: record.tags
        for partition, record in _latest_records(instance, key, partitions).items()
    }


def partition_versions(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: list[str]
) -> dict[str, str]:
    """Each of `partitions`' own data version (a batch's partition its own, not the batch's),
    as `key`'s latest materialization of it recorded; a partition never built is absent."""
    versions = {}
    for partition, record in _latest_records(instance, key, partitions).items():
        version = _partition_version(record.tags, record.metadata)
        if version is not None:
            versions[partition] = version
    return versions


def built_contents(instance: dg.DagsterInstance, paper_ids: list[str]) -> dict[str, str]:
    """Each paper's content as `paper_source` last built it (its own data version); a paper
    never built is absent."""
    contents = {}
    for paper_id, record in _latest_records(instance, PAPER_SOURCE, paper_ids).items():
        content = _partition_version(record.tags, record.metadata)
        if content is not None:
            contents[paper_id] = content
    return contents


def _latest_records(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitions: list[str]
) -> dict[str, _Record]:
    # Dagster reads an empty set of partitions as no filter: every partition's record. A batch
    # of new papers asks for none, and got the whole home's, once per asset and batch.
    if not partitions:
        return {}
    storage_ids = instance.get_latest_storage_id_by_partition(
        key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(partitions)
    )
    if not storage_ids:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, storage_ids=list(storage_ids.values())),
        limit=len(storage_ids),
    ).records
    return {
        record.partition_key: _Record(
            record.storage_id,
            dict(record.asset_materialization.tags or {}),
            dict(record.asset_materialization.metadata or {}),
        )
        for record in records
        if record.partition_key is not None and record.asset_materialization is not None
    }
