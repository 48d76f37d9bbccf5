"""Swapping the embedding model: `litpipe backfill --embedder NAME` fills the new embedder's
LanceDB table in batches while the old table stays as it was and queryable, and recomputes the
questions' evidence, and their answers only where the evidence changed."""

# No `from __future__ import annotations`: Dagster reads the toy assets' annotations at runtime.
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pytest

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import papers
from litpipe.defs.resources import PER_EMBEDDER_ASSETS
from litpipe.defs.staleness import State, partition_states
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime import backfill as backfilling
from litpipe.runtime.execution import RANGE_END_TAG, RANGE_START_TAG
from litpipe.runtime.runner import open_instance, paper_asset_keys
from litpipe.schemas import (
    ComparisonTable,
    CrossPaperQuestions,
    PaperChunks,
    PaperEvidence,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import markers_in
from litpipe.workflows.ingest import settings_embedder
from litpipe_tests.bundled import CORPUS, PDFS_BY_SIZE
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_cli import folder_of_short_papers, folder_with
from litpipe_tests.variant_models import build_minilm_variant, with_pooling

COLLECTION = "bio"
# The per-paper stages an embedder swap makes stale (their code versions name the embedder).
EMBEDDER_STAGES = [
    dg.AssetKey("paper_chunks"),
    dg.AssetKey("chunk_embeddings"),
    dg.AssetKey("question_evidence"),
]


def table_content(store: ChunkStore, embedder_id: str) -> dict[str, Any]:
    """A chunk table as a test compares it: its LanceDB version, and per chunk id its content
    hash and a hash of its vector (a list: a chunk stored twice would show)."""
    table = store.open_table(embedder_id)
    assert table is not None
    rows = table.to_arrow().select(["chunk_id", "content_sha256", "vector"]).to_pylist()
    return {
        "version": table.version,
        "rows": sorted(
            (
                row["chunk_id"],
                row["content_sha256"],
                hashlib.sha256(np.asarray(row["vector"], dtype=np.float32).tobytes()).hexdigest(),
            )
            for row in rows
        ),
    }


def stored_chunks(home: Path, embedder_id: str, paper_ids: list[str]) -> list[tuple[str, str]]:
    artifacts = ArtifactStore(home / "artifacts", embedder_id, PER_EMBEDDER_ASSETS)
    return sorted(
        (chunk.chunk_id, chunk.content_sha256)
        for paper_id in paper_ids
        for chunk in artifacts.read(["paper_chunks"], paper_id, PaperChunks).chunks
    )


def materializations(instance: dg.DagsterInstance, asset: str) -> Counter[str]:
    """How many times each partition of the asset was materialized."""
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=10_000).records
    return Counter(record.partition_key for record in records)


def all_fresh(settings: Settings, paper_ids: list[str]) -> bool:
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    states = partition_states(instance, defs, paper_asset_keys(defs), paper_ids)
    return all(state is State.FRESH for by_paper in states.values() for state in by_paper.values())


