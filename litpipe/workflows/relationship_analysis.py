"""`relationship_analysis` (X-Sum's "pipeline 2" after the answers): one insight per
question-and-answer pair, typed relationships between papers, theme and narrative, made in one
model call where it fits the model's window (`analysis`, as X-Sum makes it), else in two steps
(`insights` per paper, then `relationships`); refined, when `synthesis.follow_up_questions` asks
any, by follow-up questions for thin papers. The expert synthesis and its plain-language version
are written from the analysis by `litpipe/workflows/synthesis.py`.

    follow_up = follow_up_answerer(retriever_of, reranker, retrieval, synthesis, asker)
    analysis = analyse(collection, answers, comparative, abstracts, follow_up, synthesis, asker)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from litpipe.agents.asker import Asker
from litpipe.agents.relationship_analysis.analysis import AnalysisAgent, one_call_analysis
from litpipe.agents.relationship_analysis.followups import follow_up_questions, thin_papers
from litpipe.agents.relationship_analysis.insights import insights_for
from litpipe.agents.relationship_analysis.relationships import (
    RelationshipDraft,
    RelationshipsAgent,
    papers_named,
    relate,
    type_distribution,
)
from litpipe.llm.errors import LLMError
from litpipe.schemas import (
    Answer,
    CitedRelationship,
    CrossPaperQuestions,
    FollowUp,
    Insight,
    PaperAbstract,
    PaperAnswers,
    PaperQuestions,
    Question,
    RelationshipAnalysis,
)
from litpipe.settings import RetrievalSettings, SynthesisSettings
from litpipe.workflows.optional_steps import not_run
from litpipe.workflows.paper_answers import ask

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker
    from litpipe.retrieval.store import TextEncoder

logger = logging.getLogger(__name__)

# Asks questions of one paper's chunks (follow-ups) and answers them from what it finds.
FollowUpAnswerer = Callable[[str, list[Question]], list[Answer]]


def follow_up_answerer(
    retriever_of: Callable[[str], HybridRetriever],
    reranker: Reranker,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    asker: Asker,
) -> FollowUpAnswerer:
    """What `analyse` asks a thin paper's follow-up questions with: each searched in that paper's
    own chunks (`retriever_of(paper_id)`) and answered like its own questions."""

    def follow_up(paper_id: str, questions: list[Question]) -> list[Answer]:
        return ask(
            PaperQuestions(paper_id=paper_id, engine="follow_up", questions=questions),
            retriever_of(paper_id),
            reranker,
            "own",
            retrieval,
            synthesis,
            asker,
        )

    return follow_up


def analyse(
    collection: str,
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    abstracts: dict[str, PaperAbstract],
    follow_up: FollowUpAnswerer,
    synthesis: SynthesisSettings,
    asker: Asker,
    encoder: TextEncoder | None = None,
    cited: Sequence[CitedRelationship] = (),
) -> RelationshipAnalysis:
    """`relationship_analysis`: insights, relationships, theme and narrative; with
    `synthesis.follow_up_questions` set, papers left thin (too few insights, or absent from the
    narrative) are asked follow-up questions once, and the analysis is made again with their
    answers; a paper whose follow-ups fail (a model error) is
    recorded with why and left as it was. With an `encoder` (the collection's embedder),
    relationship candidates are each insight's nearest neighbours (`relate`). `cited`: how
    the papers that cite each other relate, as their citing sentences say
    (`citation_graph.cited_relationships`), kept on the analysis."""
    papers = list(answers)
    titles = {paper_id: abstracts[paper_id].title for paper_id in papers}
    pairs = [answer for paper_id in papers for answer in answers[paper_id].answers]
    pairs += comparative.answers if comparative is not None else []

    insights, draft, writer = _analysed(collection, pairs, titles, synthesis, asker, encoder, cited)
    # The refinement pass, an extra beyond X-Sum's pipeline 2: off unless follow-ups are asked.
    thin = (
        thin_papers(
            papers,
            insights,
            papers_named(draft.narrative, draft.citations, titles),
            synthesis.min_insights_per_paper,
        )
        if synthesis.follow_up_questions
        else {}
    )
    follow_ups = []
    follow_ups_not_run = []
    for paper_id, reason in thin.items():
        asked = [answer.question for answer in answers[paper_id].answers]
        # Optional: a paper whose follow-ups fail keeps the insights it has.
        try:
            questions = follow_up_questions(
                abstracts[paper_id], asked, reason, synthesis.follow_up_questions, asker
            )
            if questions:
                follow_ups.append(
                    FollowUp(
                        paper_id=paper_id, reason=reason, answers=follow_up(paper_id, questions)
                    )
                )
        except LLMError as error:
            follow_ups_not_run.append(not_run("follow_up_questions", error, paper_id))
    if follow_ups:
        logger.info(
            "%s: follow-up questions for %d thin papers: %s",
            collection,
            len(follow_ups),
            ", ".join(item.paper_id for item in follow_ups),
        )
        extra = [answer for item in follow_ups for answer in item.answers]
        insights, draft, writer = _analysed(
            collection,
            _in_paper_order(pairs, extra, papers),
            titles,
            synthesis,
            asker,
            encoder,
            cited,
        )
    return RelationshipAnalysis(
        collection=collection,
        engine=asker.engine(writer),
        papers=papers,
        theme=draft.theme,
        narrative=draft.narrative,
        insights=insights,
        relationships=draft.relationships,
        type_distribution=type_distribution(draft.relationships),
        cited_relationships=list(cited),
        follow_ups=follow_ups,
        follow_ups_not_run=follow_ups_not_run,
        references={
            paper_id: reference
            for paper_id in papers
            if (reference := abstracts[paper_id].reference) is not None
        },
    )


def _analysed(
    collection: str,
    pairs: list[Answer],
    titles: dict[str, str],
    synthesis: SynthesisSettings,
    asker: Asker,
    encoder: TextEncoder | None,
    cited: Sequence[CitedRelationship],
) -> tuple[list[Insight], RelationshipDraft, str]:
    """The insights and the analysis of `pairs`, and the agent whose engine wrote the analysis:
    in one call (`analysis`, X-Sum's pipeline 2) where it fits, else in two steps (`insights`,
    one call per paper, then `relationships`)."""
    one_call = one_call_analysis(collection, pairs, titles, asker, cited)
    if one_call is not None:
        return *one_call, AnalysisAgent.name
    insights = insights_for(pairs, asker)
    draft = relate_insights(collection, insights, titles, synthesis, asker, encoder, cited)
    return insights, draft, RelationshipsAgent.name


def relate_insights(
    collection: str,
    insights: list[Insight],
    titles: dict[str, str],
    synthesis: SynthesisSettings,
    asker: Asker,
    encoder: TextEncoder | None,
    cited: Sequence[CitedRelationship] = (),
) -> RelationshipDraft:
    """`relate`, whose offline engine weighs each insight's `synthesis.relationship_neighbours`
    nearest by `encoder` (every pair without one); a model is given `cited` as evidence."""
    nearest = None if encoder is None else (encoder, synthesis.relationship_neighbours)
    return relate(collection, insights, titles, asker, nearest, cited)


def _in_paper_order(pairs: list[Answer], extra: list[Answer], papers: list[str]) -> list[Answer]:
    """The follow-up answers placed after their paper's own, comparative answers last."""
    order = {paper_id: index for index, paper_id in enumerate(papers)}
    combined = [*pairs, *extra]
    return sorted(
        combined,
        key=lambda answer: order.get(answer.question.paper_id, len(papers)),
    )
