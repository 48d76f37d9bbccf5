"""`plain_summary`: the collection's plain-language summary, retold from the expert synthesis'
spine (`litpipe/agents/plain_summary.py`). An optional step (`optional_steps`): when its model
work fails, the summary is empty and says why, and the collection's page is written all the
same."""

from __future__ import annotations

from litpipe.agents.asker import Asker
from litpipe.agents.plain_summary import PlainSummaryAgent, write_plain_summary
from litpipe.llm.errors import LLMError
from litpipe.schemas import RelationshipAnalysis, Synthesis
from litpipe.workflows.optional_steps import not_run


def plain_summary(
    analysis: RelationshipAnalysis,
    expert: Synthesis,
    titles: dict[str, str],
    asker: Asker,
) -> Synthesis:
    """The `plain_summary` asset's work: `write_plain_summary`, or, when the model fails it, an
    empty summary recording why (`Synthesis.not_run`)."""
    try:
        return write_plain_summary(analysis, expert, titles, asker)
    except LLMError as error:
        return Synthesis(
            collection=analysis.collection,
            audience="plain",
            engine=asker.engine(PlainSummaryAgent.name),
            pattern=expert.pattern,
            title="In plain words: not written",
            text="",
            citations=[],
            papers=analysis.papers,
            left_out=analysis.left_out,
            not_run=not_run("plain_summary", error),
        )
