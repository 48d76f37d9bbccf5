"""The comparison table below the graph: its settings, the offline cells, a model's row checked,
the rows asked once (through the real client, its cache and the local stub), the support
grades, and the files and page section people read."""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel, ValidationError

from litpipe.agents.asker import Asker
from litpipe.agents.comparison_table.comparison_cells import comparison_rows
from litpipe.cli import main
from litpipe.commands.flags import one_line
from litpipe.evaluation.comparison_table import cells_support, graded_cells
from litpipe.extractive.comparison_table import (
    FIXED_ASPECTS,
    AspectsReply,
    CellReply,
    CellsReply,
)
from litpipe.extractive.related_work import count_words
from litpipe.llm.client import LLMClient
from litpipe.llm.errors import LLMError
from litpipe.llm.usage import UsageLedger
from litpipe.report.comparison import (
    COMPARISON_CSS,
    comparison_csv,
    comparison_html,
    comparison_markdown,
    comparison_passages,
)
from litpipe.report.page import GRADE_CSS, PAGE_CSS, CitationLinks, standalone_page
from litpipe.retrieval.hybrid import paper_retrievers
from litpipe.retrieval.rerank import NoReranker
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import (
    NOT_REPORTED,
    ComparisonTable,
    PaperAbstract,
    RetrievedChunk,
    SegmentGrade,
    SentenceGrade,
)
from litpipe.settings import AgentRoute, ComparisonSettings, LLMSettings, Route, Settings
from litpipe.text import strip_markers
from litpipe.workflows.comparison_table import (
    comparison_aspects,
    comparison_row,
    comparison_table,
    row_input,
)
from litpipe_tests.browser import headless_chromium, needs_chromium
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_store import paper as stored_paper

T = TypeVar("T", bound=BaseModel)

TITLES = {"yeast": "Wild yeast in oak forests", "mice": "Gut microbes of lean mice"}
# Each paper's passages: yeast says what it studied, its data and how it was tested; mice says
# its data, and neither says a word of its limitations.
PASSAGES = {
    "yeast": [
        retrieved_chunk(
            "yeast",
            0,
            2,
            "How wild yeast strains persist between seasons is poorly understood. We collected "
            "412 strains of Saccharomyces paradoxus from oak bark samples across twelve forests "
            "in three countries over four years of sampling.",
        ),
        retrieved_chunk(
            "yeast",
            1,
            5,
            "Growth assays, a plate-reader technique, were validated against a benchmark panel "
            "of lab strains, and the "
            "wild strains grew 30% faster at low temperature than the baseline strains.",
        ),
    ],
    "mice": [
        retrieved_chunk(
            "mice",
            0,
            3,
            "Stool samples were collected from a cohort of 60 lean mice and sequenced for their "
            "16S rRNA genes.",
        ),
    ],
}


def offline_asker() -> Asker:
    return Asker(LLMSettings(model=None))


def always(passages: list[RetrievedChunk]) -> Callable[[str], list[RetrievedChunk]]:
    """A search finding `passages` whatever the query."""
    return lambda query: passages


def search_of(paper_id: str) -> Callable[[str], list[RetrievedChunk]]:
    """The paper's own passages, whatever the query: the retriever over that paper alone."""
    return always(PASSAGES[paper_id])


def offline_rows(aspects: Sequence[str], comparison: ComparisonSettings | None = None) -> Any:
    settings = comparison or ComparisonSettings()
    inputs = [
        row_input(paper, TITLES[paper], search_of(paper), aspects, settings) for paper in TITLES
    ]
    return comparison_rows(inputs, offline_asker())


def cell(rows: Any, paper: str, aspect: str) -> Any:
    (row,) = [row for row in rows if row.paper_id == paper]
    (found,) = [cell for cell in row.cells if cell.aspect == aspect]
    return found


# Settings


