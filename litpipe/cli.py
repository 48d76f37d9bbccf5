"""The `litpipe` command: runs the same Dagster graph in-process, into the UI's instance."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from litpipe.schemas import CheckReport, FailedPaper, RunReport, SynthesisReport
from litpipe.settings import OFFLINE, Settings

if TYPE_CHECKING:
    from litpipe.defs.runner import PaperOutcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="litpipe", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="ingest a folder of PDFs or an abstract table (.csv/.jsonl) and write its synthesis",
    )
    run.add_argument("source", type=Path, help="folder of PDFs, or a table with id,title,abstract")
    run.add_argument("--collection", help="collection name (default: the folder or table name)")
    _add_common(run)

    status = commands.add_parser("status", help="what is materialized, stale or missing")
    _add_common(status)
    status.add_argument("--all", action="store_true", help="list every stale or missing paper")

    ui = commands.add_parser("ui", help="serve the Dagster UI on this litpipe home")
    _add_common(ui)
    ui.add_argument("--port", type=int, default=3000)

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
        help="hybrid chunks each reranker reorders (default: the rerank_candidates setting, 20)",
    )
    retrieval.add_argument("--max-queries", type=int, help="score only the first N queries")
    retrieval.add_argument(
        "--out",
        type=Path,
        help="JSON file (default: HOME/outputs/eval/retrieval-<dataset>-<split>)",
    )
    _add_common(retrieval)

    args = parser.parse_args(argv)
    overrides = {
        name: value
        for name, value in {
            "home": args.home,
            "embedder": args.embedder,
            "llm_model": args.model,
            "llm_api_base": args.api_base,
        }.items()
        if value is not None
    }
    settings = Settings(**overrides)
    if args.command == "run":
        return run_command(settings, args.source, args.collection)
    if args.command == "status":
        return status_command(settings, show_all=args.all)
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
    return ui_command(settings, args.port)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", type=Path, help="litpipe home (default: $LITPIPE_HOME or ./.litpipe)"
    )
    parser.add_argument(
        "--embedder", help="sentence-transformers model name or local path (default: MiniLM)"
    )
    parser.add_argument(
        "--model", help="litellm model for every agent, e.g. gpt-4o-mini (default: offline)"
    )
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server")


def run_command(settings: Settings, source: Path, collection: str | None) -> int:
    # Imported here: Dagster, LanceDB and the tokenizer cost seconds that `--help` should not.
    from litpipe.defs.runner import open_instance, register, run_papers
    from litpipe.ingest.sources import discover
    from litpipe.retrieval.embedder import Embedder
    from litpipe.retrieval.store import ChunkStore

    started = time.perf_counter()
    try:
        discovery = discover(source, collection)
    except ValueError as error:
        print(f"litpipe run: {error}", file=sys.stderr)
        return 2
    found = len(discovery.sources) + len(discovery.failed)
    print(f"{source}: {found} papers in collection {discovery.collection!r}", file=sys.stderr)
    for failure in discovery.failed:
        print(f"  failed: {_describe(failure)}", file=sys.stderr)
    discovered = time.perf_counter()

    instance = open_instance(settings)
    registrations = register(settings, instance, discovery)

    def show(done: int, total: int, outcome: PaperOutcome) -> None:
        detail = {
            "materialized": f"{outcome.chunks} chunks, {outcome.embedded} embedded, "
            f"{outcome.questions} questions, {outcome.evidence} evidence chunks, "
            f"{outcome.answers} answers",
            "up_to_date": f"up to date ({outcome.chunks} chunks)",
            "failed": f"FAILED: {outcome.failure.reason if outcome.failure else ''}",
        }[outcome.status]
        print(
            f"[{done}/{total}] {outcome.paper_id}: {detail} ({outcome.seconds:.1f} s)",
            file=sys.stderr,
        )

    papers_run = run_papers(settings, instance, registrations, on_progress=show)
    outcome_list, usage = papers_run.outcomes, papers_run.llm_usage
    finished = time.perf_counter()

    embedder = Embedder(settings.embedder)
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
        engine=settings.llm_model or OFFLINE,
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
    (out_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    print(
        f"{report.papers} papers ingested ({report.papers_up_to_date} already up to date), "
        f"{len(report.failed_papers)} failed; {report.chunks} chunks, "
        f"{report.embedded_chunks} embedded now; {report.lancedb_rows} rows in "
        f"{report.lancedb_table}; {report.questions} questions by {report.engine}, "
        f"{report.evidence_chunks} evidence chunks "
        f"(model calls: {usage.made} made, {usage.cached} cached, {usage.failed} failed, "
        f"${usage.cost_usd:.4f}). Report: {out_dir / 'report.json'}",
        file=sys.stderr,
    )
    if report.synthesis is not None:
        written = report.synthesis
        types = ", ".join(f"{count} {kind}" for kind, count in written.relationship_types.items())
        print(
            f"{written.papers} papers analysed: {written.insights} insights, "
            f"{written.relationships} relationships ({types}); synthesis "
            f"({written.synthesis_pattern}, {written.synthesis_words} words, "
            f"{written.cited_papers}/{written.papers} papers cited) and plain summary "
            f"({written.plain_words} words): {out_dir / 'synthesis.html'}",
            file=sys.stderr,
        )
        for check in written.checks:
            verdict = "passed" if check.passed else f"FAILED ({check.severity})"
            print(
                f"  check {check.asset}/{check.check}: {verdict}: {check.description}",
                file=sys.stderr,
            )
    if report.collection_failure:
        print(f"  collection assets FAILED: {report.collection_failure}", file=sys.stderr)
    return 0 if report.papers and not report.collection_failure else 1


def synthesis_report(
    settings: Settings, collection: str, checks: list[CheckReport]
) -> SynthesisReport | None:
    """The collection stages' figures, read from their outputs; None until they exist."""
    from litpipe.artifacts import ArtifactStore
    from litpipe.schemas import (
        CollectionOutputs,
        CrossPaperQuestions,
        RelationshipAnalysis,
        Synthesis,
    )

    artifacts = ArtifactStore(settings.artifacts_dir)
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
        outputs=outputs.files,
        checks=checks,
    )


