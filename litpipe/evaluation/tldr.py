"""One-sentence summaries (TL;DRs) of single papers against SciTLDR's gold TL;DRs.

Each example is a paper's title and abstract and its gold TL;DRs (SciTLDR-A: the author's and
peer reviewers', 2 to 4 per test paper). Every system writes one sentence from the abstract:

- litpipe: the `tldr` agent (`litpipe/agents/tldr.py`): the routed model, or offline the
  abstract's most central sentence biased to the title;
- lead-1: the abstract's first sentence;
- textrank-1: TextRank's top sentence of the abstract (`litpipe.evaluation.baselines`).

ROUGE-1/2/L F-measures (`litpipe.evaluation.rouge`: Google's `rouge-score`, Porter stemming)
against each gold TL;DR; several golds are combined as SciTLDR's paper does ("multi-target,
max"): the scores of the gold with the highest ROUGE-1 are the example's (all three from that
one gold), as in `_get_rouge` of allenai/scitldr's `scripts/cal-rouge.py`. Means over examples.
"""

from __future__ import annotations

import csv
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from litpipe.agents.base import ModelClient
from litpipe.evaluation.baselines import lead, textrank
from litpipe.evaluation.datasets import json_lines, line_error
from litpipe.evaluation.rouge import Scores, mean_scores, rouge, rouge_figures, rouge_table
from litpipe.evaluation.runner import evaluation_asker, models
from litpipe.settings.groups import SettingsGroups
from litpipe.text import counted

SYSTEMS = ("litpipe", "lead-1", "textrank-1")
# The baselines take a word budget: one large enough for any sentence, so that each keeps its
# ranking's first sentence whole.
_ANY_SENTENCE = 10_000
# The CSV's column `tldrs_all` joins the golds with this separator.
_GOLD_SEPARATOR = "|||"


class TldrExample(BaseModel):
    paper_id: str
    title: str
    abstract: str
    golds: list[str] = Field(min_length=1)


class TldrResult(BaseModel):
    paper_id: str
    outputs: dict[str, str]
    scores: dict[str, Scores] = Field(description="Against the gold with the best ROUGE-1.")
    best_gold: dict[str, int] = Field(description="Per system, the index of that gold.")


class TldrEvaluation(BaseModel):
    dataset: str
    examples: int
    engine: str
    model: str | None = Field(description="The `tldr` agent's model; None offline.")
    gold_combination: str
    means: dict[str, Scores]
    mean_words: dict[str, float]
    seconds: float
    per_example: list[TldrResult]


class ScitldrLine(BaseModel):
    """A line of SciTLDR-A's JSONL: `source` (the abstract's sentences), `target` (the gold
    TL;DRs), `title`."""

    # Some copies write the paper id as a number.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    paper_id: str
    title: str = ""
    source: list[str]
    target: list[str]

    @field_validator("target")
    @classmethod
    def _golds(cls, target: list[str]) -> list[str]:
        golds = [gold for gold in target if gold.strip()]
        if not golds:
            raise ValueError("no gold TL;DR")
        return golds

    def example(self) -> TldrExample:
        return TldrExample(
            paper_id=self.paper_id,
            title=self.title,
            abstract=" ".join(self.source),
            golds=self.target,
        )


def _csv_examples(dataset: Path) -> Iterator[TldrExample]:
    """The rows of `scitldr_a_test_titles_abstracts.csv`: id,title,abstract,tldr_first,
    tldrs_all."""
    rows = csv.DictReader(dataset.read_text(encoding="utf-8").splitlines())
    for number, row in enumerate(rows, 2):
        try:
            golds = [g.strip() for g in row["tldrs_all"].split(_GOLD_SEPARATOR) if g.strip()]
            yield TldrExample(
                paper_id=row["id"], title=row["title"], abstract=row["abstract"], golds=golds
            )
        except (KeyError, AttributeError, ValidationError):
            raise line_error(
                dataset, number, "not a SciTLDR-A paper (title, abstract, gold TL;DRs)"
            ) from None


def read_examples(dataset: Path, limit: int | None = None) -> list[TldrExample]:
    """The papers of a SciTLDR-A JSONL or CSV; a ValueError names the file and the line."""
    dataset = Path(dataset)
    if not dataset.is_file():
        raise ValueError(f"{dataset}: no such file")
    # Read one by one, up to `limit`.
    readers = (
        _csv_examples(dataset)
        if dataset.suffix == ".csv"
        else (line.example() for _, line in json_lines(dataset, ScitldrLine))
    )
    examples = list(itertools.islice(readers, limit))
    if not examples:
        raise ValueError(f"{dataset}: no paper in it")
    return examples


def best_of_golds(candidate: str, golds: list[str]) -> tuple[Scores, int]:
    """The scores against the gold with the highest ROUGE-1 F, and that gold's index."""
    scored = [rouge(candidate, gold) for gold in golds]
    best = max(range(len(scored)), key=lambda index: scored[index].rouge1)
    return scored[best], best


def first_sentence(ranked: list[str]) -> str:
    return ranked[0] if ranked else ""


def evaluate_tldr(
    groups: SettingsGroups,
    dataset: Path,
    limit: int | None = None,
    client: ModelClient | None = None,
) -> TldrEvaluation:
    """litpipe's TL;DRs and the baselines' on the first `limit` papers, scored; `client` (a
    step's, recording its usage) or one of its own when the writer is routed to a model."""
    from litpipe.agents.tldr import TldrAgent, write_tldrs
    from litpipe.extractive.tldr import TldrInput

    started = time.perf_counter()
    examples = read_examples(dataset, limit)
    asker = evaluation_asker(groups["llm"], groups["paths"], [TldrAgent.name], client)
    written = write_tldrs([TldrInput(title=e.title, abstract=e.abstract) for e in examples], asker)
    results = []
    for example, tldr in zip(examples, written, strict=True):
        outputs = {
            "litpipe": tldr,
            "lead-1": first_sentence(lead([example.abstract], _ANY_SENTENCE)),
            "textrank-1": first_sentence(textrank([example.abstract], _ANY_SENTENCE)),
        }
        best = {name: best_of_golds(text, example.golds) for name, text in outputs.items()}
        results.append(
            TldrResult(
                paper_id=example.paper_id,
                outputs=outputs,
                scores={name: scores for name, (scores, _) in best.items()},
                best_gold={name: index for name, (_, index) in best.items()},
            )
        )
    means = {name: mean_scores([r.scores[name] for r in results]) for name in SYSTEMS}
    return TldrEvaluation(
        dataset=str(dataset),
        examples=len(results),
        engine=asker.engine(TldrAgent.name),
        model=models(asker, [TldrAgent.name]),
        gold_combination="max over the gold TL;DRs by ROUGE-1 (SciTLDR's multi-target max)",
        means=means,
        mean_words={
            name: sum(len(r.outputs[name].split()) for r in results) / len(results)
            for name in SYSTEMS
        },
        seconds=round(time.perf_counter() - started, 3),
        per_example=results,
    )


def figures(evaluation: TldrEvaluation) -> dict[str, float]:
    """Each system's mean ROUGE F-measures, `<system>_<metric>` (`-` as `_`)."""
    return rouge_figures(evaluation.means)


def format_table(evaluation: TldrEvaluation) -> str:
    """A Markdown table: one row per system, ROUGE-1/2/L F-measures in percent, mean words."""
    return rouge_table(
        f"TL;DR on {Path(evaluation.dataset).name}: {counted(evaluation.examples, 'paper')}, "
        f"writer {evaluation.engine}; golds: {evaluation.gold_combination}",
        evaluation.means,
        evaluation.mean_words,
    )
