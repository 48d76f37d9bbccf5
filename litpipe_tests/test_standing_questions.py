"""Standing questions, as a user keeps them: one registered with `litpipe ask --watch`, one by a
`[[questions]]` table of litpipe.toml, each of its own collection (abstracts of the bundled ICLR
demo, offline, a tiny embedder). A paper added to one collection: the next `litpipe run`
answers its question again and not the other's; `litpipe diff --question`, the nightly digest
and the asset's page in the UI name the added paper; a retraction drops its citations; the
night's sensor asks for the changed questions only. Then bad `[[questions]]` tables, and the
diff of answers under every text a model may write."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from litpipe.agents.asker import Asker
from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.defs.assets.nightly_digest import ArtifactSources
from litpipe.defs.definitions import build_definitions
from litpipe.defs.resources import PER_EMBEDDER_ASSETS, ArtifactsResource, CatalogResource
from litpipe.defs.standing_questions import STANDING_SENSOR
from litpipe.report.digest import digest_html, digest_markdown
from litpipe.retrieval.embedder import Embedder
from litpipe.runtime.execution import execute
from litpipe.schemas import Citation, CollectionAnswer, CollectionAnswerRequest
from litpipe.schemas.standing_questions import AnswerVersion
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import marker
from litpipe.workflows import answer_history, synthesis_history
from litpipe.workflows.answer_history import answer_diff
from litpipe.workflows.collection_answer import request_for
from litpipe.workflows.nightly_digest import build_digest
from litpipe.workflows.standing_questions import register
from litpipe_tests.homes import home_instance
from litpipe_tests.test_relationship_analysis_offline import demo_papers

# One worker builds this module's shared home (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_standing_questions")

WATCHED, CONFIGURED = "quant", "other"
FIRST = ["BJGVX3CqYm", "BJgLg3R9KQ", "HkgEQnRqYQ", "rkeDJ04Mf"]
OTHERS = ["S1xzyhR9Y7", "HJDUjKeA-", "BklpOo09tQ"]
# FearNet's abstract answers it; none of the first papers does.
ADDED = "SJ1Xmf-Rb"
ADDED_PAPER = f"{WATCHED}.{ADDED}"
QUESTION = "How does FearNet avoid catastrophic forgetting in incremental class learning?"
# The two-step defense paper of the other collection answers it.
DEFENSE_ID = "defense"
DEFENSE = "How does the two-step adversarial defense improve robustness of deep neural networks?"
ASSET = dg.AssetKey("collection_answer")


def write_table(folder: Path, collection: str, ids: list[str]) -> Path:
    papers = demo_papers()
    path = folder / f"{collection}.csv"
    with path.open("w", encoding="utf-8", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", "title", "abstract"])
        for paper_id in ids:
            writer.writerow([paper_id, papers[paper_id]["title"], papers[paper_id]["abstract"]])
    return path


def cli(home: Path, model: Path, *args: str) -> tuple[int, str]:
    """The command's exit status and what it wrote on stderr."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        code = main([*args, "--home", str(home), "--embedder", str(model)])
    return code, said.getvalue()


def key_of(collection: str, question: str) -> str:
    return request_for(collection, question).key


def materializations(home: Path, key: str) -> int:
    return len(
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=100
        )
        .records
    )


