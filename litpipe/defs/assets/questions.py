"""Per-paper questions, broad and on the method's inner workings, from title and abstract."""

import dagster as dg

from litpipe.agents.base import run_agent, version
from litpipe.agents.questions import QuestionsAgent, QuestionsInput, questions_for
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
from litpipe.schemas import PaperAbstract, PaperQuestions
from litpipe.settings import Settings


def build_question_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    agent = QuestionsAgent()
    prompts = PromptLibrary(settings.prompts_dir)

    @dg.asset(
        partitions_def=papers,
        group_name="questions",
        pool=llm_pool(settings, [agent.name]),
        retry_policy=llm_retry_policy(settings, [agent.name]),
        code_version=f"{version(agent, settings, prompts)}-k{settings.questions_per_style}",
        description="Questions of the paper in two styles, `broad` (context, objective, method, "
        "findings) and `inner_workings` (design, steps, mechanisms, rationale).",
    )
    def paper_questions(
        context: dg.AssetExecutionContext, paper_abstract: PaperAbstract, llm: LLMResource
    ) -> dg.Output[PaperQuestions]:
        step_settings = llm.settings()
        ledger = llm.ledger(usage_scope(context))
        inputs = QuestionsInput(
            paper_id=paper_abstract.paper_id,
            title=paper_abstract.title,
            abstract=paper_abstract.abstract,
            per_style=step_settings.questions_per_style,
        )
        with model_failures_as_step_failures():
            reply = run_agent(
                agent, inputs, step_settings, llm.prompts(), llm.client_for(agent.name, ledger)
            )
        questions = questions_for(inputs, reply, engine=step_settings.route(agent.name).model)
        return dg.Output(
            questions,
            data_version=data_version(questions),
            metadata={
                "engine": questions.engine,
                "questions": len(questions.questions),
                "preview": markdown_metadata(
                    "\n".join(f"- *{q.style}*: {q.text}" for q in questions.questions)
                ),
                **usage_metadata(ledger.summary()),
            },
        )

    return [paper_questions]
