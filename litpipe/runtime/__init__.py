"""litpipe's application runtime: what runs the graph of `litpipe.defs` in-process, into the
Dagster instance the UI serves (`litpipe run`, `backfill`, `ask`, `related-work`, `eval`), and
the instance it opens. `litpipe.defs` holds only the graph and what its assets, checks and
sensors read; this package sits above it and below the commands (`litpipe.commands`)."""
