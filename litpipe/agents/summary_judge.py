"""The `summary_judge` agent (MAIS's judge): the diagnostic questions' answers, written from the
summary alone, compared with the paper; it approves the summary, or returns the topics of
mismatch the summarizer must fix.

The iteration's accuracy is the share of the answers the judge accepts. A question the reply
leaves without a judgement counts as accepted only when the judge approved.

A paper longer than the context is judged in parts (MAIS checks the summary against the source
article, not against what retrieval found): one call per part, each judging the answers against
its part alone, and `combined_reply` joins the parts' findings without another call.

Its offline engine (`litpipe.extractive.summary_judge.offline_judge`) checks coverage: an answer
is accepted when it holds most of the terms of the source sentence that best answers its
question.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.citations import evidence_block
from litpipe.extractive.summary_judge import (
    JudgeInput,
    JudgeReply,
    QuestionJudgement,
    offline_judge,
)
from litpipe.extractive.summary_qa import NOT_IN_SUMMARY
from litpipe.llm.prompts import fence
from litpipe.schemas import JudgeVerdict, QAPair


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
