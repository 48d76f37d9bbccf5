"""The `relevance` agent: how relevant one passage is to a query, 1 to 10, with a reason.

One call per candidate passage, for reranking (`litpipe.agents.question_evidence.rerankers`).
Its offline engine (`litpipe.extractive.relevance.offline_relevance`) scores the share of the
query's terms the passage contains, its reason naming the matched words.
"""

from __future__ import annotations

from litpipe.agents.question_evidence.passages import PassageAgent
from litpipe.extractive.relevance import RelevanceReply, offline_relevance


class RelevanceAgent(PassageAgent[RelevanceReply]):
    name = "relevance"
    reply_tokens = 128
    offline = staticmethod(offline_relevance)
