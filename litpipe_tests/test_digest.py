"""The nightly digest: its builder and renderer on hand-made papers, the sensor recording arrivals,
and three nights of the schedule over a Dagster instance with papers added on two days."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from xml.etree import ElementTree

import dagster as dg

from litpipe.agents.asker import Asker
from litpipe.catalog import Catalog
from litpipe.defs.automation import AUTOMATION_SENSOR
from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import PAPERS
from litpipe.defs.resources import CatalogResource
from litpipe.ingest.sources import discover
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.report.digest import NOT_ANALYSED, digest_html, digest_markdown, write_digest
from litpipe.report.page import PAPERS_PER_PAGE, chunk_anchor
from litpipe.runtime.runner import (
    collection_asset_keys,
    open_instance,
    paper_asset_keys,
    phases,
    register,
    run_papers,
)
from litpipe.schemas import (
    Citation,
    CitationContext,
    CitationEdge,
    CitationGraph,
    CitingSentence,
    ComparisonCell,
    ComparisonRow,
    ComparisonTable,
    Digest,
    Insight,
    OftenCited,
    PaperAbstract,
    PaperAnswers,
    PaperArrival,
    PaperSource,
    ReferenceRecord,
    RelationshipAnalysis,
)
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.workflows.nightly_digest import MappingSources, build_digest
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_cli import folder_with
from litpipe_tests.test_insights import answer
from litpipe_tests.test_synthesis_pipeline import requests_of

COLLECTION = "bio"
DAY = date(2026, 1, 4)


def at(day: date, hour: int = 10) -> datetime:
    return datetime.combine(day, time(hour), tzinfo=UTC)


# Hand-made papers: two that were there before (one covered by the collection's analysis, one
# not), a new one relating to them, and a new one whose answers are not built yet.

OLD = "old.paper"
LATE = "late.paper"
NEW = "new.paper"
PENDING = "pending.paper"
TITLES = {
    OLD: "Base editing of the sickle mutation",
    LATE: "Delivery of editors by lipid nanoparticles",
    NEW: "Prime <b>editing</b> & the sickle mutation",
    PENDING: "A paper still being read",
}
CHUNKS = {
    OLD: retrieved_chunk(OLD, 0, 2, "Base editing corrected the sickle mutation in 80% of cells."),
    LATE: retrieved_chunk(LATE, 0, 3, "Lipid nanoparticles delivered the editors to the liver."),
    NEW: retrieved_chunk(
        NEW, 0, 5, "Prime editing improved correction of the sickle mutation over base editing."
    ),
}


def answers_of(paper_id: str) -> PaperAnswers:
    chunk = CHUNKS[paper_id]
    text = f"{chunk.text} [{paper_id}:{chunk.page_start}]"
    return PaperAnswers(
        paper_id=paper_id,
        mode="single",
        engine="offline",
        answers=[answer(f"{paper_id}:q00", "What does it find?", text, [chunk], paper_id)],
    )


def abstract_of(paper_id: str) -> PaperAbstract:
    return PaperAbstract(
        paper_id=paper_id,
        title=TITLES[paper_id],
        abstract=f"The abstract of {TITLES[paper_id]}.",
        source="parsed",
        engine="parsed",
    )


def arrival(paper_id: str, hour: int) -> PaperArrival:
    return PaperArrival(
        paper_id=paper_id,
        arrived_at=at(DAY, hour).isoformat(timespec="microseconds"),
        collections=[COLLECTION],
        source=PaperSource(
            paper_id=paper_id,
            kind="pdf",
            path=f"/inbox/{COLLECTION}/{paper_id}.pdf",
            content_sha256="0" * 64,
        ),
    )


def analysis_of(paper_ids: list[str]) -> RelationshipAnalysis:
    """The collection's last analysis, numbering insights `i01`... as the real one does (so
    they clash with the new papers' own numbering unless the digest renumbers them)."""
    insights = [
        Insight(
            insight_id=f"i{index:02d}",
            paper_id=paper_id,
            papers=[paper_id],
            question_ids=[f"{paper_id}:q00"],
            text=answers_of(paper_id).answers[0].text,
            citations=answers_of(paper_id).answers[0].citations,
        )
        for index, paper_id in enumerate(paper_ids, start=1)
    ]
    return RelationshipAnalysis(
        collection=COLLECTION,
        engine="offline",
        papers=paper_ids,
        theme="",
        narrative="",
        insights=insights,
        relationships=[],
        type_distribution={},
    )


