"""`litpipe ask "QUESTION" --collection C` end to end, as a user runs it: the bundled biology PDFs
ingested by `litpipe run` (the tiny local embedder), then questions of the whole collection
answered through the `collection_answer` asset, offline and through the stub model; and the
workflow under every reply a model's schema allows."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from litpipe.agents.asker import Asker
from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.defs.partitions import collection_questions
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.ingest.sources import pdf_source
from litpipe.llm.errors import ReplyValidationError
from litpipe.llm.prompts import PromptLibrary
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import NOT_ANSWERED, CollectionAnswer
from litpipe.settings import AgentRoute
from litpipe.text import marker, markers_in
from litpipe.workflows.collection_answer import (
    COLLECTION_ANSWER_AGENTS,
    answer_question,
    collection_answer,
    request_for,
)
from litpipe_tests.bundled import BUNDLED_PDFS_GROUP, PDFS_BY_SIZE, short_paper
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_agents import answer_as_agent
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_agent_replies import GeneratedClient, offline_settings
from litpipe_tests.test_agent_replies import collection as generated_collection

# One worker builds this module's shared home (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group(BUNDLED_PDFS_GROUP)

COLLECTION = "biology-cc-by"
# Answered by one bundled paper (REV1 in Drosophila, 10.1101_2024.02.13.580051).
QUESTION = "Which Rev1 domain matters most for MMS sensitivity in rev3 mutants?"
REV1_PAPER = "10.1101_2024.02.13.580051"
# No bundled paper treats it, though "liquid", "nitrogen", "point" and "boiled" occur in them.
UNRELATED = "What is the boiling point of liquid nitrogen on Mars?"
ASSET = dg.AssetKey("collection_answer")
# A marker as the Markdown and the page would show one.
_ANY_MARKER = re.compile(r"\[[A-Za-z0-9._-]+:\d+\]")


@pytest.fixture
def home(bundled_pdfs_home: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundled_pdfs_home, tmp_path / "home"))


def ask(home: Path, model: Path, *args: str) -> int:
    return main(["ask", "--home", str(home), "--embedder", str(model), *args])


def answer_of(home: Path, model: Path, question: str) -> CollectionAnswer:
    key = request_for(COLLECTION, question).key
    return ArtifactStore(
        home / "artifacts", Embedder(str(model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["collection_answer"], key, CollectionAnswer)


def files_of(home: Path, question: str) -> dict[str, Path]:
    key = request_for(COLLECTION, question).key
    folder = home / "outputs" / COLLECTION / "collection_answer"
    return {suffix: folder / f"{key}.{suffix}" for suffix in ("md", "html", "json")}


def materializations(home: Path, question: str) -> int:
    key = request_for(COLLECTION, question).key
    return len(
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=100
        )
        .records
    )


def stored_rows(home: Path, model: Path) -> dict[str, dict[str, Any]]:
    rows = ChunkStore(home / "lancedb").chunk_rows(
        Embedder(str(model)).embedder_id, ["chunk_id", "paper_id", "page_start", "page_end"]
    )
    return {row["chunk_id"]: row for row in rows.to_pylist()}


def assert_citations_resolve(
    result: CollectionAnswer, rows: dict[str, dict[str, Any]], members: list[str]
) -> None:
    """Every citation names stored chunks of a paper of the collection, on the cited page, and
    every marker of the answer has its citation."""
    assert result.citations
    for citation in result.citations:
        assert citation.paper_id in members and citation.chunk_ids
        for chunk_id in citation.chunk_ids:
            row = rows[chunk_id]
            assert row["paper_id"] == citation.paper_id
            assert row["page_start"] <= citation.page <= row["page_end"]
    written = {marker(p, page) for p, page in markers_in(result.text)}
    assert written == {citation.marker for citation in result.citations}


def assert_declined(home: Path, question: str, result: CollectionAnswer, out: str) -> None:
    """The fixed reply, citing nothing anywhere, with the nearest passages named."""
    assert not result.answered and result.text == NOT_ANSWERED and result.citations == []
    assert result.passages and NOT_ANSWERED in out
    files = files_of(home, question)
    markdown, page = files["md"].read_text(), files["html"].read_text()
    assert NOT_ANSWERED in markdown and NOT_ANSWERED in page
    assert "## Nearest passages" in markdown
    # The nearest passages by title and page, with no marker and no citation link.
    first = result.passages[0]
    assert result.titles[first.paper_id] in markdown and f"p. {first.page_start}" in markdown
    assert not _ANY_MARKER.search(markdown) and 'class="cite"' not in page
    assert CollectionAnswer.model_validate_json(files["json"].read_text()) == result


def test_a_question_one_paper_answers_is_answered_cited_and_graded_and_a_repeat_is_served(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION) == 0
    out = capsys.readouterr().out
    result = answer_of(home, tiny_model, QUESTION)
    members = Catalog(home / "catalog.sqlite").papers(COLLECTION)

    # What the user reads: the answer, each sentence's grade, the checks and the files.
    assert result.answered and result.engine == "offline" and result.mode == "single"
    assert result.text in out
    assert set(result.papers) == set(members) and len(members) == len(PDFS_BY_SIZE)
    assert_citations_resolve(result, stored_rows(home, tiny_model), members)
    # The paper that answers the question is cited.
    assert REV1_PAPER in {c.paper_id for c in result.citations}
    assert result.grades is not None and result.grades.sentences
    for grade in result.grades.sentences:
        assert f"[{grade.verdict.replace('_', ' ')}] {grade.sentence}" in out
    assert "Check citation_validity: passed" in out and "Check support: passed" in out
    files = files_of(home, QUESTION)
    assert f"Markdown: {files['md']}" in out and f"JSON: {files['json']}" in out

    markdown = files["md"].read_text()
    assert "## Grades" in markdown and "**supported**" in markdown
    assert CollectionAnswer.model_validate_json(files["json"].read_text()) == result
    # The page: every citation a link to its passage, shown on the page; the grades table.
    page = files["html"].read_text()
    anchors = re.findall(r'<a class="cite[^"]*" href="#([^"]+)"', page)
    assert anchors and all(f'id="{anchor}"' in page for anchor in anchors)
    assert "<th>Grade</th>" in page and "<td>supported</td>" in page

    # The same question again: served from the asset, nothing rebuilt.
    assert ask(home, tiny_model, "--collection", COLLECTION, f"  {QUESTION} ") == 0
    again = capsys.readouterr().out
    assert "up to date: served from the materialized asset (no run, no model call)" in again
    assert materializations(home, QUESTION) == 1


def test_a_question_no_paper_answers_gets_the_does_not_answer_reply_offline(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(home, tiny_model, "--collection", COLLECTION, UNRELATED) == 0
    out = capsys.readouterr().out
    result = answer_of(home, tiny_model, UNRELATED)
    assert_declined(home, UNRELATED, result, out)
    assert "of the question's terms" in result.declined_because
    assert "Nearest passages:" in out and "Check citation_validity: passed" in out
    assert "Check support: skipped: not answered" in out


def test_a_paper_added_or_retracted_makes_the_answer_stale_and_a_retracted_paper_is_not_cited(
    home: Path, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION) == 0
    capsys.readouterr()
    folder = tmp_path / "new"
    folder.mkdir()
    short_paper(folder, 1)
    flags = ["--home", str(home), "--embedder", str(tiny_model)]
    assert main(["run", str(folder), "--collection", COLLECTION, *flags]) == 0
    capsys.readouterr()

    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION) == 0
    assert "materialized in" in capsys.readouterr().out
    added = answer_of(home, tiny_model, QUESTION)
    assert len(added.papers) == len(PDFS_BY_SIZE) + 1
    assert materializations(home, QUESTION) == 2

    assert main(["retract", REV1_PAPER, "--reason", "test", *flags]) == 0
    capsys.readouterr()
    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION) == 0
    assert "materialized in" in capsys.readouterr().out
    retracted = answer_of(home, tiny_model, QUESTION)
    assert REV1_PAPER not in retracted.papers
    assert REV1_PAPER not in {c.paper_id for c in retracted.citations}
    assert all(chunk.paper_id != REV1_PAPER for chunk in retracted.passages)
    assert materializations(home, QUESTION) == 3


# Through a model (the local stub): the answer's writer on its own model name, which declines
# the unrelated question; every other agent (the claim judge among them) as `answer_as_agent`.
ROUTES = {"query_answer": {"model": "openai/stub-answer"}}


def answer_unless_unrelated(body: dict[str, Any]) -> dict[str, Any]:
    asked = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    if "Mars" in asked:
        return {"answer": "The retrieved passages do not answer this question."}
    return answer_as_agent(body)


def test_through_a_model_the_answer_is_cited_and_the_unrelated_question_declined(
    home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stub_llm.respond("stub-answer", answer_unless_unrelated)
    stub_llm.respond("stub", answer_as_agent)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(ROUTES))
    model = ["--model", "openai/stub", "--api-base", stub_llm.url]
    members = Catalog(home / "catalog.sqlite").papers(COLLECTION)

    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION, *model) == 0
    out = capsys.readouterr().out
    result = answer_of(home, tiny_model, QUESTION)
    assert result.answered and result.engine == "openai/stub-answer"
    assert_citations_resolve(result, stored_rows(home, tiny_model), members)
    assert result.grades is not None and result.grades.grader == "openai/stub"
    assert "model calls: 0 made" not in out
    # A repeat: no request reaches the model.
    calls = stub_llm.request_count
    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION, *model) == 0
    assert "up to date: served from the materialized asset" in capsys.readouterr().out
    assert stub_llm.request_count == calls and materializations(home, QUESTION) == 1

    assert ask(home, tiny_model, "--collection", COLLECTION, UNRELATED, *model) == 0
    out = capsys.readouterr().out
    declined = answer_of(home, tiny_model, UNRELATED)
    assert_declined(home, UNRELATED, declined, out)
    assert declined.declined_because == "the writer found no answer in the passages retrieved"


def test_through_a_model_an_answer_the_judge_finds_unsupported_is_declined(
    home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The writer answers, citing a passage it was given; the claim judge finds no sentence
    supported: the reader gets the admission, not the answer."""
    stub_llm.respond("stub-judge", lambda body: {"reason": "not said", "verdict": "unsupported"})
    stub_llm.respond("stub", answer_as_agent)
    routes = {**ROUTES, "claim_judge": {"model": "openai/stub-judge"}}
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(routes))
    model = ["--model", "openai/stub", "--api-base", stub_llm.url]
    stub_llm.respond("stub-answer", answer_as_agent)
    assert ask(home, tiny_model, "--collection", COLLECTION, QUESTION, *model) == 0
    out = capsys.readouterr().out
    result = answer_of(home, tiny_model, QUESTION)
    assert_declined(home, QUESTION, result, out)
    assert result.declined_because == (
        "no sentence of the answer is supported by the passages it cites"
    )
    # The judge was asked: the writer's answer cited a passage.
    assert any(body.get("model") == "stub-judge" for body in stub_llm.requests)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--collection", COLLECTION], "the question is empty"),
        (["--collection", COLLECTION, "   "], "the question is empty"),
        (["--collection", COLLECTION, "x" * 10_001], "at most 10,000 are accepted"),
        (["--collection", "nope", QUESTION], "unknown collection 'nope'"),
        (
            ["--collection", COLLECTION, "--max-iterations", "2", QUESTION],
            "--collection does not take --max-iterations (options of --paper's MAIS summary)",
        ),
        (
            ["--collection", COLLECTION, "--record", "--max-iterations", "2", QUESTION],
            "--collection does not take --max-iterations or --record",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    home: Path,
    tiny_model: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    assert ask(home, tiny_model, *args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (home / "requests" / "collection_answer").exists()
    assert not (home / "outputs" / COLLECTION / "collection_answer").exists()
    assert home_instance(home).get_dynamic_partitions(collection_questions.name) == []


def test_a_collection_with_no_embedded_paper_is_refused_saying_what_to_run(
    home: Path, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "later"
    folder.mkdir()
    # A paper registered, never ingested.
    Catalog(home / "catalog.sqlite").register(pdf_source(short_paper(folder, 2)), "later")
    assert ask(home, tiny_model, "--collection", "later", QUESTION) == 2
    err = capsys.readouterr().err
    assert "collection 'later' has no embedded paper" in err and len(err.strip().splitlines()) == 1
    assert "run `litpipe run SOURCE --collection later` first" in err
    assert not (home / "requests" / "collection_answer").exists()


def test_paper_and_collection_are_exclusive_and_one_is_required(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as both:
        ask(home, tiny_model, "--paper", REV1_PAPER, "--collection", COLLECTION, QUESTION)
    assert both.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit) as neither:
        ask(home, tiny_model, QUESTION)
    assert neither.value.code == 2
    assert "one of the arguments --paper --collection is required" in capsys.readouterr().err


# Any reply a model's schema allows: the answer never cites outside the passages it was given.

MODEL = "openai/generated"
EXAMPLES = 60


@pytest.mark.parametrize("mode", ["single", "multi_view", "multi_view_answers"])
def test_no_generated_reply_yields_a_citation_outside_the_passages(
    mode: str, tmp_path: Path
) -> None:
    routes = {agent: AgentRoute(model=MODEL) for agent in COLLECTION_ANSWER_AGENTS}
    routed = offline_settings(tmp_path, llm={"agents": routes}, synthesis={"answer_mode": mode})
    built = generated_collection()
    papers = list(built.chunks)
    # Two papers' passages of the four: the others' markers resolve to nothing here.
    passages = [chunk for paper in papers[:2] for chunk in built.chunks[paper]]
    given_ids = {chunk.chunk_id for chunk in passages}
    request = request_for("demo", "What do the methods learn, and how?")
    prompts = PromptLibrary()

    @seed(20261202)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        asker = Asker(routed.llm, GeneratedClient(data), prompts)
        try:
            answer = answer_question(request, passages, routed.synthesis.answer_mode, asker)
        except ReplyValidationError as error:  # no repair made a reply valid: a one-line reason
            assert str(error) and "\n" not in str(error), repr(error)
            return
        result = collection_answer(request, answer, papers, routed.synthesis.answer_mode, {})
        for citation in result.citations:
            assert citation.chunk_ids and set(citation.chunk_ids) <= given_ids
        written = {marker(p, page) for p, page in markers_in(result.text)}
        assert written == {citation.marker for citation in result.citations}
        if not result.answered:
            assert result.text == NOT_ANSWERED and not result.citations

    run()
