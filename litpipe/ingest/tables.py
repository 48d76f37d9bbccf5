"""Abstract tables (CSV or JSONL with `id`, `title`, `abstract`): one paper per row.

A bad row becomes a `FailedPaper` and the other rows still go through; only a file that cannot
be read at all, or lacks a required column, fails as a whole. Nothing here raises for bad content.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from litpipe.ingest.ids import table_paper_id
from litpipe.ingest.structured_abstracts import without_part_labels
from litpipe.schemas import FailedPaper, PaperDocument, PaperSource, sha256_text

REQUIRED_COLUMNS = ("id", "title", "abstract")
TABLE_SUFFIXES = (".csv", ".jsonl")
NOT_UTF8 = "the file is not valid UTF-8 (undecodable bytes in this row); re-save it as UTF-8"


class _RowError(Exception):
    """One row's problem; its message is the row's one-line reason."""

    paper_id: str | None = None


class _FileError(Exception):
    """A problem with the whole file (no header, missing columns): one failure for the file."""


# A parsed row: its 1-based data row number and its values by column, or the reason it is bad.
_Row = tuple[int, dict[str, str] | _RowError]


def read_table(path: Path, collection: str) -> tuple[list[PaperSource], list[FailedPaper]]:
    """Every row of `path` as a `PaperSource`, and the rows (or the file) that failed.

    Raises ValueError only for a suffix other than .csv or .jsonl (a usage error).
    """
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"{path}: an abstract table must be .csv or .jsonl, not {suffix!r}")
    try:
        data = path.read_bytes()
    except OSError as error:
        return [], [_file_failure(path, f"cannot read the file: {error.strerror or error}")]
    # Undecodable bytes survive as lone surrogates, so only the rows holding them fail.
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    if not text.strip():
        return [], [_file_failure(path, "the file is empty")]
    rows = _csv_rows(text) if suffix == ".csv" else _jsonl_rows(text)
    return _sources_from_rows(path, collection, rows)


def document_from_row(source: PaperSource) -> PaperDocument:
    """A table row as a one-section document: the abstract is the text, without the labels of
    a structured abstract's parts; the title kept apart; its authors, year, venue and DOI
    (`with_bibliography`) where the row has them."""
    abstract = without_part_labels(source.fields["abstract"])
    document = PaperDocument.single_section(
        heading="Abstract",
        text=abstract,
        paper_id=source.paper_id,
        source_path=source.path,
        title=source.fields["title"],
        abstract=abstract,
        metadata={
            name: value
            for name, value in source.fields.items()
            if name not in ("title", "abstract")
        },
    )
    return with_bibliography(document, source.fields)


# Authors in a row's (or a reference manager's) `authors`: `Family, Given; Family, Given`.
AUTHOR_SEPARATOR = ";"
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2\d\d\d)(?!\d)")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.I)


def with_bibliography(document: PaperDocument, fields: Mapping[str, str]) -> PaperDocument:
    """The document with what `fields` say of the paper (a reference manager's metadata, or an
    abstract table's columns): their title, authors (separated by `;`), year, venue and DOI win
    over what the PDF's first page yields; their abstract fills in one the PDF lacks."""
    update: dict[str, object] = {}
    title = " ".join(fields.get("title", "").split())
    if title:
        update["title"] = title
    authors = [" ".join(name.split()) for name in fields.get("authors", "").split(AUTHOR_SEPARATOR)]
    if any(authors):
        update["authors"] = [name for name in authors if name]
    year = publication_year(fields.get("year", ""))
    if year is not None:
        update["year"] = year
    venue = " ".join(fields.get("venue", "").split())
    if venue:
        update["venue"] = venue
    doi = normalized_doi(fields.get("doi", ""))
    if doi:
        update["doi"] = doi
    abstract = without_part_labels(fields.get("abstract", "").strip())
    if abstract and not document.abstract.strip():
        update["abstract"] = abstract
    return document.model_copy(update=update) if update else document


def publication_year(text: str) -> int | None:
    """The first plausible year in a date as written (`2021`, `2021-03-15`, `March 2021`)."""
    found = _YEAR.search(text)
    return int(found.group(1)) if found else None


def normalized_doi(text: str) -> str:
    """A DOI as `10.…/…`, lowercase (DOIs are case-insensitive), without a resolver's prefix;
    empty for anything that is not one."""
    doi = _DOI_PREFIX.sub("", text.strip()).strip().rstrip(".").lower()
    return doi if re.fullmatch(r"10\.\d{4,9}/\S+", doi) else ""


def _sources_from_rows(
    path: Path, collection: str, rows: Iterator[_Row]
) -> tuple[list[PaperSource], list[FailedPaper]]:
    sources: list[PaperSource] = []
    failed: list[FailedPaper] = []
    first_row_of_paper: dict[str, tuple[int, str]] = {}
    try:
        for row_number, values in rows:
            try:
                source = _source_from_row(path, collection, row_number, values, first_row_of_paper)
            except _RowError as error:
                failed.append(
                    FailedPaper(
                        paper_id=error.paper_id, file=str(path), row=row_number, reason=str(error)
                    )
                )
                continue
            first_row_of_paper[source.paper_id] = (row_number, source.external_id or "")
            sources.append(source)
    except _FileError as error:
        return [], [_file_failure(path, str(error))]
    if not sources and not failed:
        failed.append(_file_failure(path, "the table has a header but no rows"))
    return sources, failed


def _source_from_row(
    path: Path,
    collection: str,
    row_number: int,
    values: dict[str, str] | _RowError,
    first_row_of_paper: dict[str, tuple[int, str]],
) -> PaperSource:
    if isinstance(values, _RowError):
        raise values
    external_id = _required(values, "id")
    paper_id = table_paper_id(collection, external_id)
    if paper_id in first_row_of_paper:
        # The paper id belongs to the first row, which succeeded: this failure is not its.
        first_row, first_id = first_row_of_paper[paper_id]
        if first_id == external_id:
            raise _RowError(f"duplicate id {external_id!r} (first at row {first_row})")
        raise _RowError(
            f"id {external_id!r} gives the same paper id {paper_id!r} as id {first_id!r} "
            f"(row {first_row}); make the ids differ in letters or digits"
        )
    try:
        fields = {
            "title": _required(values, "title"),
            "abstract": _required(values, "abstract"),
            **{name: value for name, value in values.items() if name not in REQUIRED_COLUMNS},
        }
        if any(_has_undecodable(name + value) for name, value in fields.items()):
            raise _RowError(NOT_UTF8)
    except _RowError as error:
        error.paper_id = paper_id
        raise
    return PaperSource(
        paper_id=paper_id,
        kind="table_row",
        path=str(path),
        row_number=row_number,
        external_id=external_id,
        content_sha256=sha256_text(json.dumps(fields, sort_keys=True, ensure_ascii=False)),
        fields=fields,
    )


def _required(values: dict[str, str], column: str) -> str:
    if column not in values:
        raise _RowError(f"no {column}")
    value = values[column].strip()
    if _has_undecodable(value):
        raise _RowError(NOT_UTF8)
    if not value:
        raise _RowError(f"empty {column}")
    return value


def _has_undecodable(value: str) -> bool:
    return any("\udc80" <= char <= "\udcff" for char in value)


def _csv_rows(text: str) -> Iterator[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader)]
    except (StopIteration, csv.Error) as error:
        raise _FileError(f"cannot read the CSV header: {error}") from error
    columns = _normalised_columns(header)
    for row_number, values in enumerate(_csv_records(reader), start=1):
        if isinstance(values, _RowError):
            yield row_number, values
        elif not values:
            continue  # a blank line
        elif len(values) > len(columns):
            reason = f"{len(values)} values but the header has {len(columns)} columns"
            yield row_number, _RowError(reason)
        else:
            # A short row (trailing empty cells dropped by an editor) leaves the rest empty.
            padded = [*values, *[""] * (len(columns) - len(values))]
            yield row_number, dict(zip(columns, padded, strict=True))


