"""Every agent survives every reply its schema allows.

A model with structured output may answer anything valid against the JSON schema it is sent,
not what a scripted test expects. Here each agent's stage runs with only that agent routed to a
"model" whose replies hypothesis generates from the agent's own JSON schema (unicode, empty and
blank strings, duplicates, extreme numbers, ids and markers from the prompt and markers that
resolve to nothing); every other agent runs offline on a small real collection. The reply is
parsed and validated as the LLM client does (`parse_reply`), with one repair.

The only outcomes allowed: the stage's result, or `ReplyValidationError` with a one-line reason.
Never a KeyError, IndexError, ZeroDivisionError or any other crash.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from litpipe.agents.answer_judge import judge_answers
from litpipe.agents.answers import answer_questions
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent, ModelBatch
from litpipe.agents.comparison_table.comparison_cells import comparison_rows
from litpipe.agents.cross_paper_questions import comparative_questions
from litpipe.agents.paper_abstract import paper_abstract_from
from litpipe.agents.plain_summary import write_plain_summary
from litpipe.agents.query_answer import answer_queries
from litpipe.agents.question_evidence.rerankers import LLMDebateReranker, LLMRelevanceReranker
from litpipe.agents.related_work import RelatedWorkAgent
from litpipe.agents.related_work_plan import RelatedWorkPlanAgent, plan_text
from litpipe.agents.relationship_analysis.analysis import analysed, analysis_input
from litpipe.agents.relationship_analysis.followups import follow_up_questions
from litpipe.agents.relationship_analysis.insights import insights_for
from litpipe.agents.relationship_analysis.relationships import relate
from litpipe.agents.tldr import write_tldrs
from litpipe.evaluation.grading import grade_coherence, grade_output
from litpipe.extractive.answer_judge import AnswerJudgeInput
from litpipe.extractive.comparison_table import FIXED_ASPECTS as FIXED
from litpipe.extractive.query_answer import QueryAnswerInput
from litpipe.extractive.related_work import RelatedWorkInput
from litpipe.extractive.tldr import TldrInput
from litpipe.llm.client import UnusableReply, parse_reply
from litpipe.llm.errors import LLMError, ReplyValidationError, TransientLLMError
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import (
    Answer,
    DebateVerdict,
    PaperAbstract,
    PaperAnswers,
    PaperDocument,
    QuerySummaryRequest,
    Question,
    QuestionEvidence,
    Reference,
    RelationshipAnalysis,
    RetrievedChunk,
    RetrievedReference,
    ScoredReference,
    Section,
    Synthesis,
)
from litpipe.settings import AgentRoute, Route, Settings
from litpipe.workflows.comparison_table import comparison_aspects, row_input
from litpipe.workflows.query_summary import summarize_for_query
from litpipe.workflows.related_work import (
    abstract_index,
    generated_queries,
    score_references,
    write_section,
)
from litpipe.workflows.relationship_analysis import analyse
from litpipe.workflows.synthesis import write_synthesis
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.schema_replies import Choices, drawn, reply, vocabulary

T = TypeVar("T", bound=BaseModel)

MODEL = "openai/generated"
DEMO = Path(__file__).parents[1] / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"
# Four abstracts: evidence enough to take the synthesis past its smallest context (1,000).
PAPERS = 4
# Seeded: the same replies on every run; at least 200 of them for each agent.
EXAMPLES = 200
SEED = 20261124
ALLOWED = (ReplyValidationError,)
# At least this share of the generated replies must give a result.
LEAST_VALID = 0.5


def each_or_its_error(
    complete: Callable[[Route, list[dict[str, str]], type[T]], T],
    route: Route,
    list_of_messages: Sequence[list[dict[str, str]]],
    schema: type[T],
) -> list[T | LLMError]:
    """A fake client's `complete_each_sync`: each reply, or its call's LLMError in its place."""
    replies: list[T | LLMError] = []
    for messages in list_of_messages:
        try:
            replies.append(complete(route, messages, schema))
        except LLMError as error:
            replies.append(error)
    return replies


class GeneratedClient:
    """Stands in for `LLMClient`: every reply generated from the schema asked for, then parsed
    and validated as the client does, with one repair (a second reply).

    Hypothesis draws every choice, so failures shrink.
    """

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.agents: list[str] = []

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        self.agents.append(route.agent)
        words = vocabulary(messages)
        problem = ""
        for _ in range(2):
            choices: Choices = drawn(self.data)
            text = json.dumps(reply(json_schema(schema), choices, words), ensure_ascii=False)
            try:
                return parse_reply(text, schema)
            except UnusableReply as unusable:
                problem = str(unusable)
        raise ReplyValidationError(
            f"{route.agent}: {route.model} gave no valid {schema.__name__} even after one "
            f"repair: {problem}"
        )

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T]:
        return [self.complete_sync(route, messages, schema) for messages in list_of_messages]

    def complete_each_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T | LLMError]:
        return each_or_its_error(self.complete_sync, route, list_of_messages, schema)

    def complete_batches_sync(
        self, batches: Sequence[ModelBatch]
    ) -> list[list[BaseModel | LLMError]]:
        return [list(self.complete_each_sync(*batch)) for batch in batches]


@cache
def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


# A small real collection, built once by the offline engine: what the routed agent reads.


@dataclass(frozen=True)
class Collection:
    abstracts: dict[str, PaperAbstract]
    chunks: dict[str, list[RetrievedChunk]]
    evidence: dict[str, list[QuestionEvidence]]
    answers: dict[str, PaperAnswers]
    analysis: RelationshipAnalysis
    synthesis: Synthesis


def offline_settings(tmp: Path, **values: Any) -> Settings:
    # An unusable reply fails its item rather than falling back to the offline engine: these
    # tests count the replies that give a result.
    llm = {"model": None, "on_unusable": "fail"} | values.pop("llm", {})
    return Settings(home=tmp, corpus_roots=[], llm=llm, **values)


def _chunks(paper_id: str, abstract: str) -> list[RetrievedChunk]:
    """The abstract in two chunks, on pages 1 and 2."""
    sentences = abstract.split(". ")
    half = max(1, len(sentences) // 2)
    parts = [". ".join(sentences[:half]), ". ".join(sentences[half:])]
    return [
        retrieved_chunk(paper_id, index, index + 1, part)
        for index, part in enumerate(parts)
        if part.strip()
    ]


@cache
def collection() -> Collection:
    with DEMO.open(newline="", encoding="utf-8") as table:
        rows = list(csv.DictReader(table))[:PAPERS]
    home = Path("/nonexistent-litpipe-home")
    offline = offline_settings(home)
    asker = Asker(offline.llm, None, PromptLibrary())
    abstracts = {
        row["id"]: PaperAbstract(
            paper_id=row["id"],
            title=row["title"],
            abstract=row["abstract"],
            source="parsed",
            engine="parsed",
        )
        for row in rows
    }
    chunks = {paper: _chunks(paper, a.abstract) for paper, a in abstracts.items()}
    from litpipe.agents.paper_questions import paper_questions_from

    evidence = {
        paper: [
            QuestionEvidence(question=question, chunks=chunks[paper], reranked=False)
            for question in paper_questions_from(a, asker).questions
        ]
        for paper, a in abstracts.items()
    }
    answers = {
        paper: PaperAnswers(
            paper_id=paper,
            mode="single",
            engine="offline",
            answers=answer_questions(items, offline.synthesis.answer_mode, asker),
        )
        for paper, items in evidence.items()
    }
    analysis = analyse(
        "demo",
        answers,
        None,
        abstracts,
        _follow_up_answerer(chunks, offline, asker),
        offline.synthesis,
        asker,
    )
    titles = {paper: a.title for paper, a in abstracts.items()}
    synthesis = write_synthesis(
        analysis, answers, None, titles, offline.synthesis, offline.ingest, offline.paths, asker
    )
    return Collection(abstracts, chunks, evidence, answers, analysis, synthesis)


def _follow_up_answerer(
    chunks: dict[str, list[RetrievedChunk]], settings: Settings, asker: Asker
) -> Callable[[str, list[Question]], list[Answer]]:
    def answer(paper: str, questions: list[Question]) -> list[Answer]:
        items = [
            QuestionEvidence(question=q, chunks=chunks[paper], reranked=False) for q in questions
        ]
        return answer_questions(items, settings.synthesis.answer_mode, asker)

    return answer


# One case per agent: its stage, run with `settings` (the agent routed to the model).

Stage = Callable[[Collection, Settings, Asker], object]


def _titles(c: Collection) -> dict[str, str]:
    return {paper: a.title for paper, a in c.abstracts.items()}


def _first(c: Collection) -> str:
    return next(iter(c.abstracts))


def _abstract(c: Collection, s: Settings, asker: Asker) -> object:
    a = c.abstracts[_first(c)]
    text = a.abstract
    document = PaperDocument(
        paper_id=a.paper_id,
        source_path="paper.pdf",
        title=a.title,
        text=text,
        sections=[
            Section(
                heading="Introduction", char_start=0, char_end=len(text), page_start=1, page_end=1
            )
        ],
    )
    return paper_abstract_from(document, asker)


def _questions(c: Collection, s: Settings, asker: Asker) -> object:
    from litpipe.agents.paper_questions import paper_questions_from

    return paper_questions_from(c.abstracts[_first(c)], asker)


def _answers(c: Collection, s: Settings, asker: Asker) -> object:
    return answer_questions(c.evidence[_first(c)][:2], s.synthesis.answer_mode, asker)


def _insights(c: Collection, s: Settings, asker: Asker) -> object:
    pairs = [answer for paper in c.answers.values() for answer in paper.answers]
    return insights_for(pairs, asker)


def _analysis(c: Collection, s: Settings, asker: Asker) -> object:
    pairs = [answer for paper in c.answers.values() for answer in paper.answers]
    return analysed(analysis_input("demo", pairs, _titles(c)), asker)


def _relationships(c: Collection, s: Settings, asker: Asker) -> object:
    return relate("demo", c.analysis.insights, _titles(c), asker)


def _cross_questions(c: Collection, s: Settings, asker: Asker) -> object:
    return comparative_questions(
        "demo", list(c.abstracts.values()), s.synthesis.cross_paper_questions, asker
    )


def _followups(c: Collection, s: Settings, asker: Asker) -> object:
    paper = _first(c)
    asked = [item.question for item in c.evidence[paper]]
    return follow_up_questions(
        c.abstracts[paper], asked, "thin", s.synthesis.follow_up_questions, asker
    )


def _synthesis(c: Collection, s: Settings, asker: Asker) -> object:
    return write_synthesis(
        c.analysis, c.answers, None, _titles(c), s.synthesis, s.ingest, s.paths, asker
    )


def _plain(c: Collection, s: Settings, asker: Asker) -> object:
    return write_plain_summary(c.analysis, c.synthesis, _titles(c), asker)


def _query_summary(c: Collection, s: Settings, asker: Asker) -> object:
    paper = _first(c)
    a = c.abstracts[paper]
    chunks = c.chunks[paper]
    return summarize_for_query(
        QuerySummaryRequest(paper_id=paper, query="What does the method learn?"),
        a.title,
        a.abstract,
        chunks,
        lambda text: chunks[:1],
        s.query_summary,
        asker,
    )


def _long_query_summary(c: Collection, s: Settings, asker: Asker) -> object:
    """The first paper made longer than the context by the others' abstracts as its later
    pages: the judge reads it whole, in parts, and its replies on each part are combined."""
    paper = _first(c)
    a = c.abstracts[paper]
    texts = [chunk.text for chunks in c.chunks.values() for chunk in chunks]
    chunks = [retrieved_chunk(paper, index, index + 1, text) for index, text in enumerate(texts)]
    return summarize_for_query(
        QuerySummaryRequest(paper_id=paper, query="What does the method learn?"),
        a.title,
        a.abstract,
        chunks,
        lambda text: chunks[:1],
        s.query_summary,
        asker,
    )


def _query_answer(c: Collection, s: Settings, asker: Asker) -> object:
    item = c.evidence[_first(c)][0]
    batch = [QueryAnswerInput(question=item.question, evidence=item.chunks, words=40)]
    return answer_queries(batch, asker)


def _answer_judge(c: Collection, s: Settings, asker: Asker) -> object:
    batch = [
        AnswerJudgeInput(
            question="What does FearNet use?",
            ideal="a dual-memory system",
            distractors=["a single memory", "no memory"],
            summary=c.synthesis.text,
        )
    ]
    return judge_answers(batch, asker)


def _claim_judge(c: Collection, s: Settings, asker: Asker) -> object:
    passages = {
        f"{chunk.paper_id}:{chunk.page_start}": [chunk.text]
        for chunks in c.chunks.values()
        for chunk in chunks
    }
    # The opening paragraph: its sentences cite every kind of marker the page does.
    return grade_output(c.synthesis.text.split("\n\n")[0], passages, s.grading, asker)


def _coherence(c: Collection, s: Settings, asker: Asker) -> object:
    return grade_coherence(c.synthesis.title, c.synthesis.text, asker)


def _references(c: Collection) -> list[RetrievedReference]:
    return [
        RetrievedReference(
            reference=Reference(id=paper, title=a.title, abstract=a.abstract),
            retrieval_rank=rank,
            fused_score=1 / rank,
        )
        for rank, (paper, a) in enumerate(c.abstracts.items(), start=1)
    ]


def _debate(c: Collection, s: Settings, asker: Asker) -> object:
    return score_references("Learning from few examples.", _references(c), asker)


def _related_work(c: Collection, s: Settings, asker: Asker) -> object:
    verdict = DebateVerdict(arguments_for=[], quotes_for=[], arguments_against=[], probability=50)
    scored = [ScoredReference(**r.model_dump(), verdict=verdict) for r in _references(c)]
    inputs = RelatedWorkInput(
        idea="Learning from few examples.", references=scored, sentences=4, words=120
    )
    return write_section(inputs, asker)


def _search_queries(c: Collection, s: Settings, asker: Asker) -> object:
    """The queries written, then searched with the idea over the collection's abstracts."""
    idea = "Learning from few examples."
    queries = generated_queries(idea, s.related_work, asker)
    references = [r.reference for r in _references(c)]
    return abstract_index(references, FakeEmbedder(), s.ingest, s.retrieval).search(
        idea, 3, 4, queries
    )


