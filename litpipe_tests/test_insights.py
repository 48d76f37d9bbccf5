"""The insights agent: one insight per question-and-answer pair, none skipped, each citing the
answer's evidence; offline and through a model (the local stub)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from litpipe.agents.asker import Asker
from litpipe.agents.relationship_analysis.insights import insights_for
from litpipe.citations import citations
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import Answer, Question, QuestionStyle, RetrievedChunk
from litpipe.settings import Settings
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_llm import StubLLM, stub_settings


def answer(
    question_id: str,
    question: str,
    text: str,
    evidence: list[RetrievedChunk],
    paper_id: str = "",
    style: QuestionStyle = "broad",
    papers: list[str] | None = None,
) -> Answer:
    resolved, _ = citations(text, evidence)
    return Answer(
        question=Question(
            question_id=question_id,
            paper_id=paper_id,
            style=style,
            text=question,
            papers=papers or [],
        ),
        text=text,
        citations=resolved,
        evidence=evidence,
        engine="offline",
    )


ALPHA = [
    retrieved_chunk("alpha", 0, 2, "Base editing corrected the sickle mutation in 80% of cells.")
]
BETA = [retrieved_chunk("beta", 0, 5, "Prime editing reached 60% correction with fewer indels.")]
NO_ANSWER = "The retrieved passages do not answer this question."
ANSWERS = [
    answer(
        "alpha:q00",
        "What does the paper find about base editing?",
        "The study used patient cells [alpha:2]. Base editing corrected the sickle mutation in "
        "80% of cells, restoring adult haemoglobin [alpha:2].",
        ALPHA,
        paper_id="alpha",
    ),
    answer("alpha:q01", "Why does the approach rely on AAV delivery?", NO_ANSWER, ALPHA, "alpha"),
    answer(
        "beta:q00",
        "What does the paper find about prime editing?",
        "Prime editing reached 60% correction with fewer indels. [beta:5]",
        BETA,
        paper_id="beta",
    ),
    answer(
        "col:x00",
        "What distinguishes base editing from prime editing?",
        "Base editing corrected more cells [alpha:2] while prime editing made fewer indels "
        "[beta:5].",
        ALPHA + BETA,
        style="comparative",
        papers=["alpha", "beta"],
    ),
]


def test_offline_gives_one_insight_per_pair_in_paper_order_then_comparative(
    tmp_path: Path,
) -> None:
    insights = insights_for(ANSWERS, Asker(Settings(home=tmp_path).llm))
    assert [(i.insight_id, i.question_ids) for i in insights] == [
        ("i01", ["alpha:q00"]),
        ("i02", ["alpha:q01"]),
        ("i03", ["beta:q00"]),
        ("i04", ["col:x00"]),
    ]
    # The most informative cited sentence, verbatim with its marker.
    assert insights[0].text == (
        "Base editing corrected the sickle mutation in 80% of cells, restoring adult haemoglobin "
        "[alpha:2]."
    )
    assert [c.chunk_ids for c in insights[0].citations] == [["alpha:0"]]
    # A pair whose passages did not answer still gets its insight, saying so with the question.
    assert insights[1].text == f'On "Why does the approach rely on AAV delivery?": {NO_ANSWER}'
    assert insights[1].citations == []
    # A marker after the full stop belongs to its sentence.
    assert insights[2].text == ANSWERS[2].text
    assert insights[2].paper_id == "beta" and insights[2].papers == ["beta"]
    comparative = insights[3]
    assert comparative.paper_id == "" and comparative.papers == ["alpha", "beta"]
    assert [c.marker for c in comparative.citations] == ["[alpha:2]", "[beta:5]"]


def user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def scripted_insights(body: dict[str, Any]) -> dict[str, Any]:
    """Skips alpha's second pair, adds a question never asked, cites a page not given."""
    user = user_message(body)
    if "alpha:q00" in user:
        return {
            "insights": [
                {"question_id": "alpha:q00", "text": "Base editing fixed 80% of cells [alpha:9]."},
                {"question_id": "alpha:q07", "text": "An insight about nothing asked [alpha:2]."},
            ]
        }
    if "beta:q00" in user:
        return {"insights": [{"question_id": "beta:q00", "text": "Prime editing: 60% [beta:5]."}]}
    return {"insights": [{"question_id": "col:x00", "text": "They differ [alpha:2; beta:5]."}]}


def test_model_insights_are_checked_against_the_pairs(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.respond("stub-insights", scripted_insights)
    settings = stub_settings(
        tmp_path, stub_llm, llm={"agents": {"insights": {"model": "openai/stub-insights"}}}
    )
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    insights = insights_for(ANSWERS, Asker(settings.llm, client))

    # One request per paper, and one for the comparative answers, each holding all its pairs.
    requests = [user_message(body) for body in stub_llm.requests]
    assert len(requests) == 3
    alpha = next(r for r in requests if "alpha:q00" in r)
    for pair in ANSWERS[:2]:
        assert pair.question.question_id in alpha
        assert pair.question.text in alpha and pair.text in alpha
    assert "beta:q00" not in alpha

    assert [i.question_ids for i in insights] == [
        ["alpha:q00"],
        ["alpha:q01"],
        ["beta:q00"],
        ["col:x00"],
    ]
    # The page not given is uncited; the skipped pair gets the offline insight.
    assert insights[0].text == "Base editing fixed 80% of cells." and insights[0].citations == []
    assert insights[1].text == f'On "Why does the approach rely on AAV delivery?": {NO_ANSWER}'
    assert insights[2].text == "Prime editing: 60% [beta:5]."
    assert [c.paper_id for c in insights[3].citations] == ["alpha", "beta"]
    assert "alpha:q07" not in json.dumps([i.model_dump() for i in insights])


def test_an_offline_insight_ends_with_the_marker_of_its_own_sentence(tmp_path: Path) -> None:
    # DOI-derived ids start with a digit, which once made "[10.1073_...:6]" open the next
    # sentence: the insight then cited the sentence after the one its marker belonged to.
    doi = "10.1073_pnas.2322520121"
    evidence = [
        retrieved_chunk(doi, 0, 6, "Pol eta bypasses the lesion."),
        retrieved_chunk(doi, 1, 7, "Taken together, repair pathways compete at forks."),
    ]
    text = (
        f"Pol eta bypasses the cyclobutane lesion in human fibroblasts. [{doi}:6] Taken "
        f"together, repair pathways compete at stalled forks. [{doi}:7]"
    )
    pair = answer(f"{doi}:q00", "How is the cyclobutane lesion bypassed?", text, evidence, doi)

    (insight,) = insights_for([pair], Asker(Settings(home=tmp_path).llm))

    first_sentence = "Pol eta bypasses the cyclobutane lesion in human fibroblasts."
    assert insight.text == f"{first_sentence} [{doi}:6]"
    assert [c.page for c in insight.citations] == [6]
