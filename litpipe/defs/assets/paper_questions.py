"""Per-paper questions, broad and on the method's inner workings, from title and abstract."""

import dagster as dg

from litpipe.agents.paper_questions import PaperQuestionsAgent, paper_questions_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild, build_papers
from litpipe.defs.partitions import papers
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import ArtifactsResource, CatalogResource, LLMResource
from litpipe.defs.versions import CodeVersion, backfill_policy
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
        deps=["paper_abstract"],
        backfill_policy=backfill_policy(settings),
        description="Questions of the paper in two styles, `broad` (context, objective, method, "
        "findings) and `inner_workings` (design, steps, mechanisms, rationale).",
    )
    def paper_questions(
        context: dg.AssetExecutionContext,
        catalog: CatalogResource,
        llm: LLMResource,
        artifacts: ArtifactsResource,
    ) -> dg.MaterializeResult:
        store = artifacts.store()
        with STEP.run(context, llm) as step:
            client = step.client()

            def build(paper_id: str) -> PaperBuild[PaperQuestions]:
                questions = paper_questions_from(
                    store.read(["paper_abstract"], paper_id, PaperAbstract),
                    step.settings,
                    step.prompts,
                    client,
                    per_style=step.settings.synthesis.questions_per_style,
                )
                return step.paper(
                    questions,
                    {
                        "engine": questions.engine,
                        "questions": len(questions.questions),
                        "preview": markdown_metadata(
                            "\n".join(f"- *{q.style}*: {q.text}" for q in questions.questions)
                        ),
                    },
                )

            return build_papers(context, store, catalog.catalog(), build)

    return [paper_questions]
