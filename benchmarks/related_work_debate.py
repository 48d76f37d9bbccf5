"""Debate scoring of a related-work request's candidates: calls in flight and wall time against
the concurrency bound.

`--abstracts` abstracts of the bundled ICLR table (default 300) are each debated against one
research idea through the LLM client (`score_references`, the related-work workflow's own
path: one batch, `llm.concurrency` calls in flight at most), the model being the local stub
server (litpipe_tests/stub_llm.py) holding every request `--delay` seconds. For each bound of
`--bounds` (default 1, 8, 16) a fresh stub and client (cache off) score them all; the stub counts
the most requests it held at once.

Reported per bound: the most calls in flight (must not exceed the bound), the wall time, the
ideal time ceil(abstracts / bound) x delay and the ratio of the two, and the speed-up against
bound 1 with its efficiency (speed-up / bound). A call also costs a fixed time beyond the stub's
delay (litellm, HTTP and the client's own work: the "floor", measured first as the time a call
takes with no delay, one at a time); `ratio_to_model` compares the wall time with
ceil(abstracts / bound) x (delay + floor). The time is proportional to abstracts / bound when
these ratios stay flat across bounds.

Usage: python benchmarks/related_work_debate.py [--abstracts N] [--bounds 1,8,16] [--delay S]
       [--floor-calls N]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # litpipe_tests, for the stub server

# litpipe first: importing it keeps litellm from fetching its price list.
from litpipe.agents.asker import Asker  # noqa: E402
from litpipe.llm.client import LLMClient  # noqa: E402
from litpipe.llm.prompts import PromptLibrary  # noqa: E402
from litpipe.llm.usage import UsageLedger  # noqa: E402
from litpipe.schemas import RetrievedReference  # noqa: E402
from litpipe.settings import Settings  # noqa: E402
from litpipe.workflows.related_work import load_references, score_references  # noqa: E402
from litpipe_tests.stub_llm import StubLLM  # noqa: E402

TABLE = ROOT / "corpora" / "iclr-abstracts" / "iclr_abstracts.csv"
IDEA = (
    "We propose a variational autoencoder whose posterior does not collapse, using adversarial "
    "training to learn disentangled representations."
)
DEBATE_REQUEST = "Debate whether the passage is relevant"
_PASSAGE_ID = re.compile(r"Passage (\S+):\n<paper>")


def scripted_debate(body: dict[str, Any]) -> dict[str, Any]:
    """A valid debate reply, its probability fixed by the reference's id."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    match = _PASSAGE_ID.search(user)
    reference_id = match.group(1) if match else "?"
    return {
        "arguments_for": [f"{reference_id} is on topic."],
        "quotes_for": [],
        "arguments_against": ["It studies another setting."],
        "quotes_against": [],
        "probability": 1 + sum(reference_id.encode()) % 100,
    }


def candidates(count: int) -> list[RetrievedReference]:
    references = load_references(TABLE).references
    if count > len(references):
        raise SystemExit(f"--abstracts {count}: the bundled table has {len(references)}")
    return [
        RetrievedReference(reference=reference, retrieval_rank=rank, fused_score=1 / rank)
        for rank, reference in enumerate(references[:count], 1)
    ]


def settings_for(home: Path, stub: StubLLM, bound: int) -> Settings:
    return Settings(
        home=home,
        llm={
            "model": "openai/stub",
            "api_base": stub.url,
            "concurrency": bound,
            "cache": False,  # every abstract a model call, every run
        },
    )


def warm_up(home: Path, delay: float) -> None:
    """litellm's first-call work (imports, connection set-up), kept out of the timed runs."""
    with StubLLM(latency_s=delay) as stub:
        stub.respond(DEBATE_REQUEST, scripted_debate)
        settings = settings_for(home, stub, 4)
        client = LLMClient(settings.llm, settings.paths, UsageLedger())
        asker = Asker(settings.llm, client, PromptLibrary(None))
        score_references(IDEA, candidates(8), asker)


