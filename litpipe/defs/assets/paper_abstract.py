"""Per-paper abstract: the parsed one when the paper has it, else written by the abstract agent."""

import dagster as dg

from litpipe.agents.paper_abstract import PaperAbstractAgent, paper_abstract_from
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild, build_papers
from litpipe.defs.partitions import papers
from litpipe.defs.resources import ArtifactsResource, CatalogResource, LLMResource
from litpipe.defs.versions import CodeVersion, backfill_policy
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
        deps=["paper_document"],
        backfill_policy=backfill_policy(settings),
        description="Title and abstract: parsed from the paper, or written by the `abstract` "
        "agent (offline: whole sentences of the paper) when it has none.",
    )
    def paper_abstract(
        context: dg.AssetExecutionContext,
        catalog: CatalogResource,
        llm: LLMResource,
        artifacts: ArtifactsResource,
    ) -> dg.MaterializeResult:
        store = artifacts.store()
        with STEP.run(context, llm) as step:
            client = step.client()

            def build(paper_id: str) -> PaperBuild[PaperAbstract]:
                document = store.read(["paper_document"], paper_id, PaperDocument)
                abstract = paper_abstract_from(document, step.settings, step.prompts, client)
                return step.paper(
                    abstract,
                    {
                        "source": abstract.source,
                        "engine": abstract.engine,
                        "words": len(abstract.abstract.split()),
                    },
                )

            return build_papers(context, store, catalog.catalog(), build)

    return [paper_abstract]