def test_backfill_to_another_embedder_in_batches_leaves_the_old_table_as_it_was(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:2])
    home = tmp_path / "home"
    run = ["run", str(folder), "--collection", COLLECTION, "--home", str(home)]
    assert main([*run, "--embedder", str(tiny_model)]) == 0
    other = with_pooling(tiny_model, tmp_path / "models", "cls")
    old, new = Embedder(str(tiny_model)).embedder_id, Embedder(str(other)).embedder_id
    store = ChunkStore(home / "lancedb")
    old_table = table_content(store, old)
    capsys.readouterr()

    backfill = ["backfill", "--home", str(home), "--embedder", str(other)]
    assert main([*backfill, "--batch", "2"]) == 0
    printed = capsys.readouterr().err
    batch_line = (
        r"^\[batch 1/1\] 2 papers in [\d.]+ s: paper_chunks 2, chunk_embeddings 2 "
        r"\(\d+ chunks, \d+ embedded\), question_evidence 2"
    )
    assert re.search(batch_line, printed, re.M), printed
    assert f"chunks__{old}: untouched" in printed
    assert f"LITPIPE_INGEST__EMBEDDER={other.resolve()}" in printed

    settings = Settings(home=home, ingest={"embedder": str(other)})
    paper_ids = list(
        open_instance(settings.llm, settings.paths).get_dynamic_partitions(papers.name)
    )
    chunks = stored_chunks(home, new, paper_ids)
    # Every chunk in the new table exactly once; the old table has not moved a version.
    assert sorted((cid, sha) for cid, sha, _ in table_content(store, new)["rows"]) == chunks
    assert table_content(store, old) == old_table
    # The same chunks: the two models share MiniLM's tokenizer and max_seq_length.
    assert sorted((cid, sha) for cid, sha, _ in old_table["rows"]) == chunks
    report = json.loads((home / "outputs" / "backfill" / f"{new}.json").read_text())
    assert report["chunks"] == report["embedded"] == report["table"]["rows_after"] == len(chunks)
    assert report["rebuilt"]["paper_questions"] == report["rebuilt"]["paper_abstract"] == 0
    assert report["batches"][0]["batched_runs"] >= 1
    assert [t["table"] for t in report["previous_tables"]] == [f"chunks__{old}"]

    # The batch's first run was over the range of both papers, as the UI's backfill launches
    # it, and built every stage the new embedder made stale (the answers follow where their
    # evidence changed).
    instance = open_instance(settings.llm, settings.paths)
    ours = {RANGE_START_TAG: paper_ids[0], backfilling.BACKFILL_TAG: report["backfill_id"]}
    *_, ranged = instance.get_run_records(dg.RunsFilter(tags=ours))
    assert ranged.dagster_run.tags[RANGE_END_TAG] == paper_ids[1]
    assert ranged.dagster_run.asset_selection == set(EMBEDDER_STAGES)
    # After that run the papers are fresh by litpipe's rule and by Dagster's own.
    assert all_fresh(settings, paper_ids)
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._core.loader import LoadingContextForTest

    resolver = CachingStaleStatusResolver(
        instance,
        build_definitions(**settings_groups(settings)).resolve_asset_graph(),
        LoadingContextForTest(instance),
    )
    for key in paper_asset_keys(build_definitions(**settings_groups(settings))):
        for paper_id in paper_ids:
            assert resolver.get_status(key, paper_id) == StaleStatus.FRESH, (key, paper_id)

    # Nothing left to do: a second backfill and `litpipe run` under the new embedder.
    assert main(backfill) == 0
    assert re.search(
        r"^\[batch 1/1\] 2 papers in [\d.]+ s: up to date$", capsys.readouterr().err, re.M
    )
    assert main([*run, "--embedder", str(other)]) == 0
    rerun = json.loads((home / "outputs" / COLLECTION / "report.json").read_text())
    assert rerun["papers_up_to_date"] == 2 and rerun["embedded_chunks"] == 0
    # The old embedder, still configured elsewhere, sees its own table whole.
    assert table_content(store, old) == old_table

    # Usage errors: nothing runs.
    assert main([*backfill, "--batch", "0"]) == 2
    assert main([*backfill, "--collection", "nope"]) == 2
    assert main(["backfill", "--home", str(tmp_path / "empty"), "--embedder", str(other)]) == 2
    assert main([*backfill[:3], "--embedder", str(tmp_path / "no-such-model")]) == 2


