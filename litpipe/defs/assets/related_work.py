"""Related work (LitLLM), one partition per request: a research idea and its pool, an abstracts
table or a collection's ingested papers (`litpipe.workflows.related_work_pool`).

Whoever adds a `related_work_requests` partition (`litpipe related-work`) first stores its
request at `LITPIPE_HOME/requests/related_work/<key>.json`: the idea and limits, the table's
path and the sha256 of its bytes. The key hashes all of them, so an edited table or another
idea is another partition, and a repeated request is the same one (served from its last
materialization while that is fresh). The step reads the table again and refuses one whose
bytes are no longer those the request was made with, writes the section, grades each of its
cited sentences against the abstracts it cites (the grades kept on the output), then writes
`related_work.md` (the section and its reference list), `related_work.html` (the page marks the
sentences the grading flags) and `related_work.json` to
`LITPIPE_HOME/outputs/related_work/<key>/`.

A collection's request stores the collection's name and the fingerprint of its ingested papers
(ids, abstracts, chunk contents) instead of a table: a paper added to it, retracted or ingested
again is another pool, hence another partition, and the step refuses a pool that is no longer
the stored one, as it refuses an edited table.

Checks: `support` (sentence by sentence, by the `claim_judge` agent: the calibrated score
offline, a model when one is routed) and `coherence` (a model only: without one it is not run,
and the `skipped_checks` metadata says why) warn, or block when `grading.blocking` is set.
The judges are part of the code version, as for `query_summary`: another judge regrades, the
section itself coming from the reply cache.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Self

import dagster as dg
from pydantic import BaseModel, Field, model_validator

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.debate import DebateAgent
from litpipe.agents.related_work import RelatedWorkAgent
from litpipe.agents.related_work_plan import RelatedWorkPlanAgent
from litpipe.agents.search_queries import SearchQueriesAgent
from litpipe.defs.check_results import checked, grading_check_specs
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import related_work_requests
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import SEARCH, Resources, step_asset
from litpipe.defs.stored_requests import stored_request
from litpipe.defs.versions import GRADING, CodeVersion, NamedVersion
from litpipe.evaluation import grading
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped
from litpipe.evaluation.grading import GRADING_AGENTS
from litpipe.files import checked_key
from litpipe.hashing import digest
from litpipe.ingest.ids import file_sha256
from litpipe.report.related_work import MARKDOWN_FILE, write_related_work
from litpipe.retrieval.support import Encoder
from litpipe.schemas import RelatedWork, RelatedWorkRequest
from litpipe.settings import (
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    RelatedWorkSettings,
    RetrievalSettings,
)
from litpipe.workflows import export as export_workflow
from litpipe.workflows import related_work_pool
from litpipe.workflows.related_work import (
    ReferenceTable,
    RelatedWorkInputError,
    load_references,
    related_work_version,
    run_related_work,
)
from litpipe.workflows.related_work_pool import (
    CollectionPool,
    collection_catalog,
    pool_references,
    read_pool,
)

ASSET = "related_work"
GROUP = "related_work"
RELATED_WORK_AGENTS = (
    SearchQueriesAgent.name,
    DebateAgent.name,
    RelatedWorkPlanAgent.name,
    RelatedWorkAgent.name,
)
# The grading checks, each with what it checks; they warn, or block with `grading.blocking`.
GRADING_CHECKS = grading.check_descriptions("section", "the references (title and abstract)")
# A step failure carrying this metadata was the request's fault (the writer's prompt does not
# fit its context, the table changed or vanished): the CLI answers it as a usage error.
BAD_INPUT = "litpipe/bad_input"


def _absent(value: str | None) -> bool:
    return value is None


class StoredRelatedWorkRequest(BaseModel):
    """A `related_work` partition's inputs, as stored under `HomePaths.requests_dir`: a table
    request's or a collection request's (the other pair absent, and left out of the file)."""

    key: str = Field(description="The partition key: `rw-` and a hash of everything below.")
    request: RelatedWorkRequest
    table_path: str | None = Field(
        default=None, exclude_if=_absent, description="The abstracts table, an absolute path."
    )
    table_sha256: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="sha256 of the table's bytes when the request was made.",
    )
    collection: str | None = Field(
        default=None, exclude_if=_absent, description="The collection whose papers are the pool."
    )
    pool_fingerprint: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="The collection's ingested papers when the request was made "
        "(`CollectionPool.fingerprint`).",
    )

    @model_validator(mode="after")
    def _one_pool(self) -> Self:
        table = self.table_path is not None and self.table_sha256 is not None
        collection = self.collection is not None and self.pool_fingerprint is not None
        if table == collection:
            raise ValueError("a request's pool is either a table or a collection")
        return self


def request_key(request: RelatedWorkRequest, table_sha256: str) -> str:
    """Short, URL-safe, and the same for the same idea, limits and table content (wherever the
    table lies: the same bytes under another name are the same references)."""
    return "rw-" + digest(
        request.idea, str(request.sentences), str(request.words), str(request.top_k), table_sha256
    )


def collection_request_key(request: RelatedWorkRequest, collection: str, fingerprint: str) -> str:
    """As `request_key`, for a collection's pool: its name and its papers' fingerprint."""
    return "rw-" + digest(
        request.idea,
        str(request.sentences),
        str(request.words),
        str(request.top_k),
        "collection",
        collection,
        fingerprint,
    )


def new_collection_request(
    request: RelatedWorkRequest, pool: CollectionPool
) -> StoredRelatedWorkRequest:
    return StoredRelatedWorkRequest(
        key=collection_request_key(request, pool.collection, pool.fingerprint),
        request=request,
        collection=pool.collection,
        pool_fingerprint=pool.fingerprint,
    )


def new_request(request: RelatedWorkRequest, table_path: Path) -> StoredRelatedWorkRequest:
    path = Path(table_path).expanduser().resolve()
    sha256 = file_sha256(path)
    return StoredRelatedWorkRequest(
        key=request_key(request, sha256),
        request=request,
        table_path=str(path),
        table_sha256=sha256,
    )


def outputs_folder(outputs_root: Path, key: str) -> Path:
    """Where a request's `related_work.md` and `related_work.json` are written."""
    return Path(outputs_root) / ASSET / checked_key(key, "request key")


