"""Limits on model calls shared by every process that makes them: requests and tokens per
minute per provider (`llm.rate_limits`), and the spend of a day's runs together
(`llm.nightly_budget_usd`).

Both are counted in one database, which the caller names (`limits_database`): the Dagster
instance's PostgreSQL where it is on PostgreSQL (every machine of a deployment shares it; the
layers that know the instance pass its URL down), else a SQLite file under the home
(`HomePaths.model_limits_path`), shared by the processes of one machine through
`BEGIN IMMEDIATE` transactions. SQLite's locking is not safe on NFS: a home shared by several
machines needs the instance on PostgreSQL. With neither setting, no database is opened.

Rate limits are a sliding window: a request is sent once it fits, with every request reserved
in the last `WINDOW_S` seconds, within its provider's requests and tokens per minute. Its
reservation (one request; its prompt tokens and max_tokens) is written in the same transaction
that counted the window, under a lock per provider, so two processes never both take the last
place; a request that does not fit waits, holding no transaction, until enough of the window's
oldest reservations age out. Once its reply says what it used, the reservation holds that.
The clock is the database's on PostgreSQL (machines' clocks may differ), this machine's on
SQLite.

The nightly budget: each request is admitted only if the day's settled spend, plus what
requests in flight may still cost (their estimates), plus its own estimate stays within the
budget; a refused request raises `NightlyBudgetExceededError` (a `BudgetExceededError`: what
happens when a run's own budget is spent happens) and is counted, with the moment the budget
was first found spent, for the nightly digest (`nightly_budget_spent`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from litpipe.llm.errors import NightlyBudgetExceededError
from litpipe.schemas import NightlyBudgetSpent
from litpipe.settings import RateLimit

logger = logging.getLogger(__name__)

# The rate limits' window: a minute (tests shorten it).
WINDOW_S = 60.0
# This machine's clock, which SQLite's counts go by (tests set it to another day).
_clock = time.time
# A nightly-budget estimate still unsettled after this long belongs to a process that died
# mid-call: it no longer counts.
STALE_S = 3600.0
# The reservations and spend kept: older rows are deleted as new ones are written.
KEEP_DAYS = 40

_SQLITE_TABLES = (
    "CREATE TABLE IF NOT EXISTS litpipe_rate_reservations (id INTEGER PRIMARY KEY, "
    "provider TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS litpipe_model_spend (id INTEGER PRIMARY KEY, day TEXT NOT NULL, "
    "at DOUBLE PRECISION NOT NULL, usd DOUBLE PRECISION NOT NULL, settled INTEGER NOT NULL)",
)
_POSTGRES_TABLES = tuple(
    table.replace("id INTEGER PRIMARY KEY", "id BIGSERIAL PRIMARY KEY") for table in _SQLITE_TABLES
)
_COMMON_TABLES = (
    "CREATE INDEX IF NOT EXISTS litpipe_rate_reservations_window "
    "ON litpipe_rate_reservations (provider, at)",
    "CREATE INDEX IF NOT EXISTS litpipe_model_spend_day ON litpipe_model_spend (day)",
    "CREATE TABLE IF NOT EXISTS litpipe_nightly_budget (day TEXT PRIMARY KEY, "
    "budget_usd DOUBLE PRECISION NOT NULL, spent_at DOUBLE PRECISION NOT NULL, "
    "refused BIGINT NOT NULL)",
)


class LimitsDatabase:
    """One database's counts, from any thread of this process: one connection, one
    transaction at a time, each exclusive (across processes) for its key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: Any = None

    @contextmanager
    def transaction(self, key: str) -> Iterator[_Cursor]:
        """A transaction that no other process's for the same `key` runs beside; committed at
        the end of the block, rolled back on an error."""
        with self._lock:
            if self._connection is None:
                self._connection = self._connect()
                try:
                    self._create_tables()
                except BaseException:
                    self._connection.close()
                    self._connection = None
                    raise
            connection = self._connection
            try:
                cursor = _Cursor(connection.cursor(), self.placeholder)
                self._begin(cursor, key)
                yield cursor
                connection.commit()
            except BaseException:
                try:
                    connection.rollback()
                except Exception:
                    # A connection that broke is opened again at the next transaction.
                    self._connection = None
                raise

    def now(self, cursor: _Cursor) -> float:
        """Seconds since the epoch, by the clock every user of the database shares."""
        return _clock()

    placeholder = "?"

    def _connect(self) -> Any:
        raise NotImplementedError

    def _begin(self, cursor: _Cursor, key: str) -> None:
        raise NotImplementedError

    def _create_tables(self) -> None:
        raise NotImplementedError


