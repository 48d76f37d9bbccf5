"""The pictures of a relationship analysis: the relationship graph and the type bar chart, as
standalone SVG that parses, names what it draws, escapes its text and never changes by itself."""

from __future__ import annotations

import base64
import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from litpipe.report.graphs import (
    TYPE_COLOURS,
    TYPE_DASHES,
    analysis_figures,
    markdown_image,
    paper_edges,
    relationship_graph_svg,
    shorten,
    svg_data_uri,
    type_distribution_markdown,
    type_distribution_svg,
)
from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    Insight,
    Relationship,
    RelationshipAnalysis,
    RelationshipType,
)

SVG = "{http://www.w3.org/2000/svg}"


def insight(insight_id: str, paper_id: str, papers: list[str] | None = None) -> Insight:
    return Insight(
        insight_id=insight_id,
        paper_id=paper_id,
        papers=papers if papers is not None else [paper_id],
        question_ids=[],
        text=f"insight {insight_id}",
        citations=[],
    )


def related(source: str, target: str, kind: RelationshipType) -> Relationship:
    return Relationship(source=source, target=target, type=kind, explanation="because")


def collection(count: int) -> tuple[list[str], dict[str, str], list[Insight]]:
    """`count` papers with long titles, two insights each (`<paper>a`, `<paper>b`)."""
    papers = [f"paper-{index:02d}" for index in range(count)]
    titles = {
        paper: f"A study number {index} of something with a rather long title"
        for index, paper in enumerate(papers)
    }
    insights = [insight(f"{paper}{half}", paper) for paper in papers for half in "ab"]
    return papers, titles, insights


def ring(count: int) -> list[Relationship]:
    """Each paper related to the next, and one chord across: a graph with every paper in it."""
    kinds = itertools.cycle(RELATIONSHIP_TYPES)
    relations = [
        related(f"paper-{index:02d}a", f"paper-{(index + 1) % count:02d}b", next(kinds))
        for index in range(count)
    ]
    relations.append(related("paper-00a", f"paper-{count // 2:02d}a", "contradiction"))
    return relations


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def classes(element: ET.Element) -> list[str]:
    return element.get("class", "").split()


def find(root: ET.Element, tag: str, css_class: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if css_class in classes(e)]


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


def test_the_graph_is_a_standalone_accessible_svg() -> None:
    papers, titles, insights = collection(3)
    root = parsed(relationship_graph_svg(papers, titles, insights, ring(3)))

    assert root.tag == f"{SVG}svg"
    width, height = int(root.get("width", "0")), int(root.get("height", "0"))
    assert width > 0 and height > 0
    assert root.get("viewBox") == f"0 0 {width} {height}"
    assert root.get("role") == "img"
    assert root.get("aria-label", "").startswith("Relationship graph: 3 papers")
    assert root[0].tag == f"{SVG}title" and root[0].text == root.get("aria-label")
    # Inlined into synthesis.html, whose ids must stay unique: the picture has none.
    assert not [element for element in root.iter() if "id" in element.attrib]


@pytest.mark.parametrize("count", [3, 9, 40])
def test_one_node_per_paper_with_its_full_title_as_tooltip(count: int) -> None:
    papers, titles, insights = collection(count)
    root = parsed(relationship_graph_svg(papers, titles, insights, ring(count)))
    nodes = find(root, "g", "node")

    assert sorted(node.get("data-paper", "") for node in nodes) == papers
    for node in nodes:
        paper = node.get("data-paper", "")
        tooltip = node.find(f"{SVG}title")
        assert tooltip is not None and titles[paper] in (tooltip.text or "")
        label = node.find(f"{SVG}text")
        assert label is not None and label.text == shorten(titles[paper])
        assert len(node.findall(f"{SVG}circle")) == 1


