"""PostgreSQL event log storage whose pools hold their limits when steps claim slots at once.

dagster-postgres 0.29.27 runs each statement of a slot claim in its own autocommit transaction:
the row lock of `SELECT ... FOR UPDATE SKIP LOCKED` on a free slot ends with that statement, and
the `UPDATE` that takes the slot does not check it is still free, so two workers claiming at the
same moment can both take the last slot (and both count as "unassigned slots left" before either
records its step). Measured against a real server: eight workers claiming a 2-slot pool at once
got more than two slots in 9 rounds of 20, up to six; litpipe_tests/test_postgres.py saw three
model-calling steps at once under a limit of two.

This storage makes every change to pool state (claim, free, assignment of waiting steps, limits)
one at a time across all processes, under a PostgreSQL advisory lock. Claims are rare (one per
step, then one a second or slower while a step waits), so the lock costs nothing measurable.
It also sets a pool to the instance's `default_limit` in one upsert, where Dagster's own code
fails on PostgreSQL once the pool exists (`initialize_concurrency_limit_to_default`).
Use it as `event_log_storage` in dagster.yaml (deploy/dagster.postgres.yaml does).
"""

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as db
import sqlalchemy.pool as db_pool

# Private to Dagster (checked on dagster 1.13.27). Missing public API: a way to extend an event
# log storage: the status a pool claim returns (`claim_concurrency_slot`, overridden here) and
# the config data a storage is built from (`from_config_value`) are not exported.
from dagster._core.storage.event_log.base import ConcurrencyClaimStatus
from dagster._serdes import ConfigurableClassData
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)
from sqlalchemy.dialects import postgresql

# Names litpipe's lock among the database's advisory locks (any fixed 64-bit number does).
POOLS_LOCK_KEY = 0x6C697470_6F6F6C73  # "litpools"
# The pools' limits, the columns of Dagster's table that the upsert writes (its schema module,
# `ConcurrencyLimitsTable`, is not exported; the table is the instance database's).
POOL_LIMITS = db.table(
    "concurrency_limits",
    db.column("concurrency_key", db.Text),
    db.column("limit", db.Integer),
    db.column("using_default_limit", db.Boolean),
)


class PoolSafePostgresEventLogStorage(PostgresEventLogStorage):
    """`PostgresEventLogStorage`, its pool-slot operations serialized by an advisory lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Its own connections: the storage's engine may be a pool of one (the webserver's), and
        # the lock is held while the wrapped operation takes connections of its own.
        self._lock_engine = create_pg_engine(
            self.postgres_url,
            self._token_provider,
            isolation_level="AUTOCOMMIT",
            poolclass=db_pool.NullPool,
        )
        # Freeing a slot assigns waiting steps: the same thread takes the lock once.
        self._held = threading.local()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> "PoolSafePostgresEventLogStorage":
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )

    @contextmanager
    def _pools_locked(self) -> Iterator[None]:
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        # A session-level lock: released by the unlock, or by PostgreSQL when the connection
        # ends, so a worker that dies while holding it blocks no one.
        with self._lock_engine.connect() as connection:
            connection.execute(db.text("SELECT pg_advisory_lock(:key)"), {"key": POOLS_LOCK_KEY})
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0
                connection.execute(
                    db.text("SELECT pg_advisory_unlock(:key)"), {"key": POOLS_LOCK_KEY}
                )

    def claim_concurrency_slot(
        self, concurrency_key: str, run_id: str, step_key: str, priority: int | None = None
    ) -> ConcurrencyClaimStatus:
        with self._pools_locked():
            return super().claim_concurrency_slot(concurrency_key, run_id, step_key, priority)

    def free_concurrency_slot_for_step(self, run_id: str, step_key: str) -> None:
        with self._pools_locked():
            super().free_concurrency_slot_for_step(run_id, step_key)

    def free_concurrency_slots_for_run(self, run_id: str) -> None:
        with self._pools_locked():
            super().free_concurrency_slots_for_run(run_id)

    def assign_pending_steps(self, concurrency_keys: Sequence[str]) -> None:
        with self._pools_locked():
            super().assign_pending_steps(concurrency_keys)

    def set_concurrency_slots(self, concurrency_key: str, num: int) -> None:
        with self._pools_locked():
            super().set_concurrency_slots(concurrency_key, num)

    def delete_concurrency_limit(self, concurrency_key: str) -> None:
        with self._pools_locked():
            super().delete_concurrency_limit(concurrency_key)

    def initialize_concurrency_limit_to_default(self, concurrency_key: str) -> bool:
        """A pool on the instance's `default_limit`: created at it, or brought to it when the
        default changed, in one `INSERT ... ON CONFLICT` statement; a limit set for the pool
        (`dagster instance concurrency set`, `using_default_limit` false) is left as it is.

        Dagster 1.13.27 INSERTs, catches the unique violation and UPDATEs in the same
        transaction; on PostgreSQL the failed INSERT has aborted the transaction, so the UPDATE
        fails (dagster-io/dagster#33552): every step's claim failed once the pool existed and its
        default had changed, and so did the second of two first claims of a new pool.

        The upsert needs no lock of its own (the pool's row lock orders two of them), but the
        slots it then adds or removes must not change under a claim, whose slot-taking UPDATE
        does not check the slot is still free: it stays under the pools' lock.
        """
        with self._pools_locked():
            if not self.has_concurrency_limits_table:
                return False
            self._reconcile_concurrency_limits_from_slots()
            if not self.has_instance or not self.has_default_pool_limit_col:
                # No instance: Dagster returns False; an old schema: no upsert to fix.
                return super().initialize_concurrency_limit_to_default(concurrency_key)
            default_limit = self._instance.global_op_concurrency_default_limit
            if default_limit is None:
                # Dagster deletes the pool's row and slots: no INSERT, no bug.
                return super().initialize_concurrency_limit_to_default(concurrency_key)
            table = POOL_LIMITS
            upsert = postgresql.insert(table).values(
                concurrency_key=concurrency_key, limit=default_limit, using_default_limit=True
            )
            upsert = upsert.on_conflict_do_update(
                index_elements=["concurrency_key"],
                set_={"limit": upsert.excluded["limit"]},
                where=db.and_(
                    table.c.using_default_limit, table.c.limit != upsert.excluded["limit"]
                ),
            )
            with self.index_transaction() as conn:
                conn.execute(upsert)
                # The row is locked by this transaction now, inserted, updated or left as set.
                limit = conn.execute(
                    db.select(table.c.limit).where(table.c.concurrency_key == concurrency_key)
                ).scalar_one()
                keys_to_assign = self._allocate_concurrency_slots(conn, concurrency_key, limit)
            if keys_to_assign:
                # New slots go to steps already waiting, as `set_concurrency_slots` does.
                self.assign_pending_steps(keys_to_assign)
            return True