def _related_work_plan(c: Collection, s: Settings, asker: Asker) -> object:
    """The plan written, then rendered into the writer's prompt."""
    verdict = DebateVerdict(arguments_for=[], quotes_for=[], arguments_against=[], probability=50)
    scored = [ScoredReference(**r.model_dump(), verdict=verdict) for r in _references(c)]
    inputs = RelatedWorkInput(
        idea="Learning from few examples.", references=scored, sentences=4, words=120
    )
    plan = plan_text(asker.ask(RelatedWorkPlanAgent(), inputs))
    return RelatedWorkAgent().messages(inputs.model_copy(update={"plan": plan}), asker.prompts)


def _reranker(kind: type[LLMRelevanceReranker] | type[LLMDebateReranker]) -> Stage:
    def stage(c: Collection, s: Settings, asker: Asker) -> object:
        candidates = [chunk for chunks in c.chunks.values() for chunk in chunks]
        return kind(asker).rerank("How is memory consolidated?", candidates)

    return stage


def _tldr(c: Collection, s: Settings, asker: Asker) -> object:
    batch = [TldrInput(title=a.title, abstract=a.abstract) for a in c.abstracts.values()]
    return write_tldrs(batch, asker)


def _comparison_aspects(c: Collection, s: Settings, asker: Asker) -> object:
    return comparison_aspects("demo", list(c.abstracts.values()), c.answers, s.comparison, asker)


