"""`litpipe related-work --collection C`, as a user runs it after `litpipe run`: the bundled
biology PDFs ingested into C (the tiny local embedder) beside another collection, then sections
whose every citation is a paper of C, offline, through the stub model and with any reply the
writer's schema allows; a repeat served from the asset, a paper added to C a new request, and
bad input refused with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from litpipe.agents.asker import Asker
from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.defs.assets.related_work import StoredRelatedWorkRequest
from litpipe.defs.definitions import build_definitions
from litpipe.extractive.related_work import RelatedWorkInput, RelatedWorkReply
from litpipe.llm.errors import ReplyValidationError
from litpipe.llm.prompts import PromptLibrary
from litpipe.report.related_work import JSON_FILE, MARKDOWN_FILE
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.execution import QUIET_RUN_CONFIG
from litpipe.runtime.runner import open_instance
from litpipe.schemas import DebateVerdict, RelatedWork, RelatedWorkRequest, ScoredReference
from litpipe.settings import AgentRoute, Route, Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import estimate_tokens
from litpipe.workflows.related_work import write_section
from litpipe.workflows.related_work_pool import (
    CollectionPool,
    collection_catalog,
    passage_tokens,
    pool_references,
    read_pool,
)
from litpipe_tests.bundled import BUNDLED_PDFS_GROUP, short_paper
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_agent_replies import MODEL, GeneratedClient, offline_settings
from litpipe_tests.test_related_work import (
    DEBATE_REQUEST,
    WRITER_REQUEST,
    ScriptedWriter,
    bracketed,
    cited_in_markdown,
    good_section,
    scripted_debate,
)

# One worker builds this module's shared home (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group(BUNDLED_PDFS_GROUP)

COLLECTION = "biology-cc-by"
OTHER = "other"  # another collection of the same home, one paper
UNINGESTED = "uningested"  # registered, but its paper's embedding failed
IDEA = (
    "We study how translesion synthesis polymerases and REV1 let cells tolerate DNA damage "
    "during replication."
)
ASSET = dg.AssetKey("related_work")


@pytest.fixture(scope="module")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, bundled_pdfs_home: Path
) -> Path:
    """The home of the nine bundled PDFs in C, with one short paper in another collection and
    a registered paper it could not embed; each test copies it."""
    base = tmp_path_factory.mktemp("collection-home")
    home = Path(shutil.copytree(bundled_pdfs_home, base / "home"))
    run = ["--home", str(home), "--embedder", str(tiny_model)]
    other = base / "other"
    other.mkdir()
    short_paper(other, 1)
    assert main(["run", str(other), "--collection", OTHER, *run]) == 0
    broken = base / "uningested"
    broken.mkdir()
    short_paper(broken, 2)
    # A folder that holds no model: the paper is registered, its chunks never embedded.
    not_a_model = base / "not-a-model"
    not_a_model.mkdir()
    unusable = ["--home", str(home), "--embedder", str(not_a_model)]
    assert main(["run", str(broken), "--collection", UNINGESTED, *unusable]) != 0
    return home


@pytest.fixture
def home(ingested: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(ingested, tmp_path / "home"))


def members(home: Path, collection: str) -> set[str]:
    return set(Catalog(Settings(home=home).paths.catalog_path).papers(collection))


def related_work(home: Path, model: Path, *args: str) -> int:
    return main(["related-work", *args, "--home", str(home), "--embedder", str(model)])


def request_keys(home: Path) -> list[str]:
    files = sorted(
        (home / "requests" / "related_work").glob("*.json"), key=lambda p: p.stat().st_mtime
    )
    return [path.stem for path in files]


def materializations(home: Path, key: str) -> int:
    return len(
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=100
        )
        .records
    )


def outputs(home: Path, key: str) -> tuple[str, RelatedWork]:
    folder = home / "outputs" / "related_work" / key
    markdown = (folder / MARKDOWN_FILE).read_text(encoding="utf-8")
    return markdown, RelatedWork.model_validate_json((folder / JSON_FILE).read_text("utf-8"))


def test_the_section_cites_only_papers_of_the_collection_and_a_repeat_is_served_from_the_asset(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert related_work(home, tiny_model, "--collection", COLLECTION, "--idea", IDEA) == 0
    printed = capsys.readouterr()
    [key] = request_keys(home)
    markdown, related = outputs(home, key)
    assert printed.out == markdown
    in_collection, other = members(home, COLLECTION), members(home, OTHER)
    assert len(in_collection) == 9 and len(other) == 1

    # Every marker of the section is a paper of C; the other collection's paper is never cited.
    cited, _ = cited_in_markdown(markdown)
    assert cited and cited <= in_collection and not cited & other
    assert set(related.cited_ids) == cited == {s.reference.id for s in related.references}
    assert related.table_rows == 9 and len(related.references) == 5
    # Each reference is its paper's stored abstract, and the PDFs' full texts gave passages cut
    # to their share of the writer's context, each a stretch of the paper's own text.
    artifacts = ArtifactStore(home / "artifacts")
    rows = ChunkStore(home / "lancedb").chunk_rows(
        Embedder(str(tiny_model)).embedder_id, ["paper_id", "text"], list(in_collection)
    )
    texts: dict[str, str] = {}
    for row in rows.to_pylist():
        texts[row["paper_id"]] = (
            texts.get(row["paper_id"], "") + " " + " ".join(row["text"].split())
        )
    budget = passage_tokens(Settings(home=home).related_work, 5)
    for scored in related.references:
        reference = scored.reference
        stored = json.loads(artifacts.path(["paper_abstract"], reference.id).read_text("utf-8"))
        assert reference.abstract == stored["abstract"].strip()
        if reference.passage:
            assert estimate_tokens(reference.passage) <= budget
            assert reference.passage.split(". ")[0] in texts[reference.id]
    assert sum(bool(s.reference.passage) for s in related.references) >= 3
    page = (home / "outputs" / "related_work" / key / "related_work.html").read_text("utf-8")
    assert "From the full text:" in page
    stored_request = StoredRelatedWorkRequest.model_validate_json(
        (home / "requests" / "related_work" / f"{key}.json").read_text("utf-8")
    )
    assert stored_request.collection == COLLECTION and stored_request.table_path is None

    # The same request again: nothing recomputed.
    assert related_work(home, tiny_model, "--collection", COLLECTION, "--idea", IDEA) == 0
    again = capsys.readouterr()
    assert again.out == markdown and f"{key}: up to date" in again.err
    assert materializations(home, key) == 1


def test_a_paper_added_to_the_collection_is_a_new_request_and_the_old_one_refuses_it(
    home: Path, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--collection", COLLECTION, "--idea", IDEA, "--top-k", "3")
    assert related_work(home, tiny_model, *args) == 0
    [old] = request_keys(home)
    added = tmp_path / "added"
    added.mkdir()
    short_paper(added, 3)
    run = ["--home", str(home), "--embedder", str(tiny_model)]
    assert main(["run", str(added), "--collection", COLLECTION, *run]) == 0
    assert len(members(home, COLLECTION)) == 10

    assert related_work(home, tiny_model, *args) == 0
    assert "materialized (missing)" in capsys.readouterr().err
    [new] = [key for key in request_keys(home) if key != old]
    assert outputs(home, new)[1].table_rows == 10 and outputs(home, old)[1].table_rows == 9

    # Materializing the old request again (from the UI, say) fails rather than mix them up.
    settings_ = Settings(home=home, ingest={"embedder": str(tiny_model)})
    job = build_definitions(**settings_groups(settings_)).resolve_job_def("related_work_job")
    result = job.execute_in_process(
        partition_key=old,
        instance=open_instance(settings_.llm, settings_.paths),
        raise_on_error=False,
        run_config=QUIET_RUN_CONFIG,
    )
    [failure] = [event for event in result.all_events if event.is_step_failure]
    assert "changed since this request was made" in (
        failure.step_failure_data.user_failure_data.description
    )


def test_a_writer_citing_a_paper_outside_the_collection_has_that_citation_removed(
    home: Path, tiny_model: Path, stub_llm: StubLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    [outsider] = members(home, OTHER)

    def citing_outside(ids: list[str]) -> str:
        return f"{good_section(ids)} A yeast study reports more [{outsider}; {ids[0]}]."

    writer = ScriptedWriter(citing_outside, citing_outside)
    stub_llm.respond(DEBATE_REQUEST, scripted_debate)
    stub_llm.respond(WRITER_REQUEST, writer)
    args = ("--collection", COLLECTION, "--idea", IDEA, "--top-k", "4")
    model = ("--model", "openai/stub", "--api-base", stub_llm.url)
    assert related_work(home, tiny_model, *args, *model) == 0
    printed = capsys.readouterr()
    [key] = request_keys(home)
    markdown, related = outputs(home, key)

    # Asked once, then once more to revise: both replies cited the outsider, which is removed.
    assert len(writer.bodies) == 2 and related.revised
    user = writer.bodies[0]["messages"][1]["content"]
    assert outsider not in user
    for scored in related.references:
        assert scored.reference.passage.split(". ")[0] in " ".join(user.split())
    assert related.dropped_citations == [outsider]
    cited, _ = cited_in_markdown(markdown)
    assert outsider not in cited and cited <= members(home, COLLECTION)
    assert any("removed citations of ids not supplied" in w for w in related.warnings)
    assert "model calls:" in printed.err

    # Served from the asset: not one more model call.
    calls = stub_llm.request_count
    assert related_work(home, tiny_model, *args, *model) == 0
    assert stub_llm.request_count == calls and materializations(home, key) == 1
    assert f"{key}: up to date" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unknown_collection", "unknown collection 'no-such' (known collections: "),
        ("not_ingested", "collection 'uningested' has no ingested paper"),
        ("top_k_too_large", "top_k 10 is larger than collection 'biology-cc-by''s 9 ingested"),
        ("empty_idea", "the research idea is empty"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    args = {
        "unknown_collection": ["--collection", "no-such", "--idea", IDEA],
        "not_ingested": ["--collection", UNINGESTED, "--idea", IDEA],
        "top_k_too_large": ["--collection", COLLECTION, "--idea", IDEA, "--top-k", "10"],
        "empty_idea": ["--collection", COLLECTION, "--idea", " "],
    }[case]
    assert related_work(home, tiny_model, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("litpipe related-work: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (home / "requests" / "related_work").exists()
    assert not (home / "outputs" / "related_work").exists()


def test_an_unknown_collection_in_an_empty_home_writes_no_home(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert related_work(home, tiny_model, "--collection", COLLECTION, "--idea", IDEA) == 2
    assert "unknown collection 'biology-cc-by': no paper is registered" in capsys.readouterr().err
    assert not home.exists()


def test_exactly_one_pool_is_asked_for(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for pool in (["--collection", COLLECTION, "--abstracts", str(tmp_path / "t.csv")], []):
        with pytest.raises(SystemExit) as usage:
            related_work(tmp_path / "home", tiny_model, *pool, "--idea", IDEA)
        assert usage.value.code == 2
        assert "--abstracts" in capsys.readouterr().err


def test_a_retracted_paper_leaves_the_pool_and_changes_its_fingerprint(
    home: Path, tiny_model: Path
) -> None:
    paths = Settings(home=home).paths
    embedder_id = Embedder(str(tiny_model)).embedder_id

    def pool_now() -> CollectionPool:
        catalog = collection_catalog(paths.catalog_path, COLLECTION)
        return read_pool(
            catalog,
            COLLECTION,
            ArtifactStore(paths.artifacts_dir),
            ChunkStore(paths.lancedb_dir),
            embedder_id,
        )

    before = pool_now()
    assert before == pool_now()  # read twice, the same pool: a repeat is the same request
    retracted = before.abstracts[0].paper_id
    Catalog(paths.catalog_path).retract(retracted, "withdrawn by its authors")
    after = pool_now()
    assert retracted not in {a.paper_id for a in after.abstracts} and len(after.abstracts) == 8
    assert after.fingerprint != before.fingerprint


class OutsideCitingClient(GeneratedClient):
    """Replies generated from the schema, a writer's section then citing some of `outside`
    (papers of another collection, a key that names no paper, a paper of C not given to the
    writer), alone or beside an id it was given, as a model that strays would."""

    def __init__(self, data: st.DataObject, outside: list[str], given: list[str]) -> None:
        super().__init__(data)
        self.outside, self.given = outside, given

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: Any) -> Any:
        replied = super().complete_sync(route, messages, schema)
        if not isinstance(replied, RelatedWorkReply):
            return replied
        strays = self.data.draw(st.lists(st.sampled_from(self.outside), max_size=3))
        beside = self.data.draw(st.lists(st.sampled_from(self.given), max_size=3))
        sentences = [
            f" Related findings appear in [{'; '.join([stray, *beside[:1]])}]." for stray in strays
        ]
        return replied.model_copy(update={"text": replied.text + "".join(sentences)})


def test_any_writer_reply_leaves_no_citation_outside_the_collection(
    home: Path, tiny_model: Path
) -> None:
    settings_ = Settings(home=home, ingest={"embedder": str(tiny_model)})
    embedder = Embedder(str(tiny_model))
    chunk_store = ChunkStore(settings_.paths.lancedb_dir)
    pool = read_pool(
        collection_catalog(settings_.paths.catalog_path, COLLECTION),
        COLLECTION,
        ArtifactStore(settings_.paths.artifacts_dir),
        chunk_store,
        embedder.embedder_id,
    )
    request = RelatedWorkRequest(idea=IDEA, sentences=6, words=150, top_k=4)
    retriever = HybridRetriever(
        chunk_store, embedder, COLLECTION, None, papers=members(home, COLLECTION)
    )
    table = pool_references(pool, request, retriever, settings_.related_work, settings_.retrieval)
    verdict = DebateVerdict(arguments_for=[], quotes_for=[], arguments_against=[], probability=50)
    top = [
        ScoredReference(
            reference=reference, retrieval_rank=rank, fused_score=1 / rank, verdict=verdict
        )
        for rank, reference in enumerate(table.references[:4], start=1)
    ]
    inputs = RelatedWorkInput(idea=IDEA, references=top, sentences=6, words=150)
    in_collection = members(home, COLLECTION)
    outside = [*members(home, OTHER), "no-such-paper", table.references[-1].id]
    routed = offline_settings(home, llm={"agents": {"related_work": AgentRoute(model=MODEL)}})
    prompts = PromptLibrary()
    outcomes: list[str] = []
    removed_outside: list[bool] = []

    @seed(20261202)
    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        try:
            section = write_section(
                inputs, Asker(routed.llm, OutsideCitingClient(data, outside, inputs.ids), prompts)
            )
        except ReplyValidationError as error:
            assert str(error) and "\n" not in str(error)
            outcomes.append("reason")
            return
        cited = bracketed(section.text)
        # Only the papers given to the writer, all of C; nothing of another collection.
        assert set(section.cited_ids) == cited <= set(inputs.ids) <= in_collection
        outcomes.append("result")
        removed_outside.append(bool(set(section.dropped_citations) & set(outside)))

    run()
    assert outcomes.count("result") >= len(outcomes) // 2
    # Replies did cite keys outside what the writer was given, and had them removed.
    assert any(removed_outside)