def hand_made_digest(tmp_path: Path, comparison: ComparisonTable | None = None) -> Digest:
    settings = Settings(home=tmp_path / "home", corpus_roots=[])
    sources = MappingSources(
        abstract_of={p: abstract_of(p) for p in TITLES},
        answers_of={p: answers_of(p) for p in (OLD, LATE, NEW)},
        analysis_of={COLLECTION: analysis_of([OLD])},
        comparison_of={COLLECTION: comparison} if comparison is not None else {},
    )
    return build_digest(
        DAY,
        [arrival(NEW, 9), arrival(PENDING, 23)],
        {COLLECTION: [OLD, LATE]},
        sources,
        settings.synthesis,
        Asker(settings.llm),
    )


def test_a_new_paper_is_related_to_the_papers_there_before_and_a_pending_one_is_named(
    tmp_path: Path,
) -> None:
    digest = hand_made_digest(tmp_path)

    assert digest.day == "2026-01-04" and digest.engine == "offline"
    new, pending = digest.papers
    assert (new.paper_id, new.analysed, pending.paper_id, pending.analysed) == (
        NEW,
        True,
        PENDING,
        False,
    )
    assert [i.insight_id for i in new.insights] == [f"{NEW}/n1"]
    assert new.abstract == f"The abstract of {TITLES[NEW]}."
    assert pending.title == TITLES[PENDING] and pending.insights == []
    (bio,) = digest.collections
    assert bio.new_papers == [NEW, PENDING] and bio.existing_papers == 2
    # OLD's insight from the analysis (its `i01` renumbered), LATE's computed from its answers.
    assert bio.existing_insights_from == ["relationship_analysis", "paper_answers"]
    assert bio.relationships, "prime and base editing of the sickle mutation relate"
    for relation in bio.relationships:
        assert f"{NEW}/n1" in (relation.source, relation.target)
    named = {i.paper_id for i in bio.insights}
    assert OLD in named and named <= {OLD, LATE}
    assert {p.chunk_id for p in digest.passages} >= {CHUNKS[NEW].chunk_id, CHUNKS[OLD].chunk_id}


def test_the_digest_renders_as_markdown_and_an_escaped_standalone_page(tmp_path: Path) -> None:
    digest = hand_made_digest(tmp_path)

    markdown = digest_markdown(digest)
    assert markdown.startswith("# Nightly digest: 2026-01-04\n")
    # The title's markup is text in the Markdown as on the page.
    assert "## New papers" in markdown
    assert "### Prime &lt;b>editing&lt;/b> & the sickle mutation" in markdown
    assert f"[{NEW}:5]" in markdown and f"[{OLD}:2]" in markdown
    assert NOT_ANALYSED in markdown
    assert f"## How they relate to the rest of {COLLECTION}" in markdown
    assert "## References" in markdown and f"`{OLD}`" in markdown

    page = digest_html(digest)
    parsed = assert_well_formed(page)
    assert "Prime &lt;b&gt;editing&lt;/b&gt; &amp; the sickle mutation" in page
    assert "<b>editing</b>" not in page
    text = " ".join(parsed.text)
    assert "Not yet analysed" in text and "arrived 23:00 UTC" in text
    # Each cited passage is on the page, and the markers link to it.
    assert {chunk_anchor(p.chunk_id) for p in digest.passages} <= parsed.ids
    assert len(parsed.targets) >= 2

    # The section's relationship graph and type chart: inline on the page, files beside the
    # Markdown, which shows them.
    assert page.count("<svg") == 2
    graph_file = f"2026-01-04-{COLLECTION}-relationships.svg"
    types_file = f"2026-01-04-{COLLECTION}-relationship_types.svg"
    assert f"]({graph_file})" in markdown and f"]({types_file})" in markdown
    files = write_digest(tmp_path / "digests", digest)
    assert sorted(files) == sorted(["2026-01-04.html", "2026-01-04.md", types_file, graph_file])
    assert files["2026-01-04.md"].read_text("utf-8") == markdown
    graph = ElementTree.fromstring(files[graph_file].read_text("utf-8"))
    nodes = [t.text or "" for t in graph.iter("{http://www.w3.org/2000/svg}title")]
    assert any(TITLES[NEW] in node for node in nodes) and any(TITLES[OLD] in n for n in nodes)


# A paper of the collection that arrived after the day: the graph built since holds it.
LATER = "later.paper"


