"""The line an output written by litpipe's offline engine shows where a reader looks (under its
title, in the terminal above its figures): that the engine wrote it, and what the engine cannot
do there. The one place that words it: every page, file and command takes its text from here.

The offline engine (README, "Models") is deterministic and extractive: it copies the papers'
sentences and picks them by heuristics, it neither reads nor writes. A reader must not take its
output for a method's result. Each output names its parts and the engine that wrote each; the
notice names the offline ones and their limits ("partly", with the rest's engines, when a model
wrote some), and is None when a model wrote every part. A part a model wrote only in part, its
other items written offline in the model's place (the reply unusable, the model unreachable),
is named with its count of such items: a model was configured, and the reader must still know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from litpipe.agents.base import OFFLINE_ENGINE, FallbackShare, fallback_share
from litpipe.schemas import (
    CollectionAnswer,
    ComparisonTable,
    CrossPaperQuestions,
    Digest,
    OutputGrades,
    PaperAnswers,
    QuerySummary,
    RelatedWork,
    RelationshipAnalysis,
    Synthesis,
)

ENGINE = "litpipe's offline extractive engine"
ADVICE = "Configure a model (README, Models) for written prose."

# What the offline engine cannot do, by what it wrote; each a clause of the notice.
COPIED = (
    "every sentence is copied from the papers (or is a fixed template phrase) and ordered by a "
    "heuristic"
)
PLAIN = (
    "the plain-language summary is each paper's most central insight, copied with its jargon (the "
    "engine cannot rephrase)"
)
TYPED = "relationship types come from shared terms and cue words, not from reading"
ANSWERED = "answers are the evidence sentences that share the most terms with each question"
INSIGHTS = "each key insight is a sentence copied from the paper's answers, picked by a heuristic"
QUERY_SUMMARY = (
    "every sentence of the summary is copied from the paper, picked for the terms it shares "
    "with the query"
)
QUERY_QUESTIONS = "the diagnostic questions are fixed frames around phrases of the paper"
QUERY_QA = (
    "the diagnostic answers are the summary's sentences sharing the most terms with each question"
)
JUDGE = (
    "the judge only checks that each diagnostic answer holds the words of the paper's sentence "
    "that best matches its question, so its approval is a word count, not a reading"
)
# Both sides of the loop offline: the summarizer adds the sentences holding the very words the
# judge counts, so the loop ends by construction.
CONVERGENCE = (
    "the loop's convergence is built into the offline engine (its judge only checks that each "
    "diagnostic answer holds the words of the paper's sentence that best matches its question, "
    "and its summarizer adds, for each topic the judge names, the sentence holding that topic's "
    "words), so the iterations and approvals measure nothing about MAIS"
)
COLLECTION_ANSWER = (
    "every sentence of the answer is copied from the passages retrieved, picked for the terms it "
    "shares with the question"
)
RELATED_WORK = "every sentence is copied from a reference abstract, picked by query-focused LexRank"
DEBATE = "the relevance scores count the idea's terms in each abstract: no argument was weighed"
COMPARED = (
    "each cell is a sentence of the paper's passages picked for the aspect's terms and cue words, "
    "cut to its first words: no cell was read"
)
ASPECTS = "the aspects are a fixed set (problem, approach, data, ...), not proposed from the papers"
# The MAIS agents whose engines decide what convergence figures mean.
SUMMARIZER, JUDGE_AGENT = "query_summary", "summary_judge"


@dataclass(frozen=True)
class Part:
    """One part of an output, as its reader names it, what wrote it, and what the offline
    engine cannot do there."""

    name: str
    engine: str
    limits: str


def offline(engine: str) -> bool:
    return engine == OFFLINE_ENGINE


def offline_notice(
    parts: Sequence[Part], grades: OutputGrades | None = None, advice: str = ADVICE
) -> str | None:
    """The notice of an output made of `parts`: None when no part is offline. `grades` are the
    output's sentence grades, if any: a model grader did check it."""
    written_offline = [part for part in parts if offline(part.engine)]
    fell_back = _fallback_sentence(parts)
    if not written_offline:
        return fell_back
    models = list(dict.fromkeys(p.engine for p in parts if not offline(p.engine)))
    limits = "; ".join(dict.fromkeys(part.limits for part in written_offline))
    if models:
        named = ", ".join(dict.fromkeys(part.name for part in written_offline))
        opening = f"Partly written by {ENGINE} ({named}; the rest by {', '.join(models)})"
        what = "those parts"
    else:
        opening, what = f"Written by {ENGINE}", "this"
    if grades is None or offline(grades.grader):
        closing = f"no model wrote or checked {what}"
    else:
        closing = f"no model wrote {what} ({grades.grader} graded its sentences)"
    notice = f"{opening}: {limits}; {closing}. {advice}"
    return f"{notice} {fell_back}" if fell_back else notice


def _fallback_sentence(parts: Sequence[Part]) -> str | None:
    """What of `parts` the offline engine wrote in their model's place, counted per part, with
    the first reason; None where no model's item fell back."""
    shares: dict[str, list[FallbackShare]] = {}
    limits: dict[str, str] = {}
    for part in parts:
        share = fallback_share(part.engine)
        if share is not None:
            shares.setdefault(part.name, []).append(share)
            limits[part.name] = part.limits
    if not shares:
        return None
    counted = "; ".join(
        f"{name}, {sum(s.fell for s in found)} of {sum(s.items for s in found)} items"
        for name, found in shares.items()
    )
    first = next(iter(shares.values()))[0].reason
    return (
        f"Written in part by {ENGINE} in the model's place (its reply could not be used, or it "
        f"could not be reached): {counted}. There, {'; '.join(dict.fromkeys(limits.values()))}. "
        f"First reason: {first}. The next `litpipe run` with the model working asks those items "
        "again, and only them."
    )