class SqliteLimits(LimitsDatabase):
    """A SQLite file: the processes of one machine (not on NFS)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level None: the transactions are the explicit BEGIN IMMEDIATE below.
        return sqlite3.connect(
            self.path, timeout=60.0, isolation_level=None, check_same_thread=False
        )

    def _begin(self, cursor: _Cursor, key: str) -> None:
        # The write lock at once: the window is read and written with no other writer between.
        cursor.execute("BEGIN IMMEDIATE")

    def _create_tables(self) -> None:
        with self._lock_free_transaction() as cursor:
            for statement in (*_SQLITE_TABLES, *_COMMON_TABLES):
                cursor.execute(statement)

    @contextmanager
    def _lock_free_transaction(self) -> Iterator[_Cursor]:
        cursor = _Cursor(self._connection.cursor(), self.placeholder)
        cursor.execute("BEGIN IMMEDIATE")
        try:
            yield cursor
            self._connection.commit()
        except BaseException:
            self._connection.rollback()
            raise


class PostgresLimits(LimitsDatabase):
    """The Dagster instance's PostgreSQL: every machine of a deployment."""

    placeholder = "%s"

    def __init__(self, url: str) -> None:
        super().__init__()
        # dagster-postgres names its driver in the scheme (`postgresql+psycopg2://`); libpq
        # takes `postgresql://`.
        scheme, _, rest = url.partition("://")
        self.url = f"{scheme.split('+')[0]}://{rest}"

    def now(self, cursor: _Cursor) -> float:
        cursor.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())")
        return float(cursor.fetchone()[0])

    def _connect(self) -> Any:
        import psycopg2  # type: ignore[import-untyped]

        return psycopg2.connect(self.url)

    def _begin(self, cursor: _Cursor, key: str) -> None:
        # Held until the transaction ends; one per key (a provider's window, the budget).
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext('litpipe-model-limits'), hashtext(?))", (key,)
        )

    def _create_tables(self) -> None:
        connection = self._connection
        with connection.cursor() as raw:
            cursor = _Cursor(raw, self.placeholder)
            # Two processes creating the same table at once can both fail on the catalog:
            # one at a time.
            self._begin(cursor, "create tables")
            for statement in (*_POSTGRES_TABLES, *_COMMON_TABLES):
                cursor.execute(statement)
        connection.commit()


class _Cursor:
    """A DB-API cursor taking `?` placeholders whatever its driver's style."""

    def __init__(self, cursor: Any, placeholder: str) -> None:
        self._cursor = cursor
        self._placeholder = placeholder

    def execute(self, sql: str, parameters: tuple[Any, ...] = ()) -> None:
        self._cursor.execute(sql.replace("?", self._placeholder), parameters)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())


_DATABASES: dict[tuple[int, str], LimitsDatabase] = {}
_DATABASES_LOCK = threading.Lock()


def limits_database(where: str | Path) -> LimitsDatabase:
    """The database at `where`: a PostgreSQL URL, else a SQLite file's path; one per process
    (a forked child opens its own)."""
    key = (os.getpid(), str(where))
    with _DATABASES_LOCK:
        if key not in _DATABASES:
            is_postgres = isinstance(where, str) and where.startswith("postgres")
            _DATABASES[key] = (
                PostgresLimits(str(where)) if is_postgres else SqliteLimits(Path(where))
            )
        return _DATABASES[key]


