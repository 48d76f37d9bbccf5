"""`litpipe ask QUESTION --collection C` over 1,000 SciFact abstracts, offline, against a bare
hybrid retrieval over the same table in the same run (issue 45, point 5).

1. Ingest (timed apart, not part of any question's figure): a table of the first `--papers`
   abstracts of SciFact's corpus (a BEIR folder: corpus.jsonl) built into one collection of a
   fresh home, in a process of its own, packaged MiniLM and offline defaults. By default as far
   as an answer reads (`--ingest inputs`: the papers' chunks and embeddings, through
   `litpipe.runtime.evaluations.ask_collections`, as `litpipe eval scholarqa` ingests; the
   collection's BM25 index is then built by the first question); `--ingest run`: `litpipe run`,
   every stage to the syntheses (821 s for 1,000 abstracts on two busy cores).
2. Questions: SciFact claims (queries.jsonl; `test` claims first, then `train`) whose relevant
   abstract (qrels) is among the ingested ones, so the collection holds an answer. One warm-up
   question first (the process's first ask loads the embedder: timed and counted apart), then
   `--questions` claims, each asked in this process through `litpipe.cli.main(["ask", CLAIM,
   "--collection", C, "--home", H])`, the command's own path (settings, the readiness check,
   the request, the `collection_answer` run, the answer's files and printout). Each is new, so
   each is a run: retrieval, the offline writer and the support check's grading.
3. Retrieval inside each ask: the `collection_answer` step's retriever construction
   (`RetrievalResource.retriever`: the chunk listing and the saved BM25 index's lookup) and its
   search (`collection_search`: hybrid candidates, MMR, the reranker in force, `none` by
   default), timed by wrapping both where the step calls them.
4. The baseline, right after each ask: `HybridRetriever.search` called directly, on one
   retriever built once over the same LanceDB table, collection and BM25 index, with the limit
   and candidates the ask's search uses. Ratios: ask / bare and retrieval-in-ask / bare (p50s).
5. Repeats: the first `--repeats` questions asked again, served from their materialized answer
   (no run, no model call).
6. Whole commands: `--commands` more claims each asked by `litpipe ask` in a process of its own,
   start to exit (imports and the embedder's load included: what a user waits for).

Counted across the timed questions and the repeats (`litpipe_tests/load_counts.py` wraps the
calls): sentence-transformers models loaded, embedder backends made, BM25 indexes built and
looked up on disk, LanceDB index builds. An answer must load no model and build no index per
question: all but `bm25_loads` are 0 there (the saved index is looked up once per run, a file
read, not a build).

Data: BEIR SciFact (CC BY-NC 2.0, ../shared/data/scifact, see its README beside it).

Usage: python benchmarks/collection_answer.py [DATA] [--papers 1000] [--questions 50]
       [--repeats 5] [--commands 3] [--ingest inputs|run] [--keep DIR]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import csv
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar
from unittest import mock

import numpy as np
from concurrency import LITPIPE, ROOT, Abstract, read_abstracts, write_table
from pydantic import BaseModel

# `concurrency` put the checkout first on sys.path: litpipe_tests holds the load counters.
from litpipe.catalog import Catalog
from litpipe.cli import main as litpipe_main
from litpipe.defs import resources
from litpipe.defs.assets import collection_answer as collection_answer_asset
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import NOT_ANSWERED, RetrievedChunk
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.workflows.collection_answer import ANSWER_PASSAGES, Search
from litpipe.workflows.ingest import settings_embedder
from litpipe_tests.load_counts import LoadCounts, counting_loads

DATA = ROOT.parent / "shared" / "data" / "scifact"  # ../shared beside the checkout
COLLECTION = "scifact"
SPLITS = ("test", "train")
# How `litpipe ask` says a request was served (`served_line`): by a run, or from its answer.
MATERIALIZED, SERVED = "materialized in", "up to date"
# The papers of a table built as far as a collection's answer reads them, asking nothing.
INGEST_INPUTS = """
import sys
from pathlib import Path
from litpipe.runtime.evaluations import CollectionQuestions, ask_collections
from litpipe.settings import Settings

