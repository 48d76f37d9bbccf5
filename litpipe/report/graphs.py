"""Pictures of a collection's relationship analysis, as standalone SVG text: the relationship graph
(papers as nodes; the typed relationships between their insights gathered into one edge per pair
of papers; each paper citing another an arrow from it to the cited one) and the distribution of
relationship types as a bar chart.

Written by hand, like `report.convergence.render_svg`: no plotting dependency, and the same
analysis always gives the same bytes (a rerun leaves the files and their hashes alone). Every text
is escaped; each picture carries `role="img"`, an `aria-label` and a `<title>`, and each node, edge
and bar a `<title>` a browser shows as a tooltip. No element has an `id`: the pictures are inlined
into `synthesis.html`, whose ids must stay unique.

Pure Python over the schemas: the `collection_outputs` asset writes the files, the Dagster
metadata embeds them as data URIs, and the nightly digest can call the same functions.
"""

from __future__ import annotations

import base64
import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    CitedRelationship,
    Insight,
    Relationship,
    RelationshipAnalysis,
)
from litpipe.text import counted

# File names of the pictures next to synthesis.md, and the alternative text each is shown with.
GRAPH_FILE = "relationships.svg"
TYPES_FILE = "relationship_types.svg"
FIGURES: dict[str, str] = {
    GRAPH_FILE: "Relationship graph: papers as nodes, typed relationships as edges",
    TYPES_FILE: "Relationship types: how many relationships of each type",
}

# Okabe & Ito's palette, which readers with any common colour-vision deficiency tell apart; each
# type also has its own dash pattern, so the graph still reads in grey or to a reader who cannot
# separate two of the colours.
TYPE_COLOURS: dict[str, str] = {
    "extension": "#0072B2",
    "contradiction": "#D55E00",
    "complementary": "#009E73",
    "improvement": "#E69F00",
    "parallel": "#CC79A7",
}
TYPE_DASHES: dict[str, str] = {
    "extension": "",
    "contradiction": "5 3",
    "complementary": "1.5 3",
    "improvement": "11 4",
    "parallel": "8 3 2 3",
}
_OTHER_COLOUR = "#777777"
# An edge holding several types is drawn in its most frequent one; on a tie, the type a reader
# must not miss wins: a contradiction among agreeing papers is the news.
_PRIORITY = ("contradiction", "improvement", "extension", "parallel", "complementary")

_FONT = 11
# Advances of sans-serif characters, in em, rounded up from Helvetica's and Arial's: an estimated
# label box must hold the drawn one (a label overflowing the canvas would be cut off), and a
# uniform width would leave wide empty margins around labels of narrow letters.
_NARROW = frozenset("fijlrtI!|.,:;'()[] -")
_WIDE = frozenset("mwMW@%")
_NARROW_EM, _WIDE_EM, _UPPER_EM, _OTHER_EM = 0.34, 0.9, 0.72, 0.58
_MARGIN = 12
_NODE_R = 8
# Space between neighbouring nodes on the ring, beyond their diameters.
_NODE_GAP = 20
_MIN_RING = 120
_LABEL_GAP = 5
_LABEL_CHARS = 34
# Up to this many papers the labels are horizontal; more, and they radiate from the ring, the
# only way 40 labels fit side by side without colliding.
_HORIZONTAL_LABELS_UP_TO = 12
# Edges bow towards the centre: the control point sits at this fraction of the chord's midpoint,
# so an edge between neighbours stays near the ring and one across it runs through the middle.
_BEND = 0.6
_EDGE_MIN_WIDTH, _EDGE_STEP, _EDGE_MAX_WIDTH = 1.5, 1.5, 9.0
_TITLE_HEIGHT = 34
_LEGEND_ROW = 22
# A citation is drawn apart from the typed relationships: near-black, thin, solid, with an
# arrowhead at the cited paper. It bows to its right by this share of its length, so that two
# papers citing each other get two arrows, not one line with a head at each end.
_CITE_COLOUR = "#222222"
_CITE_WIDTH = 1.3
_CITE_BOW = 0.12
_ARROW_LENGTH, _ARROW_HALF_WIDTH = 9.0, 4.0
CITES_LEGEND = "cites, in this collection (arrow: citing → cited)"