def measure(
    home: Path, found: list[RetrievedReference], bound: int, delay: float, floor: float = 0.0
) -> dict[str, Any]:
    with StubLLM(latency_s=delay) as stub:
        stub.respond(DEBATE_REQUEST, scripted_debate)
        settings = settings_for(home, stub, bound)
        client = LLMClient(settings.llm, settings.paths, UsageLedger())
        asker = Asker(settings.llm, client, PromptLibrary(None))
        started = time.perf_counter()
        scored = score_references(IDEA, found, asker)
        wall = time.perf_counter() - started
        requests, in_flight = stub.request_count, stub.max_in_flight
    usage = client.usage.summary()
    assert len(scored) == len(found) and usage.failed == 0 and requests == len(found)
    rounds = math.ceil(len(found) / bound)
    ideal, model = rounds * delay, rounds * (delay + floor)
    return {
        "bound": bound,
        "requests": requests,
        "max_in_flight": in_flight,
        "within_bound": in_flight <= bound,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio_to_ideal": round(wall / ideal, 3) if ideal else None,
        "model_s": round(model, 3),
        "ratio_to_model": round(wall / model, 3) if model else None,
        "ms_per_abstract": round(wall * 1000 / len(found), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstracts", type=int, default=300)
    parser.add_argument("--bounds", default="1,8,16", help="comma-separated; 1 is the baseline")
    parser.add_argument("--delay", type=float, default=0.05, help="the stub's seconds a request")
    parser.add_argument("--floor-calls", type=int, default=40, help="calls measuring the floor")
    args = parser.parse_args(argv)
    bounds = sorted({int(bound) for bound in args.bounds.split(",")} | {1})
    found = candidates(args.abstracts)
    print(
        f"debate scoring of {len(found)} abstracts, stub delay {args.delay * 1000:.0f} ms a "
        f"request, bounds {', '.join(map(str, bounds))}; {os.cpu_count()} CPUs"
    )
    results = []
    with tempfile.TemporaryDirectory() as home:
        warm_up(Path(home) / "warm-up", args.delay)
        floor_run = measure(Path(home) / "floor", found[: args.floor_calls], 1, 0.0)
        floor = floor_run["wall_s"] / floor_run["requests"]
        print(
            f"floor: {floor * 1000:.1f} ms a call beyond the stub's delay "
            f"({floor_run['requests']} calls, one at a time)"
        )
        for bound in bounds:
            results.append(measure(Path(home) / f"bound-{bound}", found, bound, args.delay, floor))
    baseline = results[0]["wall_s"]
    for result in results:
        result["speedup"] = round(baseline / result["wall_s"], 2)
        result["efficiency"] = round(result["speedup"] / result["bound"], 3)
        print(
            f"  bound {result['bound']:3}: {result['requests']} calls, at most "
            f"{result['max_in_flight']} in flight, {result['wall_s']:7.3f} s "
            f"(ideal {result['ideal_s']:6.3f} s, x{result['ratio_to_ideal'] or 0:.3f}; with the "
            f"floor {result['model_s']:6.3f} s, x{result['ratio_to_model'] or 0:.3f}), "
            f"{result['ms_per_abstract']:6.2f} ms an abstract, speed-up x{result['speedup']:.2f} "
            f"(efficiency {result['efficiency']:.2f})"
        )
    within = all(result["within_bound"] for result in results)
    print(f"never more calls in flight than the bound: {within}")
    print(
        json.dumps(
            {
                "benchmark": "related_work_debate",
                "abstracts": len(found),
                "stub_delay_s": args.delay,
                "floor_ms_per_call": round(floor * 1000, 2),
                "results": results,
                "within_bound": within,
                "max_ratio_to_ideal": max(result["ratio_to_ideal"] or 0 for result in results),
                "max_ratio_to_model": max(result["ratio_to_model"] or 0 for result in results),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "litellm": importlib.metadata.version("litellm"),
            }
        )
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
