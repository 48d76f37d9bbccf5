"""Per-paper questions, broad and on the method's inner workings, from title and abstract."""

import functools

import dagster as dg

from litpipe.agents.paper_questions import PaperQuestionsAgent, paper_questions_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import PaperBatch, each_paper, paper_asset
from litpipe.defs.versions import CodeVersion
from litpipe.schemas import PaperAbstract, PaperQuestions
from litpipe.settings import LLMSettings, OperationsSettings, SynthesisSettings

AGENT = PaperQuestionsAgent()
STEP = ModelStep(
    agents=(AGENT.name,),
    code=CodeVersion(agents=(AGENT,), settings=("synthesis.questions_per_style",)),
)


def build_paper_questions_assets(
    llm: LLMSettings, synthesis: SynthesisSettings, operations: OperationsSettings
) -> list[dg.AssetsDefinition]:
    @paper_asset(
        STEP,
        {"llm": llm, "synthesis": synthesis, "operations": operations},
        group_name="paper_questions",
        deps=["paper_abstract"],
        description="Questions of the paper in two styles, `broad` (context, objective, method, "
        "findings) and `inner_workings` (design, steps, mechanisms, rationale).",
    )
    def paper_questions(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        per_style = synthesis.questions_per_style
        return each_paper(context, STEP, functools.partial(questions_of, per_style))

    return [paper_questions]


def questions_of(per_style: int, papers: PaperBatch, paper_id: str) -> PaperBuild[PaperQuestions]:
    questions = paper_questions_from(
        papers.store.read(["paper_abstract"], paper_id, PaperAbstract),
        papers.step.asker(),
        per_style=per_style,
    )
    return papers.paper(
        questions,
        {
            "engine": questions.engine,
            "questions": len(questions.questions),
            "preview": markdown_metadata(
                "\n".join(f"- *{q.style}*: {q.text}" for q in questions.questions)
            ),
        },
    )