@dataclass
class SharedLimits:
    """The rate limits and the nightly budget of one client, counted in `database`."""

    database: LimitsDatabase
    rate_limits: dict[str, RateLimit] = field(default_factory=dict)
    nightly_budget_usd: float | None = None
    day_start_hour: int = 0

    def limit_of(self, provider: str) -> RateLimit | None:
        return self.rate_limits.get(provider)

    async def request(
        self,
        agent: str,
        model: str,
        provider: str,
        cost_estimate: float,
        tokens_estimate: Callable[[], int],
    ) -> SharedRequest:
        """One request's share of the limits: admitted by the nightly budget now (else
        `NightlyBudgetExceededError`), each of its tries then reserved by `SharedRequest.send`.
        `tokens_estimate` (its prompt and max_tokens) is counted only where tokens are
        limited."""
        limit = self.limit_of(provider)
        tokens = 0
        if limit is not None and limit.tokens_per_minute is not None:
            tokens = await asyncio.to_thread(tokens_estimate)
            tokens = min(tokens, limit.tokens_per_minute)  # a larger one goes in an empty minute
        spend_id = None
        if self.nightly_budget_usd is not None:
            spend_id = await asyncio.to_thread(
                self._admit_spend, agent, model, cost_estimate, self.nightly_budget_usd
            )
        return SharedRequest(self, provider, limit, tokens, spend_id)

    def day(self, at: float) -> str:
        """The budget's day of a moment: its UTC date, the day starting at `day_start_hour`."""
        moment = datetime.fromtimestamp(at, UTC) - timedelta(hours=self.day_start_hour)
        return moment.date().isoformat()

    def _admit_spend(self, agent: str, model: str, estimate: float, budget: float) -> int:
        with self.database.transaction("nightly budget") as cursor:
            now = self.database.now(cursor)
            day = self.day(now)
            cursor.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM litpipe_model_spend "
                "WHERE day = ? AND (settled = 1 OR at > ?)",
                (day, now - STALE_S),
            )
            spent = float(cursor.fetchone()[0])
            if spent + estimate > budget:
                cursor.execute(
                    "INSERT INTO litpipe_nightly_budget (day, budget_usd, spent_at, refused) "
                    "VALUES (?, ?, ?, 1) ON CONFLICT (day) DO UPDATE SET "
                    "refused = litpipe_nightly_budget.refused + 1, "
                    "budget_usd = excluded.budget_usd",
                    (day, budget, now),
                )
                refusal = NightlyBudgetExceededError(
                    f"{agent}: the next call to {model} (up to ${estimate:.6f}) would take the "
                    f"day's model calls (all runs, {day}) to ${spent + estimate:.6f}, over "
                    f"llm.nightly_budget_usd=${budget:.6f}; nothing more is sent today: raise it "
                    "(LITPIPE_LLM__NIGHTLY_BUDGET_USD) or wait for the next day"
                )
            else:
                refusal = None
                if random.random() < 0.01:  # now and then, the rows of days long gone
                    cursor.execute(
                        "DELETE FROM litpipe_model_spend WHERE at < ?", (now - KEEP_DAYS * 86400,)
                    )
                cursor.execute(
                    "INSERT INTO litpipe_model_spend (day, at, usd, settled) VALUES (?, ?, ?, 0) "
                    "RETURNING id",
                    (day, now, estimate),
                )
                spend_id = int(cursor.fetchone()[0])
        if refusal is not None:
            raise refusal
        return spend_id

    def _settle_spend(self, spend_id: int, cost: float) -> None:
        with self.database.transaction("nightly budget") as cursor:
            cursor.execute(
                "UPDATE litpipe_model_spend SET usd = ?, settled = 1 WHERE id = ?", (cost, spend_id)
            )

    def _reserve(self, provider: str, limit: RateLimit, tokens: int) -> tuple[int | None, float]:
        """A place in the provider's window (its id), or how long to wait for one."""
        with self.database.transaction(f"rate {provider}") as cursor:
            now = self.database.now(cursor)
            cursor.execute(
                "DELETE FROM litpipe_rate_reservations WHERE provider = ? AND at <= ?",
                (provider, now - WINDOW_S),
            )
            cursor.execute(
                "SELECT at, tokens FROM litpipe_rate_reservations WHERE provider = ? ORDER BY at",
                (provider,),
            )
            window = [(float(at), int(used)) for at, used in cursor.fetchall()]
            wait = _wait_for_place(window, now, limit, tokens)
            if wait > 0:
                return None, wait
            cursor.execute(
                "INSERT INTO litpipe_rate_reservations (provider, at, tokens) VALUES (?, ?, ?) "
                "RETURNING id",
                (provider, now, tokens),
            )
            return int(cursor.fetchone()[0]), 0.0

    def _correct(self, reservation: int, tokens: int) -> None:
        with self.database.transaction("rate correction") as cursor:
            cursor.execute(
                "UPDATE litpipe_rate_reservations SET tokens = ? WHERE id = ?",
                (tokens, reservation),
            )