def markdown_lines(notice: str | None) -> list[str]:
    """The notice as a Markdown quote and a blank line, to put under a title; nothing for
    None."""
    return [f"> {notice}", ""] if notice else []


def synthesis_notice(
    written: Synthesis, analysis: RelationshipAnalysis | None = None
) -> str | None:
    """`synthesis.md` or `plain.md`: the text, and the analysis it is written from."""
    own = COPIED if written.audience == "expert" else PLAIN
    parts = [Part(f"the {_audience(written)}", written.engine, own)]
    if analysis is not None:
        parts.append(Part("the relationship analysis it is built from", analysis.engine, TYPED))
    return offline_notice(parts, written.grades)


def collection_notice(
    synthesis: Synthesis,
    plain: Synthesis,
    analysis: RelationshipAnalysis,
    answers: Mapping[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
) -> str | None:
    """`synthesis.html`: both syntheses, the relationship map and every answer it shows."""
    parts = [
        Part("the synthesis", synthesis.engine, COPIED),
        Part("the plain-language summary", plain.engine, PLAIN),
        Part("the relationship map", analysis.engine, TYPED),
        *(Part("the answers", paper.engine, ANSWERED) for paper in answers.values()),
        *(
            [Part("the comparative answers", comparative.engine, ANSWERED)]
            if comparative is not None and comparative.answers
            else []
        ),
    ]
    return offline_notice(parts, synthesis.grades)


def digest_notice(digest: Digest) -> str | None:
    """A nightly digest: its key insights and its relationships. None for a day without papers:
    nothing of it is written."""
    if not digest.papers:
        return None
    # A digest made before each agent's engine was recorded: its one engine wrote both.
    engines = digest.engines or {"insights": digest.engine, "relationships": digest.engine}
    return offline_notice(
        [
            Part("the key insights", engines.get("insights", digest.engine), INSIGHTS),
            Part("the relationships", engines.get("relationships", digest.engine), TYPED),
        ],
        advice="Configure a model (README, Models) for insights and relationships a model read.",
    )


def query_summary_notice(result: QuerySummary) -> str | None:
    """A query-focused summary: the summary and each agent of the loop that made it."""
    engines = result.engines
    summarizer = engines.get(SUMMARIZER, result.engine)
    judge = engines.get(JUDGE_AGENT, "")
    both = offline(summarizer) and offline(judge)
    parts = [
        Part("the summary", summarizer, QUERY_SUMMARY),
        Part("the diagnostic questions", engines.get("query_questions", ""), QUERY_QUESTIONS),
        Part("the diagnostic answers", engines.get("summary_qa", ""), QUERY_QA),
        Part("the judge", judge, CONVERGENCE if both else JUDGE),
    ]
    return offline_notice(
        [part for part in parts if part.engine],
        result.grades,
        advice="Configure a model (README, Models) for written prose and a MAIS loop that reads.",
    )


def collection_answer_notice(result: CollectionAnswer) -> str | None:
    """A question's answer from a collection: the answer (its views written alike)."""
    return offline_notice([Part("the answer", result.engine, COLLECTION_ANSWER)], result.grades)


def comparison_notice(table: ComparisonTable) -> str | None:
    """The comparison table: its aspects (unless the user chose them) and its cells."""
    parts = [Part("the aspects", table.aspects_engine, ASPECTS)] * (
        table.aspects_engine != "settings"
    )
    parts += [Part("the cells", cell.engine, COMPARED) for row in table.rows for cell in row.cells]
    return offline_notice(parts)


def related_work_notice(related: RelatedWork) -> str | None:
    """A related-work section: the section, and the relevance scores that chose its
    references."""
    return offline_notice(
        [
            Part("the section", related.engine, RELATED_WORK),
            Part("the relevance scores", related.debate_engine, DEBATE),
        ],
        related.grades,
    )


def convergence_notice(engines: Mapping[str, Iterable[str]]) -> str | None:
    """What `litpipe eval mais` says above its table when the summarizer or the judge of any
    run was offline (`engines`: each agent's engines over the runs)."""
    summarizers = set(engines.get(SUMMARIZER, ()))
    judges = set(engines.get(JUDGE_AGENT, ()))
    if OFFLINE_ENGINE not in summarizers | judges:
        return None
    if summarizers == judges == {OFFLINE_ENGINE}:
        why = f"Offline run: {CONVERGENCE}"
    elif OFFLINE_ENGINE in judges:
        why = f"Offline judge: {JUDGE}; these figures measure that count, not MAIS"
    else:
        why = (
            f"Offline summarizer: {QUERY_SUMMARY}; these figures measure how extractive "
            "summaries meet the judge, not MAIS's summarizer"
        )
    return f"{why}. Configure a model (README, Models) to measure MAIS."


def _audience(written: Synthesis) -> str:
    return "synthesis" if written.audience == "expert" else "plain-language summary"
