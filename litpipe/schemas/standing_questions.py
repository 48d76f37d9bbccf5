"""Standing questions: a question of a collection kept answered (`litpipe ask --watch`, or a
`[[questions]]` table of litpipe.toml), every version of its answer kept, and what changed
from one version to the next (`litpipe diff --question`, the nightly digest, the UI)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from litpipe.schemas.changes import DiffSentence, SupportChange
from litpipe.schemas.collection_answer import CollectionAnswer, CollectionAnswerRequest
from litpipe.schemas.grades import SentenceVerdict

StandingOrigin = Literal["watch", "litpipe.toml"]


class StandingQuestionEntry(BaseModel):
    """One `[[questions]]` table of litpipe.toml."""

    model_config = {"extra": "forbid"}

    collection: str
    question: str
    id: str | None = Field(
        default=None,
        description="A name for it (letters, digits, `-`, `_`), for `litpipe diff --question`; "
        "default: its request key, `c-<hash>`.",
    )

    @field_validator("id")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        if name is not None and not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"id {name!r}: use letters, digits, '-' and '_' only")
        return name

    @model_validator(mode="after")
    def _a_request(self) -> StandingQuestionEntry:
        self.request()  # an empty or too long question is refused as `litpipe ask` refuses it
        return self

    def request(self) -> CollectionAnswerRequest:
        return CollectionAnswerRequest(collection=self.collection, question=self.question)


class StandingQuestion(BaseModel):
    """A registered standing question: `HOME/standing/<key>.json`."""

    id: str = Field(description="Its name: the `[[questions]]` id, else its request key.")
    request: CollectionAnswerRequest
    origin: StandingOrigin = Field(description="What registered it.")

    @property
    def key(self) -> str:
        """Its `collection_questions` partition key."""
        return self.request.key


class AnswerVersion(BaseModel):
    """One kept version of a question's answer:
    `HOME/history/<collection>/collection_answer/<key>/<recorded>-<data_version>.json`."""

    key: str = Field(description="The request's partition key.")
    recorded_at: str = Field(description="When it was materialized, UTC, ISO 8601.")
    data_version: str = Field(description="The hash of the answer, as Dagster records it.")
    answer: CollectionAnswer


class GradeChange(BaseModel):
    """A sentence kept from one version to the next whose support grade changed."""

    sentence: str = Field(description="As the newer version writes it.")
    before: SentenceVerdict
    after: SentenceVerdict


class AnswerDiff(BaseModel):
    """What changed in a question's answer from one kept version to another."""

    key: str
    collection: str
    question: str
    from_version: str | None = Field(description="Data version; None: nothing was kept before.")
    from_recorded_at: str | None = None
    to_version: str | None = Field(description="Data version; None: nothing is kept yet.")
    to_recorded_at: str | None = None
    papers_added: list[str] = Field(
        default_factory=list, description="Papers the collection gained between the two."
    )
    papers_removed: list[str] = Field(
        default_factory=list,
        description="Papers the collection lost between the two (retracted or removed).",
    )
    sentences_added: list[DiffSentence] = Field(default_factory=list)
    sentences_removed: list[DiffSentence] = Field(default_factory=list)
    citations_added: list[str] = Field(
        default_factory=list, description="Markers `[paper_id:page]` cited now, not before."
    )
    citations_removed: list[str] = Field(
        default_factory=list, description="Markers cited before, not now."
    )
    support_changed: list[SupportChange] = Field(
        default_factory=list, description="Sentences kept whose cited papers changed."
    )
    grades_changed: list[GradeChange] = Field(
        default_factory=list, description="Sentences kept whose support grade changed."
    )
    answered_before: bool | None = Field(
        default=None, description="Whether the older version answered (None: none kept)."
    )
    answered_after: bool | None = None
    brought_by: list[str] = Field(
        default_factory=list,
        description="Why it changed: the papers added to (or removed from) the collection "
        "whose citations appeared (or went); else every paper added or removed.",
    )

    @property
    def changed(self) -> bool:
        """Whether anything a reader would notice changed."""
        return bool(
            self.sentences_added
            or self.sentences_removed
            or self.citations_added
            or self.citations_removed
            or self.grades_changed
            or self.answered_before != self.answered_after
        )
