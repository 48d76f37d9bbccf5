"""The relationship analysis: relationships only between papers, typed offline by opposite
claims and by cue words naming the other paper's work, a narrative of 3-5 sentences naming
every paper, the type distribution; and a model's reply checked (through the local stub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.asker import Asker
from litpipe.agents.relationship_analysis.relationships import (
    papers_named,
    relate,
    type_distribution,
)
from litpipe.extractive import relationships as relationships_module
from litpipe.extractive.relationships import offline_relationships
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import RELATIONSHIP_TYPES, Insight, Relationship
from litpipe.settings import Settings
from litpipe.text import sentences
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import insight
from litpipe_tests.stub_llm import StubLLM, stub_settings

BASE = "Base editing of the HBB gene corrected the sickle mutation in patient stem cells"
# An improvement or extension names the work of the other paper (ABE8e, from its title).
CUE_PAIRS = {
    "improvement": "Prime editing of the HBB gene outperforms ABE8e base editing in patient "
    "stem cells",
    "extension": "We extend ABE8e base editing of the HBB gene to the beta-thalassemia mutation "
    "in patient stem cells",
    "contradiction": "Base editing of the HBB gene did not correct the sickle mutation in "
    "patient stem cells",
}
TITLES = {"a": "ABE8e base editing for sickle cell", "b": "Editing HBB again"}


def test_cue_words_type_relationships_and_the_cue_holder_is_the_target() -> None:
    for kind, text in CUE_PAIRS.items():
        insights = [insight("i01", "a", BASE), insight("i02", "b", text)]
        (relationship,) = offline_relationships(insights, TITLES)
        assert (relationship.source, relationship.target, relationship.type) == (
            "i01",
            "i02",
            kind,
        )
        explanation = relationship.explanation
        assert explanation.startswith("Both concern ") and "HBB" in explanation
        assert (
            '"Editing HBB again"' in explanation
            and '"ABE8e base editing for sickle cell"' in explanation
        )


def test_an_improvement_cue_naming_no_work_of_the_other_paper_is_no_improvement() -> None:
    # "outperforms base editing": base editing is a subject of the other paper, not its work.
    titles = {"a": "Base editing for sickle cell", "b": "Editing HBB again"}
    text = "Prime editing of the HBB gene outperforms base editing in patient stem cells"
    insights = [insight("i01", "a", BASE), insight("i02", "b", text)]
    (relationship,) = offline_relationships(insights, titles)
    assert relationship.type == "parallel"


def test_without_cues_close_insights_are_parallel_and_unrelated_ones_stay_apart() -> None:
    parallel = insight("i02", "b", "Base editing of the HBB gene corrected patient stem cells")
    unrelated = insight("i03", "c", "Microcins of Enterobacterales genomes are widespread")
    relationships = offline_relationships([insight("i01", "a", BASE), parallel, unrelated], {})
    assert [(r.source, r.target, r.type) for r in relationships] == [("i01", "i02", "parallel")]


def test_insights_of_one_paper_are_never_related() -> None:
    insights = [
        insight("i01", "a", BASE),
        insight("i02", "a", CUE_PAIRS["improvement"]),
        insight("i03", "b", CUE_PAIRS["extension"]),
    ]
    relationships = offline_relationships(insights, TITLES)
    assert relationships
    paper = {i.insight_id: i.paper_id for i in insights}
    assert all(paper[r.source] != paper[r.target] for r in relationships)


def collection(size: int) -> tuple[list[Insight], dict[str, str]]:
    subjects = ["HBB base editing", "HBB prime editing", "CRISPR nucleases", "AAV delivery"]
    insights, titles = [], {}
    for index in range(size):
        paper = f"p{index}"
        titles[paper] = f"Paper {index} on gene editing"
        subject = subjects[index % len(subjects)]
        insights.append(
            insight(f"i{2 * index + 1:02d}", paper, f"{subject} corrected stem cells in vivo", 3)
        )
        insights.append(insight(f"i{2 * index + 2:02d}", paper, f"{subject} caused few indels", 4))
    return insights, titles


def test_offline_narrative_names_every_paper_in_three_to_five_sentences(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    for size in (1, 2, 4, 5, 9):
        insights, titles = collection(size)
        draft = relate("col", insights, titles, Asker(settings.llm))
        assert 3 <= len(sentences(draft.narrative)) <= 5, (size, draft.narrative)
        assert papers_named(draft.narrative, draft.citations, titles) == set(titles)
        assert draft.theme.endswith(".") and draft.theme in draft.narrative
        # Every insight quoted in the narrative is quoted verbatim.
        for one in insights:
            if one.text in draft.narrative:
                assert one.citations[0].marker in draft.narrative


def test_distribution_lists_every_type() -> None:
    relationships = [
        Relationship(source="i01", target="i02", type="improvement", explanation="x"),
        Relationship(source="i01", target="i03", type="improvement", explanation="x"),
    ]
    distribution = type_distribution(relationships)
    assert list(distribution) == list(RELATIONSHIP_TYPES)
    assert distribution["improvement"] == 2 and sum(distribution.values()) == 2
    assert type_distribution([]) == dict.fromkeys(RELATIONSHIP_TYPES, 0)


def test_papers_named_by_marker_or_full_title() -> None:
    insights, titles = collection(3)
    named = papers_named(
        'As "Paper 1 on gene editing" shows, cells recover.', insights[0].citations, titles
    )
    assert named == {"p0", "p1"}


def user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def test_model_analysis_is_checked(tmp_path: Path, stub_llm: StubLLM) -> None:
    insights, titles = collection(3)  # i01, i02 of p0; i03, i04 of p1; i05, i06 of p2
    stub_llm.script(
        "stub-relationships",
        {
            "relationships": [
                {"source": "i01", "target": "i02", "type": "parallel", "explanation": "Same."},
                {"source": "i01", "target": "i03", "type": "extension", "explanation": "Kept."},
                {"source": "i03", "target": "i01", "type": "parallel", "explanation": "Again."},
                {"source": "i01", "target": "i99", "type": "parallel", "explanation": "Who?"},
                {"source": "i04", "target": "i06", "type": "contradiction", "explanation": "K."},
            ],
            "theme": "Gene editing in stem cells.",
            "narrative": "Paper 0 [p0:3] and Paper 1 [p1:4] edit cells [p2:99].",
        },
    )
    settings = stub_settings(
        tmp_path,
        stub_llm,
        llm={"agents": {"relationships": {"model": "openai/stub-relationships"}}},
    )
    draft = relate(
        "col",
        insights,
        titles,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )
    (request,) = stub_llm.requests
    user = user_message(request)
    for one in insights:
        assert one.insight_id in user and one.text in user
    for paper, title in titles.items():
        assert paper in user and title in user

    assert [(r.source, r.target) for r in draft.relationships] == [("i01", "i03"), ("i04", "i06")]
    # The marker no insight cites is removed; the others resolve to the insights' chunks.
    assert draft.narrative == "Paper 0 [p0:3] and Paper 1 [p1:4] edit cells."
    assert [(c.marker, c.chunk_ids) for c in draft.citations] == [
        ("[p0:3]", ["p0:0"]),
        ("[p1:4]", ["p1:0"]),
    ]
    assert papers_named(draft.narrative, draft.citations, titles) == {"p0", "p1"}


def test_words_every_paper_uses_relate_nothing_and_repeated_insights_relate_once() -> None:
    # Every paper trains deep neural networks with a proposed method: that relates none of them.
    # Two share a subject of their own (variational autoencoders), said twice by one of them.
    common = "We propose a method that trains deep neural networks"
    insights = [
        insight("i01", "a", f"{common} for variational autoencoders with posterior collapse"),
        insight("i02", "b", f"{common} to detect domain names in DNS traffic"),
        insight("i03", "c", f"{common} for variational autoencoders of musical timbre"),
        insight("i04", "c", f"{common} for variational autoencoders of musical timbre"),
        insight("i05", "d", f"{common} on knowledge graphs with relational rotations"),
    ]

    relationships = offline_relationships(insights, {})

    assert [(r.source, r.target) for r in relationships] == [("i01", "i03")]
    assert relationships[0].explanation.startswith("Both concern ")
    shown = relationships[0].explanation.split(";")[0]
    assert "variational" in shown.lower() and "networks" not in shown and "method" not in shown


def test_relationship_candidates_grow_with_the_insights_not_their_square(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At N papers the offline analysis weighs about N x `relationship_neighbours` pairs of
    insights, one encode call for all of them: twice the papers, twice the pairs (every pair
    would be four times as many), never two insights of one paper."""
    settings = Settings(home=tmp_path, synthesis={"relationship_neighbours": 4})
    vocabulary = [f"topic{index}" for index in range(60)]
    weighed: list[tuple[frozenset[str], frozenset[str]]] = []
    similarity = relationships_module._TermWeights.similarity

    def counted(self: Any, first: frozenset[str], second: frozenset[str]) -> float:
        weighed.append((first, second))
        return similarity(self, first, second)

    monkeypatch.setattr(relationships_module._TermWeights, "similarity", counted)
    pairs_at = {}
    for papers in (40, 80):
        insights = [
            insight(
                f"i{paper * 3 + k:03d}",
                f"p{paper}",
                " ".join(vocabulary[(paper * 7 + k * 11 + j * 13) % 60] for j in range(5)),
            )
            for paper in range(papers)
            for k in range(3)
        ]
        titles = {f"p{paper}": f"Paper {paper}" for paper in range(papers)}
        weighed.clear()
        calls = len(fake_embedder.encode_calls)
        draft = relate(
            "col",
            insights,
            titles,
            Asker(settings.llm),
            nearest=(fake_embedder, settings.synthesis.relationship_neighbours),
        )
        assert len(fake_embedder.encode_calls) == calls + 1
        pairs_at[papers] = len(weighed)
        assert len(weighed) <= len(insights) * 4
        paper_of = {one.insight_id: one.paper_id for one in insights}
        assert draft.relationships
        assert all(paper_of[r.source] != paper_of[r.target] for r in draft.relationships)
    assert pairs_at[80] <= 2.2 * pairs_at[40]