def work(title: str, citing: list[str]) -> OftenCited:
    return OftenCited(
        reference=ReferenceRecord(raw=f"{title} (2020).", title=title, year=2020),
        citing_paper_ids=sorted(citing),
        contexts=[
            CitingSentence(paper_id=p, sentence=f"{TITLES.get(p, p)} cites {title}.", page=1)
            for p in sorted(citing)
        ],
    )


def bio_citations() -> CitationGraph:
    """The collection's graph as built after the day: the new paper cites the old one, which
    LATE cites in its reference list only; four works none of them is."""
    sentence = "Unlike base editing [4], prime editing needs no double-strand break."
    return CitationGraph(
        collection=COLLECTION,
        papers=[OLD, LATE, NEW, LATER],
        edges=[
            CitationEdge(
                citing=NEW,
                cited=OLD,
                reference_index=3,
                rule="doi",
                contexts=[
                    CitationContext(
                        reference_index=3,
                        marker="[4]",
                        marker_start=20,
                        sentence=sentence,
                        char_start=0,
                        char_end=len(sentence),
                        page=2,
                        section="Introduction",
                    )
                ],
            ),
            CitationEdge(citing=LATE, cited=OLD, reference_index=0, rule="title_year"),
            CitationEdge(citing=LATER, cited=NEW, reference_index=0, rule="doi"),
        ],
        often_cited=[
            work("Cas9 <i>off-target</i> effects", [OLD, LATE, NEW]),
            work("Sickle cell disease in the clinic", [OLD, NEW]),
            work("Lipid nanoparticles at scale", [OLD, LATE]),
            work("A review read only later", [NEW, LATER]),
        ],
    )


def test_the_digest_names_the_works_the_new_papers_make_often_cited_and_their_citations(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[])
    sources = MappingSources(
        abstract_of={p: abstract_of(p) for p in TITLES},
        answers_of={p: answers_of(p) for p in (OLD, LATE, NEW)},
        citations_of={COLLECTION: bio_citations()},
    )
    digest = build_digest(
        DAY,
        [arrival(NEW, 9)],
        {COLLECTION: [OLD, LATE]},
        sources,
        settings.synthesis,
        Asker(settings.llm),
    )

    (bio,) = digest.collections
    # Those the new paper cites, most cited first; not one LATER alone makes often cited.
    assert [(w.reference.title, w.citing_paper_ids) for w in bio.often_cited] == [
        ("Cas9 <i>off-target</i> effects", sorted([OLD, LATE, NEW])),
        ("Sickle cell disease in the clinic", sorted([OLD, NEW])),
    ]
    assert [(edge.citing, edge.cited) for edge in bio.citations] == [(NEW, OLD)]
    assert digest.titles[OLD] == TITLES[OLD] and digest.titles[LATE] == TITLES[LATE]

    markdown = digest_markdown(digest)
    added = markdown.split(f"### Often cited, not in {COLLECTION}: what the new papers add\n")[1]
    assert "1. **Cas9 &lt;i>off-target&lt;/i> effects** (2020)." in added
    assert "More often cited: 2 papers cited it before today." in added
    assert "2. **Sickle cell disease in the clinic** (2020)." in added
    assert "Newly often cited: the papers new today bring it here." in added
    assert f"*{TITLES[NEW].replace('<', '&lt;')}* (new today)" in added
    assert "Lipid nanoparticles" not in markdown and "read only later" not in markdown
    assert (
        f"- {TITLES[NEW].replace('<', '&lt;')}, new today, cites {TITLES[OLD]}: “Unlike base "
        "editing [4], prime editing needs no double-strand break.” (p. 2)" in markdown
    )
    page = digest_html(digest)
    parsed = assert_well_formed(page)
    text = " ".join(" ".join(parsed.text).split())
    assert "Cas9 <i>off-target</i> effects" in text and "<i>off-target" not in page
    assert f"{TITLES[NEW]}, new today, cites {TITLES[OLD]}" in text
    assert "Newly often cited" in text and "More often cited" in text


def test_without_a_citation_graph_the_digest_says_nothing_of_citations(tmp_path: Path) -> None:
    digest = hand_made_digest(tmp_path)

    assert all(c.often_cited == [] and c.citations == [] for c in digest.collections)
    assert "Often cited" not in digest_markdown(digest) and "cites" not in digest_html(digest)