@pytest.mark.parametrize(
    ("aspects", "message"),
    [
        (
            list("abcdefg"),
            "comparison.aspects: 7 aspects, over comparison.max_aspects (6): name fewer, or "
            "raise comparison.max_aspects",
        ),
        (["organism", " "], "comparison.aspects: an aspect is empty: name each aspect in words"),
        (
            ["organism", "Organism ", "method"],
            "comparison.aspects: an aspect named twice: 'organism'",
        ),
    ],
)
def test_an_aspect_list_it_cannot_use_is_refused_in_one_line(
    aspects: list[str], message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings.model_validate({"comparison": {"aspects": aspects}})
    assert one_line(refused.value) == message


def test_set_names_the_aspects_and_a_list_over_the_limit_is_refused_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(tmp_path / "home")]
    assert main(["config", *home, "--set", 'comparison.aspects=["organism", "method"]']) == 0
    shown = capsys.readouterr().out
    assert re.search(r'^comparison\.aspects += \["organism", "method"\]  # flag$', shown, re.M)
    over = "comparison.aspects=" + str(["a", "b", "c"]).replace("'", '"')
    assert main(["config", *home, "--set", "comparison.max_aspects=2", "--set", over]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "comparison.aspects: 3 aspects, over comparison.max_aspects (2)" in err


# The offline engine


def test_offline_cells_quote_their_own_paper_and_cite_only_its_passages() -> None:
    rows = offline_rows(FIXED_ASPECTS)
    for row in rows:
        own = {chunk.chunk_id for chunk in PASSAGES[row.paper_id]}
        assert [c.aspect for c in row.cells] == list(FIXED_ASPECTS)
        for written in row.cells:
            assert written.engine == "offline"
            if written.not_reported:
                assert written.value == NOT_REPORTED and not written.citations
                continue
            assert written.citations
            for citation in written.citations:
                assert citation.paper_id == row.paper_id
                assert set(citation.chunk_ids) <= own
            # The paper's own words, in order.
            words = strip_markers(written.value).removesuffix("…").split()
            text = " ".join(" ".join(chunk.text for chunk in PASSAGES[row.paper_id]).split())
            assert " ".join(words) in text
    assert "412 strains" in cell(rows, "yeast", "data").value
    assert "[yeast:2]" in cell(rows, "yeast", "data").value
    assert "cohort of 60 lean mice" in cell(rows, "mice", "data").value
    assert "benchmark" in cell(rows, "yeast", "evaluation").value
    assert "[yeast:5]" in cell(rows, "yeast", "evaluation").value


def test_a_paper_silent_on_an_aspect_reads_not_reported() -> None:
    rows = offline_rows(FIXED_ASPECTS)
    for paper in TITLES:
        assert cell(rows, paper, "limitations").value == NOT_REPORTED
        assert cell(rows, paper, "limitations").not_reported
    # Mice's one passage holds none of evaluation's words ("benchmark", "validation", ...).
    assert cell(rows, "mice", "evaluation").not_reported
    # A paper with no passage at all for an aspect.
    inputs = row_input("mice", TITLES["mice"], always([]), ["organism"], ComparisonSettings())
    (row,) = comparison_rows([inputs], offline_asker())
    assert row.cells[0].value == NOT_REPORTED and row.passages == []


def test_a_cell_is_cut_to_its_word_limit_at_a_word_with_its_marker_kept() -> None:
    rows = offline_rows(["data"], ComparisonSettings(cell_words=8))
    value = cell(rows, "yeast", "data").value
    assert value == "We collected 412 strains of Saccharomyces paradoxus from … [yeast:2]"
    assert count_words(value) == 8
    # A value within the limit is the whole sentence, its marker before its full stop.
    whole = offline_rows(["data"], ComparisonSettings(cell_words=60))
    assert cell(whole, "mice", "data").value.endswith("16S rRNA genes [mice:3].")


def test_an_aspect_named_in_general_words_is_searched_as_the_fixed_aspect_it_means() -> None:
    rows = offline_rows(["method", "organism"])
    # "method" is too general a word to count: it is searched as "approach".
    assert not cell(rows, "yeast", "method").not_reported
    assert "plate-reader technique" in cell(rows, "yeast", "method").value
    assert cell(rows, "mice", "organism").not_reported  # neither passage says "organism"


def test_a_sentence_stating_the_aspects_move_is_its_value_before_one_sharing_its_words() -> None:
    # The methods sentence holds the main-result query's words ("higher", "lower"); the
    # abstract's "Here we show ..." holds none of them, and is the paper's main result.
    methods = retrieved_chunk(
        "yeast", 0, 6, "Colonies with higher or lower counts were replated on fresh agar."
    )
    shown = retrieved_chunk(
        "yeast",
        1,
        1,
        "Oak bark is sampled each spring. Here we show that wild strains overwinter in bark.",
    )
    inputs = row_input(
        "yeast", "T", always([methods, shown]), ["main result"], ComparisonSettings()
    )
    (row,) = comparison_rows([inputs], offline_asker())
    assert row.cells[0].value == "Here we show that wild strains overwinter in bark [yeast:1]."
    # Without the move, the sentence sharing the query's words is the value, as before.
    inputs = row_input("yeast", "T", always([methods]), ["main result"], ComparisonSettings())
    (row,) = comparison_rows([inputs], offline_asker())
    assert row.cells[0].value.startswith("Colonies with higher or lower counts")


def test_each_aspects_passages_are_taken_from_the_sections_that_state_it_first() -> None:
    found = [
        retrieved_chunk("yeast", index, index + 1, f"Passage {index} of the paper.")
        for index in range(5)
    ]
    sections = ["Results", "Methods", "Discussion", "Abstract", "Yeast strains"]
    found = [
        chunk.model_copy(update={"section": section})
        for chunk, section in zip(found, sections, strict=True)
    ]
    settings = ComparisonSettings(passages_per_aspect=2)
    inputs = row_input(
        "yeast", "T", always(found), ["main result", "limitations", "data", "organism"], settings
    )
    kept = {item.aspect: [chunk.section for chunk in item.passages] for item in inputs.aspects}
    assert kept == {
        "main result": ["Abstract", "Results"],  # then the search's own order
        "limitations": ["Discussion", "Results"],
        "data": ["Methods", "Results"],
        "organism": ["Results", "Methods"],  # not a fixed aspect: the search's order
    }


def test_the_back_matter_is_never_a_value() -> None:
    funding = retrieved_chunk(
        "yeast", 7, 9, "Any findings and conclusions are those of the authors and key funders."
    )
    thanks = funding.model_copy(update={"chunk_id": "yeast:8", "section": "Acknowledgements"})
    stated = retrieved_chunk(
        "yeast", 9, 1, "This work was supported by a key grant; its main finding is stated here."
    )
    for passages in ([thanks], [stated]):
        inputs = row_input("yeast", "T", always(passages), ["main result"], ComparisonSettings())
        (row,) = comparison_rows([inputs], offline_asker())
        assert row.cells[0].not_reported, passages
    # The same sentence in the paper's results is a value.
    inputs = row_input("yeast", "T", always([funding]), ["main result"], ComparisonSettings())
    (row,) = comparison_rows([inputs], offline_asker())
    assert row.cells[0].value.endswith("[yeast:9].")


def test_aspects_fixed_by_the_settings_are_used_as_given_else_the_fixed_six_offline() -> None:
    abstracts = [
        PaperAbstract(paper_id=p, title=t, abstract="An abstract.", source="parsed", engine="x")
        for p, t in TITLES.items()
    ]
    offline = offline_asker()
    fixed = ComparisonSettings(aspects=["organism", "method"])
    assert comparison_aspects("c", abstracts, {}, fixed, offline) == (
        ["organism", "method"],
        "settings",
    )
    four = ComparisonSettings(max_aspects=4)
    assert comparison_aspects("c", abstracts, {}, four, offline) == (
        ["problem", "approach", "data", "evaluation"],
        "offline",
    )


# A model's replies, checked


class ScriptedClient:
    """Answers each call with the next of `replies`, recording the agents asked."""

    def __init__(self, *replies: BaseModel) -> None:
        self.replies = list(replies)
        self.asked: list[str] = []

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        self.asked.append(route.agent)
        reply = self.replies.pop(0)
        assert isinstance(reply, schema)
        return reply

    def complete_each_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T | LLMError]:
        return [self.complete_sync(route, messages, schema) for messages in list_of_messages]


