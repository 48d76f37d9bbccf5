"""A collection's citations in its output files: the table of its papers citing one another
beside the relationship map, the arrows of the relationship graph, each paper's "cites" and
"cited by" lines, "Often cited, not in your library" with its `.bib` and RIS files, and
`citations.json`.

The graph is built by `workflows.citation_graph` from reference lists made by hand: FearNet
extends the REV1 paper in a sentence of its introduction, the REV1 paper names FearNet in its
reference list only, and a third paper cites neither; FearNet and the REV1 paper both cite a
work none of them is (its title holding markup), FearNet and the third paper an arXiv preprint.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from litpipe.ingest.bibtex import latex_to_text, parse_bibtex
from litpipe.report.citations import OFTEN_CITED_BIB, OFTEN_CITED_RIS, REFERENCE_LIST_ONLY
from litpipe.report.collection import COLLECTION_PAGE, collection_pages, write_collection_outputs
from litpipe.report.graphs import GRAPH_FILE, analysis_figures, relationship_graph_svg
from litpipe.report.page import PAPERS_PER_PAGE, chunk_anchor, paper_anchor
from litpipe.schemas import (
    Chunk,
    CitationContext,
    CitationEdge,
    CitationGraph,
    CitationIntent,
    CollectionPaper,
    PaperAnswers,
    PaperChunks,
    PaperReferences,
    ReferenceRecord,
    Synthesis,
)
from litpipe.workflows.citation_graph import citation_graph, cited_relationships
from litpipe_tests.test_report_collection import (
    FEARNET,
    REPAIR,
    TITLES,
    Collection,
    Element,
    PageParser,
    demo_collection,
    parsed,
    row_cells,
    squeezed,
)

THIRD = "third.paper"
PAPER_TITLES = {**TITLES, THIRD: "A third paper that cites neither"}
SENTENCE = "We extend the translesion model of REV1 [3] to memories."
ATTENTION = "<i>Attention</i> & memory in neural networks"
PREPRINT = "A preprint everyone reads about memory"


def record(raw: str, **fields: object) -> ReferenceRecord:
    return ReferenceRecord.model_validate({"raw": raw, **fields})


ATTENTION_RECORD = record(
    f"Vaswani, A. {ATTENTION}. NeurIPS (2017). doi:10.5555/attn(1)",
    authors=["Vaswani", "Shazeer"],
    title=ATTENTION,
    year=2017,
    venue="NeurIPS",
    doi="10.5555/attn(1)",
)
PREPRINT_RECORD = record(
    f"Doe, J. {PREPRINT}. arXiv:2101.00001 (2021).",
    authors=["Doe"],
    title=PREPRINT,
    year=2021,
    arxiv_id="2101.00001",
)


def context(
    index: int, sentence: str, marker: str, start: int, page: int, label: str
) -> CitationContext:
    return CitationContext(
        reference_index=index,
        marker=marker,
        marker_start=start + sentence.index(marker),
        sentence=sentence,
        char_start=start,
        char_end=start + len(sentence),
        page=page,
        section="Introduction",
        intent=CitationIntent.model_validate(
            {"label": label, "cue": "We extend" if label == "extends" else None, "why": label}
        ),
    )


def references() -> dict[str, PaperReferences]:
    fearnet = PaperReferences(
        paper=CollectionPaper(paper_id=FEARNET, title=TITLES[FEARNET], year=2018),
        records=[
            ATTENTION_RECORD,
            PREPRINT_RECORD,
            record("Rev1 et al. (2024)", authors=["Rev1"], year=2024, doi="10.1093/nar/gkae252"),
        ],
        contexts=[
            context(2, SENTENCE, "[3]", 1000, 2, "extends"),
            context(0, "Attention helps memory [1].", "[1]", 1200, 2, "background"),
            context(1, "Preprints say so too [2].", "[2]", 1300, 3, "background"),
        ],
    )
    repair = PaperReferences(
        paper=CollectionPaper(
            paper_id=REPAIR, title=TITLES[REPAIR], year=2024, doi="10.1093/nar/gkae252"
        ),
        records=[
            record(f"FearNet (2018). {TITLES[FEARNET]}.", title=TITLES[FEARNET], year=2018),
            ATTENTION_RECORD,
        ],
        contexts=[context(1, "Attention, again, for repair [2].", "[2]", 500, 6, "background")],
    )
    third = PaperReferences(
        paper=CollectionPaper(paper_id=THIRD, title=PAPER_TITLES[THIRD], year=2022),
        records=[PREPRINT_RECORD],
    )
    return {REPAIR: repair, FEARNET: fearnet, THIRD: third}


# The FearNet chunk holding its citing sentence: what `[SJ1Xmf-Rb:2]` opens.
FEARNET_INTRODUCTION = Chunk(
    chunk_id=f"{FEARNET}:5",
    paper_id=FEARNET,
    index=5,
    section="Introduction",
    page_start=2,
    page_end=2,
    char_start=950,
    char_end=1150,
    text=f"Memories fade. {SENTENCE} They last.",
    n_tokens=20,
    content_sha256="0" * 64,
)


def graph() -> CitationGraph:
    return citation_graph("demo", references())


def cited_collection(citations: CitationGraph | None = None) -> Collection:
    """The demo collection with a third paper answered, its analysis holding the cited
    relationships, and the citation graph."""
    collection = demo_collection()
    found = citations if citations is not None else graph()
    chunks = PaperChunks(
        paper_id=FEARNET,
        tokenizer="test",
        max_tokens=256,
        overlap_tokens=0,
        chunks=[FEARNET_INTRODUCTION],
    )
    analysis = collection.analysis.model_copy(
        update={
            "papers": [REPAIR, FEARNET, THIRD],
            "cited_relationships": cited_relationships(found, {FEARNET: chunks}),
        }
    )
    answers = {
        **collection.answers,
        THIRD: PaperAnswers(paper_id=THIRD, mode="single", engine="offline", answers=[]),
    }
    return replace(collection, analysis=analysis, answers=answers, titles=dict(PAPER_TITLES))


def page_of(collection: Collection, citations: CitationGraph | None) -> str:
    return collection_pages(replace(collection.content(), citations=citations))[COLLECTION_PAGE]


@pytest.fixture
def collection() -> Collection:
    return cited_collection()


def test_the_graph_is_what_the_page_shows() -> None:
    """The hand-made lists make the graph the other tests read."""
    built = graph()

    assert [(e.citing, e.cited, len(e.contexts)) for e in built.edges] == [
        (REPAIR, FEARNET, 0),
        (FEARNET, REPAIR, 1),
    ]
    assert [(w.reference.title, w.citing_paper_ids) for w in built.often_cited] == [
        (PREPRINT, sorted([FEARNET, THIRD])),
        (ATTENTION, sorted([FEARNET, REPAIR])),
    ]


def test_the_citations_table_shows_the_citing_sentence_and_its_citation_opens_the_passage(
    collection: Collection,
) -> None:
    page = parsed(page_of(collection, graph()))
    rows = [row for row in page.find("tr") if "citation-table" in row.inside][1:]

    assert len(rows) == 2
    extension, listed_only = ([squeezed(c.text) for c in row_cells(page, row)] for row in rows)
    assert extension[:2] == [f"{TITLES[FEARNET]} → {TITLES[REPAIR]}", "extension"]
    assert f"“{SENTENCE}” [{FEARNET}:2]" in extension[2]
    assert extension[3] == "Introduction" and extension[4].startswith("extends")
    assert listed_only[:3] == [f"{TITLES[REPAIR]} → {TITLES[FEARNET]}", REFERENCE_LIST_ONLY, ""]
    # The citation is a link to the passage holding the sentence, shown in the Passages.
    (link,) = [a for a in page.find("a", class_="cite") if "citations" in a.inside]
    assert link.text == f"{FEARNET}:2"
    assert link.attrs["href"] == f"#{chunk_anchor(FEARNET_INTRODUCTION.chunk_id)}"
    (passage,) = page.find("div", id=chunk_anchor(FEARNET_INTRODUCTION.chunk_id))
    assert SENTENCE in squeezed(passage.text) and "passages" in passage.inside
    # The citing and cited papers' titles lead to their articles.
    ends = [a.attrs["href"] for a in page.find("a") if "citation-table" in a.inside][:2]
    assert ends == [f"#{paper_anchor(FEARNET)}", f"#{paper_anchor(REPAIR)}"]
    # The table follows the relationship map.
    sections = [s.attrs["id"] for s in page.find("section")]
    assert sections.index("citations") == sections.index("relationships") + 1


def test_every_link_of_the_page_leads_to_an_element_of_the_page_or_a_file_beside_it(
    collection: Collection, tmp_path: Path
) -> None:
    paths = write_collection_outputs(tmp_path, replace(collection.content(), citations=graph()))
    page = parsed(paths[COLLECTION_PAGE].read_text(encoding="utf-8"))
    ids = [element.attrs["id"] for element in page.elements if "id" in element.attrs]
    hrefs = [a.attrs["href"] for a in page.find("a")]

    assert len(ids) == len(set(ids))
    inside = [href[1:] for href in hrefs if href.startswith("#")]
    assert inside and set(inside) <= set(ids)
    beside = {href for href in hrefs if not href.startswith(("#", "https://"))}
    assert beside == {OFTEN_CITED_BIB, OFTEN_CITED_RIS} and beside <= set(paths)


def test_each_paper_names_the_papers_it_cites_and_those_citing_it_and_only_those(
    collection: Collection,
) -> None:
    page = parsed(page_of(collection, graph()))
    articles = {a.attrs["id"]: a for a in page.find("article")}

    def lines(paper_id: str) -> list[str]:
        article = articles[paper_anchor(paper_id)]
        return [
            squeezed(p.text)
            for p in page.find("p", class_="meta")
            if article.attrs["id"] in p.inside and "in this collection" in p.text
        ]

    assert lines(FEARNET) == [
        f"Cites, in this collection: {TITLES[REPAIR]}",
        f"Cited by, in this collection: {TITLES[REPAIR]}",
    ]
    assert lines(REPAIR) == [
        f"Cites, in this collection: {TITLES[FEARNET]}",
        f"Cited by, in this collection: {TITLES[FEARNET]}",
    ]
    assert lines(THIRD) == []
    # Each title is a link to the other paper's article.
    fearnet_links = [a for a in page.find("a") if paper_anchor(FEARNET) in a.inside]
    assert {a.attrs["href"] for a in fearnet_links if not a.attrs["href"].startswith("#chunk")} == {
        f"#{paper_anchor(REPAIR)}"
    }


def test_a_paper_citing_only_one_way_has_only_that_line(collection: Collection) -> None:
    one_way = graph()
    one_way = one_way.model_copy(
        update={"edges": [e for e in one_way.edges if e.citing == FEARNET]}
    )
    page = parsed(page_of(cited_collection(one_way), one_way))
    text = {a.attrs["id"]: squeezed(a.text) for a in page.find("article")}

    assert f"Cites, in this collection: {TITLES[REPAIR]}" in text[paper_anchor(FEARNET)]
    assert "Cited by, in this collection" not in text[paper_anchor(FEARNET)]
    assert f"Cited by, in this collection: {TITLES[FEARNET]}" in text[paper_anchor(REPAIR)]
    assert "Cites, in this collection" not in text[paper_anchor(REPAIR)]


def test_often_cited_works_are_ranked_escaped_with_their_citing_papers_sentences_and_files(
    collection: Collection,
) -> None:
    source = page_of(collection, graph())
    page = parsed(source)
    (section,) = page.find("section", id="often-cited")
    items = [li for li in page.find("li", class_="often-cited")]

    assert not page.find("i") and "<i>Attention" not in source

    def described(item: Element) -> list[str]:
        """The work's title and the line of its authors, year, venue and identifier."""
        within = page.elements[page.elements.index(item) + 1 :]
        title = next(e for e in within if e.tag == "strong")
        details = next(e for e in within if e.tag == "span" and "meta" in e.attrs["class"])
        return [squeezed(title.text), squeezed(details.text)]

    assert [described(item) for item in items] == [
        [PREPRINT, "Doe · 2021 · arXiv:2101.00001"],
        [ATTENTION, "Vaswani, Shazeer · 2017 · NeurIPS · doi:10.5555/attn(1)"],
    ]
    attention = squeezed(items[1].text)
    assert (
        f"Cited by 2 papers of this collection: {TITLES[FEARNET]}; {TITLES[REPAIR]}" in (attention)
        or f"Cited by 2 papers of this collection: {TITLES[REPAIR]}; {TITLES[FEARNET]}" in attention
    )
    assert f"“Attention helps memory [1].” ({TITLES[FEARNET]}, p. 2)" in attention
    assert f"“Attention, again, for repair [2].” ({TITLES[REPAIR]}, p. 6)" in attention
    hrefs = [a.attrs["href"] for a in page.find("a") if "often-cited" in a.inside]
    assert "https://doi.org/10.5555/attn%281%29" in hrefs
    assert "https://arxiv.org/abs/2101.00001" in hrefs
    assert {OFTEN_CITED_BIB, OFTEN_CITED_RIS} <= set(hrefs)
    assert "2 works" in squeezed(section.text)


