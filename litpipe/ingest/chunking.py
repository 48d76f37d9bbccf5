"""Section-aware chunking sized in the embedder's own tokens.

A chunk never crosses a section boundary. Within a section it packs whole sentences up to the
token limit; a sentence longer than the limit is cut between tokens (at a word boundary where
there is one). Consecutive chunks of a section share about `overlap_tokens` tokens: whole trailing
sentences when they fit, otherwise the last tokens. Every chunk is an exact slice of the document
text, so a citation can point at the place it came from, and its token count is re-measured on
the slice itself, so it never exceeds the limit the model truncates at.

Captions and tables are chunks of their own (`Chunk.kind`). A figure's caption, or a table's
whose table was not read, is cut out of its section's text and chunked alone, in place, as
`caption`. A table read from the PDF (`PaperDocument.tables`) is chunked by rows, `table`:
its caption and header row, then as many rows as fit; each further chunk repeats the header
row. Its offsets are those of its rows in the document's tables part, past the end of the text
(`PaperDocument.table_spans`), and its page is the table's.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Protocol

from litpipe.schemas import Chunk, ChunkKind, PaperChunks, PaperDocument, PaperTable, sha256_text

# Sentence ends: terminal punctuation (and closing quotes or brackets) then whitespace then
# something that can open a sentence; or a blank line (paragraph break).
# (\u201c-\u201d and \u2018-\u2019 are typographic quotes.)
_SENTENCE_BREAK = re.compile(
    r"""[.!?]["'\u201d\u2019)\]]*\s+(?=["'\u201c\u2018(\[]?[A-Z0-9])|\n[ \t]*\n\s*"""
)
# Words after which a full stop rarely ends a sentence ("et al. 2020", "Fig. 3", "e.g. The").
_ABBREVIATIONS = frozenset(
    {"al", "approx", "ca", "cf", "ch", "dr", "e.g", "eq", "eqs", "etc", "fig", "figs", "i.e"}
    | {"mr", "ms", "no", "nos", "pp", "ref", "refs", "resp", "sec", "secs", "st", "suppl"}
    | {"tab", "vol", "vs"}
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")
# How far back (in tokens) a cut inside a long sentence may move to land between two words.
_WORD_BOUNDARY_SEARCH = 32
# Characters per piece of text handed to the tokenizer (pieces end between sentences).
_PIECE_CHARS = 4000


class TokenCounter(Protocol):
    """What the chunker needs from a tokenizer."""

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """For each text, the (start, end) character offsets of its tokens, special tokens
        excluded, in one batch call."""
        ...


@dataclass(frozen=True)
class _Region:
    heading: str
    start: int
    end: int
    kind: ChunkKind = "text"


@dataclass(frozen=True)
class _Piece:
    """A chunk before it is numbered."""

    kind: ChunkKind
    section: str
    page_start: int
    page_end: int
    start: int
    end: int
    text: str
    n_tokens: int


def chunk_document(
    doc: PaperDocument,
    tokenizer: TokenCounter,
    max_tokens: int,
    overlap_tokens: int,
    tokenizer_name: str,
) -> PaperChunks:
    """The document's chunks, at most `max_tokens` tokens of `tokenizer` each."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, not {max_tokens}")
    # An overlap of half a chunk or more would stall the window; keep each step forward real.
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    regions = _regions(doc)
    texts = [doc.text[region.start : region.end] for region in regions]
    sentence_starts = [_sentence_starts(text) for text in texts]
    all_offsets = _token_offsets(texts, sentence_starts, tokenizer)
    spans: list[tuple[_Region, int, int]] = []
    for region, text, starts, offsets in zip(
        regions, texts, sentence_starts, all_offsets, strict=True
    ):
        for start, end in _windows(text, offsets, starts, max_tokens, overlap_tokens):
            if text[start:end].strip():
                spans.append((region, region.start + start, region.start + end))
    counted = _fit_to_limit(doc.text, spans, tokenizer, max_tokens)
    pieces = [
        _Piece(
            kind=region.kind,
            section=region.heading,
            page_start=doc.page_at(start),
            page_end=doc.page_at(end - 1),
            start=start,
            end=end,
            text=doc.text[start:end],
            n_tokens=n_tokens,
        )
        for region, start, end, n_tokens in counted
    ]
    for table, span in zip(doc.tables, doc.table_spans(), strict=True):
        pieces.extend(_table_pieces(table, span, _section_of(doc, table), tokenizer, max_tokens))
    chunks = [
        Chunk(
            chunk_id=f"{doc.paper_id}:{index:04d}",
            paper_id=doc.paper_id,
            index=index,
            kind=piece.kind,
            section=piece.section,
            page_start=piece.page_start,
            page_end=piece.page_end,
            char_start=piece.start,
            char_end=piece.end,
            text=piece.text,
            n_tokens=piece.n_tokens,
            content_sha256=sha256_text(piece.text),
        )
        for index, piece in enumerate(pieces)
    ]
    return PaperChunks(
        paper_id=doc.paper_id,
        title=doc.title,
        tokenizer=tokenizer_name,
        max_tokens=max_tokens,
        overlap_tokens=overlap_tokens,
        chunks=chunks,
    )


def _regions(doc: PaperDocument) -> list[_Region]:
    """The sections in reading order, clipped so they never overlap. Text before a section that
    no section holds (its heading line, a paper's front matter) goes with it, and text after the
    last section with that one: nothing is dropped, and no heading becomes a chunk of its own."""
    regions: list[_Region] = []
    cursor = 0
    for section in sorted(doc.sections, key=lambda section: section.char_start):
        end = min(section.char_end, len(doc.text))
        if end > cursor:
            regions.append(_Region(section.heading, cursor, end))
            cursor = end
    if regions:
        regions[-1] = _Region(regions[-1].heading, regions[-1].start, len(doc.text))
    else:
        regions.append(_Region("Text", 0, len(doc.text)))
    regions = _without_captions(doc, regions)
    return [region for region in regions if doc.text[region.start : region.end].strip()]


def _without_captions(doc: PaperDocument, regions: list[_Region]) -> list[_Region]:
    """The regions with each caption cut out of the text around it: a figure's (or a table's
    whose table was not read) its own region, a read table's left to the table's chunks."""
    tables_captions = {table.caption_start for table in doc.tables}
    cut: list[_Region] = []
    captions = sorted(doc.captions, key=lambda caption: caption.char_start)
    for region in regions:
        cursor = region.start
        for caption in captions:
            if not region.start <= caption.char_start < region.end:
                continue
            end = min(caption.char_end, region.end)
            cut.append(_Region(region.heading, cursor, caption.char_start))
            if caption.char_start not in tables_captions:
                cut.append(_Region(region.heading, caption.char_start, end, "caption"))
            cursor = end
        cut.append(_Region(region.heading, cursor, region.end))
    return cut


def _section_of(doc: PaperDocument, table: PaperTable) -> str:
    """The heading of the section holding the table's caption, else its page's start."""
    offset = table.caption_start
    if offset is None:
        offset = doc.page_starts[table.page - 1] if table.page <= len(doc.page_starts) else 0
    for section in doc.sections:
        if section.char_start <= offset < section.char_end:
            return section.heading
    return "Tables"


def _table_pieces(
    table: PaperTable,
    span: tuple[int, int],
    section: str,
    tokenizer: TokenCounter,
    max_tokens: int,
) -> list[_Piece]:
    """The table's chunks: its caption (or label) and header row, then the rows that fit; each
    further chunk its header row and the rows that fit. Offsets: of its rows in the tables
    part (`span`: the table's text there)."""
    head = table.caption or table.label
    header, *rows = _markdown_lines(table.markdown)
    head_tokens, header_tokens, *row_tokens = (
        len(found) for found in tokenizer.token_offsets([head, header, *rows])
    )
    # Where each row starts in the tables part: after the head and the header row.
    row_start = span[0] + len(table.text) - len(table.markdown) + len(header) + 1
    row_starts = []
    for row in rows:
        row_starts.append(row_start)
        row_start += len(row) + 1
    pieces: list[_Piece] = []
    first = 0
    # A caption that leaves no room for rows is a chunk of its own.
    with_head = head_tokens + header_tokens <= max_tokens // 2
    if not with_head:
        pieces.append(
            _table_piece(table, section, span[0], span[0] + len(head), head, tokenizer, max_tokens)
        )
    while first < len(rows) or not pieces:
        budget = max_tokens - header_tokens - (head_tokens if with_head and not pieces else 0)
        last = first
        used = 0
        while last < len(rows) and (last == first or used + row_tokens[last] <= budget):
            used += row_tokens[last]
            last += 1
        opening = f"{head}\n\n" if with_head and not pieces else ""
        text = opening + "\n".join([header, *rows[first:last]])
        start = span[0] if opening else row_starts[first]
        end = row_starts[last - 1] + len(rows[last - 1]) if last > first else span[1]
        pieces.append(_table_piece(table, section, start, end, text, tokenizer, max_tokens))
        first = last
    return pieces


def _markdown_lines(markdown: str) -> list[str]:
    """The header row with its separator line, then each row (and any closing note)."""
    lines = markdown.split("\n")
    return ["\n".join(lines[:2]), *lines[2:]]


def _table_piece(
    table: PaperTable,
    section: str,
    start: int,
    end: int,
    text: str,
    tokenizer: TokenCounter,
    max_tokens: int,
) -> _Piece:
    """A chunk of the table, cut at its limit (a row longer than the limit alone)."""
    ((_, _, cut, n_tokens),) = _fit_to_limit(
        text, [(_Region(section, 0, len(text), "table"), 0, len(text))], tokenizer, max_tokens
    )
    return _Piece("table", section, table.page, table.page, start, end, text[:cut], n_tokens)


def _sentence_starts(text: str) -> list[int]:
    starts = [0]
    for match in _SENTENCE_BREAK.finditer(text):
        if text[match.start()] == ".":
            word = _WORD_BEFORE.search(text, max(0, match.start() - 16), match.start() + 1)
            # Initials ("J. Smith") and common abbreviations do not end a sentence.
            if word and (len(word.group(1)) == 1 or word.group(1).lower() in _ABBREVIATIONS):
                continue
        starts.append(match.end())
    return starts


def _token_offsets(
    texts: list[str], sentence_starts: list[list[int]], tokenizer: TokenCounter
) -> list[list[tuple[int, int]]]:
    """Token offsets of each text, tokenized as pieces of whole sentences in one batch call:
    a fast tokenizer spreads a batch over the cores and is slower on one very long text."""
    pieces: list[tuple[int, int, int]] = []  # (text number, start, end)
    for number, (text, starts) in enumerate(zip(texts, sentence_starts, strict=True)):
        piece_start = 0
        for start in starts[1:]:
            if start - piece_start >= _PIECE_CHARS:
                pieces.append((number, piece_start, start))
                piece_start = start
        pieces.append((number, piece_start, len(text)))
    piece_offsets = tokenizer.token_offsets([texts[n][start:end] for n, start, end in pieces])
    offsets: list[list[tuple[int, int]]] = [[] for _ in texts]
    for (number, shift, _), found in zip(pieces, piece_offsets, strict=True):
        offsets[number].extend((start + shift, end + shift) for start, end in found)
    return offsets


def _windows(
    text: str,
    offsets: list[tuple[int, int]],
    sentence_starts: list[int],
    max_tokens: int,
    overlap_tokens: int,
) -> list[tuple[int, int]]:
    """Character spans (into `text`) of the chunks of one region, planned on its tokens."""
    n = len(offsets)
    if n == 0:
        return []
    token_starts = [start for start, _ in offsets]
    # Token index where each sentence begins, plus the end sentinel n.
    breaks = sorted({bisect.bisect_left(token_starts, at) for at in sentence_starts} | {n})

    def clean_cut(index: int) -> bool:
        """Cutting before token `index` falls between words, so the slice re-tokenizes alike."""
        before_end, after_start = offsets[index - 1][1], offsets[index][0]
        return (
            before_end < after_start
            or not text[before_end - 1].isalnum()
            or not text[after_start].isalnum()
        )

    def cut_at_or_before(limit: int, floor: int) -> int:
        for index in range(limit, max(floor, limit - _WORD_BOUNDARY_SEARCH), -1):
            if clean_cut(index):
                return index
        return limit

    def cut_at_or_after(target: int, ceiling: int) -> int:
        for index in range(target, min(ceiling, target + _WORD_BOUNDARY_SEARCH)):
            if clean_cut(index):
                return index
        return target

    windows: list[tuple[int, int]] = []
    start, previous_end = 0, 0
    while True:
        limit = start + max_tokens
        if limit >= n:
            end = n
        else:
            boundary = breaks[bisect.bisect_right(breaks, limit) - 1]
            # Only a sentence end that adds text beyond the previous chunk is worth a chunk.
            floor = max(start, previous_end)
            end = boundary if boundary > floor else cut_at_or_before(limit, floor)
        windows.append((offsets[start][0], offsets[end - 1][1]))
        if end >= n:
            return windows
        overlap_from = max(end - overlap_tokens, start + 1)
        first_break = bisect.bisect_left(breaks, overlap_from)
        if overlap_tokens and breaks[first_break] < end:
            next_start = breaks[first_break]  # whole trailing sentences
        elif overlap_tokens:
            next_start = cut_at_or_after(overlap_from, end)
        else:
            next_start = end
        start, previous_end = next_start, end


def _fit_to_limit(
    text: str,
    spans: list[tuple[_Region, int, int]],
    tokenizer: TokenCounter,
    max_tokens: int,
) -> list[tuple[_Region, int, int, int]]:
    """Each span with its token count measured on its own text, shortened at its end in the
    rare case (tokens that depend on what precedes them) that the count exceeds the limit."""
    counted = []
    for (region, start, end), offsets in zip(
        spans, tokenizer.token_offsets([text[start:end] for _, start, end in spans]), strict=True
    ):
        while len(offsets) > max_tokens:
            last_start, last_end = offsets[max_tokens - 1]
            # Several tokens can share one character (byte-level BPE): then cut before it.
            end = start + (last_end if start + last_end < end else last_start)
            offsets = tokenizer.token_offsets([text[start:end]])[0]
        if text[start:end].strip():
            counted.append((region, start, end, len(offsets)))
    return counted
