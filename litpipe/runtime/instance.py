"""The Dagster instance's dagster.yaml: written by litpipe, or one of your own.

By default the instance lives in `LITPIPE_HOME/dagster` on SQLite, and litpipe writes its
dagster.yaml from the settings (rewriting it when they change), so the limit of the `llm` pool
holds for `litpipe run`, `litpipe ui` and every run the UI launches. A dagster.yaml without
litpipe's first line is someone's own (PostgreSQL storage, a run launcher, compute logs on S3:
see deploy/dagster.postgres.yaml) and is used as it is; `dagster_home` (`LITPIPE_DAGSTER_HOME`)
points litpipe at its folder.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from litpipe.files import exclusive_lock, write_atomically
from litpipe.settings import HomePaths, LLMSettings

# Held while the instance is created or migrated: two processes creating the SQLite storages at
# once raced on their tables and alembic stamps (one crashed; once the run database ended with
# two alembic heads).
LOCK_NAME = ".litpipe-instance.lock"
MANAGED = "# Written by litpipe from its settings"
# What litpipe wrote before the pool: still litpipe's, so it is brought up to date.
_EARLIER = "telemetry:\n  enabled: false\n"
# The module of litpipe's SQLite event log storage. Homes written before it moved out of the
# graph name `litpipe.defs.sqlite_storage`, which is gone: litpipe's own dagster.yaml differs
# from what it would write now, so `write_instance_config` rewrites it (with this module) the
# first time litpipe opens such a home, before Dagster reads it, as it does when a setting
# changes; a dagster.yaml of your own is never rewritten.
SQLITE_STORAGE_MODULE = "litpipe.instance.sqlite_storage"


def managed_config(llm: LLMSettings, paths: HomePaths) -> str:
    # `default_limit` applies to every pool, and the only pool of litpipe's graph is `llm`;
    # a per-pool limit set with `dagster instance concurrency set llm N` takes precedence.
    return (
        f"{MANAGED} (llm.pool_limit); it rewrites this file when they change.\n"
        "# Delete these lines to keep a dagster.yaml of your own instead.\n"
        "# litpipe never reaches the internet on its own; Dagster's telemetry would.\n"
        "telemetry:\n"
        "  enabled: false\n"
        "concurrency:\n"
        "  pools:\n"
        "    # The `llm` pool: steps that may call a model, across all runs of this instance.\n"
        f"    default_limit: {llm.pool_limit}\n"
        "# With `dagster-daemon` running: runs stuck starting are failed, and a finished run's\n"
        "# pool slots freed. litpipe's own runs whose process died are released whenever\n"
        "# litpipe opens the instance.\n"
        "run_monitoring:\n"
        "  enabled: true\n"
        "  free_slots_after_run_end_seconds: 60\n"
        "# Dagster's SQLite event log (the same files), writing a batch of papers' asset events\n"
        "# in one transaction instead of one each.\n"
        "event_log_storage:\n"
        f"  module: {SQLITE_STORAGE_MODULE}\n"
        "  class: BatchingSqliteEventLogStorage\n"
        "  config:\n"
        f"    base_dir: {json.dumps(str(paths.dagster_home / 'history' / 'runs'))}\n"
    )


def is_managed(config: Path) -> bool:
    """Whether litpipe wrote this dagster.yaml (and may rewrite it)."""
    if not config.exists():
        return True
    text = config.read_text(encoding="utf-8")
    return text.startswith(MANAGED) or text == _EARLIER


def write_instance_config(llm: LLMSettings, paths: HomePaths) -> Path:
    """`dagster_home`'s dagster.yaml, written from the settings (the `llm` pool's limit) unless
    it is someone's own."""
    paths.dagster_home.mkdir(parents=True, exist_ok=True)
    config = paths.dagster_home / "dagster.yaml"
    wanted = managed_config(llm, paths)
    if is_managed(config) and (not config.exists() or config.read_text("utf-8") != wanted):
        write_atomically(config, wanted)
    return config


@contextmanager
def instance_lock(paths: HomePaths) -> Iterator[None]:
    """Exclusive across the processes of this machine sharing `dagster_home`, while held."""
    with exclusive_lock(paths.dagster_home / LOCK_NAME):
        yield
