"""Per-collection comparative questions, from all the abstracts together, answered across papers."""

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.agents.base import version
from litpipe.agents.cross_questions import CrossQuestionsAgent
from litpipe.agents.rerankers import AGENT_RERANKERS, reranker_for
from litpipe.defs.assets.answers import qa_preview
from litpipe.defs.llm_steps import (
    llm_pool,
    llm_retry_policy,
    model_failures_as_step_failures,
    usage_metadata,
    usage_scope,
)
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import (
    ArtifactsResource,
    CatalogResource,
    EmbedderResource,
    LanceDBResource,
    LLMResource,
    RetrievalResource,
)
from litpipe.defs.versions import asking_version, data_version
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import CorpusIndex, CrossPaperQuestions, PaperAbstract
from litpipe.settings import Settings
from litpipe.workflows import relational


def build_cross_paper_question_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    prompts = PromptLibrary(settings.prompts_dir)
    agents = ["cross_questions", *ANSWER_AGENTS, *AGENT_RERANKERS]

    @dg.asset(
        partitions_def=collections,
        group_name="synthesis",
        deps=[dg.AssetDep("paper_abstract", partition_mapping=dg.AllPartitionMapping())],
        pool=llm_pool(settings, agents),
        retry_policy=llm_retry_policy(settings, agents),
        code_version=digest(
            version(CrossQuestionsAgent(), settings, prompts),
            asking_version(settings, prompts),
            f"n{settings.cross_paper_questions}",
        ),
        description="3-5 comparative questions written from all the collection's abstracts "
        "together (\"what distinguishes X's approach from Y's?\"), each searched across every "
        "paper and answered from its evidence like a paper's own questions.",
    )
    def cross_paper_questions(
        context: dg.AssetExecutionContext,
        corpus_index: CorpusIndex,
        catalog: CatalogResource,
        artifacts: ArtifactsResource,
        embedder: EmbedderResource,
        lancedb: LanceDBResource,
        retrieval: RetrievalResource,
        llm: LLMResource,
    ) -> dg.Output[CrossPaperQuestions]:
        collection = context.partition_key
        abstracts = artifacts.of_papers(
            "paper_abstract", catalog.catalog().papers(collection), PaperAbstract
        )
        step_settings = llm.settings()
        ledger = llm.ledger(usage_scope(context))
        client = llm.client_for_any(agents, ledger)
        retriever = retrieval.retriever(lancedb.store(), embedder.embedder(), collection)
        with model_failures_as_step_failures():
            found = relational.cross_paper(
                collection,
                list(abstracts.values()),
                retriever,
                reranker_for(step_settings, llm.prompts(), client),
                step_settings,
                llm.prompts(),
                client,
            )
        context.log.info(
            f"{collection}: {len(found.answers)} comparative questions over "
            f"{corpus_index.papers} papers"
        )
        return dg.Output(
            found,
            data_version=data_version(found),
            metadata={
                "questions": len(found.answers),
                "engine": found.engine,
                "preview": markdown_metadata(qa_preview(found.answers)),
                **usage_metadata(ledger.summary()),
            },
        )

    return [cross_paper_questions]
