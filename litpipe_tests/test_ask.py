"""`litpipe ask` and `litpipe eval mais` end to end, as a user runs them: a bundled paper ingested
by `litpipe run` (the tiny local embedder), then query-focused summaries materialized through
the `query_summary` asset, offline and through the stub model."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.defs.partitions import papers, query_requests
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.evaluation.embedder_gate import RECORDED_QRELS, load_gate_set
from litpipe.evaluation.litqa import read_questions
from litpipe.ingest.sources import pdf_source
from litpipe.report.page import labelled
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import ConvergenceReport, QuerySummary, RunReport
from litpipe.text import marker, markers_in
from litpipe.workflows.query_summary import request_for
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.cited import home_keys
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_agents import judge_verdict
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_query_summary import QUESTIONS, fenced, requests_to

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_ask")

PDF = PDFS_BY_SIZE[0]  # the REV1 paper, the smallest
PAPER_ID = PDF.stem
QUERY = "Which Rev1 domain matters most for MMS sensitivity in rev3 mutants?"
ASSET = dg.AssetKey("query_summary")
LITQA2 = Path(__file__).parent / "data" / "litqa2" / "litqa2_subset_with_pdfs.jsonl"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """A home where `litpipe run` ingested the paper once; each test works on its own copy."""
    base = tmp_path_factory.mktemp("ingested")
    folder = base / "papers"
    folder.mkdir()
    shutil.copy(PDF, folder)
    home = base / "home"
    code = main(["run", str(folder), "--collection", "bio", "--home", str(home), *tiny(tiny_model)])
    assert code == 0
    report = RunReport.model_validate_json((home / "outputs" / "bio" / "report.json").read_text())
    assert report.papers == 1
    return home


def tiny(model: Path) -> list[str]:
    return ["--embedder", str(model)]


@pytest.fixture
def home(ingested: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(ingested, tmp_path / "home"))


def ask(home: Path, model: Path, *args: str) -> int:
    return main(["ask", "--home", str(home), *tiny(model), *args])


def materializations(home: Path, key: str) -> int:
    instance = home_instance(home)
    return len(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=100
        ).records
    )


def stored_rows(home: Path, model: Path) -> dict[str, dict[str, Any]]:
    embedder_id = Embedder(str(model)).embedder_id
    rows = ChunkStore(home / "lancedb").chunk_rows(
        embedder_id, ["chunk_id", "paper_id", "page_start", "page_end"], [PAPER_ID]
    )
    return {row["chunk_id"]: row for row in rows.to_pylist()}


def assert_citations_resolve(result: QuerySummary, rows: dict[str, dict[str, Any]]) -> None:
    """Every citation names stored chunks of the paper on the cited page, and every marker of
    the summary and highlights has its citation."""
    assert result.citations
    for citation in result.citations:
        assert citation.paper_id == PAPER_ID and citation.chunk_ids
        for chunk_id in citation.chunk_ids:
            row = rows[chunk_id]
            assert row["paper_id"] == PAPER_ID
            assert row["page_start"] <= citation.page <= row["page_end"]
    written = {
        marker(p, page) for p, page in markers_in(" ".join([result.summary, *result.highlights]))
    }
    assert written == {citation.marker for citation in result.citations}


def test_ask_prints_the_summary_and_its_trace_and_a_repeat_is_served_from_the_asset(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY) == 0
    out = capsys.readouterr().out
    key = request_for(PAPER_ID, QUERY).key
    result = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)

    # What the user reads: the summary, its highlights, the trace, status, route and the file.
    assert result.summary in out and result.engine == "offline"
    assert all(highlight in out for highlight in result.highlights)
    assert f"Status: {result.status}" in out and f"Route: {result.route}" in out
    for iteration in result.iterations:
        verdict = (
            "approved"
            if iteration.verdict.approved
            else f"mismatch: {'; '.join(iteration.verdict.mismatch_topics)}"
        )
        assert (
            f"{iteration.iteration:>3}  accuracy {iteration.verdict.accuracy:.2f}  {verdict}" in out
        )
    assert "Check citation_validity: passed" in out
    markdown = home / "outputs" / "bio" / "query_summary" / f"{key}.md"
    assert f"Markdown: {markdown}" in out

    # Every iteration is stored with its accuracy and verdict; the loop converged offline.
    assert result.status == "approved" and result.request.query == QUERY
    assert [i.iteration for i in result.iterations] == list(range(1, len(result.iterations) + 1))
    for iteration in result.iterations:
        assert 0 <= iteration.verdict.accuracy <= 1 and iteration.qa
        assert iteration.verdict.approved == (iteration is result.iterations[-1])
    assert result.iterations[-1].verdict.accuracy == 1.0
    assert_citations_resolve(result, stored_rows(home, tiny_model))

    text = markdown.read_text("utf-8")
    # The summary as its reader sees it: each citation by the paper's key with the page.
    assert labelled(result.summary, home_keys(home)) in text
    assert "| iteration | accuracy | verdict | mismatch topics |" in text
    for iteration in result.iterations:
        assert re.search(
            rf"^\| {iteration.iteration} \| {iteration.verdict.accuracy:.2f} \|", text, re.M
        )
    assert (home / "requests" / "query_summary" / f"{key}.json").is_file()
    instance = home_instance(home)
    assert instance.get_dynamic_partitions(query_requests.name) == [key]
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=5
    ).records
    metadata = record.asset_materialization.metadata
    assert metadata["iterations"].value == len(result.iterations)
    assert metadata["status"].value == "approved"

    # The same request, spaced otherwise: served from the materialized asset, no new run.
    assert ask(home, tiny_model, "--paper", PAPER_ID, "  " + QUERY.replace(" ", "   ")) == 0
    again = capsys.readouterr().out
    assert "up to date: served from the materialized asset" in again and result.summary in again
    assert materializations(home, key) == 1
    assert main(["status", "--home", str(home), *tiny(tiny_model)]) == 0
    assert "query_summary: 1 request (1 fresh)" in capsys.readouterr().out

    # Another cap is another code version: the request is materialized again.
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY, "--max-iterations", "1") == 0
    capped = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)
    assert materializations(home, key) == 2
    assert capped.max_iterations == 1 and len(capped.iterations) == 1
    assert "of at most 1 iteration " in capsys.readouterr().out


def test_ask_record_keeps_the_pair_once_for_the_gate(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = home / RECORDED_QRELS
    # A pair needs its question: refused before anything is asked or recorded.
    assert ask(home, tiny_model, "--paper", PAPER_ID, "--record", " ") == 2
    assert "the query is empty" in capsys.readouterr().err and not recorded.exists()

    # Asked twice, spaced otherwise the second time (served from the asset): recorded once.
    assert ask(home, tiny_model, "--paper", PAPER_ID, "--record", QUERY) == 0
    assert f"Judged pair recorded in {recorded}" in capsys.readouterr().out
    assert ask(home, tiny_model, "--paper", PAPER_ID, "--record", QUERY.replace(" ", "  ")) == 0
    assert f"Judged pair already recorded in {recorded}" in capsys.readouterr().out
    (line,) = recorded.read_text("utf-8").splitlines()
    pair = json.loads(line)
    assert (pair["question"], pair["paper"]) == (QUERY, PAPER_ID) and pair["recorded_at"]

    # What `litpipe backfill --gate recorded` scores: one query, with the paper relevant.
    gate_set = load_gate_set(recorded)
    assert gate_set.queries == {"q1": QUERY} and gate_set.qrels == {"q1": {PAPER_ID: 1}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--paper", "10.9999_nope", QUERY], "unknown paper '10.9999_nope': it is not registered"),
        (["--paper", PAPER_ID, ""], "the query is empty"),
        (["--paper", PAPER_ID, " \t "], "the query is empty"),
        (["--paper", PAPER_ID], "the query is empty"),
        (["--paper", " ", QUERY], "the paper id is empty"),
        (
            ["--paper", PAPER_ID, QUERY, "--max-iterations", "0"],
            "--max-iterations must be at least 1",
        ),
    ],
)
def test_bad_requests_exit_2_with_a_clear_message_and_write_nothing(
    home: Path,
    tiny_model: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    assert ask(home, tiny_model, *args) == 2
    assert message in capsys.readouterr().err
    assert not (home / "requests").exists()
    assert not (home / "outputs" / "bio" / "query_summary").exists()
    assert home_instance(home).get_dynamic_partitions(query_requests.name) == []


def test_a_registered_paper_not_yet_ingested_is_refused_saying_what_to_run(
    home: Path, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "later"
    folder.mkdir()
    shutil.copy(PDFS_BY_SIZE[1], folder)
    source = pdf_source(folder / PDFS_BY_SIZE[1].name)
    Catalog(home / "catalog.sqlite").register(source, "later")
    assert ask(home, tiny_model, "--paper", source.paper_id, QUERY) == 2
    err = capsys.readouterr().err
    assert f"paper {source.paper_id} is not ingested; run `litpipe run {folder}" in err
    assert not (home / "requests").exists()
    # Nothing registered at all: the same advice, and no home is created.
    empty = tmp_path / "empty-home"
    assert ask(empty, tiny_model, "--paper", PAPER_ID, QUERY) == 2
    assert "no paper is registered" in capsys.readouterr().err and not empty.exists()


# Through a model (the local stub), each MAIS agent on its own model name.

ROUTES = {
    "query_questions": {"model": "openai/stub-questions"},
    "query_summary": {"model": "openai/stub-summary"},
    "summary_qa": {"model": "openai/stub-qa"},
    "summary_judge": {"model": "openai/stub-judge"},
    # The ACUs measure the loop and never steer it: offline here, so the stub's calls are the
    # loop's own.
    "summary_acus": {"model": "offline"},
    "summary_acu_check": {"model": "offline"},
}


def verdict(approved: bool, accepted: list[bool], topics: list[str]) -> dict[str, Any]:
    return judge_verdict(PAPER_ID, approved, accepted, topics)


def script_the_loop(stub: StubLLM) -> None:
    """Numbered drafts citing the first page among the passages they are given (and a page
    that does not exist), a QA agent echoing the summary, a judge disapproving twice, then
    approving (on every part of the paper: a paper longer than the context is judged in parts,
    one call each)."""
    drafts = iter(range(1, 100))

    def summarize(body: dict[str, Any]) -> dict[str, Any]:
        prompt = " ".join(str(message["content"]) for message in body["messages"])
        page = re.search(rf"\[{re.escape(PAPER_ID)}:(\d+)\]", prompt)
        assert page is not None, "the summarizer was given no passage of the paper"
        cited = f"[{PAPER_ID}:{page.group(1)}]"
        return {
            "evidence_sufficient": True,
            "summary": f"Draft {next(drafts)}: REV1 protects flies from MMS {cited}. "
            f"It is conserved in yeast [{PAPER_ID}:999].",
            "highlights": [f"REV1 matters {cited}."],
        }

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        ids = re.findall(r"^(\S+:d\d+):", fenced(body, "questions"), re.M)
        return {"answers": [{"question_id": i, "answer": fenced(body, "summary")} for i in ids]}

    stub.script("stub-questions", QUESTIONS)
    stub.respond("stub-summary", summarize)
    stub.respond("stub-qa", answer)
    verdicts = [
        verdict(False, [False, True], ["the decisive domain"]),
        verdict(False, [True, False], ["MMS doses", "survival scoring"]),
        verdict(True, [True, True], []),
    ]

    def judge(body: dict[str, Any]) -> dict[str, Any]:
        draft = re.search(r"Draft (\d+):", fenced(body, "answers"))
        assert draft is not None
        return verdicts[int(draft.group(1)) - 1]

    stub.respond("stub-judge", judge)


def test_through_a_model_the_judge_disapproving_twice_makes_three_iterations_in_the_trace(
    home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script_the_loop(stub_llm)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(ROUTES))
    model = ["--model", "openai/stub", "--api-base", stub_llm.url]
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY, *model) == 0
    out = capsys.readouterr().out
    assert "  1  accuracy 0.50  mismatch: the decisive domain" in out
    assert "  2  accuracy 0.50  mismatch: MMS doses; survival scoring" in out
    assert "  3  accuracy 1.00  approved" in out
    assert "Status: approved, approved after 3 of at most 15 iterations" in out
    key = request_for(PAPER_ID, QUERY).key
    result = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)
    # Questions once; summary and QA three times, the judge three times on each part of the
    # paper; then the grading on the same model: the claim judge once per cited sentence (the
    # summary's and the highlight's), coherence once.
    parts = result.iterations[0].verdict.parts
    assert parts >= 2 and "the judge checks the whole paper in" in result.route_reason
    assert len(requests_to(stub_llm, "stub-judge")) == 3 * parts
    assert f"model calls: {10 + 3 * parts} made" in out
    assert [i.verdict.accuracy for i in result.iterations] == [0.5, 0.5, 1.0]
    assert [i.revised_from for i in result.iterations] == [
        [],
        ["the decisive domain"],
        ["MMS doses", "survival scoring"],
    ]
    assert result.engine == "openai/stub-summary" and result.summary.startswith("Draft 3:")
    # The page that does not exist was dropped; what is left resolves to stored chunks.
    assert f"[{PAPER_ID}:999]" not in result.summary
    assert_citations_resolve(result, stored_rows(home, tiny_model))
    assert fenced(requests_to(stub_llm, "stub-summary")[2], "feedback") == (
        "- MMS doses\n- survival scoring"
    )
    table = (home / "outputs" / "bio" / "query_summary" / f"{key}.md").read_text("utf-8")
    assert "| 2 | 0.50 | not approved | MMS doses; survival scoring |" in table

    # Asked again with the same models: no run, no model call.
    calls = stub_llm.request_count
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY, *model) == 0
    assert "up to date" in capsys.readouterr().out
    assert stub_llm.request_count == calls and materializations(home, key) == 1


# The convergence report over a question set.


def two_questions_with_their_papers(folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A corpus of the two smallest bundled PDFs, and the LitQA2 questions asked of them."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for pdf in PDFS_BY_SIZE[:2]:
        shutil.copy(pdf, corpus)
    records = [json.loads(line) for line in LITQA2.read_text("utf-8").splitlines() if line]
    chosen = [r for r in records if r["pdf_file"] in {pdf.name for pdf in PDFS_BY_SIZE[:2]}]
    assert len(chosen) == 2
    return corpus, chosen


def test_eval_mais_asks_each_question_of_its_paper_and_writes_the_table_plot_and_json(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, chosen = two_questions_with_their_papers(tmp_path)
    elsewhere = {**chosen[0], "id": "not-here", "pdf_file": "10.0000_missing.pdf"}
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in [*chosen, elsewhere]), "utf-8")
    home = tmp_path / "home"
    command = ["eval", "mais", "--dataset", str(dataset), "--corpus", str(corpus)]

    assert main([*command, "--home", str(home), *tiny(tiny_model)]) == 0
    captured = capsys.readouterr()
    *table, last = captured.out.strip().splitlines()
    figures = json.loads(last)
    assert figures["runs"] == 2 and figures["questions"] == 3 and figures["skipped"] == 1
    assert figures["failed"] == 0 and figures["materialized"] == 2
    assert figures["engine"] == "offline"
    assert "skipped not-here: 10.0000_missing.pdf" in captured.err
    out_dir = home / "outputs" / "corpus"
    report = ConvergenceReport.model_validate_json((out_dir / "convergence.json").read_text())
    assert report.runs == 2 and report.approved == figures["approved"]
    assert report.accuracy_by_iteration[0].runs == 2
    assert figures["accuracy_by_iteration"] == [
        row.model_dump() for row in report.accuracy_by_iteration
    ]

    # The table: the figures, accuracy per iteration, then one row per question.
    text = "\n".join(table)
    assert "| runs | approved | approved share |" in text
    assert "| iteration | runs reaching it | mean accuracy |" in text
    # Offline, above the table: why its figures measure nothing about MAIS (and in the JSON).
    assert report.notice is not None and "built into the offline engine" in report.notice
    assert text.index(f"> {report.notice}") < text.index("| runs | approved |")
    assert figures["notice"] == report.notice
    assert report.engines["query_summary"] == report.engines["summary_judge"] == ["offline"]
    for record in chosen:
        assert re.search(rf"^\| {record['id']} \| {record['pdf_file'][:-4]} \| q-", text, re.M)
    assert (out_dir / "convergence.md").read_text("utf-8").strip() == text.strip()
    svg = ET.fromstring((out_dir / "convergence.svg").read_text("utf-8"))
    points = svg.findall(".//{http://www.w3.org/2000/svg}circle")
    assert [float(p.get("data-accuracy", "nan")) for p in points] == pytest.approx(
        [row.mean_accuracy for row in report.accuracy_by_iteration], abs=1e-4
    )
    # Each answer is a request of the instance; a rerun is served from them.
    instance = home_instance(home)
    assert len(instance.get_dynamic_partitions(query_requests.name)) == 2
    assert main([*command, "--home", str(home), *tiny(tiny_model)]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["up_to_date"] == 2 and again["materialized"] == 0
    assert again["accuracy_by_iteration"] == figures["accuracy_by_iteration"]


def test_eval_mais_with_a_limit_asks_the_first_questions_and_builds_only_their_papers(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, chosen = two_questions_with_their_papers(tmp_path)
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in chosen), "utf-8")
    home = tmp_path / "home"
    command = ["eval", "mais", "--dataset", str(dataset), "--corpus", str(corpus)]
    assert main([*command, "--limit", "0", "--home", str(home)]) == 2
    assert "--limit must be at least 1, not 0" in capsys.readouterr().err

    assert main([*command, "--limit", "1", "--home", str(home), *tiny(tiny_model)]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["questions"] == 1 and figures["runs"] == 1
    # The corpus' other paper is not built: a limited evaluation pays for what it asks of.
    instance = home_instance(home)
    assert instance.get_dynamic_partitions(papers.name) == [chosen[0]["pdf_file"][:-4]]


def test_eval_mais_refuses_a_bad_dataset_or_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "Why?", "pdf_file": "a.pdf"}\n{"id": "b"}\n', "utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl line 2: question: Field required"):
        read_questions(bad)
    command = ["eval", "mais", "--home", str(home), "--dataset"]
    assert main([*command, str(bad), "--corpus", str(tmp_path)]) == 2
    assert "line 2" in capsys.readouterr().err
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "question": "Why?", "pdf_file": "a.pdf"}\n', "utf-8")
    assert main([*command, str(good), "--corpus", str(tmp_path / "nowhere")]) == 2
    assert "not a folder of PDFs" in capsys.readouterr().err
    # A folder without any PDF is refused by the discovery `litpipe run` uses, saying so.
    assert main([*command, str(good), "--corpus", str(tmp_path)]) == 2
    assert "no .pdf file in this folder or below it" in capsys.readouterr().err
    for evaluation in ("mais", "litqa"):
        arguments = ["eval", evaluation, "--home", str(home), "--dataset", str(good)]
        assert main([*arguments, "--corpus", str(tmp_path), "--max-iterations", "0"]) == 2
        assert f"litpipe eval {evaluation}: --max-iterations must be at least 1" in (
            capsys.readouterr().err
        )
    assert not home.exists()
