"""litpipe's commands run as a user runs them, against a real model server: each command in its
own process, bounded in time, with what it asked of the model read from its usage ledger and
from the server's own counters.

Shared by `test_real_model.py` (which asserts) and `benchmarks/real_model.py` (which prints).
The model is whatever the server serves; with the bundled SmolLM2-135M its replies are a floor of
what the method does, not its quality.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from litpipe.llm.usage import CallRecord
from litpipe_tests.bundled import CORPUS, PDFS_BY_SIZE
from litpipe_tests.llama_server import LlamaServer

REPOSITORY = Path(__file__).parents[1]
LITPIPE = Path(sys.executable).parent / "litpipe"
ICLR = REPOSITORY / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"
LITQA2 = Path(__file__).parent / "data" / "litqa2" / "litqa2_subset_with_pdfs.jsonl"
IDEA = "Continual learning of new classes from few examples without forgetting old ones."
# What a command may take at most before it counts as hung (a small model on two cores).
COMMAND_TIMEOUT_S = 1200.0
# Fewer model calls than the defaults, so that the chain runs in minutes on two cores: one
# question per style, a two-pass MAIS loop with three diagnostic questions, five related-work
# candidates debated and one search query. And replies of 256 tokens at most: SmolLM2's valid
# replies took under 130, its unusable ones ran on to max_tokens (1,024 for an insight or a
# summary: eight of them took 307 of the chain's 411 s of decoding), so the cap cuts short only
# what fails anyway. The one-call analysis keeps its own 4,096, so that it does not fit the
# 2,048-token window and the insights and relationships are asked apart, as by default. And
# chunks of 128 tokens, half the embedder's ceiling: reading prompts is most of the server's
# time (about 140 tokens/s on one thread of these cores), and every passage a prompt quotes
# (answers, the support check's claims, the summaries of `ask`) is one chunk.
QUICK_SETTINGS = {
    "LITPIPE_INGEST__CHUNK_TOKENS": "128",
    "LITPIPE_SYNTHESIS__QUESTIONS_PER_STYLE": "1",
    "LITPIPE_QUERY_SUMMARY__MAX_ITERATIONS": "2",
    "LITPIPE_QUERY_SUMMARY__QUESTIONS": "3",
    "LITPIPE_RELATED_WORK__CANDIDATES": "5",
    "LITPIPE_RELATED_WORK__TOP_K": "3",
    "LITPIPE_RELATED_WORK__SEARCH_QUERIES": "1",
    "LITPIPE_LLM__MAX_TOKENS": "256",
    "LITPIPE_LLM__AGENTS__ANALYSIS__MAX_TOKENS": "4096",
}
_CONTEXT_ERROR = re.compile(r"context (window|size|length)|exceeds? the available", re.I)


@dataclass
class CommandRun:
    """One command: how it ended, how long it took, and the model calls it recorded."""

    name: str
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    calls: list[CallRecord] = field(default_factory=list)
    server_tokens_generated: int = 0

    def by_agent(self) -> dict[str, dict[str, int]]:
        """Per agent (stage): calls made, cached, failed, offline fallbacks, tokens in and out."""
        table: dict[str, Counter[str]] = {}
        for call in self.calls:
            row = table.setdefault(call.agent, Counter())
            if call.fallback:
                row["fallbacks"] += 1
                continue
            row["made"] += int(not call.cached and not call.failed)
            row["cached"] += int(call.cached)
            row["failed"] += int(call.failed)
            row["tokens_in"] += call.tokens_in
            row["tokens_out"] += call.tokens_out
        return {agent: dict(row) for agent, row in sorted(table.items())}

    @property
    def context_errors(self) -> list[str]:
        return [c.error for c in self.calls if c.error and _CONTEXT_ERROR.search(c.error)]

    @property
    def retries(self) -> int:
        return sum(call.retries for call in self.calls)

    @property
    def fallbacks(self) -> list[CallRecord]:
        return [call for call in self.calls if call.fallback]

    def summary(self) -> dict[str, object]:
        return {
            "command": self.name,
            "returncode": self.returncode,
            "seconds": round(self.seconds, 1),
            "server_tokens_generated": self.server_tokens_generated,
            "context_errors": len(self.context_errors),
            "retries": self.retries,
            "fallbacks": len(self.fallbacks),
            "by_agent": self.by_agent(),
        }


# The server's own count, so that "no request" does not rest on litpipe's accounting alone.
SERVER_ARGUMENTS = ("--metrics",)


def tokens_generated(server: LlamaServer) -> int:
    """Tokens the server has generated since it started (its /metrics, under --metrics)."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=30) as response:
        metrics = response.read().decode()
    found = re.search(r"^llamacpp:tokens_predicted_total (\S+)$", metrics, re.M)
    assert found is not None, "the server was not started with --metrics"
    return int(float(found.group(1)))


