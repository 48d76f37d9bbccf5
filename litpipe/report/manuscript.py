"""A cited text of litpipe's (a synthesis, a related-work section, an answer) written for a
manuscript: LaTeX and Pandoc Markdown citing each paper by its citation key, and the
bibliography as BibTeX and CSL-JSON.

A marker `[paper_id:4]` becomes `\\cite[p.~4]{key}` in LaTeX and `[@key, p. 4]` in Pandoc; a
bracket of several markers cites them together. The text's Markdown (headings, paragraphs,
lists, quotes, bold, italics, code) is set as LaTeX by `latex_body`: enough for what litpipe's
writers and models write, not a Markdown processor. A figure (an SVG of the page) is left out
of the LaTeX, named in a comment. Characters pdfLaTeX cannot set from UTF-8 (Greek letters,
mathematical signs) are set in math mode where they have a command, else replaced by `?` and
named in a comment at the top: a fragment that compiles with pdfLaTeX beats one that fails.

The offline notice opens every format, as it opens the pages, and the papers the text leaves
out (a retracted one with its reason) close it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from litpipe.extractive.related_work import replace_citations
from litpipe.report.bibliography import bibtex_entry, latex_escaped
from litpipe.schemas import LeftOutPaper, ReferenceRecord
from litpipe.text import replace_markers


@dataclass(frozen=True)
class CitedWork:
    """A cited paper: its id, its citation key and its record, as the bibliography lists it."""

    paper_id: str
    key: str
    record: ReferenceRecord
    # The user's own BibTeX entry for it (`PaperSource.library_bibtex`), given in place of one
    # made from the record.
    library_bibtex: str | None = None


class Manuscript(BaseModel):
    """What an export writes: a title, the offline notice, the text citing `[paper_id:page]`,
    and the papers it leaves out."""

    title: str
    notice: str | None = None
    text: str = Field(
        default="",
        description="Markdown, citing as `[paper_id:page]`, or as `[id]` (`cites_by_id`).",
    )
    table: ManuscriptTable | None = Field(
        default=None, description="A table of the papers, after the text."
    )
    left_out: list[LeftOutPaper] = Field(default_factory=list)
    cites_by_id: bool = Field(
        default=False,
        description="A related-work section's citations, `[id; id]` without pages, of the ids "
        "the keys name.",
    )


class ManuscriptRow(BaseModel):
    """A table's row: the paper it is of, and its cells, Markdown citing as `[paper_id:page]`."""

    paper_id: str
    title: str
    cells: list[str]


class ManuscriptTable(BaseModel):
    """A table of papers (the comparison table): a row a paper, a column an aspect."""

    columns: list[str]
    rows: list[ManuscriptRow]


class UncitedKey(ValueError):
    """A marker of a paper without a citation key."""


# Keys Pandoc takes bare after `@`: letters, digits and `_`, with single inner punctuation of
# `:.#$%&-+?<>~/`; any other is written `@{key}`.
_PANDOC_BARE_KEY = re.compile(r"[\w](?:[:.#$%&\-+?<>~/]?[\w])*")
# pdfLaTeX's math commands for the characters it cannot set in text from UTF-8, by Unicode name.
_GREEK = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma"
_GREEK += " tau upsilon phi chi psi omega"
_CAPITAL_GREEK = "gamma delta theta lambda xi pi sigma phi psi omega"


def _greek(case: str, name: str) -> str:
    # Unicode spells it LAMDA.
    return unicodedata.lookup(f"GREEK {case} LETTER {name.upper().replace('LAMBDA', 'LAMDA')}")


