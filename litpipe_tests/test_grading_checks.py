"""The grading checks on `query_summary` (`litpipe ask`) and `related_work` (`litpipe
related-work`), as a user runs them: offline every cited sentence is graded by the calibrated
score and the check passes on the bundled corpora; with the stub as judge, the sentence it
calls unsupported is flagged in the check's metadata and marked on the HTML page; a repeated
request costs no model call."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.evaluation import grading
from litpipe.report.page import labelled
from litpipe.report.related_work import HTML_FILE, JSON_FILE, MARKDOWN_FILE
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import OutputGrades, QuerySummary, RelatedWork, SentenceGrade
from litpipe.workflows.query_summary import request_for
from litpipe_tests import test_ask
from litpipe_tests.cited import home_keys
from litpipe_tests.homes import home_instance
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_ask import PAPER_ID, QUERY, ask, materializations
from litpipe_tests.test_grading import judge_rejecting
from litpipe_tests.test_related_work import DEMO, IDEA, as_keyed, listed_keys
from litpipe_tests.test_related_work_cli import materializations as related_materializations
from litpipe_tests.test_related_work_cli import related_work, request_keys

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_grading_checks")

# The paper `litpipe run` ingested once for `litpipe ask`, and a copy of its home per test.
ingested = test_ask.ingested
home = test_ask.home
JUDGES = {
    "claim_judge": {"model": "openai/stub-judge"},
    "coherence_judge": {"model": "openai/stub-judge"},
}
REASON = "unsupported: The passage is about another paper."


class MarkedSentences(HTMLParser):
    """Each sentence the page marks unsupported: its text as a reader sees it (the mark and the
    numbered links to further chunks of a citation left out) and its tooltip. The legend's
    sample mark, which has no tooltip, is not a sentence."""

    _NOT_TEXT = frozenset({"cite more", "grade-mark"})

    def __init__(self, page: str) -> None:
        super().__init__()
        self.marked: list[tuple[str, str]] = []
        self._open: list[str] = []  # the tags open inside the marked span, itself first
        self._skipped = 0  # depth inside a mark or a numbered link
        self._title = ""
        self._text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if self._open:
            self._open.append(tag)
            self._skipped += bool(self._skipped) or found.get("class") in self._NOT_TEXT
        elif tag == "span" and found.get("class") == "graded unsupported" and found.get("title"):
            self._open, self._title, self._text = [tag], found.get("title") or "", []

    def handle_endtag(self, tag: str) -> None:
        if not self._open:
            return
        self._open.pop()
        self._skipped = max(self._skipped - 1, 0)
        if not self._open:
            self.marked.append((" ".join("".join(self._text).split()), self._title))

    def handle_data(self, data: str) -> None:
        if self._open and not self._skipped:
            self._text.append(data)


def check_evaluation(instance: dg.DagsterInstance, asset: str, check: str) -> Any:
    """The latest evaluation of an asset's check."""
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return record.event.dagster_event.event_specific_data


def second_cited(grades: OutputGrades | None) -> tuple[SentenceGrade, int]:
    """The sentence the stub judge will reject, the second cited one (not merely the first),
    and how often it is written (offline, the highlights repeat sentences of the summary)."""
    assert grades is not None
    target = [sentence for sentence in grades.sentences if sentence.segments][1]
    return target, [sentence.sentence for sentence in grades.sentences].count(target.sentence)


def judge_rejects(stub: StubLLM, sentence: SentenceGrade, keys_in: grading.KeysIn) -> None:
    """Routes the judges to the stub (through the environment, as a user would), which rejects
    the sentence's only claim and supports every other."""
    [segment] = grading.segments(sentence.sentence, keys_in)
    stub.respond("stub-judge", judge_rejecting(segment.claim))