def test_the_bib_reads_back_to_the_same_titles_and_the_ris_holds_one_reference_per_work(
    collection: Collection, tmp_path: Path
) -> None:
    citations = graph()
    paths = write_collection_outputs(tmp_path, replace(collection.content(), citations=citations))

    entries, damaged = parse_bibtex(paths[OFTEN_CITED_BIB].read_text(encoding="utf-8"))
    assert damaged == []
    assert [latex_to_text(entry.fields["title"]) for entry in entries] == [
        work.reference.title for work in citations.often_cited
    ]
    ris = paths[OFTEN_CITED_RIS].read_bytes().decode("utf-8")
    assert ris.count("TY  - ") == len(citations.often_cited) == 2
    assert f"TI  - {ATTENTION}\r\n" in ris
    written = json.loads(paths["citations.json"].read_text(encoding="utf-8"))
    assert written["collection"] == "demo"
    assert written["edges"][1] == {
        "citing": FEARNET,
        "cited": REPAIR,
        "rule": "doi",
        "contexts": [
            {
                "sentence": SENTENCE,
                "page": 2,
                "section": "Introduction",
                "marker": "[3]",
                "intent": "extends",
            }
        ],
    }
    assert [work["reference"]["title"] for work in written["often_cited"]] == [PREPRINT, ATTENTION]
    assert [counts["paper_id"] for counts in written["counts"]] == [REPAIR, FEARNET, THIRD]


