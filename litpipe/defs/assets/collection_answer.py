"""Questions asked of a whole collection, one partition per request: a collection and a question.

Whoever adds a `collection_questions` partition (`litpipe ask --collection`) first stores its
`CollectionAnswerRequest` at `LITPIPE_HOME/requests/collection_answer/<key>.json`; the key is a
hash of the collection and the question, so a repeated question is the same partition. The step
reads the collection's papers from the catalog (the retracted ones left out), searches their
chunks in LanceDB (the rows `chunk_embeddings` wrote, the collection's saved BM25 index), writes
the answer as `synthesis.answer_mode` says (`litpipe.workflows.collection_answer`), grades each
cited sentence against its passages, declines when none is supported, and writes
`LITPIPE_HOME/outputs/<collection>/collection_answer/<key>.md`, `.html` and `.json`.

Checks: `citation_validity` blocks (every citation resolves to a stored chunk of a paper of the
collection, on the cited page); `support` and `coherence` warn, or block when `grading.blocking`
is set, and are not run for a declined answer (nothing is claimed: `skipped_checks` says so).

Lineage: the asset depends on every paper's `chunk_embeddings` (a request's collection is known
only from its stored request), so the UI may call an answer stale when any paper changes.
`litpipe ask --collection` applies the exact rule instead: the code version, and the collection's
papers with the data versions of their chunks and embeddings (`collection_versions`, recorded
in the metadata): a paper added, retracted or re-ingested makes the answer stale.
"""

from collections.abc import Iterator

import dagster as dg

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.defs.check_results import checked, grading_check_specs
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import collection_questions
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.staleness import members_fingerprint, partition_versions
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
from litpipe.evaluation.grading import COHERENCE_CHECK, GRADING_AGENTS, SUPPORT_CHECK
from litpipe.hashing import digest
from litpipe.report import answer_diff as answer_diff_report
from litpipe.report import collection_answer as report
from litpipe.report import notices
from litpipe.retrieval.support import Encoder
from litpipe.schemas import CollectionAnswer, CollectionAnswerRequest
from litpipe.settings import (
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    RetrievalSettings,
    SynthesisSettings,
)
from litpipe.workflows import answer_history
from litpipe.workflows import citation_keys as citation_keys_workflow
from litpipe.workflows.collection_answer import (
    COLLECTION_ANSWER_AGENTS,
    answer_question,
    collection_answer,
    collection_answer_version,
    collection_search,
    with_grades,
)
from litpipe.workflows.reranking import settings_reranker

ASSET = "collection_answer"
GROUP = "collection_answer"
CITATION_CHECK = "citation_validity"
# The grading checks, each with what it checks; they warn, or block with `grading.blocking`.
GRADING_CHECKS = grading.check_descriptions("answer", "the passages")
# The per-paper assets an answer is searched in; the collection's papers and their data
# versions at materialization time are recorded, as one digest, under this metadata key.
PAPER_INPUTS = ("paper_chunks", "chunk_embeddings")
COLLECTION_VERSIONS = "collection_versions"


def collection_versions(instance: dg.DagsterInstance, members: list[str]) -> str:
    """The collection's papers and their inputs as the instance knows them now, as one digest:
    a paper added, retracted or re-ingested changes it."""
    parts = [members_fingerprint(members)]
    for asset in PAPER_INPUTS:
        versions = partition_versions(instance, dg.AssetKey(asset), members)
        parts += [f"{asset}:{paper}={versions.get(paper, 'missing')}" for paper in sorted(members)]
    return digest(*parts)


