"""A paper as it enters litpipe: where it comes from, the parsed document, its chunks and their
embeddings, and the papers that failed to enter.

Offsets are character offsets into `PaperDocument.text`; pages are 1-based. A chunk's
(`paper_id`, `char_start`, `char_end`) is enough for a citation to point at the exact place.
A table's text (its caption and Markdown) is not part of `text`: its offsets continue past the
end of `text`, in the document's tables part (`PaperDocument.table_spans`), so that they never
collide with those of a passage of the body.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pdf_content_sha256(file_digest: str, fields: Mapping[str, str]) -> str:
    """A PDF's `PaperSource.content_sha256`: its bytes' hash (`file_digest`) alone, or with
    what a reference manager says of it (`fields`: title, authors, ...), so that an edit of
    those in the manager is a change of the paper, whose `paper_document` carries them. A plain
    PDF's is its bytes' hash, as it always was."""
    if not fields:
        return file_digest
    return sha256_text(json.dumps({"file": file_digest, "fields": dict(fields)}, sort_keys=True))


class PaperSource(BaseModel):
    """Where a paper comes from: a PDF file, or one row of an abstract table."""

    paper_id: str
    kind: Literal["pdf", "table_row"]
    path: str = Field(description="The PDF, or the table the row came from.")
    row_number: int | None = Field(default=None, description="1-based data row in the table.")
    external_id: str | None = Field(default=None, description="The table's own id for the row.")
    content_sha256: str = Field(
        description="Of the file's bytes (with a reference manager's fields, "
        "`pdf_content_sha256`), or of the row's fields."
    )
    size_bytes: int = 0
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="A table row's columns (title, abstract and extras), or what a reference "
        "manager knows of a PDF (title, authors, year, venue, doi, abstract).",
    )
    citation_key: str | None = Field(
        default=None,
        description="The key the user's library cites it by (a BibTeX entry's key, Better "
        "BibTeX's of a Zotero item); not part of `content_sha256`: a renamed key is the same "
        "paper. The catalog gives it to the paper where it can (`Catalog.keys`).",
    )
    library_bibtex: str | None = Field(
        default=None,
        description="The user's own BibTeX entry, where the paper came from their `.bib`: the "
        "exported `.bib` gives it (under the paper's citation key) rather than one made from "
        "its record. Not part of `content_sha256`.",
    )


class Section(BaseModel):
    heading: str
    char_start: int
    char_end: int
    page_start: int
    page_end: int


class PaperReference(BaseModel):
    """What a reference list says of a paper besides its title: from the user's reference
    manager (Zotero, BibTeX) or an abstract table's columns."""

    authors: list[str] = Field(
        default_factory=list,
        description="In order; `Family, Given` where the family name is known, else as written.",
    )
    year: int | None = None
    venue: str | None = Field(default=None, description="Journal, proceedings, book or publisher.")
    doi: str | None = None

    def label(self) -> str:
        """The author-year label: `Müller (2021)`, `Müller and Smith (2021)`, `Müller et al.
        (2021)`; `n.d.` without a year, the year alone without authors."""
        year = str(self.year) if self.year is not None else "n.d."
        names = [family_name(author) for author in self.authors if author.strip()]
        if not names:
            return f"({year})"
        if len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who} ({year})"


def family_name(author: str) -> str:
    """The family name of `Family, Given`; a name written without a comma (an organisation,
    or a name whose parts are not known) is given whole."""
    family, comma, _ = author.partition(",")
    return " ".join((family if comma else author).split())


class PaperCaption(BaseModel):
    """A figure's or table's caption: a paragraph of `PaperDocument.text` opened by its label."""

    kind: Literal["figure", "table"]
    label: str = Field(description="As printed: `Fig. 2`, `Figure 2`, `Table 1`.")
    text: str
    page: int
    char_start: int
    char_end: int


class PaperTable(BaseModel):
    """A table the PDF's table finder read: its cells as Markdown, the first row its header."""

    page: int
    bbox: tuple[float, float, float, float] = Field(
        description="x0, y0, x1, y1 in PDF points on its page, from the top left corner."
    )
    label: str = Field(description="The label of the caption beside it: `Table 1`.")
    caption: str = Field(
        default="", description="Its caption paragraph in `PaperDocument.text`, when found."
    )
    caption_start: int | None = Field(
        default=None, description="Where that paragraph starts in `PaperDocument.text`."
    )
    markdown: str = Field(description="Header row, separator, one line per row.")
    rows: int = Field(description="Rows read, header included, before any cap.")
    columns: int = Field(description="Columns read, before any cap.")
    capped: bool = Field(
        default=False, description="Rows or columns past the caps left out, as its Markdown says."
    )

    @property
    def text(self) -> str:
        """What a reader of the table is given: its caption (or label), then its Markdown."""
        return f"{self.caption or self.label}\n\n{self.markdown}"


