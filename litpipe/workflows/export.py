"""A collection's synthesis (or plain-language summary) exported for a manuscript: LaTeX,
Pandoc Markdown, BibTeX or CSL-JSON, each paper cited by its citation key.

    manuscript = synthesis_manuscript(synthesis, analysis)
    works = cited_works(papers_cited, keys, catalog, store)
    files = write_export("latex", manuscript, works, keys, out_dir, "synthesis")

What each format writes (`EXPORT_FILES`):

- `latex`: `STEM.tex`, a fragment to `\\input`; `STEM-standalone.tex`, a document that compiles
  it with BibTeX; `STEM.bib`, the cited papers;
- `pandoc`: `STEM.pandoc.md`, citing `[@key, p. 4]`, with `STEM.bib` and `STEM.csl.json`;
- `docx`: `STEM.docx`, the Pandoc export made a Word document by Pandoc itself, its citeproc
  setting each citation author-year and the bibliography after the text (the `pandoc` program
  is needed: `PandocMissing` otherwise), beside the `pandoc` export's files;
- `bibtex`, `csl-json`: the bibliography alone, `STEM.bib` or `STEM.csl.json`.

Word is written by Pandoc rather than a Python library: its citeproc formats the citations and
the bibliography from the same `.bib` the other formats use, in any CSL style, where a Python
writer would need a citation formatter of its own.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.citation_keys import KeyParts, generated_base, suffixed
from litpipe.files import write_atomically
from litpipe.report.manuscript import (
    CitedWork,
    Manuscript,
    ManuscriptRow,
    ManuscriptTable,
    bibtex_of,
    csl_json_of,
    latex_document,
    latex_fragment,
    pandoc_markdown,
    table_csv,
)
from litpipe.report.notices import (
    collection_answer_notice,
    comparison_notice,
    related_work_notice,
    synthesis_notice,
)
from litpipe.schemas import (
    CollectionAnswer,
    ComparisonTable,
    LeftOutPaper,
    PaperDocument,
    ReferenceRecord,
    RelatedWork,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.schemas.exports import ExportFormat
from litpipe.text import markers_in
from litpipe.workflows.citation_keys import citation_keys

# The folder of a collection's outputs the exports go to.
EXPORT_FOLDER = "export"
# What a collection's build exports beside its pages (`export_synthesis`): no program needed.
BUILT_EXPORTS: tuple[ExportFormat, ...] = ("latex", "pandoc")
# Pandoc's limit for one document: a synthesis takes a second.
PANDOC_TIMEOUT_S = 300


class PandocMissing(RuntimeError):
    """The `docx` export needs the `pandoc` program, which is not on the PATH."""


def synthesis_manuscript(
    synthesis: Synthesis, analysis: RelationshipAnalysis | None = None
) -> Manuscript:
    """The synthesis as a manuscript's text: its title, its offline notice (as its page has
    it) and the papers it leaves out, a retracted one with its reason."""
    return Manuscript(
        title=synthesis.title,
        notice=synthesis_notice(synthesis, analysis),
        text=synthesis.text,
        left_out=synthesis.left_out,
    )


def cited_papers(manuscript: Manuscript) -> list[str]:
    """The papers the text cites, in the order first cited."""
    return list(dict.fromkeys(paper for paper, _ in markers_in(manuscript.text)))


def record_of(document: PaperDocument) -> ReferenceRecord:
    """A paper's bibliography record: its library's or table's title, authors, year, venue and
    DOI where they gave them, else what its PDF's first page yields (the authors a guess)."""
    return ReferenceRecord(
        raw=document.title,
        authors=document.authors,
        title=document.title,
        year=document.year,
        venue=document.venue,
        doi=document.doi,
    )


def cited_works(
    paper_ids: Sequence[str], keys: Mapping[str, str], catalog: Catalog, store: ArtifactStore
) -> list[CitedWork]:
    """The papers' bibliography entries, each under its key, in order: the record of its
    document, and the user's own BibTeX entry where their library gave one."""
    return [
        CitedWork(
            paper_id=paper,
            key=keys[paper],
            record=record_of(store.read(["paper_document"], paper, PaperDocument)),
            library_bibtex=catalog.source(paper).library_bibtex,
        )
        for paper in paper_ids
    ]