def recorded_collection_versions(instance: dg.DagsterInstance, key: str) -> str | None:
    """The `collection_versions` the request's latest materialization recorded (None: never
    materialized, or before they were recorded)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(ASSET), asset_partitions=[key]), limit=1
    ).records
    materialization = records[0].asset_materialization if records else None
    recorded = materialization.metadata.get(COLLECTION_VERSIONS) if materialization else None
    return None if recorded is None else str(recorded.value)


STEP = ModelStep(
    agents=(*COLLECTION_ANSWER_AGENTS, *AGENT_RERANKERS, *GRADING_AGENTS),
    # The writers of the answer mode (prompts, routes, code), the passages they read (embedder,
    # retrieval over the collection's chunks, reranker), the judges that grade it, the files it
    # writes. The request's collection and question are its partition key.
    code=CodeVersion(
        versions=(
            NamedVersion(
                "collection_answer",
                lambda groups, asker: collection_answer_version(
                    groups["synthesis"].answer_mode, asker
                ),
            ),
            RERANKER,
            GRADING,
        ),
        modules=(report, notices),
        output=CollectionAnswer,
        settings=RETRIEVAL_SETTINGS,
        embedder=True,
    ),
)


def build_collection_answer_assets(
    synthesis: SynthesisSettings,
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
            "synthesis": synthesis,
            "retrieval": retrieval,
            "grading": grading_settings,
            "ingest": ingest,
            "llm": llm,
            "paths": paths,
        },
        resources=SEARCH,
        checks_may_skip=True,
        name=ASSET,
        partitions_def=collection_questions,
        group_name=GROUP,
        deps=all_partitions("chunk_embeddings"),
        check_specs=[
            dg.AssetCheckSpec(
                CITATION_CHECK,
                asset=ASSET,
                partitions_def=collection_questions,
                blocking=True,
                description="Every citation of the answer resolves to a stored chunk of a "
                "paper of the collection, on the cited page.",
            ),
            *grading_check_specs(ASSET, collection_questions, GRADING_CHECKS, grading_blocks),
        ],
        description="A reader's question answered from a whole collection: hybrid retrieval "
        "over its papers' chunks, MMR, the reranker, then the answer written as "
        "synthesis.answer_mode says (query_answer, or MASS-RAG's views), every sentence citing "
        "[paper_id:page] and graded by the support check; 'The collection does not answer "
        "this.' with the nearest passages when the passages do not answer it. Files: "
        "LITPIPE_HOME/outputs/<collection>/collection_answer/<key>.md, .html and .json.",
    )
    def collection_answer_asset(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[CollectionAnswer] | dg.AssetCheckResult]:
        key, resources = context.partition_key, Resources(context)
        request = stored_request(
            paths,
            ASSET,
            key,
            CollectionAnswerRequest,
            "add requests with `litpipe ask --collection`",
        )
        catalog = resources.catalog.catalog()
        if request.collection not in catalog.collections():
            raise dg.Failure(
                f"unknown collection {request.collection!r}: run its papers with `litpipe run "
                f"SOURCE --collection {request.collection}` first",
                allow_retries=False,
            )
        members = catalog.papers(request.collection)
        versions = collection_versions(context.instance, members)
        chunk_store, model = resources.lancedb.store(), resources.embedder.embedder()
        mode = synthesis.answer_mode

        with STEP.run(context) as step:
            asker = step.asker()
            search = collection_search(
                resources.retrieval.retriever(chunk_store, model, request.collection, members),
                settings_reranker(retrieval, ingest, asker),
                retrieval,
            )
            passages = search(request.question)
            # The passages' papers' stored rows: their titles for the reader, their chunks for
            # the citation check.
            rows = chunk_store.chunk_rows(
                model.embedder_id,
                ["chunk_id", "paper_id", "page_start", "page_end", "title"],
                paper_ids=sorted({chunk.paper_id for chunk in passages}),
            ).to_pylist()
            titles = {row["paper_id"]: row["title"] for row in rows if row["title"]}
            answer = answer_question(request, passages, mode, asker)
            result, outcomes = _graded(
                collection_answer(request, answer, members, mode, titles),
                grading_settings,
                asker,
                model,
            )
        # The files cite each paper by its key, as the collection's files do.
        keys = citation_keys_workflow.citation_keys(
            catalog, resources.artifacts.store(), sorted({c.paper_id for c in result.citations})
        )
        path, page, data = report.write_files(
            result, resources.artifacts.outputs_dir(request.collection), keys
        )
        history = _kept(paths, result)
        problems = report.citation_problems(result, checks.stored_chunks(rows))
        graded = checked(ASSET, outcomes, lambda _: grading_blocks)
        yield step.output(
            result,
            {
                "collection": request.collection,
                "question": request.question,
                "answered": result.answered,
                "declined_because": result.declined_because,
                "mode": mode,
                "papers": len(members),
                "passages": len(result.passages),
                "citations": len(result.citations),
                "cited_papers": len({c.paper_id for c in result.citations}),
                "engine": result.engine,
                "markdown": dg.MetadataValue.path(str(path)),
                "html": dg.MetadataValue.path(str(page)),
                "json": dg.MetadataValue.path(str(data)),
                "preview": markdown_metadata(path.read_text(encoding="utf-8")),
                **history,
                COLLECTION_VERSIONS: versions,
                **graded.metadata(),
            },
        )
        yield dg.AssetCheckResult(
            asset_key=ASSET,
            check_name=CITATION_CHECK,
            passed=not problems,
            severity=dg.AssetCheckSeverity.ERROR,
            description=(
                f"unresolved citations: {'; '.join(problems)}"
                if problems
                else f"all {len(result.citations)} citations resolve to stored chunks of the "
                "collection's papers"
                if result.answered
                else "not answered: the reply cites nothing"
            ),
            metadata={"citations": len(result.citations), "problems": len(problems)},
        )
        yield from graded.results

    return [collection_answer_asset]


def _kept(paths: HomePaths, result: CollectionAnswer) -> dict[str, dg.MetadataValue]:
    """Keeps the answer in its question's history (unless the version kept last is the same)
    and says, for the UI, where the versions are and what changed since the one before."""
    request = result.request
    # Unchanged, `previous` is `current`: their diff says so.
    previous, current = answer_history.record(paths.home, result)
    diff = answer_history.answer_diff(previous, current)
    return {
        "history": dg.MetadataValue.path(
            str(answer_history.folder(paths.home, request.collection, request.key))
        ),
        "versions": dg.MetadataValue.int(
            len(answer_history.entries(paths.home, request.collection, request.key))
        ),
        "changed": dg.MetadataValue.text(answer_diff_report.changes_line(diff)),
        "changes": markdown_metadata(answer_diff_report.diff_markdown(diff, limit=50)),
    }


def _graded(
    result: CollectionAnswer, grading_settings: GradingSettings, asker: Asker, encoder: Encoder
) -> tuple[CollectionAnswer, dict[str, CheckOutcome | CheckSkipped]]:
    """The answer with its sentence grades (declined when none is supported), and the outcomes
    of its grading checks: not run for a declined answer, which claims nothing."""
    if result.answered:
        grades, outcomes = grading.graded_checks(
            result.text,
            grading.cited_passages(
                result.citations, {chunk.chunk_id: chunk.text for chunk in result.passages}
            ),
            "answer",
            grading_settings,
            asker,
            # The collection's embedder scores support offline: the threshold is calibrated
            # for it.
            encoder,
            title=result.request.question,
        )
        result = with_grades(result, grades)
        if result.answered:
            return result, outcomes
    skipped = CheckSkipped(reason=f"not answered, so nothing is claimed: {result.declined_because}")
    return result, {SUPPORT_CHECK: skipped, COHERENCE_CHECK: skipped}