_MATH = {
    **{_greek("SMALL", name): f"\\{name}" for name in _GREEK.split()},
    **{_greek("CAPITAL", name): f"\\{name.capitalize()}" for name in _CAPITAL_GREEK.split()},
    **{
        unicodedata.lookup(name): command
        for name, command in {
            "INCREMENT": r"\Delta",
            "MICRO SIGN": r"\mu",
            "LESS-THAN OR EQUAL TO": r"\leq",
            "GREATER-THAN OR EQUAL TO": r"\geq",
            "NOT EQUAL TO": r"\neq",
            "ALMOST EQUAL TO": r"\approx",
            "TILDE OPERATOR": r"\sim",
            "RIGHTWARDS ARROW": r"\rightarrow",
            "LEFTWARDS ARROW": r"\leftarrow",
            "LEFT RIGHT ARROW": r"\leftrightarrow",
            "INFINITY": r"\infty",
            "PRIME": "'",
            "DOUBLE PRIME": "''",
            "MINUS SIGN": "-",
            "ELEMENT OF": r"\in",
            "N-ARY SUMMATION": r"\sum",
            "SQUARE ROOT": r"\surd",
            "SUPERSCRIPT MINUS": "^{-}",
            "SUPERSCRIPT PLUS SIGN": "^{+}",
            "SUBSCRIPT ZERO": "_{0}",
            "SUBSCRIPT ONE": "_{1}",
            "SUBSCRIPT TWO": "_{2}",
            "SUBSCRIPT THREE": "_{3}",
        }.items()
    },
}
# Text characters pdfLaTeX sets from UTF-8 with T1 and textcomp (LaTeX's utf8 defaults): ASCII,
# Latin-1, Latin Extended-A, the dashes, quotes, daggers, bullet, ellipsis, per mille, euro, TM.
_SET_IN_TEXT = re.compile(
    "[\u00a0-\u017f\u2013\u2014\u2018\u2019\u201c\u201d\u2020-\u2022\u2026\u2030\u20ac\u2122]"
)
# Others with a text equivalent: hyphens, thin and zero-width spaces.
_TEXT = {
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2009": "\\,",
    "\u202f": "\\,",
    "\u200b": "",
    # Raised and lowered digits and signs (a paper's footnote marks, units, formulas); ¹ ² ³
    # are set in text.
    **{
        raised: f"\\textsuperscript{{{plain}}}"
        for raised, plain in zip(
            "\u2070\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b", "0456789+-", strict=True
        )
    },
    **{
        lowered: f"\\textsubscript{{{plain}}}"
        for lowered, plain in zip(
            "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089",
            "0123456789",
            strict=True,
        )
    },
}
_FIGURE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]*)\)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
# A heading's LaTeX by its level: the text sits in its title's `\section`.
_SECTIONS = ("subsection", "subsection", "subsubsection", "paragraph", "paragraph", "paragraph")


def _key(keys: Mapping[str, str], paper_id: str) -> str:
    try:
        return keys[paper_id]
    except KeyError:
        raise UncitedKey(f"{paper_id} has no citation key: `litpipe status --keys`") from None


# A citation: the paper cited, and its page where the text gives one.
Cited = Sequence[tuple[str, int | None]]


def latex_citation(cited: Cited, keys: Mapping[str, str]) -> str:
    """`\\cite[p.~4]{key}` (`\\cite{key}` without a page) for each marker of a bracket, joined
    by `; `."""
    return "; ".join(
        rf"\cite[p.~{page}]{{{_key(keys, paper)}}}" if page else rf"\cite{{{_key(keys, paper)}}}"
        for paper, page in cited
    )


def pandoc_citation(cited: Cited, keys: Mapping[str, str]) -> str:
    """`[@key, p. 4; @other]`: the markers of a bracket, cited together."""
    return (
        "["
        + "; ".join(
            pandoc_key(_key(keys, paper)) + (f", p. {page}" if page else "")
            for paper, page in cited
        )
        + "]"
    )


@dataclass(frozen=True)
class _Citing:
    """How a manuscript's text cites (`Manuscript.cites_by_id`), and the keys it cites by."""

    keys: Mapping[str, str]
    by_id: bool

    def replaced(self, text: str, render: Callable[[Cited], str]) -> str:
        """`text` with its citations rendered: its markers, or its `[id]` brackets of keyed
        ids."""
        if self.by_id:
            return replace_citations(text, self.keys, lambda ids: render([(i, None) for i in ids]))
        return replace_markers(text, render)


def pandoc_key(key: str) -> str:
    """`@key`, or `@{key}` for a key Pandoc would cut short (`10.1000/xyz-1.`)."""
    return f"@{key}" if _PANDOC_BARE_KEY.fullmatch(key) else f"@{{{key}}}"


