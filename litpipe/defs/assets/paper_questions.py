"""Per-paper questions, broad and on the method's inner workings, from title and abstract."""

import dagster as dg

from litpipe.agents.paper_questions import PaperQuestionsAgent, paper_questions_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import papers
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import CodeVersion
from litpipe.schemas import PaperAbstract, PaperQuestions
from litpipe.settings import Settings

AGENT = PaperQuestionsAgent()
STEP = ModelStep(
    agents=(AGENT.name,),
    code=CodeVersion(agents=(AGENT,), settings=("synthesis.questions_per_style",)),
)


def build_paper_questions_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @STEP.asset(
        settings,
        partitions_def=papers,
        group_name="paper_questions",
        description="Questions of the paper in two styles, `broad` (context, objective, method, "
        "findings) and `inner_workings` (design, steps, mechanisms, rationale).",
    )
    def paper_questions(
        context: dg.AssetExecutionContext, paper_abstract: PaperAbstract, llm: LLMResource
    ) -> dg.Output[PaperQuestions]:
        with STEP.run(context, llm) as step:
            questions = paper_questions_from(
                paper_abstract,
                step.settings,
                step.prompts,
                step.client(),
                per_style=step.settings.synthesis.questions_per_style,
            )
        return step.output(
            questions,
            {
                "engine": questions.engine,
                "questions": len(questions.questions),
                "preview": markdown_metadata(
                    "\n".join(f"- *{q.style}*: {q.text}" for q in questions.questions)
                ),
            },
        )

    return [paper_questions]
