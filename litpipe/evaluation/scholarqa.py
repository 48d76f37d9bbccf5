"""Query-focused multi-document answers against experts' answers (ScholarQABench's multi-paper
questions): ROUGE, and citation precision and recall of the expert's papers.

Each line of the dataset is a question (`id`, `subject`, `query`), an expert's answer
(`gold_answer`, citing `papers[n]` as `[n]`, 0-based; also `[n, m]` and `[n-m]`) and `papers`,
each a title, URL, year and a text snippet. The snippets are the question's collection, in
memory (nothing is ingested). Several snippets may come from one paper: a paper is its URL (its
title when it has none), and citations are counted per paper. A paper without a snippet (two in
the full set) is not in the collection; an expert's `[n]` naming no snippet (an index past the
list) is recorded per question and left out of the gold set.

- litpipe: the snippets ranked for the question by the in-memory hybrid retrieval of related
  work (BM25 + dense + Reciprocal Rank Fusion, MMR; `AbstractIndex`), then the `query_answer`
  agent writes the answer from all of them, in rank order, citing `[p<k>:<j>]` (paper k's j-th
  snippet); offline or with whatever model the settings route that agent to.
- lead, LexRank and TextRank (`litpipe.evaluation.baselines`) over the same snippets in the
  dataset's order (which follows the expert's numbering, mostly the order of citation: lead may
  gain from it).

Every system writes under the same budget, the expert answer's word count W (citations not
counted), in whole sentences. ROUGE-1/2/L F-measures (`litpipe.evaluation.rouge`) with citations
removed from both sides. Citations (`litpipe.evaluation.citation_accuracy`): the papers litpipe's
answer cites against the papers the expert cites; for the baselines, the papers their sentences
were taken from, for context (an extractive system "cites" by construction). Means over
questions.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from litpipe.agents.base import ModelClient
from litpipe.agents.query_answer import QueryAnswerAgent, answer_queries
from litpipe.evaluation.baselines import BASELINES, split_documents
from litpipe.evaluation.citation_accuracy import (
    CitationAccuracy,
    MeanCitationAccuracy,
    citation_accuracy,
    mean_accuracy,
)
from litpipe.evaluation.datasets import json_lines, line_error
from litpipe.evaluation.rouge import Scores, mean_scores, rouge, rouge_figures, without_citations
from litpipe.evaluation.runner import evaluation_asker, models
from litpipe.extractive.query_answer import QueryAnswerInput
from litpipe.extractive.related_work import count_words
from litpipe.schemas import Question, Reference, RetrievedChunk
from litpipe.settings.groups import SettingsGroups
from litpipe.text import counted

SYSTEMS = ("litpipe", *BASELINES)
# `[3]`, `[1, 2]`, `[2-3]`: the expert's citations of `papers` by 0-based index.
_GOLD_CITATION = re.compile(r"\[(\d+(?:\s*[,;\u2013-]\s*\d+)*)\]")
_RANGE = re.compile(r"(\d+)\s*[\u2013-]\s*(\d+)|(\d+)")


class ScholarQAPaper(BaseModel):
    title: str = ""
    url: str = ""
    year: int | None = None
    text: str | None = Field(default=None, description="The snippet; None when there is none.")

    @field_validator("text", mode="before")
    @classmethod
    def _no_snippet(cls, value: Any) -> Any:
        # The dataset writes a missing snippet as NaN (pandas' empty cell), or it may be empty.
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value.strip() or None if isinstance(value, str) else value

    @property
    def key(self) -> str:
        """Who the paper is: its URL, or its title when it has none."""
        return self.url.strip() or " ".join(self.title.lower().split())


class ScholarQAExample(BaseModel):
    """One line of the dataset."""

    id: str = Field(min_length=1)
    subject: str = ""
    query: str = Field(min_length=1)
    gold_answer: str = Field(min_length=1)
    papers: list[ScholarQAPaper] = Field(min_length=1)


class Snippet(BaseModel):
    """One snippet of the collection, as litpipe cites it: `[paper_id:number]`."""

    index: int = Field(description="Its place in the dataset's `papers` (the expert's `[n]`).")
    paper_id: str = Field(description="`p<k>`: the k-th distinct paper of the question.")
    number: int = Field(description="Its number among its paper's snippets, from 1.")
    title: str
    text: str


class QuestionScores(BaseModel):
    """One question's texts, each a system's or an answer mode's (by name), scored against the
    expert's answer: ROUGE and words of the text as given, citations of the papers it cites."""

    id: str
    subject: str
    papers: int = Field(description="Distinct papers with a snippet.")
    snippets: int
    budget_words: int
    words: dict[str, int]
    scores: dict[str, Scores]
    gold_papers: list[str] = Field(description="The papers (`p<k>`) the expert cites.")
    cited_papers: dict[str, list[str]] = Field(description="The papers each text cites.")
    citations: dict[str, CitationAccuracy]


