"""What runs the graph in-process for `litpipe eval` (the commands themselves, which print,
are in `litpipe.commands.evaluations`), into the instance the UI serves.

`run_evaluation` materializes a registered evaluation's asset (a run in the instance, its figures
as the materialization's metadata; see `litpipe/defs/assets/evaluation.py`), and `step_failure`
says why a run failed. `ask_questions` asks each question of a LitQA-style JSONL of its own paper
through `query_summary`, as `litpipe eval mais` and `litpipe eval litqa` both do;
`ask_collections` asks questions of whole collections as `litpipe ask --collection` does, as
`litpipe eval scholarqa` and `eval litqa --collection-wide` do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.catalog import Registration
from litpipe.defs.assets.evaluation import evaluation_job
from litpipe.defs.assets.related_work import BAD_INPUT
from litpipe.defs.definitions import build_definitions
from litpipe.evaluation.litqa import PaperQuestion
from litpipe.evaluation.registry import RegisteredEvaluation
from litpipe.runtime.collection_answer import COLLECTION_ANSWERS, CollectionAskOutcome
from litpipe.runtime.execution import execute, run_failure
from litpipe.runtime.query_summary import AskOutcome, summarize_request
from litpipe.runtime.runner import open_instance, register, run_papers
from litpipe.settings import Settings
from litpipe.settings.groups import SettingsGroups, settings_groups
from litpipe.stopping import stop_line
from litpipe.text import counted


def step_failure(result: dg.ExecuteInProcessResult) -> tuple[str, bool]:
    """Why an in-process run failed, and whether its step blamed the input (a `dg.Failure`
    carrying `BAD_INPUT`: the command answers it as a usage error)."""
    for event in result.all_events:
        failure = event.step_failure_data if event.is_step_failure else None
        data = failure.user_failure_data if failure is not None else None
        if data is not None and data.description:
            flag = (data.metadata or {}).get(BAD_INPUT)
            return data.description, bool(getattr(flag, "value", flag))
    return run_failure(result), False


def run_evaluation(
    groups: SettingsGroups,
    entry: RegisteredEvaluation,
    config: Mapping[str, object],
    stop_requested: Callable[[], bool] = lambda: False,
) -> dg.ExecuteInProcessResult | None:
    """`entry`'s asset materialized in-process with `config`, in a run of the instance; None
    when stopped on request before its run started."""
    defs = build_definitions(**groups)
    instance = open_instance(groups["llm"], groups["paths"])
    if stop_requested():
        return None
    return execute(
        defs,
        instance,
        evaluation_job.name,
        asset_selection=[dg.AssetKey(entry.asset_name)],
        run_config={"ops": {entry.asset_name: {"config": config}}},
    )


class AskedQuestions(BaseModel):
    """Each question of a dataset asked of its own paper (`ask_questions`)."""

    collection: str
    scope: str
    skipped: list[str]
    failures: list[str]
    answered: list[tuple[PaperQuestion, AskOutcome]]
    stopped: bool = Field(
        default=False, description="Stopped on request before every question was asked."
    )
    interrupted: list[str] = Field(
        default_factory=list, description="Questions whose run a stop request interrupted."
    )
    not_asked: list[str] = Field(
        default_factory=list, description="When stopped: the questions it did not reach."
    )
    papers_not_built: list[str] = Field(
        default_factory=list,
        description="When stopped while building the papers: those interrupted or not reached.",
    )

    def stop_line(self, command: str) -> str:
        """What a stopped evaluation prints last: it writes no report of the questions asked
        so far (a rerun serves them from the instance and asks the rest)."""
        done = (
            f"{counted(len(self.answered), 'question')} answered, {len(self.failures)} failed, "
            f"{len(self.interrupted)} interrupted"
        )
        unbuilt = (
            f" (papers not built: {len(self.papers_not_built)})" if self.papers_not_built else ""
        )
        left = f"not asked: {counted(len(self.not_asked), 'question')}{unbuilt}; no report written"
        return stop_line(command, done, left)


def ask_questions(
    settings: Settings,
    questions: Sequence[PaperQuestion],
    corpus: Path,
    collection: str | None,
    progress: Callable[[str], None],
    stop_requested: Callable[[], bool] = lambda: False,
    only_their_papers: bool = False,
) -> AskedQuestions:
    """The corpus' papers built as `litpipe run` builds them, then each question asked of its
    paper (`pdf_file`) through the `query_summary` asset: every request is a partition in the
    instance, and a fresh one is served from it. A ValueError when the corpus is not a folder or
    holds none of the questions' PDFs; lines of progress go to `progress`. No further run starts
    once `stop_requested` or once a signal interrupted a run's step: the questions not reached
    are `not_asked`. With `only_their_papers`, the corpus' other papers are not built (a
    `--limit`ed evaluation pays for the papers it asks of, not for the whole folder)."""
    from litpipe.ingest.sources import discover
    from litpipe.report.query_summary import outcome_line
    from litpipe.workflows.query_summary import request_for

    if not corpus.is_dir():
        raise ValueError(f"{corpus}: not a folder of PDFs")
    discovery = discover(corpus, collection)
    if only_their_papers:
        asked_files = {question.pdf_file for question in questions}
        discovery = discovery.model_copy(
            update={"sources": [s for s in discovery.sources if Path(s.path).name in asked_files]}
        )
    paper_of = {Path(source.path).name: source.paper_id for source in discovery.sources}
    missing = [q for q in questions if q.pdf_file not in paper_of]
    for question in missing:
        progress(f"  skipped {question.id}: {question.pdf_file} is not a readable PDF of {corpus}")
    if len(missing) == len(questions):
        raise ValueError(f"no question's PDF is in {corpus}")

    instance = open_instance(settings.llm, settings.paths)
    registrations = register(settings.paths, instance, discovery)
    papers_run = run_papers(
        settings,
        instance,
        registrations,
        on_progress=lambda done, total, outcome: progress(
            f"[{done}/{total}] {outcome.paper_id}: {outcome.status}"
        ),
        stop_requested=stop_requested,
    )
    failed_papers = {
        o.paper_id: o.failure.reason if o.failure else "failed"
        for o in papers_run.outcomes
        if o.status == "failed"
    }
    if papers_run.collection_failure:
        progress(
            f"  collection assets FAILED (the summaries need only each paper's chunks and "
            f"abstract): {papers_run.collection_failure}"
        )

    scope = f"cli-{uuid.uuid4().hex[:12]}"
    defs = build_definitions(**settings_groups(settings))
    asked = [q for q in questions if q.pdf_file in paper_of]
    answered: list[tuple[PaperQuestion, AskOutcome]] = []
    failures: list[str] = []
    interrupted_ids: list[str] = []
    not_asked: list[str] = []
    stopped = papers_run.stopped
    for number, question in enumerate(asked, 1):
        stopped = stopped or stop_requested()
        if stopped:
            not_asked = [q.id for q in asked[number - 1 :]]
            break
        paper_id = paper_of[question.pdf_file]
        if paper_id in failed_papers:
            failures.append(f"{question.id}: paper {paper_id} failed: {failed_papers[paper_id]}")
            continue
        try:
            request = request_for(paper_id, question.question)
        except ValueError as error:
            failures.append(f"{question.id}: {error}")
            continue
        outcome = summarize_request(settings.ingest, settings.paths, instance, defs, request, scope)
        if outcome.status == "interrupted":
            interrupted_ids.append(question.id)
            progress(f"[{number}/{len(asked)}] {question.id}: interrupted (stop requested)")
            stopped = True
            continue
        if outcome.result is None:
            failures.append(f"{question.id}: {request.key} failed: {outcome.failure}")
            progress(f"[{number}/{len(asked)}] {question.id}: FAILED")
            continue
        answered.append((question, outcome))
        progress(
            f"[{number}/{len(asked)}] {question.id} ({paper_id}, {request.key}): "
            f"{outcome_line(outcome.result)} ({outcome.status.replace('_', ' ')})"
        )
    for failure in failures:
        progress(f"  failed: {failure}")
    return AskedQuestions(
        collection=discovery.collection,
        scope=scope,
        skipped=[q.id for q in missing],
        failures=failures,
        answered=answered,
        stopped=stopped,
        interrupted=interrupted_ids,
        not_asked=not_asked,
        papers_not_built=[
            *(o.paper_id for o in papers_run.outcomes if o.status == "interrupted"),
            *papers_run.not_built,
        ],
    )


class CollectionQuestions(BaseModel):
    """Questions to ask of one collection: its source (a folder of PDFs or an abstract table,
    as `litpipe run` reads it), the collection it is built into, and the questions."""

    source: Path
    collection: str
    questions: list[str]


class CollectionAnswers(BaseModel):
    """What `ask_collections` found of one `CollectionQuestions`: its papers (each source's
    file name, or row id, with its paper id) and, in the questions' order, each question's
    outcome (None when it was not asked: it failed, or the command was stopped)."""

    collection: str
    paper_of: dict[str, str]
    outcomes: list[CollectionAskOutcome | None]


class AskedCollections(BaseModel):
    scope: str
    asked: list[CollectionAnswers]
    failures: list[str]
    stopped: bool = False
    not_asked: int = Field(default=0, description="When stopped: the questions not reached.")

    def stop_line(self, command: str) -> str:
        """What a stopped evaluation prints last (a rerun serves what was answered)."""
        answered = sum(o is not None for a in self.asked for o in a.outcomes)
        done = f"{counted(answered, 'question')} answered, {len(self.failures)} failed"
        left = f"not asked: {counted(self.not_asked, 'question')}; no report written"
        return stop_line(command, done, left)


def answer_inputs(defs: dg.Definitions) -> set[dg.AssetKey]:
    """The per-paper assets a collection's answer reads (its papers' chunks and embeddings)
    with everything upstream of them: all of a paper a collection answer needs built."""
    graph = defs.resolve_asset_graph()
    needed: set[dg.AssetKey] = set()
    reading = list(graph.get(COLLECTION_ANSWERS).parent_keys)
    while reading:
        key = reading.pop()
        if key not in needed:
            needed.add(key)
            reading += graph.get(key).parent_keys
    return needed


def ask_collections(
    settings: Settings,
    asks: Sequence[CollectionQuestions],
    progress: Callable[[str], None],
    stop_requested: Callable[[], bool] = lambda: False,
) -> AskedCollections:
    """Every source's papers registered in its collection and built as far as a collection
    answer reads them (`answer_inputs`: chunks and embeddings, no synthesis), then each
    question asked of its collection as `litpipe ask --collection` asks it (`answer_request`:
    a `collection_questions` partition, served when fresh). A ValueError when a source cannot
    be read; a question its collection cannot answer (no embedded paper) is a failure. No
    further run starts once `stop_requested`."""
    from litpipe.ingest.sources import discover
    from litpipe.runtime.collection_answer import answer_request, ready_collection
    from litpipe.workflows.collection_answer import CollectionAnswerError, request_for

    discoveries = [discover(ask.source, ask.collection) for ask in asks]
    instance = open_instance(settings.llm, settings.paths)
    registrations: dict[str, Registration] = {}
    for discovery in discoveries:
        registrations |= register(settings.paths, instance, discovery)
    defs = build_definitions(**settings_groups(settings))
    papers_run = run_papers(
        settings,
        instance,
        registrations,
        on_progress=lambda done, total, outcome: progress(
            f"[{done}/{total}] {outcome.paper_id}: {outcome.status}"
        ),
        stop_requested=stop_requested,
        stages=answer_inputs(defs),
    )
    failures = [
        f"paper {o.paper_id} failed: {o.failure.reason if o.failure else 'failed'}"
        for o in papers_run.outcomes
        if o.status == "failed"
    ]
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    asked: list[CollectionAnswers] = []
    stopped, not_asked = papers_run.stopped, 0
    for ask, discovery in zip(asks, discoveries, strict=True):
        outcomes: list[CollectionAskOutcome | None] = []
        for question in ask.questions:
            stopped = stopped or stop_requested()
            if stopped:
                not_asked += 1
                outcomes.append(None)
                continue
            try:
                request = request_for(discovery.collection, question)
                ready_collection(settings.ingest, settings.paths, request.collection)
            except CollectionAnswerError as error:
                failures.append(f"{discovery.collection}: {error}")
                outcomes.append(None)
                continue
            outcome = answer_request(
                settings.ingest, settings.paths, instance, defs, request, scope
            )
            stopped = outcome.status == "interrupted"
            if outcome.result is None:
                failures.append(f"{request.key} ({discovery.collection}): {outcome.failure}")
            outcomes.append(outcome if outcome.result is not None else None)
            progress(
                f"  {discovery.collection} {request.key}: {outcome.status.replace('_', ' ')}"
                + ("" if outcome.result is None or outcome.result.answered else " (declined)")
            )
        asked.append(
            CollectionAnswers(
                collection=discovery.collection,
                paper_of={
                    source.external_id or Path(source.path).name: source.paper_id
                    for source in discovery.sources
                },
                outcomes=outcomes,
            )
        )
    for failure in failures:
        progress(f"  failed: {failure}")
    return AskedCollections(
        scope=scope, asked=asked, failures=failures, stopped=stopped, not_asked=not_asked
    )
