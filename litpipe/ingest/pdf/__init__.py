"""PDF → `PaperDocument`: clean body text, sections, pages and references.

One `page.get_text("dict")` per page gives every text line with its box, font and size;
everything after that is plain Python over those lines (but for PyMuPDF's table finder, on the
few pages that set a table's caption), so parsing costs about twice what reading the plain text
does. The steps, in order:

1. lines: horizontal text lines with their dominant font, size and weight, a raised number
   written in superscripts (`U50¹⁴`, `10⁻⁵`);
2. furniture: running headers and footers (the same text at the same height on many pages),
   page numbers, line-number margins (small integers beside the text, sharing an edge) and
   figure labels (fonts that never set a line of prose) go;
3. reading order, per page: a gutter (a free strip before an edge where lines start) splits the
   page into columns; lines crossing it (titles, centred author rows, full-width abstracts and
   captions) cut it into bands; each band is read left column then right column;
4. footnotes (small lines opened by a mark at a column's foot) go; paragraphs and headings,
   from line spacing, indents, short last lines and font changes; a paragraph broken by a
   column end resumes after any caption in between;
5. the document: title, authors, abstract, references (kept out of the text), sections, the
   offset where each page starts, and the figure and table captions (paragraphs opened by
   their label);
6. tables (`tables`, found before step 2, their lines taken out of the text): on the pages
   that set a table's caption, PyMuPDF's table finder, each table kept beside its caption, as
   Markdown.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path
from pkgutil import iter_modules
from types import ModuleType

from litpipe.ingest.pdf.columns import _columns, _document_style
from litpipe.ingest.pdf.document import FRONT_MATTER, _assemble, _captioned, _layout
from litpipe.ingest.pdf.footnotes import _drop_footnotes
from litpipe.ingest.pdf.front_matter import _authors, _title
from litpipe.ingest.pdf.furniture import (
    _remove_figure_text,
    _remove_furniture,
    _remove_line_numbers,
)
from litpipe.ingest.pdf.joining import _join_lines, _Vocabulary
from litpipe.ingest.pdf.paragraphs import _paragraphs
from litpipe.ingest.pdf.reading import PdfLimits, _open_pdf, _read, _text_layer_missing
from litpipe.ingest.pdf.references import _reference_entries
from litpipe.ingest.pdf.tables import _find_tables, _without_table_lines
from litpipe.schemas import IngestError, PaperDocument

# The modules, one concern each: `reading` (the file, its limits, its lines), `furniture`,
# `columns` (reading order and the document's style), `footnotes`, `paragraphs` (and headings),
# `headings` (the names and labels they are recognised by), `joining` (lines into text),
# `front_matter` (title, authors, abstract), `references`, `document` (sections, pages and
# captions) and `tables`.
# Their underscored names are the package's own: a module imports those of another by name;
# nothing outside the package does.

__all__ = ["FRONT_MATTER", "MODULES", "PdfLimits", "parse_pdf"]

# Every module of the package, this one first: what `paper_document`'s code version hashes, so
# that editing any of them marks it stale.
MODULES: tuple[ModuleType, ...] = (
    sys.modules[__name__],
    *(import_module(f"{__name__}.{module.name}") for module in iter_modules(__path__)),
)

# Pages that hold title, authors and abstract.
_FRONT_PAGES = 2


def parse_pdf(
    path: Path, paper_id: str, limits: PdfLimits | None = None, tables: bool = False
) -> PaperDocument:
    """Parses one PDF; raises `IngestError` with a one-line reason when the file is unusable or
    over the `limits` (its size checked before it is opened, its page count before any page is
    read). With `tables` (`ingest.pdf_tables`), its tables and captions are read apart."""
    path = Path(path)
    with _open_pdf(path, limits or PdfLimits()) as doc:
        source = _read(doc)
        found = _find_tables(doc, source.pages) if tables else []
    pages, rects = source.pages, source.rects
    _without_table_lines(pages, found)
    _remove_furniture(pages, rects)
    _remove_line_numbers(pages)
    _remove_figure_text(pages, rects)
    if _text_layer_missing(pages):
        raise IngestError("no text layer (scanned pages? run OCR first)")
    columns = _columns(pages)
    style = _document_style(columns, len(pages))
    _drop_footnotes(columns, style)
    vocabulary = _Vocabulary.of(columns)
    paragraphs = _paragraphs(columns, style)
    for paragraph in paragraphs:
        paragraph.text, paragraph.page_marks = _join_lines(paragraph.lines, vocabulary)
        if (paragraph.heading or paragraph.page < _FRONT_PAGES) and len(paragraph.page_marks) == 1:
            paragraph.text = vocabulary.mend_split_words(paragraph.text)
    title = _title(paragraphs, source.metadata.get("title", ""))
    layout = _layout(paragraphs, title, style)
    text, sections, page_starts, captions = _assemble(paragraphs, layout, style, len(pages))
    references = _reference_entries(
        [paragraphs[index] for index in layout.reference_paragraphs], vocabulary
    )
    return PaperDocument(
        paper_id=paper_id,
        source_path=str(path),
        title=title,
        authors=_authors(paragraphs, layout.title_index, source.metadata.get("author", "")),
        abstract=layout.abstract,
        text=text,
        sections=sections,
        page_starts=page_starts,
        pages=len(pages),
        references=references,
        doi=source.doi,
        arxiv_id=source.arxiv_id,
        metadata=source.metadata,
        captions=captions if tables else [],
        tables=_captioned(found, captions),
    )