def test_a_backfill_from_the_ui_runs_batches_of_batch_size(tmp_path: Path) -> None:
    """What Dagster's backfill daemon launches for "materialize all partitions" of the per-paper
    assets: every per-paper stage by ranges of at most `operations.batch_size` papers, as
    `litpipe run` builds them."""
    from dagster._core.definitions.automation_tick_evaluation_context import (
        build_run_requests_with_backfill_policies,
    )
    from dagster._core.definitions.events import AssetKeyPartitionKey
    from dagster._core.definitions.partitions.context import partition_loading_context

    settings = Settings(home=tmp_path / "home", operations={"batch_size": 2})
    defs = build_definitions(**settings_groups(settings))
    graph = defs.resolve_asset_graph()
    keys = paper_asset_keys(defs)
    for key in keys:
        assert graph.get(key).backfill_policy == dg.BackfillPolicy.multi_run(2)
    instance = dg.DagsterInstance.ephemeral()
    paper_ids = [f"p{number}" for number in range(5)]
    instance.add_dynamic_partitions(papers.name, paper_ids)
    with partition_loading_context(dynamic_partitions_store=instance):
        requests = build_run_requests_with_backfill_policies(
            [AssetKeyPartitionKey(key, p) for key in keys for p in paper_ids], graph, instance
        )
    assert all(set(r.asset_selection or []) == set(keys) for r in requests)
    ranges = sorted((r.tags[RANGE_START_TAG], r.tags[RANGE_END_TAG]) for r in requests)
    assert ranges == [("p0", "p1"), ("p2", "p3"), ("p4", "p4")]


def test_a_run_over_a_range_keeps_each_partitions_state_its_own() -> None:
    """A run over several partitions records one hash of its inputs' versions for all of them:
    the partition states then follow the input event pointer, as Dagster's stale status does."""
    versions = {"a": "1", "b": "1", "c": "1"}
    toy = dg.DynamicPartitionsDefinition(name="toy")

    @dg.asset(partitions_def=toy, code_version="1")
    def source(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion(versions[context.partition_key]))

    @dg.asset(
        partitions_def=toy,
        deps=[source],
        code_version="1",
        backfill_policy=dg.BackfillPolicy.multi_run(3),
    )
    def batched(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion("-".join(context.partition_keys)))

    defs = dg.Definitions(assets=[source, batched], jobs=[dg.define_asset_job("toy_job")])
    job = defs.resolve_job_def("toy_job")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(toy.name, list(versions))
    for key in versions:
        job.execute_in_process(partition_key=key, instance=instance, asset_selection=[source.key])
    tags = {RANGE_START_TAG: "a", RANGE_END_TAG: "c"}
    assert job.execute_in_process(
        instance=instance, asset_selection=[batched.key], tags=tags
    ).success

    def states() -> dict[str, State]:
        return partition_states(instance, defs, [source.key, batched.key], list(versions))[
            batched.key
        ]

    assert states() == {"a": State.FRESH, "b": State.FRESH, "c": State.FRESH}
    versions["a"] = "2"  # a changed upstream partition, and one materialized again unchanged
    for key in ("a", "b"):
        job.execute_in_process(partition_key=key, instance=instance, asset_selection=[source.key])
    assert states() == {"a": State.UPSTREAM_CHANGED, "b": State.FRESH, "c": State.FRESH}


def answer_requests(stub: StubLLM, since: int, comparative: set[str]) -> list[tuple[str, str]]:
    """(paper id, question) of each answers call the stub got since `since`, the paper read off
    the passages' markers; the `comparative` questions, which search every paper, as ("*",
    question)."""
    asked = []
    for body in stub.requests[since:]:
        # The schema is in the response format (json_schema) or in the messages (the others).
        sent = json.dumps({"messages": body["messages"], "format": body.get("response_format")})
        if '"title": "AnswerReply"' not in sent.replace('\\"', '"'):
            continue
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        question = re.search(r"<question>\n(.*?)\n</question>", user, re.S)
        given = re.search(r"<paper>\n(.*?)\n</paper>", user, re.S)
        assert question is not None and given is not None
        cited = {paper_id for paper_id, _ in markers_in(given.group(1))}
        text = question.group(1)
        asked.append(("*" if text in comparative else cited.pop(), text))
    return asked


def passages(evidence: PaperEvidence) -> dict[str, list[str]]:
    """Each question's passages, in order: what its answer is written from."""
    return {item.question.text: [c.chunk_id for c in item.chunks] for item in evidence.questions}


