"""`cross_paper_questions`: comparative questions written from all the abstracts together, each
searched across every paper of the collection and answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litpipe.agents.asker import Asker
from litpipe.agents.cross_paper_questions import comparative_questions
from litpipe.llm.errors import LLMError
from litpipe.schemas import CrossPaperQuestions, PaperAbstract, PaperQuestions
from litpipe.settings import RetrievalSettings, SynthesisSettings
from litpipe.workflows.optional_steps import not_run
from litpipe.workflows.paper_answers import ask

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker


def cross_paper(
    collection: str,
    abstracts: list[PaperAbstract],
    retriever: HybridRetriever,
    reranker: Reranker,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    asker: Asker,
) -> CrossPaperQuestions:
    """`cross_paper_questions`: comparative questions from all the abstracts together, each
    searched across every paper of the collection and answered. Optional: when the model work
    fails, none, and why (`optional_steps`)."""
    try:
        questions = comparative_questions(
            collection, abstracts, synthesis.cross_paper_questions, asker
        )
        answers = (
            ask(
                PaperQuestions(
                    paper_id="", engine=asker.engine("cross_paper_questions"), questions=questions
                ),
                retriever,
                reranker,
                "all",
                retrieval,
                synthesis,
                asker,
            )
            if questions
            else []
        )
    except LLMError as error:
        return CrossPaperQuestions(
            collection=collection,
            engine=asker.engine("cross_paper_questions"),
            answers=[],
            not_run=not_run("cross_paper_questions", error),
        )
    return CrossPaperQuestions(
        collection=collection, engine=asker.engine("cross_paper_questions"), answers=answers
    )
