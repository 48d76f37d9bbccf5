"""The `paper_abstract` agent, and the stage's choice between it and the parsed abstract.

A paper whose PDF has an abstract keeps it, word for word (source `parsed`). Otherwise the agent
writes one from the paper's opening sections (introduction, background) and its closing ones
(conclusions, discussion): a model from a bounded excerpt of each, the offline engine
(`litpipe.extractive.paper_abstract.offline_abstract`) by picking whole sentences of them (150
to 250 words, the most central and title-like, in document order).
"""

from __future__ import annotations

import re

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.paper_abstract import (
    AbstractInput,
    AbstractReply,
    offline_abstract,
    paper_regions,
    region_sentences,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import PaperAbstract, PaperDocument
from litpipe.text import Span

# What a model sees of the paper: enough for an abstract, bounded whatever the paper's length.
OPENING_EXCERPT_CHARS = 6000
CLOSING_EXCERPT_CHARS = 3000
_TERMINATED = re.compile(r"[.!?][\"')\]\u201d\u2019]*$")


def _excerpt(text: str, regions: list[tuple[int, int]], budget: int, skip: set[int]) -> str:
    """Whole sentences of the regions, taken in the regions' order up to `budget` characters
    and given in document order (headings left out)."""
    taken: list[Span] = []
    used = 0
    for sentence in region_sentences(text, regions):
        if sentence.start in skip or not _TERMINATED.search(sentence.text):
            continue
        if used + len(sentence.text) > budget:
            break
        taken.append(sentence)
        used += len(sentence.text) + 1
    return " ".join(s.text for s in sorted(taken, key=lambda s: s.start))


class PaperAbstractAgent(Agent[AbstractInput, AbstractReply]):
    name = "paper_abstract"
    reply_tokens = 1024
    offline = staticmethod(offline_abstract)

    def prompt_values(self, inputs: AbstractInput) -> dict[str, str]:
        regions = paper_regions(inputs)
        opening_starts = {s.start for s in region_sentences(inputs.text, regions.opening)}
        return dict(
            title=fence(inputs.title),
            opening=fence(
                _excerpt(inputs.text, regions.opening, OPENING_EXCERPT_CHARS, skip=set())
            ),
            closing=fence(
                _excerpt(inputs.text, regions.closing, CLOSING_EXCERPT_CHARS, skip=opening_starts)
            ),
        )


def paper_abstract_from(
    document: PaperDocument,
    asker: Asker,
) -> PaperAbstract:
    """The `paper_abstract` asset's work: the parsed abstract if the paper has one, else the
    abstract agent's (offline or from the model its route names)."""
    if document.abstract.strip():
        return PaperAbstract(
            paper_id=document.paper_id,
            title=document.title,
            abstract=document.abstract,
            source="parsed",
            engine="parsed",
            reference=document.reference(),
        )
    agent = PaperAbstractAgent()
    reply = asker.ask(agent, AbstractInput.of(document))
    return PaperAbstract(
        paper_id=document.paper_id,
        title=document.title,
        abstract=reply.abstract,
        source="generated",
        engine=asker.engine(agent.name),
        reference=document.reference(),
    )
