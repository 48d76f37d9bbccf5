"""Every `litpipe eval` command: `retrieval` (retrievers on a BEIR dataset), `mais` (the MAIS
loop's convergence), `litqa` (LitQA2 graded from the query-focused summaries) and each
registered evaluation (`litpipe/evaluation/registry.py`) run as its asset. Each prints its table,
the files written (stderr) and, but `retrieval`, a last line of JSON with its figures; what runs
the graph for them lies in `litpipe.runtime.evaluations`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from litpipe.commands.common import with_max_iterations
from litpipe.files import write_atomically
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.stopping import STOPPED_EXIT, stop_line

if TYPE_CHECKING:
    from pydantic import BaseModel

    from litpipe.evaluation.litqa import PaperQuestion
    from litpipe.evaluation.registry import RegisteredEvaluation
    from litpipe.runtime.evaluations import AskedQuestions


def eval_retrieval_command(
    settings: Settings,
    dataset: Path,
    split: str,
    methods: str,
    max_queries: int | None,
    out: Path | None,
    cross_encoder: str | None = None,
    rerank_candidates: int | None = None,
) -> int:
    from litpipe.evaluation.beir import evaluate_retrieval, format_table
    from litpipe.retrieval.rerank import RerankerError

    chosen = tuple(method.strip() for method in methods.split(",") if method.strip())
    reranking = {
        name: value
        for name, value in {
            "cross_encoder_model": cross_encoder,
            "rerank_candidates": rerank_candidates,
        }.items()
        if value is not None
    }
    try:
        # Validated like any settings: a bad --rerank-candidates is a usage error.
        values = settings.model_dump()
        values["retrieval"] |= reranking
        settings = Settings.model_validate(values)
        evaluation = evaluate_retrieval(
            settings_groups(settings), dataset, split, chosen, max_queries
        )
    except (OSError, ValueError, RerankerError) as error:
        print(f"litpipe eval retrieval: {error}", file=sys.stderr)
        return 2
    print(format_table(evaluation))
    out = out or settings.paths.outputs_root / "eval" / f"retrieval-{dataset.name}-{split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, evaluation.model_dump_json(indent=2) + "\n")
    print(f"written: {out}")
    return 0


def _figures_line(
    entry: RegisteredEvaluation, evaluation: BaseModel, out: Path, extra: dict | None = None
) -> str:
    """The command's last line: the run's facts, the figures (4 decimals), out and seconds."""
    from litpipe.evaluation.registry import run_facts

    return json.dumps(
        {
            **run_facts(evaluation),
            **{name: round(value, 4) for name, value in entry.figures(evaluation).items()},
            **(extra or {}),
            "out": str(out),
            "seconds": getattr(evaluation, "seconds", None),
        }
    )


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
    from litpipe.defs.assets.evaluation import output_folder
    from litpipe.evaluation.registry import EVALUATIONS
    from litpipe.runtime.evaluations import run_evaluation, step_failure
    from litpipe.runtime.execution import interrupted

    entry = EVALUATIONS[name]
    label = f"litpipe eval {name}"
    if limit is not None and limit < 1:
        print(f"{label}: --limit must be at least 1", file=sys.stderr)
        return 2
    if not dataset.exists():
        print(f"{label}: {dataset}: no such file", file=sys.stderr)
        return 2
    folder = output_folder(settings.paths, out)
    config = {"dataset": str(dataset), "limit": limit, "out": str(folder)}
    result = run_evaluation(settings, entry, config, stop_requested)
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


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True)
class DatasetRequest:
    """What `litpipe eval mais` and `eval litqa` are asked: the dataset's questions (its first
    `limit`), the corpus holding their papers, the collection they are built into (None: one
    named after the dataset), where the results go (None: the collection's outputs) and the
    loop's passes at most (None: the settings')."""

    dataset: Path
    corpus: Path
    collection: str | None = None
    out: Path | None = None
    limit: int | None = None
    max_iterations: int | None = None


def ask_dataset(
    command: str,
    settings: Settings,
    request: DatasetRequest,
    model: type[PaperQuestion],
    stop_requested: Callable[[], bool],
) -> tuple[Settings, Sequence[PaperQuestion], AskedQuestions] | int:
    """The settings with `--max-iterations`, the dataset's questions (each a `model`; its first
    `limit`, whose papers alone are built) and `ask_questions`' outcome, progress on stderr;
    instead the exit status of `litpipe <command>`, said why on stderr, when an argument, the
    dataset or the corpus is unusable (2) or when it was stopped on request (`STOPPED_EXIT`)."""
    from litpipe.evaluation.litqa import read_questions
    from litpipe.runtime.evaluations import ask_questions

    try:
        settings = with_max_iterations(settings, request.max_iterations)
        limit = request.limit
        if limit is not None and limit < 1:
            raise ValueError(f"--limit must be at least 1, not {limit}")
        questions = read_questions(request.dataset, model)[:limit]
        asked = ask_questions(
            settings,
            questions,
            request.corpus,
            request.collection,
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
    return settings, questions, asked


def eval_mais_command(
    settings: Settings,
    request: DatasetRequest,
    stop_requested: Callable[[], bool] = lambda: False,
) -> int:
    """Each question of the dataset (its first `limit`) asked of its own paper through the
    `query_summary` asset
    (so every request is a partition in the instance, and a rerun is served from it), then the
    convergence report over them (none when stopped on request before every question was
    asked)."""
    from litpipe.defs.resources import usage_path
    from litpipe.evaluation.convergence import convergence_report
    from litpipe.evaluation.litqa import PaperQuestion
    from litpipe.llm.usage import UsageLedger
    from litpipe.report.convergence import render_svg
    from litpipe.report.query_summary import (
        EvaluatedRequest,
        convergence_markdown,
        evaluated,
        with_offline_notice,
    )

    started = time.perf_counter()
    asking = ask_dataset("eval mais", settings, request, PaperQuestion, stop_requested)
    if isinstance(asking, int):
        return asking
    settings, questions, asked = asking
    outcomes = asked.answered
    results = [outcome.result for _, outcome in outcomes if outcome.result is not None]
    report = with_offline_notice(convergence_report(results))
    runs: list[EvaluatedRequest] = [
        evaluated(question.id, outcome.result)
        for question, outcome in outcomes
        if outcome.result is not None
    ]
    table = convergence_markdown(
        report, runs, f"MAIS convergence: {request.dataset.name} on {asked.collection}"
    )
    out_dir = request.out or settings.paths.outputs_dir(asked.collection)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "convergence.md": table,
        "convergence.svg": render_svg(report),
        "convergence.json": report.model_dump_json(indent=2) + "\n",
    }
    for name, text in files.items():
        write_atomically(out_dir / name, text)
    usage = UsageLedger(usage_path(settings.paths, asked.scope)).scope_summary()
    print(table)
    print(f"written: {', '.join(str(out_dir / name) for name in files)}", file=sys.stderr)
    figures = {
        "dataset": str(request.dataset),
        "collection": asked.collection,
        "questions": len(questions),
        "skipped": len(asked.skipped),
        "failed": len(asked.failures),
        **report.model_dump(),
        "materialized": sum(o.status == "materialized" for _, o in outcomes),
        "up_to_date": sum(o.status == "up_to_date" for _, o in outcomes),
        "llm_calls": {"made": usage.made, "cached": usage.cached, "failed": usage.failed},
        "engine": settings.route("query_summary").model,
        "out": str(out_dir),
        "seconds": round(time.perf_counter() - started, 3),
    }
    print(json.dumps(figures))
    return 1 if asked.failures else 0


def eval_litqa_command(
    settings: Settings,
    request: DatasetRequest,
    stop_requested: Callable[[], bool] = lambda: False,
) -> int:
    """Each question (the first `limit`) asked of its own paper (`ask_questions`), each final
    summary graded for whether it states the ideal answer or a distractor; the table and JSON
    written, and the `eval_litqa` materialization reported to the instance (neither when
    stopped on request before every question was asked)."""
    from litpipe.agents.answer_judge import AnswerJudgeAgent, judge_answers
    from litpipe.defs.assets.evaluation import output_folder, report_evaluation, write_evaluation
    from litpipe.defs.resources import usage_path
    from litpipe.evaluation.litqa import LitQAQuestion, grade, litqa_evaluation
    from litpipe.evaluation.registry import EVALUATIONS
    from litpipe.evaluation.runner import evaluation_asker
    from litpipe.extractive.answer_judge import OFFLINE_RULE, AnswerJudgeInput
    from litpipe.runtime.runner import open_instance

    entry = EVALUATIONS["litqa"]
    started = time.perf_counter()
    asking = ask_dataset("eval litqa", settings, request, LitQAQuestion, stop_requested)
    if isinstance(asking, int):
        return asking
    settings, _, asked = asking
    answered = [
        (question, outcome.result)
        for question, outcome in asked.answered
        if isinstance(question, LitQAQuestion) and outcome.result is not None
    ]
    from litpipe.llm.usage import UsageLedger

    ledger = UsageLedger(usage_path(settings.paths, asked.scope))
    asker = evaluation_asker(settings.llm, settings.paths, [AnswerJudgeAgent.name], ledger=ledger)
    judge = asker.route(AnswerJudgeAgent.name)
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
        asker,
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
        dataset=request.dataset,
        corpus=request.corpus,
        collection=asked.collection,
        skipped=len(asked.skipped),
        failed=len(asked.failures),
        engine=asker.engine("query_summary"),
        embedder=settings.ingest.embedder,
        grading=f"offline rule: {OFFLINE_RULE}"
        if judge.offline
        else f"answer_judge on {judge.model}",
        seconds=round(time.perf_counter() - started, 3),
    )
    folder = output_folder(settings.paths, request.out)
    files = write_evaluation(entry, evaluation, folder)
    report_evaluation(open_instance(settings.llm, settings.paths), entry, evaluation, files)
    print(entry.table(evaluation))
    print(f"written: {files['markdown']}, {files['json']}", file=sys.stderr)
    print(_figures_line(entry, evaluation, folder, {"skipped": len(asked.skipped)}))
    return 1 if asked.failures else 0