def _n(value: float) -> str:
    """A coordinate with one decimal, never `-0.0` (the same picture must give the same bytes)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _attr(text: str) -> str:
    return escape(text, {'"': "&quot;"})


def _text_width(text: str, size: float = _FONT) -> float:
    """An upper estimate of the drawn width of `text` in a sans-serif font of `size` pixels."""
    return size * sum(
        _NARROW_EM
        if char in _NARROW
        else _WIDE_EM
        if char in _WIDE
        else _UPPER_EM
        if char.isupper()
        else _OTHER_EM
        for char in text
    )


def shorten(title: str, limit: int = _LABEL_CHARS) -> str:
    """A title cut at a word boundary to at most `limit` characters, an ellipsis marking the cut."""
    title = " ".join(title.split())
    if len(title) <= limit:
        return title
    cut = title[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.-") + "…"


def _subjects(insight: Insight) -> list[str]:
    # A comparative insight (no paper of its own) concerns every paper it names.
    return [insight.paper_id] if insight.paper_id else list(insight.papers)


@dataclass(frozen=True)
class PaperEdge:
    """The relationships between the insights of two papers, by type."""

    first: str
    second: str
    types: dict[str, int]

    @property
    def count(self) -> int:
        return sum(self.types.values())

    @property
    def main_type(self) -> str:
        return max(self.types, key=lambda kind: (self.types[kind], -_priority(kind)))


def _priority(kind: str) -> int:
    return _PRIORITY.index(kind) if kind in _PRIORITY else len(_PRIORITY)


def paper_edges(
    papers: Sequence[str], insights: Sequence[Insight], relationships: Sequence[Relationship]
) -> list[PaperEdge]:
    """One edge per pair of papers whose insights relate, with its relationships counted by
    type, in the order of `papers`. A relationship involving a comparative insight counts for
    every pair of papers it joins; a pair within one paper, or with a paper outside `papers`,
    is left out."""
    order = {paper: index for index, paper in enumerate(dict.fromkeys(papers))}
    by_id = {insight.insight_id: insight for insight in insights}
    counted: dict[tuple[str, str], Counter[str]] = {}
    for relation in relationships:
        source, target = by_id.get(relation.source), by_id.get(relation.target)
        if source is None or target is None:
            continue
        pairs = {
            (a, b) if order[a] < order[b] else (b, a)
            for a in _subjects(source)
            for b in _subjects(target)
            if a != b and a in order and b in order
        }
        for pair in pairs:
            counted.setdefault(pair, Counter())[relation.type] += 1
    return [
        PaperEdge(first, second, {kind: counts[kind] for kind in sorted(counts, key=_priority)})
        for (first, second), counts in sorted(
            counted.items(), key=lambda item: (order[item[0][0]], order[item[0][1]])
        )
    ]


def _ring_order(papers: list[str], edges: list[PaperEdge]) -> list[str]:
    """The papers in ring order: each next to the one it shares most relationships with, so
    related papers sit close and their edges stay short. Starts from the most connected paper;
    ties go to the collection's order; papers without relationships come last."""
    weight: dict[str, Counter[str]] = {paper: Counter() for paper in papers}
    for edge in edges:
        weight[edge.first][edge.second] += edge.count
        weight[edge.second][edge.first] += edge.count
    degree = {paper: sum(weight[paper].values()) for paper in papers}
    index = {paper: i for i, paper in enumerate(papers)}
    to_placed: Counter[str] = Counter()
    placed: list[str] = []
    is_placed: set[str] = set()
    # The papers by (edges to those placed, degree, collection order), best first; an entry
    # whose count has since grown is stale and skipped: O(E log N), where scanning every
    # remaining paper at each step was quadratic (27 M comparisons at 5,183 papers, per graph).
    ranked = [(0, -degree[paper], index[paper], paper) for paper in papers]
    heapq.heapify(ranked)
    while len(placed) < len(papers):
        near_last = weight[placed[-1]] if placed else Counter()
        near = [p for p in near_last if p not in is_placed]
        if near:
            chosen = max(near, key=lambda p: (near_last[p], to_placed[p], degree[p], -index[p]))
        else:
            while True:
                negative_count, _, _, chosen = heapq.heappop(ranked)
                if chosen not in is_placed and -negative_count == to_placed[chosen]:
                    break
        placed.append(chosen)
        is_placed.add(chosen)
        for other, count in weight[chosen].items():
            to_placed[other] += count
            if other not in is_placed:
                heapq.heappush(ranked, (-to_placed[other], -degree[other], index[other], other))
    return placed


