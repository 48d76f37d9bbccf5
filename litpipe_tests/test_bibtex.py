"""`litpipe run --bibtex refs.bib`: the entries with a PDF or an abstract become papers carrying
the file's authors, year, venue and DOI; LaTeX made text; a damaged entry fails alone, in one
line with its line number."""

from __future__ import annotations

import base64
import json
import plistlib
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.ingest.bibtex import (
    discover_bibtex,
    entry_pdfs,
    file_field,
    latex_to_text,
    names,
    parse_bibtex,
)
from litpipe.report.page import reference_lines
from litpipe.schemas import PaperReference
from litpipe_tests.bundled import short_paper


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        (r"M{\"u}ller", "Müller"),
        (r"M\"{u}ller", "Müller"),
        (r"M\"uller", "Müller"),
        (r"Jos\'{e} Garc\'ia", "José García"),
        (r"Stra{\ss}e", "Straße"),
        (r"Fran\c{c}ois and Fran\c cois", "François and François"),
        (r"{\O}rsted, \aa{}ngstr{\"o}m", "Ørsted, ångström"),
        (r"\v{S}koda \L{}ukasiewicz", "Škoda Łukasiewicz"),
        (r"na\"{\i}ve", "naïve"),
        (r"pages 10--20 --- and ``so'' on", "pages 10\u201320 \u2014 and \u201cso\u201d on"),
        (r"{The {DNA} of \emph{Yeast}: a {\it study}}", "The DNA of Yeast: a study"),
        (r"$\alpha$-synuclein and $^{14}$C", "\u03b1-synuclein and 14C"),
        (r"R\&D at 50\% \textendash{} done", "R&D at 50% \u2013 done"),
        ("two\n   lines", "two lines"),
    ],
)
def test_latex_becomes_text(latex: str, text: str) -> None:
    assert latex_to_text(latex) == text


def test_names_split_at_and_each_as_family_given() -> None:
    assert names(
        r"M{\"u}ller, J{\"o}rg and Jane Q. Doe and {World Health Organization} and "
        r"Ludwig van Beethoven and de la Fontaine, Jean and King, Jr., Martin and "
        r"{Barnes and Noble} and others"
    ) == [
        "Müller, Jörg",
        "Doe, Jane Q.",
        "World Health Organization",
        "van Beethoven, Ludwig",
        "de la Fontaine, Jean",
        "King Jr., Martin",
        "Barnes and Noble",
    ]


def test_file_fields_of_jabref_zotero_mendeley_and_bibdesk(tmp_path: Path) -> None:
    assert file_field("papers/a.pdf") == [("papers/a.pdf", "")]
    assert file_field(":papers/a.pdf:PDF") == [("papers/a.pdf", "PDF")]
    assert file_field(
        "Full Text PDF:/home/me/Zotero/storage/AB12/a.pdf:application/pdf;"
        "Snapshot:/home/me/Zotero/storage/CD34/page.html:text/html"
    ) == [
        ("/home/me/Zotero/storage/AB12/a.pdf", "application/pdf"),
        ("/home/me/Zotero/storage/CD34/page.html", "text/html"),
    ]
    assert file_field(r"Paper:C\:\\Users\\me\\a.pdf:PDF") == [(r"C:\Users\me\a.pdf", "PDF")]
    assert file_field(r":Users/me/Mendeley/Smith{\_}2020.pdf:pdf") == [
        ("Users/me/Mendeley/Smith_2020.pdf", "pdf")
    ]
    archive = {
        "$archiver": "NSKeyedArchiver",
        "$objects": ["$null", {"relativePath": plistlib.UID(2)}, "pdfs/b.pdf"],
        "$top": {"root": plistlib.UID(1)},
        "$version": 100000,
    }
    bdsk = base64.b64encode(plistlib.dumps(archive, fmt=plistlib.FMT_BINARY)).decode()
    fields = {"file": ":a.pdf:PDF;:notes.txt:text", "bdsk-file-1": bdsk, "bdsk-file-2": "??"}
    pdfs, problems = entry_pdfs(fields, [tmp_path])
    assert pdfs == [tmp_path / "a.pdf", tmp_path / "pdfs" / "b.pdf"]
    assert problems == ["its bdsk-file-2 field cannot be read"]