def model_asker(agent: str, client: ScriptedClient) -> Asker:
    llm = LLMSettings(model=None, agents={agent: AgentRoute(model="openai/m")})
    return Asker(llm, client)


def test_a_model_cell_citing_another_paper_or_nothing_is_corrected_never_kept_as_a_guess() -> None:
    aspects = ["organism", "data", "evaluation", "limitations", "main result", "approach"]
    reply = CellsReply(
        cells=[
            CellReply(aspect="Organism", value="Saccharomyces paradoxus [yeast:2]"),
            # Another paper's marker, beside its own: the other goes.
            CellReply(aspect="data", value="412 oak bark strains [yeast:2; mice:3]"),
            # Only another paper's marker: nothing of its own left, so not reported.
            CellReply(aspect="evaluation", value="16S sequencing [mice:3]"),
            # A guess with no marker at all.
            CellReply(aspect="limitations", value="a small sample of forests"),
            # A page of its own paper it was not given.
            CellReply(aspect="main result", value="wild strains grow faster [yeast:9]"),
            CellReply(aspect="approach", value="Not reported."),
            CellReply(aspect="unasked", value="anything [yeast:2]"),
        ]
    )
    client = ScriptedClient(reply)
    inputs = row_input("yeast", TITLES["yeast"], search_of("yeast"), aspects, ComparisonSettings())
    (row,) = comparison_rows([inputs], model_asker("comparison_cells", client))
    assert client.asked == ["comparison_cells"]
    values = {c.aspect: c.value for c in row.cells}
    assert values == {
        "organism": "Saccharomyces paradoxus [yeast:2]",
        "data": "412 oak bark strains [yeast:2]",
        "evaluation": NOT_REPORTED,
        "limitations": NOT_REPORTED,
        "main result": NOT_REPORTED,
        "approach": NOT_REPORTED,
    }
    assert [c.engine for c in row.cells] == ["openai/m"] * len(aspects)
    assert row.cells[1].citations[0].chunk_ids == ["yeast:0"]


