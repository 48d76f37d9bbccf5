"""The old name of `litpipe.instance.postgres_storage`, kept for dagster.yaml files naming it.

A dagster.yaml of your own (deploy/dagster.postgres.yaml before the instance's plumbing left
`defs/`) names this module as its `event_log_storage`, and litpipe never rewrites a dagster.yaml
it did not write, so the name still imports. Nothing of litpipe uses it: name
`litpipe.instance.postgres_storage` instead.
"""

from litpipe.instance.postgres_storage import PoolSafePostgresEventLogStorage

__all__ = ["PoolSafePostgresEventLogStorage"]