def _wait_for_place(
    window: list[tuple[float, int]], now: float, limit: RateLimit, tokens: int
) -> float:
    """0 when a request of `tokens` fits beside the window's reservations (oldest first), else
    the seconds until enough of them age out of it."""
    requests, used = len(window), sum(used for _, used in window)

    def fits(requests: int, used: int) -> bool:
        within_requests = limit.requests_per_minute is None or requests < limit.requests_per_minute
        within_tokens = limit.tokens_per_minute is None or used + tokens <= limit.tokens_per_minute
        return within_requests and within_tokens

    if fits(requests, used):
        return 0.0
    for at, reserved in window:
        requests, used = requests - 1, used - reserved
        if fits(requests, used):
            return max(at + WINDOW_S - now, 0.001)
    return WINDOW_S  # cannot happen: an empty window fits any request (tokens are capped)


# How many of this process's calls are waiting for each provider: a wait is logged when the
# first starts waiting, not by every call that waits.
_WAITING: dict[str, int] = {}
_WAITING_LOCK = threading.Lock()


@dataclass
class SharedRequest:
    """One request's share: `send` before each try, `end` once it is over."""

    limits: SharedLimits
    provider: str
    limit: RateLimit | None
    tokens: int
    spend_id: int | None
    reservation: int | None = None

    async def send(self) -> None:
        """Waits until the provider's window has a place for this try, and takes it."""
        if self.limit is None:
            return
        waiting = False
        try:
            while True:
                reservation, wait = await asyncio.to_thread(
                    self.limits._reserve, self.provider, self.limit, self.tokens
                )
                if reservation is not None:
                    self.reservation = reservation
                    return
                if not waiting:
                    waiting = True
                    self._wait_logged(self.limit, wait)
                # A little on top, so that the processes told the same wait do not all come
                # back at once; and at most a tenth of the window, since replies that used
                # fewer tokens than reserved free places sooner.
                await asyncio.sleep(min(wait * random.uniform(1.0, 1.05), WINDOW_S / 10) + 0.005)
        finally:
            if waiting:
                with _WAITING_LOCK:
                    _WAITING[self.provider] -= 1

    def _wait_logged(self, limit: RateLimit, wait: float) -> None:
        """Counts this call among those waiting; the first to wait says why."""
        with _WAITING_LOCK:
            first = not _WAITING.get(self.provider)
            _WAITING[self.provider] = _WAITING.get(self.provider, 0) + 1
        if first:
            logger.warning(
                "model calls to %s wait: its allowance per minute (llm.rate_limits: %s) is "
                "spent by the calls of every process sharing it; the next goes in %.1f s",
                self.provider,
                limit.model_dump_json(exclude_none=True),
                wait,
            )

    async def end(self, cost: float, tokens_used: int | None) -> None:
        """The request is over: it cost `cost` and used `tokens_used` tokens (None: unknown).
        A database that cannot be reached now leaves the estimates standing (the reservation
        ages out of the window; the budget's after STALE_S): the call's outcome stands."""
        try:
            if self.spend_id is not None:
                await asyncio.to_thread(self.limits._settle_spend, self.spend_id, cost)
            limited = self.limit is not None and self.limit.tokens_per_minute is not None
            if limited and self.reservation is not None and tokens_used is not None:
                await asyncio.to_thread(self.limits._correct, self.reservation, tokens_used)
        except Exception as error:
            logger.warning("could not record a model call's usage in the shared limits: %s", error)


def nightly_budget_spent(database: LimitsDatabase, day: date | str) -> NightlyBudgetSpent | None:
    """When the nightly budget of `day` was found spent and how many requests it refused; None
    when it was not spent (or nothing was counted)."""
    with database.transaction("nightly budget") as cursor:
        cursor.execute(
            "SELECT budget_usd, spent_at, refused FROM litpipe_nightly_budget WHERE day = ?",
            (str(day),),
        )
        row = cursor.fetchone()
    if row is None:
        return None
    budget, spent_at, refused = row
    return NightlyBudgetSpent(
        budget_usd=float(budget),
        spent_at=datetime.fromtimestamp(float(spent_at), UTC).isoformat(),
        calls_not_made=int(refused),
    )
