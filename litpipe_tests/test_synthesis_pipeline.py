"""The whole chain, papers to syntheses, through Dagster: offline on bundled papers, and through
the stub model to show what each stage's prompt receives and what a rerun costs."""

from __future__ import annotations

import base64
import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pytest

from litpipe.catalog import Catalog
from litpipe.defs.resources import artifact_store
from litpipe.ingest.sources import discover
from litpipe.runtime.runner import PapersRun, open_instance, register, run_papers
from litpipe.schemas import CollectionOutputs, PaperAnswers, RelationshipAnalysis, Synthesis
from litpipe.settings import Settings
from litpipe.text import cited_sentences, markers_in
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_cli import folder_with
from litpipe_tests.test_synthesis import cited_papers_per_sentence, unmarked

COLLECTION = "bio"


def build(settings: Settings, folder: Path) -> tuple[dg.DagsterInstance, PapersRun]:
    instance = open_instance(settings.llm, settings.paths)
    run = run_papers(
        settings, instance, register(settings.paths, instance, discover(folder, COLLECTION))
    )
    assert run.collection_failure is None
    assert all(outcome.status != "failed" for outcome in run.outcomes)
    return instance, run


def check_passed(instance: dg.DagsterInstance, asset: str, check: str) -> bool:
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return record.event.dagster_event.event_specific_data.passed


def materialization_metadata(
    instance: dg.DagsterInstance, asset: str
) -> Mapping[str, dg.MetadataValue]:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return event.asset_materialization.metadata


def shown_picture(entry: dg.MetadataValue) -> ET.Element:
    """The SVG a Markdown metadata entry shows, embedded as a data URI, parsed."""
    assert isinstance(entry, dg.MarkdownMetadataValue)
    found = re.search(r"!\[[^\]]*\]\(data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\)", entry.value)
    assert found, "no embedded picture"
    return ET.fromstring(base64.b64decode(found.group(1)))


def svg_groups(root: ET.Element, css_class: str) -> list[ET.Element]:
    return [
        element
        for element in root.iter("{http://www.w3.org/2000/svg}g")
        if css_class in element.get("class", "").split()
    ]


