"""Sentence-level grading of a written output: each sentence split into its cited segments, each
segment graded against its own markers' passages; completeness against the relationship
analysis' key insights; coherence by a judge.

A segment is a sentence's text up to and with one group of markers: "A does X [a:1] while B
does Y [b:2]." is two segments, "A does X [a:1]" graded against a's passages and "while B does
Y [b:2]." against b's, so a comparative sentence whose second half no passage holds is flagged
at that half. A sentence's verdict is its worst segment's.

Grading goes through the `claim_judge` agent: offline its engine maps the calibrated support
score (`litpipe.retrieval.support`, every segment scored in one embedding batch here) to a
verdict; with a model, one concurrent batch through the client, so its cache, usage ledger,
routing and `llm.concurrency` apply. Coherence has no offline grade.

Generic over citation formats: `keys_in` reads a bracket's markers. `page_markers` (the default)
reads `[paper_id:page]` (syntheses, plain and query summaries); `id_markers` reads `[id]`
(related work). `passages` maps each marker (as `keys_in` names it) to the texts it cites.

Pure Python: the Dagster checks, the CLI and a notebook share it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from litpipe.agents.asker import Asker
from litpipe.agents.claim_judge import ClaimJudgeAgent
from litpipe.agents.coherence_judge import CoherenceInput, CoherenceJudgeAgent, CoherenceReply
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped
from litpipe.extractive.claim_judge import ClaimInput
from litpipe.extractive.related_work import cited_ids
from litpipe.retrieval.support import Encoder, support_scores
from litpipe.schemas import (
    Citation,
    Insight,
    OutputGrades,
    RelationshipAnalysis,
    SegmentGrade,
    SentenceGrade,
    SentenceVerdict,
)
from litpipe.settings import GradingSettings
from litpipe.text import BRACKETED, counted, markdown_blocks, marker, markers_in, sentences

KeysIn = Callable[[str], list[str]]
"""Reads one bracket (`[...]`, brackets included): the markers it holds, none when it is not a
citation."""

GRADING_AGENTS = ("claim_judge", "coherence_judge")
SUPPORT_CHECK = "support"
COHERENCE_CHECK = "coherence"
# A text of the page scale passes coherence at 3 of 5 ("readable, but parts read as a list"):
# below it the judge found contradictions or no line of argument.
LEAST_COHERENCE = 3

# Any bracketed span; `keys_in` decides whether it is a citation.
# A segment of fewer words (markers removed) names a subject, not a claim ("A [a:1] and B [b:2]
# both use X"): it joins the next segment, or the one before when it is the last.
_LEAST_CLAIM_WORDS = 4
_REFERENCES_HEADINGS = frozenset({"references", "sources", "bibliography"})
# Sentences quoted in a description, a table or a list are cut to this length.
_QUOTE_CHARS = 200
_WORST_FIRST: tuple[SentenceVerdict, ...] = ("unsupported", "partially_supported", "supported")


def page_markers(bracket: str) -> list[str]:
    """The `[paper_id:page]` markers of a bracket (`[a:3; b:7]` holds two), as written."""
    return [marker(paper_id, page) for paper_id, page in markers_in(bracket)]


def id_markers(bracket: str) -> list[str]:
    """The reference ids of a related-work bracket (`[w1]`, `[w1; w2]`)."""
    return cited_ids(bracket)


def cited_passages(
    citations: Sequence[Citation], chunk_texts: Mapping[str, str]
) -> dict[str, list[str]]:
    """`passages` for a text citing `[paper_id:page]`: each citation's marker to the texts of
    its chunks (those in `chunk_texts`; a chunk not there cites nothing)."""
    return {
        cited.marker: [
            chunk_texts[chunk_id] for chunk_id in cited.chunk_ids if chunk_id in chunk_texts
        ]
        for cited in citations
    }


@dataclass(frozen=True)
class Segment:
    """One cited segment: as written, its claim (markers removed) and its markers."""

    text: str
    claim: str
    markers: list[str]


def prose_sentences(markdown: str, keys_in: KeysIn = page_markers) -> list[str]:
    """The sentences of a Markdown text, read as the page shows it: headings left out, each
    list item on its own, and nothing from a references section on. A bracket of markers
    written after a sentence's full stop ("... storage. [a:3]") stays with that sentence."""
    found: list[str] = []
    for block in markdown_blocks(markdown):
        if block.kind == "heading":
            if block.texts[0].strip().lower() in _REFERENCES_HEADINGS:
                break
            continue
        for text in block.texts:
            spans = [span.text for span in sentences(text)]
            for index, span in enumerate(spans):
                if index and _only_markers(span, keys_in):
                    found[-1] += " " + span
                else:
                    found.append(span)
    return found


