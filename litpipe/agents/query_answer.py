"""The `query_answer` agent: a reader's question answered in one passage of prose, up to a word
budget, from passages of several papers, every sentence citing its passage as `[paper_id:page]`.

It is the `answers` agent's task at another length: `answers` writes two to four sentences from
a question's three best chunks; this writes the long-form, multi-document answer an expert would
(ScholarQA's expert answers run to some 240 words over two to ten papers), so its prompt says
the budget and asks that the papers be drawn together.

The offline engine is the `answers` engine made to cover the papers and fill the budget: every
sentence of the passages is scored by the share of the question's content terms it holds,
weighted by its passage's rank (`answers.evidence_sentences`). It takes, in this order, each
paper's best sentence holding a question term (the papers in the order of those sentences' scores:
a multi-document answer draws on every paper that bears on the question, as an expert's cites
them), then the other sentences holding a term, best first, then the remaining sentences in
passage order (the passages are the question's evidence: all of it is on its subject), skipping
near-duplicates and passing over a sentence too long for the words left for a shorter one,
until the budget is spent. Each sentence is verbatim and followed by its passage's marker; a
question none of whose terms occur in the passages gets `answers.NO_ANSWER`.

`answer_queries` is the entry point: with a model, every question's call goes in one concurrent
batch; markers that resolve to no passage given are removed (`answers.answer_from`), and a
model's answer over the budget keeps its first whole sentences that fit (its first sentence at
least), so that every system compared under the budget gets the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from litpipe.agents.answering import (
    NO_ANSWER,
    AnswerInput,
    AnswerReply,
    EvidenceSentence,
    answer_from,
    cited_text,
    evidence_sentences,
    near_duplicate,
    question_and_passages,
)
from litpipe.agents.base import Agent, BatchClient, engine_name, run_batch
from litpipe.agents.related_work import count_words
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import Answer
from litpipe.settings import Settings
from litpipe.text import cited_sentences


class QueryAnswerInput(AnswerInput):
    """A question and its passages (ranked for it, best first), with the word budget."""

    words: int = Field(ge=1, description="At most this many words, markers not counted.")


def budgeted_sentences(sentences: Sequence[EvidenceSentence], words: int) -> list[EvidenceSentence]:
    """What the answer says, in order, within `words`: each paper's best sentence holding a
    question term, the other such sentences best first, then the rest in passage order; none
    when no sentence holds a question term."""
    relevant = sorted((s for s in sentences if s.coverage > 0), key=lambda s: -s.score)
    if not relevant:
        return []
    best_of_paper: dict[str, EvidenceSentence] = {}
    for sentence in relevant:
        best_of_paper.setdefault(sentence.chunk.paper_id, sentence)
    firsts = list(best_of_paper.values())
    order = [
        *firsts,
        *(s for s in relevant if s not in firsts),
        *(s for s in sentences if s.coverage == 0),
    ]
    kept: list[EvidenceSentence] = []
    left = words
    for sentence in order:
        length = count_words(sentence.text)
        if 0 < length <= left and not near_duplicate(sentence.text, [k.text for k in kept]):
            kept.append(sentence)
            left -= length
    return kept


def offline_query_answer(inputs: QueryAnswerInput) -> AnswerReply:
    found = evidence_sentences(inputs.question.text, inputs.evidence)
    return AnswerReply(answer=cited_text(budgeted_sentences(found, inputs.words)))


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
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Answer]:
    """Every question answered from its passages within its budget, in order."""
    agent = QueryAnswerAgent()
    replies = run_batch(agent, batch, settings, prompts, client)
    engine = engine_name(settings.route(agent.name))
    return [
        answer_from(inputs, within_words(reply.answer, inputs.words), engine)
        for inputs, reply in zip(batch, replies, strict=True)
    ]