def _comparison_cells(c: Collection, s: Settings, asker: Asker) -> object:
    """Every paper's row, each aspect's passages its two chunks."""

    def search_of(paper: str) -> Callable[[str], list[RetrievedChunk]]:
        return lambda query: c.chunks[paper]

    inputs = [
        row_input(paper, a.title, search_of(paper), FIXED, s.comparison)
        for paper, a in c.abstracts.items()
    ]
    return comparison_rows(inputs, asker)


@dataclass(frozen=True)
class Case:
    stage: Stage
    settings: dict[str, Any]


CASES: dict[str, Case] = {
    "paper_abstract": Case(_abstract, {}),
    "paper_questions": Case(_questions, {}),
    "answers": Case(_answers, {}),
    "massrag_summarizer": Case(_answers, {"synthesis": {"answer_mode": "multi_view"}}),
    "massrag_extractor": Case(_answers, {"synthesis": {"answer_mode": "multi_view"}}),
    "massrag_reasoner": Case(_answers, {"synthesis": {"answer_mode": "multi_view"}}),
    "massrag_reconcile": Case(_answers, {"synthesis": {"answer_mode": "multi_view"}}),
    "massrag_candidate": Case(_answers, {"synthesis": {"answer_mode": "multi_view_answers"}}),
    "massrag_compare": Case(_answers, {"synthesis": {"answer_mode": "multi_view_answers"}}),
    # Extras off by default (no call): asked for here.
    "cross_paper_questions": Case(_cross_questions, {"synthesis": {"cross_paper_questions": 4}}),
    "analysis": Case(_analysis, {}),
    "insights": Case(_insights, {}),
    "relationships": Case(_relationships, {}),
    "followups": Case(_followups, {"synthesis": {"follow_up_questions": 2}}),
    "synthesis": Case(_synthesis, {}),
    "synthesis_flat": Case(_synthesis, {"synthesis": {"method": "flat"}}),
    # The patterns named, whatever the collection's size: the map step (paper summaries), the
    # tree of cluster summaries, the running summary refined paper by paper.
    "paper_summary": Case(_synthesis, {"synthesis": {"pattern": "map_reduce"}}),
    "cluster_summary": Case(_synthesis, {"synthesis": {"pattern": "hierarchical"}}),
    "refine_summary": Case(_synthesis, {"synthesis": {"pattern": "refine"}}),
    "plain_summary": Case(_plain, {}),
    "query_questions": Case(_query_summary, {"query_summary": {"max_iterations": 2}}),
    "query_summary": Case(_query_summary, {"query_summary": {"max_iterations": 2}}),
    "summary_qa": Case(_query_summary, {"query_summary": {"max_iterations": 2}}),
    "summary_acus": Case(_query_summary, {"query_summary": {"max_iterations": 2}}),
    "summary_acu_check": Case(_query_summary, {"query_summary": {"max_iterations": 2}}),
    "summary_judge": Case(
        _long_query_summary, {"query_summary": {"max_iterations": 2, "context_tokens": 500}}
    ),
    "query_answer": Case(_query_answer, {}),
    "answer_judge": Case(_answer_judge, {}),
    "claim_judge": Case(_claim_judge, {}),
    "coherence_judge": Case(_coherence, {}),
    "debate": Case(_debate, {}),
    "related_work": Case(_related_work, {}),
    "related_work_plan": Case(_related_work_plan, {}),
    "search_queries": Case(_search_queries, {}),
    "relevance": Case(_reranker(LLMRelevanceReranker), {}),
    "tldr": Case(_tldr, {}),
    "comparison_aspects": Case(_comparison_aspects, {}),
    "comparison_cells": Case(_comparison_cells, {}),
}


