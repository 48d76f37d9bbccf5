"""The `litpipe` command: runs the same Dagster graph in-process, into the UI's instance."""

from __future__ import annotations

import argparse
import functools
import io
import logging
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, get_args

from litpipe.files import write_atomically
from litpipe.llm.usage import calls_line
from litpipe.progress import calls_shown_on_stderr
from litpipe.schemas import CheckReport, FailedPaper, RunReport, SynthesisReport
from litpipe.settings import (
    OFFLINE,
    Settings,
    StructuredOutput,
    SynthesisSettings,
    preset_names,
)
from litpipe.stopping import STOPPED_EXIT, stop_line, stop_on_signals

if TYPE_CHECKING:
    import dagster as dg

    from litpipe.defs.staleness import State
    from litpipe.ingest.sources import Discovery
    from litpipe.runtime.runner import PaperOutcome

# Under the home: other libraries' warnings (and litpipe's), kept off the terminal without -v.
LOG_FILE = Path("logs") / "litpipe.log"
# huggingface_hub's switch, which transformers' bars (a model's "Loading weights") follow too.
HF_PROGRESS_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"


def build_parser() -> argparse.ArgumentParser:
    """Every command and flag (the docs' command reference is generated from it)."""
    parser = argparse.ArgumentParser(prog="litpipe", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="ingest a folder of PDFs, an abstract table (.csv/.jsonl), a Zotero library or a "
        "BibTeX file and write its synthesis",
    )
    # Exactly one source: argparse says so, with the usage, when none or two are given.
    sources = run.add_mutually_exclusive_group(required=True)
    sources.add_argument(
        "source",
        type=Path,
        nargs="?",
        help="folder of PDFs, or a table with id,title,abstract",
    )
    sources.add_argument(
        "--zotero",
        type=Path,
        nargs="?",
        const=Path("~/Zotero"),
        metavar="DATA_DIR",
        help="Zotero's data directory, holding zotero.sqlite (default: ~/Zotero): each item's "
        "PDF with its title, authors, year, venue and DOI, or its abstract without a PDF; read "
        "without disturbing a running Zotero",
    )
    sources.add_argument(
        "--bibtex",
        type=Path,
        metavar="FILE",
        help="a .bib file: the entries with a PDF in their file field (relative to the .bib's "
        "folder) or an abstract",
    )
    run.add_argument(
        "--zotero-collection",
        metavar="NAME",
        help="with --zotero: only this Zotero collection's items (its sub-collections' too; "
        "Parent/Child names one among several of that name)",
    )
    run.add_argument(
        "--collection",
        help="collection name (default: the folder or table name, the Zotero collection's "
        "name or `zotero`, the .bib file's name)",
    )
    run.add_argument(
        "--move",
        action="store_true",
        help="take the papers out of the other collections that hold them (without it, a paper "
        "stays in every collection it was run into, its per-paper work shared): those "
        "collections are rebuilt without them, and nothing of the papers themselves",
    )
    _add_common(run)

    backfill = commands.add_parser(
        "backfill",
        help="bring every registered paper up to date in batches, e.g. under another embedder "
        "(--embedder): its own LanceDB table fills while the old one stays as it is",
    )
    backfill.add_argument("--collection", help="only this collection's papers (default: all)")
    backfill.add_argument(
        "--batch", type=int, help="papers per run (default: operations.batch_size, 100)"
    )
    _add_common(backfill)

    status = commands.add_parser("status", help="what is materialized, stale or missing")
    _add_common(status)
    status.add_argument("--all", action="store_true", help="list every stale or missing paper")

    ui = commands.add_parser("ui", help="serve the Dagster UI on this litpipe home")
    _add_common(ui)
    ui.add_argument(
        "--port", type=int, default=3000, help="port of the UI on localhost (default: 3000)"
    )

    config = commands.add_parser(
        "config",
        help="print every setting in force, each with where it came from (default, preset, "
        "toml, environment or flag)",
    )
    _add_common(config)

    init = commands.add_parser(
        "init", help="write a litpipe.toml holding every setting, commented, at its default"
    )
    init.add_argument(
        "path", type=Path, nargs="?", default=Path("litpipe.toml"), help="(default: litpipe.toml)"
    )
    init.add_argument("--force", action="store_true", help="replace a file already there")

    evaluate = commands.add_parser("eval", help="measure litpipe's components on benchmarks")
    evaluations = evaluate.add_subparsers(dest="evaluation", required=True)
    retrieval = evaluations.add_parser(
        "retrieval", help="nDCG@10, recall@10/100 and latency of retrievers on a BEIR dataset"
    )
    retrieval.add_argument(
        "--dataset",
        type=Path,
        required=True,
        help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/",
    )
    retrieval.add_argument("--split", default="test", help="qrels file to score (default: test)")
    retrieval.add_argument(
        "--methods",
        default="bm25,dense,hybrid",
        help="comma-separated: bm25, dense, hybrid, hybrid-mmr, and hybrid reranked: "
        "hybrid+relevance, hybrid+debate (offline engines unless --model), "
        "hybrid+cross-encoder (needs --cross-encoder) (default: bm25,dense,hybrid)",
    )
    retrieval.add_argument(
        "--cross-encoder",
        metavar="NAME_OR_PATH",
        help="sentence-transformers CrossEncoder for hybrid+cross-encoder: a local folder, or a "
        "name in the Hugging Face cache",
    )
    retrieval.add_argument(
        "--rerank-candidates",
        type=int,
        help="hybrid chunks each reranker reorders (default: retrieval.rerank_candidates, 20)",
    )
    retrieval.add_argument("--max-queries", type=int, help="score only the first N queries")
    retrieval.add_argument(
        "--out",
        type=Path,
        help="JSON file (default: HOME/outputs/eval/retrieval-<dataset>-<split>)",
    )
    _add_common(retrieval)
    mais = evaluations.add_parser(
        "mais",
        help="MAIS convergence: ask each question of a JSONL (id, question, pdf_file) of its own "
        "paper in a folder of PDFs; table, plot and JSON",
    )
    _add_paper_questions(
        mais,
        "JSONL, one question per line with id, question and pdf_file (LitQA2's format)",
        "folder for convergence.md, .svg and .json (default: HOME/outputs/<collection>)",
    )
    litqa = evaluations.add_parser(
        "litqa",
        help="LitQA2: ask each question of its own paper (as `eval mais`) and grade whether the "
        "query-focused summary states the ideal answer or a distractor",
    )
    _add_paper_questions(
        litqa,
        "JSONL with id, question, ideal, distractors, pdf_file (LitQA2's format)",
        "folder for litqa_eval.md and .json (default: HOME/outputs/eval)",
    )
    _add_registered_evaluations(evaluations)

    ask = commands.add_parser(
        "ask",
        help="a summary of one ingested paper focused on a query (MAIS), with the loop's trace",
    )
    ask.add_argument("--paper", required=True, help="the paper's id, as `litpipe run` prints it")
    ask.add_argument("query", nargs="*", help="what the summary should focus on")
    ask.add_argument(
        "--max-iterations",
        type=int,
        help="loop passes at most (default: query_summary.max_iterations)",
    )
    _add_common(ask)

    related = commands.add_parser(
        "related-work",
        help="write a related-work section for a research idea from a table of abstracts",
    )
    related.add_argument(
        "--abstracts", type=Path, required=True, help="table (.csv/.jsonl) with id,title,abstract"
    )
    idea = related.add_mutually_exclusive_group(required=True)
    idea.add_argument("--idea", help="the research idea, as text")
    idea.add_argument("--idea-file", type=Path, help="a UTF-8 text file holding the idea")
    related.add_argument(
        "--sentences", type=int, help="at most N sentences (default: related_work.sentences, 8)"
    )
    related.add_argument(
        "--words", type=int, help="at most W words (default: related_work.words, 250)"
    )
    related.add_argument(
        "--top-k", type=int, help="references given to the writer (default: related_work.top_k, 5)"
    )
    related.add_argument("--out", type=Path, help="also copy the Markdown to this file")
    _add_common(related)

    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "init":
        return init_command(args.path, args.force)
    try:
        flags = _settings_from_flags(args)
        settings = Settings(**flags)
    except ValueError as error:  # an unknown --set key, or a value its setting refuses
        print(f"litpipe {args.command}: {_one_line(error)}", file=sys.stderr)
        return 2
    if args.command == "config":
        from litpipe.config import config_lines

        print("\n".join(config_lines(settings, flags)))
        return 0
    with other_libraries_to_the_log(settings.home, args.verbose), calls_shown_on_stderr():
        return _command(args, settings)


