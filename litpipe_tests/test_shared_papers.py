"""A paper shared by a folder and a library (BibTeX, Zotero) keeps one title, the library's, in
every collection, whichever ran first; it is built again only when the library's record brings
something the paper's outputs carry, and the run says which collections it rebuilds and why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.commands.run import NAMED_PAPERS, RegisteredPaper, SharedPapers
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.ingest.ids import pdf_paper_id
from litpipe.schemas import PaperDocument, PaperSource, pdf_content_sha256
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.daemon_soak import PAPER_ASSETS
from litpipe_tests.test_cli import materializations, run

LIBRARY = {"title": "The Curated Title From My Library", "authors": "Doe, Jane", "year": "2024"}
FILE = "a" * 64
EDITED_FILE = "b" * 64


def plain_pdf(paper_id: str, file_sha256: str = FILE) -> PaperSource:
    """A PDF as a folder finds it: its bytes' hash, no library's record."""
    return PaperSource(
        paper_id=paper_id, kind="pdf", path="/folder/p.pdf", content_sha256=file_sha256
    )


def library_pdf(paper_id: str, fields: dict[str, str] = LIBRARY) -> PaperSource:
    """The same PDF as a library's entry gives it: with the entry's record, hashed in."""
    return PaperSource(
        paper_id=paper_id,
        kind="pdf",
        path="/library/p.pdf",
        external_id="doe2024",
        content_sha256=pdf_content_sha256(FILE, fields),
        fields=fields,
    )


def test_a_pdf_from_a_folder_keeps_the_record_a_library_gave_its_paper(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    retracted = library_pdf("p1", {**LIBRARY, "retracted": "true"})
    assert catalog.register(retracted, "library") is Registration.NEW

    # The same file from a folder: the same paper, nothing of it to build again.
    assert catalog.register(plain_pdf("p1"), "folder") is Registration.JOINED
    assert catalog.source("p1") == retracted
    # The folder says nothing of a retraction: the library's mark stays.
    assert set(catalog.retractions(["p1"])) == {"p1"}

    # The file edited in the folder: a changed paper, still under the library's record.
    assert catalog.register(plain_pdf("p1", EDITED_FILE), "folder") is Registration.CHANGED
    kept = catalog.source("p1")
    assert kept.fields == retracted.fields and kept.external_id == "doe2024"
    assert kept.path == "/folder/p.pdf"
    assert kept.content_sha256 == pdf_content_sha256(EDITED_FILE, retracted.fields)
    assert catalog.register(plain_pdf("p1", EDITED_FILE), "folder") is Registration.UNCHANGED

    # A folder's paper that a library then names: the library's record replaces its own.
    assert catalog.register(plain_pdf("p2"), "folder") is Registration.NEW
    assert catalog.register(library_pdf("p2"), "library") is Registration.CHANGED
    assert catalog.source("p2").fields == LIBRARY
    assert catalog.register(plain_pdf("p2"), "folder") is Registration.UNCHANGED


def shared(
    before: dict[str, PaperSource],
    now: dict[str, PaperSource],
    registrations: dict[str, Registration],
    built_titles: dict[str, str] | None = None,
    without_record: set[str] = frozenset(),  # type: ignore[assignment]
) -> SharedPapers:
    titles = built_titles or {}
    return SharedPapers(
        collection="library",
        elsewhere={paper_id: ["folder"] for paper_id in before},
        before={p: RegisteredPaper(source=s, built_title=titles.get(p)) for p, s in before.items()},
        now={p: RegisteredPaper(source=s) for p, s in now.items()},
        registrations=registrations,
        origin="refs.bib",
        without_record=set(without_record),
    )


def test_the_run_says_which_collections_it_rebuilds_for_a_shared_paper_and_why() -> None:
    pdf_title = "REV1 coordinates damage tolerance"
    # The library's record arrives for a paper a folder brought.
    arrived = shared(
        {"p1": plain_pdf("p1")},
        {"p1": library_pdf("p1")},
        {"p1": Registration.CHANGED},
        {"p1": pdf_title},
    )
    assert arrived.lines(move=False) == [
        f"rebuilding 'folder' too: p1 takes the title refs.bib gives it, "
        f"'{LIBRARY['title']}' (it had '{pdf_title}')"
    ]
    # The library's title is the PDF's: the rest of the record is what changes.
    same_title = shared(
        {"p1": plain_pdf("p1")},
        {"p1": library_pdf("p1")},
        {"p1": Registration.CHANGED},
        {"p1": LIBRARY["title"]},
    )
    assert same_title.lines(move=False) == [
        "rebuilding 'folder' too: p1 takes the record refs.bib gives it (authors, year)"
    ]
    edited = shared(
        {"p1": library_pdf("p1")},
        {"p1": library_pdf("p1", {**LIBRARY, "year": "2025", "venue": "PNAS"})},
        {"p1": Registration.CHANGED},
    )
    assert edited.lines(move=False) == [
        "rebuilding 'folder' too: p1: refs.bib changed its venue, year"
    ]
    new_file = shared(
        {"p1": library_pdf("p1")}, {"p1": library_pdf("p1")}, {"p1": Registration.CHANGED}
    )
    assert new_file.lines(move=False) == ["rebuilding 'folder' too: p1: its file changed"]
    # Nothing changed: shared, and said to be; a folder's PDF keeps its library's title.
    kept = shared({"p1": library_pdf("p1")}, {"p1": library_pdf("p1")}, {"p1": Registration.JOINED})
    assert kept.lines(move=False) == [
        "1 paper also in other collections ('folder': p1): their per-paper work is shared, not "
        "done again (--move takes them out of those)"
    ]
    from_folder = kept.model_copy(update={"without_record": {"p1"}})
    assert from_folder.lines(move=False) == [
        "1 paper also in other collections ('folder': p1): their per-paper work is shared, not "
        "done again; it keeps the title its library gives it (--move takes them out of those)"
    ]
    assert kept.lines(move=True) == ["moving 1 paper into 'library' out of 'folder': p1"]


def test_many_changed_papers_are_named_up_to_a_few_per_collection() -> None:
    ids = [f"p{number}" for number in range(NAMED_PAPERS + 2)]
    many = shared(
        {p: library_pdf(p) for p in ids},
        {p: library_pdf(p) for p in ids},
        dict.fromkeys(ids, Registration.CHANGED),
    )
    (line,) = many.lines(move=False)
    named = "; ".join(f"{p}: its file changed" for p in ids[:NAMED_PAPERS])
    assert line == f"rebuilding 'folder' too: {named}; and 2 more"


def write_bib(folder: Path, pdf: Path) -> Path:
    folder.mkdir()
    bib = folder / "refs.bib"
    bib.write_text(
        "@article{doe2024,\n"
        f"  title = {{{LIBRARY['title']}}},\n"
        f"  author = {{{LIBRARY['authors']}}},\n"
        f"  year = {LIBRARY['year']},\n"
        f"  file = {{:{pdf}:PDF}},\n"
        "}\n",
        encoding="utf-8",
    )
    return bib


@pytest.mark.slow  # three runs of a bundled PDF
@pytest.mark.parametrize("first", ["folder", "library"])
def test_a_pdf_in_a_folder_and_in_a_bib_keeps_the_librarys_title_in_both_collections(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str], first: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    pdf = Path(shutil.copy(PDFS_BY_SIZE[0], folder))
    bib = write_bib(tmp_path / "lib", pdf)
    paper_id = pdf_paper_id(pdf)
    sources = {
        "folder": [str(folder), "--collection", "folder"],
        "library": ["--bibtex", str(bib), "--collection", "library"],
    }
    second = "library" if first == "folder" else "folder"
    home = tmp_path / "home"

    code, report = run(home, tiny_model, *sources[first])
    assert code == 0
    artifacts = ArtifactStore(home / "artifacts", report["embedder"], PER_EMBEDDER_ASSETS)
    built_title = artifacts.read(["paper_document"], paper_id, PaperDocument).title
    built = {asset: materializations(home, asset, paper_id) for asset in PAPER_ASSETS}
    syntheses = materializations(home, "synthesis", first)
    capsys.readouterr()

    code, report = run(home, tiny_model, *sources[second])
    said = capsys.readouterr().err
    assert code == 0, said
    if first == "library":
        # The folder's PDF is the library's paper: nothing of it is built again, and the
        # library's collection is left as it is.
        assert built_title == LIBRARY["title"]
        assert (
            f"1 paper also in other collections ('library': {paper_id}): their per-paper work "
            "is shared, not done again; it keeps the title its library gives it" in said
        )
        assert {asset: materializations(home, asset, paper_id) for asset in PAPER_ASSETS} == built
        assert materializations(home, "synthesis", "library") == syntheses
        assert report["papers_up_to_date"] == 1
    else:
        # The library's title reaches what carries it (the document, the chunks BM25 reads,
        # the questions and answers): the folder's collection is rebuilt too, and said to be.
        assert built_title != LIBRARY["title"]
        assert (
            f"rebuilding 'folder' too: {paper_id} takes the title refs.bib gives it, "
            f"'{LIBRARY['title']}' (it had {built_title!r})" in said
        )
        assert "per-paper work is shared" not in said
        assert materializations(home, "synthesis", "folder") == syntheses + 1
        assert report["embedded_chunks"] == 0  # the same chunks' vectors, kept
    for collection in ("folder", "library"):
        page = (home / "outputs" / collection / "synthesis.md").read_text(encoding="utf-8")
        assert f"**{LIBRARY['title']}**" in page, collection
        if built_title != LIBRARY["title"]:
            assert f"**{built_title}**" not in page, collection
    assert artifacts.read(["paper_document"], paper_id, PaperDocument).title == LIBRARY["title"]

    # Each source again, in the same order: nothing of the paper is built again.
    built = {asset: materializations(home, asset, paper_id) for asset in PAPER_ASSETS}
    syntheses = {c: materializations(home, "synthesis", c) for c in ("folder", "library")}
    for again in (first, second):
        assert run(home, tiny_model, *sources[again])[0] == 0
    assert {asset: materializations(home, asset, paper_id) for asset in PAPER_ASSETS} == built
    assert {c: materializations(home, "synthesis", c) for c in syntheses} == syntheses
    assert "rebuilding" not in capsys.readouterr().err