def pandoc_markdown(manuscript: Manuscript, keys: Mapping[str, str], bibliography: str) -> str:
    """The text as Pandoc Markdown: a YAML header naming its title and `bibliography`, the
    notice as a quote, every marker a Pandoc citation, the left-out papers last."""
    header = f"---\ntitle: {json.dumps(manuscript.title, ensure_ascii=False)}\n"
    header += f"bibliography: {json.dumps(bibliography)}\n---\n\n"
    notice = f"> {manuscript.notice}\n\n" if manuscript.notice else ""
    lines = [
        f"<!-- Figure not included: {figure.group('src')} ({figure.group('alt')}) -->"
        if (figure := _FIGURE.match(line.strip()))
        else line
        for line in _untitled(manuscript).splitlines()
    ]
    citing = _Citing(keys, manuscript.cites_by_id)
    body = citing.replaced("\n".join(lines), lambda cited: pandoc_citation(cited, keys)).strip()
    if manuscript.table is not None:
        body = (body + "\n\n" + _pandoc_table(manuscript.table, citing)).strip()
    return header + notice + body + "\n" + _left_out_markdown(manuscript.left_out)


def _pandoc_table(table: ManuscriptTable, citing: _Citing) -> str:
    """A pipe table: the paper's title citing it, then its cells, their markers citations."""

    def cell(text: str) -> str:
        cited = citing.replaced(text, lambda found: pandoc_citation(found, citing.keys))
        return " ".join(cited.split()).replace("|", "\\|")

    lines = [
        "| " + " | ".join(cell(name) for name in ["Paper", *table.columns]) + " |",
        "|" + "---|" * (len(table.columns) + 1),
    ]
    for row in table.rows:
        paper = f"{cell(row.title)} {pandoc_citation([(row.paper_id, None)], citing.keys)}"
        lines.append("| " + " | ".join([paper, *map(cell, row.cells)]) + " |")
    return "\n".join(lines)


def _untitled(manuscript: Manuscript) -> str:
    """The text without its opening heading where that repeats the title."""
    text = manuscript.text.strip()
    first, _, rest = text.partition("\n")
    if (heading := _HEADING.match(first)) and heading.group(2).strip() == manuscript.title:
        return rest.strip()
    return text


def _left_out_markdown(left_out: Sequence[LeftOutPaper]) -> str:
    if not left_out:
        return ""
    lines = [f"- {paper.paper_id}: {paper.reason}" for paper in left_out]
    return "\n## Papers left out\n\n" + "\n".join(lines) + "\n"


def latex_fragment(manuscript: Manuscript, keys: Mapping[str, str]) -> str:
    """The text as a LaTeX fragment to `\\input`: its title a `\\section`, the notice a quote,
    every marker a `\\cite`, the left-out papers last, and a comment naming any character or
    figure it could not set."""
    replaced: list[str] = []
    citing = _Citing(keys, manuscript.cites_by_id)
    parts = [rf"\section{{{_inline(manuscript.title, citing, replaced)}}}", ""]
    if manuscript.notice:
        parts += [
            r"\begin{quote}",
            _inline(manuscript.notice, citing, replaced),
            r"\end{quote}",
            "",
        ]
    parts.append(latex_body(_untitled(manuscript), citing, replaced))
    if manuscript.table is not None:
        parts += ["", latex_tabular(manuscript.table, citing, replaced)]
    if manuscript.left_out:
        parts += ["", r"\subsection*{Papers left out}", r"\begin{itemize}"]
        parts += [
            rf"\item {latex_escaped(paper.paper_id)}: {_inline(paper.reason, citing, replaced)}"
            for paper in manuscript.left_out
        ]
        parts.append(r"\end{itemize}")
    head = ["% Written by litpipe: cite with BibTeX (\\bibliography) or biblatex."]
    if replaced:
        shown = ", ".join(
            f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in dict.fromkeys(replaced)
        )
        head.append(f"% Set as '?': characters pdfLaTeX cannot set: {shown}.")
    return "\n".join(head + parts).rstrip() + "\n"