def _describe(failure: FailedPaper) -> str:
    where = failure.file if failure.row is None else f"{failure.file} row {failure.row}"
    return f"{where}: {failure.reason}"


def status_command(settings: Settings, show_all: bool) -> int:
    from litpipe.catalog import Catalog
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.runner import collection_asset_keys, open_instance, paper_asset_keys
    from litpipe.defs.staleness import State, partition_states

    catalog = Catalog(settings.catalog_path)
    instance = open_instance(settings)
    defs = build_definitions(settings)
    keys = paper_asset_keys(defs)
    collections = catalog.collections()
    if not collections:
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
    return 0


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
        settings = Settings.model_validate(settings.model_dump() | reranking)
        evaluation = evaluate_retrieval(settings, dataset, split, chosen, max_queries)
    except (OSError, ValueError, RerankerError) as error:
        print(f"litpipe eval retrieval: {error}", file=sys.stderr)
        return 2
    print(format_table(evaluation))
    out = out or settings.outputs_root / "eval" / f"retrieval-{dataset.name}-{split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(evaluation.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print(f"written: {out}")
    return 0


def ui_command(settings: Settings, port: int) -> int:
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    # The code server reads its settings from the environment: hand it this command's.
    env = {
        **os.environ,
        "DAGSTER_HOME": str(settings.dagster_home),
        "LITPIPE_HOME": str(settings.home),
        "LITPIPE_EMBEDDER": settings.embedder,
    }
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-m", "litpipe.defs.definitions", "-p", str(port)]
    os.execve(dagster, command, env)
    return 0  # not reached: execve replaces this process


if __name__ == "__main__":
    sys.exit(main())
