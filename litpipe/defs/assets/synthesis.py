"""Per-collection syntheses (expert and plain-language), their checks, and the files people read.

The checks run inside each writer's step (Dagster's checks on partitioned assets go through
`check_specs`): coverage and citation validity block what follows, because a synthesis that
leaves a paper out or cites a passage that does not exist is wrong; support, an offline
measure until an LLM judge grades it, warns.
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import dagster as dg

from litpipe.agents.base import ModelClient
from litpipe.agents.plain import PLAIN_AGENTS, plain_version, write_plain_summary
from litpipe.agents.synthesis import SYNTHESIS_AGENTS, synthesis_version, write_synthesis
from litpipe.defs.llm_steps import (
    llm_pool,
    llm_retry_policy,
    model_failures_as_step_failures,
    usage_metadata,
    usage_scope,
)
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import analysis_plots, outputs_preview
from litpipe.defs.resources import (
    ArtifactsResource,
    EmbedderResource,
    LanceDBResource,
    LLMResource,
)
from litpipe.defs.versions import code_version, data_version
from litpipe.evaluation import checks
from litpipe.evaluation.checks import CheckOutcome, StoredChunk
from litpipe.evaluation.support import Encoder
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.report import collection as collection_report
from litpipe.report import graphs as report_graphs
from litpipe.schemas import (
    CollectionOutputs,
    CrossPaperQuestions,
    PaperAbstract,
    PaperAnswers,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
)
from litpipe.settings import Settings

_CHECKS = {
    "coverage": "Every paper of the collection is cited at least once.",
    "citation_validity": "Every citation resolves to a stored chunk of the cited paper, on the "
    "cited page.",
    "support": "Each cited sentence says what the passage it cites says (offline measure: the "
    "embedding cosine with the closest passage sentence, mixed with the share of its terms the "
    "passage holds, against `support_threshold`).",
}
_BLOCKING = {"coverage", "citation_validity"}


def _check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(name, asset=asset, description=description, blocking=name in _BLOCKING)
        for name, description in _CHECKS.items()
    ]


def build_synthesis_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    prompts = PromptLibrary(settings.prompts_dir)

    @dg.asset(
        partitions_def=collections,
        group_name="synthesis",
        check_specs=_check_specs("synthesis"),
        pool=llm_pool(settings, SYNTHESIS_AGENTS),
        retry_policy=llm_retry_policy(settings, SYNTHESIS_AGENTS),
        code_version=synthesis_version(settings, prompts),
        description="The expert synthesis in three parts (the spine: theme, narrative, every "
        "insight; the evidence grouped by paper; the relationship map), citing every paper; "
        "map-reduce by paper or a tree of cluster summaries when the evidence does not fit.",
    )
    def synthesis(
        context: dg.AssetExecutionContext,
        relationship_analysis: RelationshipAnalysis,
        cross_paper_questions: CrossPaperQuestions,
        artifacts: ArtifactsResource,
        embedder: EmbedderResource,
        lancedb: LanceDBResource,
        llm: LLMResource,
    ) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
        def write(
            titles: dict[str, str], answers: dict[str, PaperAnswers], step: _Step
        ) -> Synthesis:
            return write_synthesis(
                relationship_analysis,
                answers,
                cross_paper_questions,
                titles,
                step.settings,
                step.prompts,
                step.client(SYNTHESIS_AGENTS),
            )

        yield from _written_and_checked(
            "synthesis",
            write,
            context,
            relationship_analysis,
            cross_paper_questions,
            artifacts,
            embedder,
            lancedb,
            llm,
        )

    @dg.asset(
        partitions_def=collections,
        group_name="synthesis",
        check_specs=_check_specs("plain_summary"),
        pool=llm_pool(settings, PLAIN_AGENTS),
        retry_policy=llm_retry_policy(settings, PLAIN_AGENTS),
        code_version=plain_version(settings, prompts),
        description="The same argument as the synthesis for a general audience, from the same "
        "spine, each paper's contribution still distinguishable and cited.",
    )
    def plain_summary(
        context: dg.AssetExecutionContext,
        relationship_analysis: RelationshipAnalysis,
        synthesis: Synthesis,
        cross_paper_questions: CrossPaperQuestions,
        artifacts: ArtifactsResource,
        embedder: EmbedderResource,
        lancedb: LanceDBResource,
        llm: LLMResource,
    ) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
        def write(
            titles: dict[str, str], answers: dict[str, PaperAnswers], step: _Step
        ) -> Synthesis:
            return write_plain_summary(
                relationship_analysis,
                synthesis,
                titles,
                step.settings,
                step.prompts,
                step.client(PLAIN_AGENTS),
            )

        yield from _written_and_checked(
            "plain_summary",
            write,
            context,
            relationship_analysis,
            cross_paper_questions,
            artifacts,
            embedder,
            lancedb,
            llm,
        )

    @dg.asset(
        partitions_def=collections,
        group_name="synthesis",
        code_version=code_version([collection_report, report_graphs], CollectionOutputs),
        # In backticks: the UI renders descriptions as Markdown and drops a bare <collection>.
        description="The files a person reads, in `LITPIPE_HOME/outputs/<collection>/`: "
        "synthesis.md, plain.md and synthesis.html (the synthesis with clickable citations "
        "showing their passages, the relationship map with its graph, the per-paper Q&A), and "
        "the pictures relationships.svg and relationship_types.svg.",
    )
    def collection_outputs(
        context: dg.AssetExecutionContext,
        synthesis: Synthesis,
        plain_summary: Synthesis,
        relationship_analysis: RelationshipAnalysis,
        cross_paper_questions: CrossPaperQuestions,
        artifacts: ArtifactsResource,
    ) -> dg.Output[CollectionOutputs]:
        collection = context.partition_key
        answers = artifacts.of_papers("paper_answers", relationship_analysis.papers, PaperAnswers)
        titles = _titles(artifacts, relationship_analysis.papers)
        written = collection_report.write_collection_outputs(
            artifacts.outputs_dir(collection),
            synthesis,
            plain_summary,
            relationship_analysis,
            answers,
            cross_paper_questions,
            titles,
            _chunks(answers, cross_paper_questions),
        )
        outputs = CollectionOutputs(
            collection=collection, files={name: str(path) for name, path in written.items()}
        )
        return dg.Output(
            outputs,
            data_version=data_version(outputs),
            metadata={
                **{name: dg.MetadataValue.path(path) for name, path in outputs.files.items()},
                "preview": outputs_preview(synthesis, relationship_analysis, outputs.files),
                **analysis_plots(relationship_analysis, titles),
            },
        )

    return [synthesis, plain_summary, collection_outputs]


@dataclass(frozen=True)
class _Step:
    """What a writer needs of its step: the settings, the prompts and a model client."""

    settings: Settings
    prompts: PromptLibrary
    llm: LLMResource
    ledger: UsageLedger

    def client(self, agents: tuple[str, ...]) -> ModelClient | None:
        return self.llm.client_for_any(agents, self.ledger)


def _written_and_checked(
    asset: str,
    write: Callable[[dict[str, str], dict[str, PaperAnswers], _Step], Synthesis],
    context: dg.AssetExecutionContext,
    analysis: RelationshipAnalysis,
    comparative: CrossPaperQuestions,
    artifacts: ArtifactsResource,
    embedder: EmbedderResource,
    lancedb: LanceDBResource,
    llm: LLMResource,
) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
    """A writer's step: the text written, then its three checks."""
    answers = artifacts.of_papers("paper_answers", analysis.papers, PaperAnswers)
    step = _Step(llm.settings(), llm.prompts(), llm, llm.ledger(usage_scope(context)))
    titles = _titles(artifacts, analysis.papers)
    with model_failures_as_step_failures():
        written = write(titles, answers, step)
    # The expert synthesis' page in the UI shows the pictures of the analysis it is built on.
    plots = analysis_plots(analysis, titles) if asset == "synthesis" else {}
    yield _output(written, {**usage_metadata(step.ledger.summary()), **plots})
    yield from _checks(
        asset,
        written,
        _passages(answers, comparative),
        _stored(lancedb, embedder, written),
        step.settings,
        embedder.embedder(),
    )


