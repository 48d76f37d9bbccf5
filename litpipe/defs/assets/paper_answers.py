"""Per-paper answers: each question answered only from its evidence, every claim cited."""

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild, build_papers
from litpipe.defs.partitions import papers
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import ArtifactsResource, CatalogResource, LLMResource
from litpipe.defs.versions import ANSWERS, CodeVersion, backfill_policy
from litpipe.schemas import Answer, PaperAnswers, PaperEvidence
from litpipe.settings import Settings
from litpipe.workflows import paper_answers as workflow
from litpipe.workflows.paper_answers import answer_paper

STEP = ModelStep(agents=ANSWER_AGENTS, code=CodeVersion(versions=(ANSWERS,), modules=(workflow,)))


def build_paper_answers_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @STEP.asset(
        settings,
        partitions_def=papers,
        group_name="paper_answers",
        deps=["question_evidence"],
        backfill_policy=backfill_policy(settings),
        description="Each question of the paper answered only from its reranked evidence, "
        "citing passages as [paper_id:page]; single-view, or multi-view (MASS-RAG: summarizer, "
        "extractor and reasoner reconciled, or a candidate answer from each view compared) as "
        "`synthesis.answer_mode` says.",
    )
    def paper_answers(
        context: dg.AssetExecutionContext,
        catalog: CatalogResource,
        llm: LLMResource,
        artifacts: ArtifactsResource,
    ) -> dg.MaterializeResult:
        store = artifacts.store()
        with STEP.run(context, llm) as step:
            client = step.client()

            def build(paper_id: str) -> PaperBuild[PaperAnswers]:
                evidence = store.read(["question_evidence"], paper_id, PaperEvidence)
                answers = answer_paper(evidence, step.settings, step.prompts, client)
                return step.paper(
                    answers,
                    {
                        "engine": answers.engine,
                        "mode": answers.mode,
                        "answers": len(answers.answers),
                        "citations": sum(len(answer.citations) for answer in answers.answers),
                        "preview": markdown_metadata(qa_preview(answers.answers)),
                    },
                )

            return build_papers(context, store, catalog.catalog(), build)

    return [paper_answers]


def qa_preview(answers: list[Answer]) -> str:
    return "\n\n".join(f"**{answer.question.text}**\n\n{answer.text}" for answer in answers)
