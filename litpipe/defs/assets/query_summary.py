"""Query-focused summaries (MAIS), one partition per request: a paper and a reader's query.

Whoever adds a `query_requests` partition (`litpipe ask`, `litpipe eval mais`) first stores its
`QuerySummaryRequest` at `LITPIPE_HOME/requests/query_summary/<key>.json`; the key is a hash of
the paper id and the query, so a repeated request is the same partition. The step finds the
paper's collection in the catalog, its title and abstract in the `paper_abstract` artifact and
its passages in LanceDB (the rows `chunk_embeddings` wrote): the paper must be ingested first.
It runs the loop (`litpipe.workflows.query_summary`), keeps every iteration in the output,
grades each cited sentence of the summary and its highlights against the chunks it cites (the
grades kept on the output), and writes `LITPIPE_HOME/outputs/<collection>/query_summary/`
`<key>.md` and `<key>.html` (the page marks the sentences the grading flags).

Checks: `citation_validity` blocks; `support` (sentence by sentence, by the `claim_judge`
agent: the calibrated score offline, a model when one is routed) and `coherence` (a model
only: without one it is not run, and the `skipped_checks` metadata says why) warn, or block
when `grading.blocking` is set. The judges are part of the code
version: the grades are part of the output, so another judge regrades (the summary itself then
comes from the reply cache).

Lineage: the asset depends on every paper's `chunk_embeddings` and `paper_abstract` (a request's
paper is known only from its stored request, which no partition mapping can read), so the UI may
call a summary stale when any paper changes; rematerializing an unchanged one costs no model
call (the LLM cache). `litpipe ask` applies the exact rule instead: the code version, and the
data versions of its own paper's chunks, embeddings and abstract, recorded in the metadata.
"""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.defs.check_results import checked, grading_check_specs
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import query_requests
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.staleness import latest_materialization_tags
from litpipe.defs.steps import SEARCH, Resources, all_partitions, step_asset
from litpipe.defs.stored_requests import stored_request
from litpipe.defs.versions import (
    GRADING,
    RERANKER,
    RETRIEVAL_SETTINGS,
    CodeVersion,
    NamedVersion,
)
from litpipe.evaluation import checks, grading
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped
from litpipe.evaluation.grading import GRADING_AGENTS
from litpipe.report import notices
from litpipe.report import query_summary as report
from litpipe.retrieval.support import Encoder
from litpipe.schemas import (
    PaperAbstract,
    PaperSource,
    QuerySummary,
    QuerySummaryRequest,
    RetrievedChunk,
)
from litpipe.settings import (
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    QuerySummarySettings,
    RetrievalSettings,
)
from litpipe.workflows import citation_keys as citation_keys_workflow
from litpipe.workflows.query_summary import (
    MAIS_AGENTS,
    QuerySummaryError,
    paper_passages,
    paper_search,
    query_summary_version,
    summarize_for_query,
)
from litpipe.workflows.reranking import settings_reranker

ASSET = "query_summary"
GROUP = "query_summary"
CITATION_CHECK = "citation_validity"
# The grading checks, each with what it checks; they warn, or block with `grading.blocking`.
GRADING_CHECKS = grading.check_descriptions("summary and its highlights", "the chunks")
# The per-paper assets a summary is written from; their data versions at materialization time
# are recorded under this metadata key.
PAPER_INPUTS = ("paper_chunks", "chunk_embeddings", "paper_abstract")
PAPER_VERSIONS = "paper_versions"


def paper_versions(instance: dg.DagsterInstance, paper_id: str) -> str:
    """The paper's inputs as the instance knows them now: `asset=data version` for each."""
    versions = []
    for asset in PAPER_INPUTS:
        tags = latest_materialization_tags(instance, dg.AssetKey(asset), [paper_id])
        versions.append(f"{asset}={tags.get(paper_id, {}).get('dagster/data_version', 'missing')}")
    return ";".join(versions)


