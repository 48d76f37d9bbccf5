"""Offline relationship typing on sentences of the bundled ICLR abstracts (demo): a pair is a
contradiction only when its sentences make opposite claims about the same terms, and the
explanation then quotes both; "not", "however", "unlike" or "failures" in one sentence make no
contradiction, and an improvement cue makes no improvement unless it names the other's work."""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest

from litpipe.extractive.relationships import neighbour_pairs, offline_relationships, offline_theme
from litpipe.schemas import Insight, Relationship
from litpipe.text import sentences
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import insight

DEMO = Path(__file__).resolve().parents[1] / "corpora" / "iclr-abstracts-demo"


@cache
def demo_papers() -> dict[str, dict[str, str]]:
    with (DEMO / "iclr_abstracts_demo.csv").open(encoding="utf-8", newline="") as table:
        return {row["id"]: row for row in csv.DictReader(table)}


def demo_sentence(paper: str, opening: str) -> str:
    """The sentence of the paper's abstract that starts with `opening`, as written there."""
    (sentence,) = [
        " ".join(span.text.split())
        for span in sentences(demo_papers()[paper]["abstract"])
        if span.text.startswith(opening)
    ]
    return sentence


@cache
def demo_insights() -> list[Insight]:
    """Every sentence of the demo abstracts as an insight of its paper."""
    found = [
        (paper, " ".join(span.text.split()))
        for paper, row in demo_papers().items()
        for span in sentences(row["abstract"])
    ]
    return [insight(f"d{index:03d}", *one) for index, one in enumerate(found)]


def relate_two(first: tuple[str, str], second: tuple[str, str]) -> Relationship:
    """The relationship of two insights (paper, text) amid the demo's other papers, whose
    sentences weigh each term as the demo run does; a paper the demo lacks gets a title."""
    papers = demo_papers()
    titles = {paper: row["title"] for paper, row in papers.items()}
    titles.update({paper: f"Edited {paper}" for paper, _ in (first, second) if paper not in papers})
    others = [one for one in demo_insights() if one.paper_id not in {first[0], second[0]}]
    relationships = offline_relationships(
        [insight("i01", *first), insight("i02", *second), *others], titles
    )
    (relationship,) = [r for r in relationships if {r.source, r.target} == {"i01", "i02"}]
    return relationship


# Pairs of demo sentences that typing by cue words called contradictions (the first three were
# among the seven of the offline demo run): one sentence holds "not" ("not only"), "unlike",
# "failures" or "however", and neither says the opposite of the other.
NOT_OPPOSITE = {
    "not only": (
        ("HyxnZh0ct7", "Our methods constitute a simple and novel approach"),
        ("HkgEQnRqYQ", "Experimental results on multiple benchmark knowledge graphs"),
    ),
    "unlike ... does not": (
        ("BklKFo09YX", "To augment the compound design process"),
        ("ryCM8zWRb", "Unlike data augmentation-based improvements"),
    ),
    "failures": (
        ("H1zriGeCZ", "In terms of overall running time"),
        ("B1xhQhRcK7", "Experimental results show that our methods can find catastrophic"),
    ),
    "however": (
        ("rkeDJ04Mf", "In this work, we propose a simple yet effective method"),
        ("BklpOo09tQ", "However, this robustness is only effective"),
    ),
}


@pytest.mark.parametrize("cue", list(NOT_OPPOSITE))
def test_a_sentence_holding_not_or_however_makes_no_contradiction(cue: str) -> None:
    (paper, opening), (other, other_opening) = NOT_OPPOSITE[cue]
    relationship = relate_two(
        (paper, demo_sentence(paper, opening)), (other, demo_sentence(other, other_opening))
    )
    assert relationship.type in ("parallel", "complementary"), relationship
    assert "opposite claims" not in relationship.explanation


def test_an_improvement_cue_about_no_paper_of_the_collection_is_no_improvement() -> None:
    # "improve robustness of convolutional neural networks" improves on no work of "Simple Fast
    # Convolutional Feature Learning": a common word of its title is not its work's name.
    relationship = relate_two(
        ("SyGT_6yCZ", demo_sentence("SyGT_6yCZ", "Visual features have recently been")),
        ("rkeDJ04Mf", demo_sentence("rkeDJ04Mf", "In this work, we propose a simple yet")),
    )
    assert relationship.type in ("parallel", "complementary"), relationship


# The demo holds no two sentences of different papers making opposite claims (none among the
# 618 abstracts of the full ICLR corpus either): each opposite here is a real sentence of the
# demo minimally edited (one verb negated, or turned to its antonym) and given to another paper.
OPPOSITES = {
    "antonym": (
        "BJGVX3CqYm",
        "Recent work in network quantization has substantially reduced",
        ("reduced", "increased"),
    ),
    "negation": (
        "BJgLg3R9KQ",
        "As a proof of concept, we extend a state-of-the-art attention network",
        ("significantly improves", "does not improve"),
    ),
}