@pytest.mark.slow
def test_embedder_swap_recomputes_answers_only_where_their_evidence_changed(
    tmp_path: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MiniLM, then two builds of it at lower precision (a swap a team makes for speed):
    bfloat16, under which every question finds the same passages, then float8, under which
    some do not. Real models, the stub as every agent's model, the calls counted."""
    serve_every_agent(stub_llm)
    # The variants are of torch's weights; int8 would quantize the rounding away.
    monkeypatch.setenv("LITPIPE_INGEST__EMBEDDER_BACKEND", "torch")
    names = ["10.1073_pnas.2322520121", "10.1101_2024.02.13.580051"]
    folder = folder_with(tmp_path / "papers", [CORPUS / f"{name}.pdf" for name in names])
    home = tmp_path / "home"
    model = ["--home", str(home), "--model", "openai/stub", "--api-base", stub_llm.url]
    assert main(["run", str(folder), "--collection", COLLECTION, *model]) == 0
    settings = Settings(home=home)
    instance = open_instance(settings.llm, settings.paths)
    paper_ids = list(instance.get_dynamic_partitions(papers.name))  # the order of the batches
    assert sorted(paper_ids) == sorted(names)

    def artifacts(embedder_id: str) -> ArtifactStore:
        return ArtifactStore(home / "artifacts", embedder_id, PER_EMBEDDER_ASSETS)

    store = ChunkStore(home / "lancedb")
    chunks = stored_chunks(home, "all-MiniLM-L6-v2", paper_ids)
    minilm = table_content(store, "all-MiniLM-L6-v2")
    questions_built = materializations(instance, "paper_questions")

    # While the new table fills, queries of the old one answer as before.
    minilm_model = Embedder("all-MiniLM-L6-v2", backend="torch")
    query = "Which DNA repair pathway do the mutants need to survive?"
    vector = minilm_model.encode([query])[0]

    def old_answers() -> list[str]:
        return [row["chunk_id"] for row in store.dense_search("all-MiniLM-L6-v2", vector, 10)]

    before = old_answers()
    during: list[tuple[int, list[str]]] = []
    real_backfill = backfilling.backfill

    def watched(*args: Any, on_batch: Any, **kwargs: Any) -> backfilling.BackfillReport:
        def each(outcome: backfilling.BatchOutcome) -> None:
            on_batch(outcome)
            during.append(
                (
                    store.count_rows(settings_embedder(args[0].ingest, args[0].paths).embedder_id),
                    old_answers(),
                )
            )

        return real_backfill(*args, on_batch=each, **kwargs)

    monkeypatch.setattr(backfilling, "backfill", watched)

    # 1. bfloat16: one paper per batch; the same evidence everywhere, so no answer is rerun.
    bf16 = build_minilm_variant(tmp_path / "models", rounded_to="bfloat16")
    evidence = {
        p: artifacts("all-MiniLM-L6-v2").read(["question_evidence"], p, PaperEvidence)
        for p in paper_ids
    }
    answers_built = materializations(instance, "paper_answers")
    since = stub_llm.request_count
    capsys.readouterr()
    assert main(["backfill", "--embedder", str(bf16), "--batch", "1", *model]) == 0
    printed = capsys.readouterr().err
    assert "[batch 1/2] 1 paper in" in printed and "[batch 2/2] 1 paper in" in printed
    bf16_id = Embedder(str(bf16), backend="torch").embedder_id
    first = len(artifacts(bf16_id).read(["paper_chunks"], paper_ids[0], PaperChunks).chunks)
    assert [rows for rows, _ in during] == [first, len(chunks)]
    assert all(answers == before for _, answers in during)
    assert sorted((cid, sha) for cid, sha, _ in table_content(store, bf16_id)["rows"]) == chunks
    assert table_content(store, "all-MiniLM-L6-v2") == minilm
    for paper_id in paper_ids:
        again = artifacts(bf16_id).read(["question_evidence"], paper_id, PaperEvidence)
        assert passages(again) == passages(evidence[paper_id])
    assert materializations(instance, "paper_answers") == answers_built  # not even rerun
    assert materializations(instance, "paper_questions") == questions_built
    assert answer_requests(stub_llm, since, set()) == []
    report = json.loads((home / "outputs" / "backfill" / f"{bf16_id}.json").read_text())
    assert report["rebuilt"]["question_evidence"] == 2 and report["rebuilt"]["paper_answers"] == 0
    # The collection's calls come from the cache, but for a comparison row whose passages the
    # new vectors changed: the table searches each paper for its aspects, not for the
    # questions whose evidence stayed the same.
    made = {
        agent: use["made"] for agent, use in report["llm_calls_by_agent"].items() if use["made"]
    }
    old_table, new_table = (
        artifacts(embedder).read(["comparison_table"], COLLECTION, ComparisonTable)
        for embedder in ("all-MiniLM-L6-v2", bf16_id)
    )
    changed_rows = [
        new_row.paper_id
        for old_row, new_row in zip(old_table.rows, new_table.rows, strict=True)
        if [c.text for c in old_row.passages] != [c.text for c in new_row.passages]
    ]
    assert made == ({"comparison_cells": len(changed_rows)} if changed_rows else {})

    # 2. float8: both papers in one batch (one run over their range); some passages change.
    float8 = build_minilm_variant(tmp_path / "models", rounded_to="float8_e4m3fn")
    evidence = {
        p: artifacts(bf16_id).read(["question_evidence"], p, PaperEvidence) for p in paper_ids
    }
    comparative = artifacts(bf16_id).read(
        ["cross_paper_questions"], COLLECTION, CrossPaperQuestions
    )
    answers_built = materializations(instance, "paper_answers")
    since = stub_llm.request_count
    assert main(["backfill", "--embedder", str(float8), "--batch", "2", *model]) == 0
    float8_id = Embedder(str(float8), backend="torch").embedder_id
    assert sorted((cid, sha) for cid, sha, _ in table_content(store, float8_id)["rows"]) == chunks
    assert table_content(store, "all-MiniLM-L6-v2") == minilm
    changed = {
        (paper_id, question)
        for paper_id in paper_ids
        for question, chunk_ids in passages(
            artifacts(float8_id).read(["question_evidence"], paper_id, PaperEvidence)
        ).items()
        if passages(evidence[paper_id])[question] != chunk_ids
    }
    comparative_now = artifacts(float8_id).read(
        ["cross_paper_questions"], COLLECTION, CrossPaperQuestions
    )
    changed |= {
        ("*", now.question.text)
        for then, now in zip(comparative.answers, comparative_now.answers, strict=True)
        if [c.chunk_id for c in then.evidence] != [c.chunk_id for c in now.evidence]
    }
    asked = answer_requests(stub_llm, since, {a.question.text for a in comparative.answers})
    assert sorted(asked) == sorted(changed)  # a model call exactly where the passages changed
    rerun = {paper_id for paper_id, _ in changed if paper_id != "*"}
    # The case this test is for (measured: 4 of the 8 questions find other passages, in both
    # papers; no comparative question is asked by default).
    asked_before = sum(len(e.questions) for e in evidence.values()) + len(comparative.answers)
    assert rerun and len(changed) < asked_before
    built = materializations(instance, "paper_answers") - answers_built
    assert set(built) == rerun and set(built.values()) == {1}
    assert materializations(instance, "paper_questions") == questions_built
    report = json.loads((home / "outputs" / "backfill" / f"{float8_id}.json").read_text())
    calls = report["llm_calls_by_agent"]
    assert "paper_questions" not in calls
    assert calls.get("cross_paper_questions", {}).get("made", 0) == 0
    assert calls["answers"]["made"] == len(changed)
    # The unchanged questions of the rerun papers: answered from the cache.
    assert calls["answers"]["cached"] >= sum(len(evidence[p].questions) for p in rerun) - len(
        [c for c in changed if c[0] != "*"]
    )
    (previous,) = report["previous_tables"]
    assert previous["table"] == f"chunks__{bf16_id}"
    assert previous["rows_before"] == previous["rows_after"] == len(chunks)
    assert previous["version_before"] == previous["version_after"]

    # Under the new embedder nothing is left to do.
    rerun_command = ["run", str(folder), "--collection", COLLECTION, "--embedder", str(float8)]
    assert main([*rerun_command, *model]) == 0
    last = json.loads((home / "outputs" / COLLECTION / "report.json").read_text())
    assert last["papers_up_to_date"] == 2 and last["embedded_chunks"] == 0
    assert last["llm_calls"]["made"] == 0


@pytest.mark.slow
def test_a_paper_another_process_built_while_the_backfill_waited_for_it_is_not_built_again(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`litpipe run` holds a paper's build lock while it builds it; a backfill reaching that
    paper then waits, and finds it built under the new embedder instead of building it again."""
    folder = folder_of_short_papers(tmp_path / "papers", 3)
    home = tmp_path / "home"
    assert main(["run", str(folder), "--home", str(home), "--embedder", str(tiny_model)]) == 0
    settings = Settings(home=home)  # the packaged MiniLM: every paper's embeddings are stale
    instance = open_instance(settings.llm, settings.paths)
    paper_ids = sorted(instance.get_dynamic_partitions(papers.name))
    taken = paper_ids[1]
    assets = [
        key.to_user_string()
        for key in paper_asset_keys(build_definitions(**settings_groups(settings)))
    ]
    before = {asset: materializations(instance, asset) for asset in assets}
    real_lock = backfilling.exclusive_lock
    built_meanwhile: list[str] = []

    @contextmanager
    def another_process_holds(path: Path) -> Iterator[None]:
        if path.stem == taken and not built_meanwhile:
            # What a concurrent `litpipe run` does while it holds the lock: build the paper.
            defs = build_definitions(**settings_groups(settings))
            result = defs.resolve_job_def("paper_pipeline").execute_in_process(
                partition_key=taken,
                asset_selection=paper_asset_keys(defs),
                instance=instance,
                raise_on_error=False,
            )
            assert result.success
            built_meanwhile.append(result.run_id)
        with real_lock(path):
            yield

    monkeypatch.setattr(backfilling, "exclusive_lock", another_process_holds)
    report = backfilling.backfill(settings, instance, paper_ids, batch_size=3)

    assert built_meanwhile, "the backfill took no build lock of the paper"
    built = {
        asset: {p: materializations(instance, asset)[p] - before[asset][p] for p in paper_ids}
        for asset in assets
    }
    assert built["chunk_embeddings"] == dict.fromkeys(paper_ids, 1)
    assert {asset: n for asset, n in built.items() if max(n.values()) > 1} == {}
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("chunk_embeddings"), asset_partitions=[taken]),
        limit=1,
    ).records[0]
    assert latest.run_id == built_meanwhile[0]
    assert report.rebuilt["chunk_embeddings"] == 2 and not report.failed_papers


def test_a_paper_the_backfill_has_not_reached_is_left_out_of_the_collection_not_cited(
    tmp_path: Path, tiny_model: Path
) -> None:
    """A paper registered while a backfill runs is not in its batches: the collection built
    under the new embedder leaves it out (named, with why) rather than cite its chunks, which
    the new embedder's table does not hold. The concurrency soak saw the synthesis fail its
    citation_validity check."""
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:2])
    home = tmp_path / "home"
    run = ["run", str(folder), "--collection", COLLECTION, "--home", str(home)]
    assert main([*run, "--embedder", str(tiny_model)]) == 0
    other = with_pooling(tiny_model, tmp_path / "models", "cls")
    settings = Settings(home=home, ingest={"embedder": str(other)})
    instance = open_instance(settings.llm, settings.paths)
    first, registered_meanwhile = instance.get_dynamic_partitions(papers.name)

    report = backfilling.backfill(settings, instance, [first])

    assert report.collection_failure is None and not report.failed_papers
    assert "synthesis" in report.collections[COLLECTION]
    new = ArtifactStore(home / "artifacts", Embedder(str(other)).embedder_id, PER_EMBEDDER_ASSETS)
    synthesis = new.read(["synthesis"], COLLECTION, Synthesis)
    assert {paper for paper, _ in markers_in(synthesis.text)} == {first}
    analysis = new.read(["relationship_analysis"], COLLECTION, RelationshipAnalysis)
    assert analysis.papers == [first]
    assert [left.paper_id for left in analysis.left_out] == [registered_meanwhile]
