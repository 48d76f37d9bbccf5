"""Per-collection relationship analysis: insights, typed relationships, theme and narrative."""

from collections.abc import Iterator

import dagster as dg

from litpipe.agents.question_evidence.rerankers import reranker_for
from litpipe.agents.relationship_analysis.analysis import AnalysisAgent
from litpipe.agents.relationship_analysis.followups import FollowUpsAgent
from litpipe.agents.relationship_analysis.insights import InsightsAgent
from litpipe.agents.relationship_analysis.relationships import RelationshipsAgent
from litpipe.defs.check_results import optional_step_result, optional_step_spec
from litpipe.defs.llm_steps import ASKING_AGENTS, ModelStep
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import analysis_plots, analysis_preview, markdown_metadata
from litpipe.defs.resources import (
    ArtifactsResource,
    CatalogResource,
    EmbedderResource,
    LanceDBResource,
    LLMResource,
    RetrievalResource,
)
from litpipe.defs.run_failures import why_not_built
from litpipe.defs.versions import ASKING, CodeVersion
from litpipe.retrieval import neighbours
from litpipe.schemas import (
    CrossPaperQuestions,
    LeftOutPaper,
    PaperAbstract,
    PaperAnswers,
    RelationshipAnalysis,
)
from litpipe.settings import Settings
from litpipe.workflows import relationship_analysis as workflow
from litpipe.workflows.relationship_analysis import analyse, follow_up_answerer

# `analysis` makes in one call what `insights` and `relationships` make in two steps.
ANALYSIS_AGENTS = ("analysis", "insights", "relationships", "followups")


STEP = ModelStep(
    agents=(*ANALYSIS_AGENTS, *ASKING_AGENTS),
    code=CodeVersion(
        agents=(AnalysisAgent(), InsightsAgent(), RelationshipsAgent(), FollowUpsAgent()),
        # Follow-up questions are retrieved and answered like a paper's own.
        versions=(ASKING,),
        # Relationship candidates are the insights' nearest neighbours by the embedder.
        modules=(workflow, neighbours),
        settings=(
            "synthesis.min_insights_per_paper",
            "synthesis.follow_up_questions",
            "synthesis.relationship_neighbours",
        ),
        embedder=True,
    ),
)


def build_relationship_analysis_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @STEP.asset(
        settings,
        partitions_def=collections,
        group_name="relationship_analysis",
        deps=[dg.AssetDep("paper_answers", partition_mapping=dg.AllPartitionMapping())],
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
        catalog: CatalogResource,
        artifacts: ArtifactsResource,
        embedder: EmbedderResource,
        lancedb: LanceDBResource,
        retrieval: RetrievalResource,
        llm: LLMResource,
    ) -> Iterator[dg.Output[RelationshipAnalysis] | dg.AssetCheckResult]:
        collection = context.partition_key
        members = catalog.catalog().papers(collection)
        answers = artifacts.of_papers("paper_answers", members, PaperAnswers)
        if not answers:
            raise dg.Failure(
                f"{collection}: no paper has answers yet; run its papers first",
                allow_retries=False,
            )
        abstracts = artifacts.of_papers("paper_abstract", answers, PaperAbstract)
        # Insights are mostly the papers' own sentences: their vectors, kept, serve the graders.
        store, model = lancedb.store(), embedder.cached()
        with STEP.run(context, llm) as step:
            client = step.client()
            follow_up = follow_up_answerer(
                lambda paper_id: retrieval.paper_retriever(store, model, paper_id),
                reranker_for(step.settings, step.prompts, client),
                step.settings,
                step.prompts,
                client,
            )
            analysis = analyse(
                collection,
                answers,
                cross_paper_questions,
                abstracts,
                follow_up,
                step.settings,
                step.prompts,
                client,
                model,
            )
        # A paper whose own assets failed costs the others nothing: it is named, with why.
        analysis.left_out = [
            LeftOutPaper(
                paper_id=paper,
                reason=why_not_built(context.instance, artifacts.store(), paper, "paper_answers"),
            )
            for paper in members
            if paper not in answers
        ]
        distribution = analysis.type_distribution
        total = sum(distribution.values())
        if total >= 3 and max(distribution.values()) == total:
            context.log.warning(
                f"{collection}: all {total} relationships are of one type "
                f"({max(distribution, key=distribution.__getitem__)}): a sign the analysis "
                "did not tell the papers apart"
            )
        yield step.output(
            analysis,
            {
                "engine": analysis.engine,
                "papers": len(analysis.papers),
                "insights": len(analysis.insights),
                "relationships": total,
                "relationship_types": dg.MetadataValue.json(distribution),
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
