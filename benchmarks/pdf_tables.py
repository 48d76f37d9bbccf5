"""Tables at ingestion, on the bundled PDFs: the tables `parse_pdf` finds in each paper against
those counted by hand (`litpipe_tests/data/pdf_tables.json`), and the time tables add to parsing.

Parsing with tables and without them (`parse_pdf(..., tables=)`, the `ingest.pdf_tables`
setting) runs paper by paper, one side right after the other, the first side rotating, so a
load that comes and goes weighs on both alike; times are medians over the rounds, per page of
the whole corpus. The same rounds time parsing and chunking (as `benchmarks/ingest.py` does,
with the default embedder's tokenizer), with and without tables, against raw `get_text`:
`ingest.py`'s ratio, whose target is 5x. Also timed once: the finder (`Page.find_tables`) on a
page with no table caption, which the caption gate spares, to say what running it on every
page would cost.

Usage: python benchmarks/pdf_tables.py [--pdfs DIR] [--repeat N]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pymupdf

# The sibling benchmarks' helpers (this folder is first on sys.path).
from ingest import paired, parse_and_chunk, pdf_arguments, raw_pymupdf_text

from litpipe.ingest.pdf import parse_pdf
from litpipe.ingest.pdf.tables import _TABLE_CAPTION_LINE
from litpipe.retrieval.embedder import Embedder
from litpipe.settings import DEFAULT_EMBEDDER, IngestSettings

ROOT = Path(__file__).resolve().parents[1]
COUNTED = ROOT / "litpipe_tests" / "data" / "pdf_tables.json"


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text("utf-8").splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def uncaptioned_finder_seconds(paths: list[Path]) -> tuple[float, int]:
    """The finder's time on the first page of each PDF that sets no table caption."""
    spent, pages = 0.0, 0
    for path in paths:
        with pymupdf.open(path) as doc:
            for page in doc:
                lines = page.get_text().splitlines()
                if not any(_TABLE_CAPTION_LINE.match(line.strip()) for line in lines):
                    started = time.perf_counter()
                    page.find_tables()
                    spent += time.perf_counter() - started
                    pages += 1
                    break
    return spent, pages


def main(argv: list[str] | None = None) -> int:
    args, pdfs = pdf_arguments(__doc__, argv)
    counted = json.loads(COUNTED.read_text("utf-8"))["papers"]
    print(f"{len(pdfs)} PDFs from {args.pdfs}; {args.repeat} timed rounds; CPU: {cpu_name()}")

    papers = {}
    pages = 0
    for path in pdfs:  # also the warm-up: the layout model loads on the first table page
        document = parse_pdf(path, path.stem, tables=True)
        pages += document.pages
        found = [{"page": table.page, "label": table.label} for table in document.tables]
        hand = counted.get(path.stem)
        papers[path.stem] = {
            "pages": document.pages,
            "found": len(found),
            "counted": None if hand is None else len(hand),
            "same_tables": found == hand,
            "captions": len(document.captions),
        }
        print(
            f"{path.stem}: {len(found)} tables found, {papers[path.stem]['counted']} counted "
            f"by hand, {'the same' if found == hand else 'NOT the same'} (pages and labels); "
            f"{len(document.captions)} captions"
        )
    embedder = Embedder(DEFAULT_EMBEDDER)
    overlap = IngestSettings().chunk_overlap_tokens

    def parse(tables: bool) -> Callable[[Path], object]:
        return lambda path: parse_pdf(path, path.stem, tables=tables)

    def parse_chunk(tables: bool) -> Callable[[Path], object]:
        return lambda path: parse_and_chunk(path, embedder, overlap, tables)

    for path in pdfs:
        parse_chunk(True)(path)
        raw_pymupdf_text(path)
    medians = paired(
        pdfs,
        lambda _: {
            "with": parse(True),
            "without": parse(False),
            "chunked_with": parse_chunk(True),
            "chunked_without": parse_chunk(False),
            "raw": raw_pymupdf_text,
        },
        args.repeat,
    )
    with_s, without_s, raw_s = medians["with"], medians["without"], medians["raw"]
    chunked_with_s, chunked_without_s = medians["chunked_with"], medians["chunked_without"]
    print(
        f"parse+chunk against raw get_text: {chunked_with_s / raw_s:.2f}x with tables, "
        f"{chunked_without_s / raw_s:.2f}x without (benchmarks/ingest.py's target: 5x)"
    )
    finder_s, finder_pages = uncaptioned_finder_seconds(pdfs)
    print(
        f"parse with tables: {1000 * with_s / pages:.1f} ms/page, without: "
        f"{1000 * without_s / pages:.1f} ms/page ({pages} pages): time ratio "
        f"{with_s / without_s:.2f}x, {1000 * (with_s - without_s) / pages:.1f} ms added a page"
    )
    print(
        f"the finder on {finder_pages} pages without a table caption (which it skips): "
        f"{finder_s / finder_pages:.2f} s a page"
    )
    found_total = sum(paper["found"] for paper in papers.values())
    counted_total = sum(paper["counted"] or 0 for paper in papers.values())
    print(
        json.dumps(
            {
                "benchmark": "pdf_tables",
                "pdfs": len(pdfs),
                "pages": pages,
                "repeat": args.repeat,
                "tables_found": found_total,
                "tables_counted": counted_total,
                "papers_with_the_counted_tables": sum(p["same_tables"] for p in papers.values()),
                "papers": papers,
                "parse_with_tables_ms_per_page": round(1000 * with_s / pages, 2),
                "parse_without_tables_ms_per_page": round(1000 * without_s / pages, 2),
                "tables_time_ratio": round(with_s / without_s, 3),
                "tables_added_ms_per_page": round(1000 * (with_s - without_s) / pages, 2),
                "parse_chunk_time_ratio_with_tables": round(chunked_with_s / raw_s, 3),
                "parse_chunk_time_ratio_without_tables": round(chunked_without_s / raw_s, 3),
                "parse_chunk_target_max_ratio": 5.0,
                "finder_s_per_uncaptioned_page": round(finder_s / finder_pages, 3),
                "cpu": cpu_name(),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "pymupdf": pymupdf.__version__,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