# Between the body text and the tables part, and between two tables in it.
_TABLES_SEPARATOR = "\n\n"


class PaperDocument(BaseModel):
    """A parsed paper: clean body text (no references) and where each part of it lies."""

    paper_id: str
    source_path: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = Field(
        default=None, description="Publication year, from a reference manager or a table."
    )
    venue: str | None = Field(
        default=None, description="Journal, proceedings, book or publisher, as `year`."
    )
    abstract: str = ""
    text: str = Field(description="Body text, sections in reading order, references excluded.")
    sections: list[Section] = Field(default_factory=list)
    page_starts: list[int] = Field(
        default_factory=list,
        description="Offset in `text` where each page begins; page_starts[0] is page 1.",
    )
    pages: int = 0
    references: list[str] = Field(default_factory=list)
    doi: str | None = None
    arxiv_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    captions: list[PaperCaption] = Field(
        default_factory=list, description="Figure and table captions, in reading order."
    )
    tables: list[PaperTable] = Field(
        default_factory=list, description="Tables read from the PDF, in page order."
    )

    def table_spans(self) -> list[tuple[int, int]]:
        """Each table's (start, end) offsets in the tables part: the tables' texts as if they
        followed `text`, each after `_TABLES_SEPARATOR`, so past `len(text)`."""
        spans = []
        offset = len(self.text)
        for table in self.tables:
            offset += len(_TABLES_SEPARATOR)
            spans.append((offset, offset + len(table.text)))
            offset += len(table.text)
        return spans

    def reference(self) -> PaperReference | None:
        """What a reference list says of the paper: None unless a reference manager or a
        table gave its year or venue (a PDF's own first page gives neither, and its authors,
        read from the layout, are a guess)."""
        if self.year is None and not self.venue:
            return None
        return PaperReference(
            authors=self.authors, year=self.year, venue=self.venue or None, doi=self.doi
        )

    @classmethod
    def single_section(cls, *, heading: str, text: str, **fields: Any) -> PaperDocument:
        """A one-page document whose whole text is one section (an abstract-only paper)."""
        section = Section(
            heading=heading, char_start=0, char_end=len(text), page_start=1, page_end=1
        )
        return cls(text=text, sections=[section], page_starts=[0], pages=1, **fields)

    def page_at(self, offset: int) -> int:
        """1-based page holding `offset` (1 for documents without page information)."""
        if not self.page_starts:
            return 1
        return max(1, bisect.bisect_right(self.page_starts, offset))


ChunkKind = Literal["text", "table", "caption"]


class Chunk(BaseModel):
    """A passage of a paper: body text, a figure's or table's caption, or (part of) a table."""

    chunk_id: str = Field(description="`<paper_id>:<index>`, stable while the text is.")
    paper_id: str
    index: int
    kind: ChunkKind = Field(
        default="text",
        description="`table`: a table's caption and rows, its offsets in the tables part "
        "(`PaperDocument.table_spans`), its text repeating the header row; `caption`: a "
        "caption paragraph of the text; `text`: the rest of the body.",
    )
    section: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    text: str
    n_tokens: int = Field(description="Length in the embedder's tokens, special tokens excluded.")
    content_sha256: str


class PaperChunks(BaseModel):
    paper_id: str
    title: str = Field(
        default="", description="The paper's title: BM25 reads it with each of its chunks."
    )
    tokenizer: str = Field(description="The embedder whose tokens sized the chunks.")
    max_tokens: int
    overlap_tokens: int
    chunks: list[Chunk]


class EmbeddingResult(BaseModel):
    """What `chunk_embeddings` did for one paper; the vectors themselves live in LanceDB."""

    paper_id: str
    embedder_id: str
    table: str
    chunks: int
    embedded: int = Field(description="Chunks embedded in this run (not found in the store).")
    reused: int = Field(description="Chunks whose (content hash, embedder) was already stored.")
    removed: int = Field(default=0, description="Stale rows of this paper deleted.")


class FailedPaper(BaseModel):
    paper_id: str | None
    file: str
    row: int | None = None
    reason: str


class PaperFailure(BaseModel):
    """Why a per-paper asset last failed for a paper, in the step that built it with others."""

    paper_id: str
    asset: str
    reason: str
    run_id: str


class IngestError(Exception):
    """Bad input for one paper: the message is the one-line reason shown to the user."""
