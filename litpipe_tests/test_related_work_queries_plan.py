"""LitLLM's search queries and sentence plan: the queries written from the idea (offline, its key
phrases), each searched and the rankings fused by RRF; the plan (`related_work.plan`: none,
auto or the user's) handed to the writer; both through a model (the local stub)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.asker import Asker
from litpipe.agents.search_queries import usable_queries
from litpipe.extractive.search_queries import (
    SearchQueriesInput,
    SearchQueriesReply,
    offline_search_queries,
)
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import RelatedWork
from litpipe.settings import IngestSettings, RetrievalSettings, Settings
from litpipe.workflows.related_work import (
    abstract_index,
    load_references,
    make_request,
    run_related_work,
)
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_related_work import (
    DEBATE_REQUEST,
    DEMO,
    FULL,
    IDEA,
    WRITER_REQUEST,
    ScriptedWriter,
    assert_keeps_the_rules,
    good_section,
    scripted_debate,
)

QUERIES_REQUEST = "search queries for the prior work"
PLAN_REQUEST = "Plan a related-work section"
ASPECTS = ["variational autoencoder", "adversarial training", "disentangled representations"]


def test_offline_queries_are_the_ideas_key_phrases_weightiest_first() -> None:
    reply = offline_search_queries(SearchQueriesInput(idea=IDEA, count=3))
    assert reply.queries == ASPECTS
    assert offline_search_queries(SearchQueriesInput(idea=IDEA, count=1)).queries == ASPECTS[:1]


def test_blank_repeated_and_surplus_queries_are_not_searched() -> None:
    inputs = SearchQueriesInput(idea=IDEA, count=2)
    reply = SearchQueriesReply(
        queries=[
            "  ",
            f" {IDEA.upper()} ",
            "posterior  collapse\n",
            "Posterior collapse",
            "the",
            "of",
        ]
    )
    assert usable_queries(reply, inputs) == ["posterior collapse"]
    reply = SearchQueriesReply(queries=["GAN training", "VAE priors", "mode collapse"])
    assert usable_queries(reply, inputs) == ["GAN training", "VAE priors"]


@pytest.mark.slow
def test_each_aspect_searched_and_fused_keeps_off_topic_abstracts_out(tmp_path: Path) -> None:
    index = abstract_index(
        load_references(FULL).references, FakeEmbedder(), IngestSettings(), RetrievalSettings()
    )
    alone = [f.reference.title for f in index.search(IDEA, 10, 100)]
    fused = [f.reference.title for f in index.search(IDEA, 10, 100, ASPECTS)]
    off_topic = ("ElimiNet", "Preferences Implicit in the State of the World")
    assert any(title.startswith(off_topic) for title in alone)
    assert not any(title.startswith(off_topic) for title in fused)
    assert sum("Variational" in title for title in fused) > sum(
        "Variational" in title for title in alone
    )


def test_offline_run_searches_the_key_phrases_and_plans_nothing(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    settings = Settings(home=tmp_path, related_work={"plan": "auto"})
    request = make_request(IDEA, settings.related_work, top_k=4)
    related = run_related_work(
        DEMO,
        request,
        settings.related_work,
        settings.ingest,
        settings.retrieval,
        settings.paths,
        Asker(settings.llm),
        fake_embedder,
    )
    assert related.search_queries == ASPECTS
    assert fake_embedder.encode_calls[-1] == [IDEA, *ASPECTS]  # searched, in one encode call
    # The offline writer is extractive: an automatic plan is not written, nothing warns.
    assert related.plan == "" and not related.warnings
    assert_keeps_the_rules(related, DEMO)

    own = Settings(home=tmp_path, related_work={"plan": "Cite everything in one sentence."})
    kept = run_related_work(
        DEMO,
        request,
        own.related_work,
        own.ingest,
        own.retrieval,
        own.paths,
        Asker(own.llm),
        fake_embedder,
    )
    assert kept.text == related.text and kept.plan == ""
    assert kept.warnings == ["the offline writer follows no plan: related_work.plan is not used"]


def model_run(
    home: Path, stub: StubLLM, embedder: FakeEmbedder, plan: str
) -> tuple[RelatedWork, ScriptedWriter]:
    writer = ScriptedWriter(good_section, good_section)
    stub.respond(DEBATE_REQUEST, scripted_debate)
    stub.respond(WRITER_REQUEST, writer)
    stub.script(QUERIES_REQUEST, {"queries": ["posterior collapse", " ", "GAN training"]})
    settings = stub_settings(home, stub, related_work={"plan": plan})
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    request = make_request(IDEA, settings.related_work, sentences=8, words=120, top_k=4)
    related = run_related_work(
        DEMO,
        request,
        settings.related_work,
        settings.ingest,
        settings.retrieval,
        settings.paths,
        Asker(settings.llm, client),
        embedder,
    )
    return related, writer


def planned(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted planner: a line per reference its request names, then the motivation."""
    user = body["messages"][1]["content"]
    ids = [
        line.split("[")[1].split("]")[0] for line in user.splitlines() if "### Reference" in line
    ]
    return {"sentences": [*(f"Cite [{i}] on its method." for i in ids), "Motivate the idea."]}


def test_a_model_writes_the_queries_and_the_plan_the_writer_follows(
    tmp_path: Path, stub_llm: StubLLM, fake_embedder: FakeEmbedder
) -> None:
    stub_llm.respond(PLAN_REQUEST, planned)
    related, writer = model_run(tmp_path, stub_llm, fake_embedder, "auto")

    assert related.search_queries == ["posterior collapse", "GAN training"]
    assert fake_embedder.encode_calls[-1] == [IDEA, "posterior collapse", "GAN training"]
    # The queries, 20 debates, the plan and the section.
    assert stub_llm.request_count == 1 + 20 + 1 + 1
    ids = [s.reference.id for s in related.references]
    expected = [f"Sentence {n}: Cite [{i}] on its method." for n, i in enumerate(ids, 1)]
    assert related.plan == "\n".join([*expected, "Sentence 5: Motivate the idea."])
    (body,) = writer.bodies
    assert related.plan in body["messages"][1]["content"]
    assert_keeps_the_rules(related, DEMO)


def test_a_plan_of_ones_own_goes_to_the_writer_as_written(
    tmp_path: Path, stub_llm: StubLLM, fake_embedder: FakeEmbedder
) -> None:
    plan = "Sentence 1: the VAE papers.\nSentence 2: the GAN papers; then the idea."
    related, writer = model_run(tmp_path, stub_llm, fake_embedder, plan)
    assert related.plan == plan
    assert stub_llm.request_count == 1 + 20 + 1  # no planner call
    (body,) = writer.bodies
    assert plan in body["messages"][1]["content"]
    assert not any(PLAN_REQUEST in json.dumps(b) for b in stub_llm.requests)


def test_without_a_plan_the_writer_prompt_asks_for_none(
    tmp_path: Path, stub_llm: StubLLM, fake_embedder: FakeEmbedder
) -> None:
    related, writer = model_run(tmp_path, stub_llm, fake_embedder, "none")
    assert related.plan == ""
    (body,) = writer.bodies
    assert "to this plan" not in body["messages"][1]["content"]