def comparison_row(paper_id: str) -> ComparisonRow:
    """A row of the table of aspects `organism` (cited, on a page no insight cites) and
    `dose` (not reported)."""
    chunk = retrieved_chunk(paper_id, 1, 7, "The editors were tested in human cells.")
    marker = f"[{paper_id}:{chunk.page_start}]"
    cited = Citation(
        marker=marker, paper_id=paper_id, page=chunk.page_start, chunk_ids=[chunk.chunk_id]
    )
    return ComparisonRow(
        paper_id=paper_id,
        title=TITLES[paper_id],
        cells=[
            ComparisonCell(
                aspect="organism",
                value=f"human <i>cells</i> {marker}",
                citations=[cited],
                not_reported=False,
                engine="offline",
            ),
            ComparisonCell(
                aspect="dose",
                value="not reported",
                citations=[],
                not_reported=True,
                engine="offline",
            ),
        ],
        passages=[chunk],
    )


def test_the_digest_lists_the_rows_the_new_papers_have_in_the_comparison_table(
    tmp_path: Path,
) -> None:
    table = ComparisonTable(
        collection=COLLECTION,
        aspects=["organism", "dose"],
        aspects_engine="offline",
        rows=[comparison_row(OLD), comparison_row(NEW)],
    )
    digest = hand_made_digest(tmp_path, table)

    # The new paper's row alone: the old paper's was there before, the pending one has none.
    (bio,) = digest.collections
    assert [row.paper_id for row in bio.comparison_rows] == [NEW]
    markdown = digest_markdown(digest)
    section = markdown.split(f"### New rows of the comparison table of {COLLECTION}\n")[1]
    section = section.split("\n## ")[0]
    new_title = TITLES[NEW].replace("<", "&lt;")
    assert f"- *{new_title}* (`{NEW}`)" in section
    assert f"  - organism: human &lt;i>cells&lt;/i> [{NEW}:7]" in section
    assert "  - dose: not reported" in section and TITLES[OLD] not in section
    (cited,) = [line for line in markdown.split("## References\n")[1].splitlines() if NEW in line]
    assert f"p. 7 `[{NEW}:7]`" in cited
    # On the page, the value's citation opens its passage.
    page = digest_html(digest)
    parsed = assert_well_formed(page)
    anchor = chunk_anchor(f"{NEW}:1")
    assert f'href="#{anchor}"' in page and anchor in parsed.ids
    assert "<i>cells" not in page
    text = " ".join(" ".join(parsed.text).split())
    assert "New rows of the comparison table of bio" in text and "dose: not reported" in text


def test_without_a_comparison_table_the_digest_lists_no_rows(tmp_path: Path) -> None:
    digest = hand_made_digest(tmp_path)

    assert all(c.comparison_rows == [] for c in digest.collections)
    assert "comparison table" not in digest_markdown(digest)
    assert "comparison table" not in digest_html(digest)


def test_a_day_without_papers_says_nothing_new(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[])
    empty = build_digest(DAY, [], {}, MappingSources(), settings.synthesis, Asker(settings.llm))

    assert empty.papers == [] and empty.collections == []
    assert digest_markdown(empty) == (
        "# Nightly digest: 2026-01-04\n\nNothing new on 2026-01-04: no paper arrived that day.\n"
    )
    parsed = assert_well_formed(digest_html(empty))
    assert "Nothing new on 2026-01-04" in " ".join(parsed.text)


def test_the_sensor_records_when_each_paper_arrived(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    folder_with(inbox / COLLECTION, PDFS_BY_SIZE[:1])
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    defs = build_definitions(**settings_groups(settings))
    context = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        resources={"catalog": CatalogResource(path=str(settings.paths.catalog_path))},
        definitions=defs,
    )
    before = datetime.now(UTC)
    requests = defs.resolve_sensor_def("new_papers_sensor")(context).dynamic_partitions_requests
    (paper_id,) = next(r.partition_keys or [] for r in requests if r.partitions_def_name == PAPERS)
    catalog = Catalog(settings.paths.catalog_path)

    assert before <= catalog.registered_at(paper_id) <= datetime.now(UTC)
    today = datetime.combine(before.date(), time(), tzinfo=UTC)
    arrived = catalog.arrivals(today, today + timedelta(days=1))
    assert [(a.paper_id, a.collections) for a in arrived] == [(paper_id, [COLLECTION])]


# Three nights of the automation, through Dagster.

DAY_1, DAY_2, DAY_3 = date(2026, 1, 2), date(2026, 1, 3), date(2026, 1, 4)


def ingest(settings: Settings, instance: dg.DagsterInstance, folder: Path, when: datetime) -> None:
    """Papers registered at `when` (as `litpipe run` or the sensor would), then built."""
    registrations = register(settings.paths, instance, discover(folder, COLLECTION), now=when)
    run = run_papers(settings, instance, registrations)
    assert run.collection_failure is None
    assert all(outcome.status != "failed" for outcome in run.outcomes)


