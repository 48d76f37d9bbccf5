"""The `cluster_summary` agent: one node of the hierarchical (RAPTOR-style) synthesis tree, the
summary of a cluster of papers from its members' summaries, and the clustering that forms it.

Members (paper summaries, or cluster summaries one level down) are clustered agglomeratively
with average linkage over the cosine overlap of their BM25 term sets: no embedding model is
needed, and the same members always form the same clusters.

The offline engine keeps, for every paper the cluster holds, the first member sentence citing it
(so each paper stays cited at every level), then adds the member sentences MMR picks, each
verbatim with its markers.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.agents.paper_summary import SummaryReply, mmr_sentences
from litpipe.llm.prompts import fence
from litpipe.retrieval.text import tokenize
from litpipe.text import markers_in, overlap, sentences

# Members per cluster at most: a branching factor that keeps each call's input small.
CLUSTER_SIZE = 4


class Member(BaseModel):
    """A paper's summary, or a cluster's: what the level above is built from."""

    label: str = Field(description="The paper's title, or the titles of the cluster's papers.")
    papers: list[str] = Field(description="The papers the summary covers, each cited in it.")
    summary: str


def cluster(members: list[Member], size: int = CLUSTER_SIZE) -> list[list[int]]:
    """Groups of member indexes: the most alike clusters merged first, none above `size`,
    until there are ceil(n / size) or no two fit together; each group and the list in order."""
    terms = [set(tokenize(member.summary)) for member in members]
    similarity = [[overlap(first, second) for second in terms] for first in terms]
    groups = [[index] for index in range(len(members))]
    target = max(1, math.ceil(len(members) / size))

    def linkage(first: list[int], second: list[int]) -> float:
        return sum(similarity[a][b] for a in first for b in second) / (len(first) * len(second))

    while len(groups) > target:
        pairs = [
            (-linkage(groups[i], groups[j]), i, j)
            for i in range(len(groups))
            for j in range(i + 1, len(groups))
            if len(groups[i]) + len(groups[j]) <= size
        ]
        if not pairs:
            break
        _, i, j = min(pairs)
        groups[i] = sorted(groups[i] + groups[j])
        del groups[j]
    return sorted(groups)


class ClusterSummaryInput(BaseModel):
    theme: str
    members: list[Member]

    @property
    def papers(self) -> list[str]:
        return [paper for member in self.members for paper in member.papers]


def _member_block(member: Member) -> str:
    text = fence(f"{member.label}\n\n{member.summary}")
    return f"Summary covering {', '.join(member.papers)}:\n{text}"


def _member_sentences(member: Member) -> list[str]:
    return [span.text for span in sentences(member.summary)]


def offline_cluster_summary(inputs: ClusterSummaryInput) -> SummaryReply:
    """Per paper, the first sentence citing it; then MMR picks one more per member."""
    candidates = [sentence for member in inputs.members for sentence in _member_sentences(member)]
    covering: list[str] = []
    for paper in inputs.papers:
        citing = (s for s in candidates if paper in {p for p, _ in markers_in(s)})
        first = next(citing, None)
        if first is not None and first not in covering:
            covering.append(first)
    rest = [sentence for sentence in candidates if sentence not in covering]
    added = mmr_sentences(
        rest, about=[inputs.theme, *covering], chosen=covering, count=len(inputs.members)
    )
    return SummaryReply(summary=" ".join(s for s in candidates if s in {*covering, *added}))


class ClusterSummaryAgent(Agent[ClusterSummaryInput, SummaryReply]):
    name = "cluster_summary"
    offline = staticmethod(offline_cluster_summary)

    def prompt_values(self, inputs: ClusterSummaryInput) -> dict[str, str]:
        summaries = "\n\n".join(_member_block(member) for member in inputs.members)
        return dict(
            papers=", ".join(inputs.papers),
            theme=fence(inputs.theme),
            summaries=summaries,
        )