@dataclass(frozen=True)
class _Node:
    paper: str
    x: float
    y: float
    angle: float
    label: str


@dataclass(frozen=True)
class _Box:
    left: float
    top: float
    right: float
    bottom: float


def _label_box(node: _Node, radial: bool) -> _Box:
    """Where a node's label lies (estimated from its length), to size the canvas around it."""
    width = _text_width(node.label)
    reach = _NODE_R + _LABEL_GAP
    if radial:
        cos, sin = math.cos(node.angle), math.sin(node.angle)
        near = (node.x + reach * cos, node.y + reach * sin)
        far = (node.x + (reach + width) * cos, node.y + (reach + width) * sin)
        half = _FONT * 0.7
        return _Box(
            min(near[0], far[0]) - half,
            min(near[1], far[1]) - half,
            max(near[0], far[0]) + half,
            max(near[1], far[1]) + half,
        )
    x, y, anchor = _horizontal_label(node)
    left = {"start": x, "end": x - width, "middle": x - width / 2}[anchor]
    return _Box(left, y - _FONT, left + width, y + _FONT * 0.35)


def _horizontal_label(node: _Node) -> tuple[float, float, str]:
    """The anchor point and alignment of a horizontal label: beside a node on the ring's sides,
    above or below one at its top or bottom."""
    cos, sin = math.cos(node.angle), math.sin(node.angle)
    reach = _NODE_R + _LABEL_GAP
    if cos > 0.3:
        return node.x + reach, node.y + _FONT * 0.35, "start"
    if cos < -0.3:
        return node.x - reach, node.y + _FONT * 0.35, "end"
    if sin < 0:
        return node.x, node.y - reach, "middle"
    return node.x, node.y + reach + _FONT * 0.8, "middle"


@dataclass(frozen=True)
class CitationArrow:
    """A paper of the collection citing another, with the types its citing sentences give."""

    citing: str
    cited: str
    types: tuple[str, ...]


def citation_arrows(
    papers: Sequence[str], cited: Sequence[CitedRelationship]
) -> list[CitationArrow]:
    """One arrow per citing and cited pair of `papers` (a list naming a paper twice, preprint
    and journal version, is one arrow), in the order of `cited`."""
    shown = set(papers)
    types: dict[tuple[str, str], dict[str, None]] = {}
    for relation in cited:
        if relation.citing in shown and relation.cited in shown:
            types.setdefault((relation.citing, relation.cited), {})[relation.type] = None
    return [CitationArrow(citing, cited, tuple(kinds)) for (citing, cited), kinds in types.items()]


def _legend_items() -> list[tuple[str, float]]:
    """Each type with the width of its legend entry (a line sample, then the name)."""
    return [(kind, 30 + _text_width(kind) + 18) for kind in RELATIONSHIP_TYPES]