def agent_classes() -> list[type[Agent[Any, Any]]]:
    """Every concrete agent class of litpipe.agents, once each, in the order of their names."""
    import importlib
    import inspect
    import pkgutil

    import litpipe.agents

    found: dict[str, type[Agent[Any, Any]]] = {}
    # A stage with several agents keeps them in a subpackage: walk those too.
    for module in pkgutil.walk_packages(litpipe.agents.__path__, "litpipe.agents."):
        for value in vars(importlib.import_module(module.name)).values():
            if (
                inspect.isclass(value)
                and issubclass(value, Agent)
                and not inspect.isabstract(value)
            ):
                found.setdefault(value.name, value)
    return [found[name] for name in sorted(found)]


def every_agent_name() -> set[str]:
    return {agent.name for agent in agent_classes()}


def test_every_agent_has_a_case() -> None:
    assert set(CASES) == every_agent_name()


@pytest.mark.parametrize("agent", sorted(CASES))
def test_any_reply_the_schema_allows_gives_a_result_or_a_one_line_reason(
    agent: str, tmp_path: Path
) -> None:
    case = CASES[agent]
    routed = offline_settings(
        tmp_path, **case.settings, llm={"agents": {agent: AgentRoute(model=MODEL)}}
    )
    prompts = PromptLibrary()
    built = collection()
    asked: list[int] = []
    outcomes: list[str] = []

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        client = GeneratedClient(data)
        try:
            case.stage(built, routed, Asker(routed.llm, client, prompts))
            outcome = "result"
        except ALLOWED as error:
            assert str(error) and "\n" not in str(error), repr(error)
            outcome = "reason"
        asked.append(client.agents.count(agent))
        outcomes.append(outcome)

    run()
    assert len(outcomes) >= EXAMPLES
    # The agent was asked: the case exercises its replies, not only other agents'.
    assert all(asked)
    # Replies made from the schema mostly validate: a schema that said less than the code
    # checks would send nearly every reply down the repair path, and test nothing else.
    assert outcomes.count("result") >= LEAST_VALID * len(outcomes), outcomes.count("reason")


