"""Input from outside (partition keys from the UI or GraphQL, paper text, files) cannot write
outside the home, break ids apart, or carry markup into what people open."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import dagster as dg
import pymupdf
import pytest
from markdown_it import MarkdownIt
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.defs.io_manager import PydanticJSONIOManager
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import ArtifactsResource
from litpipe.files import UnsafeKeyError
from litpipe.ingest.pdf import PdfLimits, parse_pdf
from litpipe.report.collection import synthesis_markdown
from litpipe.report.digest import digest_markdown
from litpipe.report.markdown import safe_markdown
from litpipe.report.query_summary import render_markdown as query_summary_markdown
from litpipe.report.related_work import render_markdown as related_work_markdown
from litpipe.schemas import IngestError
from litpipe.settings import Settings
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_digest import hand_made_digest
from litpipe_tests.test_query_summary import offline
from litpipe_tests.test_related_work import offline as offline_related_work
from litpipe_tests.test_report_collection import TITLES, demo_collection

OUTSIDE_KEYS = ["../../x", "/abs/path", "a/b", "..", ".hidden", ""]


class Note(BaseModel):
    text: str


@pytest.mark.parametrize("key", [k for k in OUTSIDE_KEYS if k])
def test_a_key_that_is_a_path_is_refused_by_every_path_builder(tmp_path: Path, key: str) -> None:
    home = tmp_path / "home"
    store = ArtifactStore(home / "artifacts")
    with pytest.raises(UnsafeKeyError, match="is not a litpipe id") as refused:
        store.write(["paper_document"], key, Note(text="x"))
    assert repr(key) in str(refused.value)
    settings = Settings(home=home)
    with pytest.raises(UnsafeKeyError, match=repr(key).replace(".", r"\.")):
        settings.paths.outputs_dir(key)
    resource = ArtifactsResource.of(settings.ingest, settings.paths)
    with pytest.raises(UnsafeKeyError):
        resource.outputs_dir(key)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_ids_litpipe_makes_are_accepted(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    for key in ["10.1000_xyz", "arxiv-2401.01234", "sha256-0123456789abcdef", "2026-01-01"]:
        assert store.path(["a"], key) == tmp_path / "a" / f"{key}.json"
    assert store.path(["a"], None).name == "__all__.json"


def test_the_store_refuses_a_path_that_resolves_outside_its_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "artifacts"
    base.mkdir()
    (base / "paper_document").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeKeyError, match="outside"):
        ArtifactStore(base).write(["paper_document"], "paper-1", Note(text="x"))
    assert not list(outside.iterdir())


def test_a_collection_key_added_from_outside_writes_nothing_outside_the_home(
    tmp_path: Path,
) -> None:
    # As through GraphQL's addDynamicPartition: the key reaches the IO manager unchecked.
    collections = dg.DynamicPartitionsDefinition(name="collections")

    @dg.asset(partitions_def=collections)
    def relationships(context) -> Note:  # unannotated: a string annotation is refused
        return Note(text=context.partition_key)

    home = tmp_path / "a" / "b" / "home"
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("collections", ["../../x"])
    result = dg.materialize(
        [relationships],
        partition_key="../../x",
        instance=instance,
        resources={
            "io_manager": PydanticJSONIOManager(
                base_dir=str(home / "artifacts"), embedder_id="an-embedder"
            )
        },
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "'../../x' is not a litpipe id" in failure.to_string()
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


# What a paper's text can hold, and a renderer that trusts the file (raw HTML on, as in GitHub's
# and most editors' renderers, and no link filter of its own: markdown-it's would hide the link).
PAYLOAD = (
    "Results hold <script>alert(1)</script> in vivo <img src=x onerror=alert(2)> "
    "([x](javascript:alert(1)), [y](&#106;avascript:alert(3)), [z](data:text/html,<b>))."
)


def rendered(markdown: str) -> str:
    renderer = MarkdownIt("commonmark")
    renderer.validateLink = lambda url: True
    return renderer.render(markdown)


def assert_inert(markdown: str) -> None:
    """No tag of the rendered page comes from the paper: no script, no handler, no link to a
    script or a document (the outputs' own pictures and links are ours)."""
    tags = re.findall(r"<[a-z][^>]*>", rendered(markdown).lower())
    assert not [t for t in tags if re.search(r"script|onerror|data:text|<b>|src=\"x\"", t)]


def test_paper_markup_and_script_links_render_as_text() -> None:
    safe = safe_markdown(PAYLOAD)
    assert_inert(safe)
    # The reader still sees what the paper says: its markup and its script links as text.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered(safe)
    links = "[x](javascript:alert(1)), [y](javascript:alert(3)), [z](data:text/html,&lt;b&gt;)"
    assert f"({links})." in rendered(safe)
    assert safe_markdown(safe) == safe


def test_markdown_of_our_own_stays_markdown() -> None:
    ours = (
        "# Title\n\n> A notice\n\n- **bold** claim [10.1093_nar_gkae252:4]; R&D\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n![chart](data:image/svg+xml;base64,PHN2Zz4=) "
        "[docs](https://example.org/a_(b)) ![figure](relationships.svg)\n"
    )
    assert safe_markdown(ours) == ours


def test_a_picture_of_megabytes_passes_in_memory_of_its_own_size() -> None:
    """The relationship graph of a 5,000-paper collection is an SVG of megabytes, embedded as a
    data URI in the UI's Markdown: checking its links must not take memory per character (the
    regex kept a backtracking point per character: over 100 bytes each, about 1 GB at 2,500
    papers)."""
    picture = "![graph](data:image/svg+xml," + "%3Cg%3E" * 150_000 + ")"
    tracemalloc.start()
    try:
        safe = safe_markdown(f"# Map\n\n{picture}\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert safe == f"# Map\n\n{picture}\n"
    assert peak < 10 * len(picture)


def test_every_markdown_output_shows_paper_text_as_text(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    collection = demo_collection()
    expert = collection.synthesis.model_copy(update={"text": PAYLOAD, "title": PAYLOAD})
    assert_inert(synthesis_markdown(expert, {**TITLES, "x": PAYLOAD}))

    digest = hand_made_digest(tmp_path)
    digest.papers[0].abstract = PAYLOAD
    digest.papers[0].title = PAYLOAD
    assert_inert(digest_markdown(digest))

    summary = offline(tmp_path / "ask")
    summary = summary.model_copy(update={"summary": PAYLOAD, "highlights": [PAYLOAD]})
    assert_inert(query_summary_markdown(summary, "bio"))

    related, _ = offline_related_work(tmp_path / "rw", fake_embedder)
    related = related.model_copy(update={"text": PAYLOAD})
    assert_inert(related_work_markdown(related))


def test_dagster_markdown_metadata_shows_paper_text_as_text() -> None:
    assert_inert(markdown_metadata(PAYLOAD).value)
    # Every Markdown entry of the definitions goes through that one helper.
    defs = Path(__file__).parents[1] / "litpipe" / "defs"
    direct = [
        path.name
        for path in defs.rglob("*.py")
        if "MetadataValue.md(" in path.read_text("utf-8") and path.name != "report_metadata.py"
    ]
    assert direct == []


def two_page_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for text in ["First page of a paper about yeast.", "Second page of the same paper."]:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=10)
    doc.save(path)
    return path


def test_a_pdf_over_the_page_limit_fails_with_one_line_naming_the_setting(tmp_path: Path) -> None:
    pdf = two_page_pdf(tmp_path / "long.pdf")
    with pytest.raises(IngestError) as refused:
        parse_pdf(pdf, "long", PdfLimits(max_pages=1))
    assert str(refused.value) == "2 pages, over the limit of 1 (setting ingest.max_pdf_pages)"


def test_a_file_over_the_byte_limit_fails_before_it_is_opened(tmp_path: Path) -> None:
    # Not even a PDF: refused for its size, so it was never read.
    big = tmp_path / "big.pdf"
    big.write_bytes(b"x" * 2_000)
    with pytest.raises(IngestError) as refused:
        parse_pdf(big, "big", PdfLimits(max_bytes=1_000))
    assert (
        str(refused.value) == "2,000 bytes, over the limit of 1,000 (setting ingest.max_pdf_bytes)"
    )


@pytest.mark.slow  # a whole `litpipe run` (about 6 s)
def test_run_fails_the_paper_over_the_limit_and_says_which_setting(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "long"
    folder.mkdir()
    two_page_pdf(folder / "long.pdf")
    monkeypatch.setenv("LITPIPE_INGEST__MAX_PDF_PAGES", "1")
    home = tmp_path / "home"
    code = main(["run", str(folder), "--home", str(home), "--embedder", str(tiny_model)])
    report = json.loads((home / "outputs" / "long" / "report.json").read_text("utf-8"))
    assert code == 1 and report["papers"] == 0
    (failure,) = report["failed_papers"]
    assert failure["reason"].endswith("2 pages, over the limit of 1 (setting ingest.max_pdf_pages)")


def test_a_folder_without_a_pdf_is_a_usage_error_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "readme.txt").write_text("no paper here")
    home = tmp_path / "home"
    assert main(["run", str(folder), "--home", str(home)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"litpipe run: {folder}: no .pdf file in this folder or below it; expected a folder of "
        "PDFs or a .csv/.jsonl table (columns id, title, abstract)"
    )
    assert not home.exists()


def test_a_table_without_the_required_columns_is_a_usage_error_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "ids.csv"
    table.write_text("id\n1\n2\n", encoding="utf-8")
    home = tmp_path / "home"
    assert main(["run", str(table), "--home", str(home)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"litpipe run: {table}: missing required columns 'title', 'abstract' (found: id)"
    )
    assert not home.exists()
