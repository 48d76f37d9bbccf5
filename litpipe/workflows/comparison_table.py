"""A collection's comparison table: its papers as rows, its aspects as columns, every cell a
short value citing the passage of its own paper it came from, or "not reported".

    aspects, engine = comparison_aspects("crispr", abstracts, answers, comparison, asker)
    search = aspect_search(retrievers[paper_id], reranker, paper_id, comparison, retrieval)
    rows = comparison_rows([row_input(paper_id, title, search, aspects, comparison)], asker)
    table = comparison_table("crispr", rows, aspects, engine)

The aspects come first (ArxivDIGESTables' recipe: a schema from the papers, then values): the
ones `comparison.aspects` fixes, else the `comparison_aspects` agent's (offline: the fixed six).
Then each row is written from its own paper's passages alone, retrieved per aspect by the
hybrid retriever over that paper (`aspect_search`), in one `comparison_cells` call per paper:
a row depends on (the paper's passages, the aspects, the agent) and nothing else, so a new
paper's row is the only one asked, the LLM cache answering every other, and a caller may keep
the rows of unchanged papers as they are. New aspects make every row new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from litpipe.agents.asker import Asker
from litpipe.agents.comparison_table.comparison_aspects import (
    ComparisonAspectsAgent,
    proposed_aspects,
)
from litpipe.agents.comparison_table.comparison_cells import comparison_rows
from litpipe.extractive.comparison_table import (
    AspectPassages,
    AspectsInput,
    AspectsPaper,
    CellsInput,
    aspect_query,
    in_aspect_sections_first,
)
from litpipe.schemas import ComparisonRow, ComparisonTable, PaperAbstract, PaperAnswers
from litpipe.settings import ComparisonSettings, RetrievalSettings
from litpipe.text import strip_markers
from litpipe.workflows.query_summary import Search, paper_search

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker

# Every agent of the table: a step building it needs a model client if either is routed to one.
COMPARISON_AGENTS = ("comparison_aspects", "comparison_cells")
# The engine a table records for aspects the settings fixed.
FIXED_BY_SETTINGS = "settings"


def comparison_aspects(
    collection: str,
    abstracts: Sequence[PaperAbstract],
    answers: Mapping[str, PaperAnswers],
    comparison: ComparisonSettings,
    asker: Asker,
) -> tuple[list[str], str]:
    """The table's aspects and what chose them: `comparison.aspects` where set (`settings`),
    else the `comparison_aspects` agent's from the papers' titles, abstracts and answers
    (offline: the fixed six), at most `comparison.max_aspects`."""
    if comparison.aspects:
        return list(comparison.aspects), FIXED_BY_SETTINGS
    papers = [
        AspectsPaper(
            paper_id=abstract.paper_id,
            title=abstract.title,
            abstract=abstract.abstract,
            answers=[
                f"Q: {answer.question.text} A: {strip_markers(answer.text)}"
                for answer in (
                    answers[abstract.paper_id].answers if abstract.paper_id in answers else []
                )
            ],
        )
        for abstract in abstracts
    ]
    inputs = AspectsInput(collection=collection, papers=papers, max_aspects=comparison.max_aspects)
    return proposed_aspects(inputs, asker), asker.engine(ComparisonAspectsAgent.name)


def aspect_search(
    retriever: HybridRetriever,
    reranker: Reranker,
    paper_id: str,
    comparison: ComparisonSettings,
    retrieval: RetrievalSettings,
) -> Search:
    """Search of the paper's own chunks as `question_evidence` does it (hybrid candidates, MMR,
    the reranker), the reranked shortlist kept whole (`retrieval.rerank_candidates`, at least
    `comparison.passages_per_aspect`): `row_input` picks each aspect's passages from it."""
    shortlist = max(retrieval.rerank_candidates, comparison.passages_per_aspect)
    kept = retrieval.model_copy(update={"evidence_per_question": shortlist})
    return paper_search(retriever, reranker, paper_id, kept)


def row_input(
    paper_id: str,
    title: str,
    search: Search,
    aspects: Sequence[str],
    comparison: ComparisonSettings,
) -> CellsInput:
    """What the paper's row is written from: for each aspect, the best
    `comparison.passages_per_aspect` of the passages `search` finds over this paper alone for
    the aspect's query (`aspect_query`), those of the sections stating the aspect first
    (`in_aspect_sections_first`)."""
    return CellsInput(
        paper_id=paper_id,
        title=title,
        aspects=[
            AspectPassages(
                aspect=aspect,
                passages=in_aspect_sections_first(aspect, search(aspect_query(aspect)))[
                    : comparison.passages_per_aspect
                ],
            )
            for aspect in aspects
        ],
        cell_words=comparison.cell_words,
    )


def comparison_row(
    paper_id: str,
    title: str,
    retriever: HybridRetriever,
    reranker: Reranker,
    aspects: Sequence[str],
    comparison: ComparisonSettings,
    retrieval: RetrievalSettings,
    asker: Asker,
) -> ComparisonRow:
    """One paper's row: its passages per aspect (`aspect_search`), its cells in one call."""
    search = aspect_search(retriever, reranker, paper_id, comparison, retrieval)
    (row,) = comparison_rows([row_input(paper_id, title, search, aspects, comparison)], asker)
    return row


def comparison_table(
    collection: str, rows: Sequence[ComparisonRow], aspects: Sequence[str], aspects_engine: str
) -> ComparisonTable:
    """The table of `rows`, in their order. A ValueError names a row whose cells are not the
    aspects' (a row kept from a table of other aspects)."""
    for row in rows:
        if [cell.aspect for cell in row.cells] != list(aspects):
            raise ValueError(
                f"comparison table of {collection}: the row of {row.paper_id} has cells for "
                f"{[cell.aspect for cell in row.cells]}, not for the aspects {list(aspects)}"
            )
    return ComparisonTable(
        collection=collection, aspects=list(aspects), aspects_engine=aspects_engine, rows=list(rows)
    )