def latex_body(text: str, citing: _Citing, replaced: list[str]) -> str:
    """Markdown's blocks as LaTeX: headings as `\\subsection` and below (the text sits in its
    title's `\\section`), lists, quotes and paragraphs; a figure a comment."""
    out: list[str] = []
    paragraph: list[str] = []
    environment: str | None = None

    def close() -> None:
        nonlocal environment
        if paragraph:
            out.extend([_inline(" ".join(paragraph), citing, replaced), ""])
            paragraph.clear()
        if environment is not None:
            out.extend([rf"\end{{{environment}}}", ""])
            environment = None

    def open_list(name: str) -> None:
        nonlocal environment
        if environment != name:
            close()
            out.append(rf"\begin{{{name}}}")
            environment = name

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            close()
        elif heading := _HEADING.match(stripped):
            close()
            level = min(len(heading.group(1)) - 1, len(_SECTIONS) - 1)
            out.extend(
                [rf"\{_SECTIONS[level]}{{{_inline(heading.group(2), citing, replaced)}}}", ""]
            )
        elif figure := _FIGURE.match(stripped):
            close()
            out.extend(
                [f"% Figure not included: {figure.group('src')} ({figure.group('alt')})", ""]
            )
        elif bullet := _BULLET.match(line):
            open_list("itemize")
            out.append(rf"\item {_inline(bullet.group(1), citing, replaced)}")
        elif numbered := _NUMBERED.match(line):
            open_list("enumerate")
            out.append(rf"\item {_inline(numbered.group(1), citing, replaced)}")
        elif stripped.startswith(">"):
            if environment != "quote":
                close()
                out.append(r"\begin{quote}")
                environment = "quote"
            out.append(_inline(stripped.lstrip("> "), citing, replaced))
        elif environment is not None and environment != "quote" and line.startswith("  "):
            out[-1] += " " + _inline(stripped, citing, replaced)  # a list item's next line
        else:
            if environment is not None:
                close()
            paragraph.append(stripped)
    close()
    return "\n".join(out).rstrip()


def _inline(text: str, citing: _Citing, replaced: list[str]) -> str:
    """A run of Markdown text as LaTeX: citations set aside, the rest escaped, then bold,
    italics, code and links set, the citations put back."""
    citations: list[str] = []

    def held(cited: Cited) -> str:
        citations.append(latex_citation(cited, citing.keys))
        return f"\x00{len(citations) - 1}\x00"

    kept = citing.replaced(text, held)
    kept = _LINK.sub(lambda link: f"{link.group(1)}\x01{link.group(2)}\x02", kept)
    escaped = latex_escaped(kept)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", escaped)
    escaped = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\\emph{\1}", escaped)
    escaped = re.sub(r"`([^`]+)`", r"\\texttt{\1}", escaped)
    escaped = re.sub(r"\x01([^\x02]*)\x02", lambda url: rf" (\url{{{url.group(1)}}})", escaped)
    escaped = _pdflatex_characters(escaped, replaced)
    return re.sub(r"\x00(\d+)\x00", lambda found: citations[int(found.group(1))], escaped)


def table_csv(table: ManuscriptTable, keys: Mapping[str, str]) -> str:
    """The table as CSV: `key`, `title`, then a column per aspect, its citations Pandoc's
    (`[@key, p. 4]`), to paste into Pandoc Markdown."""
    citing = _Citing(keys, by_id=False)
    written = io.StringIO()
    rows = csv.writer(written)
    rows.writerow(["key", "title", *table.columns])
    for row in table.rows:
        rows.writerow(
            [
                _key(keys, row.paper_id),
                row.title,
                *(
                    citing.replaced(text, lambda found: pandoc_citation(found, keys))
                    for text in row.cells
                ),
            ]
        )
    return written.getvalue()


# A table cell's opening, and a row's end: `\\raggedright` redefines `\\\\`, so the row ends
# with `\\tabularnewline`.
_RAGGED, _ROW_END = r"\raggedright ", r" \tabularnewline"


