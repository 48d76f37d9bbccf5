"""A collection whose papers cite each other, built by `litpipe run` offline: the directed
edges with their citing sentences and pages, the relationships those sentences type, the
synthesis saying so with a citation, the works the collection keeps citing but lacks, and an
added paper rebuilding only its own references and the collection's graph.

The collection is one bundled paper (REV1, a bioRxiv preprint) and papers made in the test
that cite it by its real title, year and DOI, the way a later paper would: "we extend" one,
"unlike" another; two of them also cite a work the collection lacks (Fowler and Fields 2014).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pymupdf
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.ingest.bibtex import latex_to_text, parse_bibtex
from litpipe.ingest.references import parse_references
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import (
    CitationGraph,
    CollectionPaper,
    PaperChunks,
    PaperReferences,
    RelationshipAnalysis,
    RunReport,
    Synthesis,
)
from litpipe.text import marker
from litpipe.workflows.citation_graph import citation_graph
from litpipe.workflows.paper_references import paper_references
from litpipe_tests.bundled import CORPUS, bundled_document, short_paper
from litpipe_tests.homes import home_instance
from litpipe_tests.test_often_cited import imported_into_zotero

COLLECTION = "citing"
REV1 = "10.1101_2024.02.13.580051"
REV1_REFERENCE = (
    "Kahn S, Smith J, Jones K. REV1 coordinates a multi-faceted tolerance response to DNA "
    "alkylation damage and prevents chromosome shattering in Drosophila melanogaster. bioRxiv "
    "2024. doi:10.1101/2024.02.13.580051"
)
FOWLER = "Fowler DM, Fields S. Deep mutational scanning: a new style of protein science. Nat "
FOWLER += "Methods. 2014;11:801-807."
EXTENDS = "We extend the tolerance model of REV1 mutants [1] to pol zeta and pol eta mutants."
UNLIKE = "Unlike the REV1 study [2], we find that pol eta alone does not protect larvae."


def citing_paper(
    folder: Path, stem: str, title: str, pages: list[str], references: list[str]
) -> Path:
    """A paper with its title and DOI, `pages` of body text, then a page of `references`."""
    doc = pymupdf.open()
    for number, text in enumerate(pages):
        page = doc.new_page()
        top = 72
        if number == 0:
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 130), title, fontsize=18)
            top, text = 140, f"Journal of Tests 2025, https://doi.org/10.5555/{stem}\n\n{text}"
        page.insert_textbox(pymupdf.Rect(72, top, 540, 740), text, fontsize=10)
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 100), "References", fontsize=13)
    page.insert_textbox(pymupdf.Rect(72, 110, 540, 740), "\n".join(references), fontsize=9)
    path = folder / f"{stem}.pdf"
    doc.save(path)
    return path


def extending_paper(folder: Path) -> Path:
    return citing_paper(
        folder,
        "extends",
        "Translesion polymerases beyond REV1 in fly tolerance of alkylation",
        [
            "Abstract. We study how flies tolerate DNA alkylation damage when translesion "
            "polymerases are lost. Knocking out pol zeta sensitised larvae to methyl "
            "methanesulfonate.\n\nDeep mutational scanning maps variant effects at scale [2].",
            f"Results. {EXTENDS} Larval survival fell by half in the double mutants.",
        ],
        [f"[1] {REV1_REFERENCE}", f"[2] {FOWLER}"],
    )


def contrasting_paper(folder: Path) -> Path:
    return citing_paper(
        folder,
        "unlike",
        "Pol eta is dispensable for alkylation tolerance in fly larvae",
        [
            "Abstract. We measured larval survival after methyl methanesulfonate in pol eta "
            "mutants. Survival did not change, and chromosome breaks were as frequent as in "
            f"wild type.\n\nDiscussion. {UNLIKE} Variant effects were mapped as before [1]. "
            "Breaks were counted as described [3, 9].",
        ],
        # Entry 3 gives no title, and no entry 9 is listed: the paper is built all the same.
        [
            f"[1] {FOWLER}",
            f"[2] {REV1_REFERENCE}",
            "[3] Smith J, Jones K, Lee M, 2019, 12:345-349.",
        ],
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> tuple[Path, Path]:
    """A home where `litpipe run` built the collection (REV1 and the two papers citing it)."""
    root = tmp_path_factory.mktemp("citation-graph")
    folder = root / COLLECTION
    folder.mkdir()
    shutil.copy(CORPUS / f"{REV1}.pdf", folder)
    extending_paper(folder)
    contrasting_paper(folder)
    home = root / "home"
    assert run(folder, home, tiny_model) == 0
    return folder, home


def run(folder: Path, home: Path, model: Path) -> int:
    flags = ["--collection", COLLECTION, "--home", str(home), "--embedder", str(model)]
    return main(["run", str(folder), *flags])


def stored(home: Path, model: Path, asset: str, partition: str, kind: type) -> object:
    store = ArtifactStore(home / "artifacts", Embedder(str(model)).embedder_id, PER_EMBEDDER_ASSETS)
    return store.read([asset], partition, kind)


def paper_id_of(home: Path, model: Path, stem: str) -> str:
    graph = stored(home, model, "citation_graph", COLLECTION, CitationGraph)
    assert isinstance(graph, CitationGraph)
    return next(paper for paper in graph.papers if paper.startswith(f"10.5555_{stem}"))


def test_a_paper_citing_another_of_its_collection_makes_a_directed_edge_with_its_sentence_and_page(
    built: tuple[Path, Path], tiny_model: Path
) -> None:
    _, home = built
    graph = stored(home, tiny_model, "citation_graph", COLLECTION, CitationGraph)
    assert isinstance(graph, CitationGraph)
    extending = paper_id_of(home, tiny_model, "extends")
    contrasting = paper_id_of(home, tiny_model, "unlike")
    edges = {(edge.citing, edge.cited): edge for edge in graph.edges}
    assert set(edges) == {(extending, REV1), (contrasting, REV1)}
    assert edges[extending, REV1].rule == "doi"
    [context] = edges[extending, REV1].contexts
    assert context.sentence == EXTENDS and context.page == 2
    assert graph.cites(extending) == [REV1]
    assert sorted(graph.cited_by(REV1)) == sorted([extending, contrasting])
    # REV1's own 94 references name none of the papers citing it: it cites nothing here.
    assert graph.cites(REV1) == []


def test_offline_the_citing_sentences_type_extension_and_contrast_and_the_synthesis_says_so(
    built: tuple[Path, Path], tiny_model: Path
) -> None:
    _, home = built
    analysis = stored(home, tiny_model, "relationship_analysis", COLLECTION, RelationshipAnalysis)
    assert isinstance(analysis, RelationshipAnalysis)
    extending = paper_id_of(home, tiny_model, "extends")
    contrasting = paper_id_of(home, tiny_model, "unlike")
    by_pair = {(r.citing, r.cited): r for r in analysis.cited_relationships}
    extension, contrast = by_pair[extending, REV1], by_pair[contrasting, REV1]
    assert (extension.type, contrast.type) == ("extension", "contrast")
    assert extension.context.sentence == EXTENDS and "extend" in extension.why
    assert contrast.context.sentence == UNLIKE and "Unlike" in contrast.why
    # Each is cited by the citing paper's own stored chunk holding its sentence.
    for relation in (extension, contrast):
        assert relation.passage is not None
        assert relation.context.sentence in " ".join(relation.passage.text.split())
        chunks = stored(home, tiny_model, "paper_chunks", relation.citing, PaperChunks)
        assert isinstance(chunks, PaperChunks)
        assert relation.passage.chunk_id in {chunk.chunk_id for chunk in chunks.chunks}

    synthesis = stored(home, tiny_model, "synthesis", COLLECTION, Synthesis)
    assert isinstance(synthesis, Synthesis)
    said = (
        f'extends "{analysis_title(home, tiny_model, REV1)}", in its words: \u201c{EXTENDS}\u201d'
    )
    assert said in synthesis.text
    cited = marker(extending, 2)
    assert f"{EXTENDS}\u201d {cited}" in synthesis.text
    assert any(
        citation.marker == cited and extension.passage.chunk_id in citation.chunk_ids
        for citation in synthesis.citations
        if extension.passage is not None
    )
    assert "sets itself apart from" in synthesis.text


def analysis_title(home: Path, model: Path, paper_id: str) -> str:
    from litpipe.schemas import PaperAbstract

    abstract = stored(home, model, "paper_abstract", paper_id, PaperAbstract)
    assert isinstance(abstract, PaperAbstract)
    return " ".join(abstract.title.split())


def test_the_work_two_of_three_papers_cite_and_the_collection_lacks_tops_often_cited(
    built: tuple[Path, Path], tiny_model: Path
) -> None:
    _, home = built
    graph = stored(home, tiny_model, "citation_graph", COLLECTION, CitationGraph)
    assert isinstance(graph, CitationGraph)
    top = graph.often_cited[0]
    assert top.reference.title == "Deep mutational scanning: a new style of protein science"
    assert top.citing_paper_ids == sorted(
        [paper_id_of(home, tiny_model, "extends"), paper_id_of(home, tiny_model, "unlike")]
    )
    # REV1 is cited by two papers too, but it is in the collection.
    assert all("REV1" not in (entry.reference.title or "") for entry in graph.often_cited)


def test_the_often_cited_bib_beside_the_synthesis_reads_back_and_imports_into_zotero(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    _, home = built
    outputs = home / "outputs" / COLLECTION
    entries, damaged = parse_bibtex((outputs / "often_cited.bib").read_text("utf-8"))
    assert damaged == [] and [latex_to_text(entry.fields["title"]) for entry in entries] == [
        "Deep mutational scanning: a new style of protein science"
    ]
    [item] = imported_into_zotero((outputs / "often_cited.bib").read_text("utf-8"), tmp_path)
    # Zotero stores a date as `2014-00-00 2014`.
    assert (item.title, item.authors, item.year.split("-")[0]) == (
        "Deep mutational scanning: a new style of protein science",
        ["Fowler", "Fields"],
        "2014",
    )
    assert (outputs / "often_cited.ris").read_text("utf-8").count("TY  - ") == 1
    # The graph beside the synthesis: edges by paper id, and the often cited.
    written = json.loads((outputs / "citations.json").read_text("utf-8"))
    assert sorted(edge["cited"] for edge in written["edges"]) == [REV1, REV1]
    assert [entry["reference"]["title"] for entry in written["often_cited"]] == [
        "Deep mutational scanning: a new style of protein science"
    ]


def test_report_json_counts_the_graph_and_names_what_could_not_be_linked(
    built: tuple[Path, Path], tiny_model: Path
) -> None:
    _, home = built
    report = RunReport.model_validate_json(
        (home / "outputs" / COLLECTION / "report.json").read_text()
    )
    assert report.synthesis is not None and report.synthesis.citations is not None
    citations = report.synthesis.citations
    # REV1's 94 entries, and the two papers' two and three.
    assert (citations.references, citations.edges, citations.often_cited) == (99, 2, 1)
    assert citations.cited_relationships == {"extension": 1, "contrast": 1}
    contrasting = paper_id_of(home, tiny_model, "unlike")
    assert citations.untitled_references == {
        contrasting: ["[3] Smith J, Jones K, Lee M, 2019, 12:345-349."]
    }
    [unresolved] = citations.unresolved_markers[contrasting]
    assert unresolved.startswith("[3, 9] (") and "9" in unresolved
    assert list(citations.unresolved_markers) == [contrasting]
    assert citations.ambiguous_references == []


def test_adding_a_paper_rebuilds_only_its_own_references_and_the_graph(
    built: tuple[Path, Path], tiny_model: Path, tmp_path: Path
) -> None:
    folder, built_home = built
    home = Path(shutil.copytree(built_home, tmp_path / "home"))
    before = materializations(home, "paper_references")
    graph_before = materializations(home, "citation_graph")
    assert run(folder, home, tiny_model) == 0
    assert materializations(home, "paper_references") == before
    assert materializations(home, "citation_graph") == graph_before

    # A paper without references builds as before, and makes no edge.
    short_paper(folder, 7)
    assert run(folder, home, tiny_model) == 0
    after = materializations(home, "paper_references")
    added = {paper for paper in after if after[paper] != before.get(paper)}
    assert len(added) == 1 and after[next(iter(added))] == 1
    assert sum(materializations(home, "citation_graph").values()) == (
        sum(graph_before.values()) + 1
    )
    graph = stored(home, tiny_model, "citation_graph", COLLECTION, CitationGraph)
    assert isinstance(graph, CitationGraph)
    new = next(iter(added))
    assert new in graph.papers and not graph.cites(new) and not graph.cited_by(new)
    references = stored(home, tiny_model, "paper_references", new, PaperReferences)
    assert isinstance(references, PaperReferences) and references.records == []


def materializations(home: Path, asset: str) -> dict[str, int]:
    records = (
        home_instance(home)
        .fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=1000)
        .records
    )
    counts: dict[str, int] = {}
    for record in records:
        partition = record.partition_key or ""
        counts[partition] = counts.get(partition, 0) + 1
    return counts


def test_a_reference_naming_two_papers_of_the_collection_is_left_unmatched_and_listed() -> None:
    rev1 = paper_references(bundled_document(REV1))
    twin = rev1.model_copy(
        update={"paper": rev1.paper.model_copy(update={"paper_id": "twin"})}, deep=True
    )
    citing = PaperReferences(
        paper=rev1.paper.model_copy(update={"paper_id": "citing", "doi": "10.5555/citing"}),
        records=[rev1.records[0].model_copy(update={"raw": REV1_REFERENCE, "doi": rev1.paper.doi})],
    )
    graph = citation_graph("c", {REV1: rev1, "twin": twin, "citing": citing})
    assert not [edge for edge in graph.edges if edge.citing == "citing"]
    [ambiguous] = [item for item in graph.ambiguous if item.paper_id == "citing"]
    assert sorted(ambiguous.candidates) == sorted([REV1, "twin"])
    assert ambiguous.raw == REV1_REFERENCE


def test_a_preprint_pdf_is_dated_by_its_doi_so_a_reference_without_one_names_it_by_title() -> None:
    rev1 = paper_references(bundled_document(REV1))
    # The PDF's pages give no year; its bioRxiv DOI is dated 2024.02.13.
    assert bundled_document(REV1).year is None and rev1.paper.year == 2024
    undated = REV1_REFERENCE.split(" doi:")[0]
    citing = PaperReferences(
        paper=CollectionPaper(paper_id="citing", title="Pol zeta in fly larvae", year=2025),
        records=parse_references([f"[1] {undated}"]),
    )
    assert citing.records[0].doi is None and citing.records[0].year == 2024
    [edge] = citation_graph("c", {REV1: rev1, "citing": citing}).edges
    assert (edge.citing, edge.cited, edge.rule) == ("citing", REV1, "title_year")
