"""Per-paper answers: each question answered only from its evidence, every claim cited."""

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS, answers_version
from litpipe.defs.llm_steps import (
    llm_pool,
    llm_retry_policy,
    model_failures_as_step_failures,
    usage_metadata,
    usage_scope,
)
from litpipe.defs.partitions import papers
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import data_version
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import Answer, PaperAnswers, PaperEvidence
from litpipe.settings import Settings
from litpipe.workflows import relational


def build_answer_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @dg.asset(
        partitions_def=papers,
        group_name="answers",
        pool=llm_pool(settings, ANSWER_AGENTS),
        retry_policy=llm_retry_policy(settings, ANSWER_AGENTS),
        code_version=answers_version(settings, PromptLibrary(settings.prompts_dir)),
        description="Each question of the paper answered only from its reranked evidence, "
        "citing passages as [paper_id:page]; single-view, or multi-view (MASS-RAG: summarizer, "
        "extractor and reasoner reconciled) as `answer_mode` says.",
    )
    def paper_answers(
        context: dg.AssetExecutionContext, question_evidence: PaperEvidence, llm: LLMResource
    ) -> dg.Output[PaperAnswers]:
        step_settings = llm.settings()
        ledger = llm.ledger(usage_scope(context))
        with model_failures_as_step_failures():
            answers = relational.answer_paper(
                question_evidence,
                step_settings,
                llm.prompts(),
                llm.client_for_any(ANSWER_AGENTS, ledger),
            )
        return dg.Output(
            answers,
            data_version=data_version(answers),
            metadata={
                "engine": answers.engine,
                "mode": answers.mode,
                "answers": len(answers.answers),
                "citations": sum(len(answer.citations) for answer in answers.answers),
                "preview": markdown_metadata(qa_preview(answers.answers)),
                **usage_metadata(ledger.summary()),
            },
        )

    return [paper_answers]


def qa_preview(answers: list[Answer]) -> str:
    return "\n\n".join(f"**{answer.question.text}**\n\n{answer.text}" for answer in answers)