def _csv_records(reader: Iterator[list[str]]) -> Iterator[list[str] | _RowError]:
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield _RowError(f"malformed CSV: {error}")


def _normalised_columns(header: list[str]) -> list[str]:
    # Required columns match whatever their case ("Title" from a spreadsheet); others keep theirs.
    columns = [name.lower() if name.lower() in REQUIRED_COLUMNS else name for name in header]
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise _FileError(
            f"missing required column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(name) for name in missing)} (found: {', '.join(header) or 'none'})"
        )
    duplicated = sorted({name for name in columns if columns.count(name) > 1})
    if duplicated:
        raise _FileError(f"duplicate column {', '.join(repr(name) for name in duplicated)}")
    return columns


def _jsonl_rows(text: str) -> Iterator[_Row]:
    parsed = [(number, _json_object(line)) for number, line in enumerate(text.splitlines(), 1)]
    rows: list[_Row] = [(number, values) for number, values in parsed if values is not None]
    objects = [values for _, values in rows if isinstance(values, dict)]
    if not objects:
        raise _FileError(f"no line is a JSON object (line {rows[0][0]}: {rows[0][1]})")
    present = {key for values in objects for key in values}
    missing = [name for name in REQUIRED_COLUMNS if name not in present]
    if missing:
        raise _FileError(
            f"no line has the required key{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(name) for name in missing)}"
        )
    yield from rows


def _json_object(line: str) -> dict[str, str] | _RowError | None:
    """A line's object, the reason it is not one, or None for a blank line."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        return _RowError(f"malformed JSON: {error.msg} at column {error.colno}")
    if not isinstance(value, dict):
        return _RowError(f"expected a JSON object, found {type(value).__name__}")
    return {
        key.lower() if key.lower() in REQUIRED_COLUMNS else key: _as_text(item)
        for key, item in value.items()
    }


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _file_failure(path: Path, reason: str) -> FailedPaper:
    return FailedPaper(paper_id=None, file=str(path), row=None, reason=reason)
