"""Per-paper abstract: the parsed one when the paper has it, else written by the abstract agent."""

import dagster as dg

from litpipe.agents.paper_abstract import PaperAbstractAgent, paper_abstract_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.steps import PaperBatch, each_paper, paper_asset
from litpipe.defs.versions import CodeVersion
from litpipe.schemas import PaperAbstract, PaperDocument
from litpipe.settings import LLMSettings, OperationsSettings

STEP = ModelStep(
    agents=(PaperAbstractAgent.name,), code=CodeVersion(agents=(PaperAbstractAgent(),))
)


def build_paper_abstract_assets(
    llm: LLMSettings, operations: OperationsSettings
) -> list[dg.AssetsDefinition]:
    @paper_asset(
        STEP,
        {"llm": llm, "operations": operations},
        group_name="paper_questions",
        deps=["paper_document"],
        description="Title and abstract: parsed from the paper, or written by the `abstract` "
        "agent (offline: whole sentences of the paper) when it has none.",
    )
    def paper_abstract(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return each_paper(context, STEP, abstract_of)

    return [paper_abstract]


def abstract_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperAbstract]:
    document = papers.store.read(["paper_document"], paper_id, PaperDocument)
    abstract = paper_abstract_from(document, papers.step.asker())
    return papers.paper(
        abstract,
        {
            "source": abstract.source,
            "engine": abstract.engine,
            "words": len(abstract.abstract.split()),
        },
    )
