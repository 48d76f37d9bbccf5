"""The whole chain through a real model server: llama.cpp's llama-server, a 2,048-token window,
one decoding slot, SmolLM2-135M-Instruct (a weak model: its replies are often unusable, which is
the point), `--structured-output auto`.

Each command runs as a user runs it, in its own process, bounded in time (it must hang nowhere),
and must exit 0 with everything built: an item the model cannot serve is written offline and
marked, never lost; no request overflows the window; no error that is not transient is retried;
a rerun asks the server only the items it wrote offline the first time (a failure is never
served to a later run), and with none, nothing (its own token counter does not move). Each test
prints the command's wall time and its calls and tokens per stage (`pytest -rP` shows them).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import litellm
import pytest

from litpipe.llm.client import structured_request
from litpipe.schemas import RunReport
from litpipe_tests.llama_server import XDIST_GROUP, LlamaServer, skip_unless_available
from litpipe_tests.real_chain import SERVER_ARGUMENTS, CommandRun, RealChain, chain_commands
from litpipe_tests.test_agent_replies import agent_classes

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group(XDIST_GROUP)]

# The two longest commands (ten abstracts, two MAIS loops: about 60 model calls between them)
# would take `make test` past its 15 minutes on two cores: they run where this is set, and
# `benchmarks/real_model.py --all` runs them with the rest and prints their figures.
LONG = "LITPIPE_REAL_MODEL_LONG"
long_command = pytest.mark.skipif(
    os.environ.get(LONG) != "1", reason=f"a long command through the real model: set {LONG}=1"
)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealChain]:
    skip_unless_available()
    with LlamaServer(n_ctx=2048, slots=1, extra_args=SERVER_ARGUMENTS) as server:
        yield RealChain(server, tmp_path_factory.mktemp("real-chain"))


def shown(run: CommandRun) -> CommandRun:
    """Prints the run's figures, and fails with its stderr if it did not exit 0."""
    print(json.dumps(run.summary(), indent=1))
    assert run.returncode == 0, f"{run.name} exited {run.returncode}:\n{run.stderr[-4000:]}"
    return run


def assert_served_honestly(run: CommandRun, home: Path) -> None:
    """No context error, no retry, and every fallback item marked where its output is kept."""
    assert run.context_errors == [], run.context_errors
    assert run.retries == 0, [c.error for c in run.calls if c.retries]
    assert any(not call.cached and not call.failed for call in run.calls), "no model reply"
    if run.fallbacks:
        kept = " ".join(p.read_text("utf-8") for p in (home / "artifacts").rglob("*.json"))
        assert "offline fallback for" in kept


def assert_built(chain: RealChain, collection: str, papers: int) -> RunReport:
    outputs = chain.home / "outputs" / collection
    report = RunReport.model_validate_json((outputs / "report.json").read_text("utf-8"))
    assert (report.papers, report.failed_papers, report.collection_failure) == (papers, [], None)
    assert (outputs / "synthesis.md").read_text("utf-8").strip()
    assert (outputs / "synthesis.html").is_file()
    return report


# The agents of these commands in the order their stages run: what a stage asks again changes
# only what runs after it.
STAGE_ORDER = (
    "paper_abstract",
    "paper_questions",
    "relevance",
    "debate",
    "answers",
    "massrag_summarizer",
    "massrag_extractor",
    "massrag_reasoner",
    "massrag_reconcile",
    "cross_paper_questions",
    "insights",
    "relationships",
    "analysis",
    "followups",
    "synthesis",
    "plain_summary",
    "claim_judge",
    "coherence_judge",
)


