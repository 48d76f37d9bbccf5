"""`litpipe run` and `litpipe status` end to end, as a user runs them (a tiny local embedder)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.defs.definitions import build_definitions
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.ingest.ids import pdf_paper_id
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import Synthesis
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import marker, markers_in
from litpipe_tests.bundled import short_paper, write_bad_pdfs
from litpipe_tests.cited import CITATION_LABEL, cited_papers, home_keys
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_llm import StubLLM

WRITER = "openai/stub-synthesis"
JUDGE = "openai/stub-judge"


def run(home: Path, embedder: Path, *args: str) -> tuple[int, dict]:
    code = main(["run", *args, "--home", str(home), "--embedder", str(embedder)])
    reports = sorted((home / "outputs").glob("*/report.json"), key=lambda p: p.stat().st_mtime)
    return code, json.loads(reports[-1].read_text()) if reports else {}


def folder_with(folder: Path, pdfs: list[Path]) -> Path:
    folder.mkdir()
    for pdf in pdfs:
        shutil.copy(pdf, folder)
    return folder


def folder_of_short_papers(folder: Path, count: int) -> Path:
    """Papers of one page each: what the command does with a paper, not with a long one."""
    folder.mkdir()
    for number in range(count):
        short_paper(folder, number)
    return folder


def test_rerun_embeds_nothing_and_a_new_pdf_embeds_only_its_chunks(
    tmp_path: Path, tiny_model: Path
) -> None:
    folder = folder_of_short_papers(tmp_path / "papers", 2)
    home = tmp_path / "home"

    code, first = run(home, tiny_model, str(folder), "--collection", "bio")
    assert code == 0
    assert first["collection"] == "bio"
    assert first["papers"] == 2 and first["failed_papers"] == []
    assert first["embedded_chunks"] == first["chunks"] >= 2
    assert first["lancedb_rows"] == first["chunks"]
    assert first["engine"] == "offline"
    assert set(first["timings"]) >= {"discover_s", "pipeline_s", "total_s"}
    checks = {(c["asset"], c["check"]): c for c in first["synthesis"]["checks"]}
    assert set(checks) == {
        (asset, check)
        for asset in ("synthesis", "plain_summary")
        for check in ("coverage", "citation_validity", "support", "coherence")
    } | {("synthesis", "completeness"), ("comparison_table", "support")} | {
        (asset, "optional_step")
        for asset in (
            "cross_paper_questions",
            "relationship_analysis",
            "plain_summary",
            "comparison_table",
        )
    }
    for asset in ("synthesis", "plain_summary"):
        assert checks[(asset, "coverage")]["passed"]
        assert checks[(asset, "citation_validity")]["passed"]
        assert "cites 2 of 2 papers" in checks[(asset, "coverage")]["description"]
        # Offline, coherence (a model's grade) could not run: skipped, saying why, not passed.
        coherence = checks[(asset, "coherence")]
        assert coherence["passed"] is None and "needs a model" in coherence["description"]
    # Offline, every optional step runs.
    assert checks[("cross_paper_questions", "optional_step")]["passed"]

    code, again = run(home, tiny_model, str(folder), "--collection", "bio")
    assert code == 0
    assert again["embedded_chunks"] == 0
    assert again["papers_up_to_date"] == 2
    assert again["lancedb_rows"] == first["lancedb_rows"]

    short_paper(folder, 2)
    code, third = run(home, tiny_model, str(folder), "--collection", "bio")
    assert code == 0
    assert third["papers"] == 3 and third["papers_materialized"] == 1
    new_chunks = third["chunks"] - first["chunks"]
    assert third["embedded_chunks"] == new_chunks > 0
    assert third["lancedb_rows"] == third["chunks"]
    store = ChunkStore(home / "lancedb")
    assert store.count_rows(third["embedder"]) == third["chunks"]


def test_bad_pdfs_fail_with_a_reason_and_the_good_one_completes(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = folder_of_short_papers(tmp_path / "mixed", 1)
    expected = {path.name: reason for path, reason in write_bad_pdfs(folder).values()}

    code, report = run(tmp_path / "home", tiny_model, str(folder))

    assert code == 0
    assert report["papers"] == 1 and report["embedded_chunks"] > 0
    failures = {Path(f["file"]).name: f for f in report["failed_papers"]}
    assert set(failures) == set(expected)
    for name, reason in expected.items():
        # The file path leads the reason, which says why in one line.
        assert failures[name]["reason"].startswith(f"{folder / name}: {reason}")
        assert "\n" not in failures[name]["reason"] and failures[name]["paper_id"]
    assert "FAILED" in capsys.readouterr().err


def test_table_rows_fail_one_by_one(tmp_path: Path, tiny_model: Path) -> None:
    table = tmp_path / "search.csv"
    table.write_text(
        "id,title,abstract,year\n"
        "a1,Yeast proteomics,We profile ale yeast proteins during fermentation.,2023\n"
        "a2,No abstract,,2022\n"
        "a1,Duplicate,Same id again.,2021\n"
        "b|2,Fly genetics,Rev1 coordinates tolerance to alkylation damage.,2024\n",
        encoding="utf-8",
    )
    code, report = run(tmp_path / "home", tiny_model, str(table))
    assert code == 0
    assert report["collection"] == "search"
    assert report["papers"] == 2
    assert sorted(f["row"] for f in report["failed_papers"]) == [2, 3]


STRUCTURED_ABSTRACTS = [
    (
        "s1",
        "Acupuncture after stroke",
        "[Purpose] This study examined whether electro-acupuncture reduces depression after "
        "stroke. [Subjects] Forty patients with post-stroke depression took part. [Methods] "
        "Depression scales were given every four weeks of treatment. [Results] Depression fell "
        "more in patients with good motor function. [Conclusion] Motor function shapes the "
        "benefit of electro-acupuncture.",
    ),
    (
        "s2",
        "Exercise and depression",
        "BACKGROUND Depression is common after stroke and slows recovery. METHODS We randomised "
        "120 patients to supervised exercise or usual care. RESULTS Exercise lowered depression "
        "scores at twelve weeks. CONCLUSIONS Supervised exercise eases depression after stroke.",
    ),
    (
        "s3",
        "Antidepressants after stroke",
        "Background: Antidepressants are often given after stroke. Methods: We pooled twelve "
        "trials of antidepressants in stroke survivors. Results: Antidepressants reduced "
        "depression but raised the risk of falls. Conclusions: Their benefit must be weighed "
        "against falls.",
    ),
]


def test_the_labels_of_structured_abstracts_stay_out_of_the_texts_and_citations(
    tmp_path: Path, tiny_model: Path
) -> None:
    """Abstracts labelled in brackets, in capitals and before colons: what litpipe writes
    quotes their sentences, never a label, and its only square brackets are citations."""
    table = tmp_path / "stroke.csv"
    rows = "".join(f'{key},{title},"{abstract}"\n' for key, title, abstract in STRUCTURED_ABSTRACTS)
    table.write_text("id,title,abstract\n" + rows, encoding="utf-8")

    code, report = run(tmp_path / "home", tiny_model, str(table))

    assert code == 0 and report["papers"] == 3
    labels = re.compile(
        r"\[(?:Purpose|Subjects|Methods|Results|Conclusion)\]|\b(?:BACKGROUND|"
        r"METHODS|RESULTS|CONCLUSIONS)\b|\b(?:Background|Methods|Results|"
        r"Conclusions):"
    )
    outputs = report["synthesis"]["outputs"]
    for name in ("synthesis.md", "plain.md"):
        written = Path(outputs[name]).read_text("utf-8")
        assert "depression" in written.lower()
        assert not labels.search(written), name
        papers = {f"stroke.{key}" for key, _, _ in STRUCTURED_ABSTRACTS}
        assert cited_papers(written, tmp_path / "home") <= papers, name
        # Every square bracket of the text is one of its citations, each by a paper's key and
        # page (a picture's alt text aside).
        keys = set(home_keys(tmp_path / "home").values())
        body = written.split("## References", 1)[0]
        for inside in re.findall(r"(?<!!)\[([^\]]*)\]", body):
            cited = [CITATION_LABEL.match(f"[{part}") for part in inside.split("; ")]
            assert all(match and match[1] in keys for match in cited), inside


def test_exit_codes(tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    with pytest.raises(SystemExit) as usage:
        main(["run"])
    assert usage.value.code == 2
    assert main(["run", str(tmp_path / "missing"), "--home", str(home)]) == 2
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["run", str(tmp_path / "notes.txt"), "--home", str(home)]) == 2
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "empty.pdf").write_bytes(b"")
    capsys.readouterr()
    code, report = run(home, tiny_model, str(only_bad))
    assert code == 1
    assert report["papers"] == 0 and len(report["failed_papers"]) == 1
    said = capsys.readouterr().err
    assert f"{only_bad}: 1 paper in collection 'bad'" in said and "0 papers ingested" in said


def materializations(home: Path, asset: str, partition: str) -> int:
    records = (
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]),
            limit=100,
        )
        .records
    )
    return len(records)


PER_PAPER = ["paper_chunks", "chunk_embeddings", "paper_questions", "paper_answers"]


@pytest.mark.slow
def test_a_paper_in_two_collections_is_built_once_and_cited_by_both(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    first = folder_of_short_papers(tmp_path / "a", 2)
    shared_paper, other_paper = sorted(first.iterdir())
    assert run(home, tiny_model, str(first))[0] == 0
    shared, stays = pdf_paper_id(shared_paper), pdf_paper_id(other_paper)
    built = {asset: materializations(home, asset, shared) for asset in PER_PAPER}
    syntheses_of_a = materializations(home, "synthesis", "a")
    capsys.readouterr()

    # The same PDF, from another folder, into collection b: nothing of the paper is built again.
    code, report = run(home, tiny_model, str(folder_with(tmp_path / "b", [shared_paper])))
    said = capsys.readouterr().err
    assert code == 0, said
    assert f"1 paper also in other collections ('a': {shared})" in said
    assert report["collection"] == "b" and report["papers"] == 1
    assert report["papers_up_to_date"] == 1 and report["embedded_chunks"] == 0
    assert {asset: materializations(home, asset, shared) for asset in PER_PAPER} == built
    assert materializations(home, "synthesis", "a") == syntheses_of_a
    artifacts = ArtifactStore(home / "artifacts", report["embedder"], PER_EMBEDDER_ASSETS)
    for collection, papers in [("a", [shared, stays]), ("b", [shared])]:
        written = artifacts.read(["synthesis"], collection, Synthesis)
        assert written.papers == sorted(papers)
        assert shared in {paper_id for paper_id, _ in markers_in(written.text)}, collection

    # --move takes it out of a: a is rebuilt without it, b and the paper are left as they are.
    syntheses_of_b = materializations(home, "synthesis", "b")
    code, report = run(home, tiny_model, str(tmp_path / "b"), "--move")
    assert code == 0
    assert f"moving 1 paper into 'b' out of 'a': {shared}" in capsys.readouterr().err
    assert report["papers_up_to_date"] == 1 and report["embedded_chunks"] == 0
    assert {asset: materializations(home, asset, shared) for asset in PER_PAPER} == built
    assert materializations(home, "synthesis", "b") == syntheses_of_b
    assert artifacts.read(["synthesis"], "a", Synthesis).papers == [stays]
    assert artifacts.read(["synthesis"], "b", Synthesis).papers == [shared]
    # One row per chunk in the store, whatever collections hold the paper.
    store = ChunkStore(home / "lancedb")
    rows = store.chunk_rows(report["embedder"], ["chunk_id"]).column("chunk_id").to_pylist()
    assert len(rows) == len(set(rows))


def test_status_lists_fresh_and_stale(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = folder_of_short_papers(tmp_path / "papers", 1)
    home = tmp_path / "home"
    run(home, tiny_model, str(folder), "--collection", "bio")
    capsys.readouterr()

    assert main(["status", "--home", str(home), "--embedder", str(tiny_model)]) == 0
    out = capsys.readouterr().out
    assert "bio: 1 paper\n" in out
    assert "chunk_embeddings" in out and "1 fresh" in out

    # Another embedder makes the chunks and embeddings stale, the parsed document not.
    assert main(["status", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "1 fresh" in lines["paper_document"]
    assert "stale" in lines["paper_chunks"] and "stale" in lines["chunk_embeddings"]


def test_a_paper_the_writer_left_uncited_makes_coverage_warn_in_the_report_and_the_output(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The synthesis written by a model citing 2 of the 3 papers: the third is cited only by
    the appended "Also in this collection" sentence, which the coverage check counts apart."""
    left_out: list[str] = []

    def cites_two_papers(body: dict[str, Any]) -> dict[str, Any]:
        prompt = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        first_marker: dict[str, str] = {}
        for paper_id, page in markers_in(prompt):
            first_marker.setdefault(paper_id, marker(paper_id, page))
        *cited, uncited = list(first_marker.items())[:3]
        left_out.append(uncited[0])
        return {
            "title": "Two of three",
            "text": " ".join(f"A finding {written}." for _, written in cited),
        }

    stub_llm.respond("stub-synthesis", cites_two_papers)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps({"synthesis": {"model": WRITER}}))
    folder = folder_of_short_papers(tmp_path / "papers", 3)
    home = tmp_path / "home"

    code, report = run(
        home, tiny_model, str(folder), "--collection", "bio", "--api-base", stub_llm.url
    )

    assert code == 0  # a warning blocks nothing: the pages are written
    (third,) = set(left_out)
    assert report["synthesis"]["appended_papers"] == 1
    assert set(report["synthesis"]["outputs"]) >= {"synthesis.html", "synthesis.md"}
    checks = {(c["asset"], c["check"]): c for c in report["synthesis"]["checks"]}
    coverage = checks[("synthesis", "coverage")]
    assert (coverage["passed"], coverage["severity"]) == (False, "warn")
    assert coverage["description"] == (
        "expert synthesis: the writer cites 2 of 3 papers; 1 more only by an appended "
        f'"Also in this collection" sentence: {third}'
    )
    assert checks[("plain_summary", "coverage")]["passed"]  # offline, it cites all three
    err = capsys.readouterr().err
    assert f"check synthesis/coverage: FAILED (warn): {coverage['description']}" in err
    assert "3/3 papers cited, 1 of them only by an appended sentence" in err
    # What the Dagster UI shows on the check: the writer's papers and the appended one apart.
    key = dg.AssetCheckKey(dg.AssetKey("synthesis"), "coverage")
    instance = home_instance(home)
    (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.severity == dg.AssetCheckSeverity.WARN
    metadata = {name: entry.value for name, entry in evaluation.metadata.items()}
    assert metadata["writer_cited_count"] == 2 and metadata["appended_count"] == 1
    assert metadata["appended"] == [third] and third not in metadata["writer_cited"]
    assert metadata["missing"] == []
    # The page: the prose by the model, the rest offline, and it says which.
    page = Path(report["synthesis"]["outputs"]["synthesis.html"]).read_text("utf-8")
    assert "Partly written by litpipe&#x27;s offline extractive engine (the plain-language" in page
    assert f"the rest by {WRITER})" in page


@pytest.mark.slow  # a whole `litpipe run` of two PDFs, one of them failing
def test_a_paper_that_failed_is_left_out_of_the_synthesis_of_the_others_with_its_reason(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad paper beside a good one: the good one gets its synthesis and page, which name
    the bad one with why (its run's failure), and coverage warns instead of blocking."""
    folder = folder_of_short_papers(tmp_path / "papers", 1)
    scratch = tmp_path / "bad"
    scratch.mkdir()
    drawn, why = write_bad_pdfs(scratch)["drawn"]
    shutil.copy(drawn, folder)

    code, report = run(tmp_path / "home", tiny_model, str(folder), "--collection", "bio")

    assert code == 0
    (failed,) = report["failed_papers"]
    assert failed["reason"].startswith(f"{folder / drawn.name}: {why}")
    synthesis = report["synthesis"]
    assert synthesis["papers"] == 1 and synthesis["cited_papers"] == 1
    (left_out,) = synthesis["left_out"]
    assert left_out == {
        "paper_id": failed["paper_id"],
        "reason": f"its own run failed: {failed['reason']}",
    }
    page = Path(synthesis["outputs"]["synthesis.html"]).read_text("utf-8")
    assert "Papers left out" in page and html.escape(left_out["reason"]) in page
    assert left_out["reason"] in Path(synthesis["outputs"]["synthesis.md"]).read_text("utf-8")
    checks = {(c["asset"], c["check"]): c for c in synthesis["checks"]}
    coverage = checks[("synthesis", "coverage")]
    assert (coverage["passed"], coverage["severity"]) == (False, "warn")
    assert coverage["description"] == (
        "expert synthesis: the writer cites 1 of 1 paper; "
        f"left out: {failed['paper_id']} ({left_out['reason']})"
    )
    err = capsys.readouterr().err
    assert f"  left out: {failed['paper_id']}: {left_out['reason']}" in err


@pytest.mark.slow  # a whole `litpipe run`
def test_a_blocking_check_that_fails_is_reported_with_its_reason(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With `grading.blocking`, a synthesis its judge finds incoherent fails its coherence
    check with an error, which stops the collection's assets: the command says which check
    failed and why, not only the check's name."""
    stub_llm.script("stub-judge", {"issues": ["no argument, only a list"], "score": 1})
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps({"coherence_judge": {"model": JUDGE}}))
    monkeypatch.setenv("LITPIPE_GRADING__BLOCKING", "true")
    # Two abstracts: the judge's grade, not what it grades, fails the check.
    table = tmp_path / "papers.csv"
    table.write_text(
        "id,title,abstract\n"
        "a1,Yeast proteomics,We profile ale yeast proteins during fermentation.\n"
        "b2,Fly genetics,Rev1 coordinates tolerance to alkylation damage in flies.\n",
        encoding="utf-8",
    )

    code, report = run(
        tmp_path / "home",
        tiny_model,
        str(table),
        "--collection",
        "bio",
        "--api-base",
        stub_llm.url,
    )

    assert code == 1
    reason = (
        "synthesis check coherence failed: the expert synthesis scores 1 of 5 for coherence "
        f"(graded by {JUDGE}); no argument, only a list"
    )
    assert report["collection_failure"] == f"bio: {reason}"
    err = capsys.readouterr().err
    assert f"  collection assets FAILED: bio: {reason}" in err
    assert f"  check synthesis/coherence: FAILED (error): {reason.split(': ', 1)[1]}" in err


def materialization_counts(home: Path) -> dict[str, int]:
    """How many times each asset was materialized, over all its partitions."""
    instance = home_instance(home)
    return {
        key.to_user_string(): len(
            instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key), limit=10_000
            ).records
        )
        for key in instance.get_asset_keys()
    }


def test_a_rerun_rebuilds_what_reads_a_stage_only_when_its_output_changed(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retrieval setting that changes nothing for these papers (fewer candidates than they
    have chunks is not reached): the stages it feeds are rebuilt under their new code version
    and come back the same, so nothing that reads them (the answers, the index, the syntheses)
    is built again."""
    folder = folder_of_short_papers(tmp_path / "papers", 2)
    home = tmp_path / "home"
    assert run(home, tiny_model, str(folder), "--collection", "bio")[0] == 0
    before = materialization_counts(home)
    old_graph = build_definitions(**settings_groups(Settings(home=home))).resolve_asset_graph()

    monkeypatch.setenv("LITPIPE_RETRIEVAL__CANDIDATES", "99")
    code, report = run(home, tiny_model, str(folder), "--collection", "bio")

    assert code == 0 and report["papers_materialized"] == 2
    new_graph = build_definitions(**settings_groups(Settings(home=home))).resolve_asset_graph()
    fed = {
        key.to_user_string()
        for key in new_graph.toposorted_asset_keys
        if key.to_user_string() in before
        and new_graph.get(key).code_version != old_graph.get(key).code_version
    }
    assert {"question_evidence", "relationship_analysis"} <= fed
    after = materialization_counts(home)
    assert after["question_evidence"] == before["question_evidence"] + 2
    assert {asset for asset in after if after[asset] != before[asset]} == fed
