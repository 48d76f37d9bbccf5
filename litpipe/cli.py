"""The `litpipe` command: runs the same Dagster graph in-process, into the UI's instance."""

# This module parses the command line and calls the command's body in `litpipe.commands`, whose
# modules import Dagster, LanceDB and the tokenizer only inside their functions: `--help` must
# not pay for them.

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from litpipe.commands import ask, backfill, config, diff, evaluations, related_work, run, status, ui
from litpipe.commands.backfill import add_backfill_flags
from litpipe.commands.export import add_export_parser, export_command
from litpipe.commands.flags import add_common_flags, one_line, settings_from_flags
from litpipe.commands.keys import add_key_parser, key_command, keys_listing
from litpipe.commands.retract import add_retract_parser, retract_command
from litpipe.commands.terminal import other_libraries_to_the_log, refused_write_exit
from litpipe.progress import calls_shown_on_stderr
from litpipe.retrieval.object_store import ObjectStoreUnreachable
from litpipe.schemas.exports import EXPORT_FORMATS
from litpipe.settings import Settings, credentials_in_environment
from litpipe.stopping import STOPPED_EXIT, stop_on_signals


def build_parser(with_evaluations: bool = True) -> argparse.ArgumentParser:
    """Every command and flag (the docs' command reference is generated from it); the
    registered evaluations of `litpipe eval` only `with_evaluations`."""
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
    add_common_flags(run)

    backfill = commands.add_parser(
        "backfill",
        help="bring every registered paper up to date in batches, e.g. under another embedder "
        "(--embedder): its own LanceDB table fills while the old one stays as it is",
    )
    backfill.add_argument("--collection", help="only this collection's papers (default: all)")
    backfill.add_argument(
        "--batch", type=int, help="papers per run (default: operations.batch_size, 100)"
    )
    add_backfill_flags(backfill)

    status = commands.add_parser("status", help="what is materialized, stale or missing")
    add_common_flags(status)
    status.add_argument("--all", action="store_true", help="list every stale or missing paper")
    status.add_argument(
        "--keys",
        action="store_true",
        help="list every paper's citation key instead (and the library keys not given, why)",
    )
    add_key_parser(commands)
    add_export_parser(commands)
    add_retract_parser(commands)
    diff.add_diff_parser(commands)

    ui = commands.add_parser("ui", help="serve the Dagster UI on this litpipe home")
    add_common_flags(ui)
    ui.add_argument(
        "--port", type=int, default=3000, help="port of the UI on localhost (default: 3000)"
    )

    config = commands.add_parser(
        "config",
        help="print every setting in force, each with where it came from (default, preset, "
        "toml, environment or flag)",
    )
    add_common_flags(config)

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
    add_common_flags(retrieval)
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
        "folder for litqa_eval.md and .json, or litqa_collection_wide.md and .json "
        "(default: HOME/outputs/eval)",
    )
    litqa.add_argument(
        "--collection-wide",
        action="store_true",
        help="ask each question of ONE collection of all the corpus' PDFs (as `ask "
        "--collection`), not of its own paper: accuracy, precision, share declined, answers "
        "citing their own paper",
    )
    if with_evaluations:
        _add_registered_evaluations(evaluations)

    ask.add_ask_parser(commands)

    related = commands.add_parser(
        "related-work",
        help="write a related-work section for a research idea from a table of abstracts or "
        "from a collection's papers",
    )
    pool = related.add_mutually_exclusive_group(required=True)
    pool.add_argument("--abstracts", type=Path, help="table (.csv/.jsonl) with id,title,abstract")
    pool.add_argument(
        "--collection",
        help="a collection `litpipe run` ingested: its papers' abstracts and full-text passages",
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
    related.add_argument(
        "--to",
        choices=EXPORT_FORMATS,
        help="also export the section for a manuscript (related_work.tex to \\input, its "
        "standalone document and .bib; or Pandoc, Word, BibTeX, CSL-JSON) beside its Markdown",
    )
    add_common_flags(related)

    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    # The registered evaluations import the agents and litellm (seconds): only `eval` needs them.
    args = build_parser(with_evaluations=given[:1] == ["eval"]).parse_args(given)
    if args.command == "init":
        return config.init_command(args.path, args.force)
    try:
        flags = settings_from_flags(args)
        settings = Settings(**flags)
    except ValueError as error:  # an unknown --set key, or a value its setting refuses
        print(f"litpipe {args.command}: {one_line(error)}", file=sys.stderr)
        return 2
    if args.command == "config":
        return config.config_command(settings, flags)
    try:
        # The runs the command executes in-process read credentials where a launched run's
        # process does: in the environment (the `llm` resource's `dg.EnvVar`).
        with (
            other_libraries_to_the_log(settings.home, args.verbose),
            calls_shown_on_stderr(),
            credentials_in_environment(settings),
        ):
            return _command(args, settings)
    except ObjectStoreUnreachable as error:  # a deployment's store is named in one line
        print(f"litpipe {args.command}: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a full disk or a read-only home is one line, for every command
        status = refused_write_exit(error, f"litpipe {args.command}", settings.home)
        if status is None:
            raise
        return status


def _command(args: argparse.Namespace, settings: Settings) -> int:
    """Runs the command that `args` name."""
    if args.command in {"run", "backfill"} or (
        args.command == "eval" and args.evaluation != "retrieval"
    ):
        # The commands that start Dagster runs one after another, and stop between them.
        command = f"eval {args.evaluation}" if args.command == "eval" else args.command
        with stop_on_signals(command) as stop_requested:
            try:
                return _stoppable(args, settings, stop_requested)
            except KeyboardInterrupt:  # the second signal, outside a run's step
                print(f"litpipe {command}: stopped at once on request.", file=sys.stderr)
                return STOPPED_EXIT
    if args.command == "retract":
        return retract_command(settings, args.paper, args.reason, args.undo)
    if args.command == "diff":
        return diff.diff_command(settings, args)
    if args.command == "status":
        if args.keys:
            return keys_listing(settings.paths)
        return status.status_command(settings, show_all=args.all)
    if args.command == "key":
        return key_command(settings.paths, args.paper, args.key)
    if args.command == "export":
        return export_command(
            settings.ingest,
            settings.paths,
            args.collection,
            args.to,
            args.what,
            args.cited,
            args.out,
        )
    if args.command == "ask":
        return ask.ask_command(
            settings,
            args.paper,
            " ".join(args.query),
            args.max_iterations,
            args.record,
            collection=args.collection,
            watch=args.watch,
            to=args.to,
        )
    if args.command == "eval":
        return evaluations.eval_retrieval_command(
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
        return related_work.related_work_command(
            settings,
            args.abstracts,
            args.idea,
            args.idea_file,
            sentences=args.sentences,
            words=args.words,
            top_k=args.top_k,
            out=args.out,
            collection=args.collection,
            to=args.to,
        )
    return ui.ui_command(settings, args.port)


def _stoppable(
    args: argparse.Namespace, settings: Settings, stop_requested: Callable[[], bool]
) -> int:
    """`run`, `backfill` and the evaluations that run Dagster runs: each starts no further run
    once `stop_requested`."""
    if args.command == "run":
        if args.zotero_collection is not None and args.zotero is None:
            print("litpipe run: --zotero-collection goes with --zotero", file=sys.stderr)
            return 2
        source, reader = run.run_source(
            args.source, args.zotero, args.zotero_collection, args.bibtex
        )
        return run.run_command(
            settings, source, args.collection, stop_requested, move=args.move, reader=reader
        )
    if args.command == "backfill":
        return backfill.backfill_from_args(settings, args, stop_requested)
    if args.evaluation == "litqa" and args.collection_wide:
        if args.max_iterations is not None:
            print(
                "litpipe eval litqa --collection-wide: --max-iterations is the per-paper "
                "loop's: a collection's answer has none",
                file=sys.stderr,
            )
            return 2
        return evaluations.eval_command(
            settings,
            "litqa-collection-wide",
            args.dataset,
            args.limit,
            args.out,
            stop_requested,
            corpus=args.corpus,
            collection=args.collection,
        )
    if args.evaluation in {"litqa", "mais"}:
        asking = (
            evaluations.eval_litqa_command
            if args.evaluation == "litqa"
            else evaluations.eval_mais_command
        )
        request = evaluations.DatasetRequest(
            args.dataset, args.corpus, args.collection, args.out, args.limit, args.max_iterations
        )
        return asking(settings, request, stop_requested)
    # A registered evaluation (`litpipe/evaluation/registry.py`), run as its asset.
    return evaluations.eval_command(
        settings, args.evaluation, args.dataset, args.limit, args.out, stop_requested
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
    add_common_flags(parser)


def _add_registered_evaluations(evaluations: argparse._SubParsersAction) -> None:
    """`litpipe eval <name>` for each registered evaluation its asset runs (see
    `litpipe/evaluation/registry.py`), and for those asking collections by name (`scholarqa`)."""
    from litpipe.commands.evaluations import COLLECTION_EVALUATIONS
    from litpipe.evaluation.registry import EVALUATIONS

    for entry in EVALUATIONS.values():
        # The others their own parsers take (`litqa`, and `litqa --collection-wide`, a flag).
        asked_by_name = entry.evaluate is not None or (
            entry.name in COLLECTION_EVALUATIONS and not entry.command
        )
        if not asked_by_name:
            continue
        command = evaluations.add_parser(entry.name, help=entry.description)
        command.add_argument("--dataset", type=Path, required=True, help=entry.dataset_help)
        command.add_argument("--limit", type=int, help="score only the first N examples")
        command.add_argument(
            "--out",
            type=Path,
            help=f"folder for {entry.stem}.md and .json (default: HOME/outputs/eval)",
        )
        add_common_flags(command)


if __name__ == "__main__":
    sys.exit(main())
