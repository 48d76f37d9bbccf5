"""Per-paper abstract: the parsed one when the paper has it, else written by the abstract agent."""

import dagster as dg

from litpipe.agents.paper_abstract import PaperAbstractAgent, paper_abstract_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import papers
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import CodeVersion
from litpipe.schemas import PaperAbstract, PaperDocument
from litpipe.settings import Settings

STEP = ModelStep(
    agents=(PaperAbstractAgent.name,), code=CodeVersion(agents=(PaperAbstractAgent(),))
)


def build_paper_abstract_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @STEP.asset(
        settings,
        partitions_def=papers,
        group_name="paper_questions",
        description="Title and abstract: parsed from the paper, or written by the `abstract` "
        "agent (offline: whole sentences of the paper) when it has none.",
    )
    def paper_abstract(
        context: dg.AssetExecutionContext, paper_document: PaperDocument, llm: LLMResource
    ) -> dg.Output[PaperAbstract]:
        with STEP.run(context, llm) as step:
            abstract = paper_abstract_from(
                paper_document, step.settings, step.prompts, step.client()
            )
        return step.output(
            abstract,
            {
                "source": abstract.source,
                "engine": abstract.engine,
                "words": len(abstract.abstract.split()),
            },
        )

    return [paper_abstract]
