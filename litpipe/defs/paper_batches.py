"""Per-paper assets built over a batch of papers in one step.

A run over a range of the `papers` partitions (`litpipe run`'s batches, a backfill's runs, the
sensor's) builds each per-paper asset once for the whole range: its resources, models and indexes
are opened once, not once per paper. Each paper is still built on its own, from its own stored
inputs, into its own artifact and its own metadata, so it stays visible, stale-able and
re-runnable alone in the UI.

Dagster records one data version for all the partitions of such a step; each paper's own is
kept in its metadata (`staleness.PARTITION_VERSION`), so that litpipe's staleness tells which
papers of a batch changed: what reads an unchanged one stays fresh.

A paper that fails (a corrupt PDF, a reply its model could not get right) does not stop the
others: the step goes on with them, then fails naming only the papers that failed, each with its
reason (`FAILED_PAPERS`), so that the caller runs the batch again without them. Dagster records
a step over a range as one outcome for all of its partitions: no paper of a failed step counts as
materialized, and none is materialized wrongly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.defs.staleness import PARTITION_VERSION
from litpipe.defs.versions import batch_data_version, data_version
from litpipe.files import refused_write
from litpipe.llm.errors import LLMError, TransientLLMError, one_line
from litpipe.schemas import PaperAbstract, PaperFailure, PaperSource

Output = TypeVar("Output", bound=BaseModel)

# The step-failure metadata entry naming each failed paper of a batch and its reason.
FAILED_PAPERS = "litpipe/failed_papers"
# Where a paper's latest failure is kept (a `PaperFailure`), for whoever asks why it has no
# output: the collection that leaves it out. Its run may have built a hundred other papers.
FAILURES = ["paper_failures"]


@dataclass(frozen=True)
class PaperBuild(Generic[Output]):
    """One paper's output, the metadata to show with it, and its data version when that is not
    its content's hash."""

    value: Output
    metadata: Mapping[str, Any] = field(default_factory=dict)
    version: dg.DataVersion | None = None


def build_papers(
    context: dg.AssetExecutionContext,
    store: ArtifactStore,
    catalog: Catalog,
    build: Callable[[str], PaperBuild[Any]],
    asset: str | None = None,
) -> dg.MaterializeResult:
    """Builds the step's asset for each paper of its partitions with `build`, writes each output
    to its artifact and its metadata to its partition (opening with the paper's title and the
    `catalog`'s collections of it); fails at the end, naming the papers that failed, if any
    did."""
    name = asset or context.asset_key.to_user_string()
    collections_of = catalog.collections_of(list(context.partition_keys))
    versions: dict[str, dg.DataVersion] = {}
    failures: dict[str, str] = {}
    retriable = False
    for paper_id in context.partition_keys:
        try:
            built = build(paper_id)
        except dg.Failure as failure:
            failures[paper_id] = failure.description or f"{name} failed"
            retriable = retriable or failure.allow_retries
            continue
        except LLMError as error:
            failures[paper_id] = str(error)
            retriable = retriable or isinstance(error, TransientLLMError)
            continue
        except Exception as error:  # the paper's own fault: the others go on
            if refused_write(error) is not None:
                raise  # a full disk or a read-only home: every paper's fault, the step fails
            failures[paper_id] = f"{name}: {one_line(str(error) or type(error).__name__)}"
            retriable = True
            continue
        path = store.write([name], paper_id, built.value)
        # Built now: an earlier failure no longer says why it has no output.
        store.path(FAILURES, paper_id).unlink(missing_ok=True)
        versions[paper_id] = built.version or data_version(built.value)
        add_paper_metadata(
            context,
            paper_id,
            {
                **paper_heading(store, paper_id, built.value, collections_of.get(paper_id, [])),
                "path": dg.MetadataValue.path(str(path)),
                PARTITION_VERSION: versions[paper_id].value,
                **built.metadata,
            },
        )
    for paper_id, reason in failures.items():
        store.write(
            FAILURES,
            paper_id,
            PaperFailure(paper_id=paper_id, asset=name, reason=reason, run_id=context.run.run_id),
        )
    if failures:
        raise dg.Failure(
            description=_failure_line(failures, len(context.partition_keys)),
            metadata={FAILED_PAPERS: dg.MetadataValue.json(failures)},
            allow_retries=retriable,
        )
    return dg.MaterializeResult(data_version=batch_data_version(versions))


def paper_heading(
    store: ArtifactStore, paper_id: str, value: BaseModel, collections: list[str]
) -> dict[str, str]:
    """What a reader of a paper's page in the UI looks for first, its title and collections:
    the title from the output itself where it has one, else from the paper's stored source and
    abstract (a PDF's title is known once its document is parsed)."""
    source = (
        value
        if isinstance(value, PaperSource)
        else _stored(store, "paper_source", paper_id, PaperSource)
    )
    abstract = _stored(store, "paper_abstract", paper_id, PaperAbstract)
    title = (
        getattr(value, "title", None)
        or (abstract.title if abstract else None)
        or (source.fields.get("title") if source else None)
        or (Path(source.path).name if source and source.kind == "pdf" else None)
    )
    heading = {"title": str(title)} if title else {}
    return heading | ({"collections": ", ".join(collections)} if collections else {})


def _stored(store: ArtifactStore, asset: str, paper_id: str, model: type[Output]) -> Output | None:
    if not store.exists([asset], paper_id):
        return None
    try:
        return store.read([asset], paper_id, model)
    except (OSError, ValueError):  # an artifact of an older schema: the heading goes without
        return None


def add_paper_metadata(
    context: dg.AssetExecutionContext, paper_id: str, metadata: Mapping[str, Any]
) -> None:
    """`context.add_asset_metadata(metadata, partition_key=paper_id)`, without its check.

    That check lists every key of the dynamic `papers` partitions from the instance to see that
    the paper is in the step's range: one query over all papers per paper, which made a batch
    step's time grow with the size of the whole collection (a 100-paper step of a 5,000-paper
    home read 500,000 keys). The paper is one of `context.partition_keys` (read once per step),
    so its metadata goes straight to the step's accumulator; a Dagster without that attribute
    gets the checked call."""
    step = getattr(context.op_execution_context, "_step_execution_context", None)
    accumulator = getattr(step, "_metadata_accumulator", None)
    if accumulator is None:
        context.add_asset_metadata(metadata, partition_key=paper_id)
        return
    step._metadata_accumulator = accumulator.with_additional_asset_metadata(  # type: ignore[union-attr]
        asset_key=context.asset_key, metadata=metadata, partition_key=paper_id
    )


def latest_failure(store: ArtifactStore, paper_id: str) -> PaperFailure | None:
    """Why the paper's latest failed step failed for it, if one did."""
    if not store.exists(FAILURES, paper_id):
        return None
    return store.read(FAILURES, paper_id, PaperFailure)


def failed_papers(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """The papers a batch step's failure names, with their reasons (none: the whole step
    failed, not some of its papers)."""
    entry = (metadata or {}).get(FAILED_PAPERS)
    if entry is None:
        return {}
    value = entry.value if isinstance(entry, dg.JsonMetadataValue) else entry
    found: Any = json.loads(value) if isinstance(value, str) else value
    return {str(paper): str(reason) for paper, reason in dict(found).items()}


def _failure_line(failures: dict[str, str], papers: int) -> str:
    if papers == 1:
        return next(iter(failures.values()))
    first, reason = next(iter(failures.items()))
    return f"{len(failures)} of {papers} papers failed; {first}: {reason}"