def segments(sentence: str, keys_in: KeysIn = page_markers) -> list[Segment]:
    """The cited segments of a sentence, in order; none for a sentence without a marker.

    Each group of markers ends a segment; brackets with nothing but punctuation between them
    are one group, text after the last group belongs to the last segment, and a segment of
    fewer than 4 words (a subject: "A [a:1] and B [b:2] both ...") joins its neighbour."""
    groups = [
        (found.start(), found.end(), keys)
        for found in BRACKETED.finditer(sentence)
        if (keys := keys_in(found.group()))
    ]
    pieces: list[tuple[str, list[str]]] = []
    start = 0
    for group_start, group_end, keys in groups:
        between = sentence[start:group_start]
        if pieces and not any(char.isalnum() for char in between):
            pieces[-1] = (pieces[-1][0] + sentence[start:group_end], pieces[-1][1] + keys)
        else:
            pieces.append((sentence[start:group_end], keys))
        start = group_end
    if not pieces:
        return []
    pieces[-1] = (pieces[-1][0] + sentence[start:], pieces[-1][1])
    merged: list[tuple[str, list[str]]] = []
    for text, keys in pieces:
        if merged and _words(merged[-1][0], keys_in) < _LEAST_CLAIM_WORDS:
            merged[-1] = (merged[-1][0] + text, merged[-1][1] + keys)
        else:
            merged.append((text, keys))
    if len(merged) > 1 and _words(merged[-1][0], keys_in) < _LEAST_CLAIM_WORDS:
        last = merged.pop()
        merged[-1] = (merged[-1][0] + last[0], merged[-1][1] + last[1])
    # The punctuation after a group of markers (", whereas ...") starts no claim.
    return [
        Segment(text.lstrip(" ,;:").strip(), _claim(text, keys_in), list(dict.fromkeys(keys)))
        for text, keys in merged
    ]


def grade_claims(
    claims: Sequence[Segment],
    passages: Mapping[str, Sequence[str]],
    grading: GradingSettings,
    asker: Asker,
    encoder: Encoder | None = None,
) -> list[SegmentGrade]:
    """Each segment against the passages of its own markers, in order, by the `claim_judge`
    agent's route: offline, the support score (with `encoder`, the calibrated cosine, all in
    one batch; without, the share of terms) mapped to a verdict by `grading.support_threshold` and,
    with an encoder, `grading.partial_support_threshold`; with a model, one concurrent batch of
    judge calls (`client` required)."""
    agent = ClaimJudgeAgent()
    cited = [[text for key in claim.markers for text in passages.get(key, [])] for claim in claims]
    offline = asker.offline(agent)
    # Only the offline engine reads the score: a model route skips the embedding.
    scores = (
        support_scores(
            [(claim.claim, texts) for claim, texts in zip(claims, cited, strict=True)], encoder
        )
        if offline
        else [None] * len(claims)
    )
    inputs = [
        ClaimInput(
            claim=claim.claim,
            passages=texts,
            offline_score=score,
            threshold=grading.support_threshold,
            # The middle band is measured for the embedding cosine, not for the share of terms.
            partial_threshold=grading.partial_support_threshold if encoder is not None else None,
        )
        for claim, texts, score in zip(claims, cited, scores, strict=True)
    ]
    replies = asker.ask_each(agent, inputs)
    return [
        SegmentGrade(
            text=claim.text,
            markers=claim.markers,
            verdict=reply.verdict,
            reason=" ".join(reply.reason.split()),
            score=score.score if score is not None else None,
            missing=score.missing if score is not None else [],
        )
        for claim, reply, score in zip(claims, replies, scores, strict=True)
    ]


def grade_output(
    text: str,
    passages: Mapping[str, Sequence[str]],
    grading: GradingSettings,
    asker: Asker,
    encoder: Encoder | None = None,
    keys_in: KeysIn = page_markers,
) -> OutputGrades:
    """Every prose sentence of `text` (Markdown) graded by `grade_sentences`."""
    graded = grade_sentences(
        prose_sentences(text, keys_in), passages, grading, asker, encoder, keys_in
    )
    return OutputGrades(grader=asker.engine(ClaimJudgeAgent.name), sentences=graded)


def grade_sentences(
    texts: Sequence[str],
    passages: Mapping[str, Sequence[str]],
    grading: GradingSettings,
    asker: Asker,
    encoder: Encoder | None = None,
    keys_in: KeysIn = page_markers,
) -> list[SentenceGrade]:
    """Each text graded as one sentence, in order (a prose sentence, a table's cell): its
    segments by `grade_claims`, all in one batch, the text by its worst segment, `uncited`
    when it has no marker."""
    split = [(text, segments(text, keys_in)) for text in texts]
    every_segment = [segment for _, found in split for segment in found]
    grades = iter(grade_claims(every_segment, passages, grading, asker, encoder))
    graded: list[SentenceGrade] = []
    for text, found in split:
        own = [next(grades) for _ in found]
        graded.append(SentenceGrade(sentence=text, verdict=_worst(own), segments=own))
    return graded


