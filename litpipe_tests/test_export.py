"""`litpipe export` (issue 48, point 2): a collection's synthesis as LaTeX and Pandoc Markdown
citing the user's own keys (unusual ones as given: `Müller2024`, `10.1000/xyz-1`,
`smith:2020:deep`), with its BibTeX and CSL-JSON; and, in slow tests, through the real tools:
`pandoc --citeproc` finds every citation, `latexmk -pdf` leaves none undefined."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import dagster as dg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.report.manuscript import (
    Manuscript,
    ManuscriptRow,
    ManuscriptTable,
    UncitedKey,
    latex_fragment,
    pandoc_markdown,
    table_csv,
)
from litpipe.schemas import LeftOutPaper
from litpipe.settings import HomePaths
from litpipe_tests.homes import home_instance

KEYS = {"rev1": "Müller2024", "doi": "10.1000/xyz-1", "deep": "smith:2020:deep"}
ABSTRACT = (
    "Translesion polymerases bypass damaged DNA at stalled replication forks in {cells}. We "
    "show that REV1 recruits polymerase zeta to abasic sites and that cells lacking it are "
    "sensitive to alkylation damage, which links fork stalling to damage tolerance."
)
# Keys a manuscript's .bib holds: accented, a DOI, colons, and two differing only in case.
UNUSUAL_BIB = "\n".join(
    f"@article{{{key},\n  author = {{{author}}},\n  title = {{{title}}},\n  year = {{{year}}},\n"
    f"  journal = {{Genes}},{extra}\n  abstract = {{{ABSTRACT.format(cells=cells)}}}\n}}\n"
    for key, author, title, year, cells, extra in [
        ("Müller2024", "Müller, Jörg", "REV1 at stalled forks", 2024, "fission yeast", ""),
        ("10.1000/xyz-1", "Okafor, Chidi", "Polymerase zeta bypass", 2023, "human fibroblasts",
         "\n  file = {:/home/jo/papers/okafor.pdf:PDF},"),
        ("smith:2020:deep", "Smith, Anna", "Damage tolerance in flies", 2020, "Drosophila", ""),
        ("Smith2021", "Smith, Ben", "Fork reversal", 2021, "mouse embryos", ""),
        ("smith2021", "Smith, Cara", "Fork protection", 2021, "chicken DT40 cells",
         "\n  note = {Preprint, {DT40} data in the supplement},"),
    ]
)  # fmt: skip


def manuscript(text: str, **fields: object) -> Manuscript:
    return Manuscript(title="What the papers report", text=text, **fields)  # type: ignore[arg-type]


def test_latex_cites_each_marker_with_its_page_escapes_the_prose_and_names_what_it_left_out() -> (
    None
):
    text = (
        "# What the papers report\n\n"
        "REV1 costs 50% & more_of it, with Δ ≥ 3 ℃ [rev1:4]. Both agree [doi:2; deep:7].\n\n"
        "## Methods\n\n- a **bold** item [deep:1]\n- another\n\n![graph](relationships.svg)\n"
    )
    written = latex_fragment(
        manuscript(
            text,
            notice="Written offline.",
            left_out=[LeftOutPaper(paper_id="gone", reason="retracted: fabricated data")],
        ),
        KEYS,
    )
    assert r"\section{What the papers report}" in written
    assert written.count(r"\section{") == 1 and r"\subsection{Methods}" in written
    assert r"REV1 costs 50\% \& more\_of it" in written
    assert r"\ensuremath{\Delta} \ensuremath{\geq} 3 ? \cite[p.~4]{Müller2024}." in written
    assert r"\cite[p.~2]{10.1000/xyz-1}; \cite[p.~7]{smith:2020:deep}" in written
    assert r"\item a \textbf{bold} item \cite[p.~1]{smith:2020:deep}" in written
    assert "% Figure not included: relationships.svg (graph)" in written
    assert "U+2103 DEGREE CELSIUS" in written.splitlines()[1]
    assert r"\begin{quote}" in written and "Written offline." in written
    assert r"\item gone: retracted: fabricated data" in written


def test_pandoc_cites_a_bracket_together_and_keeps_the_markdown() -> None:
    written = pandoc_markdown(
        manuscript("# What the papers report\n\nBoth agree [doi:2; rev1:4].\n"), KEYS, "s.bib"
    )
    assert written.startswith('---\ntitle: "What the papers report"\nbibliography: "s.bib"\n---')
    assert "# What the papers report" not in written  # the title is the header's
    assert "Both agree [@10.1000/xyz-1, p. 2; @Müller2024, p. 4]." in written


def test_a_marker_of_a_paper_without_a_key_is_refused_naming_it() -> None:
    with pytest.raises(UncitedKey, match="nokey has no citation key"):
        latex_fragment(manuscript("A claim [nokey:3]."), KEYS)


@given(
    pieces=st.lists(
        st.one_of(
            st.text(max_size=40),
            st.builds(
                lambda paper, page: f" [{paper}:{page}]",
                st.sampled_from(sorted(KEYS)),
                st.integers(1, 99),
            ),
        ),
        max_size=12,
    )
)
def test_whatever_the_text_every_marker_becomes_a_citation_and_environments_close(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    written = latex_fragment(manuscript(text), KEYS)
    assert not re.search(r"\[(rev1|doi|deep):\d+\]", written)
    cited = [match for match in re.findall(r"\\cite\[p\.~\d+\]\{([^}]*)\}", written)]
    expected = re.findall(r"\[(rev1|doi|deep):\d+\]", text)
    assert cited == [KEYS[paper] for paper in expected]
    for environment in ("itemize", "enumerate", "quote"):
        assert written.count(rf"\begin{{{environment}}}") == written.count(
            rf"\end{{{environment}}}"
        )


def test_a_table_of_papers_cites_its_row_and_each_cell_in_every_format() -> None:
    table = ManuscriptTable(
        columns=["Data", "Main result"],
        rows=[
            ManuscriptRow(
                paper_id="rev1",
                title="REV1 & forks",
                cells=["5% of | cells [rev1:3]", "not reported"],
            ),
            ManuscriptRow(paper_id="doi", title="Bypass", cells=["DT40 [doi:2; rev1:4]", "x"]),
        ],
    )
    written = latex_fragment(Manuscript(title="Comparison", table=table), KEYS)
    tabular = written[written.index(r"\begin{tabular}") : written.index(r"\end{tabular}")]
    rows = [line for line in tabular.splitlines() if line.endswith(r"\tabularnewline")]
    assert rows[1].startswith(
        r"\raggedright REV1 \& forks \cite{Müller2024} & \raggedright 5\% of | cells \cite[p.~3]{"
    )
    assert r"\cite[p.~2]{10.1000/xyz-1}; \cite[p.~4]{Müller2024}" in rows[2]
    assert all(row.count(" & ") == 2 for row in rows)  # every row has its three columns
    pandoc = pandoc_markdown(Manuscript(title="Comparison", table=table), KEYS, "c.bib")
    assert (
        "| REV1 & forks [@Müller2024] | 5% of \\| cells [@Müller2024, p. 3] | not reported |"
        in (pandoc)
    )
    assert list(csv.reader(table_csv(table, KEYS).splitlines()))[1] == [
        "Müller2024", "REV1 & forks", "5% of | cells [@Müller2024, p. 3]", "not reported"
    ]  # fmt: skip


def built_home(tmp_path: Path, tiny_model: Path) -> list[str]:
    bib = tmp_path / "manuscript.bib"
    bib.write_text(UNUSUAL_BIB, encoding="utf-8")
    home = ["--home", str(tmp_path / "home")]
    assert main(["run", "--bibtex", str(bib), *home, "--embedder", str(tiny_model)]) == 0
    return home


def test_export_writes_every_format_with_the_librarys_own_keys(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = built_home(tmp_path, tiny_model)
    capsys.readouterr()
    assert main(["status", "--keys", *home]) == 0
    listed = capsys.readouterr().out
    assert "library key 'smith2021' of manuscript.smith2021 not given: " in listed
    assert "manuscript.Smith2021 is cited by 'Smith2021'; cited as smith2021fork" in listed

    out = tmp_path / "export"
    for to in ("latex", "pandoc", "csl-json"):
        assert main(["export", "manuscript", "--to", to, "--out", str(out), *home]) == 0
    tex = (out / "synthesis.tex").read_text("utf-8")
    cited = set(re.findall(r"\\cite\[p\.~\d+\]\{([^}]*)\}", tex))
    assert cited and cited <= {"Müller2024", "10.1000/xyz-1", "smith:2020:deep", "Smith2021",
                               "smith2021fork"}  # fmt: skip
    bib = (out / "synthesis.bib").read_text("utf-8")
    assert set(re.findall(r"^@\w+\{([^,]+),", bib, re.M)) == cited
    pandoc = (out / "synthesis.pandoc.md").read_text("utf-8")
    assert "[@" in pandoc and "[manuscript." not in pandoc
    items = json.loads((out / "synthesis.csl.json").read_text("utf-8"))
    assert {item["id"] for item in items} == cited

    # The whole library's BibTeX, not only the cited papers'.
    assert (
        main(["export", "manuscript", "--to", "bibtex", "--out", str(tmp_path / "all"), *home]) == 0
    )
    everything = (tmp_path / "all" / "synthesis.bib").read_text("utf-8")
    assert len(re.findall(r"^@\w+\{", everything, re.M)) == 5
    # The user's own entries, under the keys they are cited by, less their machine's files.
    assert "note = {Preprint, {DT40} data in the supplement}" in everything
    assert re.search(r"^@article\{smith2021fork,[^@]*note = ", everything, re.M)
    assert "okafor.pdf" not in everything

    # The build exported LaTeX and Pandoc itself, and the UI's asset names the files.
    built = Path(home[1]) / "outputs" / "manuscript" / "export"
    assert (built / "synthesis.tex").read_text("utf-8") == tex
    (record,) = (
        home_instance(Path(home[1]))
        .fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("collection_outputs"), asset_partitions=["manuscript"]
            ),
            limit=5,
        )
        .records
    )
    metadata = record.asset_materialization.metadata
    exported = {name: Path(value.value) for name, value in metadata.items() if "/" in name}
    assert exported == {
        f"export/{name}": built / name
        for name in ("synthesis.tex", "synthesis-standalone.tex", "synthesis.bib",
                     "synthesis.pandoc.md", "synthesis.csl.json")
    }  # fmt: skip

    # The comparison table: a tabular citing each row's paper and each cell's passage, and a
    # CSV by key.
    assert main(["export", "manuscript", "--what", "comparison", "--to", "latex",
                 "--out", str(out), *home]) == 0  # fmt: skip
    tabular = (out / "comparison.tex").read_text("utf-8")
    assert tabular.count(r"\tabularnewline") == 1 + 5  # the aspects' header, a row a paper
    row_keys = set(re.findall(r"^\\raggedright [^&]* \\cite\{([^}]*)\} & ", tabular, re.M))
    assert row_keys == {"Müller2024", "10.1000/xyz-1", "smith:2020:deep", "Smith2021",
                        "smith2021fork"}  # fmt: skip
    assert re.search(r"\\cite\[p\.~\d+\]\{", tabular)  # the cells cite their passages
    table_bib = (out / "comparison.bib").read_text("utf-8")
    assert set(re.findall(r"^@\w+\{([^,]+),", table_bib, re.M)) == row_keys
    with (out / "comparison.csv").open(encoding="utf-8") as written:
        assert {row["key"] for row in csv.DictReader(written)} == row_keys
    assert (out / "comparison-standalone.tex").exists()

    capsys.readouterr()
    assert main(["export", "nothing-here", "--to", "latex", *home]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("litpipe export: collection 'nothing-here' is not built under ")
    assert "`litpipe run SOURCE --collection nothing-here` builds it" in said


def test_an_answer_exports_from_ask_and_from_export_by_its_id(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = built_home(tmp_path, tiny_model)
    capsys.readouterr()
    question = ["How does REV1 let cells tolerate alkylation damage?"]
    embedder = ["--embedder", str(tiny_model)]
    asked = ["ask", "--collection", "manuscript", *question, "--to", "latex", *embedder]
    assert main([*asked, *home]) == 0
    said = capsys.readouterr().out
    (request,) = re.findall(r"^Request (c-[0-9a-f]+):", said, re.M)
    written = {
        Path(line[len("latex: ") :]).name
        for line in said.splitlines()
        if line.startswith("latex: ")
    }
    assert written == {f"{request}.tex", f"{request}-standalone.tex", f"{request}.bib"}
    fragment = next((Path(home[1]) / "outputs").rglob(f"{request}.tex")).read_text("utf-8")
    assert fragment.count(r"\section{") == 1 and r"\section{How does REV1" in fragment
    assert re.search(r"\\cite\[p\.~\d+\]\{", fragment) and "[manuscript." not in fragment

    out = tmp_path / "answer"
    assert main(["export", "manuscript", "--what", "answer", request, "--to", "pandoc",
                 "--out", str(out), *embedder, *home]) == 0  # fmt: skip
    pandoc = (out / f"{request}.pandoc.md").read_text("utf-8")
    assert "[@" in pandoc and "[manuscript." not in pandoc
    # A paper retracted since the table was built: its row is dropped, and it is named with
    # its reason, as the pages name it.
    retracted = "manuscript.smith2021"
    catalog = Catalog(HomePaths(home=Path(home[1])).catalog_path)
    catalog.retract(retracted, "withdrawn by the journal")
    assert main(["export", "manuscript", "--what", "comparison", "--to", "latex",
                 "--out", str(out), *embedder, *home]) == 0  # fmt: skip
    tabular = (out / "comparison.tex").read_text("utf-8")
    assert "smith2021fork" not in tabular.split(r"\end{tabular}")[0]
    assert rf"\item {retracted}: retracted: withdrawn by the journal" in tabular

    for what in (["answer"], ["answer", "c-0000000000000000"], ["plain", "x"], ["answers"]):
        capsys.readouterr()
        assert (
            main(["export", "manuscript", "--what", *what, "--to", "latex", *embedder, *home]) == 2
        )
        assert capsys.readouterr().err.startswith("litpipe export: ")


# WordprocessingML's namespace, as its elements are named.
WORD = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
IDEA = "We study how REV1 and polymerase zeta let cells tolerate alkylation damage at forks."


def exported_related_work(
    home: list[str], pool: list[str], to: str, capsys: pytest.CaptureFixture[str]
) -> dict[str, Path]:
    """`related-work ... --to TO`: the files it says it wrote, by name."""
    capsys.readouterr()
    assert main(["related-work", *pool, "--idea", IDEA, "--to", to, *home]) == 0
    said = capsys.readouterr().err
    return {
        Path(line.split(": ", 1)[1]).name: Path(line.split(": ", 1)[1])
        for line in said.splitlines()
        if line.startswith(f"{to}: ")
    }


def test_related_work_exports_its_section_citing_the_collections_keys_or_the_tables_titles(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = built_home(tmp_path, tiny_model)
    embedder = ["--embedder", str(tiny_model)]
    files = exported_related_work(
        [*home, *embedder], ["--collection", "manuscript"], "latex", capsys
    )
    assert set(files) == {"related_work.tex", "related_work-standalone.tex", "related_work.bib"}
    tex = files["related_work.tex"].read_text("utf-8")
    cited = re.findall(r"\\cite\{([^}]*)\}", tex)
    assert cited and set(cited) <= set(
        re.findall(r"^@\w+\{([^,]+),", files["related_work.bib"].read_text("utf-8"), re.M)
    )
    assert r"\section{Related work}" in tex and "[manuscript." not in tex
    assert set(cited) <= {
        "Müller2024",
        "10.1000/xyz-1",
        "smith:2020:deep",
        "Smith2021",
        "smith2021fork",
    }

    demo = Path(__file__).parents[1] / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"
    table = ["--abstracts", str(demo)]
    files = exported_related_work([*home, *embedder], table, "bibtex", capsys)
    keys = re.findall(r"^@\w+\{([^,]+),", files["related_work.bib"].read_text("utf-8"), re.M)
    assert keys and all(key.startswith("anon") for key in keys)  # a table names no author
    assert len(set(keys)) == len(keys)


REQUIRE_TOOLS = os.environ.get("LITPIPE_REQUIRE_TEX") == "1"


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if REQUIRE_TOOLS:
            pytest.fail(f"{name} is not installed and LITPIPE_REQUIRE_TEX=1")
        pytest.skip(
            f"{name} is not installed (Debian: apt-get install pandoc latexmk "
            "texlive-latex-recommended)"
        )
    return found


@pytest.mark.slow
def compile_without_undefined_citations(latexmk: str, folder: Path, document: str) -> None:
    """`latexmk -pdf DOCUMENT.tex` in `folder` succeeds, its log naming nothing undefined."""
    compiled = subprocess.run(
        [latexmk, "-pdf", "-interaction=nonstopmode", f"{document}.tex"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    log = (folder / f"{document}.log").read_text("utf-8", errors="replace")
    assert compiled.returncode == 0, log[-3000:]
    undefined = [line for line in log.splitlines() if "undefined" in line.casefold()]
    assert not undefined, undefined


def test_the_exports_go_through_pandoc_citeproc_and_latexmk_with_every_citation_resolved(
    tmp_path: Path, tiny_model: Path
) -> None:
    pandoc, latexmk = tool("pandoc"), tool("latexmk")
    home = built_home(tmp_path, tiny_model)
    out = tmp_path / "export"
    for to in ("latex", "docx"):
        assert main(["export", "manuscript", "--to", to, "--out", str(out), *home]) == 0

    rendered = subprocess.run(
        [pandoc, "--citeproc", "synthesis.pandoc.md", "-t", "plain"],
        cwd=out, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "not found" not in rendered.stderr, rendered.stderr
    cited = set(re.findall(r"^@\w+\{([^,]+),", (out / "synthesis.bib").read_text("utf-8"), re.M))
    titles = re.findall(r"title = \{([^}]*)\}", (out / "synthesis.bib").read_text("utf-8"))
    assert len(titles) == len(cited)
    for title in titles:  # every cited paper in the bibliography citeproc wrote
        assert title.split()[0] in rendered.stdout

    compile_without_undefined_citations(latexmk, out, "synthesis-standalone")
    blg = (out / "synthesis-standalone.blg").read_text("utf-8", errors="replace")
    assert "error message" not in blg and "Error" not in blg, blg
    assert (out / "synthesis-standalone.pdf").stat().st_size > 0

    # The comparison table compiles in its standalone document, every row and cell cited.
    assert main(["export", "manuscript", "--what", "comparison", "--to", "latex",
                 "--out", str(out), *home]) == 0  # fmt: skip
    compile_without_undefined_citations(latexmk, out, "comparison-standalone")

    # The related-work section's fragment compiles inside its standalone document.
    section = tmp_path / "section"
    pool = ["--collection", "manuscript", "--embedder", str(tiny_model)]
    assert main(["related-work", *pool, "--idea", IDEA, "--to", "latex", *home]) == 0
    folder = next((Path(home[1]) / "outputs").rglob("related_work.tex")).parent
    shutil.copytree(folder, section)
    compile_without_undefined_citations(latexmk, section, "related_work-standalone")

    # Word: read back as a reader does (the document's XML), its citations author-year.
    with zipfile.ZipFile(out / "synthesis.docx") as docx:
        body = ElementTree.fromstring(docx.read("word/document.xml"))
    paragraphs = [
        "".join(node.text or "" for node in paragraph.iter(f"{WORD}t"))
        for paragraph in body.iter(f"{WORD}p")
    ]
    text = "\n".join(paragraphs)
    assert "[@" not in text and "[manuscript." not in text
    assert re.search(r"\((Müller|Okafor|Smith|A\. Smith|B\. Smith|C\. Smith) 20\d\d, 1", text), (
        text[:800]
    )
    for title in titles:  # the bibliography Word shows lists every cited paper
        assert any(title.split()[0] in paragraph for paragraph in paragraphs[-len(titles) - 2 :])
