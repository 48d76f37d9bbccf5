"""The collection's output files: the Markdown syntheses with their references, and the HTML page
whose citation links all lead to the cited passage."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.asker import Asker
from litpipe.agents.plain_summary import write_plain_summary
from litpipe.llm.prompts import PromptLibrary
from litpipe.report.collection import (
    COLLECTION_PAGE,
    CollectionContent,
    collection_pages,
    synthesis_markdown,
    write_collection_outputs,
)
from litpipe.report.graphs import FIGURES, analysis_figures
from litpipe.report.page import PAPERS_PER_PAGE, chunk_anchor
from litpipe.schemas import (
    Answer,
    Citation,
    CrossPaperQuestions,
    FollowUp,
    Insight,
    PaperAnswers,
    Question,
    QuestionStyle,
    Relationship,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
)
from litpipe.settings import Settings
from litpipe.text import markdown_blocks
from litpipe.workflows.synthesis import write_synthesis
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.test_synthesis import small_collection

REPAIR = "10.1093_nar_gkae252"
FEARNET = "SJ1Xmf-Rb"
TITLES = {
    REPAIR: "Translesion synthesis <script>alert('x')</script> & REV1",
    FEARNET: "FearNet: Brain-Inspired Model for Incremental Learning",
}
VOID_TAGS = {"br", "meta", "hr", "img", "link", "input"}


REPAIR_4A = retrieved_chunk(
    REPAIR, 7, 4, "REV1 inserts cytosine opposite\nabasic sites during replication."
)
REPAIR_4B = retrieved_chunk(
    REPAIR, 8, 3, "Cells lacking REV1 are sensitive to alkylation.", page_end=4
)
FEARNET_1 = retrieved_chunk(FEARNET, 0, 1, "FearNet uses a brain-inspired dual-memory system.")
# Cited only by an answer, and given only as that answer's evidence.
FEARNET_2 = retrieved_chunk(FEARNET, 1, 1, "FearNet does not store previous examples.")


def cite(chunks: list[RetrievedChunk], page: int) -> Citation:
    first = chunks[0]
    return Citation(
        marker=f"[{first.paper_id}:{page}]",
        paper_id=first.paper_id,
        page=page,
        chunk_ids=[each.chunk_id for each in chunks],
    )


def answer(
    question_id: str,
    paper_id: str,
    question: str,
    text: str,
    chunks: list[RetrievedChunk],
    citations: list[Citation],
    style: QuestionStyle,
) -> Answer:
    return Answer(
        question=Question(question_id=question_id, paper_id=paper_id, style=style, text=question),
        text=text,
        citations=citations,
        evidence=chunks,
        engine="offline",
    )


@dataclass
class Collection:
    synthesis: Synthesis
    plain: Synthesis
    analysis: RelationshipAnalysis
    answers: dict[str, PaperAnswers]
    comparative: CrossPaperQuestions
    passages: dict[str, RetrievedChunk]
    titles: dict[str, str] = field(default_factory=lambda: dict(TITLES))

    def content(self) -> CollectionContent:
        return CollectionContent(
            self.synthesis,
            self.plain,
            self.analysis,
            self.answers,
            self.comparative,
            self.titles,
            self.passages,
        )

    def html(self) -> str:
        return collection_pages(self.content())[COLLECTION_PAGE]


def demo_collection() -> Collection:
    """Two papers, every text offline, titles and texts holding markup to escape."""
    repair_4 = cite([REPAIR_4A, REPAIR_4B], 4)
    fearnet_1 = cite([FEARNET_1], 1)
    synthesis = Synthesis(
        collection="demo",
        audience="expert",
        engine="offline",
        pattern="stuff",
        title="Memory & repair <b>bold</b>",
        text=(
            "## The spine\n"
            "REV1 inserts cytosine opposite abasic sites [10.1093_nar_gkae252:4], while FearNet\n"
            "consolidates memories [SJ1Xmf-Rb:1; 10.1093_nar_gkae252:4].\n\n"
            "- A claim citing a page never given [SJ1Xmf-Rb:9].\n"
            "- A bracket that is no marker [see above]."
        ),
        citations=[repair_4, fearnet_1],
        papers=[REPAIR, FEARNET],
    )
    plain = synthesis.model_copy(
        update={
            "audience": "plain",
            "title": "In plain words",
            "text": "One protein fills gaps in DNA [10.1093_nar_gkae252:4].",
            "citations": [repair_4],
        }
    )
    fearnet_answer = answer(
        f"{FEARNET}:q0",
        FEARNET,
        "How does FearNet avoid storing examples?",
        "It does not store previous examples [SJ1Xmf-Rb:1].",
        [FEARNET_2],
        [cite([FEARNET_2], 1)],
        "inner_workings",
    )
    repair_answer = answer(
        f"{REPAIR}:q0",
        REPAIR,
        "What does REV1 insert?",
        "Cytosine opposite abasic sites [10.1093_nar_gkae252:4].",
        [REPAIR_4A],
        [cite([REPAIR_4A], 4)],
        "broad",
    )
    follow_up = answer(
        f"{FEARNET}:f0",
        FEARNET,
        "Which memory system does FearNet use?",
        "A dual-memory system [SJ1Xmf-Rb:1].",
        [FEARNET_1],
        [fearnet_1],
        "follow_up",
    )
    insights = [
        Insight(
            insight_id="i0",
            paper_id=REPAIR,
            papers=[REPAIR],
            question_ids=[f"{REPAIR}:q0"],
            text="REV1 inserts cytosine [10.1093_nar_gkae252:4].",
            citations=[cite([REPAIR_4A], 4)],
        ),
        Insight(
            insight_id="i1",
            paper_id=FEARNET,
            papers=[FEARNET],
            question_ids=[f"{FEARNET}:q0"],
            text="FearNet needs no stored examples.",
            citations=[],
        ),
    ]
    analysis = RelationshipAnalysis(
        collection="demo",
        engine="offline",
        papers=[REPAIR, FEARNET],
        theme="Keeping information intact",
        narrative="Both papers keep information <intact>.",
        insights=insights,
        relationships=[
            Relationship(source="i0", target="i1", type="parallel", explanation="Both preserve."),
            Relationship(
                source="i1", target="i0", type="complementary", explanation="One & the other."
            ),
        ],
        type_distribution={"extension": 0, "parallel": 1, "complementary": 1},
        follow_ups=[FollowUp(paper_id=FEARNET, reason="too few insights", answers=[follow_up])],
    )
    comparative = CrossPaperQuestions(
        collection="demo",
        engine="offline",
        answers=[
            Answer(
                question=Question(
                    question_id="demo:x0",
                    paper_id="",
                    style="comparative",
                    text="What distinguishes FearNet from REV1?",
                    papers=[FEARNET, REPAIR],
                ),
                text="FearNet is a model [SJ1Xmf-Rb:1], REV1 a protein [10.1093_nar_gkae252:4].",
                citations=[fearnet_1, repair_4],
                evidence=[FEARNET_1, REPAIR_4A, REPAIR_4B],
                engine="offline",
            )
        ],
    )
    return Collection(
        synthesis=synthesis,
        plain=plain,
        analysis=analysis,
        answers={
            REPAIR: PaperAnswers(
                paper_id=REPAIR,
                mode="single",
                engine="offline",
                answers=[repair_answer],
            ),
            FEARNET: PaperAnswers(
                paper_id=FEARNET,
                mode="single",
                engine="offline",
                answers=[fearnet_answer],
            ),
        },
        comparative=comparative,
        passages={each.chunk_id: each for each in [REPAIR_4A, REPAIR_4B, FEARNET_1]},
    )


@pytest.fixture
def collection() -> Collection:
    return demo_collection()


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    inside: list[str] = field(default_factory=list)
    """The ids and classes of the elements it lies in, innermost last."""


class PageParser(HTMLParser):
    """Every element of a page with its attributes and its text (its descendants' included)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        context = [mark for element in self.open for mark in element_marks(element) if mark]
        element = Element(tag, {name: value or "" for name, value in attrs}, inside=context)
        self.elements.append(element)
        if tag not in VOID_TAGS:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            if self.open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.text += data

    def find(self, tag: str | None = None, **attrs: str) -> list[Element]:
        return [
            element
            for element in self.elements
            if (tag is None or element.tag == tag)
            and all(
                value in element.attrs.get(name.rstrip("_"), "").split()
                if name.rstrip("_") == "class"
                else element.attrs.get(name) == value
                for name, value in attrs.items()
            )
        ]


def row_cells(page: PageParser, row: Element) -> list[Element]:
    """The cells of a table row: the elements after it up to the next row."""
    start = next(i for i, element in enumerate(page.elements) if element is row) + 1
    following = page.elements[start:]
    end = next((i for i, element in enumerate(following) if element.tag == "tr"), len(following))
    return [element for element in following[:end] if element.tag == "td"]


def element_marks(element: Element) -> list[str]:
    return [element.attrs.get("id", ""), *element.attrs.get("class", "").split()]


def parsed(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    parser.close()
    return parser


def squeezed(text: str) -> str:
    return " ".join(text.split())


def test_every_link_of_the_page_leads_to_an_element_of_the_page(collection: Collection) -> None:
    page = parsed(collection.html())
    ids = [element.attrs["id"] for element in page.elements if "id" in element.attrs]
    hrefs = [element.attrs["href"] for element in page.find("a") if "href" in element.attrs]

    assert len(ids) == len(set(ids))
    assert hrefs and all(href.startswith("#") for href in hrefs)
    assert {href[1:] for href in hrefs} <= set(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", each) for each in ids)


def test_each_citation_of_the_synthesis_links_to_its_first_passage_and_lists_the_others(
    collection: Collection,
) -> None:
    page = parsed(collection.html())
    synthesis_links = [link for link in page.find("a") if "synthesis" in link.inside]

    for citation in collection.synthesis.citations:
        label = citation.marker.strip("[]")
        links = [link for link in synthesis_links if link.text == label]
        assert links, f"{citation.marker} is not a link"
        assert all(
            link.attrs["href"] == f"#{chunk_anchor(citation.chunk_ids[0])}" for link in links
        )
    # The page-4 marker stands for two chunks: the second one is a link of its own.
    extra = page.find("a", class_="more")
    assert f"#{chunk_anchor(REPAIR_4B.chunk_id)}" in {link.attrs["href"] for link in extra}


def test_a_marker_without_a_passage_and_a_plain_bracket_stay_text(collection: Collection) -> None:
    page = parsed(collection.html())

    unresolved = page.find("span", class_="unresolved")
    assert [span.text for span in unresolved] == ["SJ1Xmf-Rb:9"]
    assert not [link for link in page.find("a") if link.text == "SJ1Xmf-Rb:9"]
    synthesis = page.find("section", id="synthesis")[0]
    assert "A bracket that is no marker [see above]." in squeezed(synthesis.text)


def test_the_passages_show_each_cited_chunk_with_its_paper_section_and_pages(
    collection: Collection,
) -> None:
    page = parsed(collection.html())
    passages = page.find("div", class_="passage")

    # Cited by the syntheses, the comparative answer and (FEARNET_2) only by its own answer.
    assert {passage.attrs["id"] for passage in passages} == {
        chunk_anchor(each.chunk_id) for each in [REPAIR_4A, REPAIR_4B, FEARNET_1, FEARNET_2]
    }
    # In the order a reader meets them: the synthesis' first.
    assert [passage.attrs["id"] for passage in passages[:2]] == [
        chunk_anchor(REPAIR_4A.chunk_id),
        chunk_anchor(REPAIR_4B.chunk_id),
    ]
    shown = {passage.attrs["id"]: squeezed(passage.text) for passage in passages}
    first = shown[chunk_anchor(REPAIR_4A.chunk_id)]
    assert squeezed(REPAIR_4A.text) in first
    assert TITLES[REPAIR] in first and "Results" in first and "p. 4" in first
    assert "pp. 3-4" in shown[chunk_anchor(REPAIR_4B.chunk_id)]
    assert ".passage:target" in collection.html()


def test_titles_and_texts_are_escaped_and_the_page_has_no_script(collection: Collection) -> None:
    source = collection.html()
    page = parsed(source)

    assert not page.find("script") and not page.find("b")
    assert "<script>alert" not in source
    assert TITLES[REPAIR] in page.find("article")[0].text
    assert page.find("title")[0].text == "Memory & repair <b>bold</b>"
    assert (
        "Both papers keep information <intact>." in page.find("section", id="relationships")[0].text
    )


def test_the_relationship_map_lists_every_relationship_and_the_type_distribution(
    collection: Collection,
) -> None:
    page = parsed(collection.html())
    rows = [row for row in page.find("tr") if "relationship-table" in row.inside]
    distribution = [row for row in page.find("tr") if "type-table" in row.inside]

    body_rows = rows[1:]
    assert len(body_rows) == len(collection.analysis.relationships)
    for row, relation in zip(body_rows, collection.analysis.relationships, strict=True):
        assert relation.type in row.text and relation.explanation in row.text
    assert "REV1 inserts cytosine" in body_rows[0].text and TITLES[FEARNET] in body_rows[0].text
    cells = [[cell.text for cell in row_cells(page, row)] for row in distribution[1:]]
    assert cells == [
        ["extension", "0", "0%"],
        ["parallel", "1", "50%"],
        ["complementary", "1", "50%"],
    ]


def test_each_paper_shows_its_questions_answers_and_follow_ups(collection: Collection) -> None:
    page = parsed(collection.html())
    articles = {squeezed(article.text): article for article in page.find("article")}

    assert len(articles) == 2
    fearnet = next(text for text in articles if text.startswith(TITLES[FEARNET]))
    assert "How does FearNet avoid storing examples?" in fearnet
    assert "Which memory system does FearNet use?" in fearnet
    assert "too few insights" in fearnet
    links = [link for link in page.find("a") if "papers" in link.inside]
    assert f"#{chunk_anchor(FEARNET_2.chunk_id)}" in {link.attrs["href"] for link in links}
    comparative = squeezed(page.find("section", id="comparative")[0].text)
    assert "What distinguishes FearNet from REV1?" in comparative
    assert TITLES[FEARNET] in comparative


def test_the_markdown_ends_with_references_naming_each_cited_paper(
    collection: Collection,
) -> None:
    markdown = synthesis_markdown(collection.synthesis, TITLES)
    references = markdown.split("## References", 1)[1]

    assert markdown.startswith("# Memory & repair")
    assert "offline" in markdown and "stuff" in markdown
    assert collection.synthesis.text.strip() in markdown
    lines = [line for line in references.splitlines() if line.startswith("- ")]
    assert len(lines) == 2
    # The title's markup is text in the Markdown as on the page.
    escaped_title = "Translesion synthesis &lt;script>alert('x')&lt;/script> & REV1"
    assert escaped_title in lines[0] and "p. 4 `[10.1093_nar_gkae252:4]`" in lines[0]
    assert "<script" not in markdown and "<b>" not in markdown
    assert TITLES[FEARNET] in lines[1] and "p. 1" in lines[1] and "p. 9" in lines[1]


def test_chunk_anchors_are_safe_and_never_shared() -> None:
    ids = ["10.1093_nar:4", "10_1093_nar:4", "10-1093.nar:4", "a:1", "a.1"]
    anchors = [chunk_anchor(each) for each in ids]

    assert len(set(anchors)) == len(ids)
    assert all(re.fullmatch(r"chunk-[A-Za-z0-9_-]+", anchor) for anchor in anchors)


def test_markdown_blocks_keep_wrapped_lines_together_and_items_apart() -> None:
    blocks = markdown_blocks("# Title\nA first\nline.\n\n- one\n  more\n- two\n1. first")

    assert [(block.kind, block.texts) for block in blocks] == [
        ("heading", ["Title"]),
        ("paragraph", ["A first line."]),
        ("bullets", ["one more", "two"]),
        ("numbered", ["first"]),
    ]


def test_the_outputs_are_written_whole_and_nothing_else_is_left(
    collection: Collection, tmp_path: Path
) -> None:
    out_dir = tmp_path / "outputs" / "demo"
    arguments: dict[str, Any] = {
        "synthesis": collection.synthesis,
        "plain": collection.plain,
        "analysis": collection.analysis,
        "answers": collection.answers,
        "comparative": collection.comparative,
        "titles": TITLES,
        "passages": collection.passages,
    }
    paths = write_collection_outputs(out_dir, CollectionContent(**arguments))

    assert sorted(path.name for path in out_dir.iterdir()) == [
        "plain.md",
        "relationship_types.svg",
        "relationships.svg",
        "synthesis.html",
        "synthesis.md",
    ]
    assert paths["synthesis.html"].read_text(encoding="utf-8") == collection.html()
    assert paths["plain.md"].read_text(encoding="utf-8").startswith("# In plain words")
    figures = analysis_figures(collection.analysis, TITLES)
    for name, svg in figures.items():
        assert paths[name].read_text(encoding="utf-8") == svg


def test_the_synthesis_markdown_shows_the_pictures_written_next_to_it(
    collection: Collection, tmp_path: Path
) -> None:
    paths = write_collection_outputs(tmp_path, replace(collection, titles=TITLES).content())
    markdown = paths["synthesis.md"].read_text(encoding="utf-8")
    images = re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", markdown)

    assert images == [(alt, name) for name, alt in FIGURES.items()]
    for _, name in images:
        assert (paths["synthesis.md"].parent / name).is_file()
    # After the text, before the references; the plain summary has no pictures.
    assert markdown.index(collection.synthesis.text.strip()) < markdown.index("![")
    assert markdown.index("![") < markdown.index("## References")
    assert "![" not in paths["plain.md"].read_text(encoding="utf-8")


def test_the_relationship_map_shows_the_graph_and_the_type_chart_before_the_list(
    collection: Collection,
) -> None:
    page = parsed(collection.html())
    pictures = [svg for svg in page.find("svg") if "relationships" in svg.inside]
    table = page.find("table", class_="relationship-table")[0]

    assert len(pictures) == 2 and len(page.find("svg")) == 2
    assert all(svg.attrs["role"] == "img" and svg.attrs["viewbox"] for svg in pictures)
    graph, chart = pictures
    assert graph.attrs["aria-label"].startswith("Relationship graph: 2 papers")
    assert chart.attrs["aria-label"].startswith("Relationship types")
    assert page.elements.index(chart) < page.elements.index(table)
    # One node per paper, titled in full (escaped), one edge for the related pair.
    nodes = [g for g in page.find("g", class_="node") if "relationships" in g.inside]
    assert {node.attrs["data-paper"] for node in nodes} == {REPAIR, FEARNET}
    repair = next(node for node in nodes if node.attrs["data-paper"] == REPAIR)
    assert TITLES[REPAIR] in repair.text
    (edge,) = page.find("path", class_="edge")
    assert edge.attrs["data-count"] == "2"
    bars = page.find("g", class_="bar")
    assert [(bar.attrs["data-type"], bar.attrs["data-count"]) for bar in bars] == [
        ("extension", "0"),
        ("parallel", "1"),
        ("complementary", "1"),
    ]


def test_a_collection_without_comparative_questions_or_relationships_still_renders(
    collection: Collection,
) -> None:
    collection.comparative = CrossPaperQuestions(collection="demo", engine="offline", answers=[])
    collection.analysis = collection.analysis.model_copy(update={"relationships": []})
    page = parsed(collection.html())

    assert "No comparative questions were asked." in page.find("section", id="comparative")[0].text
    assert "No relationship found." in page.find("section", id="relationships")[0].text
    ids = {element.attrs["id"] for element in page.elements if "id" in element.attrs}
    assert {link.attrs["href"][1:] for link in page.find("a")} <= ids


def test_a_collection_of_hundreds_of_papers_links_to_pages_of_papers_each_reachable(
    tmp_path: Path,
) -> None:
    """Past PAPERS_PER_PAGE papers (or relationships) the page holds no wall of them: it lists
    pages of at most that many, each linked; every paper's questions and answers and every
    relationship are on one of them, every link of every page leads to an element of its page
    or to another written page."""
    analysis, answers = small_collection(250)
    titles = {paper: f"Paper {int(paper[1:])}" for paper in analysis.papers}
    settings, prompts = Settings(home=tmp_path), PromptLibrary(None)
    synthesis = write_synthesis(
        analysis,
        answers,
        None,
        titles,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm, None, prompts),
    )
    plain = write_plain_summary(analysis, synthesis, titles, Asker(settings.llm, None, prompts))
    paths = write_collection_outputs(
        tmp_path / "out", CollectionContent(synthesis, plain, analysis, answers, None, titles, {})
    )

    main = parsed(paths["synthesis.html"].read_text(encoding="utf-8"))
    assert not main.find("article")
    assert len(main.find("tr")) < 10  # the type table's
    listed = {
        section: [link.attrs["href"] for link in main.find("a") if section in link.inside]
        for section in ("papers", "relationships")
    }
    assert listed == {
        kind: [f"synthesis-{kind}-{n:03d}.html" for n in (1, 2, 3)]
        for kind in ("papers", "relationships")
    }
    reached: list[str] = []
    rows = 0
    for name in [*listed["papers"], *listed["relationships"]]:
        page = parsed(paths[name].read_text(encoding="utf-8"))
        assert len(page.find("article")) + len(page.find("tbody")) > 0
        assert len(page.find("article")) <= PAPERS_PER_PAGE
        assert len(page.find("tr")) <= PAPERS_PER_PAGE + 1
        reached += [code.text for code in page.find("code") if "items" in code.inside]
        rows += len(page.find("tr")) - len(page.find("thead"))
        ids = {element.attrs["id"] for element in page.elements if "id" in element.attrs}
        for link in page.find("a"):
            href = link.attrs["href"]
            assert href[1:] in ids if href.startswith("#") else href in paths
    assert reached == analysis.papers
    assert rows == len(analysis.relationships) == 249
