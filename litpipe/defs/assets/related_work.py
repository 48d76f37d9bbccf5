"""Related work (LitLLM), one partition per request: an abstracts table and a research idea.

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

Checks: `support` (sentence by sentence, by the `claim_judge` agent: the calibrated score
offline, a model when one is routed) and `coherence` (a model only: without one it is not run,
and the `skipped_checks` metadata says why) warn, or block when `grading.blocking` is set.
The judges are part of the code version, as for `query_summary`: another judge regrades, the
section itself coming from the reply cache.
"""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.debate import DebateAgent
from litpipe.agents.related_work import RelatedWorkAgent
from litpipe.agents.related_work_plan import RelatedWorkPlanAgent
from litpipe.agents.search_queries import SearchQueriesAgent
from litpipe.artifacts import ArtifactStore
from litpipe.defs.check_results import checked, grading_check_specs
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import related_work_requests
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import Resources, step_asset
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
from litpipe.workflows.related_work import (
    ReferenceTable,
    RelatedWorkInputError,
    load_references,
    related_work_version,
    run_related_work,
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


class StoredRelatedWorkRequest(BaseModel):
    """A `related_work` partition's inputs, as stored under `HomePaths.requests_dir`."""

    key: str = Field(description="The partition key: `rw-` and a hash of everything below.")
    request: RelatedWorkRequest
    table_path: str = Field(description="The abstracts table, an absolute path.")
    table_sha256: str = Field(description="sha256 of the table's bytes when the request was made.")


def request_key(request: RelatedWorkRequest, table_sha256: str) -> str:
    """Short, URL-safe, and the same for the same idea, limits and table content (wherever the
    table lies: the same bytes under another name are the same references)."""
    return "rw-" + digest(
        request.idea, str(request.sentences), str(request.words), str(request.top_k), table_sha256
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


def request_store(paths: HomePaths) -> ArtifactStore:
    return ArtifactStore(paths.requests_dir)


def outputs_folder(outputs_root: Path, key: str) -> Path:
    """Where a request's `related_work.md` and `related_work.json` are written."""
    return Path(outputs_root) / ASSET / checked_key(key, "request key")


def bad_input(description: str) -> dg.Failure:
    return dg.Failure(description=description, metadata={BAD_INPUT: True}, allow_retries=False)


def _stored(paths: HomePaths, key: str) -> StoredRelatedWorkRequest:
    store = request_store(paths)
    if not store.exists([ASSET], key):
        raise bad_input(
            f"no stored request for partition {key!r} (expected {store.path([ASSET], key)}): "
            "add related-work requests with `litpipe related-work`"
        )
    return store.read([ASSET], key, StoredRelatedWorkRequest)


def _unchanged_table(stored: StoredRelatedWorkRequest) -> ReferenceTable:
    """The table the request was made with, or a failure saying why it is gone."""
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
        resources=("artifacts", "embedder"),
        checks_may_skip=True,
        name=ASSET,
        partitions_def=related_work_requests,
        group_name=GROUP,
        check_specs=grading_check_specs(
            ASSET, related_work_requests, GRADING_CHECKS, grading_blocks
        ),
        description="A related-work section for a research idea from an abstracts table "
        "(LitLLM): BM25 + dense retrieval fused by RRF and diversified by MMR, debate scoring of "
        "each candidate, the top-k given to the writer, every one cited as [id] and nothing "
        "else; each cited sentence graded against the abstracts it cites. Files: "
        "LITPIPE_HOME/outputs/related_work/<request>/related_work.md, .html and .json.",
    )
    def related_work(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[RelatedWork] | dg.AssetCheckResult]:
        key, resources = context.partition_key, Resources(context)
        with STEP.run(context) as step:
            stored = _stored(paths, key)
            table = _unchanged_table(stored)
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
        files = write_related_work(
            related, outputs_folder(Path(resources.artifacts.outputs_root), key)
        )
        for warning in related.warnings:
            context.log.warning(f"{key}: {warning}")
        graded = checked(ASSET, outcomes, lambda _: grading_blocks)
        yield step.output(
            related,
            {
                "engine": related.engine,
                "debate_engine": related.debate_engine,
                "table": dg.MetadataValue.path(stored.table_path),
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
        scored.reference.id: [f"{scored.reference.title}. {scored.reference.abstract}"]
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