def test_with_no_work_often_cited_no_bib_or_ris_is_written_but_the_json_is(
    collection: Collection, tmp_path: Path
) -> None:
    lonely = graph().model_copy(update={"often_cited": []})
    paths = write_collection_outputs(tmp_path, replace(collection.content(), citations=lonely))

    assert "citations.json" in paths
    assert not {OFTEN_CITED_BIB, OFTEN_CITED_RIS} & set(paths)
    assert not (tmp_path / OFTEN_CITED_BIB).exists()
    section = parsed(paths[COLLECTION_PAGE].read_text(encoding="utf-8")).find(
        "section", id="often-cited"
    )[0]
    assert "No work is cited by two or more papers" in section.text
    assert OFTEN_CITED_BIB not in paths[COLLECTION_PAGE].read_text(encoding="utf-8")


def test_without_a_citation_graph_the_files_say_nothing_of_citations(
    collection: Collection, tmp_path: Path
) -> None:
    without = write_collection_outputs(tmp_path / "without", collection.content())
    with_graph = write_collection_outputs(
        tmp_path / "with", replace(collection.content(), citations=graph())
    )

    assert sorted(without) == sorted(
        [
            "plain.md",
            "relationship_types.svg",
            "relationships.svg",
            "synthesis.html",
            "synthesis.md",
        ]
    )
    assert sorted(set(with_graph) - set(without)) == sorted(
        ["citations.json", OFTEN_CITED_BIB, OFTEN_CITED_RIS]
    )
    page = without[COLLECTION_PAGE].read_text(encoding="utf-8")
    markdown = without["synthesis.md"].read_text(encoding="utf-8")
    for text in (page, markdown):
        assert "Citations within the collection" not in text and "Often cited" not in text
    assert 'id="paper-' not in page and "in this collection:" not in page
    assert without["plain.md"].read_bytes() == with_graph["plain.md"].read_bytes()


