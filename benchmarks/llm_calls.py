"""Model calls and tokens per stage for the whole chain, against X-Sum's count for the same corpus.

Runs `litpipe run` in-process on the bundled biology corpus (or `--source`) with every agent
routed to the local stub server (litpipe_tests/stub_llm.py, answering each agent with a valid,
scripted reply: litpipe_tests/stub_agents.py), in a fresh home with the cache on, and reads the
run's usage per agent. X-Sum's pipeline makes K x N + 1 calls for N papers and K questions each
(one answer per question, one summary), its relational version 2 more (the analysis and the
plain summary); litpipe's figure adds what the method asks for beyond that: the questions
themselves, comparative questions and their answers, one insights call per paper, follow-ups,
and the writer's map or tree calls when the evidence does not fit. A second run of the same
corpus shows what the cache leaves: it must make no call.

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
from litpipe.settings import DEFAULT_EMBEDDER  # noqa: E402
from litpipe_tests.stub_agents import serve_every_agent  # noqa: E402
from litpipe_tests.stub_llm import StubLLM, stub_settings  # noqa: E402


def run_once(home: Path, stub: StubLLM, source: Path, embedder: str) -> tuple[PapersRun, float]:
    settings = stub_settings(home, stub, ingest={"embedder": embedder}, corpus_roots=[])
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

    with StubLLM() as stub, tempfile.TemporaryDirectory() as home:
        serve_every_agent(stub)
        first, seconds = run_once(Path(home), stub, args.source, args.embedder)
        second, _ = run_once(Path(home), stub, args.source, args.embedder)

    papers = len(first.outcomes)
    questions_per_paper = round(sum(o.questions for o in first.outcomes) / papers, 2)
    xsum = round(questions_per_paper * papers) + 1
    per_agent = {
        agent: {"calls": usage.made, "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out}
        for agent, usage in first.llm_usage_by_agent.items()
    }
    total = first.llm_usage
    print(f"{papers} papers, {questions_per_paper} questions each, in {seconds:.1f} s")
    print(f"{'agent':<20}{'calls':>7}{'tokens in':>12}{'tokens out':>12}")
    for agent, figures in per_agent.items():
        print(
            f"{agent:<20}{figures['calls']:>7}{figures['tokens_in']:>12}{figures['tokens_out']:>12}"
        )
    print(f"{'total':<20}{total.made:>7}{total.tokens_in:>12}{total.tokens_out:>12}")
    print(f"X-Sum for the same N and K: {xsum} calls (K x N + 1), relational {xsum + 2}")
    print(f"second run: {second.llm_usage.made} calls made, {second.llm_usage.cached} cached")
    print(
        json.dumps(
            {
                "papers": papers,
                "questions_per_paper": questions_per_paper,
                "calls_total": total.made,
                "tokens_in_total": total.tokens_in,
                "tokens_out_total": total.tokens_out,
                "calls_per_agent": {agent: f["calls"] for agent, f in per_agent.items()},
                "xsum_calls": xsum,
                "xsum_relational_calls": xsum + 2,
                "ratio_to_relational_xsum": round(total.made / (xsum + 2), 3),
                "second_run_calls": second.llm_usage.made,
                "seconds": round(seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
