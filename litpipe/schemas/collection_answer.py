"""A reader's question answered from a whole collection (`litpipe ask --collection`).

One request is a collection and a question. The answer is written from the passages retrieved
for it among the collection's papers, every sentence citing `[paper_id:page]`, each cited
sentence graded by the support check; or, when the passages do not answer it, a fixed sentence
citing nothing, with the nearest passages listed.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from litpipe.schemas.evidence import AnswerMode, Citation, RetrievedChunk
from litpipe.schemas.grades import OutputGrades
from litpipe.schemas.papers import sha256_text

# A question longer than this is refused: a question is a sentence or a paragraph, and every
# character of it is embedded and sent to each answering agent.
MAX_QUESTION_CHARS = 10_000
# What the answer says when the collection's passages do not answer the question.
NOT_ANSWERED = "The collection does not answer this."


class CollectionAnswerRequest(BaseModel):
    """What a reader asks: a question of one collection."""

    collection: str
    question: str

    @field_validator("collection")
    @classmethod
    def _a_collection(cls, collection: str) -> str:
        collection = collection.strip()
        if not collection:
            raise ValueError("the collection is empty: name the collection to ask")
        return collection

    @field_validator("question")
    @classmethod
    def _a_question(cls, question: str) -> str:
        if len(question) > MAX_QUESTION_CHARS:
            raise ValueError(
                f"the question is {len(question):,} characters long: at most "
                f"{MAX_QUESTION_CHARS:,} are accepted"
            )
        # Spacing is not meaning: the same words make the same request (and key).
        question = " ".join(question.split())
        if not question:
            raise ValueError("the question is empty: say what to ask the collection")
        return question

    @property
    def key(self) -> str:
        """Stable, short and URL-safe (a partition key): the same collection and question,
        spaced alike, always give the same key."""
        return "c-" + sha256_text(f"{self.collection}\n{self.question}")[:16]


class CollectionAnswer(BaseModel):
    """The answer to a `CollectionAnswerRequest`, or the collection's admission that it does
    not answer it."""

    request: CollectionAnswerRequest
    answered: bool = Field(
        description="False when the passages do not answer the question: `text` is then "
        "NOT_ANSWERED, with no citation."
    )
    declined_because: str = Field(
        default="", description="Why the question was not answered (empty when it was)."
    )
    text: str = Field(description="The answer, citing its passages as `[paper_id:page]`.")
    citations: list[Citation]
    passages: list[RetrievedChunk] = Field(
        description="The passages retrieved for the question, best first: what the answer was "
        "written from, and the nearest passages listed when it was not answered."
    )
    papers: list[str] = Field(description="The collection's papers searched.")
    titles: dict[str, str] = Field(
        default_factory=dict, description="The title of each paper of the passages, by its id."
    )
    mode: AnswerMode = Field(description="`synthesis.answer_mode`: which agents wrote it.")
    engine: str = Field(description="What wrote the answer: `offline` or a model.")
    views: dict[str, str] = Field(
        default_factory=dict,
        description="Multi-view modes: what each MASS-RAG view wrote (empty in single mode).",
    )
    grades: OutputGrades | None = Field(
        default=None,
        description="The support check's grade of each sentence of the answer (None when it "
        "was not answered: nothing is claimed).",
    )
