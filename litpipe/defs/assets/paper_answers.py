"""Per-paper answers: each question answered only from its evidence, every claim cited."""

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import papers
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import ANSWERS, CodeVersion
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
        description="Each question of the paper answered only from its reranked evidence, "
        "citing passages as [paper_id:page]; single-view, or multi-view (MASS-RAG: summarizer, "
        "extractor and reasoner reconciled) as `synthesis.answer_mode` says.",
    )
    def paper_answers(
        context: dg.AssetExecutionContext, question_evidence: PaperEvidence, llm: LLMResource
    ) -> dg.Output[PaperAnswers]:
        with STEP.run(context, llm) as step:
            answers = answer_paper(question_evidence, step.settings, step.prompts, step.client())
        return step.output(
            answers,
            {
                "engine": answers.engine,
                "mode": answers.mode,
                "answers": len(answers.answers),
                "citations": sum(len(answer.citations) for answer in answers.answers),
                "preview": markdown_metadata(qa_preview(answers.answers)),
            },
        )

    return [paper_answers]


def qa_preview(answers: list[Answer]) -> str:
    return "\n\n".join(f"**{answer.question.text}**\n\n{answer.text}" for answer in answers)