@pytest.mark.parametrize(
    "options",
    [
        {},
        # The other answer mode and the tree of summaries, as a user sets them: through Dagster.
        {
            "synthesis": {
                "answer_mode": "multi_view",
                "context_tokens": 1000,
                "hierarchical_min_papers": 2,
            }
        },
    ],
    ids=["single-stuff", "multi_view-hierarchical"],
)
def test_offline_run_writes_a_synthesis_citing_every_paper_with_its_checks_passing(
    tmp_path: Path, tiny_model: Path, options: dict[str, object]
) -> None:
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[], **options, ingest={"embedder": str(tiny_model)}
    )
    instance, run = build(settings, folder_with(tmp_path / "papers", PDFS_BY_SIZE[:3]))
    paper_ids = sorted(outcome.paper_id for outcome in run.outcomes)
    artifacts = artifact_store(settings.ingest, settings.paths)

    for paper_id in paper_ids:
        answers = artifacts.read(["paper_answers"], paper_id, PaperAnswers)
        assert answers.engine == "offline" and answers.answers
        assert answers.mode == settings.synthesis.answer_mode
        for answer in answers.answers:
            for citation in answer.citations:  # every citation is one of its own passages
                assert set(citation.chunk_ids) <= {chunk.chunk_id for chunk in answer.evidence}
    analysis = artifacts.read(["relationship_analysis"], COLLECTION, RelationshipAnalysis)
    answered = sum(
        len(artifacts.read(["paper_answers"], p, PaperAnswers).answers) for p in paper_ids
    )
    assert len(analysis.insights) >= answered  # one per pair, comparative ones on top
    assert sorted(analysis.papers) == paper_ids
    assert set(analysis.type_distribution) == {
        "extension",
        "contradiction",
        "complementary",
        "improvement",
        "parallel",
    }
    expected_pattern = "hierarchical" if options else "stuff"
    assert artifacts.read(["synthesis"], COLLECTION, Synthesis).pattern == expected_pattern
    for asset in ("synthesis", "plain_summary"):
        written = artifacts.read([asset], COLLECTION, Synthesis)
        assert {citation.paper_id for citation in written.citations} == set(paper_ids)
        assert check_passed(instance, asset, "coverage")
        assert check_passed(instance, asset, "citation_validity")

    # A reader's text: it opens with one sentence of a paper, cited, and no sentence cites more
    # than three papers.
    passages = [
        unmarked(chunk.text)
        for paper_id in paper_ids
        for answer in artifacts.read(["paper_answers"], paper_id, PaperAnswers).answers
        for chunk in answer.evidence
    ]
    expert_text = artifacts.read(["synthesis"], COLLECTION, Synthesis).text
    opening = expert_text.split("\n\n")[0]
    assert len(cited_sentences(opening)) == 1 and len(markers_in(opening)) == 1, opening
    assert any(unmarked(opening) in passage for passage in passages), opening
    for asset in ("synthesis", "plain_summary"):
        written = artifacts.read([asset], COLLECTION, Synthesis).text
        assert all(len(papers) <= 3 for papers in cited_papers_per_sentence(written))

    outputs = artifacts.read(["collection_outputs"], COLLECTION, CollectionOutputs)
    assert set(outputs.files) == {
        "synthesis.md",
        "plain.md",
        "synthesis.html",
        "relationships.svg",
        "relationship_types.svg",
        # The bundled papers cite none of one another, but some works several of them cite.
        "citations.json",
        "often_cited.bib",
        "often_cited.ris",
        "comparison.md",
        "comparison.csv",
        # The synthesis for a manuscript, each paper by its citation key (test_export reads them).
        "export/synthesis.tex",
        "export/synthesis-standalone.tex",
        "export/synthesis.bib",
        "export/synthesis.pandoc.md",
        "export/synthesis.csl.json",
    }
    markdown = Path(outputs.files["synthesis.md"]).read_text("utf-8")
    # The files cite each paper by its key with the page, as the exports do; the ids follow
    # the keys in the references.
    keys = Catalog(settings.paths.catalog_path).keys(paper_ids)
    assert set(keys) == set(paper_ids)
    body, references = markdown.split("## References", 1)
    assert markers_in(body) == []
    for paper_id, key in keys.items():
        assert f"[{key.key}, p. " in body or f"; {key.key}, p. " in body, key.key
        assert f"- {key.key}: " in references and f"(`{paper_id}`)" in references
    page = Path(outputs.files["synthesis.html"]).read_text("utf-8")
    assert all(f">{key.key}, p. " in page for key in keys.values())
    assert "](relationships.svg)" in markdown and "](relationship_types.svg)" in markdown
    # Each collection asset's page in the Dagster UI: a Markdown preview and both pictures.
    for asset in ("relationship_analysis", "synthesis", "collection_outputs"):
        metadata = materialization_metadata(instance, asset)
        assert isinstance(metadata["preview"], dg.MarkdownMetadataValue)
        if asset != "relationship_analysis":  # what a reader opens says the offline engine wrote it
            assert (
                "\n> Written by litpipe's offline extractive engine: " in metadata["preview"].value
            )
        graph = shown_picture(metadata["relationship_graph"])
        assert {node.get("data-paper") for node in svg_groups(graph, "node")} == set(paper_ids)
        chart = shown_picture(metadata["relationship_types_chart"])
        bars = {
            bar.get("data-type"): int(bar.get("data-count", "-1"))
            for bar in svg_groups(chart, "bar")
        }
        assert bars == analysis.type_distribution
    assert (
        analysis.theme
        in materialization_metadata(instance, "relationship_analysis")["preview"].value
    )
    files = materialization_metadata(instance, "collection_outputs")
    assert files["relationships.svg"] == dg.MetadataValue.path(outputs.files["relationships.svg"])
    assert "relationship_graph" not in materialization_metadata(instance, "plain_summary")
    page = assert_well_formed(Path(outputs.files["synthesis.html"]).read_text("utf-8"))
    expert = artifacts.read(["synthesis"], COLLECTION, Synthesis)
    assert page.citations >= len(markers_in(expert.text)) > 0
    assert set(page.targets) <= page.ids  # every link, citations included, lands on the page


def requests_of(stub: StubLLM, schema_title: str, since: int = 0) -> list[str]:
    """The user messages of the recorded requests for one agent's reply schema."""
    found = []
    for body in stub.requests[since:]:
        # The schema is in the response format (json_schema) or in the messages (the others).
        text = json.dumps({"messages": body["messages"], "format": body.get("response_format")})
        if f'"title": "{schema_title}"' in text or f'\\"title\\": \\"{schema_title}\\"' in text:
            found.append("\n".join(m["content"] for m in body["messages"] if m["role"] == "user"))
    return found