def bad_input(description: str) -> dg.Failure:
    return dg.Failure(description=description, metadata={BAD_INPUT: True}, allow_retries=False)


def _unchanged_pool(
    stored: StoredRelatedWorkRequest,
    resources: Resources,
    related_work_settings: RelatedWorkSettings,
    retrieval: RetrievalSettings,
) -> ReferenceTable:
    """The collection's papers as the request found them, their passages for its idea; or a
    failure saying that the collection changed since."""
    assert stored.collection is not None  # a collection's request
    model, chunk_store = resources.embedder.embedder(), resources.lancedb.store()
    try:
        catalog = collection_catalog(Path(resources.catalog.path), stored.collection)
        pool = read_pool(
            catalog, stored.collection, resources.artifacts.store(), chunk_store, model.embedder_id
        )
    except RelatedWorkInputError as error:
        raise bad_input(str(error)) from error
    if pool.fingerprint != stored.pool_fingerprint:
        raise bad_input(
            f"collection {stored.collection!r} changed since this request was made (a paper "
            f"added, retracted or ingested again); run `litpipe related-work --collection "
            f"{stored.collection}` again (a changed collection is a new request)"
        )
    # Over the catalog's list, as every stage of the collection searches it: its saved BM25
    # index is shared, not rebuilt for the pool.
    retriever = resources.retrieval.retriever(
        chunk_store, model, stored.collection, catalog.papers(stored.collection)
    )
    return pool_references(pool, stored.request, retriever, related_work_settings, retrieval)


def _unchanged_table(stored: StoredRelatedWorkRequest) -> ReferenceTable:
    """The table the request was made with, or a failure saying why it is gone."""
    assert stored.table_path is not None  # a table's request
    path = Path(stored.table_path)
    changed = (
        f"{path}: the abstracts table changed since this request was made; run "
        "`litpipe related-work` on it again (an edited table is a new request)"
    )
    if not path.is_file():
        raise bad_input(f"{path}: the abstracts table no longer exists (moved or deleted)")
    if file_sha256(path) != stored.table_sha256:
        raise bad_input(changed)
    try:
        table = load_references(path)
    except RelatedWorkInputError as error:
        raise bad_input(str(error)) from error
    # Read twice around the parse: a table rewritten meanwhile is not taken for the stored one.
    if file_sha256(path) != stored.table_sha256:
        raise bad_input(changed)
    return table


STEP = ModelStep(
    agents=(*RELATED_WORK_AGENTS, *GRADING_AGENTS),
    # Its agents, the workflow and the retrieval settings, the judges that grade the section,
    # the embedder that searches the abstracts and scores support offline; the request's own
    # inputs (idea, limits, table bytes) are in its partition key.
    code=CodeVersion(
        versions=(
            NamedVersion(
                "workflow",
                lambda groups, asker: related_work_version(
                    groups["related_work"], groups["ingest"], groups["retrieval"], asker
                ),
            ),
            GRADING,
        ),
        modules=(related_work_pool,),
        output=RelatedWork,
        embedder=True,
    ),
)


