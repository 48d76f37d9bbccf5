"""The offline comparison table of the nine bundled biology papers (issue 47, point 2).

The papers are parsed, chunked and embedded (packaged MiniLM, offline defaults) into a fresh
home, as `paper_chunks` and `chunk_embeddings` do; then the table is built as its asset will
build it: the fixed six aspects, each paper's row from its own passages (the hybrid retriever
over that paper, no reranker, `comparison.passages_per_aspect` per aspect), and every filled
cell graded by the support check with the embedder (the calibrated cosine against
`grading.support_threshold`). Ingestion is timed apart.

With `--gold DIR` (`litpipe_tests/data/comparison_eval`, or another hand-checked table in its
format), the table is scored against it (`evaluation/comparison_gold.py`): cell accuracy overall
and per aspect, the filled cells' precision and recall, agreement on "not reported", the support
verdicts crossed with correctness, and every wrong cell named with why.

Printed: per aspect, the papers whose cell is filled (the rest "not reported"); the filled
cells' words (mean, most) and how many were cut; the support check's supported share; the
table's time per paper. A filled offline cell is the paper's own words, so the check should
pass them all: a flagged one says the grader and the cut disagree.

Usage: python benchmarks/comparison_table.py [--cell-words 20] [--passages 3]
       [--home DIR] [--gold DIR]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

for variable, value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
):
    os.environ.setdefault(variable, value)

from litpipe.agents.asker import Asker  # noqa: E402
from litpipe.agents.comparison_table.comparison_cells import comparison_rows  # noqa: E402
from litpipe.evaluation.comparison_gold import GoldScores, read_gold, score_table  # noqa: E402
from litpipe.evaluation.comparison_table import cells_support, graded_cells  # noqa: E402
from litpipe.extractive.related_work import count_words  # noqa: E402
from litpipe.ingest.pdf import parse_pdf  # noqa: E402
from litpipe.retrieval.hybrid import paper_retrievers  # noqa: E402
from litpipe.retrieval.rerank import NoReranker  # noqa: E402
from litpipe.retrieval.store import ChunkStore  # noqa: E402
from litpipe.settings import ComparisonSettings, LLMSettings, Settings  # noqa: E402
from litpipe.workflows.comparison_table import (  # noqa: E402
    FIXED_BY_SETTINGS,
    aspect_search,
    comparison_aspects,
    comparison_table,
    row_input,
)
from litpipe.workflows.ingest import chunk_paper, settings_embedder  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "biology-cc-by"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = ComparisonSettings()
    parser.add_argument("--cell-words", type=int, default=defaults.cell_words)
    parser.add_argument("--passages", type=int, default=defaults.passages_per_aspect)
    parser.add_argument(
        "--home",
        type=Path,
        help="a home to keep (and reuse) the papers' chunks in; default: a fresh temporary one",
    )
    parser.add_argument(
        "--gold",
        type=Path,
        help="a folder holding a hand-checked gold.jsonl to score the table against",
    )
    args = parser.parse_args()
    gold = read_gold(args.gold) if args.gold else None
    with tempfile.TemporaryDirectory() as fresh:
        home = args.home or Path(fresh)
        settings = Settings(
            home=Path(home),
            corpus_roots=[],
            llm=LLMSettings(model=None),
            comparison=ComparisonSettings(
                cell_words=args.cell_words, passages_per_aspect=args.passages
            ),
        )
        started = time.perf_counter()
        embedder = settings_embedder(settings.ingest, settings.paths)
        documents = [
            parse_pdf(pdf, pdf.stem, tables=settings.ingest.pdf_tables)
            for pdf in sorted(CORPUS.glob("*.pdf"))
        ]
        chunks = [
            chunk_paper(
                document,
                embedder,
                settings.ingest.chunk_tokens,
                settings.ingest.chunk_overlap_tokens,
            )
            for document in documents
        ]
        store = ChunkStore(settings.paths.lancedb_dir)
        if store.count_rows(embedder.embedder_id) == 0:
            store.embed_papers(chunks, embedder)
        ingest_s = time.perf_counter() - started

        started = time.perf_counter()
        papers = [document.paper_id for document in documents]
        titles = {document.paper_id: document.title for document in documents}
        retrievers = paper_retrievers(
            store,
            embedder,
            papers,
            rrf_k=settings.retrieval.rrf_k,
            mmr_lambda=settings.retrieval.mmr_lambda,
        )
        asker = Asker(settings.llm)
        aspects, engine = comparison_aspects("biology-cc-by", [], {}, settings.comparison, asker)
        inputs = [
            row_input(
                paper,
                titles[paper],
                aspect_search(
                    retrievers[paper],
                    NoReranker(),
                    paper,
                    settings.comparison,
                    settings.retrieval,
                ),
                aspects,
                settings.comparison,
            )
            for paper in papers
        ]
        table = comparison_table("biology-cc-by", comparison_rows(inputs, asker), aspects, engine)
        table_s = time.perf_counter() - started
        graded = graded_cells(table, settings.grading, asker, embedder)
        outcome = cells_support(graded, "offline")

    assert engine != FIXED_BY_SETTINGS
    filled = {
        aspect: sum(not row.cells[index].not_reported for row in table.rows)
        for index, aspect in enumerate(aspects)
    }
    words = [
        count_words(cell.value) for row in table.rows for cell in row.cells if not cell.not_reported
    ]
    cut = sum("…" in cell.value for row in table.rows for cell in row.cells)
    figures = {
        "papers": len(papers),
        "aspects": aspects,
        "cell_words": args.cell_words,
        "passages_per_aspect": args.passages,
        "filled_by_aspect": filled,
        "filled": sum(filled.values()),
        "cells": len(papers) * len(aspects),
        "mean_words": round(sum(words) / len(words), 2) if words else 0,
        "most_words": max(words, default=0),
        "cut": cut,
        "supported": outcome.metadata["supported_cells"],
        "flagged": outcome.metadata["flagged"],
        "table_s_per_paper": round(table_s / len(papers), 3),
        "ingest_s": round(ingest_s, 1),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
    }
    for aspect, count in filled.items():
        print(f"{aspect:>12}: {count} of {len(papers)} papers filled")
    print(
        f"filled {figures['filled']} of {figures['cells']} cells; words mean "
        f"{figures['mean_words']}, most {figures['most_words']}; cut {cut}; supported "
        f"{figures['supported']} of {figures['filled']}; {figures['table_s_per_paper']} s per "
        f"paper (ingest {figures['ingest_s']} s)"
    )
    for row in graded.rows:
        for cell in row.cells:
            print(f"  {row.paper_id[:28]:<28} {cell.aspect:>12}: {cell.value}")
    if gold is not None:
        figures["gold"] = gold_figures(score_table(graded, gold))
    print(json.dumps(figures))


def gold_figures(scores: GoldScores) -> dict[str, object]:
    """Prints the scores against the gold, each wrong cell with why, and returns their figures."""
    overall = scores.overall
    print(
        f"against the gold: {overall.correct} of {overall.cells} cells right; filled cells "
        f"precision {overall.filled.precision}, recall {overall.filled.recall}"
    )
    for aspect, aspect_scores in scores.by_aspect.items():
        print(f"{aspect:>12}: {aspect_scores.correct} of {aspect_scores.cells} right")
    agreement = scores.not_reported
    print(
        f"silent in the paper: {agreement.silent}, left 'not reported' {agreement.silent_left}, "
        f"filled {agreement.silent_filled}; stated but left empty: {agreement.stated_left}"
    )
    cross = scores.support_by_correctness
    print(
        f"support verdicts {scores.support}; supported: {cross.correct_supported} of "
        f"{cross.correct} right cells, {cross.incorrect_supported} of {cross.incorrect} wrong ones"
    )
    for wrong in scores.wrong:
        print(
            f"  wrong ({wrong.reason}) {wrong.paper_id[:28]} {wrong.aspect}: {wrong.value!r} "
            f"cites pp. {wrong.cited_pages}; gold pp. {wrong.gold_pages}: {wrong.gold_value!r}"
        )
    return scores.model_dump(exclude={"wrong"}) | {
        "wrong_by_reason": dict(Counter(wrong.reason for wrong in scores.wrong))
    }


if __name__ == "__main__":
    main()
