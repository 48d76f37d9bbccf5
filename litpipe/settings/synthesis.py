"""The `[synthesis]` settings: the questions, their answers, the relationship analysis and the
synthesis."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from litpipe.settings.base import SettingsGroup

SynthesisMethod = Literal["relational", "flat"]


class SynthesisSettings(SettingsGroup):
    """The questions asked of papers and collections, their answers, and the synthesis."""

    questions_per_style: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Questions per paper of each style (broad, inner workings).",
    )
    answer_mode: Literal["single", "multi_view", "multi_view_answers"] = Field(
        default="single",
        description="How a question is answered from its evidence: one writer; three views "
        "(summarizer, extractor, reasoner) reconciled by a fourth (MASS-RAG); or three views, "
        "a candidate answer written from each, and a comparison that picks or merges them "
        "(MASS-RAG's answer agent).",
    )
    cross_paper_questions: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Comparative questions asked of a whole collection (3 to 5; 0, the "
        "default, asks none). An extra beyond X-Sum's pipeline 2: with a model, one call for "
        'the questions and one answer each (docs/how-to/models.md, "What a run costs").',
    )
    min_insights_per_paper: int = Field(
        default=3,
        ge=1,
        description="A paper with fewer insights (or not named in the narrative) gets "
        "follow-up questions before the relationship analysis is final, when "
        "`follow_up_questions` asks any.",
    )
    follow_up_questions: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Follow-up questions asked of each thin paper (the refinement pass); 0, "
        "the default, makes no refinement pass. An extra beyond X-Sum's pipeline 2: with a "
        "model, per thin paper one call for the questions and one answer each, then the "
        'relationship analysis once more (docs/how-to/models.md, "What a run costs").',
    )
    relationship_neighbours: int = Field(
        default=10,
        ge=1,
        description="Relationship candidates per insight: the insights of other papers nearest "
        "to it by embedding; the analysis weighs only these pairs, so its work grows with the "
        "number of insights, not with its square.",
    )
    method: SynthesisMethod = Field(
        default="relational",
        description="How the synthesis is written (X-Sum): `relational` (pipeline 2) from the "
        "relationship analysis, the answers and the relationships in words; `flat` (pipeline "
        "1) from every paper's answers in one prompt, without the relationship analysis.",
    )
    answer_chars: int = Field(
        default=500,
        ge=50,
        description="Characters of each answer the synthesis writer is given (X-Sum cuts at "
        "500); the cut is at a word, never inside a marker.",
    )
    context_tokens: int = Field(
        default=12_000,
        ge=1_000,
        description="Tokens of answers the synthesis writer takes at once (counted with the "
        "model's tokenizer when litellm knows the model, else the embedder's); beyond them, "
        "map-reduce by paper.",
    )
    pattern: Literal["auto", "stuff", "map_reduce", "hierarchical", "refine"] = Field(
        default="auto",
        description="How the synthesis fits the answers in the writer's context: `auto` picks "
        "`stuff`, `map_reduce` or `hierarchical` by size (never `refine`, whose calls run one "
        "after another); a named pattern is used whatever the size.",
    )
    hierarchical_min_papers: int = Field(
        default=16,
        ge=2,
        description="From this many papers (when the evidence does not fit), the writer builds "
        "a tree of cluster summaries instead of one summary per paper.",
    )

    @field_validator("cross_paper_questions", mode="after")
    @classmethod
    def _none_or_three_to_five(cls, count: int) -> int:
        if 0 < count < 3:
            raise ValueError("cross_paper_questions is 0 (none) or 3 to 5")
        return count