def test_the_grammar_macros_concatenation_comments_and_nested_braces() -> None:
    entries, damaged = parse_bibtex(
        "Text before the entries is a comment, and so is @this one.\n"
        "% @article{commented, title = {Out}}\n"
        '@String{ pnas = "Proc. Natl. Acad. Sci." }\n'
        "@string(usa = { USA})\n"
        "@comment{jabref-meta: databaseType:bibtex;}\n"
        '@preamble{ "\\newcommand{\\noop}[1]{}" }\n'
        "@Article{ key1 ,\n"
        "  Title = {{CRISPR} screens {in {nested {braces}}}},\n"
        "  journal = pnas # usa,  % a comment between fields\n"
        '  note = "quoted {with "inner" quotes}" # { and } # 42,\n'
        "  month = mar, year = 2021,\n"
        "}\n"
        "@misc(key2, title = {Parentheses}, journal = IEEE_J_PAMI)\n"
        "@book{key3}\n"
    )
    assert damaged == []
    assert [(e.type, e.key, e.line) for e in entries] == [
        ("article", "key1", 7),
        ("misc", "key2", 13),
        ("book", "key3", 14),
    ]
    assert entries[0].fields == {
        "title": "{CRISPR} screens {in {nested {braces}}}",
        "journal": "Proc. Natl. Acad. Sci. USA",
        "note": 'quoted {with "inner" quotes} and 42',
        "month": "3",
        "year": "2021",
    }
    # An undefined macro (an abbreviations file not given) stands for its name.
    assert entries[1].fields["journal"] == "IEEE_J_PAMI"


def test_a_damaged_entry_fails_alone_with_its_line() -> None:
    entries, damaged = parse_bibtex(
        "@article{good1, title = {One}, year = 2020}\n"
        "\n"
        "@article{open,\n"
        "  title = {A brace left {open},\n"
        "  year = 2021\n"
        "}\n"
        "@article{good2, title = {Two}}\n"
        "@article{nocomma, title = {Three} year = 2022}\n"
        "@article{unclosed, title = {Four}\n"
        "@article{good3, title = {Five}}\n"
    )
    assert [entry.key for entry in entries] == ["good1", "good2", "good3"]
    assert [(d.line, d.reason) for d in damaged] == [
        # Its value took the entry's closing brace: the entry runs into the next one.
        (4, "entry open: not closed before the next entry; is a brace left open in field "
            "'title'?"),
        (8, "entry nocomma: expected ',' or '}' after field 'title', found 'y'"),
        (9, "entry unclosed: not closed before the next entry"),
    ]  # fmt: skip


REFS = r"""% Exported by JabRef, edited by hand.
@string{nar = {Nucleic Acids Research}}

@article{mueller2021,
  author    = {M{\"u}ller, J{\"o}rg and {\L}ukasiewicz, Anna},
  title     = {Gene {0} shapes fermentation in {\it Saccharomyces} --- a {CRISPR} screen},
  journal   = nar # { (Oxford)},
  year      = {2021},
  doi       = {https://doi.org/10.1093/NAR/GKAB001},
  file      = {Full Text PDF:pdfs/short-0.pdf:application/pdf},
}

@inproceedings{garcia2019,
  author    = {Garc\'{i}a, Jos\'e and Fran\c{c}ois Dupont and Stra{\ss}er, Karl},
  title     = {Fork reversal under replication stress},
  booktitle = {Proceedings of the {DNA} Repair Meeting},
  year      = 2019,
  month     = jun,
  abstract  = {Replication stress induces fork reversal. Using single-molecule fibre assays
               we measure fork speed in cells depleted of the remodeller and find that
               reversal protects forks from nucleolytic degradation.},
}

@article{broken2020,
  author  = {Broken, Bob},
  title   = {A title whose brace is never closed,
  year    = 2020,
}

@book{alberts2014,
  author    = {Alberts, Bruce},
  title     = {Molecular Biology of the Cell},
  publisher = {Garland},
  year      = 2014,
}

@article{gone2022,
  author   = {Nakamura, Aiko},
  title    = {A paper whose PDF was moved},
  year     = 2022,
  file     = {:pdfs/moved.pdf:PDF},
}
"""