def relationship_graph_svg(
    papers: list[str],
    titles: Mapping[str, str],
    insights: list[Insight],
    relationships: list[Relationship],
    cited: Sequence[CitedRelationship] = (),
) -> str:
    """The relationship graph: each paper a node on a ring, labelled with its shortened title
    (the full title in its tooltip); each related pair of papers one edge, coloured and dashed
    by its most frequent type, as wide as its relationships are many; each paper citing another
    (`cited`) an arrow to it; a legend of the five types (and of the arrows, if any). The ring
    grows with the papers so that no two nodes overlap, and is placed by the relationships
    alone: citations add arrows, never move a paper."""
    papers = list(dict.fromkeys(papers))
    edges = paper_edges(papers, insights, relationships)
    arrows = citation_arrows(papers, cited)
    ring = _ring_order(papers, edges)
    count = len(ring)
    radial = count > _HORIZONTAL_LABELS_UP_TO
    radius: float = _MIN_RING
    if count > 1:
        # Neighbours on the ring are a chord 2·R·sin(π/n) apart: at least two radii and a gap.
        radius = max(radius, (2 * _NODE_R + _NODE_GAP) / (2 * math.sin(math.pi / count)))
    nodes = []
    for position, paper in enumerate(ring):
        # The first paper at the top, then clockwise.
        angle = -math.pi / 2 + 2 * math.pi * position / max(count, 1)
        x, y = (0.0, 0.0) if count == 1 else (radius * math.cos(angle), radius * math.sin(angle))
        title = titles.get(paper) or paper
        nodes.append(_Node(paper, x, y, angle, shorten(title)))
    boxes = [_label_box(node, radial) for node in nodes]
    boxes += [_Box(n.x - _NODE_R, n.y - _NODE_R, n.x + _NODE_R, n.y + _NODE_R) for n in nodes]
    # The ring's middle, so that a collection of zero or one paper still gets a drawing area.
    boxes.append(_Box(-radius / 2, -radius / 2, radius / 2, radius / 2))
    left = min(box.left for box in boxes)
    top = min(box.top for box in boxes)
    graph_width = max(box.right for box in boxes) - left
    graph_height = max(box.bottom for box in boxes) - top
    total = sum(edge.count for edge in edges)
    heading = (
        f"Relationship graph: {counted(count, 'paper')}, {counted(total, 'relationship')} "
        f"between {counted(len(edges), 'pair')} of papers"
    )
    if arrows:
        heading += f"; {counted(len(arrows), 'citation')} within the collection"
    legend = _legend_items()
    legend_width = max(
        sum(width for _, width in legend), 30 + _text_width(CITES_LEGEND) if arrows else 0
    )
    width = math.ceil(max(graph_width, legend_width, _text_width(heading, 14)) + 2 * _MARGIN)
    legend_top = _TITLE_HEIGHT + graph_height + 2 * _MARGIN
    height = math.ceil(legend_top + (2 + bool(arrows)) * _LEGEND_ROW + _MARGIN)
    # Local coordinates (the ring's centre at 0, 0) to the canvas', the graph centred.
    dx = (width - graph_width) / 2 - left
    dy = _TITLE_HEIGHT - top
    where = {node.paper: (node.x + dx, node.y + dy) for node in nodes}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_attr(heading)}" '
        f'font-family="sans-serif" font-size="{_FONT}">',
        f"<title>{escape(heading)}</title>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{_n(width / 2)}" y="22" text-anchor="middle" font-size="14">'
        f"{escape(heading)}</text>",
    ]
    centre = (dx, dy)
    ring_index = {paper: i for i, paper in enumerate(ring)}
    # The widest edges last, on top; then in ring order, for the same bytes every time.
    drawn = sorted(
        edges, key=lambda e: (e.count, sorted((ring_index[e.first], ring_index[e.second])))
    )
    parts.append('<g class="edges" fill="none" stroke-linecap="round">')
    for edge in drawn:
        parts.append(_edge(edge, where, centre, titles))
    parts.append("</g>")
    if arrows:
        parts.append('<g class="citations" fill="none" stroke-linecap="round">')
        parts.extend(_citation(arrow, where, titles) for arrow in arrows)
        parts.append("</g>")
    degree = Counter[str]()
    neighbours: dict[str, set[str]] = {paper: set() for paper in papers}
    for edge in edges:
        degree[edge.first] += edge.count
        degree[edge.second] += edge.count
        neighbours[edge.first].add(edge.second)
        neighbours[edge.second].add(edge.first)
    parts.append('<g class="nodes">')
    for node in nodes:
        parts.append(_node(node, where[node.paper], titles, degree[node.paper], neighbours, radial))
    parts.append("</g>")
    if count == 0:
        parts.append(
            f'<text x="{_n(width / 2)}" y="{_n(_TITLE_HEIGHT + graph_height / 2)}" '
            'text-anchor="middle">no papers</text>'
        )
    parts.append(_legend(legend, width, legend_top, bool(arrows)))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge(
    edge: PaperEdge,
    where: Mapping[str, tuple[float, float]],
    centre: tuple[float, float],
    titles: Mapping[str, str],
) -> str:
    (x0, y0), (x1, y1) = where[edge.first], where[edge.second]
    cx = centre[0] + ((x0 + x1) / 2 - centre[0]) * _BEND
    cy = centre[1] + ((y0 + y1) / 2 - centre[1]) * _BEND
    kind = edge.main_type
    width = min(_EDGE_MIN_WIDTH + _EDGE_STEP * (edge.count - 1), _EDGE_MAX_WIDTH)
    dash = TYPE_DASHES.get(kind, "")
    # Dashes grow with the line, so a wide dotted edge still reads as dotted.
    scale = max(1.0, width / 2)
    dashes = (
        f' stroke-dasharray="{" ".join(_n(float(d) * scale) for d in dash.split())}"'
        if dash
        else ""
    )
    counts = ", ".join(f"{n} {kind_}" for kind_, n in edge.types.items())
    tooltip = (
        f"{titles.get(edge.first) or edge.first} — {titles.get(edge.second) or edge.second}: "
        f"{counts}"
    )
    types = " ".join(f"{kind_}:{n}" for kind_, n in edge.types.items())
    return (
        f'<path class="edge {_attr(kind)}" data-source="{_attr(edge.first)}" '
        f'data-target="{_attr(edge.second)}" data-count="{edge.count}" '
        f'data-types="{_attr(types)}" d="M {_n(x0)} {_n(y0)} Q {_n(cx)} {_n(cy)} '
        f'{_n(x1)} {_n(y1)}" stroke="{TYPE_COLOURS.get(kind, _OTHER_COLOUR)}" '
        f'stroke-width="{_n(width)}"{dashes} stroke-opacity="0.85">'
        f"<title>{escape(tooltip)}</title></path>"
    )


