"""The offline engine of the `summary_judge` agent (MAIS's judge): the diagnostic questions'
answers, written from the summary alone, compared with the paper.

It checks coverage: for each question it finds the source's best sentences (those holding the
largest share of the question's content terms) and accepts the answer when it holds at least
`COVERED` of the terms of one of them; a question no source sentence bears on is accepted, there
being nothing to miss. The topics of the questions it rejects are the topics of mismatch; it
approves when there are none.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import evidence_sentences
from litpipe.extractive.query_summary import ranked_sentences, terms_of
from litpipe.schemas import DiagnosticQuestion, RetrievedChunk

# An answer holding this share of a sentence's terms says what the sentence says (markers,
# spacing and a stray word aside).
COVERED = 0.8


class JudgeInput(BaseModel):
    query: str
    questions: list[DiagnosticQuestion]
    answers: dict[str, str] = Field(description="Answer from the summary, by question id.")
    passages: list[RetrievedChunk] = Field(
        description="What the summarizer read, or one part of the whole paper."
    )
    part: int = Field(default=1, ge=1, description="Which part of the paper `passages` is.")
    parts: int = Field(default=1, ge=1, description="The parts the paper is judged in.")


class QuestionJudgement(BaseModel):
    question_id: str = Field(description="The question's id, exactly as given.")
    reason: str = Field(description="How the answer compares with the paper, in a sentence.")
    accepted: bool = Field(description="True when the answer agrees with the paper.")
    # Said apart from `accepted`: an answer no part of a long paper bears on is a claim the
    # paper does not support, though each part, not bearing on it, accepts it.
    addressed: bool = Field(
        default=True,
        description="True when the passages say anything on the question, whether or not the "
        "answer agrees with them.",
    )


class JudgeReply(BaseModel):
    # Judgements first, the verdict last: a model writing its JSON in order judges before it
    # decides.
    judgements: list[QuestionJudgement] = Field(description="One per question, in their order.")
    mismatch_topics: list[str] = Field(
        description="Topics the summary gets wrong or leaves out, a few words each; empty when "
        "approved."
    )
    approved: bool = Field(description="True when the summary answers every question well.")


def covers(answer: str, sentence: str) -> bool:
    wanted = terms_of(sentence)
    return bool(wanted) and len(terms_of(answer) & wanted) / len(wanted) >= COVERED


def best_source_sentences(question: str, candidates: list[str]) -> list[str]:
    """The candidates holding the largest share of the question's terms (ties all kept)."""
    ranked = ranked_sentences(question, candidates)
    return [sentence for share, sentence in ranked if share == ranked[0][0]] if ranked else []


def offline_judge(inputs: JudgeInput) -> JudgeReply:
    candidates = evidence_sentences(inputs.passages)
    judgements: list[QuestionJudgement] = []
    topics: list[str] = []
    for question in inputs.questions:
        answer = inputs.answers.get(question.question_id, "")
        best = best_source_sentences(question.text, candidates)
        if not best:
            accepted, reason = True, "The paper's passages do not bear on this question either."
        elif any(covers(answer, sentence) for sentence in best):
            accepted, reason = True, "The answer holds the passage sentence that answers it."
        else:
            accepted, reason = False, f"The answer misses what the paper says: {best[0]}"
            if question.topic not in topics:
                topics.append(question.topic)
        judgements.append(
            QuestionJudgement(
                question_id=question.question_id,
                reason=reason,
                accepted=accepted,
                addressed=bool(best),
            )
        )
    return JudgeReply(judgements=judgements, mismatch_topics=topics, approved=not topics)
