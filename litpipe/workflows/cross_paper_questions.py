"""`cross_paper_questions`: comparative questions written from all the abstracts together, each
searched across every paper of the collection and answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litpipe.agents.base import engine_name
from litpipe.agents.cross_paper_questions import comparative_questions
from litpipe.llm.errors import LLMError
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import CrossPaperQuestions, PaperAbstract, PaperQuestions
from litpipe.settings import Settings
from litpipe.workflows.optional_steps import not_run
from litpipe.workflows.paper_answers import ask

if TYPE_CHECKING:
    from litpipe.agents.base import ModelClient
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker


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
    searched across every paper of the collection and answered. Optional: when the model work
    fails, none, and why (`optional_steps`)."""
    route = settings.route("cross_paper_questions")
    try:
        questions = comparative_questions(collection, abstracts, settings, prompts, client)
        answers = (
            ask(
                PaperQuestions(paper_id="", engine=engine_name(route), questions=questions),
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
    except LLMError as error:
        return CrossPaperQuestions(
            collection=collection,
            engine=engine_name(route),
            answers=[],
            not_run=not_run("cross_paper_questions", error),
        )
    return CrossPaperQuestions(collection=collection, engine=engine_name(route), answers=answers)
