"""Per-collection comparative questions, from all the abstracts together, answered across papers."""

from collections.abc import Iterator

import dagster as dg

from litpipe.agents.cross_paper_questions import CrossPaperQuestionsAgent
from litpipe.defs.assets.paper_answers import qa_preview
from litpipe.defs.check_results import optional_step_result, optional_step_spec
from litpipe.defs.llm_steps import ASKING_AGENTS, ModelStep
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import SEARCH, Collection, all_partitions, step_asset
from litpipe.defs.versions import ASKING, CodeVersion
from litpipe.schemas import CorpusIndex, CrossPaperQuestions, PaperAbstract
from litpipe.settings import IngestSettings, LLMSettings, RetrievalSettings, SynthesisSettings
from litpipe.text import counted
from litpipe.workflows import cross_paper_questions as workflow
from litpipe.workflows.cross_paper_questions import cross_paper
from litpipe.workflows.reranking import settings_reranker

STEP = ModelStep(
    agents=(CrossPaperQuestionsAgent.name, *ASKING_AGENTS),
    code=CodeVersion(
        agents=(CrossPaperQuestionsAgent(),),
        versions=(ASKING,),
        modules=(workflow,),
        settings=("synthesis.cross_paper_questions",),
    ),
)


def build_cross_paper_questions_assets(
    llm: LLMSettings,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    ingest: IngestSettings,
) -> list[dg.AssetsDefinition]:
    @step_asset(
        STEP,
        {"llm": llm, "retrieval": retrieval, "synthesis": synthesis},
        resources=SEARCH,
        partitions_def=collections,
        group_name="cross_paper_questions",
        deps=all_partitions("paper_abstract"),
        check_specs=[optional_step_spec("cross_paper_questions", "cross_paper_questions")],
        description="3-5 comparative questions written from all the collection's abstracts "
        "together (\"what distinguishes X's approach from Y's?\"), each searched across every "
        "paper and answered from its evidence like a paper's own questions. Optional: when the "
        "model fails them, there are none, the check says why, and the synthesis is written "
        "without them.",
    )
    def cross_paper_questions(
        context: dg.AssetExecutionContext, corpus_index: CorpusIndex
    ) -> Iterator[dg.Output[CrossPaperQuestions] | dg.AssetCheckResult]:
        collection = Collection.of(context)
        abstracts = collection.outputs("paper_abstract", PaperAbstract)
        retriever = collection.retriever()
        with STEP.run(context) as step:
            asker = step.asker()
            found = cross_paper(
                collection.name,
                list(abstracts.values()),
                retriever,
                settings_reranker(retrieval, ingest, asker),
                retrieval,
                synthesis,
                asker,
            )
        context.log.info(
            f"{collection.name}: {counted(len(found.answers), 'comparative question')} over "
            f"{counted(corpus_index.papers, 'paper')}"
        )
        yield step.output(
            found,
            {
                "questions": len(found.answers),
                "engine": found.engine,
                "preview": markdown_metadata(qa_preview(found.answers)),
            },
        )
        yield optional_step_result(
            "cross_paper_questions",
            "cross_paper_questions",
            [found.not_run] if found.not_run else [],
        )

    return [cross_paper_questions]
