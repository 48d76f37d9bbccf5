"""`paper_answers`: each paper's questions answered only from their evidence, and the same for
questions asked later (follow-ups, comparative questions), which are searched first.

    evidence = gather_evidence(questions, retriever, reranker, "own", 100, 20, 3)
    answers = answer_paper(evidence, synthesis, asker)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from litpipe.agents.answers import answer_questions, answers_engine
from litpipe.agents.asker import Asker
from litpipe.retrieval.evidence import gather_evidence
from litpipe.schemas import Answer, PaperAnswers, PaperEvidence, PaperQuestions
from litpipe.settings import RetrievalSettings, SynthesisSettings

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever, Scope
    from litpipe.retrieval.rerank import Reranker


def answer_paper(
    evidence: PaperEvidence,
    synthesis: SynthesisSettings,
    asker: Asker,
) -> PaperAnswers:
    """`paper_answers`: every question of the paper answered only from its evidence."""
    answers = answer_questions(evidence.questions, synthesis.answer_mode, asker)
    return PaperAnswers(
        paper_id=evidence.paper_id,
        mode=synthesis.answer_mode,
        engine=answers_engine(synthesis.answer_mode, asker),
        answers=answers,
    )


def ask(
    questions: PaperQuestions,
    retriever: HybridRetriever,
    reranker: Reranker,
    scope: Scope,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    asker: Asker,
) -> list[Answer]:
    """Questions retrieved (candidates, fusion, MMR, reranking) and answered like a paper's own."""
    evidence = gather_evidence(
        questions,
        retriever,
        reranker,
        scope=scope,
        candidates=retrieval.candidates,
        rerank_candidates=retrieval.rerank_candidates,
        keep=retrieval.evidence_per_question,
    )
    return answer_questions(evidence.questions, synthesis.answer_mode, asker)