def test_a_model_value_over_the_limit_is_cut_and_its_aspects_cleaned() -> None:
    long = "strains " * 20 + "[yeast:2]"
    client = ScriptedClient(CellsReply(cells=[CellReply(aspect="data", value=long)]))
    twelve = ComparisonSettings(cell_words=12)
    inputs = row_input("yeast", TITLES["yeast"], search_of("yeast"), ["data"], twelve)
    (row,) = comparison_rows([inputs], model_asker("comparison_cells", client))
    assert row.cells[0].value == "strains " * 11 + "strains … [yeast:2]"

    proposed = AspectsReply(aspects=["Organism", " organism ", "delivery  method", "x", "y"])
    client = ScriptedClient(proposed)
    abstracts = [
        PaperAbstract(paper_id="yeast", title="T", abstract="A.", source="parsed", engine="x")
    ]
    aspects, engine = comparison_aspects(
        "c",
        abstracts,
        {},
        ComparisonSettings(max_aspects=3),
        model_asker("comparison_aspects", client),
    )
    assert (aspects, engine) == (["Organism", "delivery method", "x"], "openai/m")


# One call per paper, and only for a paper whose row is new


def test_an_unchanged_papers_row_is_not_asked_again_and_new_aspects_ask_every_row(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    settings = stub_settings(tmp_path, stub_llm)

    def rows(papers: Sequence[str], aspects: Sequence[str]) -> Any:
        asker = Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger()))
        inputs = [
            row_input(p, TITLES.get(p, p), search_of(p), aspects, settings.comparison)
            for p in papers
        ]
        return comparison_rows(inputs, asker)

    first = rows(["yeast"], ["organism", "data"])
    assert stub_llm.request_count == 1
    assert "[yeast:2]" in cell(first, "yeast", "data").value
    assert cell(first, "yeast", "data").engine == "openai/stub"
    # A new paper: its own row is the one call; the yeast row comes from the cache, unchanged.
    second = rows(["yeast", "mice"], ["organism", "data"])
    assert stub_llm.request_count == 2
    assert second[0] == first[0]
    assert "[mice:3]" in cell(second, "mice", "data").value
    # Other aspects: every row is new.
    rows(["yeast", "mice"], ["organism", "method"])
    assert stub_llm.request_count == 4


