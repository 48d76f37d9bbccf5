"""Per-collection relationship analysis: insights, typed relationships, theme and narrative."""

from collections import Counter
from collections.abc import Iterator

import dagster as dg

from litpipe.agents.relationship_analysis.analysis import AnalysisAgent
from litpipe.agents.relationship_analysis.followups import FollowUpsAgent
from litpipe.agents.relationship_analysis.insights import InsightsAgent
from litpipe.agents.relationship_analysis.relationships import RelationshipsAgent
from litpipe.artifacts import ArtifactStore
from litpipe.defs.check_results import optional_step_result, optional_step_spec
from litpipe.defs.llm_steps import ASKING_AGENTS, ModelStep
from litpipe.defs.paper_batches import latest_failure
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import analysis_plots, analysis_preview, markdown_metadata
from litpipe.defs.steps import SEARCH, Collection, all_partitions, step_asset
from litpipe.defs.versions import ASKING, CodeVersion
from litpipe.instance.run_failures import latest_run_failure
from litpipe.retrieval import neighbours
from litpipe.schemas import (
    CitationGraph,
    CrossPaperQuestions,
    LeftOutPaper,
    PaperAbstract,
    PaperAnswers,
    PaperChunks,
    RelationshipAnalysis,
)
from litpipe.settings import (
    HomePaths,
    IngestSettings,
    LLMSettings,
    RetrievalSettings,
    SynthesisSettings,
)
from litpipe.workflows import citation_graph as citations
from litpipe.workflows import relationship_analysis as workflow
from litpipe.workflows import synthesis_history
from litpipe.workflows.relationship_analysis import analyse, follow_up_answerer
from litpipe.workflows.reranking import settings_reranker

# `analysis` makes in one call what `insights` and `relationships` make in two steps.
ANALYSIS_AGENTS = ("analysis", "insights", "relationships", "followups")


STEP = ModelStep(
    agents=(*ANALYSIS_AGENTS, *ASKING_AGENTS),
    code=CodeVersion(
        agents=(AnalysisAgent(), InsightsAgent(), RelationshipsAgent(), FollowUpsAgent()),
        # Follow-up questions are retrieved and answered like a paper's own.
        versions=(ASKING,),
        # Relationship candidates are the insights' nearest neighbours by the embedder.
        # Papers that cite each other relate as their citing sentences say.
        modules=(workflow, neighbours, citations),
        settings=(
            "synthesis.min_insights_per_paper",
            "synthesis.follow_up_questions",
            "synthesis.relationship_neighbours",
        ),
        embedder=True,
    ),
)


def build_relationship_analysis_assets(
    llm: LLMSettings,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    ingest: IngestSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    @step_asset(
        STEP,
        {
            "llm": llm,
            "retrieval": retrieval,
            "synthesis": synthesis,
            "ingest": ingest,
            "paths": paths,
        },
        resources=SEARCH,
        partitions_def=collections,
        group_name="relationship_analysis",
        deps=all_partitions("paper_answers", "paper_chunks"),
        check_specs=[optional_step_spec("relationship_analysis", "follow_up_questions")],
        description="One key insight per question-and-answer pair (none skipped), typed "
        "relationships between insights of different papers (extension, contradiction, "
        "complementary, improvement, parallel), an overall theme and a narrative naming every "
        "paper; thin papers are asked follow-up questions first (optional: a paper whose "
        "follow-ups the model fails is analysed as it is, the check says why). Papers without "
        "answers (their own assets failed) are left out, each named with why.",
    )
    def relationship_analysis(
        context: dg.AssetExecutionContext,
        cross_paper_questions: CrossPaperQuestions,
        citation_graph: CitationGraph,
    ) -> Iterator[dg.Output[RelationshipAnalysis] | dg.AssetCheckResult]:
        collection = Collection.of(context)
        answers = collection.outputs("paper_answers", PaperAnswers)
        if not answers:
            raise dg.Failure(
                f"{collection.name}: no paper has answers yet; run its papers first",
                allow_retries=False,
            )
        abstracts = collection.outputs("paper_abstract", PaperAbstract, answers)
        citing = {edge.citing for edge in citation_graph.edges if edge.citing in answers}
        cited = citations.cited_relationships(
            citation_graph.among(answers), collection.outputs("paper_chunks", PaperChunks, citing)
        )
        # Insights are mostly the papers' own sentences: their vectors, kept, serve the graders.
        resources = collection.resources
        store, model = resources.lancedb.store(), resources.embedder.cached()
        with STEP.run(context) as step:
            asker = step.asker()
            follow_up = follow_up_answerer(
                lambda paper_id: resources.retrieval.paper_retriever(store, model, paper_id),
                settings_reranker(retrieval, ingest, asker),
                retrieval,
                synthesis,
                asker,
            )
            analysis = analyse(
                collection.name,
                answers,
                cross_paper_questions,
                abstracts,
                follow_up,
                synthesis,
                asker,
                model,
                cited,
            )
        # A paper whose own assets failed costs the others nothing: it is named, with why.
        analysis.left_out = [
            LeftOutPaper(
                paper_id=paper,
                reason=why_not_built(
                    context.instance, resources.artifacts.store(), paper, "paper_answers"
                ),
            )
            for paper in collection.members
            if paper not in answers
        ] + [
            # A retracted paper is read by nothing of the collection: named, with the reason.
            LeftOutPaper.retracted(paper, reason)
            for paper, reason in collection.retracted.items()
        ]
        distribution = analysis.type_distribution
        total = sum(distribution.values())
        if total >= 3 and max(distribution.values()) == total:
            context.log.warning(
                f"{collection.name}: all {total} relationships are of one type "
                f"({max(distribution, key=distribution.__getitem__)}): a sign the analysis "
                "did not tell the papers apart"
            )
        # Kept by data version under the home: `litpipe diff` and the digest compare them.
        synthesis_history.record(paths.home, analysis)
        yield step.output(
            analysis,
            {
                "engine": analysis.engine,
                "papers": len(analysis.papers),
                "insights": len(analysis.insights),
                "relationships": total,
                "relationship_types": dg.MetadataValue.json(distribution),
                "cited_relationships": dg.MetadataValue.json(
                    Counter(relation.type for relation in analysis.cited_relationships)
                ),
                "follow_up_papers": len(analysis.follow_ups),
                "left_out": dg.MetadataValue.json(
                    {paper.paper_id: paper.reason for paper in analysis.left_out}
                ),
                "theme": analysis.theme,
                "narrative": markdown_metadata(analysis.narrative),
                "preview": analysis_preview(analysis),
                **analysis_plots(
                    analysis, {paper: abstract.title for paper, abstract in abstracts.items()}
                ),
            },
        )
        yield optional_step_result(
            "relationship_analysis", "follow_up_questions", analysis.follow_ups_not_run
        )

    return [relationship_analysis]


def why_not_built(
    instance: dg.DagsterInstance, store: ArtifactStore, paper_id: str, asset: str
) -> str:
    """Why a paper has no `asset`: its own failure in the step that last failed for it (with
    the other papers of its batch), or its latest run's failure when that run failed, else
    that it is not built yet."""
    failure = latest_failure(store, paper_id)
    if failure is not None:
        return f"its own run failed: {failure.reason}"
    reason = latest_run_failure(instance, paper_id)
    if reason is not None:
        return f"its own run failed: {reason}"
    return f"its {asset} is not built yet (run its papers first)"