def _citation(
    arrow: CitationArrow, where: Mapping[str, tuple[float, float]], titles: Mapping[str, str]
) -> str:
    """A citation: a curve from the citing paper's node to the cited one's, bowed to its right,
    its arrowhead touching the cited node."""
    (x0, y0), (x1, y1) = where[arrow.citing], where[arrow.cited]
    cx = (x0 + x1) / 2 - (y1 - y0) * _CITE_BOW
    cy = (y0 + y1) / 2 + (x1 - x0) * _CITE_BOW
    # Each end leaves its node's rim along the curve's tangent there.
    start_x, start_y = _towards(x0, y0, cx, cy, _NODE_R)
    ux, uy = _unit(x1 - cx, y1 - cy)
    tip_x, tip_y = x1 - ux * (_NODE_R + 1), y1 - uy * (_NODE_R + 1)
    base_x, base_y = tip_x - ux * _ARROW_LENGTH, tip_y - uy * _ARROW_LENGTH
    head = _arrowhead(tip_x, tip_y, ux, uy)
    tooltip = (
        f"{titles.get(arrow.citing) or arrow.citing} cites "
        f"{titles.get(arrow.cited) or arrow.cited}: {', '.join(arrow.types)}"
    )
    return (
        f'<g class="citation" data-citing="{_attr(arrow.citing)}" '
        f'data-cited="{_attr(arrow.cited)}" data-types="{_attr(" ".join(arrow.types))}">'
        f"<title>{escape(tooltip)}</title>"
        f'<path d="M {_n(start_x)} {_n(start_y)} Q {_n(cx)} {_n(cy)} {_n(base_x)} {_n(base_y)}" '
        f'stroke="{_CITE_COLOUR}" stroke-width="{_CITE_WIDTH}"/>'
        f'<polygon class="arrow" points="{head}" fill="{_CITE_COLOUR}"/></g>'
    )


def _unit(dx: float, dy: float) -> tuple[float, float]:
    length = math.hypot(dx, dy) or 1.0
    return dx / length, dy / length


def _towards(x: float, y: float, to_x: float, to_y: float, distance: float) -> tuple[float, float]:
    ux, uy = _unit(to_x - x, to_y - y)
    return x + ux * distance, y + uy * distance