def test_the_aspects_are_proposed_in_one_call_answered_by_the_cache_when_asked_again(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    settings = stub_settings(tmp_path, stub_llm, comparison={"max_aspects": 3})
    abstracts = [
        PaperAbstract(paper_id=p, title=t, abstract="An abstract.", source="parsed", engine="x")
        for p, t in TITLES.items()
    ]
    for _ in range(2):
        asker = Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger()))
        proposed = comparison_aspects("c", abstracts, {}, settings.comparison, asker)
        assert proposed == (["organism", "method", "main finding"], "openai/stub")
    assert stub_llm.request_count == 1


# The support check


def test_every_filled_cell_is_graded_and_a_cell_its_passage_does_not_hold_is_flagged() -> None:
    offline = offline_asker()
    grading = Settings().grading
    rows = offline_rows(FIXED_ASPECTS)
    table = graded_cells(comparison_table("c", rows, FIXED_ASPECTS, "offline"), grading, offline)
    filled = [c for row in table.rows for c in row.cells if not c.not_reported]
    assert filled and all(c.grade is not None and c.grade.verdict == "supported" for c in filled)
    assert all(c.grade is None for row in table.rows for c in row.cells if c.not_reported)
    assert cells_support(table, "offline").passed

    wrong = (
        table.rows[0]
        .cells[2]
        .model_copy(
            update={"value": "Zebrafish embryos imaged under a confocal microscope [yeast:2]"}
        )
    )
    tampered = table.model_copy(
        update={
            "rows": [
                table.rows[0].model_copy(
                    update={"cells": [*table.rows[0].cells[:2], wrong, *table.rows[0].cells[3:]]}
                ),
                *table.rows[1:],
            ]
        }
    )
    outcome = cells_support(graded_cells(tampered, grading, offline), "offline")
    assert not outcome.passed
    assert "first flagged: yeast, data: 'Zebrafish embryos" in outcome.description
    assert outcome.metadata["flagged"][0]["verdict"] == "unsupported"  # type: ignore[index,call-overload]


def test_a_table_of_rows_for_other_aspects_is_refused() -> None:
    rows = offline_rows(["data"])
    with pytest.raises(ValueError, match="the row of yeast has cells for \\['data'\\]"):
        comparison_table("c", rows, ["data", "organism"], "settings")


# What people read


def rendered_table() -> ComparisonTable:
    rows = offline_rows(["data", "limitations"])
    rows[0] = rows[0].model_copy(update={"title": "Yeast | oak\nforests"})
    table = comparison_table("c", rows, ["data", "limitations"], "settings")
    grade = SentenceGrade(
        sentence=rows[1].cells[0].value,
        verdict="unsupported",
        segments=[
            SegmentGrade(
                text=rows[1].cells[0].value,
                markers=["[mice:3]"],
                verdict="unsupported",
                reason="the passage does not say it",
            )
        ],
    )
    flagged = rows[1].cells[0].model_copy(update={"grade": grade})
    mice = rows[1].model_copy(update={"cells": [flagged, rows[1].cells[1]]})
    return table.model_copy(update={"rows": [rows[0], mice]})


def test_the_markdown_and_csv_give_a_row_per_paper_id_and_title_first_markers_kept() -> None:
    table = rendered_table()
    markdown = comparison_markdown(table)
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert lines[0] == "| id | title | data | limitations |"
    assert lines[2].startswith("| yeast | Yeast \\| oak forests | We collected 412 strains")
    assert "[yeast:2]" in lines[2] and lines[2].endswith(f"| {NOT_REPORTED} |")
    # Every row has its columns, no more: the title's pipe is escaped, its newline gone.
    assert all(len(re.split(r"(?<!\\)\|", line)) == 6 for line in lines)

    parsed = list(csv.reader(io.StringIO(comparison_csv(table))))
    assert parsed[0] == ["id", "title", "data", "limitations"]
    assert parsed[1][:2] == ["yeast", "Yeast | oak\nforests"]
    assert parsed[1][2] == table.rows[0].cells[0].value and "[yeast:2]" in parsed[1][2]
    assert parsed[2][0] == "mice" and parsed[2][3] == NOT_REPORTED
    assert len(parsed) == 3


