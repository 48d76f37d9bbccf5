"""The `cluster_summary` agent: one node of the hierarchical (RAPTOR-style) synthesis tree, the
summary of a cluster of papers from its members' summaries, and the clustering that forms it.

Members (paper summaries, or cluster summaries one level down) are clustered agglomeratively
with average linkage over the cosine overlap of their BM25 term sets; beyond EXACT_MEMBERS
members, by merging each member with its nearest neighbours by that overlap, so that thousands
of papers cluster in a second. No embedding model is needed, and the same members always form
the same clusters.

Its offline engine (`litpipe.extractive.cluster_summary.offline_cluster_summary`) keeps, for
every paper of the cluster, the first member sentence citing it, then the member sentences MMR
picks, each verbatim with its markers.
"""

from __future__ import annotations

import math

import numpy as np

from litpipe.agents.base import Agent
from litpipe.extractive.cluster_summary import (
    ClusterSummaryInput,
    Member,
    offline_cluster_summary,
)
from litpipe.extractive.paper_summary import SummaryReply
from litpipe.llm.prompts import fence
from litpipe.retrieval.neighbours import nearest_neighbours, term_vectors
from litpipe.retrieval.text import tokenize
from litpipe.text import overlap

# Members per cluster at most: a branching factor that keeps each call's input small.
CLUSTER_SIZE = 4
# Up to this many members, clusters are formed by exact average linkage (comparing every pair
# of groups at each merge); beyond it, from each member's nearest neighbours.
EXACT_MEMBERS = 64


def cluster(members: list[Member], size: int = CLUSTER_SIZE) -> list[list[int]]:
    """Groups of member indexes, none above `size`, about ceil(n / size) of them, each group and
    the list in order: the most alike merged first (`_agglomerated` up to EXACT_MEMBERS
    members, `_merged_neighbours` beyond, where comparing every pair of groups at every merge
    would take hours)."""
    terms = [set(tokenize(member.summary)) for member in members]
    target = max(1, math.ceil(len(members) / size))
    if len(members) <= EXACT_MEMBERS:
        return _agglomerated(terms, size, target)
    return _merged_neighbours(terms, size, target)


def _agglomerated(terms: list[set[str]], size: int, target: int) -> list[list[int]]:
    """Average linkage over the cosine overlap of the term sets, until `target` groups or no
    two fit together."""
    similarity = [[overlap(first, second) for second in terms] for first in terms]
    groups = [[index] for index in range(len(terms))]

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


def _merged_neighbours(terms: list[set[str]], size: int, target: int) -> list[list[int]]:
    """Each member's `size` nearest members by cosine overlap of the term sets (sparse matrix
    products in blocks), those pairs merged most alike first while the groups fit; then groups
    still small merged with the next in order, so that every level shrinks about `size` times."""
    alike = nearest_neighbours(term_vectors(terms), np.arange(len(terms)), size)
    group_of = list(range(len(terms)))
    groups: dict[int, list[int]] = {index: [index] for index in range(len(terms))}
    for similarity, first, second in sorted(alike, key=lambda t: (-t[0], min(t[1:]), max(t[1:]))):
        if len(groups) <= target or similarity <= 0:
            break
        a, b = sorted((group_of[first], group_of[second]))
        if a != b and len(groups[a]) + len(groups[b]) <= size:
            for member in groups[b]:
                group_of[member] = a
            groups[a] = sorted(groups[a] + groups.pop(b))
    merged: list[list[int]] = []
    surplus = len(groups) - target
    for group in sorted(groups.values()):
        if surplus > 0 and merged and len(merged[-1]) + len(group) <= size:
            merged[-1] = sorted(merged[-1] + group)
            surplus -= 1
        else:
            merged.append(group)
    return sorted(merged)


def _member_block(member: Member) -> str:
    text = fence(f"{member.label}\n\n{member.summary}")
    return f"Summary covering {', '.join(member.papers)}:\n{text}"


class ClusterSummaryAgent(Agent[ClusterSummaryInput, SummaryReply]):
    name = "cluster_summary"
    reply_tokens = 768
    offline = staticmethod(offline_cluster_summary)

    def prompt_values(self, inputs: ClusterSummaryInput) -> dict[str, str]:
        summaries = "\n\n".join(_member_block(member) for member in inputs.members)
        return dict(
            papers=", ".join(inputs.papers),
            theme=fence(inputs.theme),
            summaries=summaries,
        )