def assert_only_flagged(evaluation: Any, sentence: str, written: int) -> None:
    """The support check failed as a warning, flagging that sentence (where it is written)
    and no other."""
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    graded = evaluation.metadata["sentences"].value
    flagged = [s["sentence"] for s in graded if s["verdict"] != "supported" and s["segments"]]
    assert flagged == [sentence] * written
    assert evaluation.metadata["unsupported_sentences"].value == written
    assert evaluation.metadata["grader"].value == "openai/stub-judge"
    assert "The passage is about another paper." in evaluation.metadata["flagged_table"].value


def assert_page_marks(page_text: str, sentence: str, written: int) -> None:
    """The page marks the sentence where it is written, with the judge's reason, and nothing
    else."""
    page = assert_well_formed(page_text)
    # The marked text is the sentence as shown (its markers as links): the same words.
    expected = (" ".join(sentence.split()), REASON)
    assert [
        (" ".join(text.split()), title) for text, title in MarkedSentences(page_text).marked
    ] == [expected] * written
    assert f"{written} sentence(s) marked" in "".join(page.text)


# `litpipe ask`: the query summary.


def test_ask_offline_grades_every_cited_sentence_and_writes_the_page(
    home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY) == 0
    out = capsys.readouterr().out
    key = request_for(PAPER_ID, QUERY).key
    result = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)

    assert result.grades is not None and result.grades.grader == "offline"
    cited = [s for s in result.grades.sentences if s.segments]
    # The summary's and the highlights' cited sentences, every one supported by its chunks.
    assert len(cited) > len(result.highlights) >= 1
    assert all(s.verdict == "supported" for s in cited)
    assert f"Check support: passed: {len(cited)} of {len(cited)} cited sentences" in out
    # Coherence needs a model: not run, neither passed nor failed, and it says why.
    assert "Check coherence: skipped: coherence of the query summary needs a model" in out
    page_path = home / "outputs" / "bio" / "query_summary" / f"{key}.html"
    assert f"HTML: {page_path}" in out
    page = page_path.read_text("utf-8")
    parsed = assert_well_formed(page)
    assert parsed.citations >= len(result.citations) and 'class="graded' not in page
    support = check_evaluation(home_instance(home), "query_summary", "support")
    assert support.passed and support.metadata["cited_sentences"].value == len(cited)


def test_ask_with_the_stub_as_judge_flags_the_sentence_it_rejects_and_a_repeat_is_free(
    home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert ask(home, tiny_model, "--paper", PAPER_ID, QUERY) == 0
    key = request_for(PAPER_ID, QUERY).key
    offline = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)
    target, written = second_cited(offline.grades)
    judge_rejects(stub_llm, target, grading.page_markers)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(JUDGES))
    judged = ("--paper", PAPER_ID, QUERY, "--api-base", stub_llm.url)
    capsys.readouterr()

    # Another judge is another code version: graded again, the summary unchanged.
    assert ask(home, tiny_model, *judged) == 0
    out = capsys.readouterr().out
    result = ArtifactStore(
        home / "artifacts", Embedder(str(tiny_model)).embedder_id, PER_EMBEDDER_ASSETS
    ).read(["query_summary"], key, QuerySummary)
    assert result.summary == offline.summary and materializations(home, key) == 2
    instance = home_instance(home)
    support = check_evaluation(instance, "query_summary", "support")
    assert_only_flagged(support, target.sentence, written)
    assert "Check support: FAILED (warn): " in out and "Check coherence: passed: " in out
    assert "Check citation_validity: passed" in out
    page = (home / "outputs" / "bio" / "query_summary" / f"{key}.html").read_text("utf-8")
    # The page shows the sentence citing its paper by its key with the page.
    assert_page_marks(page, labelled(target.sentence, home_keys(home), markdown=False), written)

    # The same request with the same judge: served from the asset, not one model call.
    # One judge call per claim, one for coherence.
    calls = stub_llm.request_count
    assert result.grades is not None
    assert calls == sum(len(s.segments) for s in result.grades.sentences) + 1
    assert ask(home, tiny_model, *judged) == 0
    again = capsys.readouterr().out
    assert "up to date" in again and "Check support: FAILED (warn): " in again
    assert stub_llm.request_count == calls and materializations(home, key) == 2


