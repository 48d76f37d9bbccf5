"""The `comparison_aspects` agent: the aspects (columns) of a collection's comparison table,
proposed from its papers' titles, abstracts and questions and answers, as ArxivDIGESTables
writes a table's schema before its values (its prompt:
`litpipe/prompts/comparison_table/comparison_aspects.md`). Its offline engine
(`litpipe.extractive.comparison_table.offline_aspects`) gives the fixed six.

A reply's aspects are cleaned (`cleaned_aspects`): spaces collapsed, blanks and repeats (in
any case) dropped, at most `max_aspects` kept, in the model's order.
"""

from __future__ import annotations

from collections.abc import Sequence

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.comparison_table import (
    AspectsInput,
    AspectsReply,
    offline_aspects,
)
from litpipe.llm.prompts import fence


class ComparisonAspectsAgent(Agent[AspectsInput, AspectsReply]):
    name = "comparison_aspects"
    reply_tokens = 256
    offline = staticmethod(offline_aspects)

    def prompt_values(self, inputs: AspectsInput) -> dict[str, str]:
        # One part per paper: a prompt too long for the window loses its last papers first.
        parts = [
            "\n".join([f"Title: {paper.title}", f"Abstract: {paper.abstract}", *paper.answers])
            for paper in inputs.papers
        ]
        return dict(
            collection=inputs.collection,
            max_aspects=str(inputs.max_aspects),
            papers=fence("\n\n".join(parts) if parts else "(no papers)"),
        )


def cleaned_aspects(aspects: Sequence[str], most: int) -> list[str]:
    """The aspects with their spaces collapsed, blanks and repeats (in any case) dropped, the
    first `most` kept."""
    kept: dict[str, str] = {}
    for aspect in aspects:
        named = " ".join(aspect.split())
        if named:
            kept.setdefault(named.casefold(), named)
    return list(kept.values())[:most]


def proposed_aspects(inputs: AspectsInput, asker: Asker) -> list[str]:
    """The table's aspects: the routed model's, cleaned, or offline the fixed set."""
    reply = asker.ask(ComparisonAspectsAgent(), inputs)
    return cleaned_aspects(reply.aspects, inputs.max_aspects)
