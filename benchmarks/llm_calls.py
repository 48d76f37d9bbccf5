"""Model calls and input tokens of a whole run, litpipe's two synthesis methods against X-Sum's
two pipelines on the same papers, N and K, step by step, X-Sum's question generation included.

Runs `litpipe run` in-process on the bundled biology corpus (or `--source`, its first
`--papers`), in a fresh home with the cache on, and reads the run's usage per agent: once with
the default settings (`synthesis.method = "relational"`, X-Sum's pipeline 2), once more in the
same home (the cache must leave no call), once in a fresh home with `synthesis.method = "flat"`
(pipeline 1), and once with the extras on (`synthesis.cross_paper_questions = 4`,
`synthesis.follow_up_questions = 2`), to show what they add. Every agent is routed to the local
stub server (litpipe_tests/stub_llm.py, answering each agent from its schema with a valid
scripted reply: litpipe_tests/stub_agents.py), or with `--real-server` to a real one:
llama.cpp's llama-server with SmolLM2-135M-Instruct (litpipe_tests/llama_server.py), whose
figures are a floor of the method's cost, not a measure of its quality.

X-Sum's calls (Achkar et al., "Ask, Retrieve, Summarize", 2025, and the relational pipeline 2
built on it that docs/design.md describes), for N papers and K questions each:

- per paper: one call writing its K questions from its title and abstract; one answer per
  question from its 3 best passages (K calls);
- per collection, pipeline 1: one summary over every question-and-answer pair;
- pipeline 2 instead: one relationship analysis (an insight per pair, typed relationships,
  theme, narrative), the summary in three parts (the narrative's spine, the pairs by paper, the
  relationship map) and its plain-language version.

So pipeline 1 makes N x (K + 1) + 1 calls and pipeline 2 N x (K + 1) + 3. X-Sum is given its
abstracts (litpipe writes one with a model only for a paper without one: its own row). X-Sum's
input tokens are its calls' prompts, built by litpipe's prompt code (its wording, held equal)
from this run's outputs with the method's inputs: each paper's title and abstract, each of its
own questions with its 3 best passages, the pairs, the analysis, the summary; counted as the
server counts them (the stub: characters / 4 of the JSON messages; the real server: its
tokenizer over its chat template). Its output tokens are litpipe's mean per call of the step.

A call is one sent: made, or failed (a reply that could not be used, written offline instead,
costs its tokens all the same). Extras beyond the method are their own rows, left out of the
comparison: comparative questions, follow-up questions, reranking by a model, and the judges
grading the syntheses (claim_judge, coherence_judge: a check of the output, not a step of the
method).

Usage: python benchmarks/llm_calls.py [--source DIR] [--papers N] [--embedder NAME_OR_PATH]
       [--no-extras] [--real-server [--n-ctx TOKENS]]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # litpipe_tests, for the servers and the stub's scripted agents

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pydantic import BaseModel  # noqa: E402

from litpipe.agents.answers import answer_questions  # noqa: E402
from litpipe.agents.asker import Asker  # noqa: E402
from litpipe.agents.paper_questions import paper_questions_from  # noqa: E402
from litpipe.agents.plain_summary import write_plain_summary  # noqa: E402
from litpipe.agents.relationship_analysis.analysis import analysed, analysis_input  # noqa: E402
from litpipe.ingest.sources import discover  # noqa: E402
from litpipe.llm.prompts import PromptLibrary  # noqa: E402
from litpipe.runtime.runner import PapersRun, open_instance, register, run_papers  # noqa: E402
from litpipe.schemas import (  # noqa: E402
    LLMUsage,
    PaperAbstract,
    PaperAnswers,
    PaperEvidence,
    QuestionEvidence,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.settings import DEFAULT_EMBEDDER, Route, Settings  # noqa: E402
from litpipe.workflows.synthesis import write_synthesis  # noqa: E402
from litpipe_tests.stub_agents import answer_as_agent, serve_every_agent  # noqa: E402
from litpipe_tests.stub_llm import StubLLM, example_from_schema  # noqa: E402

T = TypeVar("T", bound=BaseModel)

# X-Sum's passages per question (docs/design.md: ~100 candidates, reranked, the top 3 kept).
XSUM_PASSAGES = 3
# The method's steps, and the litpipe agents that make each.
STEPS: dict[str, tuple[str, ...]] = {
    "abstracts": ("paper_abstract",),
    "questions": ("paper_questions",),
    "answers": (
        "answers",
        "massrag_summarizer",
        "massrag_extractor",
        "massrag_reasoner",
        "massrag_reconcile",
        "massrag_candidate",
        "massrag_compare",
    ),
    "analysis": ("analysis", "insights", "relationships"),
    "summary": (
        "synthesis",
        "synthesis_flat",
        "paper_summary",
        "cluster_summary",
        "refine_summary",
    ),
    "plain summary": ("plain_summary",),
}
# Beyond the method: their own rows, out of the comparison.
EXTRAS: dict[str, tuple[str, ...]] = {
    "comparative questions": ("cross_paper_questions",),
    "follow-up questions": ("followups",),
    "reranking by a model": ("relevance", "debate"),
    "grading (judges)": ("claim_judge", "coherence_judge"),
}
# The answers to comparative and follow-up questions go through `answers` too.
EXTRA_ANSWERS = "answers to extra questions"
# The extras as a user turns them on.
EXTRAS_ON = {"cross_paper_questions": 4, "follow_up_questions": 2}

Counter = Callable[[list[dict[str, str]]], int]


def stub_tokens(messages: list[dict[str, str]]) -> int:
    """A request's prompt tokens as the stub server counts them (litpipe_tests/stub_llm.py)."""
    return max(1, len(json.dumps(messages)) // 4)


# --- the runs ------------------------------------------------------------------------------


def run_once(settings: Settings, source: Path) -> tuple[PapersRun, float]:
    instance = open_instance(settings.llm, settings.paths)
    started = time.perf_counter()
    run = run_papers(
        settings, instance, register(settings.paths, instance, discover(source, "bench"))
    )
    if run.collection_failure or any(o.status == "failed" for o in run.outcomes):
        raise SystemExit(f"the run failed: {run.collection_failure or run.outcomes}")
    return run, time.perf_counter() - started


def settings_for(home: Path, route: dict[str, Any], embedder: str, **synthesis: Any) -> Settings:
    return Settings(
        home=home,
        llm=route,
        ingest={"embedder": embedder},
        synthesis=synthesis,
        corpus_roots=[],
    )


@contextmanager
def papers_of(source: Path, papers: int | None) -> Iterator[Path]:
    """`source`, or a folder holding its first `papers` PDFs (by name)."""
    if papers is None:
        yield source
        return
    if not source.is_dir():
        raise SystemExit("--papers takes a folder of PDFs as --source")
    chosen = sorted(source.rglob("*.pdf"))[:papers]
    with tempfile.TemporaryDirectory() as folder:
        for pdf in chosen:
            shutil.copy(pdf, Path(folder) / pdf.name)
        yield Path(folder)


# --- X-Sum's calls, built from a run's outputs ---------------------------------------------


class Recorder:
    """Stands in for the LLM client: counts each request's prompt tokens (`count`) by agent,
    sends nothing, and answers with a valid reply built from the prompt (the stub's)."""

    def __init__(self, count: Counter) -> None:
        self.count = count
        self.tokens: dict[str, list[int]] = {}

    def _reply(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        self.tokens.setdefault(route.agent, []).append(self.count(messages))
        json_schema = schema.model_json_schema()
        body = {
            "messages": messages,
            "response_format": {"type": "json_schema", "json_schema": {"schema": json_schema}},
        }
        try:
            return schema.model_validate(answer_as_agent(body))
        except ValueError:
            return schema.model_validate(example_from_schema(json_schema))

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        return self._reply(route, messages, schema)

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T]:
        return [self._reply(route, messages, schema) for messages in list_of_messages]

    complete_each_sync = complete_many_sync

    def complete_batches_sync(
        self, batches: Sequence[tuple[Route, Sequence[list[dict[str, str]]], type[BaseModel]]]
    ) -> list[list[BaseModel]]:
        return [self.complete_many_sync(*batch) for batch in batches]


def _outputs(home: Path, asset: str, model: type[T]) -> list[T]:
    return [
        model.model_validate_json(path.read_text(encoding="utf-8"))
        for path in sorted((home / "artifacts" / asset).rglob("*.json"))
    ]


def xsum_prompt_tokens(home: Path, settings: Settings, count: Counter) -> dict[str, list[int]]:
    """Each of X-Sum's calls' prompt tokens, by step (`questions`, `answers`, `analysis`,
    `summary p2`, `plain summary`, `summary p1`), built from the run in `home` with the
    method's inputs (its papers' own questions, 3 passages each, no extras)."""
    abstracts = {a.paper_id: a for a in _outputs(home, "paper_abstract", PaperAbstract)}
    evidence = _outputs(home, "question_evidence", PaperEvidence)
    answers = {a.paper_id: a for a in _outputs(home, "paper_answers", PaperAnswers)}
    (analysis,) = _outputs(home, "relationship_analysis", RelationshipAnalysis)
    (expert,) = _outputs(home, "synthesis", Synthesis)
    titles = {paper: abstracts[paper].title for paper in analysis.papers}
    own = {
        paper: PaperAnswers(
            paper_id=paper,
            mode="single",
            engine="x-sum",
            answers=[a for a in answers[paper].answers if a.question.paper_id == paper],
        )
        for paper in analysis.papers
    }
    # X-Sum's analysis knows no comparative or follow-up question.
    method_analysis = analysis.model_copy(
        update={
            "follow_ups": [],
            "insights": [i for i in analysis.insights if i.paper_id],
        }
    )
    method = settings.model_copy(
        update={
            "synthesis": settings.synthesis.model_copy(
                update={"answer_mode": "single", "pattern": "stuff"}
            )
        }
    )
    flat = method.model_copy(
        update={"synthesis": method.synthesis.model_copy(update={"method": "flat"})}
    )
    prompts = PromptLibrary(settings.llm.prompts_dir)
    steps: dict[str, Recorder] = {}

    def step(name: str) -> Asker:
        """The asker of one of X-Sum's steps, its calls recorded under `name`."""
        steps[name] = Recorder(count)
        return Asker(method.llm, steps[name], prompts)

    questions = step("questions")
    for paper in analysis.papers:
        paper_questions_from(
            abstracts[paper], questions, per_style=method.synthesis.questions_per_style
        )
    items = [
        QuestionEvidence(
            question=item.question, chunks=item.chunks[:XSUM_PASSAGES], reranked=item.reranked
        )
        for paper in evidence
        if paper.paper_id in own
        for item in paper.questions
        if item.question.paper_id == paper.paper_id
    ]
    answer_questions(items, method.synthesis.answer_mode, step("answers"))
    pairs = [answer for paper in analysis.papers for answer in own[paper].answers]
    analysed(analysis_input(analysis.collection, pairs, titles), step("analysis"))
    write_synthesis(
        method_analysis,
        own,
        None,
        titles,
        method.synthesis,
        method.ingest,
        method.paths,
        step("summary p2"),
    )
    write_plain_summary(method_analysis, expert, titles, step("plain summary"))
    write_synthesis(
        method_analysis,
        own,
        None,
        titles,
        flat.synthesis,
        flat.ingest,
        flat.paths,
        step("summary p1"),
    )
    return {
        name: [tokens for agent in sorted(r.tokens) for tokens in r.tokens[agent]]
        for name, r in steps.items()
    }


# --- the tables ------------------------------------------------------------------------------


def usage_of(run: PapersRun, agents: Sequence[str]) -> LLMUsage:
    by_agent = run.llm_usage_by_agent
    return sum((by_agent[a] for a in agents if a in by_agent), LLMUsage())


def litpipe_steps(
    run: PapersRun, own_questions: int, own_answers: dict[str, int] | None = None
) -> dict[str, dict[str, int]]:
    """The run's calls and tokens by step of the method, then by extra. The answers beyond the
    papers' own questions (comparative, follow-up) are what is left once `own_answers` (those of
    a run without extras, the same calls) are taken; without it, at the mean of an answer."""
    rows: dict[str, dict[str, int]] = {}
    for name, agents in STEPS.items():
        rows[name] = _figures(usage_of(run, agents))
    answers = rows["answers"]
    extra = max(answers["calls"] - own_questions, 0)
    moved = _figures(LLMUsage())
    if extra and own_answers is not None and own_answers["calls"] == own_questions:
        moved = {key: answers[key] - own_answers[key] for key in answers}
    elif extra:
        share = extra / answers["calls"]
        moved = {key: round(value * share) for key, value in answers.items()}
        moved["calls"] = extra
    rows["answers"] = {key: answers[key] - moved[key] for key in answers}
    rows[EXTRA_ANSWERS] = moved
    for name, agents in EXTRAS.items():
        rows[name] = _figures(usage_of(run, agents))
    return rows


def xsum_steps(
    papers: int,
    own_questions: int,
    prompt_tokens: dict[str, list[int]],
    litpipe: dict[str, dict[str, int]],
    pipeline: int,
) -> dict[str, dict[str, int]]:
    """X-Sum's calls by step (pipeline 1 or 2), their prompt tokens as built, their output
    tokens at litpipe's mean per call of the step."""
    calls = {
        "abstracts": 0,
        "questions": papers,
        "answers": own_questions,
        "analysis": 1 if pipeline == 2 else 0,
        "summary": 1,
        "plain summary": 1 if pipeline == 2 else 0,
    }
    built = {
        "questions": prompt_tokens["questions"],
        "answers": prompt_tokens["answers"],
        "analysis": prompt_tokens["analysis"] if pipeline == 2 else [],
        "summary": prompt_tokens["summary p2" if pipeline == 2 else "summary p1"],
        "plain summary": prompt_tokens["plain summary"] if pipeline == 2 else [],
    }
    rows = {}
    for step, n in calls.items():
        ours = litpipe[step]
        mean_out = ours["tokens_out"] / ours["calls"] if ours["calls"] else 0
        rows[step] = {
            "calls": n,
            "tokens_in": sum(built.get(step, [])[:n]),
            "tokens_out": round(n * mean_out),
        }
    return rows


def _figures(usage: LLMUsage) -> dict[str, int]:
    """Calls sent: those made and those that failed (a reply the model wrote but that could not
    be used, then written offline, cost its tokens all the same)."""
    return {
        "calls": usage.made + usage.failed,
        "tokens_in": usage.tokens_in,
        "tokens_out": usage.tokens_out,
    }


def total(rows: dict[str, dict[str, int]], names: Sequence[str]) -> dict[str, int]:
    return {
        key: sum(rows[name][key] for name in names if name in rows)
        for key in ("calls", "tokens_in", "tokens_out")
    }


def print_table(columns: dict[str, dict[str, dict[str, int]]]) -> None:
    names = list(columns)
    print(f"  {'step':<28}" + "".join(f"{name:>26}" for name in names))
    print(f"  {'':<28}" + "".join(f"{'calls':>8}{'in':>9}{'out':>9}" for _ in names))

    def line(label: str, rows: list[dict[str, int] | None]) -> None:
        cells = "".join(
            f"{r['calls']:>8}{r['tokens_in']:>9}{r['tokens_out']:>9}" if r else f"{'-':>26}"
            for r in rows
        )
        print(f"  {label:<28}{cells}")

    for step in STEPS:
        line(step, [columns[name].get(step) for name in names])
    line("total (the method's steps)", [total(columns[name], list(STEPS)) for name in names])
    print("  extras, not in the total:")
    for extra in (EXTRA_ANSWERS, *EXTRAS):
        line(f"  {extra}", [columns[name].get(extra) for name in names])


def per_agent(run: PapersRun, title: str) -> None:
    print(f"{title}, per agent (fallbacks: items written offline for an unusable reply):")
    print(
        f"  {'agent':<24}{'made':>6}{'failed':>8}{'fallbacks':>10}{'tokens in':>11}"
        f"{'tokens out':>11}"
    )
    for agent, usage in sorted(run.llm_usage_by_agent.items()):
        print(
            f"  {agent:<24}{usage.made:>6}{usage.failed:>8}{usage.fallbacks:>10}"
            f"{usage.tokens_in:>11}{usage.tokens_out:>11}"
        )


# --- main ------------------------------------------------------------------------------------


def measure(
    route: dict[str, Any],
    count: Counter,
    source: Path,
    embedder: str,
    flat: bool,
    extras: bool,
) -> dict[str, Any]:
    """The runs, the tables, and the figures for the JSON line."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        relational, seconds = run_once(settings_for(home, route, embedder), source)
        second, _ = run_once(settings_for(home, route, embedder), source)
        prompt_tokens = xsum_prompt_tokens(home, settings_for(home, route, embedder), count)
    runs = {"litpipe relational": relational}
    if flat:
        with tempfile.TemporaryDirectory() as home:
            runs["litpipe flat"], _ = run_once(
                settings_for(Path(home), route, embedder, method="flat"), source
            )
    if extras:
        with tempfile.TemporaryDirectory() as home:
            runs["litpipe + extras"], _ = run_once(
                settings_for(Path(home), route, embedder, **EXTRAS_ON), source
            )

    papers = len(relational.outcomes)
    own_questions = sum(o.questions for o in relational.outcomes)
    k = round(own_questions / papers, 2)
    columns = {"litpipe relational": litpipe_steps(relational, own_questions)}
    own_answers = columns["litpipe relational"]["answers"]
    for name, run in runs.items():
        columns[name] = litpipe_steps(run, own_questions, own_answers)
    columns["X-Sum P2"] = xsum_steps(
        papers, own_questions, prompt_tokens, columns["litpipe relational"], 2
    )
    if flat:
        columns["X-Sum P1"] = xsum_steps(
            papers, own_questions, prompt_tokens, columns["litpipe flat"], 1
        )
    print(f"{papers} papers (N), {k} questions each (K), the first run in {seconds:.1f} s")
    for name, run in runs.items():
        per_agent(run, name)
    print(f"for the same N = {papers} and K = {k} (X-Sum's calls built from the same run):")
    print_table(columns)
    ours, theirs = (
        total(columns["litpipe relational"], list(STEPS)),
        total(columns["X-Sum P2"], list(STEPS)),
    )
    extras_default = total(columns["litpipe relational"], [EXTRA_ANSWERS, *EXTRAS])
    print(
        f"defaults against X-Sum P2: {ours['calls']} calls and {ours['tokens_in']} tokens in, "
        f"against {theirs['calls']} and {theirs['tokens_in']}; beside them the default run's "
        f"extras (the judges) made {extras_default['calls']} calls, "
        f"{extras_default['tokens_in']} tokens in"
    )
    again = second.llm_usage.made + second.llm_usage.failed
    print(f"second run: {again} calls sent, {second.llm_usage.cached} cached")
    return {
        "papers": papers,
        "questions_per_paper": k,
        "steps": columns,
        "totals": {name: total(rows, list(STEPS)) for name, rows in columns.items()},
        "extras_of_the_default_run": extras_default,
        "calls_per_agent": {
            name: {agent: u.made + u.failed for agent, u in run.llm_usage_by_agent.items()}
            for name, run in runs.items()
        },
        "fallbacks_per_agent": {
            name: {a: u.fallbacks for a, u in run.llm_usage_by_agent.items() if u.fallbacks}
            for name, run in runs.items()
        },
        "defaults_within_xsum_p2": ours["calls"] <= theirs["calls"]
        and ours["tokens_in"] <= theirs["tokens_in"],
        "second_run_calls": again,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "corpora" / "biology-cc-by")
    parser.add_argument("--papers", type=int, help="only the first N PDFs of --source")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--no-extras", action="store_true", help="skip the run with the extras on")
    parser.add_argument(
        "--real-server",
        action="store_true",
        help="llama-server with SmolLM2-135M (litpipe_tests/llama_server.py) instead of the "
        "stub: slow (about 30 tokens/s written on 2 cores), a floor, not quality; runs the "
        "default settings and their rerun only",
    )
    parser.add_argument(
        "--n-ctx",
        type=int,
        default=8192,
        help="--real-server's context window in tokens (SmolLM2's own; at 2,048 the analysis "
        "of a few papers no longer fits one call and is made in two steps)",
    )
    args = parser.parse_args()

    with papers_of(args.source, args.papers) as source:
        if args.real_server:
            from litpipe_tests.llama_server import LlamaServer

            with LlamaServer(n_ctx=args.n_ctx, slots=1) as server:
                print(f"real server: {server.model} (SmolLM2-135M-Instruct), n_ctx {args.n_ctx}")

                def server_tokens(messages: list[dict[str, str]]) -> int:
                    prompt = server.post("/apply-template", {"messages": messages})["prompt"]
                    return len(server.post("/tokenize", {"content": prompt})["tokens"])

                # A reply of thousands of tokens at ~30/s outlasts the default timeout.
                route = {"model": server.model, "api_base": server.api_base, "timeout_s": 1800}
                figures = measure(route, server_tokens, source, args.embedder, False, False)
                figures["server"] = f"llama-server, SmolLM2-135M-Instruct, n_ctx {args.n_ctx}"
        else:
            # Four runs of the chain on a loaded machine outlast the stub's default lifetime.
            with StubLLM(lifetime_s=7200) as stub:
                serve_every_agent(stub)
                route = {"model": "openai/stub", "api_base": stub.url}
                figures = measure(
                    route, stub_tokens, source, args.embedder, True, not args.no_extras
                )
                figures["server"] = "stub (litpipe_tests/stub_llm.py)"
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