built = ask_collections(
    Settings(home=sys.argv[1]),
    [CollectionQuestions(source=Path(sys.argv[2]), collection=sys.argv[3], questions=[])],
    progress=lambda line: None,
)
print("\\n".join(built.failures), file=sys.stderr)
sys.exit(1 if built.failures else 0)
"""
_Result = TypeVar("_Result")
_Arguments = ParamSpec("_Arguments")


class Latency(BaseModel):
    p50_ms: float
    p95_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        p50, p95 = np.percentile(np.array(seconds) * 1000, [50, 95])
        return cls(p50_ms=round(float(p50), 2), p95_ms=round(float(p95), 2))

    def __str__(self) -> str:
        return f"p50 {self.p50_ms:8.1f} ms, p95 {self.p95_ms:8.1f} ms"


class RetrievalTimer:
    """The seconds the `collection_answer` step spends building its retriever and searching,
    while `wrapping` is open: reset before each question."""

    def __init__(self) -> None:
        self.construction_s = 0.0
        self.search_s = 0.0

    def reset(self) -> None:
        self.construction_s = self.search_s = 0.0

    @contextlib.contextmanager
    def wrapping(self) -> Iterator[None]:
        build = resources.RetrievalResource.retriever
        search_of = collection_answer_asset.collection_search

        def timed_build(*args: object, **kwargs: object) -> HybridRetriever:
            started = time.perf_counter()
            retriever = build(*args, **kwargs)  # type: ignore[arg-type]
            self.construction_s += time.perf_counter() - started
            return retriever

        def timed_search_of(*args: object, **kwargs: object) -> Search:
            search = search_of(*args, **kwargs)  # type: ignore[arg-type]

            def timed(text: str) -> list[RetrievedChunk]:
                started = time.perf_counter()
                found = search(text)
                self.search_s += time.perf_counter() - started
                return found

            return timed

        with (
            mock.patch.object(resources.RetrievalResource, "retriever", timed_build),
            mock.patch.object(collection_answer_asset, "collection_search", timed_search_of),
        ):
            yield


def claims(data: Path, ingested: set[str]) -> list[str]:
    """SciFact's claims whose relevant abstract is ingested, `test` first, each by query id."""
    texts = {}
    with (data / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                texts[str(record["_id"])] = record["text"]
    chosen: list[str] = []
    for split in SPLITS:
        relevant: dict[str, set[str]] = {}
        with (data / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as table:
            for row in csv.DictReader(table, delimiter="\t"):
                relevant.setdefault(row["query-id"], set()).add(row["corpus-id"])
        for query_id in sorted(relevant, key=int):
            if relevant[query_id] & ingested and texts[query_id] not in chosen:
                chosen.append(texts[query_id])
    return chosen


def ask_in_process(home: Path, question: str) -> tuple[int, str]:
    """`litpipe ask QUESTION --collection C --home H` in this process: its exit code and what
    it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = litpipe_main(["ask", question, "--collection", COLLECTION, "--home", str(home)])
    return code, printed.getvalue()


def in_own_process(
    arguments: list[str], folder: Path, program: str = LITPIPE
) -> tuple[float, int, str]:
    """A litpipe command (or another `program`) in a process of its own (in `folder`, so no
    litpipe.toml of the checkout applies): its wall seconds, exit code and the end of its error
    output."""
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-c", program, *arguments],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    return round(time.perf_counter() - started, 2), process.returncode, process.stderr[-2000:]


def timed(
    call: Callable[_Arguments, _Result], *args: _Arguments.args, **kwargs: _Arguments.kwargs
) -> tuple[float, _Result]:
    """`call`'s wall seconds, and what it returned."""
    started = time.perf_counter()
    result = call(*args, **kwargs)
    return time.perf_counter() - started, result


def loaded_or_built(counts: LoadCounts) -> dict[str, int]:
    """What `counts` say was loaded or built: a saved BM25 index looked up (a file read once per
    run) is neither."""
    return {name: value for name, value in vars(counts).items() if value and name != "bm25_loads"}


def ratio(numerator: Latency, denominator: Latency) -> float:
    return round(numerator.p50_ms / denominator.p50_ms, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DATA, help="SciFact's BEIR folder")
    parser.add_argument("--papers", type=int, default=1000, help="abstracts ingested")
    parser.add_argument("--questions", type=int, default=50, help="claims asked in-process")
    parser.add_argument("--repeats", type=int, default=5, help="of them asked again")
    parser.add_argument("--commands", type=int, default=3, help="claims asked as a process each")
    parser.add_argument(
        "--ingest",
        choices=("inputs", "run"),
        default="inputs",
        help="build the papers as far as an answer reads them, or `litpipe run` them whole",
    )
    parser.add_argument(
        "--keep", type=Path, help="work in this new folder and keep it (default: a temporary one)"
    )
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        parser.error(f"no SciFact corpus.jsonl in {args.data}")
    abstracts: list[Abstract] = read_abstracts(args.data)[: args.papers]
    questions = claims(args.data, {abstract.id for abstract in abstracts})
    wanted = 1 + args.questions + args.commands
    if len(questions) < wanted or args.repeats > args.questions:
        print(
            f"{len(questions)} claims have a relevant abstract among the {len(abstracts)} "
            f"ingested; {wanted} are needed (and --repeats at most --questions)",
            file=sys.stderr,
        )
        return 2
    warm_up, asked = questions[0], questions[1 : 1 + args.questions]
    commands = questions[1 + args.questions : wanted]
    # As an installed litpipe's modules are after its first run (this machine sets
    # PYTHONDONTWRITEBYTECODE, which would make each process compile them anew).
    compileall.compile_dir(ROOT / "litpipe", quiet=1)
    if args.keep is not None:
        args.keep.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="litpipe-ask-bench-") as scratch:
        folder = args.keep or Path(scratch)
        home = folder / "home"
        table = write_table(folder / f"{COLLECTION}.csv", abstracts)
        ingest_s, ingest_code, ingest_error = (
            in_own_process([str(home), str(table), COLLECTION], folder, INGEST_INPUTS)
            if args.ingest == "inputs"
            else in_own_process(
                ["run", str(table), "--home", str(home), "--collection", COLLECTION], folder
            )
        )
        if ingest_code != 0:
            print(f"the ingest failed ({ingest_code}):\n{ingest_error}", file=sys.stderr)
            return 1
        print(f"ingest ({args.ingest}): {len(abstracts)} abstracts in {ingest_s:.1f} s")
        # As the commands above: no litpipe.toml of the checkout applies.
        with contextlib.chdir(folder):
            figures = measure(home, warm_up, asked, args.repeats)
        command_runs = [
            in_own_process(
                ["ask", question, "--collection", COLLECTION, "--home", str(home)], folder
            )
            for question in commands
        ]
    figures.update(
        {
            "papers": len(abstracts),
            "ingest": args.ingest,
            "ingest_s": ingest_s,
            "command_wall_s": [wall for wall, _, _ in command_runs],
            "command_exit_codes": [code for _, code, _ in command_runs],
            "command_median_s": round(statistics.median(wall for wall, _, _ in command_runs), 2)
            if command_runs
            else None,
            "cpus": os.cpu_count(),
            "load_average": [round(load, 2) for load in os.getloadavg()],
            "python": platform.python_version(),
        }
    )
    for (wall, code, error), question in zip(command_runs, commands, strict=True):
        tail = f": {error.strip().splitlines()[-1]}" if code and error.strip() else ""
        print(f"`litpipe ask` as a process: {wall:.1f} s, exit {code}{tail} ({question[:60]})")
    print(json.dumps({"benchmark": "collection_answer", **figures}))
    succeeded = figures["exit_codes"] == [0] and all(code == 0 for _, code, _ in command_runs)
    return 0 if succeeded and not figures["loaded_or_built_per_question"] else 1


def measure(home: Path, warm_up: str, asked: list[str], repeats: int) -> dict[str, object]:
    """The in-process figures: the warm-up ask, each question's ask with its retrieval and the
    bare search beside it, the repeats; and the loads and builds counted over each part."""
    groups = settings_groups(Settings(home=home))
    paths, retrieval = groups["paths"], groups["retrieval"]
    limit = max(retrieval.rerank_candidates, ANSWER_PASSAGES)
    timer = RetrievalTimer()
    with counting_loads() as counts, timer.wrapping():
        warm_up_s, (warm_up_code, _) = timed(ask_in_process, home, warm_up)
        warm_up_counts = counts.copy()
        # The baseline's retriever, built once (the ask builds one per run): the same table,
        # collection, saved BM25 index and fusion settings, the embedder the ask loaded.
        bare_build_s, bare = timed(
            HybridRetriever,
            ChunkStore(paths.lancedb_dir),
            settings_embedder(groups["ingest"], paths),
            COLLECTION,
            paths.bm25_dir,
            rrf_k=retrieval.rrf_k,
            mmr_lambda=retrieval.mmr_lambda,
            papers=Catalog(paths.catalog_path).papers(COLLECTION),
        )
        before_questions = counts.copy()
        ask_s, construction_s, search_s, in_ask_s, bare_s = [], [], [], [], []
        codes, answered, runs, served = [warm_up_code], 0, 0, 0
        for question in asked:
            timer.reset()
            seconds, (code, printed) = timed(ask_in_process, home, question)
            ask_s.append(seconds)
            construction_s.append(timer.construction_s)
            search_s.append(timer.search_s)
            in_ask_s.append(timer.construction_s + timer.search_s)
            codes.append(code)
            if code == 0 and NOT_ANSWERED not in printed:
                answered += 1
            runs += f": {MATERIALIZED}" in printed
            seconds, _ = timed(
                bare.search, question, limit=limit, candidates=retrieval.candidates, scope="all"
            )
            bare_s.append(seconds)
        question_counts = counts.since(before_questions)
        before_repeats = counts.copy()
        repeat_s = []
        for question in asked[:repeats]:
            seconds, (code, printed) = timed(ask_in_process, home, question)
            repeat_s.append(seconds)
            codes.append(code)
            served += f": {SERVED}" in printed
        repeat_counts = counts.since(before_repeats)

    ask, in_ask, bare_latency = Latency.of(ask_s), Latency.of(in_ask_s), Latency.of(bare_s)
    construction, search, repeat = (
        Latency.of(construction_s),
        Latency.of(search_s),
        Latency.of(repeat_s),
    )
    reloads = loaded_or_built(question_counts) | loaded_or_built(repeat_counts)
    figures: dict[str, object] = {
        "chunks": len(bare),
        "questions": len(asked),
        "answered": answered,
        "materialized": runs,
        "repeats_served": served,
        "exit_codes": sorted(set(codes)),
        "warm_up_ask_s": round(warm_up_s, 2),
        "warm_up_counts": vars(warm_up_counts),
        "bare_retriever_build_s": round(bare_build_s, 3),
        "ask": ask.model_dump(),
        "retrieval_in_ask": in_ask.model_dump(),
        "retriever_construction_in_ask": construction.model_dump(),
        "search_in_ask": search.model_dump(),
        "bare_hybrid": bare_latency.model_dump(),
        "ask_over_bare": ratio(ask, bare_latency),
        "retrieval_in_ask_over_bare": ratio(in_ask, bare_latency),
        "search_in_ask_over_bare": ratio(search, bare_latency),
        "retrieval_share_of_ask": round(sum(in_ask_s) / sum(ask_s), 4),
        "counts_over_questions": vars(question_counts),
        "repeats": len(repeat_s),
        "repeat": repeat.model_dump(),
        "counts_over_repeats": vars(repeat_counts),
        "loaded_or_built_per_question": reloads,
        "limit": limit,
        "candidates": retrieval.candidates,
        "reranker": retrieval.reranker,
        "answer_mode": groups["synthesis"].answer_mode,
    }
    print(f"warm-up ask (the embedder loaded): {warm_up_s:.2f} s, counts {vars(warm_up_counts)}")
    print(
        f"{len(asked)} questions asked in-process ({runs} by a run; {answered} answered, the "
        "rest declined):"
    )
    print(f"  whole ask              {ask}")
    print(f"  retrieval in the ask   {in_ask}")
    print(f"    retriever built      {construction}")
    print(f"    search               {search}")
    print(f"  bare hybrid search     {bare_latency}")
    print(
        f"  ratios of p50s: ask / bare {figures['ask_over_bare']}, retrieval in ask / bare "
        f"{figures['retrieval_in_ask_over_bare']}, search in ask / bare "
        f"{figures['search_in_ask_over_bare']}; retrieval is "
        f"{figures['retrieval_share_of_ask']:.1%} of the asks' time"
    )
    print(f"  counts over the questions: {vars(question_counts)}")
    print(
        f"{len(repeat_s)} repeats ({served} served, no run): {repeat}, counts {vars(repeat_counts)}"
    )
    print(
        f"RELOADED OR REBUILT per question: {reloads}"
        if reloads
        else "per question: no model loaded, no index built"
    )
    return figures


if __name__ == "__main__":
    sys.exit(main())