def _output(written: Synthesis, usage: Mapping[str, object]) -> dg.Output[Synthesis]:
    return dg.Output(
        written,
        data_version=data_version(written),
        metadata={
            "engine": written.engine,
            "pattern": written.pattern,
            "papers": len(written.papers),
            "citations": len(written.citations),
            "words": len(written.text.split()),
            "preview": dg.MetadataValue.md(f"# {written.title}\n\n{written.text}"),
            **usage,
        },
    )


def _titles(artifacts: ArtifactsResource, papers: list[str]) -> dict[str, str]:
    return {
        paper_id: abstract.title
        for paper_id, abstract in artifacts.of_papers(
            "paper_abstract", papers, PaperAbstract
        ).items()
    }


def _chunks(
    answers: dict[str, PaperAnswers], comparative: CrossPaperQuestions
) -> dict[str, RetrievedChunk]:
    """Every passage a writer was given, by chunk id."""
    every_answer = [a for paper in answers.values() for a in paper.answers]
    return {
        chunk.chunk_id: chunk
        for answer in [*every_answer, *comparative.answers]
        for chunk in answer.evidence
    }


def _passages(answers: dict[str, PaperAnswers], comparative: CrossPaperQuestions) -> dict[str, str]:
    return {chunk_id: chunk.text for chunk_id, chunk in _chunks(answers, comparative).items()}


def _stored(
    lancedb: LanceDBResource, embedder: EmbedderResource, written: Synthesis
) -> dict[str, StoredChunk]:
    """The stored chunks of the cited papers, as the citation check compares them."""
    rows = lancedb.store().collection_rows(
        embedder.embedder().embedder_id,
        written.collection,
        ["chunk_id", "paper_id", "page_start", "page_end"],
        paper_ids=sorted({citation.paper_id for citation in written.citations}),
    )
    return checks.stored_chunks(rows.to_pylist())


def _checks(
    asset: str,
    written: Synthesis,
    passages: dict[str, str],
    stored: dict[str, StoredChunk],
    settings: Settings,
    encoder: Encoder,
) -> Iterator[dg.AssetCheckResult]:
    outcomes: dict[str, CheckOutcome] = {
        "coverage": checks.coverage(written),
        "citation_validity": checks.citation_validity(written, stored),
        # The collection's embedder scores support: its threshold is calibrated for MiniLM.
        "support": checks.support(written, passages, settings.support_threshold, encoder),
    }
    for name, outcome in outcomes.items():
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=name,
            passed=outcome.passed,
            severity=dg.AssetCheckSeverity.ERROR
            if name in _BLOCKING
            else dg.AssetCheckSeverity.WARN,
            description=outcome.description,
            metadata={key: _metadata_value(value) for key, value in outcome.metadata.items()},
        )


def _metadata_value(value: object) -> object:
    return dg.MetadataValue.json(value) if isinstance(value, dict | list) else value
