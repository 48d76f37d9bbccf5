"""Scripted replies of every litpipe agent, for running the whole chain against the stub server.

`answer_as_agent(request_body)` reads a request the way a model would (which agent by the
schema it asks for; paper ids, question ids, insight ids and passage markers from the prompt)
and answers with a valid reply built from the prompt's own text: questions end with "?",
answers quote their first passage and cite its marker, insights cite their pair's marker, the
narrative and the syntheses cite every paper. Deterministic, so identical requests get identical
replies and the LLM cache behaves as with a real model at temperature 0.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from litpipe.text import markers_in
from litpipe_tests.stub_llm import StubLLM, example_from_schema, requested_schema

_PASSAGE = re.compile(r"(\[[A-Za-z0-9._-]+:\d+\]) \([^)\n]*\)\n([^\n]+)")
_QUESTION_ID = re.compile(r"\b([A-Za-z0-9._-]+:[qfx]\d{2})\b")
_INSIGHT = re.compile(r"^(i\d{2}) \(([^)]*)\):", re.M)
_PAPER_ID = re.compile(r"^Paper id: (\S+)$", re.M)
_COUNT = re.compile(r"\bWrite (\d+)\b")
_ASPECT = re.compile(r"^Aspect: (.+)$", re.M)
_MOST_ASPECTS = re.compile(r"\bat most (\d+) aspects\b")


def _user(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip(), maxsplit=1)[0].rstrip(".")


def _cited_markers(text: str) -> list[str]:
    """Distinct markers of the prompt, one per paper, in order."""
    by_paper: dict[str, str] = {}
    for paper_id, page in markers_in(text):
        by_paper.setdefault(paper_id, f"[{paper_id}:{page}]")
    return list(by_paper.values())


def _answer(text: str) -> str:
    passages = _PASSAGE.findall(text)
    if not passages:
        return "The retrieved passages do not answer this question."
    marker, passage = passages[0]
    return f"{_first_sentence(passage)} {marker}."


def _count(text: str, default: int) -> int:
    found = _COUNT.search(text)
    return int(found.group(1)) if found else default


def _insights(text: str) -> dict[str, Any]:
    ids = list(dict.fromkeys(_QUESTION_ID.findall(text)))
    insights = []
    for index, question_id in enumerate(ids):
        start = text.index(question_id)
        end = text.index(ids[index + 1]) if index + 1 < len(ids) else len(text)
        markers = _cited_markers(text[start:end])
        cited = f" {markers[0]}" if markers else ""
        insights.append({"question_id": question_id, "text": f"The pair reports a finding{cited}."})
    return {"insights": insights}


def _relations(text: str) -> dict[str, Any]:
    insights = _INSIGHT.findall(text)
    relationships = []
    for (first, first_paper), (second, second_paper) in itertools.pairwise(insights):
        if first_paper != second_paper and "comparative" not in first_paper + second_paper:
            relationships.append(
                {
                    "source": first,
                    "target": second,
                    "type": "extension",
                    "explanation": "The second builds on the first.",
                }
            )
            break
    markers = _cited_markers(text)
    sentences = [f"One paper reports a finding {marker}." for marker in markers[:4]]
    if markers[4:]:
        sentences.append(f"Others add more {' '.join(markers[4:])}.")
    while len(sentences) < 3:
        sentences.append("The papers share a theme.")
    return {
        "relationships": relationships,
        "theme": "The papers study one subject.",
        "narrative": " ".join(sentences),
    }


_PAIR = re.compile(r"^Pair (i\d{2}) \(([^)]*)\)\. ", re.M)


def _analysis(text: str) -> dict[str, Any]:
    """The one-call analysis: an insight per pair citing its first marker, each pair related to
    the next of another paper, and a narrative citing every paper."""
    pairs = _PAIR.findall(text)
    starts = [match.start() for match in _PAIR.finditer(text)] + [len(text)]
    insights = []
    for index, (insight_id, _) in enumerate(pairs):
        markers = _cited_markers(text[starts[index] : starts[index + 1]])
        cited = f" {markers[0]}" if markers else ""
        insights.append({"insight_id": insight_id, "text": f"The pair reports a finding{cited}."})
    relationships = [
        {
            "source": first,
            "target": second,
            "type": "extension",
            "explanation": "The second builds on the first.",
        }
        for (first, first_paper), (second, second_paper) in itertools.pairwise(pairs)
        if first_paper != second_paper and "comparative" not in first_paper + second_paper
    ]
    return {
        "insights": insights,
        "relationships": relationships,
        "theme": "A shared theme.",
        "narrative": _written(text),
    }


def _written(text: str) -> str:
    return " ".join(f"A finding of this paper {marker}." for marker in _cited_markers(text))


def _cells(text: str) -> dict[str, Any]:
    """A comparison row: each aspect's value is its first passage's first sentence, cited; an
    aspect without a passage is not reported."""
    found = list(_ASPECT.finditer(text))
    cells = []
    for index, aspect in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        cells.append({"aspect": aspect.group(1), "value": _answer(text[aspect.end() : end])})
    for cell in cells:
        if not markers_in(cell["value"]):
            cell["value"] = "not reported"
    return {"cells": cells}


def answer_as_agent(body: dict[str, Any]) -> dict[str, Any]:
    schema = requested_schema(body) or {}
    text = _user(body)
    title = schema.get("title")
    if title == "QuestionsReply":
        return {
            "questions": [
                {"style": "broad", "text": "What does the paper set out to achieve?"},
                {"style": "broad", "text": "What does the paper find?"},
                {"style": "inner_workings", "text": "How is the method designed?"},
                {"style": "inner_workings", "text": "Which mechanisms drive the results?"},
            ]
        }
    if title == "AnswerReply":
        return {"answer": _answer(text)}
    if title == "ViewReply":
        return {"text": _answer(text)}
    if title == "ExtractorReply":
        passages = _PASSAGE.findall(text)
        return {"spans": [{"marker": m, "quote": _first_sentence(p)} for m, p in passages[:1]]}
    if title == "CrossPaperQuestionsReply":
        ids = _PAPER_ID.findall(text)
        pairs = list(itertools.pairwise(ids))[: _count(text, 3)]
        return {
            "questions": [
                {"text": f"What distinguishes {a} from {b}?", "papers": [a, b]} for a, b in pairs
            ]
        }
    if title == "InsightsReply":
        return _insights(text)
    if title == "RelationsReply":
        return _relations(text)
    if title == "AnalysisReply":
        return _analysis(text)
    if title == "FollowUpsReply":
        asked = ["What else does the paper measure?", "What are the paper's limitations?"]
        return {"questions": [{"text": q} for q in asked[: _count(text, 2)]]}
    if title == "WrittenReply":
        return {"title": "A synthesis", "text": _written(text)}
    if title == "SummaryReply":
        return {"summary": _written(text)}
    if title == "AspectsReply":
        most = _MOST_ASPECTS.search(text)
        aspects = ["organism", "method", "main finding", "limitations"]
        return {"aspects": aspects[: int(most.group(1)) if most else len(aspects)]}
    if title == "CellsReply":
        return _cells(text)
    return example_from_schema(schema)


def serve_every_agent(stub: StubLLM) -> None:
    """Makes the stub answer every agent routed to it (`openai/stub...`) as `answer_as_agent`."""
    stub.respond("stub", answer_as_agent)


def judge_verdict(
    paper_id: str, approved: bool, accepted: list[bool], topics: list[str]
) -> dict[str, Any]:
    """A `summary_judge` reply ruling on the paper's diagnostic questions `<paper_id>:d0`, ..."""
    return {
        "judgements": [
            {"question_id": f"{paper_id}:d{index}", "reason": "compared", "accepted": ok}
            for index, ok in enumerate(accepted)
        ],
        "mismatch_topics": topics,
        "approved": approved,
    }