def test_the_graph_draws_each_citation_as_an_arrow_into_the_cited_paper(
    collection: Collection,
) -> None:
    svg = analysis_figures(collection.analysis, PAPER_TITLES)[GRAPH_FILE]
    page = PageParser()
    page.feed(svg)

    (citation,) = page.find("g", class_="citation")
    assert (citation.attrs["data-citing"], citation.attrs["data-cited"]) == (FEARNET, REPAIR)
    assert citation.attrs["data-types"] == "extension"
    assert f"{TITLES[FEARNET]} cites {TITLES[REPAIR]}: extension" in citation.text
    arrows = [p for p in page.find("polygon", class_="arrow")]
    assert len(arrows) == 1
    centres = {
        paper: (float(circle.attrs["cx"]), float(circle.attrs["cy"]))
        for paper in (FEARNET, REPAIR)
        for circle in [_circle_of(page, paper)]
    }
    tip = tuple(float(v) for v in arrows[0].attrs["points"].split()[0].split(","))
    # The tip touches the cited paper's node, far from the citing one's.
    assert math.dist(tip, centres[REPAIR]) == pytest.approx(9.0, abs=0.2)
    assert math.dist(tip, centres[FEARNET]) > 50
    legend = page.find("g", class_="cites")
    assert legend and "citing → cited" in legend[0].text
    assert "1 citation within the collection" in page.find("svg")[0].attrs["aria-label"]


