"""The offline engine of the `debate` agent (LitLLM's debate-style relevance scoring): arguments
for and against a passage's relevance to a query, verbatim quotes supporting each side, then a
probability, 1 to 100.

It quotes for relevance the passage sentences that share the most query terms and against it
the first sentence that shares none (it is about something else), argues from the query terms
the passage has and lacks, and gives a probability from how many of the query's terms the
passage holds and how many of them meet in one sentence (terms that meet in a sentence speak of
the same thing).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.passages import PassageInput
from litpipe.retrieval.rerank import term_coverage
from litpipe.text import sentences

MIN_PROBABILITY = 1
MAX_PROBABILITY = 100
OFFLINE_QUOTES = 2
OFFLINE_QUOTES_AGAINST = 1
# The offline probability: how much the passage as a whole covers the query, and how much its
# best sentence does.
_PASSAGE_WEIGHT = 0.5
_SENTENCE_WEIGHT = 0.5


class DebateReply(BaseModel):
    # Each side's arguments and quotes, the probability last: a model writing its JSON in order
    # weighs the case before it decides.
    arguments_for: list[str] = Field(description="Why the passage is relevant to the query.")
    quotes_for: list[str] = Field(
        description="Spans copied word for word from the passage that support its relevance."
    )
    arguments_against: list[str] = Field(description="Why it may not be.")
    quotes_against: list[str] = Field(
        description="Spans copied word for word from the passage that speak against its relevance."
    )
    probability: int = Field(
        ge=MIN_PROBABILITY,
        le=MAX_PROBABILITY,
        description="Probability, in percent, that the passage is relevant to the query.",
    )


def offline_debate(inputs: PassageInput) -> DebateReply:
    coverage = term_coverage(inputs.query, inputs.passage)
    passage_sentences = [sentence.text for sentence in sentences(inputs.passage)]
    by_sentence = [term_coverage(inputs.query, sentence) for sentence in passage_sentences]
    quoted = sorted(
        (index for index, found in enumerate(by_sentence) if found.matched),
        key=lambda index: -by_sentence[index].share,
    )[:OFFLINE_QUOTES]
    best = by_sentence[quoted[0]] if quoted else None
    # Against: the sentences holding none of the query's terms (about something else), when
    # the passage lacks some of them.
    unrelated = [i for i, found in enumerate(by_sentence) if not found.matched and coverage.missing]
    arguments_for = []
    if coverage.matched:
        arguments_for.append(f"The passage mentions {', '.join(coverage.matched)}.")
    if best is not None and len(best.matched) > 1:
        arguments_for.append(f"One of its sentences brings together {', '.join(best.matched)}.")
    arguments_against = []
    if coverage.missing:
        arguments_against.append(f"The passage does not mention {', '.join(coverage.missing)}.")
    share = _PASSAGE_WEIGHT * coverage.share + _SENTENCE_WEIGHT * (best.share if best else 0.0)
    return DebateReply(
        arguments_for=arguments_for,
        # In passage order, as a reader meets them.
        quotes_for=[passage_sentences[index] for index in sorted(quoted)],
        arguments_against=arguments_against,
        quotes_against=[passage_sentences[i] for i in unrelated[:OFFLINE_QUOTES_AGAINST]],
        probability=MIN_PROBABILITY + round((MAX_PROBABILITY - MIN_PROBABILITY) * share),
    )