class ScholarQAResult(QuestionScores):
    answer: str = Field(description="litpipe's answer, with its markers.")
    outputs: dict[str, str] = Field(description="Each system's text, citations removed.")
    unresolved_gold: list[int] = Field(
        description="The expert's `[n]` naming no snippet given: left out of the gold papers."
    )


class ScholarQAEvaluation(BaseModel):
    dataset: str
    examples: int
    engine: str
    model: str | None = Field(description="The writer's model; None offline.")
    embedder: str
    budget: str
    means: dict[str, Scores]
    mean_words: dict[str, float]
    citations: dict[str, MeanCitationAccuracy]
    seconds: float
    per_example: list[ScholarQAResult]


def read_examples(dataset: Path, limit: int | None = None) -> list[ScholarQAExample]:
    """The first `limit` questions (all when None) of a JSONL file; ValueError naming the file
    and line of a line that is not a question with a snippet."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1, not {limit}")
    dataset = Path(dataset)
    if dataset.is_dir():
        raise ValueError(f"{dataset}: a folder; give its .jsonl file")
    examples: list[ScholarQAExample] = []
    for number, example in json_lines(dataset, ScholarQAExample):
        if not any(paper.text for paper in example.papers):
            raise line_error(dataset, number, f"question {example.id!r} has no paper snippet")
        if not count_words(without_citations(example.gold_answer)):
            raise line_error(dataset, number, f"question {example.id!r}: no words in gold_answer")
        examples.append(example)
        if limit is not None and len(examples) == limit:
            break
    if not examples:
        raise ValueError(f"{dataset}: no question in the file")
    return examples


def question_of(example: ScholarQAExample) -> Question:
    """The example's query as the question every system answers (of no one paper)."""
    return Question(question_id=example.id, paper_id="", style="broad", text=example.query)


def collection(example: ScholarQAExample) -> list[Snippet]:
    """The question's snippets, in the dataset's order, each named by its paper and number."""
    paper_ids: dict[str, str] = {}
    counts: dict[str, int] = {}
    found: list[Snippet] = []
    for index, paper in enumerate(example.papers):
        if not paper.text:
            continue
        paper_id = paper_ids.setdefault(paper.key, f"p{len(paper_ids) + 1}")
        counts[paper_id] = counts.get(paper_id, 0) + 1
        found.append(
            Snippet(
                index=index,
                paper_id=paper_id,
                number=counts[paper_id],
                title=" ".join(paper.title.split()),
                text=paper.text,
            )
        )
    return found


def gold_citations(gold_answer: str) -> list[int]:
    """The `papers` indices the expert's answer cites, in order of first citation; `[2-3]`
    stands for 2 and 3."""
    cited: list[int] = []
    for bracket in _GOLD_CITATION.finditer(gold_answer):
        for first, last, single in _RANGE.findall(bracket.group(1)):
            span = [int(single)] if single else list(range(int(first), int(last) + 1))
            cited += [index for index in span if index not in cited]
    return cited