def not_ingested(source: PaperSource, collection: str) -> str:
    """The one-line message for a registered paper whose chunks or abstract are not stored:
    the command that ingests it, by the kind of source it came from."""
    path = Path(source.path)
    if path.suffix == ".sqlite":  # an item of a Zotero library, entered by its abstract
        again = f"--zotero {path.parent}"
    elif path.suffix == ".bib":
        again = f"--bibtex {path}"
    elif source.kind == "table_row":
        again = str(path)
    elif source.external_id:  # a reference manager's PDF: its library is not recorded
        return (
            f"paper {source.paper_id} is not ingested; run the Zotero library or .bib file it "
            f"came from (its PDF: {path}) with `--collection {collection}` first"
        )
    else:  # a PDF is run with its folder
        again = str(path.parent)
    return (
        f"paper {source.paper_id} is not ingested; run `litpipe run {again} --collection "
        f"{collection}` first"
    )


STEP = ModelStep(
    agents=(*MAIS_AGENTS, *AGENT_RERANKERS, *GRADING_AGENTS),
    # The loop (its four agents, prompts, routes and settings), the passages it reads
    # (embedder, retrieval of the paper's own chunks, reranker; `retrieval.evidence_scope` does not
    # apply: a request searches its own paper), the judges that grade it, the files it
    # writes. The request's paper and query are its partition key.
    code=CodeVersion(
        versions=(
            NamedVersion(
                "query_summary",
                lambda groups, asker: query_summary_version(
                    groups["query_summary"], groups["retrieval"], asker
                ),
            ),
            RERANKER,
            GRADING,
        ),
        modules=(report, notices),
        output=QuerySummary,
        settings=RETRIEVAL_SETTINGS,
        embedder=True,
    ),
)


