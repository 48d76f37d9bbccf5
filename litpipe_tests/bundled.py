"""The bundled biology papers, what we know to be true of them, and the bad PDFs users bring."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pymupdf

from litpipe.ingest.pdf import parse_pdf
from litpipe.schemas import PaperDocument

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "biology-cc-by"
# Titles, abstracts, DOIs and other facts read off the nine PDFs by hand.
TRUTH = json.loads((Path(__file__).parent / "data" / "pdf_truth.json").read_text("utf-8"))
PAPERS: list[dict] = TRUTH["papers"]
PDFS_BY_SIZE = sorted(CORPUS.glob("*.pdf"), key=lambda path: path.stat().st_size)
# The xdist group of the modules that read conftest's `bundled_pdfs_home`: one worker builds it.
BUNDLED_PDFS_GROUP = "bundled_pdfs_home"
# The xdist group of the modules that read `bundled_document`: one worker parses each PDF once.
BUNDLED_DOCUMENTS_GROUP = "bundled_documents"


@cache
def bundled_document(stem: str) -> PaperDocument:
    """A bundled PDF (`corpora/biology-cc-by/<stem>.pdf`) parsed once a process, its paper id
    the stem: read, never changed, by the modules of BUNDLED_DOCUMENTS_GROUP."""
    return parse_pdf(CORPUS / f"{stem}.pdf", stem)


def pdf_with_pages(path: Path, pages: list[str]) -> Path:
    """A PDF with a text layer, one page per text."""
    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=10)
    doc.save(path)
    return path


def short_paper(folder: Path, number: int) -> Path:
    """A one-page paper with its title, its own DOI and findings, `folder/short-<number>.pdf`:
    a paper in milliseconds, where a bundled one costs seconds of parsing, embedding and
    synthesis that a test may not be about."""
    organism, process = [("yeast", "fermentation"), ("fly", "DNA repair"), ("worm", "ageing")][
        number % 3
    ]
    body = (
        f"Journal of Tests 2024, https://doi.org/10.5555/short.{number}\n\n"
        f"Abstract. We study how gene {number} shapes {process} in {organism}. "
        f"Knocking out gene {number} slowed {process} by half in three independent strains. "
        f"Restoring gene {number} on a plasmid rescued {process} fully.\n\n"
        f"Results. Across 12 replicate cultures of {organism}, the knockout grew 40 percent "
        f"slower during {process}, and its protein levels fell by a third. "
        f"We conclude that gene {number} is required for normal {process} in {organism}."
    )
    doc = pymupdf.open()
    page = doc.new_page()
    title = f"The role of gene {number} in {organism} {process}"
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 120), title, fontsize=18)
    page.insert_textbox(pymupdf.Rect(72, 140, 540, 720), body, fontsize=10)
    path = folder / f"short-{number}.pdf"
    doc.save(path)
    return path


def write_bad_pdfs(folder: Path) -> dict[str, tuple[Path, str]]:
    """Files named .pdf that cannot be ingested → (path, how the one-line reason starts).

    Some print a DOI: an id must never come from a file that cannot be read.
    """
    empty = folder / "empty.pdf"
    empty.write_bytes(b"")
    html = folder / "page.pdf"
    html.write_text("<html><body>doi:10.1234/not.a.pdf</body></html>")
    truncated = folder / "truncated.pdf"
    truncated.write_bytes((CORPUS / PAPERS[0]["file"]).read_bytes()[:2000])
    encrypted = folder / "encrypted.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "https://doi.org/10.5555/secret.1 A secret paper " * 5)
    doc.save(encrypted, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="x", owner_pw="y")
    drawn = folder / "drawn.pdf"
    doc = pymupdf.open()
    doc.new_page().draw_rect(pymupdf.Rect(50, 50, 300, 300), color=(0, 0, 0), fill=(1, 0, 0))
    doc.save(drawn)
    scanned = folder / "scanned.pdf"
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pixmap.clear_with(200)
    doc = pymupdf.open()
    doc.new_page().insert_image(pymupdf.Rect(50, 50, 500, 700), pixmap=pixmap)
    doc.save(scanned)
    return {
        "empty": (empty, "empty file"),
        "html": (html, "not a PDF (starts with b'<html>"),
        "truncated": (truncated, "corrupt PDF"),
        "encrypted": (encrypted, "encrypted PDF (needs a password)"),
        "drawn": (drawn, "no text layer"),
        "scanned": (scanned, "no text layer (scanned pages? run OCR first)"),
    }
