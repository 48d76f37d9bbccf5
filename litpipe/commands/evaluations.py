"""Every `litpipe eval` command: `retrieval` (retrievers on a BEIR dataset), `mais` (the MAIS
loop's convergence), `litqa` (LitQA2 graded from the query-focused summaries; with
`--collection-wide`, from answers of one collection of all its papers), `scholarqa` (expert
questions, each asked of its snippets ingested as a collection) and each registered evaluation
(`litpipe/evaluation/registry.py`) run as its asset. Each prints its table, the files written
(stderr) and, but `retrieval`, a last line of JSON with its figures; what runs the graph for
them lies in `litpipe.runtime.evaluations`."""

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
    from litpipe.runtime.evaluations import AskedCollections, AskedQuestions, CollectionQuestions
    from litpipe.schemas import CollectionAnswer
    from litpipe.settings import LLMSettings
    from litpipe.settings.groups import SettingsGroups
    from litpipe.settings.routes import Route


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
    corpus: Path | None = None,
    collection: str | None = None,
) -> int:
    """Materialize `eval_<name>` in-process; 2 for a bad dataset or argument (nothing written),
    1 for another failure, `STOPPED_EXIT` when stopped on request before or during its run.
    An evaluation asking collections (`COLLECTION_EVALUATIONS`: its `corpus` of PDFs, built
    into `collection`, for `litqa --collection-wide`) asks them first (`ask_collections`), then
    writes its files and reports the materialization of its external asset."""
    from litpipe.defs.assets.evaluation import output_folder
    from litpipe.evaluation.registry import EVALUATIONS
    from litpipe.runtime.evaluations import ask_collections, run_evaluation, step_failure
    from litpipe.runtime.execution import interrupted

    entry = EVALUATIONS[name]
    label = entry.cli
    if limit is not None and limit < 1:
        print(f"{label}: --limit must be at least 1", file=sys.stderr)
        return 2
    if not dataset.exists():
        print(f"{label}: {dataset}: no such file", file=sys.stderr)
        return 2
    folder = output_folder(settings.paths, out)
    if name in COLLECTION_EVALUATIONS:
        from litpipe.defs.assets.evaluation import report_evaluation, write_evaluation
        from litpipe.runtime.runner import open_instance

        started = time.perf_counter()
        groups = settings_groups(settings)
        request = DatasetRequest(dataset, corpus or dataset, collection, out, limit)
        try:
            plan = COLLECTION_EVALUATIONS[name](groups, request)
            asked = ask_collections(settings, plan.asks, _stderr, stop_requested)
        except (OSError, ValueError) as error:
            print(f"{label}: {error}", file=sys.stderr)
            return 2
        if asked.stopped:
            print(asked.stop_line(label.removeprefix("litpipe ")), file=sys.stderr)
            return STOPPED_EXIT
        scored = plan.score(asked, started)
        if scored is None:
            print(f"{label}: no question was answered", file=sys.stderr)
            return 1
        evaluation, extra = scored
        files = write_evaluation(entry, evaluation, folder)
        report_evaluation(open_instance(settings.llm, settings.paths), entry, evaluation, files)
        print(entry.table(evaluation))
        print(f"written: {files['markdown']}, {files['json']}", file=sys.stderr)
        print(_figures_line(entry, evaluation, folder, extra))
        return 1 if asked.failures else 0
    config = {"dataset": str(dataset), "limit": limit, "out": str(folder)}
    result = run_evaluation(settings_groups(settings), entry, config, stop_requested)
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
    from litpipe.extractive.answer_judge import AnswerJudgeInput
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
        grading=_grading(judge),
        seconds=round(time.perf_counter() - started, 3),
    )
    folder = output_folder(settings.paths, request.out)
    files = write_evaluation(entry, evaluation, folder)
    report_evaluation(open_instance(settings.llm, settings.paths), entry, evaluation, files)
    print(entry.table(evaluation))
    print(f"written: {files['markdown']}, {files['json']}", file=sys.stderr)
    print(_figures_line(entry, evaluation, folder, {"skipped": len(asked.skipped)}))
    return 1 if asked.failures else 0


def _grading(judge: Route) -> str:
    """What graded the answers: the answer judge's model, or its offline rule."""
    from litpipe.extractive.answer_judge import OFFLINE_RULE

    return f"offline rule: {OFFLINE_RULE}" if judge.offline else f"answer_judge on {judge.model}"


def _answering(llm: LLMSettings, answers: Sequence[CollectionAnswer]) -> tuple[str, str | None]:
    """What wrote the collection answers (their engines, once each) and the models their
    agents are routed to (None offline)."""
    from litpipe.agents.asker import Asker
    from litpipe.evaluation.runner import models
    from litpipe.workflows.collection_answer import COLLECTION_ANSWER_AGENTS

    engine = ", ".join(dict.fromkeys(answer.engine for answer in answers)) or "none"
    return engine, models(Asker(llm), COLLECTION_ANSWER_AGENTS)


@dataclass(frozen=True)
class CollectionsPlan:
    """An evaluation asking collections: the questions for `ask_collections`, and how its
    outcome is scored (with the time the evaluation started): the evaluation and the extra
    figures of its JSON line, or None when no question was answered."""

    asks: list[CollectionQuestions]
    score: Callable[[AskedCollections, float], tuple[BaseModel, dict] | None]


