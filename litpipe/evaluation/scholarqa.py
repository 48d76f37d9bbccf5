"""Query-focused multi-document answers against experts' answers (ScholarQABench's multi-paper
questions): ROUGE, and citation precision and recall of the expert's papers.

Each line of the dataset is a question (`id`, `subject`, `query`), an expert's answer
(`gold_answer`, citing `papers[n]` as `[n]`, 0-based; also `[n, m]` and `[n-m]`) and `papers`,
each a title, URL, year and a text snippet. The snippets are the question's collection:
`litpipe eval scholarqa` ingests them as an abstract table (`snippet_table`: one row per snippet,
id `p<k>-<j>`, paper k's j-th snippet) into collection `scholarqa-<id>`. Several snippets may
come from one paper: a paper is its URL (its title when it has none), and citations are counted
per paper. A paper without a snippet (two in the full set) is not in the collection; an
expert's `[n]` naming no snippet (an index past the list) is recorded per question and left out
of the gold set.

- litpipe: the question asked of its collection as a reader asks it (`litpipe ask
  --collection`, the `collection_answer` asset: hybrid retrieval of the collection's chunks,
  MMR, the reranker, the writers `synthesis.answer_mode` names, the support check; or "The
  collection does not answer this."), its citations written as the snippets they name,
  `[p<k>:<j>]`; offline or with whatever model the settings route its agents to.
- lead, LexRank and TextRank (`litpipe.evaluation.baselines`) over the same snippets in the
  dataset's order (which follows the expert's numbering, mostly the order of citation: lead may
  gain from it).

Every system is scored under the same budget, the expert answer's word count W (citations not
counted), in whole sentences: litpipe's answer, written to ANSWER_WORDS as `ask --collection`
writes it, is cut to W. ROUGE-1/2/L F-measures (`litpipe.evaluation.rouge`) with citations
removed from both sides. Citations (`litpipe.evaluation.citation_accuracy`): the papers
litpipe's answer cites against the papers the expert cites; for the baselines, the papers their
sentences were taken from, for context (an extractive system "cites" by construction). Means
over questions.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from litpipe.agents.query_answer import within_words
from litpipe.evaluation.baselines import BASELINES, split_documents
from litpipe.evaluation.citation_accuracy import (
    CitationAccuracy,
    MeanCitationAccuracy,
    citation_accuracy,
    mean_accuracy,
)
from litpipe.evaluation.datasets import json_lines, line_error
from litpipe.evaluation.rouge import Scores, mean_scores, rouge, rouge_figures, without_citations
from litpipe.extractive.related_work import count_words
from litpipe.schemas import NOT_ANSWERED, CollectionAnswer, Question
from litpipe.text import counted
from litpipe.workflows.collection_answer import ANSWER_WORDS

SYSTEMS = ("litpipe", *BASELINES)
# `[3]`, `[1, 2]`, `[2-3]`: the expert's citations of `papers` by 0-based index.
_GOLD_CITATION = re.compile(r"\[(\d+(?:\s*[,;\u2013-]\s*\d+)*)\]")
_RANGE = re.compile(r"(\d+)\s*[\u2013-]\s*(\d+)|(\d+)")
# litpipe's citation of a question's snippet, `[p<k>:<j>]`: the paper it names.
_SNIPPET_MARKER = re.compile(r"\[(p\d+):\d+\]")


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
    answer: str = Field(
        description="litpipe's answer as scored (cut to the budget), its markers `[p<k>:<j>]`."
    )
    answered: bool = Field(
        description="False when the collection declined: 'The collection does not answer this.'"
    )
    outputs: dict[str, str] = Field(description="Each system's text, citations removed.")
    unresolved_gold: list[int] = Field(
        description="The expert's `[n]` naming no snippet given: left out of the gold papers."
    )


class ScholarQAEvaluation(BaseModel):
    dataset: str
    examples: int
    declined: int = Field(description="Questions litpipe's collection declined to answer.")
    failed: int = Field(description="Questions whose collection or answer failed (not scored).")
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


@dataclass(frozen=True)
class PreparedQuestion:
    """A question as every system answers it: its example, its snippets and its budget (the
    expert answer's words, citations removed)."""

    example: ScholarQAExample
    snippets: list[Snippet]
    budget: int


def prepared_question(example: ScholarQAExample) -> PreparedQuestion:
    return PreparedQuestion(
        example=example,
        snippets=collection(example),
        budget=count_words(without_citations(example.gold_answer)),
    )


def question_collection(example: ScholarQAExample) -> str:
    """The collection the question's snippets are ingested into."""
    return f"scholarqa-{example.id}"


def row_id(snippet: Snippet) -> str:
    """The snippet's id as a row of its question's abstract table: `p<k>-<j>`."""
    return f"{snippet.paper_id}-{snippet.number}"


def snippet_table(snippets: Sequence[Snippet]) -> str:
    """The snippets as an abstract table (JSONL: id, title, abstract), one row each: what
    `litpipe run` ingests as the question's collection."""
    return "".join(
        json.dumps(
            {"id": row_id(s), "title": s.title or f"Paper {s.paper_id}", "abstract": s.text},
            ensure_ascii=False,
        )
        + "\n"
        for s in snippets
    )


def snippet_markers(answer: CollectionAnswer, snippet_of: Mapping[str, Snippet]) -> str:
    """The answer's text with each `[paper_id:page]` of the ingested collection written as
    the snippet it cites, `[p<k>:<j>]` (`snippet_of`: the snippet of each ingested paper)."""
    text = answer.text
    for citation in answer.citations:
        snippet = snippet_of[citation.paper_id]
        text = text.replace(citation.marker, f"[{snippet.paper_id}:{snippet.number}]")
    return text


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


def scholarqa_result(
    question: PreparedQuestion, answer: CollectionAnswer, snippet_of: Mapping[str, Snippet]
) -> ScholarQAResult:
    """The question's row: litpipe's answer from its collection (cut to the budget in whole
    sentences, its markers naming snippets) and the baselines' texts over the same snippets,
    each scored against the expert's answer."""
    snippets = question.snippets
    answer_text = within_words(snippet_markers(answer, snippet_of), question.budget)
    outputs = {"litpipe": without_citations(answer_text)}
    cited = {"litpipe": list(dict.fromkeys(_SNIPPET_MARKER.findall(answer_text)))}
    for name, baseline in BASELINES.items():
        chosen = baseline([s.text for s in snippets], question.budget)
        outputs[name] = " ".join(chosen)
        cited[name] = sources_of(chosen, snippets)
    scored = question_scores(question, outputs, cited)
    return ScholarQAResult(
        **dict(scored),
        answer=answer_text,
        answered=answer.answered,
        outputs=outputs,
        unresolved_gold=gold_papers(question.example, snippets)[1],
    )


def scholarqa_evaluation(
    dataset: Path,
    results: Sequence[ScholarQAResult],
    *,
    failed: int,
    engine: str,
    model: str | None,
    embedder: str,
    seconds: float,
) -> ScholarQAEvaluation:
    """The means over the questions' rows."""
    means, mean_words, citations = mean_figures(results, SYSTEMS)
    return ScholarQAEvaluation(
        dataset=str(dataset),
        examples=len(results),
        declined=sum(not r.answered for r in results),
        failed=failed,
        engine=engine,
        model=model,
        embedder=embedder,
        budget="the expert answer's words (citations removed), whole sentences, for every "
        f"system (litpipe's answer, written to {ANSWER_WORDS} words as `ask --collection` "
        "writes it, cut to it)",
        means=means,
        mean_words=mean_words,
        citations=citations,
        seconds=seconds,
        per_example=list(results),
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
        f"{unresolved} expert citation(s) named no snippet and were left out. litpipe declined "
        f'{evaluation.declined} of {counted(evaluation.examples, "question")} ("{NOT_ANSWERED}", '
        f"scored as written); {evaluation.failed} failed and are not scored.",
    ]
    return "\n".join(lines) + "\n"
