"""Sentence-level grading: each cited segment against its own passages (offline by the support
score, or by a judge model's structured reply), completeness against the analysis' key
insights, coherence by a judge; and, through Dagster with the stub as judge, the check that
flags a sentence, the page that marks it, and the setting that lets a failing grade block."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.agents.asker import Asker
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline
from litpipe.defs.resources import artifact_store
from litpipe.evaluation import grading
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped
from litpipe.extractive.claim_judge import ClaimInput, offline_claim_judge, offline_verdict
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.report.page import GRADE_CSS, SentenceMarks
from litpipe.retrieval.support import SupportScore
from litpipe.runtime.execution import QUIET_RUN_CONFIG
from litpipe.runtime.runner import open_instance
from litpipe.schemas import (
    CollectionOutputs,
    Insight,
    OutputGrades,
    Relationship,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.stub_llm import StubLLM, requested_schema
from litpipe_tests.test_checks import FEARNET, FEARNET_PASSAGE, REPAIR, REPAIR_PASSAGE
from litpipe_tests.test_cli import folder_with
from litpipe_tests.test_synthesis_pipeline import COLLECTION, build

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_grading")

REV1 = f"REV1 inserts cytosine opposite abasic sites [{REPAIR}:4]"
FEARNET_CLAIM = f"whereas FearNet consolidates new memories into long-term storage [{FEARNET}:2]."
COMPARATIVE = f"{REV1}, {FEARNET_CLAIM}"
CLAIM_TAG = re.compile(r"<claim>\n(.*?)\n</claim>", re.S)


def offline(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", corpus_roots=[])


def graded(text: str, passages: dict[str, list[str]], settings: Settings) -> OutputGrades:
    return grading.grade_output(text, passages, settings.grading, Asker(settings.llm))


def test_a_sentence_citing_two_papers_is_graded_segment_by_segment(tmp_path: Path) -> None:
    right = {f"[{REPAIR}:4]": [REPAIR_PASSAGE], f"[{FEARNET}:2]": [FEARNET_PASSAGE]}
    # FearNet's marker pointing at the REV1 passage: only the FearNet half is unsupported.
    wrong = {**right, f"[{FEARNET}:2]": [REPAIR_PASSAGE]}

    [good] = graded(COMPARATIVE, right, offline(tmp_path)).sentences
    [bad] = graded(COMPARATIVE, wrong, offline(tmp_path)).sentences

    assert [s.verdict for s in good.segments] == ["supported", "supported"]
    assert good.verdict == "supported"
    assert [(s.markers, s.verdict) for s in bad.segments] == [
        ([f"[{REPAIR}:4]"], "supported"),
        ([f"[{FEARNET}:2]"], "unsupported"),
    ]
    assert bad.verdict == "unsupported" and bad.sentence == COMPARATIVE
    assert bad.segments[1].text == FEARNET_CLAIM and "FearNet" in bad.segments[1].missing


def test_segments_follow_marker_groups() -> None:
    adjacent = "Both store memories for later use [a:1], [b:2]."
    short_subject = "REV1 [a:1] and FearNet [b:2] both keep information for later."
    after_stop = "REV1 inserts cytosine opposite abasic sites. [a:1]"

    assert [s.markers for s in grading.segments(adjacent)] == [["[a:1]", "[b:2]"]]
    # "REV1" alone is a subject, not a claim: it is graded with the rest of the sentence.
    [whole] = grading.segments(short_subject)
    assert whole.claim == "REV1 and FearNet both keep information for later."
    assert grading.prose_sentences(f"Intro here. {after_stop}") == ["Intro here.", after_stop]
    assert [s.markers for s in grading.segments(after_stop)] == [["[a:1]"]]
    assert grading.segments("No citation at all.") == []
    related = "Graph networks learn node embeddings [w1] while trees split data [w2; w3]."
    assert [s.markers for s in grading.segments(related, grading.id_markers)] == [
        ["w1"],
        ["w2", "w3"],
    ]


def test_the_offline_verdict_follows_the_calibrated_score() -> None:
    assert offline_verdict(0.60, 0.579, 0.45) == "supported"
    assert offline_verdict(0.50, 0.579, 0.45) == "partially_supported"
    assert offline_verdict(0.40, 0.579, 0.45) == "unsupported"
    # No calibrated middle band (the lexical share): only supported or not.
    assert offline_verdict(0.50, 0.579, None) == "unsupported"
    scored = SupportScore(score=0.5, lexical=0.5, semantic=0.5, missing=["hippocampus"])
    reply = offline_claim_judge(
        ClaimInput(
            claim="FearNet models the hippocampus.",
            passages=[FEARNET_PASSAGE],
            offline_score=scored,
            threshold=0.579,
            partial_threshold=0.45,
        )
    )
    assert reply.verdict == "partially_supported"
    assert "0.500" in reply.reason and "hippocampus" in reply.reason


def test_an_embedder_gives_the_middle_band_and_is_called_once(
    tmp_path: Path, fake_embedder: Any
) -> None:
    text = f"{COMPARATIVE}\n\nFearNet keeps examples in a replay buffer [{FEARNET}:2]."
    passages = {f"[{REPAIR}:4]": [REPAIR_PASSAGE], f"[{FEARNET}:2]": [FEARNET_PASSAGE]}
    settings = offline(tmp_path)
    strict = settings.grading.model_copy(
        update={"support_threshold": 0.99, "partial_support_threshold": 0.0}
    )
    settings = settings.model_copy(update={"grading": strict})

    grades = grading.grade_output(
        text, passages, settings.grading, Asker(settings.llm), fake_embedder
    )

    assert len(fake_embedder.encode_calls) == 1  # every segment scored in one batch
    segments = [s for sentence in grades.sentences for s in sentence.segments]
    assert len(segments) == 3 and all(s.score is not None for s in segments)
    assert {s.verdict for s in segments} <= {"supported", "partially_supported"}
    assert any(s.verdict == "partially_supported" for s in segments)


def judge_settings(tmp_path: Path, stub: StubLLM, **overrides: Any) -> Settings:
    """Every agent offline but the two judges, routed to the stub."""
    judges = {"claim_judge": {"model": "openai/stub-judge"}}
    judges["coherence_judge"] = {"model": "openai/stub-judge"}
    return Settings(
        home=tmp_path / "home",
        corpus_roots=[],
        llm={"api_base": stub.url, "agents": judges},
        **overrides,
    )


def judge_rejecting(claim: str) -> Any:
    """A stub judge: the claim `claim` unsupported, every other supported; coherence 4."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        title = (requested_schema(body) or {}).get("title")
        if title == "CoherenceReply":
            return {"issues": ["the last paragraph repeats the first"], "score": 4}
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        [asked] = CLAIM_TAG.findall(user)
        if asked == claim:
            return {"reason": "The passage is about another paper.", "verdict": "unsupported"}
        return {"reason": "The passage says so.", "verdict": "supported"}

    return reply