def write_refs(folder: Path) -> Path:
    (folder / "pdfs").mkdir(parents=True)
    short_paper(folder / "pdfs", 0)
    bib = folder / "refs.bib"
    bib.write_text(REFS, encoding="utf-8")
    return bib


def test_discover_a_bib(tmp_path: Path) -> None:
    bib = write_refs(tmp_path / "library")
    found = discover_bibtex(bib)

    assert found.collection == "refs"
    by_key = {source.external_id: source for source in found.sources}
    assert list(by_key) == ["mueller2021", "garcia2019"]
    pdf = by_key["mueller2021"]
    assert pdf.kind == "pdf" and Path(pdf.path) == bib.parent / "pdfs" / "short-0.pdf"
    assert pdf.paper_id == "10.1093_nar_gkab001"
    assert pdf.fields == {
        "title": "Gene 0 shapes fermentation in Saccharomyces \u2014 a CRISPR screen",
        "authors": "Müller, Jörg; Łukasiewicz, Anna",
        "year": "2021",
        "venue": "Nucleic Acids Research (Oxford)",
        "doi": "10.1093/nar/gkab001",
    }
    abstract = by_key["garcia2019"]
    assert abstract.kind == "table_row" and abstract.paper_id == "refs.garcia2019"
    assert abstract.fields["authors"] == "García, José; Dupont, François; Straßer, Karl"
    assert abstract.fields["venue"] == "Proceedings of the DNA Repair Meeting"
    assert abstract.fields["abstract"].startswith("Replication stress induces fork reversal. Using")
    reasons = [failure.reason for failure in found.failed]
    assert reasons[0] == (
        "line 26: entry broken2020: not closed before the next entry; is a brace left open in "
        "field 'title'?"
    )
    assert reasons[1].startswith("entry gone2022 (line 37): its PDF ")
    assert reasons[1].endswith("pdfs/moved.pdf is not there, and it has no abstract to enter by")
    assert found.notes == ["1 entry without a PDF or an abstract left aside: alberts2014"]