def test_one_edge_per_related_pair_coloured_by_its_most_frequent_type() -> None:
    papers, titles, insights = collection(3)
    relations = [
        related("paper-00a", "paper-01a", "extension"),
        # The other direction, another insight: the same pair of papers, the same edge.
        related("paper-01b", "paper-00b", "extension"),
        related("paper-00a", "paper-02a", "contradiction"),
        related("paper-01a", "paper-02a", "complementary"),
        related("paper-02b", "paper-01b", "parallel"),
        related("paper-01a", "paper-02b", "parallel"),
        # Within one paper: no edge.
        related("paper-02a", "paper-02b", "improvement"),
    ]
    root = parsed(relationship_graph_svg(papers, titles, insights, relations))
    edges = {
        frozenset((edge.get("data-source"), edge.get("data-target"))): edge
        for edge in find(root, "path", "edge")
    }

    assert len(find(root, "path", "edge")) == len(edges) == 3
    expected = {
        ("paper-00", "paper-01"): ("extension", 2),
        ("paper-00", "paper-02"): ("contradiction", 1),
        ("paper-01", "paper-02"): ("parallel", 3),
    }
    for pair, (kind, count) in expected.items():
        edge = edges[frozenset(pair)]
        assert kind in classes(edge)
        assert edge.get("stroke") == TYPE_COLOURS[kind]
        assert edge.get("data-count") == str(count)
    mixed = edges[frozenset(("paper-01", "paper-02"))]
    assert mixed.get("data-types") == "parallel:2 complementary:1"
    tooltip = mixed.find(f"{SVG}title")
    assert tooltip is not None and "2 parallel, 1 complementary" in (tooltip.text or "")
    widths = {
        kind: float(edges[frozenset(p)].get("stroke-width", "0"))
        for p, (kind, _) in expected.items()
    }
    assert widths["contradiction"] < widths["extension"] < widths["parallel"]


def test_a_tie_between_types_shows_the_contradiction() -> None:
    papers, _, insights = collection(2)
    relations = [
        related("paper-00a", "paper-01a", "complementary"),
        related("paper-00b", "paper-01b", "contradiction"),
    ]
    (edge,) = paper_edges(papers, insights, relations)

    assert edge.main_type == "contradiction" and edge.count == 2


def test_a_comparative_insight_relates_each_paper_it_names() -> None:
    papers, _, insights = collection(3)
    comparative = insight("x0", "", ["paper-00", "paper-02"])
    edges = paper_edges(papers, [*insights, comparative], [related("x0", "paper-01a", "parallel")])

    assert [(edge.first, edge.second, edge.types) for edge in edges] == [
        ("paper-00", "paper-01", {"parallel": 1}),
        ("paper-01", "paper-02", {"parallel": 1}),
    ]


def test_the_legend_lists_the_five_types_in_their_colours() -> None:
    papers, titles, insights = collection(3)
    root = parsed(relationship_graph_svg(papers, titles, insights, []))
    items = find(root, "g", "legend-item")

    assert [text_of(item) for item in items] == list(RELATIONSHIP_TYPES)
    for item, kind in zip(items, RELATIONSHIP_TYPES, strict=True):
        line = item.find(f"{SVG}line")
        assert line is not None and line.get("stroke") == TYPE_COLOURS[kind]
    # Without relationships every paper is drawn, marked as standing alone.
    assert len(find(root, "g", "isolated")) == 3 and not find(root, "path", "edge")


def test_the_palette_is_distinct_and_each_type_has_its_own_dashes() -> None:
    assert set(TYPE_COLOURS) == set(TYPE_DASHES) == set(RELATIONSHIP_TYPES)
    assert len(set(TYPE_COLOURS.values())) == len(set(TYPE_DASHES.values())) == 5


def test_titles_are_escaped_in_labels_tooltips_and_the_bar_chart() -> None:
    tricky = 'Attention <b>is</b> all & "more"'
    papers, titles, insights = collection(2)
    titles["paper-00"] = tricky
    svg = relationship_graph_svg(papers, titles, insights, ring(2))
    root = parsed(svg)

    assert "<b>" not in svg and "&lt;b&gt;" in svg
    node = next(n for n in find(root, "g", "node") if n.get("data-paper") == "paper-00")
    label, tooltip = node.find(f"{SVG}text"), node.find(f"{SVG}title")
    assert label is not None and label.text == shorten(tricky)
    assert tooltip is not None and tricky in (tooltip.text or "")
    edge = find(root, "path", "edge")[0].find(f"{SVG}title")
    assert edge is not None and tricky in (edge.text or "")
    chart = type_distribution_svg({"<odd> & type": 2}, title='Types "of" <relations>')
    chart_root = parsed(chart)
    assert chart_root[0].text is not None and "<odd> & type" in chart_root[0].text
    assert 'Types "of" <relations>' in text_of(chart_root)


def test_the_same_input_gives_the_same_bytes() -> None:
    papers, titles, insights = collection(9)
    first = relationship_graph_svg(papers, dict(titles), list(insights), ring(9))
    second = relationship_graph_svg(list(papers), dict(titles), list(insights), ring(9))
    distribution = {"extension": 2, "contradiction": 1}

    assert first == second
    assert type_distribution_svg(distribution) == type_distribution_svg(dict(distribution))
    assert "-0.0" not in first


