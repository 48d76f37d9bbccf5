"""The old name of `litpipe.instance.sqlite_storage`, kept for the dagster.yaml of older homes.

Homes written before the instance's plumbing left `defs/` have a dagster.yaml naming this module
as their `event_log_storage`. litpipe rewrites its own dagster.yaml with the new name when it
opens such a home (`litpipe.runtime.instance`), but Dagster's own tools (`dagster dev`,
`dagster-daemon run`) may open it first, so the name still imports. Nothing of litpipe uses it.
"""

from litpipe.instance.sqlite_storage import BatchingSqliteEventLogStorage

__all__ = ["BatchingSqliteEventLogStorage"]