def build_query_summary_assets(
    query_summary_settings: QuerySummarySettings,
    retrieval: RetrievalSettings,
    grading_settings: GradingSettings,
    ingest: IngestSettings,
    llm: LLMSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    grading_blocks = grading_settings.blocking

    @step_asset(
        STEP,
        {
            "query_summary": query_summary_settings,
            "retrieval": retrieval,
            "grading": grading_settings,
            "ingest": ingest,
            "llm": llm,
            "paths": paths,
        },
        resources=SEARCH,
        checks_may_skip=True,
        name=ASSET,
        partitions_def=query_requests,
        group_name=GROUP,
        deps=all_partitions("chunk_embeddings", "paper_abstract"),
        check_specs=[
            dg.AssetCheckSpec(
                CITATION_CHECK,
                asset=ASSET,
                partitions_def=query_requests,
                blocking=True,
                description="Every citation of the summary and its highlights resolves to a "
                "stored chunk of the paper, on the cited page.",
            ),
            *grading_check_specs(ASSET, query_requests, GRADING_CHECKS, grading_blocks),
        ],
        description="A summary of one paper focused on a reader's query (MAIS): diagnostic "
        "questions, then summarize, answer the questions from the summary alone, judge the "
        "answers against the paper, until the judge approves or query_summary.max_iterations; "
        "every iteration kept; each cited sentence graded against its chunks. Files: "
        "LITPIPE_HOME/outputs/<collection>/query_summary/<key>.md and <key>.html.",
    )
    def query_summary(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[QuerySummary] | dg.AssetCheckResult]:
        key, resources = context.partition_key, Resources(context)
        catalog, artifacts = resources.catalog, resources.artifacts
        request = stored_request(
            paths, ASSET, key, QuerySummaryRequest, "add requests with `litpipe ask`"
        )
        try:
            source = catalog.catalog().source(request.paper_id)
        except KeyError as error:
            raise dg.Failure(
                f"unknown paper {request.paper_id!r}: {error.args[0]}", allow_retries=False
            ) from None
        collection = catalog.catalog().home_collection(request.paper_id)
        store = artifacts.store()
        if not store.exists(["paper_abstract"], request.paper_id):
            raise dg.Failure(not_ingested(source, collection), allow_retries=False)
        abstract = store.read(["paper_abstract"], request.paper_id, PaperAbstract)
        versions = paper_versions(context.instance, request.paper_id)
        chunk_store, model = resources.lancedb.store(), resources.embedder.embedder()
        try:
            passages = paper_passages(chunk_store, model.embedder_id, request.paper_id)
        except QuerySummaryError:
            raise dg.Failure(not_ingested(source, collection), allow_retries=False) from None

        with STEP.run(context) as step:
            asker = step.asker()
            search = paper_search(
                resources.retrieval.paper_retriever(chunk_store, model, request.paper_id),
                settings_reranker(retrieval, ingest, asker),
                request.paper_id,
                retrieval,
            )
            try:
                result = summarize_for_query(
                    request,
                    abstract.title,
                    abstract.abstract,
                    passages,
                    search,
                    query_summary_settings,
                    asker,
                )
            except QuerySummaryError as error:
                raise dg.Failure(str(error), allow_retries=False) from None
            result, outcomes = _graded(result, passages, grading_settings, asker, model)
        outputs_dir = artifacts.outputs_dir(collection)
        # The files cite the paper by its key, as the collection's files do.
        keys = citation_keys_workflow.citation_keys(catalog.catalog(), store, [request.paper_id])
        path = report.write_markdown(result, outputs_dir, collection, keys)
        page = report.write_html(result, outputs_dir, collection, keys)
        stored = checks.stored_chunks(
            chunk_store.chunk_rows(
                model.embedder_id,
                ["chunk_id", "paper_id", "page_start", "page_end"],
                paper_ids=[request.paper_id],
            ).to_pylist()
        )
        problems = report.citation_problems(result, stored)
        graded = checked(ASSET, outcomes, lambda _: grading_blocks)
        last = result.iterations[-1]
        yield step.output(
            result,
            {
                "paper_id": request.paper_id,
                "collection": collection,
                "query": request.query,
                "status": result.status,
                "route": result.route,
                "iterations": len(result.iterations),
                "final_accuracy": last.verdict.accuracy,
                "accuracy_by_iteration": dg.MetadataValue.json(
                    [it.verdict.accuracy for it in result.iterations]
                ),
                "citations": len(result.citations),
                "engine": result.engine,
                "markdown": dg.MetadataValue.path(str(path)),
                "html": dg.MetadataValue.path(str(page)),
                "trace": markdown_metadata(report.trace_table(result)),
                "preview": markdown_metadata(path.read_text(encoding="utf-8")),
                PAPER_VERSIONS: versions,
                **graded.metadata(),
            },
        )
        yield dg.AssetCheckResult(
            asset_key=ASSET,
            check_name=CITATION_CHECK,
            passed=not problems,
            severity=dg.AssetCheckSeverity.ERROR,
            description=(
                f"all {len(result.citations)} citations resolve to stored chunks"
                if not problems
                else f"unresolved citations: {'; '.join(problems)}"
            ),
            metadata={"citations": len(result.citations), "problems": len(problems)},
        )
        yield from graded.results

    return [query_summary]


def _graded(
    result: QuerySummary,
    passages: list[RetrievedChunk],
    grading_settings: GradingSettings,
    asker: Asker,
    encoder: Encoder,
) -> tuple[QuerySummary, dict[str, CheckOutcome | CheckSkipped]]:
    """The summary with its sentence grades, and the outcomes of its grading checks. Each
    segment is graded against the chunks its marker cites (any of the paper's chunks)."""
    grades, outcomes = grading.graded_checks(
        report.graded_text(result),
        grading.cited_passages(
            result.citations, {chunk.chunk_id: chunk.text for chunk in passages}
        ),
        "query summary",
        grading_settings,
        asker,
        # The collection's embedder scores support offline: the threshold is calibrated for it.
        encoder,
        title=result.title,
        prose=result.summary,
    )
    return result.model_copy(update={"grades": grades}), outcomes
