"""`litpipe run` builds papers in batches: one run per batch of neighbouring papers, each paper
still its own partition (its metadata, its staleness), a paper that fails left out of its
batch with its reason while the others are built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import PAPERS
from litpipe.defs.staleness import State, partition_states
from litpipe.ingest.sources import discover
from litpipe.llm.prompts import PromptLibrary
from litpipe.runtime.execution import RANGE_END_TAG, RANGE_START_TAG
from litpipe.runtime.runner import open_instance, paper_asset_keys, register, run_papers
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests import test_paper_questions_asset
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_paper_questions_asset import materialization_count, questions_reply

# The questions agent on the stub, the later stages offline (the fixture, shared).
model_settings = test_paper_questions_asset.model_settings
QUESTIONS = dg.AssetKey("paper_questions")
ABSTRACTS = [
    "We profile ale yeast proteins across a fermentation.",
    "Rev1 coordinates tolerance to alkylation damage in flies.",
    "Soil bacteria fix nitrogen faster under warm nights.",
    "A coral symbiont shifts its photosynthesis under heat stress.",
    "Zebrafish fins regrow their bones from dedifferentiated cells.",
]


def write_table(folder: Path, abstracts: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "papers.csv"
    rows = "".join(f'p{n},Paper {n},"{text}"\n' for n, text in enumerate(abstracts))
    table.write_text(f"id,title,abstract\n{rows}", encoding="utf-8")
    return table


@pytest.fixture
def batch_settings(model_settings: Settings) -> Settings:
    """`model_settings`, in batches of three papers."""
    model_settings.operations.batch_size = 3
    return model_settings


def paper_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(reversed(instance.get_runs(filters=dg.RunsFilter(job_name="paper_pipeline"))))


@pytest.mark.slow  # three `litpipe run`s of five papers
def test_a_batch_is_one_run_whose_papers_stay_their_own_partitions(
    tmp_path: Path, stub_llm: StubLLM, batch_settings: Settings
) -> None:
    stub_llm.respond("stub", questions_reply)
    table = write_table(tmp_path / "src", ABSTRACTS)
    instance = open_instance(batch_settings.llm, batch_settings.paths)
    sources = discover(table)
    registrations = register(batch_settings.paths, instance, sources)

    batches: list[tuple[int, int, int]] = []
    first = run_papers(
        batch_settings,
        instance,
        registrations,
        on_batch=lambda done, papers, total: batches.append((done, papers, total)),
    )

    assert [o.status for o in first.outcomes] == ["materialized"] * 5
    assert all(o.questions == 6 and o.answers == 6 and o.embedded > 0 for o in first.outcomes)
    assert stub_llm.request_count == 5  # one call per paper, in two runs
    assert batches == [(0, 3, 5), (3, 2, 5)]  # each announced before it is built
    runs = paper_runs(instance)
    assert [(r.tags.get(RANGE_START_TAG), r.tags.get(RANGE_END_TAG)) for r in runs] == [
        (first.outcomes[0].paper_id, first.outcomes[2].paper_id),
        (first.outcomes[3].paper_id, first.outcomes[4].paper_id),
    ]
    # Each paper has its own materialization, metadata and output file.
    for outcome in first.outcomes:
        (record,) = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=QUESTIONS, asset_partitions=[outcome.paper_id]), 5
        ).records
        metadata = record.asset_materialization.metadata
        assert metadata["questions"].value == 6 and metadata["llm_made"].value == 1
        assert metadata["path"].value.endswith(f"{outcome.paper_id}.json")

    # Nothing changed: no run, no encode, no call.
    again = run_papers(batch_settings, instance, register(batch_settings.paths, instance, sources))
    assert {o.status for o in again.outcomes} == {"up_to_date"}
    assert sum(o.embedded for o in again.outcomes) == 0 and again.llm_usage.made == 0
    assert len(paper_runs(instance)) == 2 and stub_llm.request_count == 5

    # An edited prompt: paper_questions and what reads it, for every paper, in batches again;
    # nothing upstream of it is built again.
    prompt = PromptLibrary(None).text("paper_questions")
    batch_settings.llm.prompts_dir.mkdir()
    (batch_settings.llm.prompts_dir / "paper_questions.md").write_text(
        prompt.replace("\n## user\n", "\n## user\nAsk about the organisms studied, too.\n", 1)
    )
    edited = build_definitions(**settings_groups(batch_settings))
    paper_ids = [o.paper_id for o in first.outcomes]
    states = partition_states(instance, edited, paper_asset_keys(edited), paper_ids)
    stale = {key.to_user_string() for key, by in states.items() if State.FRESH not in by.values()}
    assert stale == {"paper_questions", "question_evidence", "paper_answers"}
    chunks_before = materialization_count(instance, dg.AssetKey("paper_chunks"))
    rerun = run_papers(batch_settings, instance, register(batch_settings.paths, instance, sources))
    assert {o.status for o in rerun.outcomes} == {"materialized"}
    assert sum(o.embedded for o in rerun.outcomes) == 0
    assert materialization_count(instance, dg.AssetKey("paper_chunks")) == chunks_before
    assert stub_llm.request_count == 10
    assert "organisms studied" in json.dumps(stub_llm.requests[-1]["messages"])


@pytest.mark.slow  # a `litpipe run` of three papers, with retries of a bad reply
def test_a_paper_that_fails_in_its_batch_fails_alone_with_its_reason(
    tmp_path: Path, stub_llm: StubLLM, batch_settings: Settings
) -> None:
    """The second of three papers gets a reply its schema refuses, every time: it fails with
    that reason; the first and third, its batch's other papers, are built to their answers."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if "alkylation" in json.dumps(body["messages"]):
            return {"questions": "not a list"}
        return questions_reply(body)

    stub_llm.respond("stub", reply)
    # An unusable reply fails its item (by default it would be written offline, and pass).
    llm = batch_settings.llm.model_copy(update={"on_unusable": "fail"})
    batch_settings = batch_settings.model_copy(update={"llm": llm})
    table = write_table(tmp_path / "src", ABSTRACTS[:3])
    instance = open_instance(batch_settings.llm, batch_settings.paths)
    registrations = register(batch_settings.paths, instance, discover(table))

    run = run_papers(batch_settings, instance, registrations)

    by_status = {o.paper_id: o for o in run.outcomes}
    good, bad, other = list(registrations)
    assert by_status[bad].status == "failed"
    assert by_status[bad].failure is not None and "paper_questions" in by_status[bad].failure.reason
    assert by_status[bad].failure.row == 2
    for paper_id in (good, other):
        assert by_status[paper_id].status == "materialized"
        assert by_status[paper_id].questions == 6 and by_status[paper_id].answers == 6
    # The run that met the bad paper failed naming it alone; the others were built without it.
    failed = [r for r in paper_runs(instance) if r.status == dg.DagsterRunStatus.FAILURE]
    assert len(failed) == 1
    logged = instance.all_logs(failed[0].run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    (failure,) = [entry.dagster_event.step_failure_data for entry in logged if entry.dagster_event]
    assert failure.user_failure_data is not None
    assert failure.user_failure_data.description.startswith(f"1 of 3 papers failed; {bad}: ")
    answers = dg.AssetKey("paper_answers")
    built = instance.get_materialized_partitions(answers)
    assert built == {good, other}


def test_the_staleness_of_a_batch_reads_only_its_own_papers_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of new papers asks the states of none of its papers (all are built), the others
    of theirs alone: never the records of every paper of the home, which made each batch of a
    5,000-paper run 20 s slower than the first."""
    settings = Settings(home=tmp_path / "home")
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    keys = paper_asset_keys(defs)
    built = [f"t.p{n}" for n in range(6)]
    instance.add_dynamic_partitions(PAPERS, built)
    for paper_id in built:
        for key in keys:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(asset_key=key, partition=paper_id)
            )
    fetched: list[str | None] = []
    fetch = instance.fetch_materializations

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = fetch(*args, **kwargs)
        fetched.extend(record.partition_key for record in result.records)
        return result

    monkeypatch.setattr(instance, "fetch_materializations", counted)

    assert partition_states(instance, defs, keys, []) == {key: {} for key in keys}
    assert fetched == []
    states = partition_states(instance, defs, keys, ["t.p2"])
    assert set(fetched) == {"t.p2"} and len(fetched) == len(keys)
    assert {key: set(by) for key, by in states.items()} == {key: {"t.p2"} for key in keys}