def _circle_of(page: PageParser, paper_id: str) -> Element:
    node = next(g for g in page.find("g", class_="node") if g.attrs["data-paper"] == paper_id)
    start = page.elements.index(node)
    return next(e for e in page.elements[start:] if e.tag == "circle")


def test_arrows_are_drawn_over_the_graph_and_move_no_paper(collection: Collection) -> None:
    """The same papers and relationships without citations give the graph the page showed
    before citations were read: the nodes and edges are where they were."""
    analysis = collection.analysis
    drawn = [
        relationship_graph_svg(
            analysis.papers, PAPER_TITLES, analysis.insights, analysis.relationships, cited
        )
        for cited in ([], analysis.cited_relationships)
    ]
    without, with_arrows = drawn

    def placed(svg: str) -> list[tuple[float, float]]:
        """The nodes' centres, from the first one's (the canvas widens for the legend)."""
        centres = [
            (float(x), float(y)) for x, y in re.findall(r'<circle cx="(.+?)" cy="(.+?)"', svg)
        ]
        return [(round(x - centres[0][0], 1), round(y - centres[0][1], 1)) for x, y in centres]

    assert len(placed(without)) == 3 and placed(without) == placed(with_arrows)
    assert re.findall(r'data-paper="(.+?)"', without) == re.findall(
        r'data-paper="(.+?)"', with_arrows
    )
    assert "citation" not in without and 'class="citation"' in with_arrows


def test_the_markdown_lists_the_citations_and_the_often_cited_works(
    collection: Collection, tmp_path: Path
) -> None:
    paths = write_collection_outputs(tmp_path, replace(collection.content(), citations=graph()))
    markdown = paths["synthesis.md"].read_text(encoding="utf-8")
    citations = markdown.split("## Citations within the collection\n", 1)[1].split("\n## ")[0]
    often = markdown.split("## Often cited, not in your library\n", 1)[1].split("\n## ")[0]

    assert (
        f"- *{TITLES[FEARNET]}* → *{TITLES[REPAIR].replace('<', '&lt;')}* (**extension**): "
        f"“{SENTENCE}” (Introduction, [{FEARNET}:2])." in citations
    )
    assert f"→ *{TITLES[FEARNET]}*: {REFERENCE_LIST_ONLY}." in citations
    assert "1. Doe (2021). **A preprint everyone reads about memory**." in often
    assert "2. Vaswani and Shazeer (2017). **&lt;i>Attention&lt;/i> & memory" in often
    assert "https://doi.org/10.5555/attn(1)" in often
    assert f"   - “Attention helps memory [1].” (*{TITLES[FEARNET]}*, p. 2)" in often
    assert f"]({OFTEN_CITED_BIB})" in often and f"]({OFTEN_CITED_RIS})" in often
    # The citing sentence's page is among FearNet's references.
    references = markdown.split("## References\n", 1)[1]
    fearnet = next(line for line in references.splitlines() if f"`{FEARNET}`" in line)
    assert f"p. 2 `[{FEARNET}:2]`" in fearnet


