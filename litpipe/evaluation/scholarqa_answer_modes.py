"""The answer modes compared on ScholarQABench's multi-paper questions: single-view (`answers`),
multi-view (MASS-RAG's three views reconciled) and multi-view answers (a candidate answer from
each view, then a comparison), each writing from the same passages.

The dataset and the scoring are those of `litpipe eval scholarqa`
(`litpipe.evaluation.scholarqa`). Each question's snippets, ranked for it by the in-memory hybrid
retrieval of related work (`ranked_evidence`; no collection is ingested: the comparison is of
the modes on the same passages), are the evidence every mode answers from, in the same order;
ROUGE-1/2/L F-measures
against the expert answer with citations removed, and citation precision and recall of the
expert's papers. The modes write short answers (two to four sentences, as in a paper's Q&A
pairs), not the expert's length: the comparison is between the modes, not against `eval
scholarqa`'s budgeted writer. An answer is still cut to the expert answer's word count, in whole
sentences, so that no mode could gain by length. Each mode's model calls per question (from
which of its agents are routed to a model) and wall time are reported beside the scores.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from litpipe import citations as citation_markers
from litpipe.agents.answers import ANSWER_AGENTS, answer_questions
from litpipe.agents.base import ModelClient
from litpipe.agents.massrag import VIEW_AGENTS
from litpipe.agents.query_answer import within_words
from litpipe.evaluation.citation_accuracy import MeanCitationAccuracy
from litpipe.evaluation.rouge import Scores, without_citations
from litpipe.evaluation.runner import engines, evaluation_asker, models
from litpipe.evaluation.scholarqa import (
    QuestionScores,
    Snippet,
    mean_figures,
    prepared_question,
    question_of,
    question_scores,
    read_examples,
    score_cells,
    scored_figures,
)
from litpipe.schemas import AnswerMode, QuestionEvidence, Reference, RetrievedChunk
from litpipe.settings.groups import SettingsGroups

MODES: tuple[AnswerMode, ...] = ("single", "multi_view", "multi_view_answers")


class AnswerModeResult(QuestionScores):
    answers: dict[str, str] = Field(description="Each mode's answer, with its markers.")


class AnswerModesEvaluation(BaseModel):
    dataset: str
    examples: int
    engine: str = Field(description="The engines of the answering agents: `offline` or models.")
    model: str | None = Field(description="The models the answering agents are routed to.")
    embedder: str
    budget: str
    means: dict[str, Scores]
    mean_words: dict[str, float]
    citations: dict[str, MeanCitationAccuracy]
    calls_per_question: dict[str, int] = Field(
        description="Each mode's model calls per question (0 offline)."
    )
    mode_seconds: dict[str, float] = Field(description="Each mode's wall time, all questions.")
    seconds: float
    per_example: list[AnswerModeResult]


def mode_agents(mode: AnswerMode) -> tuple[str, ...]:
    """The agents one question's answer asks in `mode`, once per call."""
    views = tuple(agent.name for agent in VIEW_AGENTS.values())
    return {
        "single": ("answers",),
        "multi_view": (*views, "massrag_reconcile"),
        "multi_view_answers": (*views, *["massrag_candidate"] * len(views), "massrag_compare"),
    }[mode]


def ranked_evidence(
    query: str, snippets: Sequence[Snippet], embedder: Any, groups: SettingsGroups
) -> list[RetrievedChunk]:
    """The snippets ranked for the question by hybrid retrieval, as passages to cite."""
    from litpipe.workflows.related_work import abstract_index

    by_id = {f"{s.paper_id}:{s.number}": s for s in snippets}
    references = [Reference(id=key, title=s.title, abstract=s.text) for key, s in by_id.items()]
    index = abstract_index(references, embedder, groups["ingest"], groups["retrieval"])
    found = index.search(query, len(references), len(references))
    evidence = []
    for result in found:
        snippet = by_id[result.reference.id]
        evidence.append(
            RetrievedChunk(
                chunk_id=result.reference.id,
                paper_id=snippet.paper_id,
                section=snippet.title,
                page_start=snippet.number,
                page_end=snippet.number,
                char_start=0,
                char_end=len(snippet.text),
                text=snippet.text,
                bm25_rank=result.bm25_rank,
                dense_rank=result.dense_rank,
                # The rank after fusion and MMR: the order the writer is given.
                fused_rank=result.retrieval_rank,
                fused_score=result.fused_score,
            )
        )
    return evidence