def _scholarqa_plan(groups: SettingsGroups, request: DatasetRequest) -> CollectionsPlan:
    """Each question's snippets (of the first `limit`) written as an abstract table of its own
    collection, its one question asked of it; litpipe's answers and the baselines' scored."""
    from litpipe.evaluation import scholarqa
    from litpipe.ingest.ids import slug
    from litpipe.runtime.evaluations import CollectionQuestions

    paths = groups["paths"]
    examples = scholarqa.read_examples(request.dataset, request.limit)
    questions = [scholarqa.prepared_question(example) for example in examples]
    # The tables stay: the catalog names each paper's source, read again if it changes.
    tables = paths.home / "eval-collections" / "scholarqa"
    tables.mkdir(parents=True, exist_ok=True)
    asks = []
    for question in questions:
        table = tables / f"{slug(question.example.id)}.jsonl"
        write_atomically(table, scholarqa.snippet_table(question.snippets))
        asks.append(
            CollectionQuestions(
                source=table,
                collection=scholarqa.question_collection(question.example),
                questions=[question.example.query],
            )
        )

    def score(asked: AskedCollections, started: float) -> tuple[BaseModel, dict] | None:
        answers, results = [], []
        for question, found in zip(questions, asked.asked, strict=True):
            outcome = found.outcomes[0]
            if outcome is None or outcome.result is None:
                continue
            snippet_of = {
                found.paper_of[scholarqa.row_id(snippet)]: snippet
                for snippet in question.snippets
                if scholarqa.row_id(snippet) in found.paper_of
            }
            answers.append(outcome.result)
            results.append(scholarqa.scholarqa_result(question, outcome.result, snippet_of))
        if not results:
            return None
        engine, model = _answering(groups["llm"], answers)
        evaluation = scholarqa.scholarqa_evaluation(
            request.dataset,
            results,
            failed=len(questions) - len(results),
            engine=engine,
            model=model,
            embedder=groups["ingest"].embedder,
            seconds=round(time.perf_counter() - started, 3),
        )
        return evaluation, {"declined": evaluation.declined}

    return CollectionsPlan(asks=asks, score=score)


def _collection_wide_plan(groups: SettingsGroups, request: DatasetRequest) -> CollectionsPlan:
    """Every PDF of the corpus in one collection, each question (the first `limit`) asked of
    it; each answer graded as `eval litqa` grades a summary (a declined one states nothing)."""
    from litpipe.agents.answer_judge import AnswerJudgeAgent, judge_answers
    from litpipe.defs.resources import usage_path
    from litpipe.evaluation.litqa import LitQAQuestion, read_questions
    from litpipe.evaluation.litqa_collection_wide import collection_wide_evaluation, graded_answer
    from litpipe.evaluation.rouge import without_citations
    from litpipe.evaluation.runner import evaluation_asker
    from litpipe.extractive.answer_judge import AnswerJudgeInput
    from litpipe.ingest.sources import collection_name
    from litpipe.llm.usage import UsageLedger
    from litpipe.runtime.evaluations import CollectionQuestions

    questions = read_questions(request.dataset, LitQAQuestion)[: request.limit]
    if not request.corpus.is_dir():
        raise ValueError(f"{request.corpus}: not a folder of PDFs")
    # A question whose PDF is not in the corpus is not asked (it is skipped).
    present = [q for q in questions if (request.corpus / q.pdf_file).is_file()]
    if not present:
        raise ValueError(f"no question's PDF is in {request.corpus}")
    ask = CollectionQuestions(
        source=request.corpus,
        collection=request.collection or collection_name(request.corpus),
        questions=[question.question for question in present],
    )

    def score(asked: AskedCollections, started: float) -> tuple[BaseModel, dict]:
        (found,) = asked.asked
        skipped = [q for q in questions if q.pdf_file not in found.paper_of]
        for question in skipped:
            _stderr(f"  skipped {question.id}: {question.pdf_file} is not a readable PDF there")
        asked_pairs = [
            (question, outcome.result)
            for question, outcome in zip(present, found.outcomes, strict=True)
            if question.pdf_file in found.paper_of
            and outcome is not None
            and outcome.result is not None
        ]
        ledger = UsageLedger(usage_path(groups["paths"], asked.scope))
        asker = evaluation_asker(
            groups["llm"], groups["paths"], [AnswerJudgeAgent.name], ledger=ledger
        )
        answered = [(question, answer) for question, answer in asked_pairs if answer.answered]
        verdicts = iter(
            judge_answers(
                [
                    AnswerJudgeInput(
                        question=question.question,
                        ideal=question.ideal,
                        distractors=question.distractors,
                        summary=without_citations(answer.text),
                    )
                    for question, answer in answered
                ],
                asker,
            )
        )
        rows = [
            graded_answer(
                question,
                found.paper_of[question.pdf_file],
                answer,
                next(verdicts) if answer.answered else None,
            )
            for question, answer in asked_pairs
        ]
        engine, model = _answering(groups["llm"], [answer for _, answer in asked_pairs])
        evaluation = collection_wide_evaluation(
            rows,
            dataset=request.dataset,
            corpus=request.corpus,
            collection=found.collection,
            papers=len(found.paper_of),
            skipped=len(skipped),
            failed=len(questions) - len(skipped) - len(rows),
            engine=engine,
            model=model,
            embedder=groups["ingest"].embedder,
            grading=_grading(asker.route(AnswerJudgeAgent.name)),
            seconds=round(time.perf_counter() - started, 3),
        )
        return evaluation, {"skipped": len(skipped)}

    return CollectionsPlan(asks=[ask], score=score)


# The evaluations that ask collections as `litpipe ask --collection` does, by registered name.
COLLECTION_EVALUATIONS: dict[str, Callable[[SettingsGroups, DatasetRequest], CollectionsPlan]] = {
    "scholarqa": _scholarqa_plan,
    "litqa-collection-wide": _collection_wide_plan,
}