# `litpipe related-work`: the section.

ARGS = ("--abstracts", str(DEMO), "--idea", IDEA)


@pytest.fixture(scope="module")
def related_offline(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """A home where `litpipe related-work` wrote one section offline; each test copies it."""
    home = tmp_path_factory.mktemp("related") / "home"
    assert related_work(home, tiny_model, *ARGS) == 0
    return home


@pytest.fixture
def related_home(related_offline: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(related_offline, tmp_path / "home"))


def section(home: Path) -> tuple[str, Path, RelatedWork]:
    """The request's key, its folder of outputs and its section as written last."""
    [key] = request_keys(home)
    folder = home / "outputs" / "related_work" / key
    return key, folder, RelatedWork.model_validate_json((folder / JSON_FILE).read_text("utf-8"))


def test_related_work_offline_grades_the_section_and_writes_the_page(
    related_home: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, folder, related = section(related_home)

    assert related.grades is not None and related.grades.grader == "offline"
    cited = [s for s in related.grades.sentences if s.segments]
    assert cited and all(s.verdict == "supported" for s in cited)
    page = (folder / HTML_FILE).read_text("utf-8")
    parsed = assert_well_formed(page)
    # Every [id] links to its reference on the page.
    assert parsed.citations >= len(related.cited_ids) and 'class="graded' not in page
    assert all(scored.reference.title in "".join(parsed.text) for scored in related.references)
    # Asked again: served from the asset, the checks' results and the page's path printed.
    assert related_work(related_home, tiny_model, *ARGS) == 0
    err = capsys.readouterr().err
    assert f"{key}: up to date" in err and related_materializations(related_home, key) == 1
    assert f"Check support: passed: {len(cited)} of {len(cited)} cited sentences" in err
    assert "Check coherence: skipped: coherence of the related-work section needs a model" in err
    assert f"HTML: {folder / HTML_FILE}" in err


def test_related_work_with_the_stub_as_judge_flags_the_sentence_it_rejects(
    related_home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, folder, offline = section(related_home)
    target, written = second_cited(offline.grades)
    judge_rejects(stub_llm, target, grading.id_markers)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(JUDGES))

    assert related_work(related_home, tiny_model, *ARGS, "--api-base", stub_llm.url) == 0
    err = capsys.readouterr().err
    _, _, related = section(related_home)
    assert related.text == offline.text and related_materializations(related_home, key) == 2
    instance = home_instance(related_home)
    support = check_evaluation(instance, "related_work", "support")
    assert_only_flagged(support, target.sentence, written)
    assert "Check support: FAILED (warn): " in err
    # The page shows the sentence citing each work by its key.
    keys = listed_keys((folder / MARKDOWN_FILE).read_text("utf-8"))
    page = (folder / HTML_FILE).read_text("utf-8")
    assert_page_marks(page, as_keyed(target.sentence, keys), written)

    calls = stub_llm.request_count
    assert related_work(related_home, tiny_model, *ARGS, "--api-base", stub_llm.url) == 0
    assert f"{key}: up to date" in capsys.readouterr().err
    assert stub_llm.request_count == calls and related_materializations(related_home, key) == 2


def test_with_evaluation_blocking_a_flagged_section_fails_the_request(
    related_home: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key, _, offline = section(related_home)
    judge_rejects(stub_llm, second_cited(offline.grades)[0], grading.id_markers)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps(JUDGES))
    monkeypatch.setenv("LITPIPE_GRADING__BLOCKING", "true")

    assert related_work(related_home, tiny_model, *ARGS, "--api-base", stub_llm.url) == 1
    err = capsys.readouterr().err
    assert f"{key} FAILED: " in err and "Check support: FAILED (error): " in err
    instance = home_instance(related_home)
    support = check_evaluation(instance, "related_work", "support")
    assert not support.passed and support.severity == dg.AssetCheckSeverity.ERROR
