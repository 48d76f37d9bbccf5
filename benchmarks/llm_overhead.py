"""What `LLMClient.complete` adds to a bare `litellm.acompletion`, and what a cache hit costs.

Both sides send the same requests to the same local stub server (litpipe_tests/stub_llm.py,
holding each request `--latency` seconds, as a provider would): `--calls` concurrent calls at
once (the client with llm.concurrency equal to them and its cache off), for each of the two
ways the client asks for structured output:

- `json_schema`: `openai/gpt-4o-mini`, a model litellm says takes a JSON-schema response format
  (and knows the price of, so the client also prices each call);
- `instructed`: `openai/stub`, a model litellm knows nothing of, told the schema in its system
  message.

The bare side sends exactly what the client sends (the schema instruction or response format
included, built before the clock starts) and neither parses nor validates the reply; it runs on
the loop where litellm's state lives, the client's model-call loop. The client is called as a
caller calls it, from the benchmark's own loop in the main thread: the difference is the
client's own work (the hop to its loop, the concurrency bound, parsing and validation, pricing,
the usage ledger). The sides alternate which goes first, round by round; the overhead ratio is
the median of the rounds' ratios, the other figures medians over the rounds. "Per call" is the
batch's wall time over its calls; "mean latency" is the mean time a caller waits for its call.
Target: the client's batch takes under 1.10x the bare one.

Then the cache: the same calls with the cache on, a first pass to fill it, then one call at a
time, each a hit (read, validated and recorded on the caller's thread).

Usage: python benchmarks/llm_overhead.py [--calls N] [--rounds R] [--latency S]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # litpipe_tests, for the stub server

# isort: off
# litpipe first: importing it keeps litellm from fetching its price list.
from litpipe.llm.client import (  # noqa: E402
    PLACEHOLDER_API_KEY,
    SCHEMA_INSTRUCTION,
    LLMClient,
    model_call_loop,
)
import litellm  # noqa: E402

# isort: on
from litpipe.llm.usage import UsageLedger  # noqa: E402
from litpipe.settings import Route, Settings  # noqa: E402
from litpipe_tests.stub_llm import StubLLM  # noqa: E402

_Item = TypeVar("_Item")
Batch = list[list[dict[str, str]]]
MODELS = {"json_schema": "openai/gpt-4o-mini", "instructed": "openai/stub"}
TARGET_RATIO = 1.10
SETTLE_S = 0.2


class Finding(BaseModel):
    claim: str
    evidence: list[str] = Field(min_length=1)
    confidence: int = Field(ge=1, le=100)


class Findings(BaseModel):
    paper_id: str
    findings: list[Finding] = Field(min_length=3)


def conversations(count: int, tag: str) -> list[list[dict[str, str]]]:
    abstract = "We study how proteins fold under stress and report three findings. " * 12
    return [
        [
            {"role": "system", "content": "You extract the key findings of a paper."},
            {"role": "user", "content": f"Paper {tag}-{n}. {abstract}"},
        ]
        for n in range(count)
    ]


def bare_request(route: Route, messages: list[dict[str, str]], timeout_s: float) -> dict[str, Any]:
    """What the client sends for `messages` (see LLMClient: the structured output part)."""
    schema = Findings.model_json_schema()
    request: dict[str, Any] = {
        "model": route.model,
        "temperature": route.temperature,
        "max_tokens": route.max_tokens,
        "timeout": timeout_s,
        "max_retries": 0,
        "drop_params": True,
        "api_base": route.api_base,
        "api_key": os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY,
    }
    if litellm.supports_response_schema(model=route.model):
        request["messages"] = messages
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "Findings", "schema": schema, "strict": False},
        }
    else:
        instruction = SCHEMA_INSTRUCTION.format(schema=json.dumps(schema, ensure_ascii=False))
        system = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        request["messages"] = [system, *messages[1:]]
    return request


@dataclass
class Timing:
    wall_s: float  # the whole batch
    cpu_s: float  # the process's CPU time over the batch (all threads, the stub's too)
    mean_latency_s: float  # what one caller waits for its call, on average


async def timed_calls(call: Callable[[_Item], Awaitable[object]], batch: Sequence[_Item]) -> Timing:
    """All of `batch` at once, each item one call."""

    async def one(item: _Item) -> float:
        started = time.perf_counter()
        await call(item)
        return time.perf_counter() - started

    wall, cpu = time.perf_counter(), time.process_time()
    latencies = await asyncio.gather(*(one(item) for item in batch))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Timing(wall, cpu, statistics.fmean(latencies))


async def compare(client: LLMClient, route: Route, calls: int, rounds: int) -> dict[str, Any]:
    timeout_s = client.llm.timeout_s

    async def bare(batch: Batch) -> Timing:
        # Built before the clock starts; timed on the loop where litellm's state lives (see
        # model_call_loop), so no hop between threads.
        requests = [bare_request(route, messages, timeout_s) for messages in batch]
        on_model_loop = timed_calls(lambda request: litellm.acompletion(**request), requests)
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(on_model_loop, model_call_loop())
        )

    async def complete(batch: Batch) -> Timing:
        # As a caller calls it: from its own loop, in another thread than the model calls.
        return await timed_calls(lambda m: client.complete(route, m, Findings), batch)

    async def complete_many(batch: Batch) -> Timing:
        wall, cpu = time.perf_counter(), time.process_time()
        await client.complete_many(route, batch, Findings)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return Timing(wall, cpu, wall)

    sides: dict[str, Callable[[Batch], Awaitable[Timing]]] = {
        "bare": bare,
        "complete": complete,
        "complete_many": complete_many,
    }
    for name, side in sides.items():  # warm-up: connections, litellm's first-call work
        await side(conversations(calls, f"warm-{name}"))
    timings: dict[str, list[Timing]] = {name: [] for name in sides}
    names = list(sides)
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            # litellm finishes some work of a call (its logging) after returning it: let that
            # end before the next batch, which would otherwise be charged for it.
            await asyncio.sleep(SETTLE_S)
            timings[name].append(await sides[name](conversations(calls, f"{name}-{round_number}")))

    def ratio(name: str, measure: Callable[[Timing], float]) -> float:
        # Within a round the sides ran one right after the other: their ratio is the least
        # disturbed by a load that comes and goes on the machine.
        pairs = zip(timings[name], timings["bare"], strict=True)
        return statistics.median(measure(mine) / measure(base) for mine, base in pairs)

    return {
        name: {
            "batch_ms": round(statistics.median(t.wall_s for t in timings[name]) * 1000, 2),
            "wall_per_call_ms": round(
                statistics.median(t.wall_s for t in timings[name]) * 1000 / calls, 3
            ),
            "cpu_per_call_ms": round(
                statistics.median(t.cpu_s for t in timings[name]) * 1000 / calls, 3
            ),
            "mean_latency_ms": round(
                statistics.median(t.mean_latency_s for t in timings[name]) * 1000, 1
            ),
            "wall_ratio": round(ratio(name, lambda t: t.wall_s), 3),
            "cpu_ratio": round(ratio(name, lambda t: t.cpu_s), 3),
        }
        for name in sides
    }


async def cache_hits(client: LLMClient, route: Route, calls: int) -> float:
    """Mean seconds of a cache hit, one call at a time, after a pass that fills the cache."""
    batch = conversations(calls, "cached")
    await asyncio.gather(*(client.complete(route, messages, Findings) for messages in batch))
    started = time.perf_counter()
    for messages in batch:
        await client.complete(route, messages, Findings)
    return (time.perf_counter() - started) / calls


async def measure(stub: StubLLM, home: Path, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for way, model in MODELS.items():
        settings = Settings(
            home=home / way,
            llm={"model": model, "api_base": stub.url, "concurrency": args.calls, "cache": False},
        )
        client = LLMClient(settings.llm, settings.paths, UsageLedger(home / f"{way}.jsonl"))
        route = settings.route("findings")
        sides = await compare(client, route, args.calls, args.rounds)
        usage = client.usage.summary()
        assert usage.failed == 0 and usage.made == 2 * args.calls * (args.rounds + 1)

        cached_client = LLMClient(
            settings.llm.model_copy(update={"cache": True}), settings.paths, UsageLedger()
        )
        hit_s = await cache_hits(cached_client, route, args.calls)
        assert cached_client.usage.summary().cached == args.calls

        results[way] = {"model": model, **sides, "cache_hit_ms": round(hit_s * 1000, 3)}
        print(f"{way} ({model}), cache hit {hit_s * 1000:.3f} ms:")
        for name, figures in sides.items():
            print(
                f"  {name:13} {figures['batch_ms']:7.1f} ms per batch, "
                f"{figures['wall_per_call_ms']:6.2f} ms/call wall, "
                f"{figures['cpu_per_call_ms']:6.2f} ms/call CPU, mean latency "
                f"{figures['mean_latency_ms']:6.1f} ms; against bare: wall x"
                f"{figures['wall_ratio']:.3f}, CPU x{figures['cpu_ratio']:.3f}"
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args(argv)
    print(
        f"{args.calls} concurrent calls per batch, stub latency {args.latency * 1000:.0f} ms, "
        f"{args.rounds} timed rounds; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as home, StubLLM(latency_s=args.latency) as stub:
        results = asyncio.run(measure(stub, Path(home), args))
    worst = max(result["complete"]["wall_ratio"] for result in results.values())
    print(f"complete(): worst wall ratio {worst:.3f} (target < {TARGET_RATIO})")
    print(
        json.dumps(
            {
                "benchmark": "llm_overhead",
                "calls": args.calls,
                "rounds": args.rounds,
                "stub_latency_s": args.latency,
                "ways": results,
                "overhead_ratio": worst,
                "target_max_ratio": TARGET_RATIO,
                "meets_target": worst < TARGET_RATIO,
                "cache_hit_ms": max(result["cache_hit_ms"] for result in results.values()),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "litellm": importlib.metadata.version("litellm"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