def flagged(grades: OutputGrades) -> list[SentenceGrade]:
    """The sentences with a segment not fully supported, in text order."""
    return [s for s in grades.sentences if s.verdict in ("unsupported", "partially_supported")]


def faithfulness(grades: OutputGrades, what: str) -> CheckOutcome:
    """The check of an output's grades (`what` names the output in the description): passes
    when it has a cited sentence and every cited segment is supported. Metadata: the counts,
    the flagged and uncited sentences, every sentence's grades (`sentences`), and a Markdown
    table of the flagged segments (`flagged_table`, in `markdown`)."""
    counts = {verdict: 0 for verdict in (*_WORST_FIRST, "uncited")}
    for sentence in grades.sentences:
        counts[sentence.verdict] += 1
    cited = len(grades.sentences) - counts["uncited"]
    bad = flagged(grades)
    if not cited:
        description = f"the {what} has no cited sentence"
    else:
        description = (
            f"{counts['supported']} of {counted(cited, 'cited sentence')} of the {what} "
            f"{'is' if counts['supported'] == 1 else 'are'} supported by their passages "
            f"(graded by {grades.grader})"
        )
        if counts["partially_supported"]:
            description += f"; {counts['partially_supported']} partially"
        if bad:
            description += f"; first flagged: {_quoted(bad[0].sentence)!r}"
    metadata: dict[str, JsonValue] = {
        "grader": grades.grader,
        "cited_sentences": cited,
        "supported_sentences": counts["supported"],
        "partially_supported_sentences": counts["partially_supported"],
        "unsupported_sentences": counts["unsupported"],
        "uncited_sentences": counts["uncited"],
        "unsupported": [_quoted(s.sentence) for s in bad if s.verdict == "unsupported"],
        "partially_supported": [
            _quoted(s.sentence) for s in bad if s.verdict == "partially_supported"
        ],
        "uncited": [_quoted(s.sentence) for s in grades.sentences if s.verdict == "uncited"],
        "sentences": [s.model_dump(mode="json") for s in grades.sentences],
    }
    return CheckOutcome(
        passed=cited > 0 and not bad,
        description=description,
        metadata=metadata,
        markdown={"flagged_table": _flagged_table(bad)} if bad else {},
    )


def key_insights(analysis: RelationshipAnalysis) -> list[Insight]:
    """The insights a synthesis must carry: those in a relationship (what relational synthesis
    is about, and what its relationship map cites), or every insight when none is related."""
    related = {
        id_ for relation in analysis.relationships for id_ in (relation.source, relation.target)
    }
    key = [insight for insight in analysis.insights if insight.insight_id in related]
    return key or list(analysis.insights)


def completeness(
    text: str,
    analysis: RelationshipAnalysis,
    threshold: float,
    encoder: Encoder | None = None,
) -> CheckOutcome:
    """Share of the analysis' key insights that a `[paper_id:page]`-citing text covers; passes
    when it covers them all.

    An insight is covered when a sentence citing one of its papers says what it says: the
    insight scored as a claim against those sentences (markers removed) by the support score,
    at `threshold` or above, the bar a sentence meets against the passage it cites."""
    insights = key_insights(analysis)
    claims_by_paper: dict[str, list[str]] = {}
    for sentence in prose_sentences(text):
        claim = _claim(sentence, page_markers)
        for paper_id in dict.fromkeys(paper for paper, _ in markers_in(sentence)):
            claims_by_paper.setdefault(paper_id, []).append(claim)
    pairs = [
        (
            _claim(insight.text, page_markers),
            [c for paper in _papers_of(insight) for c in claims_by_paper.get(paper, [])],
        )
        for insight in insights
    ]
    scores = support_scores(pairs, encoder)
    missed = [
        insight for insight, score in zip(insights, scores, strict=True) if score.score < threshold
    ]
    covered = len(insights) - len(missed)
    description = f"covers {covered} of {len(insights)} key insights of the relationship analysis"
    if missed:
        description += "; first missed: " + repr(_quoted(_claim(missed[0].text, page_markers)))
    return CheckOutcome(
        passed=not missed,
        description=description,
        metadata={
            "key_insights": len(insights),
            "covered": covered,
            "share": round(covered / len(insights), 3) if insights else 1.0,
            "threshold": threshold,
            "score": "semantic" if encoder is not None else "lexical",
            "missed": [
                {"insight_id": insight.insight_id, "text": _quoted(insight.text)}
                for insight in missed
            ],
        },
    )


