"""`litpipe backfill`: every registered paper (or a collection's) brought up to date under
these settings in batches, e.g. under another embedder; with `--gate`, the new embedder made the
home's default only if its nDCG@10 on a qrels set holds (`litpipe.evaluation.embedder_gate`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from litpipe.commands.flags import add_common_flags, settings_from_flags
from litpipe.settings import Settings
from litpipe.stopping import STOPPED_EXIT
from litpipe.text import counted

if TYPE_CHECKING:
    from litpipe.catalog import Catalog
    from litpipe.evaluation.beir import BeirDataset
    from litpipe.evaluation.embedder_gate import EmbedderGate
    from litpipe.runtime.backfill import BackfillReport

# The exit status of a gated backfill whose gate kept the old embedder.
GATE_KEPT_EXIT = 3
# The largest drop of nDCG@10 a gated backfill accepts by default (issue 34).
DEFAULT_MARGIN = 0.01


@dataclass
class Gate:
    """`--gate QRELS`: the set, its BEIR split, the margin, and the home's settings without
    this command's embedder (the default the new one is scored against)."""

    qrels: Path
    split: str
    margin: float
    home_default: Settings
    home_flags: dict


def add_backfill_flags(parser: argparse.ArgumentParser) -> None:
    """`litpipe backfill`'s gate flags, then the common flags."""
    parser.add_argument(
        "--gate",
        type=Path,
        metavar="QRELS",
        help="score the new embedder's table against the default's on these judged queries (a "
        "BEIR folder, a .jsonl/.csv of question,paper pairs, or `recorded`: the pairs `litpipe "
        "ask --record` kept in HOME/qrels.jsonl) and make it the home's default "
        "(HOME/settings.toml) only if its nDCG@10 holds; until then the old table serves",
    )
    parser.add_argument(
        "--margin",
        type=float,
        help=f"with --gate: the largest drop of nDCG@10 that still switches (default: "
        f"{DEFAULT_MARGIN})",
    )
    parser.add_argument(
        "--gate-split", default="test", help="with a BEIR --gate: its qrels file (default: test)"
    )
    add_common_flags(parser)


def backfill_from_args(
    settings: Settings, args: argparse.Namespace, stop_requested: Callable[[], bool]
) -> int:
    """`litpipe backfill` from its parsed command line."""
    gate = None
    if args.gate is not None:
        from litpipe.evaluation.embedder_gate import GateError, gate_qrels

        try:
            qrels = gate_qrels(args.gate, settings.home)
        except GateError as error:
            print(f"litpipe backfill: {error}", file=sys.stderr)
            return 2
        flags = settings_from_flags(args)
        ingest = {
            name: value
            for name, value in flags.get("ingest", {}).items()
            if name not in ("embedder", "embedder_backend")
        }
        home_flags = {k: v for k, v in flags.items() if k != "ingest"} | (
            {"ingest": ingest} if ingest else {}
        )
        margin = DEFAULT_MARGIN if args.margin is None else args.margin
        gate = Gate(qrels, args.gate_split, margin, Settings(**home_flags), home_flags)
    elif args.margin is not None:
        print("litpipe backfill: --margin goes with --gate", file=sys.stderr)
        return 2
    return backfill_command(settings, args.collection, args.batch, stop_requested, gate)