def calls_since(home: Path, moment: datetime) -> list[CallRecord]:
    """The model calls the usage ledgers of `home` recorded from `moment` on."""
    calls = []
    for ledger in (home / "usage").rglob("*.jsonl"):
        for line in ledger.read_text("utf-8").splitlines():
            if line.strip():
                call = CallRecord.model_validate_json(line)
                if call.at >= moment:
                    calls.append(call)
    return calls


class RealChain:
    """The commands of one home against one server, run one at a time."""

    def __init__(self, server: LlamaServer, work: Path, quick: bool = True) -> None:
        self.server = server
        self.work = work
        self.home = work / "home"
        self.environment = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            # A small model on two busy cores writes a 1,024-token reply in over 120 s (the
            # default timeout): a user of such a server raises it, as here.
            "LITPIPE_LLM__TIMEOUT_S": "900",
            **(QUICK_SETTINGS if quick else {}),
        }

    def run(self, name: str, *arguments: str, embedder: Path | None = None) -> CommandRun:
        """`litpipe <arguments>` on this home with the server's model, in its own process."""
        command = [
            str(LITPIPE),
            *arguments,
            "--home",
            str(self.home),
            "--model",
            self.server.model,
            "--api-base",
            self.server.api_base,
            *(["--embedder", str(embedder)] if embedder is not None else []),
        ]
        generated_before = tokens_generated(self.server)
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        finished = subprocess.run(
            command,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        return CommandRun(
            name=name,
            returncode=finished.returncode,
            seconds=time.perf_counter() - started,
            stdout=finished.stdout,
            stderr=finished.stderr,
            calls=calls_since(self.home, started_at),
            server_tokens_generated=tokens_generated(self.server) - generated_before,
        )

    # The inputs, made in the work folder.

    def three_pdfs(self) -> Path:
        folder = self.work / "three-pdfs"
        folder.mkdir(exist_ok=True)
        for pdf in PDFS_BY_SIZE[:3]:
            shutil.copy(pdf, folder)
        return folder

    def iclr_abstracts(self, rows: int = 10) -> Path:
        table = self.work / "iclr-10.csv"
        with ICLR.open(newline="", encoding="utf-8") as source:
            reader = csv.DictReader(source)
            kept = [dict(row) for _, row in zip(range(rows), reader, strict=False)]
        with table.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=["id", "title", "abstract"])
            writer.writeheader()
            writer.writerows({key: row[key] for key in ("id", "title", "abstract")} for row in kept)
        return table

    def mais_questions(self, examples: int = 2) -> tuple[Path, Path]:
        """The first `examples` LitQA2 questions whose paper ships in the bundled corpus, and is
        not one of `three_pdfs` (so that `eval mais` builds papers of its own through the model,
        not ones the run built first): their JSONL and a folder of their PDFs."""
        run_first = {pdf.name for pdf in PDFS_BY_SIZE[:3]}
        bundled = {pdf.name for pdf in CORPUS.glob("*.pdf")} - run_first
        records = [json.loads(line) for line in LITQA2.read_text("utf-8").splitlines() if line]
        chosen = [record for record in records if record["pdf_file"] in bundled][:examples]
        corpus = self.work / "mais-corpus"
        corpus.mkdir(exist_ok=True)
        for record in chosen:
            shutil.copy(CORPUS / record["pdf_file"], corpus)
        dataset = self.work / "mais.jsonl"
        dataset.write_text("".join(json.dumps(r) + "\n" for r in chosen), "utf-8")
        return dataset, corpus


def chain_commands(chain: RealChain) -> dict[str, list[str]]:
    """The issue's chain, by name: each command's arguments (their inputs made in the work
    folder). `ask` asks of a paper of `run three PDFs`, so it comes after it."""
    abstracts = str(chain.iclr_abstracts(10))
    dataset, corpus = chain.mais_questions(2)
    return {
        "run three PDFs": ["run", str(chain.three_pdfs()), "--collection", "three-pdfs"],
        "run ten abstracts": ["run", abstracts, "--collection", "iclr-10"],
        "ask": ["ask", "--paper", PDFS_BY_SIZE[0].stem, "What does the paper find?"],
        "related-work": [
            "related-work",
            "--abstracts",
            abstracts,
            "--idea",
            IDEA,
            "--out",
            str(chain.work / "related.md"),
        ],
        "eval mais": ["eval", "mais", "--dataset", str(dataset), "--corpus", str(corpus)],
    }
