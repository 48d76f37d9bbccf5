"""The comparison table as `litpipe run` builds it on the nine bundled PDFs, offline: the files
beside the synthesis, every filled cell citing a stored chunk of its own paper, the support
grades, other aspects rebuilding the table alone, and `synthesis.html` in a browser (sorting,
citations)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import dagster as dg
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.extractive.comparison_table import FIXED_ASPECTS
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import ComparisonTable
from litpipe_tests.browser import headless_chromium, needs_chromium
from litpipe_tests.bundled import BUNDLED_PDFS_GROUP, CORPUS, PDFS_BY_SIZE
from litpipe_tests.homes import home_instance

pytestmark = pytest.mark.xdist_group(BUNDLED_PDFS_GROUP)

COLLECTION = CORPUS.name


def table_of(home: Path, model: Path) -> ComparisonTable:
    store = ArtifactStore(home / "artifacts", Embedder(str(model)).embedder_id, PER_EMBEDDER_ASSETS)
    return store.read(["comparison_table"], COLLECTION, ComparisonTable)


def test_run_writes_one_row_per_paper_whose_filled_cells_cite_their_own_stored_chunks(
    bundled_pdfs_home: Path, tiny_model: Path
) -> None:
    outputs = bundled_pdfs_home / "outputs" / COLLECTION
    with (outputs / "comparison.csv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == ["id", "title", *FIXED_ASPECTS]
    assert len(rows) - 1 == len(PDFS_BY_SIZE)
    markdown = (outputs / "comparison.md").read_text("utf-8")
    assert all(
        f"| {aspect} |" in markdown or f" {aspect} |" in markdown for aspect in FIXED_ASPECTS
    )

    table = table_of(bundled_pdfs_home, tiny_model)
    assert table.aspects == list(FIXED_ASPECTS) and table.aspects_engine == "offline"
    stored = ChunkStore(bundled_pdfs_home / "lancedb").chunk_rows(
        Embedder(str(tiny_model)).embedder_id, ["chunk_id", "paper_id", "page_start", "page_end"]
    )
    chunks = {row["chunk_id"]: row for row in stored.to_pylist()}
    filled = [(row, cell) for row in table.rows for cell in row.cells if not cell.not_reported]
    assert filled, "the offline engine fills some cells of the bundled papers"
    for row, cell in filled:
        assert cell.citations, (row.paper_id, cell.aspect)
        for citation in cell.citations:
            assert citation.paper_id == row.paper_id
            for chunk_id in citation.chunk_ids:
                chunk = chunks[chunk_id]
                assert chunk["paper_id"] == row.paper_id
                assert chunk["page_start"] <= citation.page <= chunk["page_end"]
        # The grades are kept on the cells and shown on the page.
        assert cell.grade is not None
    page = (outputs / "synthesis.html").read_text("utf-8")
    assert 'id="comparison"' in page and 'class="comparison-table"' in page
    evaluations = home_instance(
        bundled_pdfs_home
    ).event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("comparison_table"), "support"), limit=1
    )
    assert evaluations and evaluations[0].status.value == "SUCCEEDED"


def test_other_aspects_rebuild_the_table_alone_not_the_papers_stages(
    bundled_pdfs_home: Path, tiny_model: Path, tmp_path: Path
) -> None:
    home = Path(shutil.copytree(bundled_pdfs_home, tmp_path / "home"))
    before = materialized(home)
    flags = ["--collection", COLLECTION, "--home", str(home), "--embedder", str(tiny_model)]
    aspects = 'comparison.aspects=["organism", "method"]'
    assert main(["run", str(CORPUS), *flags, "--set", aspects]) == 0
    after = materialized(home)
    rebuilt = {asset for asset in after if after[asset] != before.get(asset)}
    assert rebuilt == {"comparison_table", "collection_outputs"}
    table = table_of(home, tiny_model)
    assert table.aspects == ["organism", "method"] and table.aspects_engine == "settings"
    with (home / "outputs" / COLLECTION / "comparison.csv").open(encoding="utf-8") as file:
        assert next(csv.reader(file)) == ["id", "title", "organism", "method"]


def materialized(home: Path) -> dict[str, int]:
    """Materializations by asset, every partition together."""
    instance = home_instance(home)
    counts = {}
    for key in instance.get_asset_keys():
        records = instance.fetch_materializations(key, limit=10_000).records
        counts[key.to_user_string()] = len(records)
    return counts


@needs_chromium
def test_the_synthesis_page_sorts_the_table_and_each_citation_opens_its_own_papers_passage(
    bundled_pdfs_home: Path, tiny_model: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    table = table_of(bundled_pdfs_home, tiny_model)
    titles = {row.paper_id: " ".join(row.title.split()) for row in table.rows}
    page = bundled_pdfs_home / "outputs" / COLLECTION / "synthesis.html"
    with headless_chromium(tmp_path) as driver:
        driver.get(page.as_uri())
        section = driver.find_element(By.ID, "comparison")

        def column(index: int) -> list[str]:
            rows = section.find_elements(By.CSS_SELECTOR, "table.comparison-table tbody tr")
            return [row.find_elements(By.TAG_NAME, "td")[index].text for row in rows]

        # As built: one row per paper, in the table's order; a click on the title column sorts
        # by title, a second click the other way.
        assert column(0) == [titles[row.paper_id] for row in table.rows]
        headers = section.find_elements(By.CSS_SELECTOR, "table.comparison-table th")
        assert [h.text for h in headers] == ["Paper", *table.aspects]
        headers[0].click()
        ascending = column(0)
        assert ascending == sorted(titles.values(), key=str.casefold)
        headers[0].click()
        assert column(0) == ascending[::-1]

        # Every cell's citation opens a passage of the row's own paper, on the cited page.
        links = section.find_elements(
            By.CSS_SELECTOR, "table.comparison-table td a.cite:not(.more)"
        )
        assert links, "no cited cell on the page"
        for link in links[:6]:
            row = link.find_element(By.XPATH, "./ancestor::tr")
            title = row.find_elements(By.TAG_NAME, "td")[0].get_attribute("textContent")
            target = link.get_attribute("href").split("#", 1)[1]
            # Read by the paper's key with the page; litpipe's marker leads the pop-up.
            cited_page = link.get_attribute("textContent").rsplit(", p. ", 1)[1]
            assert link.get_attribute("title").split(" · ", 1)[0].endswith(f":{cited_page}")
            link.click()
            assert driver.execute_script("return location.hash") == f"#{target}"
            passage = driver.find_element(By.ID, target)
            assert passage.is_displayed()
            where = passage.find_element(By.CSS_SELECTOR, "p.where").text
            assert where.startswith(title), (where, title)
            assert f"p. {cited_page} " in f"{where} " or "pp. " in where, (where, cited_page)
        # A title links to its paper's article on the page.
        paper = section.find_element(By.CSS_SELECTOR, "table.comparison-table td a")
        anchor = paper.get_attribute("href").split("#", 1)[1]
        assert driver.find_element(By.ID, anchor).tag_name == "article"
