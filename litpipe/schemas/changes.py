"""What changed in a collection's synthesis and relationship analysis from one kept version
to another (`litpipe diff`, `report.json`, the synthesis' page in the UI, the nightly digest)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class DiffSentence(BaseModel):
    """A sentence of a synthesis, with the papers its markers cite."""

    text: str = Field(description="As written, its citation markers included.")
    papers: list[str] = Field(description="The papers it cites, in order.")


class SupportChange(BaseModel):
    """A sentence kept from one version to the next whose cited papers changed."""

    before: str
    after: str
    gained: list[str] = Field(description="Papers now also cited for it.")
    lost: list[str] = Field(description="Papers no longer cited for it.")


class ClaimEnd(BaseModel):
    """One end of a relationship: an insight (a claim) and its paper."""

    paper_id: str
    text: str
    known_before: bool = Field(
        default=False, description="Whether the older version held this claim already."
    )


class RelationshipChange(BaseModel):
    """A relationship that appeared or went between two versions."""

    type: str = Field(description="A `RelationshipType`.")
    explanation: str
    source: ClaimEnd
    target: ClaimEnd


class ReplacedSentence(BaseModel):
    """A sentence of the older version that cited a paper now retracted, and what the newer
    version says in its place."""

    before: DiffSentence
    after: DiffSentence | None = Field(
        default=None, description="What is in its place; None: nothing replaced it."
    )
    how: Literal["kept", "replaced", "removed"] = Field(
        description="`kept`: the same claim, now citing only other papers; `replaced`: it went, "
        "and `after` is the closest sentence the newer version added; `removed`: it went, and "
        "no added sentence is close to it."
    )


class RetractionChange(BaseModel):
    """A paper retracted between two versions, and each sentence that had cited it."""

    paper_id: str
    reason: str = Field(description="As the list of papers left out gives it.")
    sentences: list[ReplacedSentence] = Field(default_factory=list)


class SynthesisDiff(BaseModel):
    """What changed in a collection's synthesis and analysis from one kept version to another."""

    collection: str
    from_version: str | None = Field(description="Data version; None: nothing was kept before.")
    from_recorded_at: str | None = None
    to_version: str | None = Field(description="Data version; None: nothing is kept yet.")
    to_recorded_at: str | None = None
    papers_added: list[str] = Field(default_factory=list)
    papers_removed: list[str] = Field(default_factory=list)
    sentences_added: list[DiffSentence] = Field(default_factory=list)
    sentences_removed: list[DiffSentence] = Field(default_factory=list)
    reworded: int = Field(default=0, description="Sentences kept, only reworded.")
    support_changed: list[SupportChange] = Field(default_factory=list)
    contradicted: list[RelationshipChange] = Field(
        default_factory=list,
        description="New contradictions touching a claim the older version held.",
    )
    relationships_appeared: list[RelationshipChange] = Field(
        default_factory=list, description="Contradictions first."
    )
    relationships_gone: list[RelationshipChange] = Field(
        default_factory=list, description="Contradictions first."
    )
    theme_before: str = ""
    theme_after: str = ""
    left_out: dict[str, str] = Field(
        default_factory=dict,
        description="The papers the newer version leaves out and the older did not: why, by id.",
    )
    retracted: list[RetractionChange] = Field(
        default_factory=list,
        description="Of those, the papers retracted, each with the sentences that had cited it.",
    )

    @property
    def changed(self) -> bool:
        """Whether anything a reader would notice changed."""
        return bool(
            self.papers_added
            or self.papers_removed
            or self.sentences_added
            or self.sentences_removed
            or self.support_changed
            or self.relationships_appeared
            or self.relationships_gone
            or self.theme_before != self.theme_after
            or self.left_out
        )