def test_the_judges_structured_reply_grades_each_segment(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.respond("stub-judge", judge_rejecting("REV1 inserts cytosine opposite abasic sites"))
    settings = judge_settings(tmp_path, stub_llm)
    passages = {f"[{REPAIR}:4]": [REPAIR_PASSAGE], f"[{FEARNET}:2]": [FEARNET_PASSAGE]}
    client = LLMClient(settings.llm, settings.paths, UsageLedger())

    grades = grading.grade_output(
        f"{COMPARATIVE} A closing remark.", passages, settings.grading, Asker(settings.llm, client)
    )

    assert grades.grader == "openai/stub-judge"
    first, closing = grades.sentences
    assert [(s.verdict, s.score) for s in first.segments] == [
        ("unsupported", None),
        ("supported", None),
    ]
    assert first.segments[0].reason == "The passage is about another paper."
    assert closing.verdict == "uncited"
    outcome = grading.faithfulness(grades, "expert synthesis")
    assert not outcome.passed
    assert outcome.metadata["unsupported"] == [COMPARATIVE]
    assert outcome.metadata["uncited"] == ["A closing remark."]
    assert "REV1 inserts cytosine" in outcome.markdown["flagged_table"]
    coherence = grading.grade_coherence("T", COMPARATIVE, Asker(settings.llm, client))
    checked = grading.coherence(coherence, "expert synthesis", "openai/stub-judge")
    assert isinstance(checked, CheckOutcome)
    assert checked.passed and checked.metadata["score"] == 4


def test_coherence_offline_is_skipped_not_passed(tmp_path: Path) -> None:
    settings = offline(tmp_path)
    reply = grading.grade_coherence("T", COMPARATIVE, Asker(settings.llm))

    outcome = grading.coherence(reply, "expert synthesis", "offline")

    assert reply is None and isinstance(outcome, CheckSkipped)
    assert outcome.reason.startswith("coherence of the expert synthesis needs a model")


def insight(insight_id: str, paper_id: str, text: str) -> Insight:
    return Insight(
        insight_id=insight_id,
        paper_id=paper_id,
        papers=[paper_id],
        question_ids=[],
        text=text,
        citations=[],
    )


def test_completeness_lists_the_key_insight_no_sentence_of_its_paper_says() -> None:
    analysis = RelationshipAnalysis(
        collection="demo",
        engine="offline",
        papers=[REPAIR, FEARNET],
        theme="t",
        narrative="n",
        insights=[
            insight("i00", REPAIR, f"REV1 inserts cytosine opposite abasic sites [{REPAIR}:4]."),
            insight("i01", FEARNET, "FearNet replays pseudo-examples from a generative model."),
            insight("i02", FEARNET, "An insight in no relationship is not a key one."),
        ],
        relationships=[
            Relationship(source="i00", target="i01", type="parallel", explanation="Both keep.")
        ],
        type_distribution={"parallel": 1},
    )

    # The sentence citing FearNet says nothing of replay: i01 is missed, i00 covered.
    outcome = grading.completeness(COMPARATIVE, analysis, 0.579)

    assert [i.insight_id for i in grading.key_insights(analysis)] == ["i00", "i01"]
    assert not outcome.passed
    assert outcome.metadata["covered"] == 1 and outcome.metadata["key_insights"] == 2
    assert [m["insight_id"] for m in outcome.metadata["missed"]] == ["i01"]  # type: ignore[index]


def test_the_marks_wrap_the_flagged_sentence_only(tmp_path: Path) -> None:
    passages = {f"[{REPAIR}:4]": [REPAIR_PASSAGE], f"[{FEARNET}:2]": [REPAIR_PASSAGE]}
    text = f"An opening line.  {COMPARATIVE}\n\nA closing line."
    grades = graded(text, passages, offline(tmp_path))
    marks = SentenceMarks(grades.sentences)

    body = "".join(f"<p>{marks.render(p, lambda s: s)}</p>" for p in text.split("\n\n"))

    page = assert_well_formed(f"<html><body>{marks.legend()}{body}</body></html>")
    assert body.count('class="graded unsupported"') == 1
    flagged = re.search(r'<span class="graded unsupported" title="([^"]*)">(.*?)<sup', body)
    assert flagged and flagged.group(2) == COMPARATIVE
    assert "FearNet" in flagged.group(1)  # the reason names the words the passage lacks
    assert body.startswith('<p>An opening line.  <span class="graded unsupported"')
    assert "1 sentence(s) marked" in "".join(page.text) and ".graded.unsupported" in GRADE_CSS


@pytest.fixture(scope="module")
def graded_collection(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path
) -> tuple[Path, Synthesis]:
    """A collection built offline once (2 papers); its first cited segment's claim."""
    root = tmp_path_factory.mktemp("graded")
    settings = Settings(home=root / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)})
    build(settings, folder_with(root / "papers", PDFS_BY_SIZE[:2]))
    written = artifact_store(settings.ingest, settings.paths).read(
        ["synthesis"], COLLECTION, Synthesis
    )
    return root, written


