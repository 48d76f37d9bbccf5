"""Related-work generation against gold paragraphs (CiteBench's Multi-XScience sample).

Each example is a citing paper's abstract (the research idea), its cited papers' abstracts (the
reference table, ids 1..k in the dataset's order, titles empty: the dataset has none) and the
gold related-work paragraph. Every system writes under the same budget, the gold paragraph's
word count W (citations not counted), in whole sentences:

- litpipe: `run_related_work` with top_k = every cited paper (the dataset gives the cited set,
  so there is nothing to leave out), W words and no binding sentence limit (N = W), whatever
  engine the settings route the writer to;
- litpipe_ranked: the same, but over the candidate pool, every example's cited abstracts in one
  table (an abstract cited by several examples once): the references are retrieved and ranked
  for the idea (queries, retrieval, debate) and the top k, k the example's cited count, go to
  the writer, so the ranking decides what the section can say; its recall is the share of the
  example's cited references among those k;
- lead, LexRank and TextRank (`litpipe.evaluation.baselines`) over the same abstracts.

Citations (`[1]`, `[a; b]`, and the gold's `@cite` markers) are removed from both sides before
scoring: they are not words of the prose, and the gold's numbering is not the table's. ROUGE-1,
ROUGE-2 and ROUGE-L F-measures (`litpipe.evaluation.rouge`), means over examples.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from litpipe.agents.base import ModelClient
from litpipe.evaluation.baselines import BASELINES
from litpipe.evaluation.datasets import json_lines
from litpipe.evaluation.rouge import (
    Scores,
    mean_scores,
    rouge,
    rouge_figures,
    rouge_table,
    without_citations,
)
from litpipe.evaluation.runner import evaluation_asker
from litpipe.extractive.related_work import count_words
from litpipe.schemas import Reference, RelatedWork
from litpipe.settings.groups import SettingsGroups

if TYPE_CHECKING:
    from litpipe.agents.asker import Asker
    from litpipe.retrieval.abstract_index import AbstractEncoder, AbstractIndex
    from litpipe.workflows.related_work import ReferenceTable

# The writer given the example's cited references, and given the top-k it ranked from the pool.
GIVEN = "litpipe"
RANKED = "litpipe_ranked"
SYSTEMS = (GIVEN, RANKED, *BASELINES)
MARKDOWN_FILE = "related_work_eval.md"
JSON_FILE = "related_work_eval.json"


class RelatedWorkExample(BaseModel):
    """One line of the dataset (CiteBench's Multi-XScience JSONL)."""

    idx: int
    query_abstract: str
    ref_abstracts: list[str]
    gold_related_work: str


class ExampleResult(BaseModel):
    idx: int
    budget_words: int
    references: int
    outputs: dict[str, str] = Field(description="Each system's text, citations removed.")
    words: dict[str, int]
    scores: dict[str, Scores]
    ranked_recall: float = Field(
        description="Share of the example's cited references among the top-k the ranked path "
        "gave its writer."
    )


class RelatedWorkEvaluation(BaseModel):
    dataset: str
    examples: int
    engine: str
    embedder: str
    budget: str
    pool: int = Field(description="References of the candidate pool the ranked path ranks.")
    ranked_recall: float = Field(description="The ranked path's recall, mean over examples.")
    means: dict[str, Scores]
    mean_words: dict[str, float]
    seconds: float
    per_example: list[ExampleResult]


def read_examples(dataset: Path, limit: int | None = None) -> list[RelatedWorkExample]:
    """The examples of a JSONL file, or of the one `*.jsonl` in a folder."""
    dataset = Path(dataset)
    if dataset.is_dir():
        files = sorted(dataset.glob("*.jsonl"))
        if len(files) != 1:
            raise ValueError(f"{dataset}: expected one .jsonl file, found {len(files)}")
        dataset = files[0]
    examples = [example for _, example in json_lines(dataset, RelatedWorkExample)]
    usable = [e for e in examples if e.ref_abstracts and e.gold_related_work.strip()]
    if not usable:
        raise ValueError(f"{dataset}: no example with cited abstracts and a gold paragraph")
    return usable[:limit] if limit is not None else usable


def candidate_pool(examples: list[RelatedWorkExample]) -> tuple[list[Reference], list[list[str]]]:
    """Every example's cited abstracts as one table's references (an abstract cited by several
    examples once, its id `<idx>-<position>` where it is first met), and each example's ids."""
    ids: dict[str, str] = {}
    references: list[Reference] = []
    cited: list[list[str]] = []
    for example in examples:
        mine: list[str] = []
        for position, abstract in enumerate(example.ref_abstracts, 1):
            text = abstract.strip()
            if not text:
                continue
            key = " ".join(text.split())
            if key not in ids:
                ids[key] = f"{example.idx}-{position}"
                references.append(Reference(id=ids[key], title="", abstract=text))
            mine.append(ids[key])
        cited.append(list(dict.fromkeys(mine)))
    return references, cited


def litpipe_section(
    example: RelatedWorkExample,
    words: int,
    groups: SettingsGroups,
    embedder: AbstractEncoder,
    asker: Asker,
) -> str:
    """litpipe's section for the example: every cited abstract given to the writer."""
    from litpipe.workflows.related_work import ReferenceTable

    references = [
        Reference(id=str(i), title="", abstract=abstract.strip())
        for i, abstract in enumerate(example.ref_abstracts, 1)
        if abstract.strip()
    ]
    table = ReferenceTable(path=Path(f"example-{example.idx}"), references=references)
    return _section(example, table, len(references), words, groups, embedder, asker).text


def _section(
    example: RelatedWorkExample,
    table: ReferenceTable,
    top_k: int,
    words: int,
    groups: SettingsGroups,
    embedder: AbstractEncoder,
    asker: Asker,
    index: AbstractIndex | None = None,
) -> RelatedWork:
    """`run_related_work` for the example's idea over `table`, `words` words at most, in any
    number of sentences."""
    from litpipe.workflows.related_work import make_request, run_related_work

    request = make_request(
        example.query_abstract, groups["related_work"], sentences=words, words=words, top_k=top_k
    )
    return run_related_work(
        table,
        request,
        groups["related_work"],
        groups["ingest"],
        groups["retrieval"],
        groups["paths"],
        asker,
        embedder,
        index,
    )


def evaluate_related_work(
    groups: SettingsGroups,
    dataset: Path,
    limit: int | None = None,
    client: ModelClient | None = None,
) -> RelatedWorkEvaluation:
    """litpipe's sections and the baselines' on the first `limit` examples, scored; `client`
    (a step's, recording its usage) or one of its own when the writer is routed to a model."""
    from litpipe.agents.related_work import RelatedWorkAgent
    from litpipe.workflows.related_work import (
        VECTORS_DIR,
        ReferenceTable,
        abstract_index,
        load_embedder,
    )

    started = time.perf_counter()
    examples = read_examples(dataset, limit)
    asker = evaluation_asker(groups["llm"], groups["paths"], [RelatedWorkAgent.name], client)
    embedder = load_embedder(groups["ingest"], groups["paths"])
    references, cited = candidate_pool(examples)
    pool = ReferenceTable(path=Path("candidate-pool"), references=references)
    index = abstract_index(
        references,
        embedder,
        groups["ingest"],
        groups["retrieval"],
        vectors_dir=groups["paths"].home / VECTORS_DIR,
    )
    results = []
    for example, example_cited in zip(examples, cited, strict=True):
        budget = count_words(without_citations(example.gold_related_work))
        documents = [a for a in example.ref_abstracts if a.strip()]
        ranked = _section(example, pool, len(example_cited), budget, groups, embedder, asker, index)
        given_ids = {scored.reference.id for scored in ranked.references}
        outputs = {
            GIVEN: without_citations(litpipe_section(example, budget, groups, embedder, asker)),
            RANKED: without_citations(ranked.text),
        }
        for name, baseline in BASELINES.items():
            outputs[name] = " ".join(baseline(documents, budget))
        gold = without_citations(example.gold_related_work)
        results.append(
            ExampleResult(
                idx=example.idx,
                budget_words=budget,
                references=len(documents),
                outputs=outputs,
                words={name: count_words(text) for name, text in outputs.items()},
                scores={name: rouge(text, gold) for name, text in outputs.items()},
                ranked_recall=len(given_ids.intersection(example_cited)) / len(example_cited),
            )
        )
    means = {name: mean_scores([r.scores[name] for r in results]) for name in SYSTEMS}
    return RelatedWorkEvaluation(
        dataset=str(dataset),
        examples=len(results),
        engine=asker.engine(RelatedWorkAgent.name),
        embedder=groups["ingest"].embedder,
        budget="the gold paragraph's words (citations removed), whole sentences, for every system",
        pool=len(references),
        ranked_recall=sum(r.ranked_recall for r in results) / len(results),
        means=means,
        mean_words={name: sum(r.words[name] for r in results) / len(results) for name in SYSTEMS},
        seconds=round(time.perf_counter() - started, 3),
        per_example=results,
    )


def figures(evaluation: RelatedWorkEvaluation) -> dict[str, float]:
    """Each system's mean ROUGE F-measures, `<system>_<metric>`, and the ranked path's recall:
    what is tracked over time."""
    return {**rouge_figures(evaluation.means), f"{RANKED}_recall": evaluation.ranked_recall}


def format_table(evaluation: RelatedWorkEvaluation) -> str:
    """A Markdown table: one row per system, ROUGE-1/2/L F-measures in percent, mean words."""
    return rouge_table(
        f"Related work on {Path(evaluation.dataset).name}: {evaluation.examples} examples, "
        f"writer {evaluation.engine}, embedder {evaluation.embedder}; budget: {evaluation.budget}; "
        f"{RANKED}: the top-k ranked from a pool of {evaluation.pool} references, recall "
        f"{evaluation.ranked_recall:.2f}",
        evaluation.means,
        evaluation.mean_words,
    )
