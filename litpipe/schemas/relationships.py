"""A collection's relationship analysis: one insight per question-and-answer pair, the typed
relationships between insights of different papers, and the refinement pass."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.evidence import Answer, Citation
from litpipe.schemas.papers import PaperReference
from litpipe.schemas.references import CitedRelationship
from litpipe.schemas.reports import LeftOutPaper, StepNotRun

RelationshipType = Literal["extension", "contradiction", "complementary", "improvement", "parallel"]
RELATIONSHIP_TYPES: tuple[RelationshipType, ...] = (
    "extension",
    "contradiction",
    "complementary",
    "improvement",
    "parallel",
)


class Insight(BaseModel):
    """The key insight of one question-and-answer pair."""

    insight_id: str = Field(description="`i<index>`, in the order of the analysis.")
    paper_id: str = Field(description="The paper it is about; empty for a comparative one.")
    papers: list[str] = Field(description="Every paper it concerns (its citations' papers).")
    question_ids: list[str] = Field(description="The question(s) whose answer it comes from.")
    text: str
    citations: list[Citation]


class Relationship(BaseModel):
    """How an insight of one paper relates to an insight of another."""

    source: str = Field(description="Insight id.")
    target: str = Field(description="Insight id, of another paper.")
    type: RelationshipType
    explanation: str = Field(description="One or two sentences.")


class FollowUp(BaseModel):
    """The refinement pass for one paper whose insights were thin."""

    paper_id: str
    reason: str = Field(description="Why the paper was thin: too few insights, or unnamed.")
    answers: list[Answer] = Field(description="The follow-up questions, retrieved and answered.")


class RelationshipAnalysis(BaseModel):
    collection: str
    engine: str
    papers: list[str] = Field(description="The collection's papers that have answers.")
    theme: str
    narrative: str = Field(description="3-5 sentences naming every paper.")
    insights: list[Insight]
    relationships: list[Relationship]
    type_distribution: dict[str, int] = Field(
        description="Relationships of each type, every type listed (a corpus where all are "
        "`complementary` is a warning sign)."
    )
    cited_relationships: list[CitedRelationship] = Field(
        default_factory=list,
        description="How papers of the collection relate to those they cite, as their citing "
        "sentences say (the `citation_graph`'s edges), each naming its sentence and page.",
    )
    follow_ups: list[FollowUp] = Field(
        default_factory=list, description="The refinement pass: papers asked again, and why."
    )
    follow_ups_not_run: list[StepNotRun] = Field(
        default_factory=list,
        description="The thin papers whose follow-up questions failed (a model error), with why: "
        "the analysis is made without them.",
    )
    left_out: list[LeftOutPaper] = Field(
        default_factory=list,
        description="The collection's papers without answers (their own assets failed or are "
        "not built yet), with why: the analysis and the syntheses are of the others.",
    )
    references: dict[str, PaperReference] = Field(
        default_factory=dict,
        description="Authors, year, venue and DOI of the papers whose reference manager (or "
        "table) gave them, by paper id: the reference lists' author-year labels.",
    )
