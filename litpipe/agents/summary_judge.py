"""The `summary_judge` agent (MAIS's judge): the diagnostic questions' answers, written from the
summary alone, compared with the paper; it approves the summary, or returns the topics of
mismatch the summarizer must fix.

The iteration's accuracy is the share of the answers the judge accepts. A question the reply
leaves without a judgement counts as accepted only when the judge approved.

A paper longer than the context is judged in parts (MAIS checks the summary against the source
article, not against what retrieval found): one call per part, each judging the answers against
its part alone, and `combined_reply` joins the parts' findings without another call.

The offline engine checks coverage: for each question it finds the source's best sentences
(those holding the largest share of the question's content terms) and accepts the answer when it
holds at least `COVERED` of the terms of one of them; a question no source sentence bears on is
accepted, there being nothing to miss. The topics of the questions it rejects are the topics of
mismatch; it approves when there are none.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.agents.paper_summary import evidence_sentences
from litpipe.agents.query_summary import ranked_sentences, terms_of
from litpipe.agents.summary_qa import NOT_IN_SUMMARY
from litpipe.citations import evidence_block
from litpipe.llm.prompts import fence
from litpipe.schemas import DiagnosticQuestion, JudgeVerdict, QAPair, RetrievedChunk

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


class JudgeAgent(Agent[JudgeInput, JudgeReply]):
    name = "summary_judge"
    reply_tokens = 512
    offline = staticmethod(offline_judge)

    def prompt_values(self, inputs: JudgeInput) -> dict[str, str]:
        pairs = "\n\n".join(
            f"{q.question_id} (topic: {q.topic})\nQ: {q.text}\n"
            f"A: {inputs.answers.get(q.question_id, '')}"
            for q in inputs.questions
        )
        return dict(
            query=fence(inputs.query, "query"),
            # Answers quote the summary, which quotes the paper: fenced like it.
            answers=fence(pairs, "answers"),
            passages=evidence_block(inputs.passages),
            scope="the paper"
            if inputs.parts == 1
            else f"part {inputs.part} of the {inputs.parts} parts of the paper, in reading order "
            "(judge each answer against this part alone: accept an answer on what this part "
            "does not cover, and say it is not addressed here; the other parts judge it)",
        )


def combined_reply(parts: list[JudgeInput], replies: list[JudgeReply]) -> JudgeReply:
    """One reply from the replies on each part of a long paper, without another model call.

    A reduce call would only re-read verdicts already made: each part's judge accepts what its
    part does not bear on and rejects what its part contradicts or holds and the summary lacks,
    so the paper's verdict on a question follows from the parts' by rule. A question is
    rejected when any part rejects it (an omission or an error that part shows, its reason
    named by part); accepted when no part rejects it and one addresses it; when no part
    addresses it, accepted only if the answer claims nothing (`NOT_IN_SUMMARY`), else rejected
    as unsupported by the paper; a question no part judged takes the overall verdict. The
    summary is approved when every part approves and every question is accepted; the topics
    are the parts' topics, then those of the unsupported questions.
    """
    judgements: list[QuestionJudgement] = []
    topics = [topic for reply in replies for topic in reply.mismatch_topics]
    for question in parts[0].questions:
        found = [
            (inputs.part, judgement)
            for inputs, reply in zip(parts, replies, strict=True)
            for judgement in reply.judgements
            if judgement.question_id.strip() == question.question_id
        ]
        rejected = [(part, j) for part, j in found if not j.accepted]
        addressed = [(part, j) for part, j in found if j.addressed]
        if rejected:
            part, judgement = rejected[0]
            accepted, reason = False, f"Part {part} of {len(parts)}: {judgement.reason}"
        elif addressed:
            part, judgement = addressed[0]
            accepted, reason = True, f"Part {part} of {len(parts)}: {judgement.reason}"
        elif not found:
            # No judgement at all: the overall verdict decides, as for one call (`verdict_from`).
            continue
        elif parts[0].answers.get(question.question_id, "") == NOT_IN_SUMMARY:
            accepted, reason = True, "No part of the paper bears on this question either."
        else:
            accepted = False
            reason = "No part of the paper bears on this question: the answer is unsupported."
            topics.append(question.topic)
        judgements.append(
            QuestionJudgement(
                question_id=question.question_id,
                reason=reason,
                accepted=accepted,
                addressed=bool(addressed),
            )
        )
    return JudgeReply(
        judgements=judgements,
        mismatch_topics=list(dict.fromkeys(topics)),
        approved=all(reply.approved for reply in replies)
        and all(judgement.accepted for judgement in judgements),
    )


def verdict_from(inputs: JudgeInput, reply: JudgeReply) -> tuple[JudgeVerdict, list[QAPair]]:
    """The reply as a verdict and the judged QA pairs.

    Judgements are matched by question id (unknown ids ignored); a question without one takes
    the overall verdict. A disapproval naming no topic gets the topics of the rejected
    questions, so the summarizer always learns what to fix.
    """
    by_id = {j.question_id.strip(): j for j in reply.judgements}
    pairs = []
    for question in inputs.questions:
        judgement = by_id.get(question.question_id)
        pairs.append(
            QAPair(
                question_id=question.question_id,
                question=question.text,
                answer=inputs.answers.get(question.question_id, ""),
                accepted=judgement.accepted if judgement is not None else reply.approved,
                judgement=" ".join(judgement.reason.split()) if judgement is not None else "",
            )
        )
    topics = list(dict.fromkeys(" ".join(t.split()) for t in reply.mismatch_topics if t.strip()))
    if not reply.approved and not topics:
        topic_of = {q.question_id: q.topic for q in inputs.questions}
        topics = list(dict.fromkeys(topic_of[p.question_id] for p in pairs if not p.accepted))
    accepted = sum(pair.accepted for pair in pairs)
    verdict = JudgeVerdict(
        approved=reply.approved,
        mismatch_topics=[] if reply.approved else topics,
        accuracy=accepted / len(pairs) if pairs else (1.0 if reply.approved else 0.0),
    )
    return verdict, pairs