def nightly_run(settings: Settings, instance: dg.DagsterInstance, night: datetime) -> Digest:
    """What the automation does at `night`: the digest's partition its condition requests
    (its first tick, an hour before, requests none), executed."""
    defs = build_definitions(**settings_groups(settings))
    digest = dg.AssetKey("nightly_digest")
    before = dg.evaluate_automation_conditions(
        defs, instance, dg.AssetSelection.assets(digest), night - timedelta(hours=1)
    )
    assert before.get_requested_partitions(digest) == set()
    tick = dg.evaluate_automation_conditions(
        defs, instance, dg.AssetSelection.assets(digest), night, before.cursor
    )
    (partition,) = tick.get_requested_partitions(digest)
    result = defs.resolve_job_def("nightly_digest_job").execute_in_process(
        partition_key=partition, instance=instance
    )
    assert result.success
    return result.output_for_node("nightly_digest")


def new_papers_section(markdown: str) -> str:
    """The digest's `## New papers` section."""
    found = re.search(r"^## New papers\n(.*?)(?=^## )", markdown, re.M | re.S)
    return found.group(1) if found else ""


def test_three_nights_three_digests_each_paper_in_its_days_only(
    tmp_path: Path, tiny_model: Path
) -> None:
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)}
    )
    instance = open_instance(settings.llm, settings.paths)
    first_day = folder_with(tmp_path / "day1", PDFS_BY_SIZE[:1])
    third_day = folder_with(tmp_path / "day3", PDFS_BY_SIZE[1:3])

    ingest(settings, instance, first_day, at(DAY_1, 14))
    digests = {DAY_1: nightly_run(settings, instance, at(DAY_2, 2))}
    digests[DAY_2] = nightly_run(settings, instance, at(DAY_3, 2))  # nothing arrived on day 2
    ingest(settings, instance, third_day, at(DAY_3, 9))
    digests[DAY_3] = nightly_run(settings, instance, at(DAY_3 + timedelta(days=1), 2))

    # Each night built the day before: three digests, three pairs of files.
    assert [d.day for d in digests.values()] == ["2026-01-02", "2026-01-03", "2026-01-04"]
    out = settings.paths.outputs_root / "digests"
    markdown = {day: (out / f"{day}.md").read_text("utf-8") for day in digests}
    for day in digests:
        assert_well_formed((out / f"{day}.html").read_text("utf-8"))

    catalog = Catalog(settings.paths.catalog_path)
    first = {a.paper_id for a in catalog.arrivals(at(DAY_1, 0), at(DAY_2, 0))}
    third = {a.paper_id for a in catalog.arrivals(at(DAY_3, 0), at(DAY_3, 23))}
    assert len(first) == 1 and len(third) == 2
    assert {p.paper_id for p in digests[DAY_1].papers} == first
    assert digests[DAY_2].papers == []
    assert "Nothing new on 2026-01-03" in markdown[DAY_2]
    assert {p.paper_id for p in digests[DAY_3].papers} == third
    # Each paper is among the new papers of its own day's digest only.
    for day, digest in digests.items():
        listed = new_papers_section(markdown[day])
        for paper_id in first | third:
            assert (paper_id in listed) == any(p.paper_id == paper_id for p in digest.papers)
    for paper in [*digests[DAY_1].papers, *digests[DAY_3].papers]:
        assert paper.analysed and paper.insights and paper.abstract

    # Day 3 relates its papers' insights to the one paper there before (from the analysis).
    (bio,) = digests[DAY_3].collections
    assert bio.existing_papers == 1
    assert bio.existing_insights_from == ["relationship_analysis"]
    assert f"## How they relate to the rest of {COLLECTION}" in markdown[DAY_3]
    new_insights = {i.insight_id for p in digests[DAY_3].papers for i in p.insights}
    for relation in bio.relationships:
        assert relation.source in new_insights or relation.target in new_insights
    assert {i.paper_id for i in bio.insights} <= first
    # ... and lists the rows its papers added to the comparison table, the earlier one's not.
    assert {row.paper_id for row in bio.comparison_rows} == third
    assert f"### New rows of the comparison table of {COLLECTION}" in markdown[DAY_3]
    assert digests[DAY_1].collections[0].comparison_rows[0].paper_id in first

    # Built again after day 3, day 1's digest still holds day 1's paper only, unchanged.
    assert nightly_run(settings, instance, at(DAY_2, 2)) == digests[DAY_1]


