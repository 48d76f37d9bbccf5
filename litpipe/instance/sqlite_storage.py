"""SQLite event log storage that writes a batch of asset events in one transaction per shard, and
keeps one engine per shard instead of one per query.

A run over a batch of papers materializes each per-paper asset for every paper: per asset, one
`ASSET_MATERIALIZATION_PLANNED` and one `ASSET_MATERIALIZATION` event per paper. Dagster's SQLite
storage writes each event on its own: an engine, a connection and a committed transaction in the
run's shard, then the same again in the index shard. Measured on this project's 2-core machine,
that was about 45 ms an event: 16 events a paper, most of `litpipe run`'s time on an abstract
table. Dagster hands a storage the events of one step's batch together when
`DAGSTER_EVENT_BATCH_SIZE` is set (`EVENT_BATCH_SIZE`, which litpipe sets for its processes);
this storage then writes them in one transaction per shard, as dagster-postgres' storage does
for materializations. Every row, tag and asset entry written is the one the per-event path
writes.

Dagster's storage also builds a new SQLAlchemy engine for every query (and for every check that
a table exists), so no statement's compiled form outlives its query. A one-PDF `litpipe run`
made 1,312 of them; in the test suite, building engines and compiling statements was about a
third of the time spent in Dagster's storage. Engines here are kept, per shard, and so are their
connections (`KEPT_CONNECTIONS` each): opening a SQLite file, reading its schema and closing it
again for every query was 2,230 connections in a three-run test, about a tenth of its time. An
idle connection holds no lock (a transaction ends with its query), so processes share the
files as before; Dagster starts its step and run processes by spawning, never by forking a
process holding them.

litpipe's own dagster.yaml (`runtime.instance`) names it as the `event_log_storage`, over the
same folder as Dagster's default SQLite storage.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import dagster as dg

# Private to Dagster (checked on dagster 1.13.27). Missing public API: a way to extend an event
# log storage (its docs name `SqliteEventLogStorage` in dagster.yaml, but export neither it nor
# the config data a storage is built from, which `from_config_value` takes, nor the names and
# busy timeout its shards are opened with).
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

# The events Dagster writes to its asset tables too (its `ASSET_EVENTS`, which it does not
# export): the ones a step's batch is made of.
ASSET_EVENT_TYPES = frozenset(
    {
        dg.DagsterEventType.ASSET_MATERIALIZATION,
        dg.DagsterEventType.ASSET_OBSERVATION,
        dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
        dg.DagsterEventType.ASSET_FAILED_TO_MATERIALIZE,
        dg.DagsterEventType.FRESHNESS_STATE_CHANGE,
    }
)

# Events Dagster buffers before it hands them to `store_event_batch` (a batch ends sooner with
# its step's last asset event). SQLite takes this many rows in a transaction easily.
EVENT_BATCH_SIZE = "1000"
# Engines kept at most: the index shard's, and the latest runs' (a run's shard is read while it
# runs and seldom after), so a long-lived process (the daemon, the UI) does not keep one per run.
KEPT_ENGINES = 16
# Idle connections an engine keeps; a query beyond them (a thread's while another's runs) opens
# one of its own and closes it after.
KEPT_CONNECTIONS = 1


def enable_event_batches() -> None:
    """Lets Dagster hand a step's asset events to the storage together, in this process and the
    processes it starts, unless the environment says otherwise."""
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)


class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    """`SqliteEventLogStorage` whose `store_event_batch` writes asset events together, and whose
    queries reuse their shard's engine."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        # Not the parent's `_db_lock`: that one is held for a whole query, and a query may ask
        # whether a table exists (as storing asset event tags does).
        self._engines_lock = threading.Lock()
        self._tables: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(  # type: ignore[override]  # narrowed as in SqliteEventLogStorage
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> BatchingSqliteEventLogStorage:
        # The parent's builds a `SqliteEventLogStorage`, not this class.
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> Engine:
        """The shard's engine, built on its first query; the least recently used beyond
        `KEPT_ENGINES` is let go, its connections closed."""
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = create_engine(
                    self.conn_string_for_shard(shard),
                    poolclass=QueuePool,
                    pool_size=KEPT_CONNECTIONS,
                    max_overflow=-1,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
                )
            self._engines[shard] = engine
            while len(self._engines) > KEPT_ENGINES:
                self._engines.popitem(last=False)[1].dispose()
            return engine

    def _close_connections(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        # Its run shards' files are deleted: a kept connection would write to the deleted one.
        self._close_connections()
        super().wipe()

    def dispose(self) -> None:
        self._close_connections()
        super().dispose()

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        # The parent's, with the shard's kept engine in place of a new one.
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        # Asked before every dynamic-partition query. A table, once there, stays: only a
        # missing one is looked up again.
        if table_name not in self._tables:
            engine = self._engine(INDEX_SHARD_NAME)
            with engine.connect() as conn:
                if engine.dialect.has_table(conn, table_name):
                    self._tables.add(table_name)
        return table_name in self._tables

    def store_event_batch(self, events: Sequence[dg.EventLogEntry]) -> None:
        if not events or not all(
            event.is_dagster_event and event.dagster_event_type in ASSET_EVENT_TYPES
            for event in events
        ):
            super().store_event_batch(events)
            return
        by_run: dict[str, list[dg.EventLogEntry]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        for run_id, run_events in by_run.items():
            with self.run_connection(run_id) as conn:
                for event in run_events:
                    conn.execute(self.prepare_insert_event(event))
        with self.index_transaction() as conn:
            event_ids = [self._insert(conn, event) for event in events]
            self._store_asset_event_tags(conn, events, event_ids)
            # The asset's entry holds its latest event: each asset's last one of the batch.
            last: dict[str, tuple[dg.EventLogEntry, int]] = {}
            for event, event_id in zip(events, event_ids, strict=True):
                last[str(event.get_dagster_event().asset_key)] = (event, event_id)
            for event, event_id in last.values():
                self._store_asset_event(conn, event, event_id)

    def _insert(self, conn: Connection, event: dg.EventLogEntry) -> int:
        inserted = conn.execute(self.prepare_insert_event(event)).inserted_primary_key
        if inserted is None or inserted[0] is None:
            raise dg.DagsterInvariantViolationError(
                "Cannot store asset event tags for null event id."
            )
        return int(inserted[0])
