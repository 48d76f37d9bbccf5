"""The offline engine of the `search_queries` agent (LitLLM's keyword generation): short search
queries written from a research idea.

The offline queries are the idea's key phrases (noun-phrase-like runs of content words,
`litpipe.text.phrases`), the weightiest first: a phrase weighs the number of times the idea uses
its terms, so the phrases naming what the idea keeps returning to come first; ties go to the
earlier phrase. A phrase within or around one already taken is passed over.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from litpipe.retrieval.text import tokenize
from litpipe.text import Phrase, phrases, sentences

MAX_QUERIES = 10


class SearchQueriesInput(BaseModel):
    idea: str
    count: int = Field(ge=1, le=MAX_QUERIES, description="Queries to write, at most.")


class SearchQueriesReply(BaseModel):
    queries: list[str] = Field(
        description="Search queries of a few keywords each, one aspect of the idea per query."
    )


def _nested(phrase: Phrase, taken: list[Phrase]) -> bool:
    words = set(phrase.words)
    return any(words <= set(other.words) or set(other.words) <= words for other in taken)


def offline_search_queries(inputs: SearchQueriesInput) -> SearchQueriesReply:
    """The idea's `count` weightiest key phrases, each a query (fewer when it has fewer)."""
    uses = Counter(tokenize(inputs.idea))
    found = [p for span in sentences(inputs.idea) for p in phrases(inputs.idea, span)]

    def weight(phrase: Phrase) -> int:
        return sum(uses[term] for term in tokenize(" ".join(phrase.words)))

    taken: list[Phrase] = []
    for phrase in sorted(found, key=lambda p: (-weight(p), p.start)):
        if len(taken) == inputs.count:
            break
        if not _nested(phrase, taken):
            taken.append(phrase)
    return SearchQueriesReply(queries=[" ".join(p.text.split()) for p in taken])