def test_the_digest_stays_out_of_what_litpipe_run_and_status_build(tmp_path: Path) -> None:
    defs = build_definitions(**settings_groups(Settings(home=tmp_path / "home", corpus_roots=[])))
    digest_key = dg.AssetKey("nightly_digest")
    assert all(digest_key not in phase.keys for phase in phases(defs))
    assert digest_key not in [*paper_asset_keys(defs), *collection_asset_keys(defs)]
    for job in ("paper_pipeline", "collection_pipeline"):
        assert digest_key not in defs.resolve_job_def(job).asset_layer.selected_asset_keys
    # Built by Dagster's automation at 02:00 UTC, its sensor on by default.
    condition = defs.resolve_asset_graph().get(digest_key).automation_condition
    assert condition is not None and "0 2 * * * UTC" in (condition.get_label() or "")
    sensor = defs.resolve_sensor_def(AUTOMATION_SENSOR)
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING


def test_through_a_model_the_agents_see_short_insight_ids_mapped_back_to_the_digests(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    settings = stub_settings(tmp_path / "home", stub_llm)
    sources = MappingSources(
        abstract_of={p: abstract_of(p) for p in TITLES},
        answers_of={p: answers_of(p) for p in (OLD, LATE, NEW)},
        analysis_of={COLLECTION: analysis_of([OLD])},
    )
    client = LLMClient(settings.llm, settings.paths, UsageLedger())

    digest = build_digest(
        DAY,
        [arrival(NEW, 9)],
        {COLLECTION: [OLD, LATE]},
        sources,
        settings.synthesis,
        Asker(settings.llm, client),
    )

    assert digest.engine == "openai/stub"
    # Insights of the new paper and of LATE (which the analysis does not cover): one call each;
    # OLD's come from the analysis. Then one relationships call for the collection.
    assert len(requests_of(stub_llm, "InsightsReply")) == 2
    (relations_prompt,) = requests_of(stub_llm, "RelationsReply")
    assert "i01 (P1)" in relations_prompt and f"{NEW}/n1" not in relations_prompt
    (bio,) = digest.collections
    (relation,) = bio.relationships
    assert (relation.source, relation.target) == (f"{NEW}/n1", f"{OLD}/e1")
    assert [i.insight_id for i in bio.insights] == [f"{OLD}/e1"]


def test_a_day_of_hundreds_of_papers_lists_pages_of_them_each_paper_on_one(
    tmp_path: Path,
) -> None:
    """250 new papers: the page and the Markdown hold no wall of papers but link to three pages
    (and files) of at most PAPERS_PER_PAGE, which hold every paper once, each page whole; 150
    relationships of a collection are on two pages of their own."""
    digest = hand_made_digest(tmp_path)
    many = [
        digest.papers[0].model_copy(update={"paper_id": f"n{k:03d}", "title": f"Paper {k}"})
        for k in range(250)
    ]
    (section,) = digest.collections
    (relationship,) = section.relationships
    related = section.model_copy(update={"relationships": [relationship] * 150})
    digest = digest.model_copy(update={"papers": many, "collections": [related]})

    files = write_digest(tmp_path / "digests", digest)
    main = files["2026-01-04.html"].read_text("utf-8")
    markdown = files["2026-01-04.md"].read_text("utf-8")
    assert "<article" not in main and "### Paper" not in markdown
    on_pages: list[str] = []
    for number in (1, 2, 3):
        html_name = f"2026-01-04-papers-{number:03d}.html"
        markdown_name = f"2026-01-04-papers-{number:03d}.md"
        assert f'href="{html_name}"' in main and f"]({markdown_name})" in markdown
        page = files[html_name].read_text("utf-8")
        assert_well_formed(page)
        found = re.findall(r'<article id="paper-(n\d+)"', page)
        assert 0 < len(found) <= PAPERS_PER_PAGE
        assert re.findall(r"`(n\d+)`", files[markdown_name].read_text("utf-8")) == found
        on_pages += found
    assert on_pages == [paper.paper_id for paper in many]
    assert "2026-01-04-papers-004.html" not in files
    assert main.count("<tr>") == 0
    rows = 0
    for number in (1, 2):
        name = f"2026-01-04-{COLLECTION}-relationships-{number:03d}.html"
        assert f'href="{name}"' in main
        page = files[name].read_text("utf-8")
        assert_well_formed(page)
        rows += page.count("<tr>") - 1
    assert rows == 150
