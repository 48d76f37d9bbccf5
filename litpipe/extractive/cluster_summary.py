"""The offline engine of the `cluster_summary` agent: one node of the hierarchical (RAPTOR-style)
synthesis tree, the summary of a cluster of papers from its members' summaries.

It keeps, for every paper the cluster holds, the first member sentence citing it (so each paper
stays cited at every level), then adds the member sentences MMR picks, each verbatim with its
markers.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import SummaryReply, mmr_sentences
from litpipe.text import markers_in, sentences


class Member(BaseModel):
    """A paper's summary, or a cluster's: what the level above is built from."""

    label: str = Field(description="The paper's title, or the titles of the cluster's papers.")
    papers: list[str] = Field(description="The papers the summary covers, each cited in it.")
    summary: str


class ClusterSummaryInput(BaseModel):
    theme: str
    members: list[Member]

    @property
    def papers(self) -> list[str]:
        return [paper for member in self.members for paper in member.papers]


def _member_sentences(member: Member) -> list[str]:
    return [span.text for span in sentences(member.summary)]


def offline_cluster_summary(inputs: ClusterSummaryInput) -> SummaryReply:
    """Per paper, the first sentence citing it; then MMR picks one more per member."""
    candidates = [sentence for member in inputs.members for sentence in _member_sentences(member)]
    first_citing: dict[str, str] = {}
    for sentence in candidates:
        for paper, _ in markers_in(sentence):
            first_citing.setdefault(paper, sentence)
    covering = list(dict.fromkeys(first_citing[p] for p in inputs.papers if p in first_citing))
    kept = set(covering)
    rest = [sentence for sentence in candidates if sentence not in kept]
    added = mmr_sentences(
        rest, about=[inputs.theme, *covering], chosen=covering, count=len(inputs.members)
    )
    return SummaryReply(summary=" ".join(s for s in candidates if s in {*covering, *added}))