def _command(args: argparse.Namespace, settings: Settings) -> int:
    """Runs the command that `args` name."""
    if args.command in {"run", "backfill"} or (
        args.command == "eval" and args.evaluation != "retrieval"
    ):
        # The commands that start Dagster runs one after another, and stop between them.
        command = f"eval {args.evaluation}" if args.command == "eval" else args.command
        with stop_on_signals(command) as stop_requested:
            try:
                return _run_stoppable(args, settings, stop_requested)
            except KeyboardInterrupt:  # the second signal, outside a run's step
                print(f"litpipe {command}: stopped at once on request.", file=sys.stderr)
                return STOPPED_EXIT
    if args.command == "status":
        return status_command(settings, show_all=args.all)
    if args.command == "ask":
        return ask_command(settings, args.paper, " ".join(args.query), args.max_iterations)
    if args.command == "eval":
        return eval_retrieval_command(
            settings,
            args.dataset,
            args.split,
            args.methods,
            args.max_queries,
            args.out,
            cross_encoder=args.cross_encoder,
            rerank_candidates=args.rerank_candidates,
        )
    if args.command == "related-work":
        return related_work_command(
            settings,
            args.abstracts,
            args.idea,
            args.idea_file,
            sentences=args.sentences,
            words=args.words,
            top_k=args.top_k,
            out=args.out,
        )
    return ui_command(settings, args.port)


@contextmanager
def other_libraries_to_the_log(home: Path, verbose: bool) -> Iterator[None]:
    """While open, what other libraries write on their own (sentence-transformers' "Loading
    weights" bars, torch's deprecation warnings, their log records) stays off the terminal: their
    warnings go to `HOME/logs/litpipe.log`, and with `verbose` to stderr as well, with their
    bars and litpipe's info. litpipe's own messages and warnings, and anyone's errors, show as
    before. Everything is put back as it was at the end (tests call `main` many times)."""
    if not verbose and HF_PROGRESS_BARS not in os.environ:
        # Read when huggingface_hub and transformers are imported (lazily, after this).
        os.environ[HF_PROGRESS_BARS] = "1"
        set_here = True
    else:
        set_here = False
    to_file = _LogFile(home / LOG_FILE, encoding="utf-8", delay=True)
    to_file.setLevel(logging.WARNING)
    to_file.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    to_terminal = _CurrentStderrHandler()
    to_terminal.addFilter(_verbose_record if verbose else _quiet_record)
    root = logging.getLogger()
    level = root.level
    if verbose:
        root.setLevel(min(level, logging.INFO))
    root.addHandler(to_file)
    root.addHandler(to_terminal)
    shown = warnings.showwarning
    warnings.showwarning = functools.partial(_show_or_log_warning, shown)
    try:
        yield
    finally:
        warnings.showwarning = shown
        root.removeHandler(to_terminal)
        root.removeHandler(to_file)
        root.setLevel(level)
        to_file.close()
        if set_here:
            os.environ.pop(HF_PROGRESS_BARS, None)


def _quiet_record(record: logging.LogRecord) -> bool:
    """Shown without -v: litpipe's warnings, anyone's errors."""
    litpipe = record.name.split(".")[0] == "litpipe"
    return record.levelno >= (logging.WARNING if litpipe else logging.ERROR)