def check_descriptions(what: str, cited: str) -> dict[str, str]:
    """What the grading checks of an output check, as their specs describe them: `what` names
    the text graded, `cited` what its markers cite."""
    return {
        SUPPORT_CHECK: f"Each cited segment of each sentence of the {what} says what {cited} of "
        "its own markers say: graded by the claim_judge agent (offline: the calibrated support "
        "score against `grading.support_threshold`; with a model: supported, partially supported "
        "or unsupported, with a reason). The metadata holds every sentence's grades.",
        COHERENCE_CHECK: f"The {what} reads as one argument: the coherence_judge agent's score, "
        f"{LEAST_COHERENCE} of 5 or more (not run without a model: the asset's `skipped_checks` "
        "metadata then says so).",
    }


def graded_checks(
    text: str,
    passages: Mapping[str, Sequence[str]],
    what: str,
    grading: GradingSettings,
    asker: Asker,
    encoder: Encoder | None = None,
    keys_in: KeysIn = page_markers,
    title: str = "",
    prose: str | None = None,
) -> tuple[OutputGrades, dict[str, CheckOutcome | CheckSkipped]]:
    """An output's sentence grades (`grade_output`) and the outcomes of its support and
    coherence checks (coherence skipped without a model). Coherence reads `prose` when given
    (a summary without its highlights, say), else `text`."""
    grades = grade_output(text, passages, grading, asker, encoder, keys_in)
    reply = grade_coherence(title, prose if prose is not None else text, asker)
    judge = asker.engine(CoherenceJudgeAgent.name)
    return grades, {
        SUPPORT_CHECK: faithfulness(grades, what),
        COHERENCE_CHECK: coherence(reply, what, judge),
    }


def grade_coherence(title: str, text: str, asker: Asker) -> CoherenceReply | None:
    """The `coherence_judge`'s grade of the text, or None when its route is offline (there is
    no offline coherence grade)."""
    agent = CoherenceJudgeAgent()
    if asker.offline(agent):
        return None
    return asker.ask(agent, CoherenceInput(title=title, text=text))


def coherence(reply: CoherenceReply | None, what: str, grader: str) -> CheckOutcome | CheckSkipped:
    """The coherence check: passes at `LEAST_COHERENCE` or above; with no grade it could not
    run, and says why (it neither passes nor fails): offline, or its model's reply could not be
    used (`grader` then names the model and why)."""
    if reply is None:
        return CheckSkipped(
            reason=f"coherence of the {what} needs a model (route coherence_judge to one, or "
            "set llm.model)"
        )
    if reply.score is None:
        return CheckSkipped(reason=f"coherence of the {what} was not graded ({grader})")
    description = f"the {what} scores {reply.score} of 5 for coherence (graded by {grader})"
    if reply.issues:
        description += "; " + "; ".join(reply.issues[:3])
    return CheckOutcome(
        passed=reply.score >= LEAST_COHERENCE,
        description=description,
        metadata={"score": reply.score, "issues": list(reply.issues), "grader": grader},
    )


def _worst(grades: Sequence[SegmentGrade]) -> SentenceVerdict:
    if not grades:
        return "uncited"
    verdicts = {grade.verdict for grade in grades}
    return next(verdict for verdict in _WORST_FIRST if verdict in verdicts)


def _only_markers(text: str, keys_in: KeysIn) -> bool:
    cited = any(keys_in(found.group()) for found in BRACKETED.finditer(text))
    return cited and not any(char.isalnum() for char in _without_brackets(text, keys_in))


def _without_brackets(text: str, keys_in: KeysIn) -> str:
    return BRACKETED.sub(lambda found: "" if keys_in(found.group()) else found.group(), text)


def _claim(text: str, keys_in: KeysIn) -> str:
    """The text with its citation brackets removed, spaces before punctuation closed up."""
    cleaned = " ".join(_without_brackets(text, keys_in).split())
    return re.sub(r" ([.,;:])", r"\1", cleaned).lstrip(" ,;:")


def _words(text: str, keys_in: KeysIn) -> int:
    return sum(any(char.isalnum() for char in word) for word in _claim(text, keys_in).split())


def _papers_of(insight: Insight) -> list[str]:
    return list(
        dict.fromkeys([insight.paper_id, *insight.papers] if insight.paper_id else insight.papers)
    )


def _flagged_table(bad: Sequence[SentenceGrade]) -> str:
    rows = [
        f"| {grade.verdict.replace('_', ' ')} | {_cell(sentence.sentence)} | {_cell(grade.text)} "
        f"| {_cell(grade.reason)} |"
        for sentence in bad
        for grade in sentence.segments
        if grade.verdict != "supported"
    ]
    return "\n".join(["| verdict | sentence | segment | reason |", "|---|---|---|---|", *rows])


def _cell(text: str) -> str:
    return _quoted(" ".join(text.split())).replace("|", "\\|")


def _quoted(sentence: str) -> str:
    return sentence if len(sentence) <= _QUOTE_CHARS else sentence[: _QUOTE_CHARS - 1] + "…"
