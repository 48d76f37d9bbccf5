"""Model calls and tokens per stage for the whole chain, litpipe's two synthesis methods against
X-Sum's two pipelines for the same corpus.

Runs `litpipe run` in-process on the bundled biology corpus (or `--source`) with every agent
routed to the local stub server (litpipe_tests/stub_llm.py, answering each agent with a valid,
scripted reply: litpipe_tests/stub_agents.py), in a fresh home with the cache on, and reads the
run's usage per agent: once with `synthesis.method = "relational"` (X-Sum's pipeline 2), once
more in the same home to show what the cache leaves (it must make no call), and once in a fresh
home with `synthesis.method = "flat"` (pipeline 1). The flat run's relationship analysis still
runs (the plain summary and the report read it); only the writer's prompt differs.

X-Sum's figures are computed for the same N papers and K questions each. Pipeline 1 makes
K x N + 1 calls (one answer per question, one summary), pipeline 2 two more (the relationship
analysis and the plain summary). Their tokens are litpipe's measured tokens for the same work:
K x N answer calls at the mean tokens of litpipe's answer calls, the summary call as litpipe's
writer of the same pipeline (flat, relational), and for pipeline 2 the analysis as one call
holding what litpipe's insights and relationships calls hold, and litpipe's plain summary call.
litpipe's figures add what the method asks for beyond that: the questions themselves,
comparative questions and their answers, one insights call per paper, follow-ups, and the
writer's map or tree calls when the answers do not fit.

Usage: python benchmarks/llm_calls.py [--source DIR] [--embedder NAME_OR_PATH]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # litpipe_tests, for the stub server and its scripted agents

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from litpipe.ingest.sources import discover  # noqa: E402
from litpipe.runtime.runner import PapersRun, open_instance, register, run_papers  # noqa: E402
from litpipe.schemas import LLMUsage  # noqa: E402
from litpipe.settings import DEFAULT_EMBEDDER  # noqa: E402
from litpipe_tests.stub_agents import serve_every_agent  # noqa: E402
from litpipe_tests.stub_llm import StubLLM, stub_settings  # noqa: E402

# What X-Sum's one relationship-analysis call does, litpipe's analysis does in these calls.
ANALYSIS_AGENTS = ("insights", "relationships")


def run_once(
    home: Path, stub: StubLLM, source: Path, embedder: str, method: str
) -> tuple[PapersRun, float]:
    settings = stub_settings(
        home, stub, ingest={"embedder": embedder}, synthesis={"method": method}, corpus_roots=[]
    )
    instance = open_instance(settings)
    started = time.perf_counter()
    run = run_papers(settings, instance, register(settings, instance, discover(source, "bench")))
    if run.collection_failure or any(o.status == "failed" for o in run.outcomes):
        raise SystemExit(f"the run failed: {run.collection_failure or run.outcomes}")
    return run, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "corpora" / "biology-cc-by")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    args = parser.parse_args()

    # Three runs of the chain on a loaded machine outlast the stub's default lifetime.
    with StubLLM(lifetime_s=3600) as stub:
        serve_every_agent(stub)
        with tempfile.TemporaryDirectory() as home:
            relational, seconds = run_once(
                Path(home), stub, args.source, args.embedder, "relational"
            )
            second, _ = run_once(Path(home), stub, args.source, args.embedder, "relational")
        with tempfile.TemporaryDirectory() as home:
            flat, _ = run_once(Path(home), stub, args.source, args.embedder, "flat")

    papers = len(relational.outcomes)
    questions = sum(o.questions for o in relational.outcomes)
    questions_per_paper = round(questions / papers, 2)
    print(f"{papers} papers (N), {questions_per_paper} questions each (K), in {seconds:.1f} s")
    for name, run in (("relational", relational), ("flat", flat)):
        print(f"litpipe {name}:")
        print(f"  {'agent':<20}{'calls':>7}{'tokens in':>12}{'tokens out':>12}")
        for agent, usage in run.llm_usage_by_agent.items():
            print(f"  {agent:<20}{usage.made:>7}{usage.tokens_in:>12}{usage.tokens_out:>12}")
        total = run.llm_usage
        print(f"  {'total':<20}{total.made:>7}{total.tokens_in:>12}{total.tokens_out:>12}")

    pipelines = {
        "litpipe_relational": _figures(relational.llm_usage),
        "litpipe_flat": _figures(flat.llm_usage),
        "xsum_p1": xsum_pipeline(questions, flat, "synthesis_flat", analysis=False),
        "xsum_p2": xsum_pipeline(questions, relational, "synthesis", analysis=True),
    }
    print(f"for the same N = {papers} and K = {questions_per_paper} (X-Sum's computed):")
    print(f"  {'':<20}{'calls':>7}{'tokens in':>12}{'tokens out':>12}")
    for name, f in pipelines.items():
        print(f"  {name:<20}{f['calls']:>7}{f['tokens_in']:>12}{f['tokens_out']:>12}")
    print(f"second run: {second.llm_usage.made} calls made, {second.llm_usage.cached} cached")
    print(
        json.dumps(
            {
                "papers": papers,
                "questions_per_paper": questions_per_paper,
                "pipelines": pipelines,
                "calls_per_agent": {
                    "relational": {a: u.made for a, u in relational.llm_usage_by_agent.items()},
                    "flat": {a: u.made for a, u in flat.llm_usage_by_agent.items()},
                },
                "ratio_relational_to_xsum_p2": round(
                    pipelines["litpipe_relational"]["calls"] / pipelines["xsum_p2"]["calls"], 3
                ),
                "ratio_flat_to_xsum_p1": round(
                    pipelines["litpipe_flat"]["calls"] / pipelines["xsum_p1"]["calls"], 3
                ),
                "second_run_calls": second.llm_usage.made,
                "seconds": round(seconds, 1),
            }
        )
    )


def _figures(usage: LLMUsage) -> dict[str, int]:
    return {"calls": usage.made, "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out}


def xsum_pipeline(questions: int, run: PapersRun, writer: str, analysis: bool) -> dict[str, int]:
    """X-Sum's calls for `questions` questions in all (K x N), and its tokens from the run's
    measured ones (single-view answers, the benchmark's setting): each answer at the mean of
    the run's answer calls, the summary as the run's writer, and (pipeline 2) the analysis as
    the run's insights and relationships calls together, and its plain summary."""
    usage = run.llm_usage_by_agent
    answers = usage["answers"]
    calls = questions + 1
    tokens_in = round(questions * answers.tokens_in / answers.made) + usage[writer].tokens_in
    tokens_out = round(questions * answers.tokens_out / answers.made) + usage[writer].tokens_out
    if analysis:
        extra = [usage[agent] for agent in (*ANALYSIS_AGENTS, "plain_summary") if agent in usage]
        calls += 2
        tokens_in += sum(u.tokens_in for u in extra)
        tokens_out += sum(u.tokens_out for u in extra)
    return {"calls": calls, "tokens_in": tokens_in, "tokens_out": tokens_out}


if __name__ == "__main__":
    main()
