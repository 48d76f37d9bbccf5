"""The Dagster instance's plumbing that litpipe adds, apart from the graph (`litpipe.defs`).

Event log storages that dagster.yaml names: SQLite's writing a batch of papers' asset events
in one transaction (`sqlite_storage`), PostgreSQL's keeping a pool's limit when steps claim
slots at once (`postgres_storage`); the wait of a step for a slot of the `llm` pool
(`pool_wait`, installed by `litpipe.defs` when the graph is imported); the runs whose process is
gone (`run_liveness`); and why a run failed, in one line (`run_failures`). It imports Dagster
and nothing of litpipe above the settings: the graph, the runtime and the commands build on it.
"""
