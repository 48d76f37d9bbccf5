"""What the Dagster UI shows of a collection's relationship analysis: a Markdown preview and the
two pictures (the relationship graph, the type distribution), as asset metadata.

The pictures are Markdown metadata embedding the SVG as a base64 `data:` URI. The UI renders
Markdown metadata with react-markdown 8 and rehype-sanitize, configured to allow `data:` image
sources (dagster-webserver 1.13.27, `ui-core/src/ui/MarkdownWithPlugins.tsx`; react-markdown 8
leaves image URLs alone unless told otherwise, and the webserver's Content-Security-Policy sets no
`img-src`), so the picture itself shows under the asset's metadata, behind "[Show Markdown]"
when longer than 1,000 characters. A `MetadataValue.path` is shown only as a path to copy, so
the written files' paths stay as they were, next to the pictures. Each chart's Markdown also
holds the counts as a table: what the chart says stays readable where an image is not shown.

Every Markdown entry litpipe adds is made by `markdown_metadata`, which escapes the raw HTML and
drops the `javascript:` links that paper text could carry into the UI.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from litpipe.report import notices
from litpipe.report.graphs import (
    FIGURES,
    GRAPH_FILE,
    TYPES_FILE,
    analysis_figures,
    markdown_image,
    paper_edges,
    type_distribution_markdown,
)
from litpipe.report.markdown import safe_markdown
from litpipe.schemas import RelationshipAnalysis, Synthesis
from litpipe.text import counted


def markdown_metadata(markdown: str) -> dg.MetadataValue:
    """Markdown metadata that shows paper and model text as text (`safe_markdown`)."""
    return dg.MetadataValue.md(safe_markdown(markdown))


def analysis_plots(
    analysis: RelationshipAnalysis, titles: Mapping[str, str]
) -> dict[str, dg.MetadataValue]:
    """The relationship graph and the type chart, each a Markdown entry showing the picture."""
    figures = analysis_figures(analysis, titles)
    return {
        "relationship_graph": markdown_metadata(
            markdown_image(FIGURES[GRAPH_FILE], figures[GRAPH_FILE])
        ),
        "relationship_types_chart": markdown_metadata(
            markdown_image(FIGURES[TYPES_FILE], figures[TYPES_FILE])
            + "\n\n"
            + type_distribution_markdown(analysis.type_distribution)
        ),
    }


def analysis_preview(analysis: RelationshipAnalysis) -> dg.MetadataValue:
    """The analysis in brief: theme, narrative, what was found, and the type distribution."""
    pairs = len(paper_edges(analysis.papers, analysis.insights, analysis.relationships))
    return markdown_metadata(
        "\n\n".join(
            [
                f"# {analysis.theme}",
                analysis.narrative,
                f"{counted(len(analysis.papers), 'paper')}, "
                f"{counted(len(analysis.insights), 'insight')}, "
                f"{counted(len(analysis.relationships), 'relationship')} between "
                f"{counted(pairs, 'pair')} of papers.",
                type_distribution_markdown(analysis.type_distribution),
            ]
        )
    )


def outputs_preview(
    synthesis: Synthesis, analysis: RelationshipAnalysis, files: Mapping[str, str]
) -> dg.MetadataValue:
    """What the collection's files hold, in brief: the synthesis' title, its offline notice if
    any, the theme and narrative of the analysis, and where each file lies."""
    listed = [f"- `{name}`: `{path}`" for name, path in files.items()]
    notice = notices.markdown_lines(notices.synthesis_notice(synthesis, analysis))
    return markdown_metadata(
        "\n\n".join(
            [
                "\n".join([f"# {synthesis.title}", "", *notice]).rstrip(),
                f"**Theme:** {analysis.theme}",
                analysis.narrative,
                "\n".join(["Files:", "", *listed]),
            ]
        )
    )