def assert_rerun_asks_only_what_fell_back(
    chain: RealChain, first: CommandRun, *arguments: str
) -> None:
    """The same command again: the earliest stage whose items the offline engine wrote in the
    model's place asks those items again (a failure is never served to a later run), each
    once, and no stage before it asks anything; a stage after it may ask what the new replies
    changed. Without such items the server generates nothing."""
    again = shown(chain.run(f"{first.name} (again)", *arguments))
    asked = Counter(call.agent for call in again.calls if not call.cached and not call.fallback)
    fell_back = Counter(call.agent for call in first.fallbacks)
    if not fell_back:
        assert again.server_tokens_generated == 0 and not asked
        return

    def stage(agent: str) -> int:
        return STAGE_ORDER.index(agent) if agent in STAGE_ORDER else len(STAGE_ORDER)

    earliest = min(fell_back, key=stage)
    assert all(stage(agent) >= stage(earliest) for agent in asked), (asked, fell_back)
    assert asked[earliest] <= fell_back[earliest], (asked, fell_back)


@pytest.fixture(scope="module")
def three_pdfs_run(chain: RealChain) -> CommandRun:
    """The three PDFs run once per module, whichever test needs them first: `ask` asks of one
    of their papers, and the test order is shuffled."""
    return chain.run("run three PDFs", *chain_commands(chain)["run three PDFs"])


def test_run_on_three_bundled_pdfs(chain: RealChain, three_pdfs_run: CommandRun) -> None:
    arguments = chain_commands(chain)["run three PDFs"]
    run = shown(three_pdfs_run)
    report = assert_built(chain, "three-pdfs", 3)
    assert_served_honestly(run, chain.home)
    counted = sum(usage.fallbacks for usage in report.llm_calls_by_agent.values())
    assert counted == len(run.fallbacks)
    assert_rerun_asks_only_what_fell_back(chain, run, *arguments)


@long_command
def test_run_on_ten_iclr_abstracts(chain: RealChain) -> None:
    arguments = chain_commands(chain)["run ten abstracts"]
    run = shown(chain.run("run ten abstracts", *arguments))
    assert_built(chain, "iclr-10", 10)
    assert_served_honestly(run, chain.home)
    assert_rerun_asks_only_what_fell_back(chain, run, *arguments)


def test_ask(chain: RealChain, three_pdfs_run: CommandRun) -> None:
    assert three_pdfs_run.returncode == 0, "the papers `ask` asks of were not built"
    arguments = chain_commands(chain)["ask"]
    run = shown(chain.run("ask", *arguments))
    assert_served_honestly(run, chain.home)
    assert_rerun_asks_only_what_fell_back(chain, run, *arguments)


def test_related_work(chain: RealChain) -> None:
    arguments = chain_commands(chain)["related-work"]
    run = shown(chain.run("related-work", *arguments))
    assert (chain.work / "related.md").read_text("utf-8").strip()
    assert_served_honestly(run, chain.home)
    assert_rerun_asks_only_what_fell_back(chain, run, *arguments)


@long_command
def test_eval_mais_on_two_examples(chain: RealChain) -> None:
    arguments = chain_commands(chain)["eval mais"]
    run = shown(chain.run("eval mais", *arguments))
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert (figures["runs"], figures["failed"]) == (2, 0)
    assert_served_honestly(run, chain.home)


def test_every_agents_reply_schema_is_taken_by_the_real_server_as_a_grammar(
    chain: RealChain,
) -> None:
    """llama-server turns a json_schema response format into a grammar, and refuses (HTTP 400)
    a schema it cannot turn into one: each agent's schema, as litpipe sends it, is taken (a
    few tokens are decoded under it)."""
    refused = {}
    for agent in agent_classes():
        _, format_of = structured_request([], agent.reply_schema, "json_schema")
        try:
            litellm.completion(
                model=chain.server.model,
                api_base=chain.server.api_base,
                api_key="not-needed",
                messages=[{"role": "user", "content": "Reply with JSON."}],
                response_format=format_of,
                max_tokens=4,
                max_retries=0,
            )
        except litellm.APIError as error:
            refused[agent.name] = str(error)[:300]
    assert refused == {}