def export_files(to: ExportFormat, stem: str) -> list[str]:
    """The files an export writes, in the order written."""
    return {
        "latex": [f"{stem}.tex", f"{stem}-standalone.tex", f"{stem}.bib"],
        "pandoc": [f"{stem}.pandoc.md", f"{stem}.bib", f"{stem}.csl.json"],
        "docx": [f"{stem}.pandoc.md", f"{stem}.bib", f"{stem}.csl.json", f"{stem}.docx"],
        "bibtex": [f"{stem}.bib"],
        "csl-json": [f"{stem}.csl.json"],
    }[to]


def write_export(
    to: ExportFormat,
    manuscript: Manuscript | None,
    works: Sequence[CitedWork],
    keys: Mapping[str, str],
    out_dir: Path,
    stem: str,
) -> list[Path]:
    """Writes the export's files (`export_files`) into `out_dir`, each atomically; the paths
    written. `manuscript` is needed for `latex` and `pandoc`. Raises `UncitedKey` for a marker
    of a paper without a key, before anything is written."""
    texts: dict[str, str] = {}
    pandoc = shutil.which("pandoc") if to == "docx" else None
    if to == "docx" and pandoc is None:
        raise PandocMissing("the docx export needs pandoc (https://pandoc.org/installing.html)")
    if to in ("latex", "pandoc", "docx") and manuscript is None:
        raise ValueError(f"an export to {to} needs a text")
    if to == "latex" and manuscript is not None:
        texts[f"{stem}.tex"] = latex_fragment(manuscript, keys)
        texts[f"{stem}-standalone.tex"] = latex_document(manuscript.title, stem, stem)
    if to in ("pandoc", "docx") and manuscript is not None:
        texts[f"{stem}.pandoc.md"] = pandoc_markdown(manuscript, keys, f"{stem}.bib")
    if to in ("latex", "pandoc", "docx", "bibtex"):
        texts[f"{stem}.bib"] = bibtex_of(works)
    if to in ("pandoc", "docx", "csl-json"):
        texts[f"{stem}.csl.json"] = csl_json_of(works)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in export_files(to, stem):
        if name in texts:
            write_atomically(out_dir / name, texts[name])
        written.append(out_dir / name)
    if pandoc is not None:
        _word(pandoc, out_dir, stem)
    return written


def _word(pandoc: str, out_dir: Path, stem: str) -> None:
    """`STEM.docx` from the Pandoc export beside it, by Pandoc's citeproc, written atomically
    (Pandoc writes a temporary file, renamed when it succeeds)."""
    partial = out_dir / f".{stem}.docx.partial"
    subprocess.run(
        [pandoc, "--citeproc", f"{stem}.pandoc.md", "-o", partial.name, "--to", "docx"],
        cwd=out_dir,
        check=True,
        capture_output=True,
        timeout=PANDOC_TIMEOUT_S,
    )
    partial.replace(out_dir / f"{stem}.docx")


def export_manuscript(
    to: ExportFormat,
    manuscript: Manuscript,
    catalog: Catalog,
    store: ArtifactStore,
    out_dir: Path,
    stem: str,
    papers: Sequence[str] | None = None,
) -> list[Path]:
    """A text citing `[paper_id:page]` exported (`write_export`), its keys given where missing
    (`citation_keys`); the bibliography of `papers` (default: the papers the text cites) for
    `bibtex` and `csl-json`, of the cited papers for the other formats."""
    listed = (
        cited_papers(manuscript) if papers is None or to not in ("bibtex", "csl-json") else papers
    )
    keys = citation_keys(catalog, store, [*listed, *cited_papers(manuscript)])
    works = cited_works([paper for paper in listed if paper in keys], keys, catalog, store)
    return write_export(to, manuscript, works, keys, out_dir, stem)


def export_synthesis(
    to: ExportFormat,
    synthesis: Synthesis,
    analysis: RelationshipAnalysis | None,
    catalog: Catalog,
    store: ArtifactStore,
    out_dir: Path,
    stem: str,
    papers: Sequence[str] | None = None,
) -> list[Path]:
    """A written synthesis exported (`export_manuscript`)."""
    manuscript = synthesis_manuscript(synthesis, analysis)
    return export_manuscript(to, manuscript, catalog, store, out_dir, stem, papers)


def answer_manuscript(
    answer: CollectionAnswer, left_out: Sequence[LeftOutPaper] = ()
) -> Manuscript:
    """A collection's answer as a manuscript's text: the question its title, under its offline
    notice (or the collection's admission that it does not answer); the `left_out` papers
    (retracted) named after it."""
    return Manuscript(
        title=answer.request.question,
        notice=collection_answer_notice(answer),
        text=answer.text,
        left_out=list(left_out),
    )


# The title of an exported related-work section: it goes into a paper as that paper's section.
RELATED_WORK_TITLE = "Related work"