def materialize_collection(settings: Settings) -> dg.ExecuteInProcessResult:
    defs = build_definitions(**settings_groups(settings))
    return defs.resolve_job_def(collection_pipeline.name).execute_in_process(
        partition_key=COLLECTION,
        asset_selection=[
            dg.AssetKey("synthesis"),
            dg.AssetKey("plain_summary"),
            dg.AssetKey("collection_outputs"),
        ],
        instance=open_instance(settings.llm, settings.paths),
        raise_on_error=False,
        run_config=QUIET_RUN_CONFIG,
    )


def check_evaluation(instance: dg.DagsterInstance, asset: str, check: str) -> Any:
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    return record.event.dagster_event.event_specific_data


@pytest.mark.slow
def test_the_stub_judge_flags_one_sentence_in_the_check_and_on_the_page(
    graded_collection: tuple[Path, Synthesis], stub_llm: StubLLM, tiny_model: Path
) -> None:
    root, offline_written = graded_collection
    # Offline, every expert sentence was graded and the page carries its grades.
    assert offline_written.grades is not None and offline_written.grades.grader == "offline"
    target = next(s for s in offline_written.grades.sentences if s.segments)
    claim = grading.segments(target.sentence)[0].claim
    stub_llm.respond("stub-judge", judge_rejecting(claim))
    settings = judge_settings(root, stub_llm, ingest={"embedder": str(tiny_model)})

    result = materialize_collection(settings)

    assert result.success
    instance = open_instance(settings.llm, settings.paths)
    support = check_evaluation(instance, "synthesis", "support")
    assert not support.passed and support.severity == dg.AssetCheckSeverity.WARN
    graded_sentences = support.metadata["sentences"].value
    unsupported = [s for s in graded_sentences if s["verdict"] == "unsupported"]
    assert [s["sentence"] for s in unsupported] == [target.sentence]
    assert len(support.metadata["unsupported"].value) == 1
    assert isinstance(support.metadata["flagged_table"], dg.MarkdownMetadataValue)
    coherence = check_evaluation(instance, "synthesis", "coherence")
    assert coherence.passed and coherence.metadata["score"].value == 4
    assert check_evaluation(instance, "synthesis", "completeness").metadata["key_insights"]
    # The page marks the flagged sentence, once, with the judge's reason.
    outputs = artifact_store(settings.ingest, settings.paths).read(
        ["collection_outputs"], COLLECTION, CollectionOutputs
    )
    page = Path(outputs.files["synthesis.html"]).read_text("utf-8")
    assert_well_formed(page)
    synthesis_section = page.split('<section id="plain">')[0]
    marked = re.findall(r'<span class="graded unsupported" title="([^"]*)">', synthesis_section)
    assert marked == ["unsupported: The passage is about another paper."]
    assert 'class="legend"' in synthesis_section