def _verbose_record(record: logging.LogRecord) -> bool:
    """Shown with -v: litpipe's info (each model call), anyone's warnings (not the info of
    every library, Alembic's migrations and the like)."""
    litpipe = record.name.split(".")[0] == "litpipe"
    return record.levelno >= (logging.INFO if litpipe else logging.WARNING)


class _LogFile(logging.FileHandler):
    """A log file whose folder is made when it is first written: a command that logs nothing
    makes none."""

    def _open(self) -> io.TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


class _CurrentStderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever `sys.stderr` is when a record comes (the progress display's proxy
    while its bars are drawn, so that a record is printed above them), as Python's own last
    resort does; bare messages, as that one printed litpipe's."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        pass


def _show_or_log_warning(
    shown: Callable[..., None],
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """litpipe's own warnings (a setting's old name) are the user's to act on and show as
    always; another library's go to the `py.warnings` log, as `logging.captureWarnings` does."""
    if file is not None or category.__module__.split(".")[0] == "litpipe":
        shown(message, category, filename, lineno, file, line)
        return
    text = warnings.formatwarning(message, category, filename, lineno, line)
    logging.getLogger("py.warnings").warning("%s", text.rstrip())


def _settings_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the common flags give, nested as `Settings` takes them (a flag not given
    leaves its setting to the environment, litpipe.toml, the preset and the default)."""

    from litpipe.config import assignments

    def given(**values: object) -> dict[str, object]:
        return {name: value for name, value in values.items() if value is not None}

    # The named flags win over a --set of the same setting: they are the more specific.
    settings = assignments(args.assignments or [])
    named = {
        "ingest": given(embedder=args.embedder),
        "llm": given(
            model=args.model, api_base=args.api_base, structured_output=args.structured_output
        ),
        "synthesis": given(method=args.method, pattern=args.pattern, answer_mode=args.answer_mode),
    }
    for group, values in named.items():
        if values:
            settings[group] = {**settings.get(group, {}), **values}
    return settings | given(home=args.home, preset=args.preset)


def _run_stoppable(
    args: argparse.Namespace, settings: Settings, stop_requested: Callable[[], bool]
) -> int:
    """`run`, `backfill` and the evaluations that run Dagster runs: each starts no further run
    once `stop_requested`."""
    if args.command == "run":
        if args.zotero_collection is not None and args.zotero is None:
            print("litpipe run: --zotero-collection goes with --zotero", file=sys.stderr)
            return 2
        source, reader = _run_source(args)
        return run_command(
            settings, source, args.collection, stop_requested, move=args.move, reader=reader
        )
    if args.command == "backfill":
        return backfill_command(settings, args.collection, args.batch, stop_requested)
    if args.evaluation in {"litqa", "mais"}:
        from litpipe.runtime.evaluations import eval_litqa_command

        try:
            settings = _with_max_iterations(settings, args.max_iterations)
        except ValueError as error:
            print(f"litpipe eval {args.evaluation}: {error}", file=sys.stderr)
            return 2
        asking = eval_litqa_command if args.evaluation == "litqa" else eval_mais_command
        return asking(
            settings,
            args.dataset,
            args.corpus,
            args.collection,
            args.out,
            stop_requested,
            args.limit,
        )
    # A registered evaluation (`litpipe/evaluation/registry.py`), run as its asset.
    from litpipe.runtime.evaluations import eval_command

    return eval_command(
        settings, args.evaluation, args.dataset, args.limit, args.out, stop_requested
    )


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", type=Path, help="litpipe home (default: $LITPIPE_HOME or ./.litpipe)"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show other libraries' warnings and progress bars, and litpipe's info (each "
        "model call), on the terminal "
        f"(their warnings are always in HOME/{LOG_FILE})",
    )
    parser.add_argument(
        "--embedder", help="sentence-transformers model name or local path (default: MiniLM)"
    )
    parser.add_argument(
        "--model", help="litellm model for every agent, e.g. gpt-4o-mini (default: offline)"
    )
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    parser.add_argument(
        "--structured-output",
        choices=get_args(StructuredOutput),
        help="how the reply's JSON schema reaches the model: json_schema suits vLLM, llama.cpp, "
        "Ollama and LM Studio (default: $LITPIPE_LLM__STRUCTURED_OUTPUT or auto, as litellm "
        "knows the model)",
    )
    parser.add_argument(
        "--method",
        choices=get_args(SynthesisSettings.model_fields["method"].annotation),
        help="how the synthesis is written: relational (X-Sum pipeline 2, from the relationship "
        "analysis; default) or flat (pipeline 1, every paper's answers in one prompt)",
    )
    parser.add_argument(
        "--pattern",
        choices=get_args(SynthesisSettings.model_fields["pattern"].annotation),
        help="how the synthesis fits the writer's context (default: auto, by size)",
    )
    parser.add_argument(
        "--answer-mode",
        choices=get_args(SynthesisSettings.model_fields["answer_mode"].annotation),
        help="how a question is answered from its evidence: single (default), multi_view "
        "(MASS-RAG) or multi_view_answers",
    )
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        metavar="KEY=VALUE",
        help="any setting by its dotted name, e.g. --set grading.blocking=true (repeatable; "
        "`litpipe config` lists them with their values; a named flag wins over it)",
    )
    parser.add_argument(
        "--preset",
        choices=preset_names(),
        help="a named set of defaults: offline (no model), fast (fewer questions and "
        "candidates, no reranker) or thorough (more candidates, debate reranking, multi-view "
        "answers); any setting given otherwise wins (default: $LITPIPE_PRESET, or none)",
    )


def _add_paper_questions(parser: argparse.ArgumentParser, dataset_help: str, out_help: str) -> None:
    """The arguments of an evaluation asking each question of its own paper in a PDF folder."""
    parser.add_argument("--dataset", type=Path, required=True, help=dataset_help)
    parser.add_argument(
        "--corpus", type=Path, required=True, help="folder holding the questions' PDFs"
    )
    parser.add_argument("--collection", help="collection name (default: the folder's name)")
    parser.add_argument(
        "--limit", type=int, help="ask only the first N questions (and build only their papers)"
    )
    parser.add_argument("--out", type=Path, help=out_help)
    parser.add_argument(
        "--max-iterations",
        type=int,
        help="loop passes at most (default: query_summary.max_iterations)",
    )
    _add_common(parser)


def _add_registered_evaluations(evaluations: argparse._SubParsersAction) -> None:
    """`litpipe eval <name>` for each registered evaluation its asset runs (see
    `litpipe/evaluation/registry.py`)."""
    from litpipe.evaluation.registry import EVALUATIONS

    for entry in EVALUATIONS.values():
        if entry.evaluate is None:
            continue
        command = evaluations.add_parser(entry.name, help=entry.description)
        command.add_argument("--dataset", type=Path, required=True, help=entry.dataset_help)
        command.add_argument("--limit", type=int, help="score only the first N examples")
        command.add_argument(
            "--out",
            type=Path,
            help=f"folder for {entry.stem}.md and .json (default: HOME/outputs/eval)",
        )
        _add_common(command)


# What finds a run's papers in its source (a Zotero data directory, a .bib file), given the
# `--collection` asked for.
SourceReader = Callable[[Path, str | None], "Discovery"]


def _run_source(args: argparse.Namespace) -> tuple[Path, SourceReader | None]:
    """The run's source, and the reader of a reference manager's (None for a folder or a
    table: `discover`)."""
    if args.zotero is not None:
        from litpipe.ingest.zotero import discover_zotero

        return args.zotero.expanduser(), functools.partial(
            discover_zotero, zotero_collection=args.zotero_collection
        )
    if args.bibtex is not None:
        from litpipe.ingest.bibtex import discover_bibtex

        return args.bibtex, discover_bibtex
    return args.source, None


def run_command(
    settings: Settings,
    source: Path,
    collection: str | None,
    stop_requested: Callable[[], bool] = lambda: False,
    move: bool = False,
    reader: SourceReader | None = None,
) -> int:
    # Imported here: Dagster, LanceDB and the tokenizer cost seconds that `--help` should not.
    from litpipe.ingest.sources import discover
    from litpipe.report.graphs import counted
    from litpipe.retrieval.embedder import Embedder
    from litpipe.retrieval.store import ChunkStore
    from litpipe.runtime.runner import open_instance, register, run_papers

    started = time.perf_counter()
    try:
        discovery = (reader or discover)(source, collection)
    except ValueError as error:
        print(f"litpipe run: {error}", file=sys.stderr)
        return 2
    elsewhere = _in_other_collections(settings, discovery)
    found = len(discovery.sources) + len(discovery.failed)
    print(
        f"{source}: {counted(found, 'paper')} in collection {discovery.collection!r}",
        file=sys.stderr,
    )
    for note in discovery.notes:
        print(f"  note: {note}", file=sys.stderr)
    for failure in discovery.failed:
        print(f"  failed: {_describe(failure)}", file=sys.stderr)
    discovered = time.perf_counter()

    if elsewhere:
        print(_elsewhere_line(discovery.collection, elsewhere, move), file=sys.stderr)
    instance = open_instance(settings)
    registrations = register(settings, instance, discovery, move=move)

    def show(done: int, total: int, outcome: PaperOutcome) -> None:
        detail = {
            "materialized": f"{outcome.chunks} chunks, {outcome.embedded} embedded, "
            f"{outcome.questions} questions, {outcome.evidence} evidence chunks, "
            f"{outcome.answers} answers",
            "up_to_date": f"up to date ({outcome.chunks} chunks)",
            "failed": f"FAILED: {outcome.failure.reason if outcome.failure else ''}",
            "interrupted": "interrupted (stop requested)",
        }[outcome.status]
        print(
            f"[{done}/{total}] {outcome.paper_id}: {detail} ({outcome.seconds:.1f} s)",
            file=sys.stderr,
        )

    def starting(done: int, papers: int, total: int) -> None:
        # A batch of papers prints its lines once it is built: say what is under way meanwhile.
        if papers > 1:
            print(f"[{done + 1}-{done + papers}/{total}] building {papers} papers", file=sys.stderr)

    papers_run = run_papers(
        settings,
        instance,
        registrations,
        on_progress=show,
        on_batch=starting,
        stop_requested=stop_requested,
        left_collections=sorted({c for held in elsewhere.values() for c in held}) if move else (),
    )
    outcome_list, usage = papers_run.outcomes, papers_run.llm_usage
    if papers_run.stopped:
        statuses = Counter(outcome.status for outcome in outcome_list)
        done = (
            f"{statuses['materialized']} papers built, {statuses['up_to_date']} up to date, "
            f"{statuses['failed']} failed, {statuses['interrupted']} interrupted"
        )
        left = f"not built: {len(papers_run.not_built)} papers and the collection's synthesis"
        print(stop_line("run", done, left), file=sys.stderr)
        return STOPPED_EXIT
    finished = time.perf_counter()

    embedder = Embedder.from_settings(settings)
    store = ChunkStore(settings.lancedb_dir)
    ingested = [o for o in outcome_list if o.status != "failed"]
    report = RunReport(
        collection=discovery.collection,
        source=str(source.resolve()),
        papers=len(ingested),
        papers_materialized=sum(o.status == "materialized" for o in outcome_list),
        papers_up_to_date=sum(o.status == "up_to_date" for o in outcome_list),
        chunks=sum(o.chunks for o in ingested),
        embedded_chunks=sum(o.embedded for o in ingested),
        questions=sum(o.questions for o in ingested),
        evidence_chunks=sum(o.evidence for o in ingested),
        answers=sum(o.answers for o in ingested),
        synthesis=synthesis_report(
            settings, discovery.collection, papers_run.checks.get(discovery.collection, [])
        ),
        collection_failure=papers_run.collection_failure,
        failed_papers=[*discovery.failed, *(o.failure for o in outcome_list if o.failure)],
        engine=settings.llm.model or OFFLINE,
        llm_calls={"made": usage.made, "cached": usage.cached, "failed": usage.failed},
        llm_calls_by_agent=papers_run.llm_usage_by_agent,
        tokens={"in": usage.tokens_in, "out": usage.tokens_out},
        cost_usd=usage.cost_usd,
        embedder=embedder.embedder_id,
        lancedb_table=store.table_name(embedder.embedder_id),
        lancedb_rows=store.count_rows(embedder.embedder_id),
        timings={
            "discover_s": round(discovered - started, 3),
            "pipeline_s": round(finished - discovered, 3),
            "total_s": round(time.perf_counter() - started, 3),
        },
    )
    out_dir = settings.outputs_dir(discovery.collection)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(out_dir / "report.json", report.model_dump_json(indent=2))
    print(
        f"{counted(report.papers, 'paper')} ingested ({report.papers_up_to_date} already up to "
        "date), "
        f"{len(report.failed_papers)} failed; {report.chunks} chunks, "
        f"{report.embedded_chunks} embedded now; {report.lancedb_rows} rows in "
        f"{report.lancedb_table}; {report.questions} questions by {report.engine}, "
        f"{report.evidence_chunks} evidence chunks "
        f"(model calls: {calls_line(usage)}). Report: {out_dir / 'report.json'}",
        file=sys.stderr,
    )
    if report.synthesis is not None:
        written = report.synthesis
        types = ", ".join(f"{count} {kind}" for kind, count in written.relationship_types.items())
        appended = (
            f", {written.appended_papers} of them only by an appended sentence"
            if written.appended_papers
            else ""
        )
        print(
            f"{written.papers} papers analysed: {written.insights} insights, "
            f"{written.relationships} relationships ({types}); synthesis "
            f"({written.synthesis_pattern}, {written.synthesis_words} words, "
            f"{written.cited_papers}/{written.papers} papers cited{appended}) and plain summary "
            f"({written.plain_words} words): {out_dir / 'synthesis.html'}",
            file=sys.stderr,
        )
        for paper in written.left_out:
            print(f"  left out: {paper.paper_id}: {paper.reason}", file=sys.stderr)
    # Also when a blocking check stopped the collection's assets: it says why.
    for check in papers_run.checks.get(discovery.collection, []):
        print(
            f"  check {check.asset}/{check.check}: {check.verdict()}: {check.description}",
            file=sys.stderr,
        )
    if report.collection_failure:
        print(f"  collection assets FAILED: {report.collection_failure}", file=sys.stderr)
    return 0 if report.papers and not report.collection_failure else 1


def _in_other_collections(settings: Settings, discovery: Discovery) -> dict[str, list[str]]:
    """The source's papers that the catalog holds in other collections, with those; read only
    (a home without a catalog holds none)."""
    from litpipe.catalog import Catalog

    if not settings.catalog_path.exists():
        return {}
    held = Catalog(settings.catalog_path).collections_of([s.paper_id for s in discovery.sources])
    others = {
        paper_id: [name for name in collections if name != discovery.collection]
        for paper_id, collections in held.items()
    }
    return {paper_id: names for paper_id, names in others.items() if names}


# Papers named per collection in the line about papers of other collections; the rest counted.
NAMED_PAPERS = 5


def _elsewhere_line(collection: str, elsewhere: dict[str, list[str]], move: bool) -> str:
    """One line on the papers other collections hold already: shared with them (built once,
    nothing of them built again), or with `move` taken out of them."""
    from litpipe.report.graphs import counted

    by_collection: dict[str, list[str]] = {}
    for paper_id, others in sorted(elsewhere.items()):
        for other in others:
            by_collection.setdefault(other, []).append(paper_id)
    held = "; ".join(
        f"{other!r}: {', '.join(ids[:NAMED_PAPERS])}"
        + (f" and {len(ids) - NAMED_PAPERS} more" if len(ids) > NAMED_PAPERS else "")
        for other, ids in by_collection.items()
    )
    papers = counted(len(elsewhere), "paper")
    if move:
        return f"moving {papers} into {collection!r} out of {held}"
    return (
        f"{papers} also in other collections ({held}): their per-paper work is shared, not "
        f"done again (--move takes them out of those)"
    )


def synthesis_report(
    settings: Settings, collection: str, checks: list[CheckReport]
) -> SynthesisReport | None:
    """The collection stages' figures, read from their outputs; None until they exist."""
    from litpipe.defs.resources import artifact_store
    from litpipe.schemas import (
        CollectionOutputs,
        CrossPaperQuestions,
        RelationshipAnalysis,
        Synthesis,
    )

    artifacts = artifact_store(settings)
    needed = ["cross_paper_questions", "relationship_analysis", "synthesis", "plain_summary"]
    if not all(artifacts.exists([asset], collection) for asset in [*needed, "collection_outputs"]):
        return None
    comparative = artifacts.read(["cross_paper_questions"], collection, CrossPaperQuestions)
    analysis = artifacts.read(["relationship_analysis"], collection, RelationshipAnalysis)
    expert = artifacts.read(["synthesis"], collection, Synthesis)
    plain = artifacts.read(["plain_summary"], collection, Synthesis)
    outputs = artifacts.read(["collection_outputs"], collection, CollectionOutputs)
    return SynthesisReport(
        papers=len(analysis.papers),
        comparative_questions=len(comparative.answers),
        insights=len(analysis.insights),
        relationships=len(analysis.relationships),
        relationship_types=analysis.type_distribution,
        follow_up_papers=[item.paper_id for item in analysis.follow_ups],
        synthesis_pattern=expert.pattern,
        synthesis_words=len(expert.text.split()),
        plain_words=len(plain.text.split()),
        cited_papers=len({citation.paper_id for citation in expert.citations}),
        appended_papers=len(expert.appended),
        left_out=expert.left_out,
        outputs=outputs.files,
        checks=checks,
    )


def _describe(failure: FailedPaper) -> str:
    where = failure.file if failure.row is None else f"{failure.file} row {failure.row}"
    return f"{where}: {failure.reason}"


def backfill_command(
    settings: Settings,
    collection: str | None,
    batch: int | None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> int:
    """Every registered paper (or a collection's) and their collections brought up to date under
    these settings, in batches, with a line per batch and a summary (which ends saying what is
    left when it was stopped on request)."""
    from litpipe.catalog import Catalog
    from litpipe.retrieval.embedder import Embedder, EmbedderError
    from litpipe.runtime import backfill as backfilling
    from litpipe.runtime.runner import open_instance

    def refused(message: str) -> int:
        print(f"litpipe backfill: {message}", file=sys.stderr)
        return 2

    if batch is not None and batch < 1:
        return refused(f"--batch must be at least 1, not {batch}")
    try:
        # Before anything runs: a model that cannot be found fails here, not in every paper.
        embedder_id = Embedder.from_settings(settings).embedder_id
    except EmbedderError as error:
        return refused(str(error))
    if not settings.catalog_path.is_file():
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    catalog = Catalog(settings.catalog_path)
    known = catalog.collections()
    if collection is not None and collection not in known:
        return refused(f"no collection {collection!r} under {settings.home} (known: {known})")
    paper_ids = [p for c in ([collection] if collection else known) for p in catalog.papers(c)]
    if not paper_ids:
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    size = batch or settings.operations.batch_size
    print(
        f"backfill of {len(paper_ids)} papers to {embedder_id}, at most {size} a batch",
        file=sys.stderr,
    )
    report = backfilling.backfill(
        settings,
        open_instance(settings),
        paper_ids,
        batch_size=size,
        on_batch=lambda outcome: print(backfilling.batch_line(outcome), file=sys.stderr),
        stop_requested=stop_requested,
    )
    for line in backfilling.summary_lines(report, settings):
        print(line, file=sys.stderr)
    if report.stopped:
        return STOPPED_EXIT
    return 1 if report.failed_papers or report.collection_failure else 0


def status_command(settings: Settings, show_all: bool) -> int:
    from litpipe.catalog import Catalog
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.staleness import State, partition_states
    from litpipe.llm.window import routes_described
    from litpipe.runtime.runner import collection_asset_keys, open_instance, paper_asset_keys

    for line in routes_described(settings):
        print(line)
    catalog = Catalog(settings.catalog_path)
    instance = open_instance(settings)
    defs = build_definitions(settings)
    keys = paper_asset_keys(defs)
    collections = catalog.collections()
    requests = _request_states(instance, defs)
    if not collections and not requests:
        print(f"nothing registered yet under {settings.home}: try `litpipe run SOURCE`")
        return 0
    for collection in collections:
        paper_ids = catalog.papers(collection)
        print(f"{collection}: {len(paper_ids)} papers")
        collection_keys = collection_asset_keys(defs)
        for key, by_collection in partition_states(
            instance, defs, collection_keys, [collection]
        ).items():
            print(f"  {key.to_user_string():<18} {by_collection[collection]}")
        states = partition_states(instance, defs, keys, paper_ids)
        for key in keys:
            by_state: dict[State, list[str]] = {}
            for paper_id, state in states[key].items():
                by_state.setdefault(state, []).append(paper_id)
            counts = ", ".join(f"{len(ids)} {state}" for state, ids in sorted(by_state.items()))
            print(f"  {key.to_user_string():<18} {counts}")
            for state, ids in sorted(by_state.items()):
                if state is State.FRESH:
                    continue
                shown = ids if show_all else ids[:5]
                more = "" if len(shown) == len(ids) else f" (+{len(ids) - len(shown)} more)"
                print(f"      {state}: {' '.join(shown)}{more}")
    for asset, states_of_requests in requests.items():
        request_counts = Counter(str(state) for state in states_of_requests.values())
        listed = ", ".join(f"{n} {state}" for state, n in sorted(request_counts.items()))
        print(f"{asset}: {len(states_of_requests)} requests ({listed})")
    return 0


def _request_states(
    instance: dg.DagsterInstance, defs: dg.Definitions
) -> dict[str, dict[str, State]]:
    """Per request-partitioned asset with requests, each request's state (by code version:
    `litpipe ask` also compares the data versions of the paper it summarizes)."""
    import dagster as dg

    from litpipe.defs.partitions import QUERY_REQUESTS, RELATED_WORK_REQUESTS
    from litpipe.defs.staleness import partition_states

    found: dict[str, dict[str, State]] = {}
    for asset, partitions in (
        ("query_summary", QUERY_REQUESTS),
        ("related_work", RELATED_WORK_REQUESTS),
    ):
        keys = instance.get_dynamic_partitions(partitions)
        if keys:
            key = dg.AssetKey(asset)
            found[asset] = partition_states(instance, defs, [key], list(keys))[key]
    return found


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
        evaluation = evaluate_retrieval(settings, dataset, split, chosen, max_queries)
    except (OSError, ValueError, RerankerError) as error:
        print(f"litpipe eval retrieval: {error}", file=sys.stderr)
        return 2
    print(format_table(evaluation))
    out = out or settings.outputs_root / "eval" / f"retrieval-{dataset.name}-{split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, evaluation.model_dump_json(indent=2) + "\n")
    print(f"written: {out}")
    return 0


def related_work_command(
    settings: Settings,
    abstracts: Path,
    idea: str | None,
    idea_file: Path | None,
    sentences: int | None = None,
    words: int | None = None,
    top_k: int | None = None,
    out: Path | None = None,
) -> int:
    """Checks the request, stores it, materializes its `related_work` partition unless that is
    fresh already, and prints the Markdown (stdout) and what was done (stderr)."""
    from litpipe.report.related_work import HTML_FILE, JSON_FILE, MARKDOWN_FILE
    from litpipe.runtime.evaluations import step_failure
    from litpipe.workflows.related_work import (
        RelatedWorkInputError,
        check_request,
        load_references,
        make_request,
    )

    def refused(message: str) -> int:
        print(f"litpipe related-work: {message}", file=sys.stderr)
        return 2

    # Everything is checked before anything is written: refused input leaves no request, no
    # partition and no output behind.
    if idea_file is not None:
        if not idea_file.is_file():
            return refused(f"{idea_file}: no such file (the research idea, as UTF-8 text)")
        try:
            idea = idea_file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return refused(f"{idea_file}: not UTF-8 text (re-save the idea as UTF-8)")
    try:
        table = load_references(abstracts)
        request = make_request(idea or "", settings, sentences, words, top_k)
        check_request(request, table, settings)
    except RelatedWorkInputError as error:
        return refused(str(error))
    for reason in table.skipped:
        print(f"{abstracts}: left out {reason}", file=sys.stderr)

    # Imported only now: Dagster costs seconds that refused input need not wait for.
    import uuid

    import dagster as dg

    from litpipe.artifacts import ArtifactStore
    from litpipe.defs.assets.related_work import (
        ASSET,
        GRADING_CHECKS,
        new_request,
        outputs_folder,
        request_store,
    )
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.jobs import related_work_job
    from litpipe.defs.partitions import RELATED_WORK_REQUESTS
    from litpipe.defs.resources import usage_path
    from litpipe.defs.staleness import State, partition_states
    from litpipe.llm.usage import UsageLedger
    from litpipe.runtime.requests import submit_request
    from litpipe.runtime.runner import open_instance
    from litpipe.schemas import RelatedWork

    started = time.perf_counter()
    stored = new_request(request, abstracts)
    key = stored.key
    requests = request_store(settings)
    instance = open_instance(settings)
    defs = build_definitions(settings)
    asset_key = dg.AssetKey(ASSET)
    folder = outputs_folder(settings.outputs_root, key)
    artifacts = ArtifactStore(settings.artifacts_dir)
    states: list[State] = []

    def fresh() -> bool:
        # The same idea, limits and table bytes under the same code version: nothing to redo.
        states.append(partition_states(instance, defs, [asset_key], [key])[asset_key][key])
        files_kept = artifacts.exists([ASSET], key) and all(
            (folder / name).is_file() for name in (MARKDOWN_FILE, HTML_FILE, JSON_FILE)
        )
        return states[-1] is State.FRESH and files_kept

    scope = f"cli-{uuid.uuid4().hex[:12]}"
    submission = submit_request(
        defs,
        instance,
        job=related_work_job.name,
        partitions=RELATED_WORK_REQUESTS,
        asset=ASSET,
        request=stored,
        key=key,
        store=requests,
        fresh=fresh,
        scope=scope,
        # Rewritten even when known: the same bytes may now lie under another path.
        rewrite=True,
    )
    result = submission.result
    calls = ""
    if result is None:
        done = "up to date"
    else:
        if not result.success:
            reason, bad_input = step_failure(result)
            if not bad_input:
                print(f"litpipe related-work: {key} FAILED: {reason}", file=sys.stderr)
                # A blocking grading check that failed says why.
                checks = latest_check_results(instance, defs, key)
                for line in _grading_lines(checks, ASSET, GRADING_CHECKS):
                    print(line, file=sys.stderr)
                return 1
            # Refused by the step itself (e.g. a model writer's context): undo what this
            # command added, as if it had been refused up front (the failed run stays in the UI).
            submission.withdraw(instance, requests)
            return refused(reason)
        usage = UsageLedger(usage_path(settings, scope)).scope_summary()
        done = f"materialized ({states[-1]})"
        if usage.made or usage.cached or usage.failed:  # offline engines call no model
            calls = f"; model calls: {calls_line(usage)}"

    related = artifacts.read([ASSET], key, RelatedWork)
    markdown = folder / MARKDOWN_FILE
    text = markdown.read_text(encoding="utf-8")
    print(text, end="" if text.endswith("\n") else "\n")
    length = "" if related.within_length else ", over the requested length"
    print(
        f"{key}: {done} in {time.perf_counter() - started:.1f} s; "
        f"{len(related.cited_ids)} of the top {len(related.references)} of "
        f"{related.table_rows} references cited, {related.sentences} sentences, "
        f"{related.words} words{length}; written by {related.engine}, scored by "
        f"{related.debate_engine}{calls}",
        file=sys.stderr,
    )
    for warning in related.warnings:
        print(f"  warning: {warning}", file=sys.stderr)
    for line in _grading_lines(latest_check_results(instance, defs, key), ASSET, GRADING_CHECKS):
        print(line, file=sys.stderr)
    print(
        f"Markdown: {markdown}\nHTML: {folder / HTML_FILE}\nJSON: {folder / JSON_FILE}",
        file=sys.stderr,
    )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(out, text)
        print(f"copied to: {out}", file=sys.stderr)
    return 0


def _grading_lines(checks: list[CheckReport], asset: str, names: Iterable[str]) -> list[str]:
    """One line per grading check of the asset (in the order of `names`): its latest result."""
    order = list(names)
    graded = [c for c in checks if c.asset == asset and c.check in order]
    return [
        f"Check {c.check}: {c.verdict()}: {c.description}"
        for c in sorted(graded, key=lambda c: order.index(c.check))
    ]


def _with_max_iterations(settings: Settings, max_iterations: int | None) -> Settings:
    if max_iterations is None:
        return settings
    if max_iterations < 1:
        raise ValueError(f"--max-iterations must be at least 1, not {max_iterations}")
    values = settings.model_dump()
    values["query_summary"]["max_iterations"] = max_iterations
    return Settings.model_validate(values)


def ask_command(settings: Settings, paper_id: str, query: str, max_iterations: int | None) -> int:
    import uuid

    from litpipe.defs.assets.query_summary import ASSET, GRADING_CHECKS
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.resources import usage_path
    from litpipe.llm.usage import UsageLedger
    from litpipe.report.query_summary import html_path, outcome_line, render_text
    from litpipe.runtime.query_summary import ready_paper, summarize_request
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.query_summary import request_for

    try:
        request = request_for(paper_id, query)
        settings = _with_max_iterations(settings, max_iterations)
        # Before anything is written: no request file, no partition for a paper we cannot read.
        ready_paper(settings, request.paper_id)
    except ValueError as error:
        print(f"litpipe ask: {error}", file=sys.stderr)
        return 2
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    print(f"asking {request.paper_id} ({request.key}): {request.query}", file=sys.stderr)
    instance, defs = open_instance(settings), build_definitions(settings)
    outcome = summarize_request(settings, instance, request, scope, defs)
    grading_lines = _grading_lines(
        latest_check_results(instance, defs, request.key), ASSET, GRADING_CHECKS
    )
    if outcome.result is None:
        print(f"litpipe ask: {request.key} FAILED: {outcome.failure}", file=sys.stderr)
        # A blocking grading check that failed says why.
        for line in grading_lines:
            print(line, file=sys.stderr)
        return 1
    result = outcome.result
    usage = UsageLedger(usage_path(settings, scope)).scope_summary()
    served = (
        f"materialized in {outcome.seconds:.1f} s (model calls: {calls_line(usage)})"
        if outcome.status == "materialized"
        else "up to date: served from the materialized asset (no run, no model call)"
    )
    print(render_text(result))
    print()
    print(f"Status: {result.status}, {outcome_line(result)}")
    print(f"Route: {result.route} ({result.route_reason})")
    if outcome.check is not None:
        verdict = "passed" if outcome.check.passed else "FAILED"
        print(f"Check {outcome.check.check}: {verdict}: {outcome.check.description}")
    for line in grading_lines:
        print(line)
    print(f"Request {request.key}: {served}")
    print(f"Markdown: {outcome.markdown}")
    print(f"HTML: {html_path(settings.outputs_dir(outcome.collection), request.key)}")
    return 0


def eval_mais_command(
    settings: Settings,
    dataset: Path,
    corpus: Path,
    collection: str | None,
    out: Path | None,
    stop_requested: Callable[[], bool] = lambda: False,
    limit: int | None = None,
) -> int:
    """Each question of the dataset (its first `limit`) asked of its own paper through the
    `query_summary` asset
    (so every request is a partition in the instance, and a rerun is served from it), then the
    convergence report over them (none when stopped on request before every question was
    asked)."""
    import json

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
    from litpipe.runtime.evaluations import ask_dataset

    started = time.perf_counter()
    asking = ask_dataset(
        "eval mais", settings, dataset, PaperQuestion, corpus, collection, stop_requested, limit
    )
    if isinstance(asking, int):
        return asking
    questions, asked = asking
    outcomes = asked.answered
    results = [outcome.result for _, outcome in outcomes if outcome.result is not None]
    report = with_offline_notice(convergence_report(results))
    runs: list[EvaluatedRequest] = [
        evaluated(question.id, outcome.result)
        for question, outcome in outcomes
        if outcome.result is not None
    ]
    table = convergence_markdown(
        report, runs, f"MAIS convergence: {dataset.name} on {asked.collection}"
    )
    out_dir = out or settings.outputs_dir(asked.collection)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "convergence.md": table,
        "convergence.svg": render_svg(report),
        "convergence.json": report.model_dump_json(indent=2) + "\n",
    }
    for name, text in files.items():
        write_atomically(out_dir / name, text)
    usage = UsageLedger(usage_path(settings, asked.scope)).scope_summary()
    print(table)
    print(f"written: {', '.join(str(out_dir / name) for name in files)}", file=sys.stderr)
    figures = {
        "dataset": str(dataset),
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


def ui_command(settings: Settings, port: int) -> int:
    from litpipe.defs.sqlite_storage import enable_event_batches
    from litpipe.runtime.instance import write_instance_config

    write_instance_config(settings)  # the UI's runs get the `llm` pool's limit too
    enable_event_batches()  # and write a batch of papers' events together
    # The code server reads its settings from the environment: hand it this command's. The
    # runs it launches inherit them: the api base, its password hidden in their config, too.
    flags = {
        "LITPIPE_PRESET": settings.preset,
        "LITPIPE_LLM__MODEL": settings.llm.model,
        "LITPIPE_LLM__API_BASE": settings.llm.api_base,
        "LITPIPE_LLM__STRUCTURED_OUTPUT": settings.llm.structured_output,
    }
    env = {
        **os.environ,
        "DAGSTER_HOME": str(settings.dagster_home),
        "LITPIPE_HOME": str(settings.home),
        "LITPIPE_INGEST__EMBEDDER": settings.ingest.embedder,
        **{name: value for name, value in flags.items() if value is not None},
    }
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-m", "litpipe.defs.definitions", "-p", str(port)]
    os.execve(dagster, command, env)
    return 0  # not reached: execve replaces this process


if __name__ == "__main__":
    sys.exit(main())


def init_command(path: Path, force: bool) -> int:
    """`litpipe init`: a commented litpipe.toml at `path`, unless one is there (`force`)."""
    from litpipe.config import commented_toml

    if path.exists() and not force:
        print(f"litpipe init: {path} exists; --force replaces it", file=sys.stderr)
        return 2
    write_atomically(path, commented_toml().encode("utf-8"))
    print(f"Wrote {path}: every setting, commented out at its default.")
    return 0


def _one_line(error: ValueError) -> str:
    """A settings error in one line: a pydantic ValidationError as `setting: message`."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
    return " ".join(str(error).split())
