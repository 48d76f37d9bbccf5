"""The `search_queries` agent (LitLLM's keyword generation): short search queries written from a
research idea, each searched over the reference table besides the idea itself, their rankings
fused by Reciprocal Rank Fusion (`litpipe.workflows.related_work`).

A query says one thing the related work must cover (a problem, a method, a setting), in the few
words a search engine is given, so that a reference matching one aspect of the idea is found even
when the idea as a whole, dominated by its other aspects, does not rank it high.

Its offline engine (`litpipe.extractive.search_queries.offline_search_queries`) writes the
idea's weightiest key phrases, one query each.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.extractive.search_queries import (
    SearchQueriesInput,
    SearchQueriesReply,
    offline_search_queries,
)
from litpipe.llm.prompts import fence
from litpipe.retrieval.text import tokenize


def usable_queries(reply: SearchQueriesReply, inputs: SearchQueriesInput) -> list[str]:
    """The reply's queries that can be searched: on one line, neither blank nor a repeat of the
    idea or of another (case aside), at most `count` of them."""
    seen = {" ".join(inputs.idea.split()).casefold()}
    kept: list[str] = []
    for query in reply.queries:
        line = " ".join(query.split())
        if line and tokenize(line) and line.casefold() not in seen:
            seen.add(line.casefold())
            kept.append(line)
    return kept[: inputs.count]


class SearchQueriesAgent(Agent[SearchQueriesInput, SearchQueriesReply]):
    name = "search_queries"
    reply_tokens = 256
    offline = staticmethod(offline_search_queries)

    def prompt_values(self, inputs: SearchQueriesInput) -> dict[str, str]:
        return dict(idea=fence(inputs.idea, "idea"), count=str(inputs.count))