@pytest.mark.slow
@pytest.mark.parametrize("blocking", [True, False])
def test_the_setting_decides_whether_a_failing_grade_blocks_the_page(
    graded_collection: tuple[Path, Synthesis],
    stub_llm: StubLLM,
    tiny_model: Path,
    blocking: bool,
) -> None:
    root, offline_written = graded_collection
    assert offline_written.grades is not None
    first = next(s for s in offline_written.grades.sentences if s.segments)
    stub_llm.respond("stub-judge", judge_rejecting(grading.segments(first.sentence)[0].claim))
    settings = judge_settings(
        root, stub_llm, ingest={"embedder": str(tiny_model)}, grading={"blocking": blocking}
    )

    result = materialize_collection(settings)

    instance = open_instance(settings.llm, settings.paths)
    latest = instance.get_latest_materialization_event(dg.AssetKey("collection_outputs"))
    assert latest is not None
    assert (latest.run_id == result.run_id) is not blocking
    support = check_evaluation(instance, "synthesis", "support")
    assert not support.passed
    assert support.severity == (
        dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN
    )


def test_an_edited_judge_prompt_makes_every_graded_output_stale_and_nothing_else(
    tmp_path: Path,
) -> None:
    # The grades are kept on the outputs: a judge edited in the user's prompts folder must
    # regrade them, and must not touch the stages that do not grade.
    def versions(settings: Settings) -> dict[str, str | None]:
        graph = build_definitions(**settings_groups(settings)).resolve_asset_graph()
        return {
            key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()
        }

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    packaged = PromptLibrary(None).text("claim_judge")
    (prompts / "claim_judge.md").write_text(packaged.replace("faithful", "close"), "utf-8")
    before = versions(Settings(home=tmp_path / "a", corpus_roots=[]))
    after = versions(Settings(home=tmp_path / "b", corpus_roots=[], llm={"prompts_dir": prompts}))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {
        "synthesis",
        "plain_summary",
        # Its cells are graded by the same judge.
        "comparison_table",
        "query_summary",
        "collection_answer",
        "related_work",
    }