class UnusableClient(GeneratedClient):
    """A model whose every reply is unusable (prose where JSON was asked, even after a
    repair), or, with `failure`, whose calls fail that way."""

    def __init__(self, failure: type[LLMError] = ReplyValidationError) -> None:
        self.agents = []
        self.failure = failure

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        self.agents.append(route.agent)
        raise self.failure(f"{route.agent}: {route.model} gave no valid {schema.__name__}")


@pytest.mark.parametrize("agent", sorted(CASES))
def test_an_unusable_reply_is_written_offline_and_never_raises(agent: str, tmp_path: Path) -> None:
    """Every agent's fallback for an unusable reply gives its stage a result: no offline engine
    refuses (a grader's says "not graded"), so no check or optional step blocks an output."""
    case = CASES[agent]
    routed = offline_settings(
        tmp_path,
        **case.settings,
        llm={"on_unusable": "offline", "agents": {agent: AgentRoute(model=MODEL)}},
    )
    client = UnusableClient()
    asker = Asker(routed.llm, client, PromptLibrary())
    assert case.stage(collection(), routed, asker) is not None
    assert agent in client.agents
    assert "offline fallback" in asker.engine(agent)


@pytest.mark.parametrize("agent", ["claim_judge", "coherence_judge"])
def test_a_grader_whose_model_keeps_failing_grades_offline_even_where_failures_fail(
    agent: str, tmp_path: Path
) -> None:
    """A grader's check never blocks what it grades: its model's transient failure (retries
    spent) is written by its offline engine, though `llm.on_unusable` says fail."""
    case = CASES[agent]
    routed = offline_settings(tmp_path, llm={"agents": {agent: AgentRoute(model=MODEL)}})
    asker = Asker(routed.llm, UnusableClient(TransientLLMError), PromptLibrary())
    assert case.stage(collection(), routed, asker) is not None
    assert "offline fallback" in asker.engine(agent)
