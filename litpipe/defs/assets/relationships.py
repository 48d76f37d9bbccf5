"""Per-collection relationship analysis: insights, typed relationships, theme and narrative."""

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.agents.base import version
from litpipe.agents.followups import FollowUpsAgent
from litpipe.agents.insights import InsightsAgent
from litpipe.agents.relationships import RelationshipsAgent
from litpipe.agents.rerankers import AGENT_RERANKERS, reranker_for
from litpipe.defs.llm_steps import (
    llm_pool,
    llm_retry_policy,
    model_failures_as_step_failures,
    usage_metadata,
    usage_scope,
)
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
from litpipe.defs.versions import asking_version, data_version
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import (
    Answer,
    CrossPaperQuestions,
    LeftOutPaper,
    PaperAbstract,
    PaperAnswers,
    PaperQuestions,
    Question,
    RelationshipAnalysis,
)
from litpipe.settings import Settings
from litpipe.workflows import relational

ANALYSIS_AGENTS = ("insights", "relationships", "followups")


def build_relationship_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    prompts = PromptLibrary(settings.prompts_dir)
    agents = [*ANALYSIS_AGENTS, *ANSWER_AGENTS, *AGENT_RERANKERS]

    @dg.asset(
        partitions_def=collections,
        group_name="synthesis",
        deps=[dg.AssetDep("paper_answers", partition_mapping=dg.AllPartitionMapping())],
        pool=llm_pool(settings, agents),
        retry_policy=llm_retry_policy(settings, agents),
        code_version=digest(
            *(
                version(agent, settings, prompts)
                for agent in (InsightsAgent(), RelationshipsAgent(), FollowUpsAgent())
            ),
            # Follow-up questions are retrieved and answered like a paper's own.
            asking_version(settings, prompts),
            f"min{settings.min_insights_per_paper}-f{settings.follow_up_questions}",
        ),
        description="One key insight per question-and-answer pair (none skipped), typed "
        "relationships between insights of different papers (extension, contradiction, "
        "complementary, improvement, parallel), an overall theme and a narrative naming every "
        "paper; thin papers are asked follow-up questions first. Papers without answers (their "
        "own assets failed) are left out, each named with why.",
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
    ) -> dg.Output[RelationshipAnalysis]:
        collection = context.partition_key
        members = catalog.catalog().papers(collection)
        answers = artifacts.of_papers("paper_answers", members, PaperAnswers)
        if not answers:
            raise dg.Failure(
                f"{collection}: no paper has answers yet; run its papers first",
                allow_retries=False,
            )
        abstracts = artifacts.of_papers("paper_abstract", answers, PaperAbstract)
        step_settings = llm.settings()
        ledger = llm.ledger(usage_scope(context))
        client = llm.client_for_any(agents, ledger)
        store, model = lancedb.store(), embedder.embedder()
        reranker = reranker_for(step_settings, llm.prompts(), client)

        def follow_up(paper_id: str, questions: list[Question]) -> list[Answer]:
            return relational.ask(
                PaperQuestions(paper_id=paper_id, engine="follow_up", questions=questions),
                collection,
                retrieval.retriever(store, model, collection, paper_id=paper_id),
                reranker,
                "own",
                step_settings,
                llm.prompts(),
                client,
            )

        with model_failures_as_step_failures():
            analysis = relational.analyse(
                collection,
                answers,
                cross_paper_questions,
                abstracts,
                follow_up,
                step_settings,
                llm.prompts(),
                client,
            )
        # A paper whose own assets failed costs the others nothing: it is named, with why.
        analysis.left_out = [
            LeftOutPaper(
                paper_id=paper, reason=why_not_built(context.instance, paper, "paper_answers")
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
        return dg.Output(
            analysis,
            data_version=data_version(analysis),
            metadata={
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
                **usage_metadata(ledger.summary()),
            },
        )

    return [relationship_analysis]