def evaluate_answer_modes(
    groups: SettingsGroups,
    dataset: Path,
    limit: int | None = None,
    client: ModelClient | None = None,
) -> AnswerModesEvaluation:
    """Every mode's answers to the first `limit` questions, from the same passages, scored;
    `client` (a step's, recording its usage) or one of its own when an answering agent is
    routed to a model."""
    started = time.perf_counter()
    examples = read_examples(dataset, limit)
    asker = evaluation_asker(groups["llm"], groups["paths"], ANSWER_AGENTS, client)
    from litpipe.workflows.related_work import load_embedder

    embedder = load_embedder(groups["ingest"], groups["paths"])
    questions = [prepared_question(example) for example in examples]
    items = [
        QuestionEvidence(
            question=question_of(q.example),
            chunks=ranked_evidence(q.example.query, q.snippets, embedder, groups),
            reranked=False,
        )
        for q in questions
    ]
    answers: dict[str, list[str]] = {}
    mode_seconds: dict[str, float] = {}
    for mode in MODES:
        began = time.perf_counter()
        written = answer_questions(items, mode, asker)
        mode_seconds[mode] = round(time.perf_counter() - began, 3)
        answers[mode] = [
            within_words(answer.text, q.budget)
            for answer, q in zip(written, questions, strict=True)
        ]
    results = []
    for index, (question, item) in enumerate(zip(questions, items, strict=True)):
        texts: dict[str, str] = {mode: answers[mode][index] for mode in MODES}
        cited = {
            mode: list(
                dict.fromkeys(c.paper_id for c in citation_markers.citations(text, item.chunks)[0])
            )
            for mode, text in texts.items()
        }
        unmarked = {mode: without_citations(text) for mode, text in texts.items()}
        scored = question_scores(question, unmarked, cited)
        results.append(AnswerModeResult(**dict(scored), answers=texts))
    means, mean_words, citations = mean_figures(results, MODES)
    return AnswerModesEvaluation(
        dataset=str(dataset),
        examples=len(results),
        engine=engines(asker, ANSWER_AGENTS),
        model=models(asker, ANSWER_AGENTS),
        embedder=groups["ingest"].embedder,
        budget="two to four sentences each, cut to the expert answer's words (whole sentences)",
        means=means,
        mean_words=mean_words,
        citations=citations,
        calls_per_question={
            mode: sum(not asker.offline(agent) for agent in mode_agents(mode)) for mode in MODES
        },
        mode_seconds=mode_seconds,
        seconds=round(time.perf_counter() - started, 3),
        per_example=results,
    )


def figures(evaluation: AnswerModesEvaluation) -> dict[str, float]:
    """Each mode's mean ROUGE F-measures and citation precision and recall, `<mode>_<metric>`."""
    return scored_figures(evaluation.means, evaluation.citations)


def format_table(evaluation: AnswerModesEvaluation) -> str:
    """A Markdown table: one row per answer mode, ROUGE-1/2/L F-measures and citation precision
    and recall in percent, mean words, model calls per question and wall time."""
    lines = [
        f"ScholarQA answer modes on {Path(evaluation.dataset).name}: {evaluation.examples} "
        f"questions, answering engine(s) {evaluation.engine}, embedder {evaluation.embedder}; "
        f"same passages for every mode; length: {evaluation.budget}",
        "",
        "| answer mode | ROUGE-1 | ROUGE-2 | ROUGE-L | words | citation precision | "
        "citation recall | model calls / question | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, scores in evaluation.means.items():
        cited = evaluation.citations[mode]
        lines.append(
            f"| {mode} | {score_cells(scores, evaluation.mean_words[mode], cited)} | "
            f"{evaluation.calls_per_question[mode]} | {evaluation.mode_seconds[mode]:.1f} |"
        )
    lines += [
        "",
        "Citations: the papers an answer cites against the papers the expert cites, per question.",
    ]
    return "\n".join(lines) + "\n"
