"""The offline engine of the `answer_judge` agent: does a query-focused summary state a
multiple-choice question's ideal answer, or one of its distractors?

A deterministic rule over words: the summary states an answer when every content term of the
answer is among the summary's terms. Terms are lower-cased runs of letters and digits (so
"Cas9-XTEN-hExo1" gives cas9, xten, hexo1 and "K548R" stays one term), a plural s dropped, stop
words left out. A distractor counts as stated only when its terms are not all terms of the ideal
answer (stating the ideal would state it too). The rule reads words, not meaning: a negated
answer ("no significant differences" minus the stop word "no") or one paraphrased in other words
is graded as its terms say.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from litpipe.text import STOPWORDS, normalise

_TERM = re.compile(r"[a-z0-9]+")
OFFLINE_RULE = "every content term of the answer among the summary's terms"


class AnswerJudgeInput(BaseModel):
    question: str
    ideal: str
    distractors: list[str]
    summary: str


class AnswerVerdict(BaseModel):
    states_ideal: bool
    stated_distractors: list[str] = Field(description="Wrong answers the summary states.")
    reason: str


def terms(text: str) -> set[str]:
    """The content terms of `text`, as the offline rule compares them."""
    return {normalise(term) for term in _TERM.findall(text.casefold()) if term not in STOPWORDS}


def states(summary_terms: set[str], answer: str) -> bool:
    """Whether a summary with these terms states `answer` (an answer without terms: never)."""
    wanted = terms(answer)
    return bool(wanted) and wanted <= summary_terms


def offline_verdict(inputs: AnswerJudgeInput) -> AnswerVerdict:
    """The word rule of the module docstring."""
    found = terms(inputs.summary)
    ideal = terms(inputs.ideal)
    stated = [d for d in inputs.distractors if states(found, d) and not terms(d) <= ideal]
    return AnswerVerdict(
        states_ideal=states(found, inputs.ideal),
        stated_distractors=stated,
        reason=f"offline rule: {OFFLINE_RULE}",
    )