def related_work_keys(
    related: RelatedWork, catalog: Catalog, store: ArtifactStore
) -> tuple[dict[str, str], list[str]]:
    """A related-work section's keys, by reference id, and the cited papers of the home's
    collections that were read: each of those by its citation key, every other cited work (a
    reference table's row) by a key generated from its title (a table gives neither authors
    nor year), unique among the section's. No document is read: the pages need only the keys."""
    references = {scored.reference.id: scored.reference for scored in related.references}
    cited = [paper for paper in related.cited_ids if paper in references]
    held = catalog.collections_of(cited)
    keys = citation_keys(catalog, store, [paper for paper in cited if paper in held])
    read = [paper for paper in keys if store.exists(["paper_document"], paper)]
    for paper in cited:
        if paper not in read:
            title = references[paper].title
            keys[paper] = suffixed(generated_base(KeyParts(title=title)), list(keys.values()))
    return keys, read


def related_work_works(
    related: RelatedWork, catalog: Catalog, store: ArtifactStore
) -> tuple[dict[str, str], list[CitedWork]]:
    """A related-work section's keys (`related_work_keys`) and its cited works in order of
    first citation: a paper of the home's collections by its document's record, a reference
    table's row by its title."""
    keys, read = related_work_keys(related, catalog, store)
    works = {work.paper_id: work for work in cited_works(read, keys, catalog, store)}
    titles = {scored.reference.id: scored.reference.title for scored in related.references}
    cited = [paper for paper in related.cited_ids if paper in titles]
    return keys, [
        works.get(paper)
        or CitedWork(
            paper_id=paper,
            key=keys[paper],
            record=ReferenceRecord(raw=titles[paper], title=titles[paper]),
        )
        for paper in cited
    ]


def export_related_work(
    to: ExportFormat,
    related: RelatedWork,
    catalog: Catalog,
    store: ArtifactStore,
    out_dir: Path,
    stem: str,
) -> list[Path]:
    """A related-work section exported (`write_export`), each cited work by its key
    (`related_work_works`)."""
    manuscript = Manuscript(
        title=RELATED_WORK_TITLE,
        notice=related_work_notice(related),
        text=related.text,
        cites_by_id=True,
    )
    keys, works = related_work_works(related, catalog, store)
    return write_export(to, manuscript, works, keys, out_dir, stem)


def retracted_left_out(catalog: Catalog, collection: str) -> list[LeftOutPaper]:
    """The collection's retracted papers, each left out with its reason, as the pages name
    them."""
    return [
        LeftOutPaper.retracted(paper, retraction.reason)
        for paper, retraction in catalog.retracted_in(collection).items()
    ]


def comparison_manuscript(
    table: ComparisonTable, left_out: Sequence[LeftOutPaper] = ()
) -> Manuscript:
    """The comparison table as a manuscript's table: a row a paper (its title citing it), a
    column an aspect, under its offline notice; the `left_out` papers (retracted) named after
    it, their rows dropped where the table was built before they were retracted."""
    return Manuscript(
        title=f"Comparison of {table.collection}",
        notice=comparison_notice(table),
        left_out=list(left_out),
        table=ManuscriptTable(
            columns=table.aspects,
            rows=[
                ManuscriptRow(
                    paper_id=row.paper_id,
                    title=row.title,
                    cells=[cell.value for cell in row.cells],
                )
                for row in table.rows
                if row.paper_id not in {paper.paper_id for paper in left_out}
            ],
        ),
    )


def export_comparison(
    to: ExportFormat,
    table: ComparisonTable,
    catalog: Catalog,
    store: ArtifactStore,
    out_dir: Path,
    stem: str,
) -> list[Path]:
    """The comparison table exported (`write_export`: a `tabular` whose cells `\\cite`, a
    Pandoc pipe table), and as `STEM.csv` keyed by citation key beside it, but for the
    bibliography alone (`bibtex`, `csl-json`). Its rows' papers are its bibliography."""
    manuscript = comparison_manuscript(table, retracted_left_out(catalog, table.collection))
    papers = [row.paper_id for row in table.rows]
    keys = citation_keys(catalog, store, papers)
    works = cited_works([paper for paper in papers if paper in keys], keys, catalog, store)
    written = write_export(to, manuscript, works, keys, out_dir, stem)
    if to in ("bibtex", "csl-json") or manuscript.table is None:
        return written
    write_atomically(out_dir / f"{stem}.csv", table_csv(manuscript.table, keys))
    return [*written, out_dir / f"{stem}.csv"]
