"""The `query_summary` agent (MAIS's summarizer): a summary of one paper focused on a reader's
query, with its key highlights, every sentence citing its passage as `[paper_id:page]`; from the
second pass on, the previous summary revised from the judge's topics of mismatch.

Its first reply also says whether the passages it was given suffice for the query (Self-Route):
when they are the paper's retrieved evidence and they do not, the workflow gives it the whole
paper instead.

Its offline engine (`litpipe.extractive.query_summary.offline_query_summary`) is extractive: a
short first draft of the sentences MMR picks for the query, then, per topic of mismatch, the
sentence that holds the most of the topic's terms.
"""

from __future__ import annotations

from litpipe import citations
from litpipe.agents.base import Agent
from litpipe.extractive.query_summary import (
    QuerySummaryInput,
    QuerySummaryReply,
    offline_query_summary,
)
from litpipe.llm.prompts import fence

NO_PREVIOUS = "(none: this is the first draft)"
NO_TOPICS = "(none)"


class QuerySummaryAgent(Agent[QuerySummaryInput, QuerySummaryReply]):
    name = "query_summary"
    reply_tokens = 1024
    offline = staticmethod(offline_query_summary)

    def prompt_values(self, inputs: QuerySummaryInput) -> dict[str, str]:
        topics = "\n".join(f"- {topic}" for topic in inputs.mismatch_topics) or NO_TOPICS
        return dict(
            paper_id=inputs.paper_id,
            query=fence(inputs.query, "query"),
            title=fence(inputs.title),
            passages=citations.evidence_block(inputs.passages),
            # The previous summary and the judge's topics quote the paper: fenced like it.
            previous=fence(inputs.previous or NO_PREVIOUS, "summary"),
            mismatch_topics=fence(topics, "feedback"),
        )