def test_the_html_section_sorts_links_citations_and_titles_and_marks_what_is_flagged() -> None:
    table = rendered_table()
    links = CitationLinks(comparison_passages(table), TITLES)
    section = comparison_html(table, links, lambda paper: f'<a href="#paper-{paper}">{paper}</a>')
    assert '<table class="comparison-table">' in section
    assert "<script>" in section and 'addEventListener("click"' in section
    assert '<th scope="col">data</th><th scope="col">limitations</th>' in section
    # The cell's citation links to its passage, which the page's Passages section then shows.
    assert '<a class="cite" href="#chunk-yeast_3a0"' in section
    assert 'id="chunk-yeast_3a0"' in links.passages()
    assert '<a href="#paper-mice">mice</a>' in section
    assert f'<td class="not-reported" data-sort="">{NOT_REPORTED}</td>' in section
    assert 'class="graded unsupported" title="unsupported: the passage does not say it"' in section
    assert section.count("<tr>") == 3


@pytest.mark.browser
@needs_chromium
def test_a_click_on_a_header_sorts_the_rows_by_that_column_not_reported_last(
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By

    rows = offline_rows(["data", "limitations"])
    silent = rows[0].model_copy(
        update={
            "paper_id": "bees",
            "title": "Bees",
            "cells": [
                rows[0].cells[1].model_copy(update={"aspect": "data"}),
                rows[0].cells[1],
            ],
        }
    )
    table = comparison_table("c", [*rows, silent], ["data", "limitations"], "settings")
    links = CitationLinks(comparison_passages(table), TITLES)
    section = comparison_html(table, links, lambda paper: html.escape(paper))
    page = tmp_path / "comparison.html"
    css = PAGE_CSS + GRADE_CSS + COMPARISON_CSS
    page.write_text(standalone_page("c", "", [("comparison", "Comparison", section)], css))

    def papers(driver: Any) -> list[str]:
        cells = driver.find_elements(
            By.CSS_SELECTOR, "table.comparison-table tbody tr td:first-child"
        )
        return [cell.text for cell in cells]

    with headless_chromium(tmp_path) as driver:
        driver.get(page.as_uri())
        assert papers(driver) == ["yeast", "mice", "bees"]
        data = driver.find_elements(By.CSS_SELECTOR, "table.comparison-table th")[1]
        data.click()  # "Stool samples ..." before "We collected ...", then the silent bees
        assert papers(driver) == ["mice", "yeast", "bees"]
        assert data.get_attribute("aria-sort") == "ascending"
        data.click()
        assert papers(driver) == ["yeast", "mice", "bees"]
        assert data.get_attribute("aria-sort") == "descending"
        title = driver.find_elements(By.CSS_SELECTOR, "table.comparison-table th")[0]
        title.click()
        assert papers(driver) == ["bees", "mice", "yeast"]


def test_a_row_is_written_from_its_own_papers_chunks_found_by_the_hybrid_retriever(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    """Two papers in one table: each row's passages and citations are its own paper's, though
    the other holds the same words."""
    store = ChunkStore(tmp_path / "lancedb")
    texts = {
        "p1": ["We collected 300 samples of soil from a cohort of farms.", "Unrelated text."],
        "p2": ["We collected 900 samples of water from a cohort of lakes."],
    }
    store.embed_papers([stored_paper(p, chunks) for p, chunks in texts.items()], fake_embedder)
    retrievers = paper_retrievers(store, fake_embedder, sorted(texts))
    settings = Settings(home=tmp_path / "home", corpus_roots=[])
    rows = [
        comparison_row(
            p,
            p,
            retrievers[p],
            NoReranker(),
            ["data"],
            settings.comparison,
            settings.retrieval,
            offline_asker(),
        )
        for p in sorted(texts)
    ]
    for row in rows:
        assert {chunk.paper_id for chunk in row.passages} == {row.paper_id}
        (data,) = row.cells
        assert [c.paper_id for c in data.citations] == [row.paper_id]
    assert "300 samples of soil" in rows[0].cells[0].value
    assert "900 samples of water" in rows[1].cells[0].value