def made(run: PapersRun) -> dict[str, int]:
    return {agent: usage.made for agent, usage in run.llm_usage_by_agent.items() if usage.made}


@pytest.mark.slow
def test_the_chain_through_a_model_and_what_each_rerun_costs(
    tmp_path: Path, stub_llm: StubLLM, tiny_model: Path
) -> None:
    serve_every_agent(stub_llm)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    settings = stub_settings(
        tmp_path / "home",
        stub_llm,
        corpus_roots=[],
        ingest={"embedder": str(tiny_model)},
        llm={"prompts_dir": prompts},
    )
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:2])
    _instance, first = build(settings, folder)
    paper_ids = [outcome.paper_id for outcome in first.outcomes]
    # X-Sum's pipeline 2: the relationship analysis in one call, no extras by default.
    stages = {"paper_questions", "answers", "analysis", "synthesis"}
    assert stages | {"plain_summary"} <= set(made(first))
    assert not {"cross_paper_questions", "followups", "insights", "relationships"} & set(
        made(first)
    )

    # What the method prescribes reaches each prompt: every paper's evidence in the synthesis'
    # part 2, every pair of every paper in the one call of the relationship analysis.
    (synthesis_request,) = requests_of(stub_llm, "WrittenReply")[:1]
    parts = synthesis_request.split("=== Part ")
    assert [part[:2] for part in parts[1:]] == ["1:", "2:", "3:"]
    part_2 = parts[2]
    assert all(f"[{paper_id}:" in part_2 for paper_id in paper_ids)
    analysis = artifact_store(settings.ingest, settings.paths).read(
        ["relationship_analysis"], COLLECTION, RelationshipAnalysis
    )
    (analysis_request,) = requests_of(stub_llm, "AnalysisReply")
    assert all(f"Pair {insight.insight_id} (" in analysis_request for insight in analysis.insights)
    for paper_id in paper_ids:
        answers = artifact_store(settings.ingest, settings.paths).read(
            ["paper_answers"], paper_id, PaperAnswers
        )
        assert all(answer.question.question_id in analysis_request for answer in answers.answers)

    # (a) Nothing changed: no model call, no embedding.
    _, again = build(settings, folder)
    assert made(again) == {} and sum(o.embedded for o in again.outcomes) == 0

    # (b) An edited analysis prompt: calls for the analysis and what follows it only.
    packaged = (
        Path(__file__).parents[1] / "litpipe" / "prompts" / "relationship_analysis" / "analysis.md"
    )
    edited = packaged.read_text("utf-8").replace("## user\n", "## user\nBe concise.\n", 1)
    (prompts / "analysis.md").write_text(edited, "utf-8")
    _, after_edit = build(settings, folder)
    assert "analysis" in made(after_edit)
    assert set(made(after_edit)) <= {
        "analysis",
        "synthesis",
        "paper_summary",
        "cluster_summary",
        "plain_summary",
    }
    assert sum(o.embedded for o in after_edit.outcomes) == 0

    # (c) One more paper: per-paper calls for it alone, and the collection's stages again.
    shutil.copy(PDFS_BY_SIZE[2], folder)
    before = stub_llm.request_count
    _, grown = build(settings, folder)
    (new,) = [o for o in grown.outcomes if o.paper_id not in paper_ids]
    calls = made(grown)
    assert calls["paper_questions"] == 1 and calls["answers"] >= new.questions
    # Answers asked again: the new paper's only (no comparative questions by default).
    for request in requests_of(stub_llm, "AnswerReply", before):
        assert new.paper_id in request
    assert {"analysis", "synthesis"} <= set(calls)
    assert sum(o.embedded for o in grown.outcomes) == new.chunks == new.embedded
    # The comparison table: the new paper's row is the only one asked, the aspects kept (the
    # first build proposed them once and asked each paper's row once).
    assert (made(first)["comparison_aspects"], made(first)["comparison_cells"]) == (1, 2)
    assert calls["comparison_cells"] == 1 and "comparison_aspects" not in calls
    (row_request,) = requests_of(stub_llm, "CellsReply", before)
    assert f"[{new.paper_id}:" in row_request
    assert not any(f"[{paper_id}:" in row_request for paper_id in paper_ids)