def backfill_command(
    settings: Settings,
    collection: str | None,
    batch: int | None,
    stop_requested: Callable[[], bool] = lambda: False,
    gate: Gate | None = None,
) -> int:
    """Every registered paper (or a collection's) and their collections brought up to date under
    these settings, in batches, with a line per batch and a summary (which ends saying what is
    left when it was stopped on request). With a `gate`, the new embedder's table and the
    default's are then scored, and the new one made the default only if it passes."""
    from litpipe.catalog import Catalog
    from litpipe.retrieval.embedder import EmbedderError
    from litpipe.runtime import backfill as backfilling
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.ingest import settings_embedder

    def refused(message: str) -> int:
        print(f"litpipe backfill: {message}", file=sys.stderr)
        return 2

    if batch is not None and batch < 1:
        return refused(f"--batch must be at least 1, not {batch}")
    try:
        # Before anything runs: a model that cannot be found fails here, not in every paper.
        embedder_id = settings_embedder(settings.ingest, settings.paths).embedder_id
    except EmbedderError as error:
        return refused(str(error))
    if not settings.paths.catalog_path.is_file():
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    catalog = Catalog(settings.paths.catalog_path)
    known = catalog.collections()
    if collection is not None and collection not in known:
        return refused(f"no collection {collection!r} under {settings.home} (known: {known})")
    # A paper of several collections is one paper: counted and backfilled once.
    paper_ids = list(
        dict.fromkeys(p for c in ([collection] if collection else known) for p in catalog.papers(c))
    )
    if not paper_ids:
        return refused(f"no paper is registered under {settings.home}: run `litpipe run` first")
    judged = None
    if gate is not None:
        from litpipe.evaluation.embedder_gate import GateError, load_gate_set, on_papers

        if gate.margin < 0:
            return refused(f"--margin must be at least 0, not {gate.margin}")
        try:
            old_id = settings_embedder(
                gate.home_default.ingest, gate.home_default.paths
            ).embedder_id
        except EmbedderError as error:
            return refused(f"the home's default embedder: {error}")
        if old_id == embedder_id:
            return refused(
                f"--gate: {embedder_id} is the home's default already; name another with "
                "--embedder (or --set ingest.embedder_backend=...)"
            )
        try:
            judged = on_papers(
                load_gate_set(gate.qrels, gate.split), _judged_ids(catalog, paper_ids)
            )
        except GateError as error:
            return refused(str(error))
    size = batch or settings.operations.batch_size
    print(
        f"backfill of {counted(len(paper_ids), 'paper')} to {embedder_id}, at most {size} a batch",
        file=sys.stderr,
    )
    report = backfilling.backfill(
        settings,
        open_instance(settings.llm, settings.paths),
        paper_ids,
        batch_size=size,
        on_batch=lambda outcome: print(backfilling.batch_line(outcome), file=sys.stderr),
        stop_requested=stop_requested,
    )
    for line in backfilling.summary_lines(report, settings.ingest, settings.paths):
        if gate is None or not line.startswith("To make "):
            print(line, file=sys.stderr)
    unfinished = report.stopped or report.failed_papers or report.collection_failure
    if gate is not None and unfinished:
        print(
            f"gate: not scored, the backfill did not finish; {old_id} stays the home's default "
            "and its table serves every query",
            file=sys.stderr,
        )
    if report.stopped:
        return STOPPED_EXIT
    if unfinished:
        return 1
    if gate is None or judged is None:
        return 0
    scored = _score(settings, gate, judged, report)
    print(f"gate: {scored.decision}", file=sys.stderr)
    scores = backfilling.report_path(settings.paths, report.embedder)
    print(
        f"gate: both scores are in {scores} and on corpus_index in the UI (its observations)",
        file=sys.stderr,
    )
    print(json.dumps(scored.model_dump(mode="json")))
    return 0 if scored.switched else GATE_KEPT_EXIT


def _judged_ids(catalog: Catalog, paper_ids: list[str]) -> dict[str, list[str]]:
    """What a judged document id may name of these papers: the paper id, or its table's own id
    for the row."""
    ids: dict[str, list[str]] = {}
    for paper_id in paper_ids:
        ids.setdefault(paper_id, []).append(paper_id)
        external = catalog.source(paper_id).external_id
        if external and external != paper_id:
            ids.setdefault(external, []).append(paper_id)
    return ids


def _score(
    settings: Settings, gate: Gate, judged: BeirDataset, report: BackfillReport
) -> EmbedderGate:
    """Both tables scored on the judged queries; the new embedder recorded as the home's default
    if it passed; the gate added to the backfill's report, and observed on the backfilled
    collections' `corpus_index` so that the UI shows it beside the index it decides on."""
    from litpipe.config import origins, record_home_settings
    from litpipe.evaluation.embedder_gate import decide, score_table
    from litpipe.files import write_atomically
    from litpipe.retrieval.store import ChunkStore
    from litpipe.runtime.backfill import embedder_setting, report_gate, report_path
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.ingest import settings_embedder

    store = ChunkStore(settings.paths.lancedb_dir)
    papers = sorted({p for ids in judged.qrels.values() for p in ids} | set(_backfilled(report)))
    old = score_table(
        judged, store, settings_embedder(gate.home_default.ingest, gate.home_default.paths), papers
    )
    new = score_table(judged, store, settings_embedder(settings.ingest, settings.paths), papers)
    name = embedder_setting(settings.ingest)

    def switch() -> None:
        record_home_settings(
            settings,
            {"ingest": {"embedder": name, "embedder_backend": settings.ingest.embedder_backend}},
        )

    result = decide(str(gate.qrels), judged, len(papers), old, new, gate.margin, switch)
    if result.switched:
        now = Settings(**gate.home_flags)
        if (now.ingest.embedder, now.ingest.embedder_backend) != (
            name,
            settings.ingest.embedder_backend,
        ):
            where = origins(now, gate.home_flags)
            given = {where["ingest.embedder"], where["ingest.embedder_backend"]} - {"home"}
            print(
                f"gate: recorded in {settings.paths.home_settings_path}, but the "
                f"{' and '.join(sorted(given))} still set ingest.embedder or its backend, and "
                f"win over it: remove them to use {name}",
                file=sys.stderr,
            )
    path = report_path(settings.paths, report.embedder)
    write_atomically(
        path,
        json.dumps(
            report.model_dump(mode="json") | {"gate": result.model_dump(mode="json")}, indent=2
        ),
    )
    report_gate(open_instance(settings.llm, settings.paths), sorted(report.collections), result)
    return result


def _backfilled(report: BackfillReport) -> list[str]:
    """The papers the backfill brought up to date (every batch's)."""
    return [p for outcome in report.batches for p in outcome.papers]
