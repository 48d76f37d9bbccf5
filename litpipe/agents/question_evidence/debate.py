"""The `debate` agent (LitLLM's debate-style relevance scoring): arguments for a passage's
relevance to a query with verbatim quotes that support them, arguments against with the quotes
that support those, then a probability, 1 to 100.

The query is a question or a research idea and the passage a chunk or a reference's abstract,
so the same agent reranks evidence and scores references for a related-work section.

Quotes must be the passage's own words: `verbatim_quotes` drops any a reply holds that are not
(after whitespace normalisation) rather than failing the reply. Its offline engine
(`litpipe.extractive.debate.offline_debate`) quotes the passage's sentences that share the most
query terms, and the first that shares none against it, and gives a probability from the query
terms the passage holds.

The reply had one quote list before it had a list for each side: a cached reply of that shape is
no longer looked up (the reply schema is part of the LLM cache key), and a stored verdict of
that shape reads its quotes as quotes for (`DebateVerdict`).
"""

from __future__ import annotations

from litpipe.agents.question_evidence.passages import PassageAgent
from litpipe.extractive.debate import DebateReply, offline_debate

# Quotation marks a model may put around a quote that are not part of the passage.
_QUOTE_MARKS = "\"'\u201c\u201d\u2018\u2019"


def _normalised(text: str) -> str:
    return " ".join(text.split())


def verbatim_quotes(reply: DebateReply, passage: str) -> DebateReply:
    """The reply without the quotes, of either side, that are not in the passage word for word
    (whitespace and enclosing quotation marks aside)."""
    text = _normalised(passage)

    def kept(quotes: list[str]) -> list[str]:
        return [
            quote
            for quote in quotes
            if (core := _normalised(quote).strip(_QUOTE_MARKS).strip()) and core in text
        ]

    update = {
        side: found
        for side in ("quotes_for", "quotes_against")
        if (found := kept(getattr(reply, side))) != getattr(reply, side)
    }
    return reply.model_copy(update=update) if update else reply


class DebateAgent(PassageAgent[DebateReply]):
    name = "debate"
    reply_tokens = 768
    offline = staticmethod(offline_debate)
