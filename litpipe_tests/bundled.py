"""The bundled biology papers, what we know to be true of them, and the bad PDFs users bring."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "biology-cc-by"
# Titles, abstracts, DOIs and other facts read off the nine PDFs by hand.
TRUTH = json.loads((Path(__file__).parent / "data" / "pdf_truth.json").read_text("utf-8"))
PAPERS: list[dict] = TRUTH["papers"]
PDFS_BY_SIZE = sorted(CORPUS.glob("*.pdf"), key=lambda path: path.stat().st_size)


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
