"""`litpipe backfill`: every registered paper (or a collection's) brought up to date under
these settings in batches, e.g. under another embedder."""

from __future__ import annotations

import sys
from collections.abc import Callable

from litpipe.settings import Settings
from litpipe.stopping import STOPPED_EXIT


def backfill_command(
    settings: Settings,
    collection: str | None,
    batch: int | None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> int:
    """Every registered paper (or a collection's) and their collections brought up to date under
    these settings, in batches, with a line per batch and a summary (which ends saying what is
    left when it was stopped on request)."""
    from litpipe.catalog import Catalog
    from litpipe.retrieval.embedder import EmbedderError
    from litpipe.runtime import backfill as backfilling
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.ingest import settings_embedder

    def refused(message: str) -> int:
        print(f"litpipe backfill: {message}", file=sys.stderr)
        return 2

    if batch is not None and batch < 1:
        return refused(f"--batch must be at least 1, not {batch}")
    try:
        # Before anything runs: a model that cannot be found fails here, not in every paper.
        embedder_id = settings_embedder(settings).embedder_id
    except EmbedderError as error:
        return refused(str(error))
    if not settings.catalog_path.is_file():
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    catalog = Catalog(settings.catalog_path)
    known = catalog.collections()
    if collection is not None and collection not in known:
        return refused(f"no collection {collection!r} under {settings.home} (known: {known})")
    paper_ids = [p for c in ([collection] if collection else known) for p in catalog.papers(c)]
    if not paper_ids:
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    size = batch or settings.operations.batch_size
    print(
        f"backfill of {len(paper_ids)} papers to {embedder_id}, at most {size} a batch",
        file=sys.stderr,
    )
    report = backfilling.backfill(
        settings,
        open_instance(settings),
        paper_ids,
        batch_size=size,
        on_batch=lambda outcome: print(backfilling.batch_line(outcome), file=sys.stderr),
        stop_requested=stop_requested,
    )
    for line in backfilling.summary_lines(report, settings):
        print(line, file=sys.stderr)
    if report.stopped:
        return STOPPED_EXIT
    return 1 if report.failed_papers or report.collection_failure else 0
