"""The Zotero sync: a sensor that registers the items added to (or edited in) a Zotero library
since its last tick and requests their ingestion, as the new-paper sensor does for files.

Each tick lists the watched collections' items from the database alone (`list_zotero`: no
PDF is read) and compares each item's fingerprint (its fields, its PDFs' size and mtime) with
the one its cursor holds; only the items whose fingerprint changed are hashed and registered,
`operations.sensor_batch_size` of them at most, so that a 2,000-item library costs a tick a
query and a few thousand `stat` calls, well within a sensor's 60 s.

The sensor is evaluated every minute, but syncs once every `zotero.sync_interval_s` (nightly by
default) unless items wait from the last sync (a first sync of a large library, more items than
a batch): then it goes on every minute until none does, so that a backlog takes minutes, not
a night per batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg

from litpipe.catalog import Registration
from litpipe.defs.jobs import paper_pipeline
from litpipe.defs.resources import CatalogResource
from litpipe.defs.sensors import register_sources, registered_result
from litpipe.ingest.library import LibraryEntry
from litpipe.ingest.zotero import LIBRARY_COLLECTION, ZoteroListing, list_zotero
from litpipe.schemas import PaperSource
from litpipe.settings import OperationsSettings, ZoteroSettings

# The cursor's key for the whole library (a watched collection's is its name as configured).
WHOLE_LIBRARY = ""
# How often the sensor is evaluated: a tick between two syncs only reads its cursor.
TICK_S = 60


@dataclass
class _Pending:
    watched: str
    entry: LibraryEntry
    fingerprint: str


def build_zotero_sync_sensor(
    zotero: ZoteroSettings, operations: OperationsSettings
) -> dg.SensorDefinition:
    """The sensor for the `zotero` settings; its `data_dir` must be set."""
    if zotero.data_dir is None:
        raise ValueError("zotero.data_dir is not set: there is no library to sync")
    data_dir = zotero.data_dir
    watched = list(zotero.collections) or [WHOLE_LIBRARY]
    what = (
        f"the Zotero collection{'s' if len(watched) > 1 else ''} "
        f"{', '.join(repr(name) for name in watched)}"
        if zotero.collections
        else f"the whole Zotero library (into the collection `{LIBRARY_COLLECTION}`)"
    )

    @dg.sensor(
        name="zotero_sync_sensor",
        asset_selection=paper_pipeline.selection,
        minimum_interval_seconds=TICK_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Every {zotero.sync_interval_s:,} s (zotero.sync_interval_s; default "
        f"nightly), registers the items added to or edited in {what} of {data_dir} since the "
        "last sync and requests their ingestion, every minute while items wait from the last "
        "one; a new paper's registration is its arrival, which puts it in that day's nightly "
        "digest.",
    )
    def zotero_sync_sensor(
        context: dg.SensorEvaluationContext, catalog: CatalogResource
    ) -> dg.SensorResult | dg.SkipReason:
        # When it last synced, how many items that sync left waiting, and per watched
        # collection each handled item's fingerprint, by its Zotero key.
        state = json.loads(context.cursor) if context.cursor else {}
        seen: dict[str, dict[str, str]] = state.get("items", {})
        due = state.get("synced_at", 0.0) + zotero.sync_interval_s
        if not state.get("waiting") and time.time() < due:
            return dg.SkipReason(f"next Zotero sync in {round(due - time.time()):,} s")
        listings: dict[str, ZoteroListing] = {}
        problems: list[str] = []
        for name in watched:
            try:
                listings[name] = list_zotero(data_dir, zotero_collection=name or None)
            except (ValueError, OSError) as error:
                problems.append(" ".join(str(error).split()) or type(error).__name__)
        if not listings:  # the library cannot be read: try again next sync, from the same place
            return dg.SkipReason(f"Zotero library not read: {'; '.join(dict.fromkeys(problems))}")
        for problem in problems:
            context.log.warning(f"Zotero collection not read, kept for the next tick: {problem}")

        pending = [
            _Pending(name, entry, fingerprint)
            for name, listing in listings.items()
            for entry in listing.entries
            if seen.get(name, {}).get(entry.key) != (fingerprint := entry.fingerprint())
        ]
        batch = pending[: operations.sensor_batch_size]
        papers_catalog = catalog.catalog()
        registered: list[tuple[PaperSource, Registration]] = []
        registered_collections: set[str] = set()
        for name, listing in listings.items():
            entries = [item.entry for item in batch if item.watched == name]
            if not entries:
                continue
            discovery = listing.discovery(entries)
            for failure in discovery.failed:
                context.log.warning(failure.reason)
            for note in discovery.notes:
                context.log.info(note)
            registered += register_sources(papers_catalog, discovery.sources, listing.collection)
            if discovery.sources:
                registered_collections.add(listing.collection)
        if len(pending) > len(batch):
            context.log.info(
                f"{len(pending) - len(batch)} more Zotero items wait for the next tick "
                f"(operations.sensor_batch_size: {operations.sensor_batch_size})"
            )
        items = dict(_next_cursor(seen, listings, batch))
        # A watched collection not read this tick keeps its place.
        items.update(
            (name, seen[name]) for name in watched if name not in listings and name in seen
        )
        cursor = {"synced_at": time.time(), "waiting": len(pending) - len(batch), "items": items}
        return registered_result(context, registered, registered_collections, json.dumps(cursor))

    return zotero_sync_sensor


def _next_cursor(
    seen: dict[str, dict[str, str]], listings: dict[str, ZoteroListing], batch: list[_Pending]
) -> Iterator[tuple[str, dict[str, str]]]:
    """Each listed item's fingerprint as handled: the batch's new ones, the others' as they
    were (a changed item left for a later tick keeps its old one, so it is still pending); an
    item no longer listed is forgotten, and registered again should it come back."""
    handled = {(item.watched, item.entry.key): item.fingerprint for item in batch}
    for name, listing in listings.items():
        before = seen.get(name, {})
        now: dict[str, str] = {}
        for entry in listing.entries:
            fingerprint = handled.get((name, entry.key), before.get(entry.key))
            if fingerprint is not None:
                now[entry.key] = fingerprint
        yield name, now
