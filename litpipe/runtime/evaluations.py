"""`litpipe eval <name>`: the registered evaluations run from the command line, into the
instance the UI serves (see `litpipe/defs/assets/evaluation.py`).

`eval_command` materializes the evaluation's asset in-process (a run in the instance, its figures
as the materialization's metadata) and prints the table, the files written (stderr) and a last
line of JSON with the figures. `ask_questions` asks each question of a LitQA-style JSONL of its
own paper through `query_summary`, as `litpipe eval mais` and `litpipe eval litqa` both do;
`eval_litqa_command` grades those summaries and reports the `eval_litqa` materialization.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.defs.assets.evaluation import (
    evaluation_job,
    output_folder,
    report_evaluation,
    write_evaluation,
)
from litpipe.defs.assets.related_work import BAD_INPUT
from litpipe.defs.definitions import build_definitions
from litpipe.defs.resources import usage_path
from litpipe.evaluation.litqa import PaperQuestion
from litpipe.evaluation.registry import EVALUATIONS, RegisteredEvaluation, run_facts
from litpipe.runtime.execution import execute, interrupted, run_failure
from litpipe.runtime.query_summary import AskOutcome, summarize_request
from litpipe.runtime.runner import open_instance, register, run_papers
from litpipe.settings import Settings
from litpipe.stopping import STOPPED_EXIT, stop_line


def _figures_line(
    entry: RegisteredEvaluation, evaluation: BaseModel, out: Path, extra: dict | None = None
) -> str:
    """The command's last line: the run's facts, the figures (4 decimals), out and seconds."""
    return json.dumps(
        {
            **run_facts(evaluation),
            **{name: round(value, 4) for name, value in entry.figures(evaluation).items()},
            **(extra or {}),
            "out": str(out),
            "seconds": getattr(evaluation, "seconds", None),
        }
    )


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


def eval_command(
    settings: Settings,
    name: str,
    dataset: Path,
    limit: int | None,
    out: Path | None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> int:
    """Materialize `eval_<name>` in-process; 2 for a bad dataset or argument (nothing written),
    1 for another failure, `STOPPED_EXIT` when stopped on request before or during its run."""
    entry = EVALUATIONS[name]
    label = f"litpipe eval {name}"
    if limit is not None and limit < 1:
        print(f"{label}: --limit must be at least 1", file=sys.stderr)
        return 2
    if not dataset.exists():
        print(f"{label}: {dataset}: no such file", file=sys.stderr)
        return 2
    folder = output_folder(settings, out)
    config = {"dataset": str(dataset), "limit": limit, "out": str(folder)}
    defs = build_definitions(settings)
    instance = open_instance(settings)
    result = (
        None
        if stop_requested()
        else execute(
            defs,
            instance,
            evaluation_job.name,
            asset_selection=[dg.AssetKey(entry.asset_name)],
            run_config={"ops": {entry.asset_name: {"config": config}}},
        )
    )
    if result is None or interrupted(result):
        done = "no run started" if result is None else "its run interrupted"
        print(stop_line(f"eval {name}", done, "nothing written"), file=sys.stderr)
        return STOPPED_EXIT
    if not result.success:
        reason, bad_input = step_failure(result)
        print(f"{label}: {reason}", file=sys.stderr)
        return 2 if bad_input else 1
    json_file = folder / f"{entry.stem}.json"
    evaluation = entry.result.model_validate_json(json_file.read_text(encoding="utf-8"))
    print(entry.table(evaluation))
    print(f"written: {folder / f'{entry.stem}.md'}, {json_file}", file=sys.stderr)
    print(_figures_line(entry, evaluation, folder))
    return 0


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
            f"{len(self.answered)} questions answered, {len(self.failures)} failed, "
            f"{len(self.interrupted)} interrupted"
        )
        unbuilt = (
            f" (papers not built: {len(self.papers_not_built)})" if self.papers_not_built else ""
        )
        left = f"not asked: {len(self.not_asked)} questions{unbuilt}; no report written"
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

    instance = open_instance(settings)
    registrations = register(settings, instance, discovery)
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
    defs = build_definitions(settings)
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
        outcome = summarize_request(settings, instance, request, scope, defs)
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


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def ask_dataset(
    command: str,
    settings: Settings,
    dataset: Path,
    model: type[PaperQuestion],
    corpus: Path,
    collection: str | None,
    stop_requested: Callable[[], bool],
    limit: int | None = None,
) -> tuple[Sequence[PaperQuestion], AskedQuestions] | int:
    """The dataset's questions (each a `model`; its first `limit`, whose papers alone are built)
    and `ask_questions`' outcome, progress on stderr; instead the exit status of `litpipe
    <command>`, said why on stderr, when the dataset or the corpus is unusable (2) or when it was
    stopped on request (`STOPPED_EXIT`)."""
    from litpipe.evaluation.litqa import read_questions

    try:
        if limit is not None and limit < 1:
            raise ValueError(f"--limit must be at least 1, not {limit}")
        questions = read_questions(dataset, model)[:limit]
        asked = ask_questions(
            settings,
            questions,
            corpus,
            collection,
            _stderr,
            stop_requested,
            only_their_papers=limit is not None,
        )
    except ValueError as error:
        print(f"litpipe {command}: {error}", file=sys.stderr)
        return 2
    if asked.stopped:
        print(asked.stop_line(command), file=sys.stderr)
        return STOPPED_EXIT
    return questions, asked


def eval_litqa_command(
    settings: Settings,
    dataset: Path,
    corpus: Path,
    collection: str | None,
    out: Path | None,
    stop_requested: Callable[[], bool] = lambda: False,
    limit: int | None = None,
) -> int:
    """Each question (the first `limit`) asked of its own paper (`ask_questions`), each final
    summary graded for whether it states the ideal answer or a distractor; the table and JSON
    written, and the `eval_litqa` materialization reported to the instance (neither when
    stopped on request before every question was asked)."""
    from litpipe.agents.answer_judge import (
        OFFLINE_RULE,
        AnswerJudgeAgent,
        AnswerJudgeInput,
        judge_answers,
    )
    from litpipe.agents.base import engine_name
    from litpipe.evaluation.litqa import LitQAQuestion, grade, litqa_evaluation
    from litpipe.llm.prompts import PromptLibrary

    entry = EVALUATIONS["litqa"]
    started = time.perf_counter()
    asking = ask_dataset(
        "eval litqa", settings, dataset, LitQAQuestion, corpus, collection, stop_requested, limit
    )
    if isinstance(asking, int):
        return asking
    _, asked = asking
    answered = [
        (question, outcome.result)
        for question, outcome in asked.answered
        if isinstance(question, LitQAQuestion) and outcome.result is not None
    ]
    judge = settings.route(AnswerJudgeAgent.name)
    client = None
    if not judge.offline:
        from litpipe.llm.client import LLMClient
        from litpipe.llm.usage import UsageLedger

        client = LLMClient(settings, UsageLedger(usage_path(settings, asked.scope)))
    verdicts = judge_answers(
        [
            AnswerJudgeInput(
                question=question.question,
                ideal=question.ideal,
                distractors=question.distractors,
                summary=summary.summary,
            )
            for question, summary in answered
        ],
        settings,
        PromptLibrary(settings.llm.prompts_dir),
        client,
    )
    graded = [
        grade(
            question,
            summary.request.paper_id,
            summary.request.key,
            summary.status,
            len(summary.iterations),
            summary.summary,
            verdict,
        )
        for (question, summary), verdict in zip(answered, verdicts, strict=True)
    ]
    evaluation = litqa_evaluation(
        graded,
        dataset=dataset,
        corpus=corpus,
        collection=asked.collection,
        skipped=len(asked.skipped),
        failed=len(asked.failures),
        engine=engine_name(settings.route("query_summary")),
        embedder=settings.ingest.embedder,
        grading=f"offline rule: {OFFLINE_RULE}"
        if judge.offline
        else f"answer_judge on {judge.model}",
        seconds=round(time.perf_counter() - started, 3),
    )
    folder = output_folder(settings, out)
    files = write_evaluation(entry, evaluation, folder)
    report_evaluation(open_instance(settings), entry, evaluation, files)
    print(entry.table(evaluation))
    print(f"written: {files['markdown']}, {files['json']}", file=sys.stderr)
    print(_figures_line(entry, evaluation, folder, {"skipped": len(asked.skipped)}))
    return 1 if asked.failures else 0