def _arrowhead(tip_x: float, tip_y: float, ux: float, uy: float) -> str:
    """The points of an arrowhead whose tip is at (tip_x, tip_y), pointing along (ux, uy)."""
    base_x, base_y = tip_x - ux * _ARROW_LENGTH, tip_y - uy * _ARROW_LENGTH
    # Perpendicular to the direction, half the head's width each side.
    px, py = -uy * _ARROW_HALF_WIDTH, ux * _ARROW_HALF_WIDTH
    return " ".join(
        f"{_n(x)},{_n(y)}"
        for x, y in ((tip_x, tip_y), (base_x + px, base_y + py), (base_x - px, base_y - py))
    )


def _node(
    node: _Node,
    at: tuple[float, float],
    titles: Mapping[str, str],
    degree: int,
    neighbours: Mapping[str, set[str]],
    radial: bool,
) -> str:
    x, y = at
    title = " ".join((titles.get(node.paper) or node.paper).split())
    related = len(neighbours[node.paper])
    tooltip = (
        f"{title} ({node.paper}): {counted(degree, 'relationship')} with "
        f"{counted(related, 'paper')}"
        if degree
        else f"{title} ({node.paper}): no relationship with another paper"
    )
    isolated = "" if degree else " isolated"
    fill, stroke = ("white", "#777777") if not degree else ("#444444", "white")
    label = escape(node.label)
    if radial:
        degrees = math.degrees(node.angle)
        reach = _NODE_R + _LABEL_GAP
        lx, ly = x + reach * math.cos(node.angle), y + reach * math.sin(node.angle)
        # On the left half the text would read upside down: turn it and anchor it at its end.
        flip = math.cos(node.angle) < -1e-9
        rotation, anchor = (degrees + 180, "end") if flip else (degrees, "start")
        text = (
            f'<text x="{_n(lx)}" y="{_n(ly)}" dy="0.35em" text-anchor="{anchor}" '
            f'transform="rotate({_n(rotation)} {_n(lx)} {_n(ly)})">{label}</text>'
        )
    else:
        lx, ly, anchor = _horizontal_label(_Node(node.paper, x, y, node.angle, node.label))
        text = f'<text x="{_n(lx)}" y="{_n(ly)}" text-anchor="{anchor}">{label}</text>'
    return (
        f'<g class="node{isolated}" data-paper="{_attr(node.paper)}" data-relationships="{degree}">'
        f"<title>{escape(tooltip)}</title>"
        f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_NODE_R}" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="1.5"/>{text}</g>'
    )


def _legend(items: list[tuple[str, float]], width: int, top: float, cites: bool) -> str:
    total = sum(item_width for _, item_width in items)
    x = (width - total) / 2
    y = top + _LEGEND_ROW / 2
    parts = ['<g class="legend">']
    for kind, item_width in items:
        dash = TYPE_DASHES[kind]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<g class="legend-item {kind}"><line x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x + 24)}" '
            f'y2="{_n(y)}" stroke="{TYPE_COLOURS[kind]}" stroke-width="3"{dashes}/>'
            f'<text x="{_n(x + 30)}" y="{_n(y + _FONT * 0.35)}">{kind}</text></g>'
        )
        x += item_width
    if cites:
        y += _LEGEND_ROW
        x = (width - 30 - _text_width(CITES_LEGEND)) / 2
        parts.append(
            f'<g class="legend-item cites"><line x1="{_n(x)}" y1="{_n(y)}" '
            f'x2="{_n(x + 24 - _ARROW_LENGTH)}" y2="{_n(y)}" stroke="{_CITE_COLOUR}" '
            f'stroke-width="{_CITE_WIDTH}"/><polygon points="{_arrowhead(x + 24, y, 1.0, 0.0)}" '
            f'fill="{_CITE_COLOUR}"/><text x="{_n(x + 30)}" y="{_n(y + _FONT * 0.35)}">'
            f"{escape(CITES_LEGEND)}</text></g>"
        )
    parts.append(
        f'<text x="{_n(width / 2)}" y="{_n(y + _LEGEND_ROW + _FONT * 0.35)}" '
        'text-anchor="middle" fill="#555555">Line width: relationships between two papers; '
        "colour and dashes: their most frequent type.</text>"
    )
    parts.append("</g>")
    return "".join(parts)


