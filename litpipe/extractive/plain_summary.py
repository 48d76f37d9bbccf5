"""The offline engine of the `plain_summary` agent: a collection's plain-language summary for a
general audience, from the same spine as the expert synthesis.

It cannot rephrase, so it cannot remove jargon: it writes the shortest faithful version instead,
the collection's most central finding and, per paper, its most central insight that cites a
passage, never one restating its title (verbatim, cited), in a fixed plain frame ("One study
found: ..."), the marker naming the paper.
"""

from __future__ import annotations

from pydantic import BaseModel

from litpipe.extractive import synthesis
from litpipe.extractive.paper_summary import cited_insight
from litpipe.extractive.synthesis import (
    WrittenReply,
    central_findings,
    cited_units,
    citing_insights,
    most_central,
)
from litpipe.schemas import Insight, Relationship


class PlainSummaryInput(BaseModel):
    collection: str
    theme: str
    narrative: str
    papers: list[str]
    titles: dict[str, str]
    insights: list[Insight]
    relationships: list[Relationship]
    expert_text: str


def offline_plain_summary(inputs: PlainSummaryInput) -> WrittenReply:
    """The collection's most central finding, then per other paper its most central cited
    insight in a fixed plain frame."""
    findings = {}
    citing = citing_insights(inputs.insights)
    for paper in inputs.papers:
        own = [unit for insight in citing[paper] for unit in cited_units(cited_insight(insight))]
        title = inputs.titles.get(paper, paper)
        ranked = central_findings(own, inputs.theme, [title])
        if ranked:
            findings[paper] = ranked[0]
    opening = most_central(list(findings.values()), inputs.theme)
    count = len(inputs.papers)
    lines = [
        f"What these {count} studies have most in common: {opening}"
        if opening
        else f"These {count} studies: {inputs.theme}"
    ]
    # The opening's paper is introduced by it: its finding is not said twice.
    rest = [finding for finding in findings.values() if finding != opening]
    for number, finding in enumerate(rest):
        lines.append(f"{'One study' if number == 0 else 'Another study'} found: {finding}")
    title = synthesis.offline_title(inputs.collection, count)
    return WrittenReply(
        title=f"In plain words: {title[:1].lower()}{title[1:]}", text="\n\n".join(lines)
    )