def gold_papers(
    example: ScholarQAExample, snippets: Sequence[Snippet]
) -> tuple[list[str], list[int]]:
    """The papers (`p<k>`) the expert cites, and the cited indices naming no snippet given."""
    by_index = {snippet.index: snippet.paper_id for snippet in snippets}
    papers: list[str] = []
    unresolved: list[int] = []
    for index in gold_citations(example.gold_answer):
        if index not in by_index:
            unresolved.append(index)
        elif by_index[index] not in papers:
            papers.append(by_index[index])
    return papers, unresolved


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


@dataclass(frozen=True)
class PreparedQuestion:
    """A question as every system answers it: its example, its snippets, its budget (the expert
    answer's words, citations removed) and its snippets ranked for it (`ranked_evidence`)."""

    example: ScholarQAExample
    snippets: list[Snippet]
    budget: int
    evidence: list[RetrievedChunk]


def prepared_questions(
    examples: Sequence[ScholarQAExample], groups: SettingsGroups
) -> list[PreparedQuestion]:
    """Each example's question prepared, its snippets ranked with the settings' embedder."""
    from litpipe.workflows.related_work import load_embedder

    embedder = load_embedder(groups["ingest"], groups["paths"])
    prepared = []
    for example in examples:
        snippets = collection(example)
        prepared.append(
            PreparedQuestion(
                example=example,
                snippets=snippets,
                budget=count_words(without_citations(example.gold_answer)),
                evidence=ranked_evidence(example.query, snippets, embedder, groups),
            )
        )
    return prepared


def sources_of(sentences: Sequence[str], snippets: Sequence[Snippet]) -> list[str]:
    """The papers an extractive system's sentences were taken from (every paper holding the
    sentence, when two snippets share it)."""
    holders: dict[str, list[str]] = {}
    for snippet, split in zip(snippets, split_documents([s.text for s in snippets]), strict=True):
        for sentence in split:
            holders.setdefault(sentence, []).append(snippet.paper_id)
    papers: list[str] = []
    for sentence in sentences:
        papers += [p for p in holders.get(sentence, []) if p not in papers]
    return papers


def question_scores(
    question: PreparedQuestion, texts: Mapping[str, str], cited: Mapping[str, list[str]]
) -> QuestionScores:
    """Each text (by name) scored against the question's expert answer, citations removed from
    it: ROUGE and words of the text as given, precision and recall of the papers `cited` names
    for it against the papers the expert cites."""
    example, snippets = question.example, question.snippets
    gold, _ = gold_papers(example, snippets)
    reference = without_citations(example.gold_answer)
    return QuestionScores(
        id=example.id,
        subject=example.subject,
        papers=len({s.paper_id for s in snippets}),
        snippets=len(snippets),
        budget_words=question.budget,
        words={name: count_words(text) for name, text in texts.items()},
        scores={name: rouge(text, reference) for name, text in texts.items()},
        gold_papers=gold,
        cited_papers=dict(cited),
        citations={name: citation_accuracy(cited[name], gold) for name in texts},
    )


def mean_figures(
    results: Sequence[QuestionScores], names: Sequence[str]
) -> tuple[dict[str, Scores], dict[str, float], dict[str, MeanCitationAccuracy]]:
    """Each name's mean ROUGE F-measures, mean words and mean citation precision and recall
    over the questions."""
    return (
        {name: mean_scores([r.scores[name] for r in results]) for name in names},
        {name: sum(r.words[name] for r in results) / len(results) for name in names},
        {name: mean_accuracy([r.citations[name] for r in results]) for name in names},
    )