# The bar chart's canvas: a column of type names, the bars, then each bar's count and share.
_BAR_WIDTH = 640
_BAR_LABELS = 110
_BAR_COUNTS = 90
_BAR_ROW = 26
_BAR_TOP = 40


def type_distribution_svg(
    distribution: Mapping[str, int], title: str = "Relationship types"
) -> str:
    """A horizontal bar chart: one bar per type, in the order given (the analysis lists every
    type), each labelled with its count and share, coloured as in the relationship graph."""
    rows = list(distribution.items())
    total = sum(distribution.values())
    most = max((count for _, count in rows), default=0)
    plot = _BAR_WIDTH - _MARGIN - _BAR_LABELS - _BAR_COUNTS
    height = _BAR_TOP + _BAR_ROW * max(len(rows), 1) + _MARGIN
    label = f"{title}: " + (
        ", ".join(f"{count} {kind}" for kind, count in rows) if rows else "none"
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_BAR_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_BAR_WIDTH} {height}" role="img" aria-label="{_attr(label)}" '
        f'font-family="sans-serif" font-size="12">',
        f"<title>{escape(label)}</title>",
        f'<rect width="{_BAR_WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{_n(_BAR_WIDTH / 2)}" y="22" text-anchor="middle" font-size="14">'
        f"{escape(title)} ({counted(total, 'relationship')})</text>",
    ]
    left = _MARGIN + _BAR_LABELS
    for row, (kind, count) in enumerate(rows):
        y = _BAR_TOP + row * _BAR_ROW
        length = plot * count / most if most else 0.0
        share = f"{count / total:.0%}" if total else "-"
        parts.append(
            f'<g class="bar {_attr(kind)}" data-type="{_attr(kind)}" data-count="{count}">'
            f"<title>{escape(kind)}: {count} of {total} relationships ({share})</title>"
            f'<text x="{left - 8}" y="{_n(y + _BAR_ROW / 2 + 4)}" text-anchor="end">'
            f"{escape(kind)}</text>"
            f'<rect x="{left}" y="{_n(y + 4)}" width="{_n(length)}" height="{_BAR_ROW - 8}" '
            f'fill="{TYPE_COLOURS.get(kind, _OTHER_COLOUR)}"/>'
            f'<text class="count" x="{_n(left + length + 6)}" y="{_n(y + _BAR_ROW / 2 + 4)}">'
            f"{count} ({share})</text></g>"
        )
    parts.append(
        f'<line x1="{left}" y1="{_BAR_TOP}" x2="{left}" '
        f'y2="{_BAR_TOP + _BAR_ROW * max(len(rows), 1)}" stroke="black"/>'
    )
    if not rows:
        parts.append(
            f'<text x="{_n(left + plot / 2)}" y="{_BAR_TOP + 17}" text-anchor="middle">'
            "no relationship types</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def analysis_figures(analysis: RelationshipAnalysis, titles: Mapping[str, str]) -> dict[str, str]:
    """Both pictures of an analysis, by the file name they are written under."""
    return {
        GRAPH_FILE: relationship_graph_svg(
            analysis.papers,
            titles,
            analysis.insights,
            analysis.relationships,
            analysis.cited_relationships,
        ),
        TYPES_FILE: type_distribution_svg(analysis.type_distribution),
    }


def svg_data_uri(svg: str) -> str:
    """The picture as a `data:` URI, which Markdown can show where no file can be linked."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def markdown_image(alt: str, svg: str) -> str:
    """A Markdown image embedding the picture itself (a data URI), not a link to a file."""
    return f"![{_markdown_alt(alt)}]({svg_data_uri(svg)})"


def _markdown_alt(alt: str) -> str:
    # Brackets would end the alternative text early; a newline would end the image.
    return " ".join(alt.split()).replace("[", "(").replace("]", ")")


def type_distribution_markdown(distribution: Mapping[str, int]) -> str:
    """The distribution as a Markdown table: what the bar chart shows, readable as text."""
    total = sum(distribution.values())
    rows = [
        f"| {kind} | {count} | {f'{count / total:.0%}' if total else '-'} |"
        for kind, count in distribution.items()
    ]
    return "\n".join(["| type | relationships | share |", "|---|---:|---:|", *rows])
