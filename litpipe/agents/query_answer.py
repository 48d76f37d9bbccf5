"""The `query_answer` agent: a reader's question answered in one passage of prose, up to a word
budget, from passages of several papers, every sentence citing its passage as `[paper_id:page]`.

It is the `answers` agent's task at another length: `answers` writes two to four sentences from
a question's three best chunks; this writes the long-form, multi-document answer an expert would
(ScholarQA's expert answers run to some 240 words over two to ten papers), so its prompt says
the budget and asks that the papers be drawn together.

Its offline engine (`litpipe.extractive.query_answer.offline_query_answer`) is the `answers`
engine made to cover the papers and fill the budget: each paper's best evidence sentence, then
the others, best first, verbatim and cited, until the budget is spent.

`answer_queries` is the entry point: with a model, every question's call goes in one concurrent
batch; markers that resolve to no passage given are removed (`answers.answer_from`), and a
model's answer over the budget keeps its first whole sentences that fit (its first sentence at
least), so that every system compared under the budget gets the same words.
"""

from __future__ import annotations

from litpipe.agents.answering import answer_from, question_and_passages
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.answering import NO_ANSWER, AnswerReply
from litpipe.extractive.query_answer import QueryAnswerInput, offline_query_answer
from litpipe.extractive.related_work import count_words
from litpipe.schemas import Answer
from litpipe.text import cited_sentences


class QueryAnswerAgent(Agent[QueryAnswerInput, AnswerReply]):
    name = "query_answer"
    reply_tokens = 512
    offline = staticmethod(offline_query_answer)

    def prompt_values(self, inputs: QueryAnswerInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs),
            words=str(inputs.words),
            no_answer=NO_ANSWER,
        )


def within_words(text: str, words: int) -> str:
    """`text`'s first whole sentences (each with its markers) that fit in `words`; the first
    sentence whatever its length, so an answer is never emptied. Within the budget, `text` as
    it is."""
    if count_words(text) <= words:
        return text
    kept: list[str] = []
    left = words
    for sentence in cited_sentences(text):
        length = count_words(sentence)
        if length > left and kept:
            break
        kept.append(sentence)
        left -= length
    return " ".join(kept)


def answer_queries(
    batch: list[QueryAnswerInput],
    asker: Asker,
) -> list[Answer]:
    """Every question answered from its passages within its budget, in order."""
    agent = QueryAnswerAgent()
    replies = asker.ask_each(agent, batch)
    engine = asker.engine(agent.name)
    return [
        answer_from(inputs, within_words(reply.answer, inputs.words), engine)
        for inputs, reply in zip(batch, replies, strict=True)
    ]