def latex_tabular(table: ManuscriptTable, citing: _Citing, replaced: list[str]) -> str:
    """The table as a `tabular` of paragraph columns sharing the line's width, small type: the
    paper's title with its `\\cite`, then its cells, every marker a `\\cite`, each set ragged
    right (a narrow column justified stretches its words apart). A `tabular` does not break
    across pages: for many papers, make it a `longtable`."""
    count = len(table.columns) + 1
    width = rf"\dimexpr(\linewidth-{2 * count}\tabcolsep)/{count}\relax"
    lines = [
        r"\begin{center}",
        r"\footnotesize",
        r"\begin{tabular}{" + f"p{{{width}}}" * count + "}",
        r"\hline",
        " & ".join(_RAGGED + _inline(name, citing, replaced) for name in ["Paper", *table.columns])
        + _ROW_END,
        r"\hline",
    ]
    for row in table.rows:
        cited = latex_citation([(row.paper_id, None)], citing.keys)
        paper = f"{_RAGGED}{_inline(row.title, citing, replaced)} {cited}"
        cells = [_RAGGED + _inline(" ".join(text.split()), citing, replaced) for text in row.cells]
        lines.append(" & ".join([paper, *cells]) + _ROW_END)
    lines += [r"\hline", r"\end{tabular}", r"\end{center}"]
    return "\n".join(lines)


def _pdflatex_characters(text: str, replaced: list[str]) -> str:
    """Characters pdfLaTeX cannot set in text: in math mode where they have a command, else
    `?` (each added to `replaced`)."""

    def setting(found: re.Match[str]) -> str:
        character = found.group()
        if _SET_IN_TEXT.fullmatch(character):
            return character
        if character in _TEXT:
            return _TEXT[character]
        if character in _MATH:
            return rf"\ensuremath{{{_MATH[character]}}}"
        replaced.append(character)
        return "?"

    return re.sub(r"[^\x00-\x7f]", setting, text)


def latex_document(title: str, fragment: str, bibliography: str) -> str:
    """A standalone document that `\\input`s the fragment and lists the bibliography (BibTeX,
    `plainnat`-style author-year), for `latexmk -pdf`."""
    return "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[utf8]{inputenc}",
            r"\usepackage[T1]{fontenc}",
            r"\usepackage{textcomp}",
            r"\usepackage[numbers]{natbib}",
            r"\usepackage{url}",
            rf"\title{{{latex_escaped(title)}}}",
            r"\date{}",
            r"\begin{document}",
            rf"\input{{{fragment}}}",
            r"\bibliographystyle{plainnat}",
            rf"\bibliography{{{bibliography}}}",
            r"\end{document}",
            "",
        ]
    )


# The opening of a BibTeX entry, up to its key: `@article{`.
_ENTRY_OPENING = re.compile(r"^\s*(@\w+\s*[{(])[^,]*")


def bibtex_of(works: Sequence[CitedWork]) -> str:
    """The works as BibTeX, each under its citation key: the user's own entry where they gave
    one, else an entry made from its record."""
    return "".join(_bibtex_of(work) for work in works)


def _bibtex_of(work: CitedWork) -> str:
    if not work.library_bibtex:
        return bibtex_entry(work.key, work.record)
    rekeyed = _ENTRY_OPENING.sub(
        lambda found: found.group(1) + work.key, work.library_bibtex, count=1
    )
    return rekeyed.strip() + "\n\n"


def csl_json_of(works: Sequence[CitedWork]) -> str:
    """The works as CSL-JSON (Pandoc's, Zotero's and Obsidian's reference format)."""
    return json.dumps([_csl_item(work) for work in works], indent=1, ensure_ascii=False) + "\n"


def _csl_item(work: CitedWork) -> dict[str, object]:
    record = work.record
    item: dict[str, object] = {
        "id": work.key,
        "type": "article-journal" if record.venue else "article",
        "title": record.title or record.raw,
    }
    if record.authors:
        item["author"] = [_csl_name(name) for name in record.authors]
    if record.year is not None:
        item["issued"] = {"date-parts": [[record.year]]}
    if record.venue:
        item["container-title"] = record.venue
    if record.doi:
        item["DOI"] = record.doi
    return item


def _csl_name(name: str) -> dict[str, str]:
    family, comma, given = name.partition(",")
    if comma and family.strip():
        return {"family": family.strip(), "given": given.strip()}
    return {"literal": " ".join(name.split())}
