"""A collection's written syntheses (expert and plain-language) and the files written for
people."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.evidence import Citation
from litpipe.schemas.grades import OutputGrades
from litpipe.schemas.reports import LeftOutPaper, StepNotRun

SynthesisPattern = Literal["stuff", "map_reduce", "hierarchical", "refine"]


class Synthesis(BaseModel):
    """A collection's written synthesis, expert or plain-language, every claim cited."""

    collection: str
    audience: Literal["expert", "plain"]
    engine: str
    pattern: SynthesisPattern = Field(
        description="How the writer fit the evidence in its context: all at once (`stuff`), "
        "one summary per paper then their combination (`map_reduce`), a tree of cluster "
        "summaries (`hierarchical`), or one summary refined paper by paper (`refine`)."
    )
    title: str
    text: str = Field(description="Markdown, citing as `[paper_id:page]`.")
    citations: list[Citation]
    papers: list[str] = Field(description="The collection's papers, each to be cited.")
    appended: list[str] = Field(
        default_factory=list,
        description="Papers the writer left uncited that the text cites only through the "
        '"Also in this collection" sentences appended after it (the coverage check counts '
        "them apart from the writer's own).",
    )
    left_out: list[LeftOutPaper] = Field(
        default_factory=list,
        description="The collection's papers the text does not cover, with why: those without "
        "answers (`RelationshipAnalysis.left_out`) and those of `papers` with nothing to cite "
        "(the coverage check names them and warns).",
    )
    grades: OutputGrades | None = Field(
        default=None,
        description="The faithfulness check's grade of each sentence, for the page to mark "
        "the unsupported ones (None until graded).",
    )
    not_run: StepNotRun | None = Field(
        default=None,
        description="For the plain-language summary, optional: why it is empty, when its model "
        "work failed.",
    )


class CollectionOutputs(BaseModel):
    """The files written for people in `LITPIPE_HOME/outputs/<collection>/`."""

    collection: str
    files: dict[str, str] = Field(description="Name (`synthesis.md`, ...) to path.")