def test_past_a_hundred_papers_a_title_links_to_the_page_of_papers_holding_its_article(
    collection: Collection,
) -> None:
    many = [f"p{index:03d}" for index in range(PAPERS_PER_PAGE + 20)]
    titles = {paper: f"Paper {paper}" for paper in many}
    first, last = many[0], many[-1]
    citations = CitationGraph(
        collection="demo",
        papers=many,
        edges=[CitationEdge(citing=first, cited=last, reference_index=0, rule="doi")],
    )
    content = replace(
        collection.content(),
        synthesis=collection.synthesis.model_copy(update={"papers": many}),
        analysis=collection.analysis.model_copy(update={"papers": many, "cited_relationships": []}),
        answers={
            p: PaperAnswers(paper_id=p, mode="single", engine="offline", answers=[]) for p in many
        },
        titles=titles,
        citations=citations,
    )
    pages = collection_pages(content)
    main = parsed(pages[COLLECTION_PAGE])
    ends = [a.attrs["href"] for a in main.find("a") if "citation-table" in a.inside]

    assert ends == [
        f"synthesis-papers-001.html#{paper_anchor(first)}",
        f"synthesis-papers-002.html#{paper_anchor(last)}",
    ]
    for href in ends:
        name, anchor = href.split("#")
        assert anchor in {e.attrs.get("id") for e in parsed(pages[name]).elements}
    # On the page of the cited paper, its line links back to the citing one's page.
    second = parsed(pages["synthesis-papers-002.html"])
    back = [a.attrs["href"] for a in second.find("a") if paper_anchor(last) in a.inside]
    assert back == [f"synthesis-papers-001.html#{paper_anchor(first)}"]


def test_synthesis_markers_of_a_citing_sentence_link_to_its_passage(
    collection: Collection,
) -> None:
    """A synthesis citing a relationship by its citing sentence's `[citing:page]` reaches the
    passage, which only the analysis' cited relationships hold."""
    marker = f"[{FEARNET}:2]"
    text = f"FearNet builds on REV1 {marker}."
    citation = {
        "marker": marker,
        "paper_id": FEARNET,
        "page": 2,
        "chunk_ids": [FEARNET_INTRODUCTION.chunk_id],
    }
    synthesis = Synthesis.model_validate(
        {
            **collection.synthesis.model_dump(),
            "text": text,
            "citations": [citation],
        }
    )
    page = parsed(page_of(replace(collection, synthesis=synthesis), graph()))

    (link,) = [a for a in page.find("a", class_="cite") if "synthesis" in a.inside]
    assert link.attrs["href"] == f"#{chunk_anchor(FEARNET_INTRODUCTION.chunk_id)}"


def test_past_a_hundred_citations_their_pages_link_to_the_articles_on_the_collection_s(
    collection: Collection,
) -> None:
    papers = [f"p{index:02d}" for index in range(12)]
    every_pair = [
        CitationEdge(citing=citing, cited=cited, reference_index=0, rule="doi")
        for citing in papers
        for cited in papers
        if citing != cited
    ]
    content = replace(
        collection.content(),
        synthesis=collection.synthesis.model_copy(update={"papers": papers}),
        analysis=collection.analysis.model_copy(
            update={"papers": papers, "cited_relationships": []}
        ),
        answers={
            p: PaperAnswers(paper_id=p, mode="single", engine="offline", answers=[]) for p in papers
        },
        titles={paper: f"Paper {paper}" for paper in papers},
        citations=CitationGraph(collection="demo", papers=papers, edges=every_pair),
    )
    pages = collection_pages(content)
    main = parsed(pages[COLLECTION_PAGE])
    listed = [a.attrs["href"] for a in main.find("a") if "citations" in a.inside]

    assert listed == ["synthesis-citations-001.html", "synthesis-citations-002.html"]
    assert not main.find("table", class_="citation-table")
    ids = {element.attrs.get("id") for element in main.elements}
    rows = 0
    for name in listed:
        page = parsed(pages[name])
        rows += len(page.find("tr")) - 1
        for link in (a for a in page.find("a") if "citation-table" in a.inside):
            file, anchor = link.attrs["href"].split("#")
            assert file == COLLECTION_PAGE and anchor in ids
    assert rows == len(every_pair) == 132
