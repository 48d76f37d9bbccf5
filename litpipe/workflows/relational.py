"""The relational synthesis (X-Sum's "pipeline 2"): each paper's questions answered from their
evidence; comparative questions across the collection; a relationship analysis (one insight per
question-and-answer pair, typed relationships between papers, theme, narrative) refined by
follow-up questions for thin papers. The expert synthesis and its plain-language version are
written from the analysis by `litpipe/workflows/synthesis.py` and `litpipe/agents/plain.py`.

Each function is one stage of the asset graph, so a notebook can run the method without Dagster:

    evidence = gather_evidence(questions, collection, retriever, reranker, "own", 100, 20, 3)
    answers = answer_paper(evidence, settings, prompts, client)
    ...
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from litpipe.agents.answers import answer_questions, answers_engine
from litpipe.agents.base import engine_name
from litpipe.agents.cross_questions import comparative_questions
from litpipe.agents.followups import follow_up_questions, thin_papers
from litpipe.agents.insights import insights_for
from litpipe.agents.relationships import papers_named, relate, type_distribution
from litpipe.llm.prompts import PromptLibrary
from litpipe.retrieval.evidence import gather_evidence
from litpipe.schemas import (
    Answer,
    CrossPaperQuestions,
    FollowUp,
    PaperAbstract,
    PaperAnswers,
    PaperEvidence,
    PaperQuestions,
    Question,
    RelationshipAnalysis,
)
from litpipe.settings import Settings

if TYPE_CHECKING:
    from litpipe.agents.base import BatchClient, ModelClient
    from litpipe.retrieval.hybrid import HybridRetriever, Scope
    from litpipe.retrieval.rerank import Reranker

logger = logging.getLogger(__name__)

# Asks questions of one paper's chunks (follow-ups) and answers them from what it finds.
FollowUpAnswerer = Callable[[str, list[Question]], list[Answer]]


def answer_paper(
    evidence: PaperEvidence,
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> PaperAnswers:
    """`paper_answers`: every question of the paper answered only from its evidence."""
    answers = answer_questions(evidence.questions, settings, prompts, client)
    return PaperAnswers(
        paper_id=evidence.paper_id,
        collection=evidence.collection,
        mode=settings.synthesis.answer_mode,
        engine=answers_engine(settings),
        answers=answers,
    )


def ask(
    questions: PaperQuestions,
    collection: str,
    retriever: HybridRetriever,
    reranker: Reranker,
    scope: Scope,
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Answer]:
    """Questions retrieved (candidates, fusion, MMR, reranking) and answered like a paper's own."""
    evidence = gather_evidence(
        questions,
        collection,
        retriever,
        reranker,
        scope=scope,
        candidates=settings.retrieval.candidates,
        rerank_candidates=settings.retrieval.rerank_candidates,
        keep=settings.retrieval.evidence_per_question,
    )
    return answer_questions(evidence.questions, settings, prompts, client)


def follow_up_answerer(
    collection: str,
    retriever_of: Callable[[str], HybridRetriever],
    reranker: Reranker,
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> FollowUpAnswerer:
    """What `analyse` asks a thin paper's follow-up questions with: each searched in that paper's
    own chunks (`retriever_of(paper_id)`) and answered like its own questions."""

    def follow_up(paper_id: str, questions: list[Question]) -> list[Answer]:
        return ask(
            PaperQuestions(paper_id=paper_id, engine="follow_up", questions=questions),
            collection,
            retriever_of(paper_id),
            reranker,
            "own",
            settings,
            prompts,
            client,
        )

    return follow_up


def cross_paper(
    collection: str,
    abstracts: list[PaperAbstract],
    retriever: HybridRetriever,
    reranker: Reranker,
    settings: Settings,
    prompts: PromptLibrary,
    client: ModelClient | None,
) -> CrossPaperQuestions:
    """`cross_paper_questions`: comparative questions from all the abstracts together, each
    searched across every paper of the collection and answered."""
    questions = comparative_questions(collection, abstracts, settings, prompts, client)
    answers = (
        ask(
            PaperQuestions(
                paper_id="",
                engine=engine_name(settings.route("cross_questions")),
                questions=questions,
            ),
            collection,
            retriever,
            reranker,
            "all",
            settings,
            prompts,
            client,
        )
        if questions
        else []
    )
    return CrossPaperQuestions(
        collection=collection,
        engine=engine_name(settings.route("cross_questions")),
        answers=answers,
    )


def analyse(
    collection: str,
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    abstracts: dict[str, PaperAbstract],
    follow_up: FollowUpAnswerer,
    settings: Settings,
    prompts: PromptLibrary,
    client: ModelClient | None,
) -> RelationshipAnalysis:
    """`relationship_analysis`: insights, relationships, theme and narrative; papers left thin
    (too few insights, or absent from the narrative) are asked follow-up questions once, and the
    analysis is made again with their answers."""
    papers = list(answers)
    titles = {paper_id: abstracts[paper_id].title for paper_id in papers}
    pairs = [answer for paper_id in papers for answer in answers[paper_id].answers]
    pairs += comparative.answers if comparative is not None else []

    insights = insights_for(pairs, settings, prompts, client)
    draft = relate(collection, insights, titles, settings, prompts, client)
    thin = thin_papers(
        papers,
        insights,
        papers_named(draft.narrative, draft.citations, titles),
        settings.synthesis.min_insights_per_paper,
    )
    follow_ups = []
    for paper_id, reason in thin.items():
        asked = [answer.question for answer in answers[paper_id].answers]
        questions = follow_up_questions(
            abstracts[paper_id], asked, reason, settings, prompts, client
        )
        if questions:
            follow_ups.append(
                FollowUp(paper_id=paper_id, reason=reason, answers=follow_up(paper_id, questions))
            )
    if follow_ups:
        logger.info(
            "%s: follow-up questions for %d thin papers: %s",
            collection,
            len(follow_ups),
            ", ".join(item.paper_id for item in follow_ups),
        )
        extra = [answer for item in follow_ups for answer in item.answers]
        insights = insights_for(_in_paper_order(pairs, extra, papers), settings, prompts, client)
        draft = relate(collection, insights, titles, settings, prompts, client)
    return RelationshipAnalysis(
        collection=collection,
        engine=engine_name(settings.route("relationships")),
        papers=papers,
        theme=draft.theme,
        narrative=draft.narrative,
        insights=insights,
        relationships=draft.relationships,
        type_distribution=type_distribution(draft.relationships),
        follow_ups=follow_ups,
    )


def _in_paper_order(pairs: list[Answer], extra: list[Answer], papers: list[str]) -> list[Answer]:
    """The follow-up answers placed after their paper's own, comparative answers last."""
    order = {paper_id: index for index, paper_id in enumerate(papers)}
    combined = [*pairs, *extra]
    return sorted(
        combined,
        key=lambda answer: order.get(answer.question.paper_id, len(papers)),
    )