def answer_of(home: Path, model: Path, key: str) -> CollectionAnswer:
    return ArtifactStore(
        home / "artifacts", Embedder(str(model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["collection_answer"], key, CollectionAnswer)


def diff_of(home: Path, model: Path, *args: str) -> tuple[str, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code, _ = cli(home, model, "diff", *args)
    assert code == 0
    *markdown, last = out.getvalue().rstrip("\n").split("\n")
    return "\n".join(markdown), json.loads(last)


class Built:
    """The shared home: both questions answered yesterday, then FearNet added today."""

    def __init__(self, home: Path, model: Path, today: datetime, added_run: str) -> None:
        self.home, self.model, self.today, self.added_run = home, model, today, added_run
        self.watched = key_of(WATCHED, QUESTION)
        self.configured = key_of(CONFIGURED, DEFENSE)

    def copy(self, to: Path) -> Path:
        return Path(shutil.copytree(self.home, to / "home"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Built:
    folder = tmp_path_factory.mktemp("standing")
    home = folder / "home"
    today = datetime.combine(datetime.now(UTC).date(), time(), tzinfo=UTC)
    clock = {"now": today - timedelta(hours=12)}
    config = folder / "litpipe.toml"
    config.write_text(
        f'[[questions]]\ncollection = "{CONFIGURED}"\nquestion = "{DEFENSE}"\n'
        f'id = "{DEFENSE_ID}"\n',
        encoding="utf-8",
    )
    patch = pytest.MonkeyPatch()
    patch.setattr(synthesis_history, "now", lambda: clock["now"])
    patch.setenv("LITPIPE_CONFIG", str(config))
    try:
        assert cli(home, tiny_model, "run", str(write_table(folder, WATCHED, FIRST)))[0] == 0
        # The configured question is answered by the first run of its collection.
        code, said = cli(home, tiny_model, "run", str(write_table(folder, CONFIGURED, OTHERS)))
        assert code == 0
        assert f"{DEFENSE_ID} ({CONFIGURED}): first version" in said
        code, said = cli(home, tiny_model, "ask", QUESTION, "--collection", WATCHED, "--watch")
        assert code == 0
        assert f"standing question {key_of(WATCHED, QUESTION)}" in said
        clock["now"] = today + timedelta(minutes=1)
        code, added_run = cli(
            home, tiny_model, "run", str(write_table(folder, WATCHED, [*FIRST, ADDED]))
        )
        assert code == 0
    finally:
        patch.undo()
    return Built(home, tiny_model, today, added_run)


def test_a_paper_added_answers_again_only_the_standing_question_of_its_collection(
    built: Built,
) -> None:
    assert materializations(built.home, built.watched) == 2
    # The other collection did not change: its question was not run (no run, no model call).
    assert materializations(built.home, built.configured) == 1
    assert len(answer_history.entries(built.home, CONFIGURED, built.configured)) == 1
    assert "1 standing question of a changed collection answered again" in built.added_run
    assert f"{built.watched} ({WATCHED}): changed since previous" in built.added_run
    assert DEFENSE_ID not in built.added_run
    answer = answer_of(built.home, built.model, built.watched)
    assert answer.answered
    assert ADDED_PAPER in {citation.paper_id for citation in answer.citations}


def test_a_run_of_unchanged_collections_answers_nothing_again(built: Built, tmp_path: Path) -> None:
    home = built.copy(tmp_path)
    code, said = cli(home, built.model, "run", str(write_table(tmp_path, WATCHED, [*FIRST, ADDED])))
    assert code == 0
    assert "standing question" not in said
    assert materializations(home, built.watched) == 2
    assert materializations(home, built.configured) == 1


def test_litpipe_diff_question_names_the_added_paper_and_its_citations(built: Built) -> None:
    markdown, figures = diff_of(built.home, built.model, "--question", built.watched)
    assert figures["brought_by"] == [ADDED_PAPER]
    assert figures["papers_added"] == 1 and figures["citations_added"] >= 1
    assert f"Why: `{ADDED_PAPER}` added to the collection." in markdown
    assert "The collection answers it now." in markdown
    assert marker(ADDED_PAPER, 1) in markdown.split("## Citations")[1]
    # The first version against the latest, named as a synthesis' versions are; and since a
    # day before the first, the same.
    first, latest = (
        answer_history.read(path)
        for path in answer_history.entries(built.home, WATCHED, built.watched)
    )
    _, named = diff_of(
        built.home,
        built.model,
        "--question",
        built.watched,
        "--from",
        first.data_version[:8],
        "--to",
        latest.data_version,
    )
    _, since = diff_of(
        built.home,
        built.model,
        "--question",
        built.watched,
        "--since",
        (built.today - timedelta(days=1)).date().isoformat(),
    )
    assert named["from"] == first.data_version and named["to"] == latest.data_version
    assert since["from"] is None and since["to"] == latest.data_version
    # The configured question, by its id: one version, nothing before it.
    _, configured = diff_of(built.home, built.model, "--question", DEFENSE_ID)
    assert configured["key"] == built.configured and configured["from"] is None


def test_the_digest_opens_the_collection_with_its_changed_standing_answer(built: Built) -> None:
    settings = Settings(home=built.home, corpus_roots=[], ingest={"embedder": str(built.model)})
    digest = build_digest(
        built.today.date(),
        [],
        {},
        ArtifactSources(ArtifactsResource.of(settings.ingest, settings.paths)),
        settings.synthesis,
        Asker(settings.llm),
        history=built.home,
    )
    assert [diff.key for diff in digest.standing] == [built.watched]
    assert digest.standing[0].brought_by == [ADDED_PAPER]
    markdown = digest_markdown(digest)
    changes = markdown.split("## What changed")[1]
    section = changes.split(f"### {WATCHED}")[1].split("### ")[0]
    opening = section.strip().split("\n")
    assert opening[0] == "Standing questions whose answer changed:"
    assert QUESTION in opening[2] and f"`{ADDED_PAPER}` added to the collection" in opening[2]
    assert DEFENSE not in markdown
    assert QUESTION in digest_html(digest)
    # The day before, both were answered first.
    yesterday = build_digest(
        (built.today - timedelta(days=1)).date(),
        [],
        {},
        ArtifactSources(ArtifactsResource.of(settings.ingest, settings.paths)),
        settings.synthesis,
        Asker(settings.llm),
        history=built.home,
    )
    assert {diff.key for diff in yesterday.standing} == {built.watched, built.configured}
    assert all(diff.from_version is None for diff in yesterday.standing)


def test_the_answers_page_in_the_ui_shows_the_answer_and_its_history(built: Built) -> None:
    (record,) = (
        home_instance(built.home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[built.watched]), limit=1
        )
        .records
    )
    assert record.asset_materialization is not None
    metadata = record.asset_materialization.metadata
    assert "FearNet" in str(metadata["preview"].value)
    assert metadata["versions"].value == 2
    history = Path(str(metadata["history"].value))
    assert sorted(history.glob("*.json")) == answer_history.entries(
        built.home, WATCHED, built.watched
    )
    assert str(metadata["changed"].value).startswith("changed since previous: +")
    assert ADDED_PAPER in str(metadata["changes"].value)


def test_a_retraction_drops_the_retracted_papers_citations_from_the_answer(
    built: Built, tmp_path: Path
) -> None:
    home = built.copy(tmp_path)
    code, said = cli(home, built.model, "retract", ADDED_PAPER, "--reason", "retracted")
    assert code == 0
    assert f"{built.watched} ({WATCHED}): changed since previous" in said
    answer = answer_of(home, built.model, built.watched)
    assert ADDED_PAPER not in {citation.paper_id for citation in answer.citations}
    assert ADDED_PAPER not in answer.text
    markdown, figures = diff_of(home, built.model, "--question", built.watched)
    assert figures["brought_by"] == [ADDED_PAPER] and figures["papers_removed"] == 1
    assert marker(ADDED_PAPER, 1) in markdown.split("## Citations")[1]
    assert f"- removed: {marker(ADDED_PAPER, 1)}" in markdown
    assert materializations(home, built.configured) == 1


def _sensor_result(home: Path, model: Path) -> dg.SensorResult:
    settings = Settings(home=home, corpus_roots=[], ingest={"embedder": str(model)})
    defs = build_definitions(**settings_groups(settings))
    context = dg.build_sensor_context(
        instance=home_instance(home),
        resources={"catalog": CatalogResource(path=str(settings.paths.catalog_path))},
        definitions=defs,
    )
    result = defs.resolve_sensor_def(STANDING_SENSOR)(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_the_night_sensor_asks_only_for_the_questions_of_changed_collections(
    built: Built, tmp_path: Path
) -> None:
    home = built.copy(tmp_path)
    # Every standing answer is up to date: nothing is asked for.
    assert not _sensor_result(home, built.model).run_requests
    # A retraction made without a run (the catalog only), and a question never answered yet.
    Catalog(home / "catalog.sqlite").retract(ADDED_PAPER, "retracted")
    never = register(
        home,
        CollectionAnswerRequest(collection=CONFIGURED, question="What do the views encode?"),
        "watch",
    )
    result = _sensor_result(home, built.model)
    requested = {request.partition_key for request in result.run_requests}
    assert requested == {built.watched, never.key}
    # The daemon's run of a request, in-process: the answer drops the retracted paper.
    settings = Settings(home=home, corpus_roots=[], ingest={"embedder": str(built.model)})
    defs = build_definitions(**settings_groups(settings))
    instance = home_instance(home)
    for request in result.dynamic_partitions_requests:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    assert execute(defs, instance, "collection_answer_job", partition_key=built.watched).success
    answer = answer_of(home, built.model, built.watched)
    assert ADDED_PAPER not in {citation.paper_id for citation in answer.citations}
    # That state answered, the sensor asks for it no more.
    assert built.watched not in {
        request.partition_key for request in _sensor_result(home, built.model).run_requests
    }


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('collection = "c"\n', "questions.0.question: Field required"),
        ('collection = "c"\nquestion = "   "\n', "the question is empty"),
        ('collection = "c"\nquestion = "Q?"\nid = "a b"\n', "use letters, digits"),
        ('collection = "c"\nquestion = "Q?"\nwhen = "daily"\n', "questions.0.when"),
        (f'collection = "c"\nquestion = "{"x" * 10_001}"\n', "at most 10,000"),
        (
            'collection = "c"\nquestion = "Q?"\nid = "q"\n[[questions]]\n'
            'collection = "d"\nquestion = "R?"\nid = "q"\n',
            "two tables name q",
        ),
    ],
)
def test_a_bad_questions_table_is_refused_in_one_line(
    table: str,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "litpipe.toml"
    config.write_text(f"[[questions]]\n{table}", encoding="utf-8")
    monkeypatch.setenv("LITPIPE_CONFIG", str(config))
    assert main(["status", "--home", str(tmp_path / "home")]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["diff", "--question", "nope"], "no standing question 'nope'"),
        (["diff", "quant", "--question", "nope"], "a COLLECTION or a --question ID"),
        (["ask", "Q?", "--paper", "p", "--watch"], "--watch goes with --collection"),
    ],
)
def test_bad_standing_requests_are_refused_in_one_line(
    args: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "--home", str(tmp_path / "home")]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


_WORDS = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
_SENTENCE = st.tuples(
    st.lists(_WORDS, min_size=1, max_size=8),
    st.lists(st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.integers(1, 3)), max_size=2),
)


def _version(
    sentences: list[tuple[list[str], list[tuple[str, int]]]], papers: list[str]
) -> AnswerVersion:
    """An answer as a model may write it: sentences, each citing any passages."""
    text = " ".join(
        " ".join(words).capitalize() + "".join(f" {marker(p, page)}" for p, page in cites) + "."
        for words, cites in sentences
    )
    citations = [
        Citation(marker=marker(p, page), paper_id=p, page=page, chunk_ids=[f"{p}-{page}"])
        for _, cites in sentences
        for p, page in cites
    ]
    answer = CollectionAnswer(
        request=CollectionAnswerRequest(collection="c", question="Q?"),
        answered=bool(citations),
        text=text,
        citations=citations,
        passages=[],
        papers=papers,
        mode="single",
        engine="model",
    )
    return AnswerVersion(
        key=answer.request.key,
        recorded_at="2026-01-01T00:00:00+00:00",
        data_version=synthesis_history.data_version(answer),
        answer=answer,
    )


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    st.lists(_SENTENCE, max_size=5),
    st.lists(_SENTENCE, max_size=5),
    st.lists(st.sampled_from(["p1", "p2", "p3"]), unique=True),
    st.lists(st.sampled_from(["p1", "p2", "p3"]), unique=True),
)
def test_what_changed_between_any_two_answers_is_what_a_reader_would_see(
    old: list, new: list, old_papers: list[str], new_papers: list[str]
) -> None:
    before, after = _version(old, old_papers), _version(new, new_papers)
    assert not answer_diff(after, after).changed
    diff = answer_diff(before, after)
    old_markers = {c.marker for c in before.answer.citations}
    new_markers = {c.marker for c in after.answer.citations}
    assert set(diff.citations_added) == new_markers - old_markers
    assert set(diff.citations_removed) == old_markers - new_markers
    assert set(diff.brought_by) <= set(diff.papers_added) | set(diff.papers_removed)
    assert set(diff.papers_added) == set(new_papers) - set(old_papers)
    if diff.citations_added or diff.citations_removed:
        assert diff.changed