@pytest.mark.parametrize("count", [3, 9, 40])
def test_no_two_nodes_overlap_and_every_node_lies_on_the_canvas(count: int) -> None:
    papers, titles, insights = collection(count)
    root = parsed(relationship_graph_svg(papers, titles, insights, ring(count)))
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    circles = [
        (float(c.get("cx", "0")), float(c.get("cy", "0")), float(c.get("r", "0")))
        for node in find(root, "g", "node")
        for c in node.iter(f"{SVG}circle")
    ]

    assert len(circles) == count
    for (x1, y1, r1), (x2, y2, r2) in itertools.combinations(circles, 2):
        assert math.dist((x1, y1), (x2, y2)) >= r1 + r2
    for x, y, r in circles:
        assert r <= x <= width - r and r <= y <= height - r


def test_forty_papers_fit_a_readable_page() -> None:
    papers, titles, insights = collection(40)
    root = parsed(relationship_graph_svg(papers, titles, insights, ring(40)))
    circles = [c for node in find(root, "g", "node") for c in node.iter(f"{SVG}circle")]
    nearest = min(
        math.dist(
            (float(a.get("cx", "0")), float(a.get("cy", "0"))),
            (float(b.get("cx", "0")), float(b.get("cy", "0"))),
        )
        for a, b in itertools.combinations(circles, 2)
    )

    # Room between neighbours (more than the diameters), and a canvas a screen can show.
    assert nearest >= 2 * float(circles[0].get("r", "0")) + 10
    assert int(root.get("width", "0")) <= 1000 and int(root.get("height", "0")) <= 1100
    # Labels radiate from the ring, so that forty of them do not collide.
    assert all(
        "rotate(" in (t.get("transform") or "")
        for n in find(root, "g", "node")
        for t in n.iter(f"{SVG}text")
    )


def test_no_papers_still_gives_a_picture() -> None:
    root = parsed(relationship_graph_svg([], {}, [], []))

    assert "no papers" in text_of(root) and not find(root, "g", "node")


def test_the_bar_chart_shows_each_count_with_its_share() -> None:
    distribution = {
        "extension": 2,
        "contradiction": 0,
        "complementary": 5,
        "improvement": 1,
        "parallel": 0,
    }
    root = parsed(type_distribution_svg(distribution))
    bars = find(root, "g", "bar")

    assert root.get("role") == "img" and root.get("viewBox")
    assert [(bar.get("data-type"), int(bar.get("data-count", "-1"))) for bar in bars] == list(
        distribution.items()
    )
    lengths: dict[str, float] = {}
    for bar, (kind, count) in zip(bars, distribution.items(), strict=True):
        (counted,) = [t for t in bar.iter(f"{SVG}text") if "count" in classes(t)]
        assert counted.text == f"{count} ({count / 8:.0%})"
        rect = bar.find(f"{SVG}rect")
        assert rect is not None and rect.get("fill") == TYPE_COLOURS[kind]
        lengths[kind] = float(rect.get("width", "0"))
    assert lengths["complementary"] > lengths["extension"] > lengths["improvement"] > 0
    assert lengths["parallel"] == 0
    assert "8 relationships" in text_of(root)


def test_an_empty_distribution_still_gives_a_chart() -> None:
    root = parsed(type_distribution_svg({}))

    assert not find(root, "g", "bar") and "no relationship types" in text_of(root)


def test_the_figures_of_an_analysis_and_their_markdown_forms() -> None:
    papers, titles, insights = collection(3)
    analysis = RelationshipAnalysis(
        collection="demo",
        engine="offline",
        papers=papers,
        theme="t",
        narrative="n",
        insights=insights,
        relationships=ring(3),
        type_distribution={kind: 1 for kind in RELATIONSHIP_TYPES},
    )
    figures = analysis_figures(analysis, titles)

    assert list(figures) == ["relationships.svg", "relationship_types.svg"]
    uri = svg_data_uri(figures["relationships.svg"])
    assert uri.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]).decode("utf-8") == figures["relationships.svg"]
    image = markdown_image("A [graph]\nof papers", figures["relationships.svg"])
    assert re.fullmatch(
        r"!\[A \(graph\) of papers\]\(data:image/svg\+xml;base64,[A-Za-z0-9+/=]+\)", image
    )
    table = type_distribution_markdown({"extension": 1, "parallel": 3})
    assert table.splitlines()[2:] == ["| extension | 1 | 25% |", "| parallel | 3 | 75% |"]


def test_shortened_titles_end_at_a_word_with_an_ellipsis() -> None:
    title = "Learning to Compose Domain-Specific Transformations for Data Augmentation"

    assert shorten("Short title") == "Short title"
    short = shorten(title)
    assert len(short) <= 34 and short.endswith("…")
    assert title.startswith(short[:-1]) and title[len(short) - 1] == " "
