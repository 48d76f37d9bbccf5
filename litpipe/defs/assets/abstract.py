"""Per-paper abstract: the parsed one when the paper has it, else written by the abstract agent."""

import dagster as dg

from litpipe.agents.abstract import AbstractAgent, paper_abstract_from
from litpipe.agents.base import version
from litpipe.defs.llm_steps import (
    llm_pool,
    llm_retry_policy,
    model_failures_as_step_failures,
    usage_metadata,
    usage_scope,
)
from litpipe.defs.partitions import papers
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import data_version
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import PaperAbstract, PaperDocument
from litpipe.settings import Settings


def build_abstract_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    agent = AbstractAgent()

    @dg.asset(
        partitions_def=papers,
        group_name="questions",
        pool=llm_pool(settings, [agent.name]),
        retry_policy=llm_retry_policy(settings, [agent.name]),
        code_version=version(agent, settings, PromptLibrary(settings.prompts_dir)),
        description="Title and abstract: parsed from the paper, or written by the `abstract` "
        "agent (offline: whole sentences of the paper) when it has none.",
    )
    def paper_abstract(
        context: dg.AssetExecutionContext, paper_document: PaperDocument, llm: LLMResource
    ) -> dg.Output[PaperAbstract]:
        ledger = llm.ledger(usage_scope(context))
        with model_failures_as_step_failures():
            abstract = paper_abstract_from(
                paper_document, llm.settings(), llm.prompts(), llm.client_for(agent.name, ledger)
            )
        return dg.Output(
            abstract,
            data_version=data_version(abstract),
            metadata={
                "source": abstract.source,
                "engine": abstract.engine,
                "words": len(abstract.abstract.split()),
                **usage_metadata(ledger.summary()),
            },
        )

    return [paper_abstract]
