"""Per-paper answers: each question answered only from its evidence, every claim cited."""

import functools

import dagster as dg

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import PaperBatch, each_paper, paper_asset
from litpipe.defs.versions import ANSWERS, CodeVersion
from litpipe.schemas import Answer, PaperAnswers, PaperEvidence
from litpipe.settings import LLMSettings, OperationsSettings, SynthesisSettings
from litpipe.workflows import paper_answers as workflow
from litpipe.workflows.paper_answers import answer_paper

STEP = ModelStep(agents=ANSWER_AGENTS, code=CodeVersion(versions=(ANSWERS,), modules=(workflow,)))


def build_paper_answers_assets(
    llm: LLMSettings, synthesis: SynthesisSettings, operations: OperationsSettings
) -> list[dg.AssetsDefinition]:
    @paper_asset(
        STEP,
        {"llm": llm, "synthesis": synthesis, "operations": operations},
        group_name="paper_answers",
        deps=["question_evidence"],
        description="Each question of the paper answered only from its reranked evidence, "
        "citing passages as [paper_id:page]; single-view, or multi-view (MASS-RAG: summarizer, "
        "extractor and reasoner reconciled, or a candidate answer from each view compared) as "
        "`synthesis.answer_mode` says.",
    )
    def paper_answers(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return each_paper(context, STEP, functools.partial(answers_of, synthesis))

    return [paper_answers]


def answers_of(
    synthesis: SynthesisSettings, papers: PaperBatch, paper_id: str
) -> PaperBuild[PaperAnswers]:
    evidence = papers.store.read(["question_evidence"], paper_id, PaperEvidence)
    answers = answer_paper(evidence, synthesis, papers.step.asker())
    return papers.paper(
        answers,
        {
            "engine": answers.engine,
            "mode": answers.mode,
            "answers": len(answers.answers),
            "citations": sum(len(answer.citations) for answer in answers.answers),
            "preview": markdown_metadata(qa_preview(answers.answers)),
        },
    )


def qa_preview(answers: list[Answer]) -> str:
    return "\n\n".join(f"**{answer.question.text}**\n\n{answer.text}" for answer in answers)