@pytest.mark.parametrize("edit", list(OPPOSITES))
def test_opposite_claims_about_the_same_terms_are_a_contradiction_quoting_both(edit: str) -> None:
    paper, opening, (written, edited) = OPPOSITES[edit]
    claim = demo_sentence(paper, opening)
    opposite = claim.replace(written, edited)
    assert opposite != claim

    relationship = relate_two((paper, claim), ("x", opposite))

    assert relationship.type == "contradiction"
    explanation = relationship.explanation
    title = demo_papers()[paper]["title"]
    # Each claim quoted verbatim (its full stop aside), after the title of its paper.
    assert f'"{title}" says "{claim.rstrip(".")}"' in explanation
    assert f'"Edited x" says "{opposite.rstrip(".")}"' in explanation


def test_the_demo_abstracts_related_sentence_by_sentence_hold_no_false_contradiction() -> None:
    """Every sentence of the 40 demo abstracts as an insight: fewer than 5% of the relationships
    are contradictions, and each quotes two sentences of different papers verbatim."""
    insights = demo_insights()
    titles = {paper: row["title"] for paper, row in demo_papers().items()}

    relationships = offline_relationships(insights, titles)

    assert len(relationships) > 100
    contradictions = [r for r in relationships if r.type == "contradiction"]
    assert len(contradictions) < 0.05 * len(relationships)
    text = {one.insight_id: one.text.rsplit(" [", 1)[0].rstrip(".") for one in insights}
    for contradiction in contradictions:
        assert f'"{text[contradiction.source]}"' in contradiction.explanation
        assert f'"{text[contradiction.target]}"' in contradiction.explanation


def test_nearest_neighbour_candidates_find_the_demo_relationships_between_neighbours(
    fake_embedder: FakeEmbedder,
) -> None:
    """Every sentence of the demo abstracts as an insight: weighing only each insight's 10
    nearest neighbours finds, word for word, every relationship that weighing all pairs finds
    between two neighbours, and most of them are neighbours."""
    insights = demo_insights()
    titles = {paper: row["title"] for paper, row in demo_papers().items()}
    candidates = neighbour_pairs(insights, fake_embedder, 10)
    assert len(candidates) <= 10 * len(insights) < len(insights) * (len(insights) - 1) / 2

    every_pair = offline_relationships(insights, titles)
    nearest = offline_relationships(insights, titles, candidates)

    neighbours = {frozenset(pair) for pair in candidates}
    between_neighbours = [r for r in every_pair if {r.source, r.target} in neighbours]
    assert len(between_neighbours) >= 20
    assert all(r in nearest for r in between_neighbours)


def test_the_theme_is_the_sentence_most_central_to_what_the_papers_share() -> None:
    """Seen on the bundled biology papers: "The papers converge on protein complementation
    assays, human genome and protein language models.", phrases listed in a frame, which nine
    papers on separate subjects do not converge on. The theme is one sentence of the papers,
    one most like the other papers' sentences; a paper saying one thing five times does not
    make it central."""
    about_forks = [
        "Stalled replication forks need DNA damage tolerance to restart replication.",
        "Tolerance of DNA damage lets stalled replication forks restart.",
        "Replication forks stall at DNA damage and need tolerance to go on.",
    ]
    yeast = "Yeast proteins fold faster in warm wort during fermentation"
    insights = [
        *(insight(f"y{n}", "p1", f"{yeast}, as run {n} shows") for n in range(5)),
        *(insight(f"f{n}", f"p{n + 2}", text.rstrip(".")) for n, text in enumerate(about_forks)),
    ]
    assert offline_theme(insights) in about_forks
    # How the papers scored is not what they are about, however many papers say it.
    separate = [
        "Stalled replication forks need helicases to move on.",
        "Alkylation damage of DNA slows polymerases in yeast cells.",
        "Repair proteins gather at chromatin within minutes.",
    ]
    scored = insight(
        "e1",
        "p9",
        "Experiments show that stalled replication forks, alkylation damage of DNA and repair "
        "proteins at chromatin slow polymerases",
    )
    others = [insight(f"s{n}", f"p{n + 5}", t.rstrip(".")) for n, t in enumerate(separate)]
    assert offline_theme([scored, *others]) in separate
    # Nor is what a paper cites of other work, though it be the most general sentence.
    background = insight(
        "b1",
        "p9",
        "Stalled replication forks, alkylation damage of DNA and repair proteins at chromatin "
        "slow polymerases (Smith et al. 2008; Diss and Lehner 2018)",
    )
    assert offline_theme([background, *others]) in separate
    # Nor a sentence that names nothing without the one before it.
    pointing = insight(
        "t1",
        "p9",
        "They slow polymerases at stalled replication forks, alkylation damage of DNA and "
        "repair proteins at chromatin",
    )
    assert offline_theme([pointing, *others]) in separate
    # A heading an insight quoted in capitals, or a fragment, is never the theme.
    headed = [
        insight("h1", "p1", "RETRIEVAL-AUGMENTED LARGE LANGUAGE MODELS FOR OPEN QUESTIONS"),
        insight("h2", "p2", "retrieval-augmented large language models cite their sources"),
        insight("h3", "p3", "We study retrieval-augmented large language models with RAG"),
    ]
    assert offline_theme(headed) == "We study retrieval-augmented large language models with RAG."
    assert offline_theme([insight("f1", "p1", "See Fig 2")]) == ""