def build_related_work_assets(
    related_work_settings: RelatedWorkSettings,
    ingest: IngestSettings,
    retrieval: RetrievalSettings,
    grading_settings: GradingSettings,
    llm: LLMSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    grading_blocks = grading_settings.blocking

    @step_asset(
        STEP,
        {
            "related_work": related_work_settings,
            "ingest": ingest,
            "retrieval": retrieval,
            "grading": grading_settings,
            "llm": llm,
            "paths": paths,
        },
        resources=SEARCH,
        checks_may_skip=True,
        name=ASSET,
        partitions_def=related_work_requests,
        group_name=GROUP,
        check_specs=grading_check_specs(
            ASSET, related_work_requests, GRADING_CHECKS, grading_blocks
        ),
        description="A related-work section for a research idea from an abstracts table or a "
        "collection's ingested papers, with their full-text passages (LitLLM): BM25 + dense "
        "retrieval fused by RRF and diversified by MMR, debate scoring of each candidate, the "
        "top-k given to the writer, every one cited as [id] and nothing else; each cited "
        "sentence graded against the abstracts it cites. Files: "
        "LITPIPE_HOME/outputs/related_work/<request>/related_work.md, .html and .json.",
    )
    def related_work(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[RelatedWork] | dg.AssetCheckResult]:
        key, resources = context.partition_key, Resources(context)
        with STEP.run(context) as step:
            stored = stored_request(
                paths,
                ASSET,
                key,
                StoredRelatedWorkRequest,
                "add related-work requests with `litpipe related-work`",
                metadata={BAD_INPUT: True},
            )
            table = (
                _unchanged_table(stored)
                if stored.collection is None
                else _unchanged_pool(stored, resources, related_work_settings, retrieval)
            )
            asker = step.asker()
            encoder = resources.embedder.embedder()
            try:
                related = run_related_work(
                    table,
                    stored.request,
                    related_work_settings,
                    ingest,
                    retrieval,
                    paths,
                    asker,
                    encoder,
                )
            except RelatedWorkInputError as error:
                # E.g. a model writer whose prompt (idea and top-k abstracts) exceeds its context.
                raise bad_input(str(error)) from error
            related, outcomes = _graded(related, grading_settings, asker, encoder)
        # Its files cite each work by its key, as its exports do.
        keys, _ = export_workflow.related_work_keys(
            related, resources.catalog.catalog(), resources.artifacts.store()
        )
        files = write_related_work(
            related, outputs_folder(Path(resources.artifacts.outputs_root), key), keys
        )
        for warning in related.warnings:
            context.log.warning(f"{key}: {warning}")
        graded = checked(ASSET, outcomes, lambda _: grading_blocks)
        yield step.output(
            related,
            {
                "engine": related.engine,
                "debate_engine": related.debate_engine,
                **(
                    {"table": dg.MetadataValue.path(stored.table_path)}
                    if stored.table_path is not None
                    else {"collection": stored.collection}
                ),
                "table_rows": related.table_rows,
                "skipped_rows": len(related.skipped_rows),
                "top_k": len(related.references),
                "cited_ids": len(related.cited_ids),
                "sentences": related.sentences,
                "words": related.words,
                "within_length": related.within_length,
                "revised": related.revised,
                "warnings": len(related.warnings),
                **{name: dg.MetadataValue.path(str(path)) for name, path in files.items()},
                "preview": markdown_metadata(files[MARKDOWN_FILE].read_text(encoding="utf-8")),
                **graded.metadata(),
            },
        )
        yield from graded.results

    return [related_work]


def _graded(
    related: RelatedWork,
    grading_settings: GradingSettings,
    asker: Asker,
    encoder: Encoder,
) -> tuple[RelatedWork, dict[str, CheckOutcome | CheckSkipped]]:
    """The section with its sentence grades, and the outcomes of its grading checks. An `[id]`
    cites a whole reference: its passage is the title and abstract the writer was given."""
    passages = {
        scored.reference.id: [f"{scored.reference.title}. {scored.reference.text()}"]
        for scored in related.references
    }
    grades, outcomes = grading.graded_checks(
        related.text,
        passages,
        "related-work section",
        grading_settings,
        asker,
        # The embedder that searched the abstracts scores support offline (calibrated on MiniLM).
        encoder,
        keys_in=grading.id_markers,
        title="Related work",
    )
    return related.model_copy(update={"grades": grades}), outcomes