def evaluate_scholarqa(
    groups: SettingsGroups,
    dataset: Path,
    limit: int | None = None,
    client: ModelClient | None = None,
) -> ScholarQAEvaluation:
    """litpipe's answers and the baselines' on the first `limit` questions, scored; `client`
    (a step's, recording its usage) or one of its own when the writer is routed to a model."""
    started = time.perf_counter()
    examples = read_examples(dataset, limit)
    asker = evaluation_asker(groups["llm"], groups["paths"], [QueryAnswerAgent.name], client)
    questions = prepared_questions(examples, groups)
    batch = [
        QueryAnswerInput(question=question_of(q.example), evidence=q.evidence, words=q.budget)
        for q in questions
    ]
    answers = answer_queries(batch, asker)
    results = []
    for question, answer in zip(questions, answers, strict=True):
        snippets = question.snippets
        outputs = {"litpipe": without_citations(answer.text)}
        cited = {"litpipe": list(dict.fromkeys(c.paper_id for c in answer.citations))}
        for name, baseline in BASELINES.items():
            chosen = baseline([s.text for s in snippets], question.budget)
            outputs[name] = " ".join(chosen)
            cited[name] = sources_of(chosen, snippets)
        scored = question_scores(question, outputs, cited)
        results.append(
            ScholarQAResult(
                **dict(scored),
                answer=answer.text,
                outputs=outputs,
                unresolved_gold=gold_papers(question.example, snippets)[1],
            )
        )
    means, mean_words, citations = mean_figures(results, SYSTEMS)
    return ScholarQAEvaluation(
        dataset=str(dataset),
        examples=len(results),
        engine=asker.engine(QueryAnswerAgent.name),
        model=models(asker, [QueryAnswerAgent.name]),
        embedder=groups["ingest"].embedder,
        budget="the expert answer's words (citations removed), whole sentences, for every system",
        means=means,
        mean_words=mean_words,
        citations=citations,
        seconds=round(time.perf_counter() - started, 3),
        per_example=results,
    )


def figures(evaluation: ScholarQAEvaluation) -> dict[str, float]:
    """Each system's mean ROUGE F-measures and citation precision and recall, `<system>_<metric>`:
    what is tracked over time."""
    return scored_figures(evaluation.means, evaluation.citations)


def scored_figures(
    means: Mapping[str, Scores], citations: Mapping[str, MeanCitationAccuracy]
) -> dict[str, float]:
    """`<name>_<metric>` for each name's mean ROUGE F-measures and citation precision and
    recall (recall only where the expert's papers were known)."""
    found = rouge_figures(means)
    for name, cited in citations.items():
        found[f"{name}_citation_precision"] = cited.precision
        if cited.recall is not None:
            found[f"{name}_citation_recall"] = cited.recall
    return found


def score_cells(scores: Scores, words: float, cited: MeanCitationAccuracy) -> str:
    """A table row's ROUGE-1/2/L, mean words and citation precision and recall cells, in percent
    (words as counted), `n/a` where a figure is missing."""
    return (
        f"{_percent(scores.rouge1)} | {_percent(scores.rouge2)} | {_percent(scores.rougeL)} | "
        f"{words:.1f} | {_percent(cited.precision)} | {_percent(cited.recall)}"
    )


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def format_table(evaluation: ScholarQAEvaluation) -> str:
    """A Markdown table: one row per system, ROUGE-1/2/L F-measures and citation precision and
    recall of the expert's papers in percent, mean words."""
    unresolved = sum(len(r.unresolved_gold) for r in evaluation.per_example)
    lines = [
        f"ScholarQA multi-paper answers on {Path(evaluation.dataset).name}: "
        f"{counted(evaluation.examples, 'question')}, writer {evaluation.engine}, embedder "
        f"{evaluation.embedder}; budget: {evaluation.budget}",
        "",
        "| system | ROUGE-1 | ROUGE-2 | ROUGE-L | words | citation precision | citation recall |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, scores in evaluation.means.items():
        cited = evaluation.citations[name]
        lines.append(f"| {name} | {score_cells(scores, evaluation.mean_words[name], cited)} |")
    lines += [
        "",
        "Citations: papers cited against the papers the expert cites, per question; the "
        "baselines' are the papers their sentences come from. "
        f"{unresolved} expert citation(s) named no snippet and were left out.",
    ]
    return "\n".join(lines) + "\n"
