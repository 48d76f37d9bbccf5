"""ROUGE of written text against a gold text, as every `litpipe eval` dataset scores it.

ROUGE-1, ROUGE-2 and ROUGE-L F-measures from Google's `rouge-score` with Porter stemming.
Citations (`[1]`, `[a; b]`, `[paper_id:page]`, and `@cite` markers) are removed from both sides
before scoring (`plain`): they are not words of the prose, and a gold text's numbering is never
the system's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
_CITATION = re.compile(r"\[[^\[\]\n]{0,200}\]|@cite\w*")


class Scores(BaseModel):
    rouge1: float
    rouge2: float
    # rouge-score's names.
    rougeL: float


def without_citations(text: str) -> str:
    """`text` without citations, on one line."""
    return " ".join(_CITATION.sub(" ", text).split())


def rouge(candidate: str, reference: str) -> Scores:
    """ROUGE-1/2/L F-measures with stemming."""
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    found = scorer.score(reference, candidate)
    return Scores(**{name: found[name].fmeasure for name in ROUGE_TYPES})


def mean_scores(scores: Sequence[Scores]) -> Scores:
    """Each F-measure's mean over `scores` (not empty)."""
    return Scores(
        **{name: sum(getattr(s, name) for s in scores) / len(scores) for name in ROUGE_TYPES}
    )


def rouge_figures(means: Mapping[str, Scores]) -> dict[str, float]:
    """Each system's mean F-measures as `<system>_<metric>` (a `-` in a name as `_`): the
    figures an evaluation asset tracks over time."""
    return {
        f"{name.replace('-', '_')}_{metric}": getattr(scores, metric)
        for name, scores in means.items()
        for metric in ROUGE_TYPES
    }


def rouge_table(heading: str, means: Mapping[str, Scores], mean_words: Mapping[str, float]) -> str:
    """A Markdown table under `heading`: one row per system, ROUGE-1/2/L F-measures in
    percent, mean words."""
    lines = [
        heading,
        "",
        "| system | ROUGE-1 | ROUGE-2 | ROUGE-L | words |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, scores in means.items():
        lines.append(
            f"| {name} | {100 * scores.rouge1:.2f} | {100 * scores.rouge2:.2f} | "
            f"{100 * scores.rougeL:.2f} | {mean_words[name]:.1f} |"
        )
    return "\n".join(lines) + "\n"