def test_run_builds_the_good_entries_and_says_which_broke(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bib = write_refs(tmp_path / "library")
    home = tmp_path / "home"
    code = main(["run", "--bibtex", str(bib), "--collection", "Thesis refs", "--home", str(home),
                 "--embedder", str(tiny_model)])  # fmt: skip

    said = capsys.readouterr().err
    assert code == 0, said
    report = json.loads((home / "outputs" / "Thesis-refs" / "report.json").read_text())
    assert report["papers"] == 2 and len(report["failed_papers"]) == 2
    assert f"failed: {bib}: line 26: entry broken2020: not closed before the next entry" in said
    synthesis = (home / "outputs" / "Thesis-refs" / "synthesis.md").read_text()
    references = [line for line in synthesis.split("## References", 1)[1].splitlines()
                  if line.startswith("- ")]  # fmt: skip
    assert len(references) == 2
    # The .bib's title, authors, year, venue and DOI win over the PDF's own; each reference is
    # led by the entry's key, as the text cites it.
    assert references[0].startswith(
        "- mueller2021: Müller and Łukasiewicz (2021). **Gene 0 shapes fermentation in "
        "Saccharomyces \u2014 a CRISPR screen**. *Nucleic Acids Research (Oxford)*. "
        "https://doi.org/10.1093/nar/gkab001 (`10.1093_nar_gkab001`): p. 1"
    )
    assert references[1].startswith(
        "- garcia2019: García et al. (2019). **Fork reversal under replication stress**. "
        "*Proceedings of the DNA Repair Meeting*. (`refs.garcia2019`): p. 1"
    )


def test_a_bib_that_is_not_there_or_does_not_parse_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "missing.bib"
    assert main(["run", "--bibtex", str(missing), "--home", str(home)]) == 2
    said = capsys.readouterr().err.strip()
    assert said == f"litpipe run: {missing}: no such file; --bibtex takes a BibTeX file (.bib)"

    garbled = tmp_path / "garbled.bib"
    garbled.write_text("@article{only,\n  title = {Never closed,\n  year = 2020\n")
    assert main(["run", "--bibtex", str(garbled), "--home", str(home)]) == 2
    said = capsys.readouterr().err.strip()
    assert said == (
        f"litpipe run: {garbled}: line 2: entry only: the brace opening field 'title' is not "
        "closed before the end of the file"
    )

    nothing = tmp_path / "nothing.bib"
    nothing.write_text("@book{b, title = {No file, no abstract}}\n")
    assert main(["run", "--bibtex", str(nothing), "--home", str(home)]) == 2
    assert "no entry has a PDF or an abstract" in capsys.readouterr().err


def test_crossref_and_jabref_file_directory(tmp_path: Path) -> None:
    (tmp_path / "papers").mkdir()
    short_paper(tmp_path / "papers", 1)
    bib = tmp_path / "dblp.bib"
    bib.write_text(
        "@inproceedings{DBLP:conf/x/Doe24,\n"
        "  author = {Jane Doe},\n"
        "  title = {Gene 1 in flies},\n"
        "  crossref = {DBLP:conf/x/2024},\n"
        "  file = {:short-1.pdf:PDF},\n"
        "}\n"
        "@proceedings{DBLP:conf/x/2024,\n"
        "  title = {Proceedings of the {X} Conference},\n"
        "  year = {2024},\n"
        "  publisher = {ACM},\n"
        "  doi = {10.1145/proceedings},\n"
        "}\n"
        "@Comment{jabref-meta: fileDirectory:papers;}\n",
        encoding="utf-8",
    )
    found = discover_bibtex(bib)
    (source,) = found.sources
    assert Path(source.path) == tmp_path / "papers" / "short-1.pdf"
    # The proceedings' title is the paper's venue, its year the paper's; its DOI is its own.
    assert source.fields == {
        "title": "Gene 1 in flies",
        "authors": "Doe, Jane",
        "year": "2024",
        "venue": "Proceedings of the X Conference",
    }
    assert found.notes == ["1 entry without a PDF or an abstract left aside: DBLP:conf/x/2024"]
    # The user's own entry, kept for a manuscript's .bib: whole without its crossref, the
    # files of their machine left out.
    assert source.citation_key == "DBLP:conf/x/Doe24"
    assert source.library_bibtex == (
        "@inproceedings{DBLP:conf/x/Doe24,\n  author = {Jane Doe},\n  title = {Gene 1 in flies},"
        "\n  year = {2024},\n  publisher = {ACM},"
        "\n  booktitle = {Proceedings of the {X} Conference}\n}\n"
    )
    (reread,), _ = parse_bibtex(source.library_bibtex)
    assert reread.fields == {
        name: value
        for name, value in parse_bibtex(bib.read_text("utf-8"))[0][0].fields.items()
        if name not in ("crossref", "file")
    } | {"year": "2024", "publisher": "ACM", "booktitle": "Proceedings of the {X} Conference"}


def test_reference_lines_lead_with_the_author_year_label_where_it_is_known() -> None:
    one = PaperReference(authors=["Müller, Jörg"], year=2021)
    assert one.label() == "Müller (2021)"
    two = PaperReference(authors=["Müller, Jörg", "World Health Organization"], year=2021)
    assert two.label() == "Müller and World Health Organization (2021)"
    many = PaperReference(authors=["van Beethoven, Ludwig", "B, C", "D"], year=None)
    assert many.label() == "van Beethoven et al. (n.d.)"
    text = "A [p1:2]. B [p2:1]. C [p3:4] and [p1:3]."
    lines = reference_lines(
        [text],
        {"p1": "Known.", "p2": "Year only", "p3": "Unknown"},
        {"p1": PaperReference(authors=["Müller, J."], year=2021, venue="Cell", doi="10.1/x"),
         "p2": PaperReference(year=2020)},
    )  # fmt: skip
    assert lines == [
        "- Müller (2021). **Known**. *Cell*. https://doi.org/10.1/x (`p1`): "
        "p. 2 `[p1:2]`, p. 3 `[p1:3]`",
        "- **Year only** (2020). (`p2`): p. 1 `[p2:1]`",
        "- **Unknown** (`p3`): p. 4 `[p3:4]`",
    ]
