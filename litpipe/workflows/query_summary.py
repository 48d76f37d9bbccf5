"""MAIS query-focused summaries: one paper summarized for a reader's query by a loop of agents.

A question generator writes up to `query_summary.questions` diagnostic questions from the paper
and the query. Then, until the judge approves or `query_summary.max_iterations` passes are spent:
the summarizer writes the summary (revising it from the judge's topics of mismatch after the
first pass), a QA agent answers the diagnostic questions from the summary alone, and the judge
compares those answers with the paper. Every pass is kept: summary, highlights, QA pairs,
verdict, accuracy.

What the summarizer and the judge read is decided once (Self-Route): the whole paper when it
fits `query_summary.context_tokens`, else its evidence (the passages retrieved for the query and
for each question, in reading order), unless the summarizer's first draft finds that evidence
insufficient, and then the whole paper after all (as much of it as fits the context, the
retrieved passages first). The route taken and why are recorded.

The judge checks the summary against the paper, as MAIS does against the source article: a paper
longer than the context is judged whole, in parts that fit it (`judge_parts`), one call each, the
parts' findings combined by rule (`summary_judge.combined_reply`), so an omission outside the
retrieved passages is found too.

Beside the judge's accuracy, each pass has an ACU accuracy: the share of the request's atomic
content units (up to `query_summary.acus` short facts, written once from what the summarizer is
first given) that the summary holds (`summary_acus`).

Runs without Dagster:

    passages = paper_passages(store, embedder.embedder_id, paper_id)
    retriever = HybridRetriever(store, embedder, paper_id, None, papers=[paper_id])
    search = paper_search(retriever, NoReranker(), paper_id, settings.retrieval)
    result = summarize_for_query(
        request, title, abstract, passages, search, settings.query_summary, asker
    )
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import ValidationError

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.query_questions import QueryQuestionsAgent
from litpipe.agents.query_questions import diagnostic_questions as write_questions
from litpipe.agents.query_summary import QuerySummaryAgent
from litpipe.agents.summary_acus import AcuCheckAgent, AcusAgent, acu_accuracy, units_from
from litpipe.agents.summary_judge import JudgeAgent, combined_reply, verdict_from
from litpipe.agents.summary_qa import SummaryQAAgent, answers_by_question
from litpipe.extractive import answering, paper_summary
from litpipe.extractive.query_questions import QueryQuestionsInput
from litpipe.extractive.query_summary import QuerySummaryInput, QuerySummaryReply
from litpipe.extractive.summary_acus import AcuCheckInput, AcusInput
from litpipe.extractive.summary_judge import JudgeInput
from litpipe.extractive.summary_qa import SummaryQAInput
from litpipe.hashing import digest
from litpipe.retrieval.store import RETRIEVED_CHUNK_COLUMNS, ChunkStore
from litpipe.schemas import (
    Citation,
    QuerySummary,
    QuerySummaryRequest,
    RetrievedChunk,
    SummaryIteration,
    SummaryRoute,
)
from litpipe.settings import QuerySummarySettings, RetrievalSettings
from litpipe.text import estimate_tokens, without_markers
from litpipe.validation import validation_problems

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker

logger = logging.getLogger(__name__)

# Every agent of the method: a step running it needs a model client if any is routed to one.
MAIS_AGENTS = (
    "query_questions",
    "query_summary",
    "summary_qa",
    "summary_judge",
    "summary_acus",
    "summary_acu_check",
)
# The passages of one paper that best answer a text (a query or a question), best first.
Search = Callable[[str], list[RetrievedChunk]]
# A passage, and its place in the paper's reading order.
_STORED_COLUMNS = [*RETRIEVED_CHUNK_COLUMNS, "index"]


class QuerySummaryError(ValueError):
    """A request that cannot be served (an unknown paper, an empty query): the message says
    what is wrong, and nothing is written."""


def request_for(paper_id: str, query: str) -> QuerySummaryRequest:
    """The request, or a QuerySummaryError whose message is the validation's own words."""
    try:
        return QuerySummaryRequest(paper_id=paper_id, query=query)
    except ValidationError as error:
        raise QuerySummaryError(validation_problems(error, locations=False)) from None


def paper_passages(store: ChunkStore, embedder_id: str, paper_id: str) -> list[RetrievedChunk]:
    """The whole paper as passages: its stored chunks in reading order (consecutive chunks
    overlap a little, as stored, so that every citation resolves to a stored chunk).

    A paper without stored chunks is a QuerySummaryError."""
    rows = store.chunk_rows(embedder_id, _STORED_COLUMNS, paper_ids=[paper_id])
    if rows.num_rows == 0:
        raise QuerySummaryError(
            f"unknown paper {paper_id!r}: no chunk of it is stored for the embedder {embedder_id}"
        )
    ordered = sorted(rows.to_pylist(), key=lambda row: row["index"])
    return [
        RetrievedChunk(
            **{name: row[name] for name in RetrievedChunk.model_fields if name in row},
            # Not retrieved: ranked by reading order, with no fusion score.
            fused_rank=position,
            fused_score=0.0,
        )
        for position, row in enumerate(ordered, 1)
    ]


def paper_search(
    retriever: HybridRetriever, reranker: Reranker, paper_id: str, retrieval: RetrievalSettings
) -> Search:
    """Search of the paper's own chunks as `question_evidence` does it: hybrid candidates, MMR,
    the reranker, the best `retrieval.evidence_per_question` kept."""

    def search(text: str) -> list[RetrievedChunk]:
        shortlist = retriever.search(
            text,
            limit=max(retrieval.rerank_candidates, retrieval.evidence_per_question),
            candidates=retrieval.candidates,
            scope="own",
            paper_id=paper_id,
        )
        return reranker.rerank(text, shortlist)[: retrieval.evidence_per_question]

    return search


def _in_reading_order(
    found: list[RetrievedChunk], paper: list[RetrievedChunk]
) -> list[RetrievedChunk]:
    """Each passage once, in the paper's order: a reader (and a model) follows the paper."""
    position = {chunk.chunk_id: index for index, chunk in enumerate(paper)}
    unique = {chunk.chunk_id: chunk for chunk in found}
    return sorted(
        unique.values(),
        key=lambda chunk: (
            position.get(chunk.chunk_id, len(paper)),
            chunk.page_start,
            chunk.char_start,
        ),
    )


def within_context(
    evidence: list[RetrievedChunk], paper: list[RetrievedChunk], query_summary: QuerySummarySettings
) -> list[RetrievedChunk]:
    """As much of the paper as `query_summary.context_tokens` holds, in reading order: the retrieved
    passages first, then the others from the start of the paper (a paper too long to read whole
    is read as far as the model can)."""
    candidates = _in_reading_order(evidence, paper) + paper
    return _filled([], candidates, query_summary.context_tokens, paper)


def judge_parts(
    paper: list[RetrievedChunk], evidence: list[RetrievedChunk], query_summary: QuerySummarySettings
) -> list[list[RetrievedChunk]]:
    """The whole paper in consecutive parts, each within `query_summary.context_tokens` (a
    passage longer than that is a part alone), in reading order. More than
    `query_summary.judge_parts` parts are cut to that many: those holding the most of
    `evidence` (the passages retrieved for the query and the questions), then the earliest."""
    parts: list[list[RetrievedChunk]] = []
    used = 0
    for chunk in paper:
        cost = estimate_tokens(citations.evidence_block([chunk]))
        if not parts or used + cost > query_summary.context_tokens:
            parts.append([])
            used = 0
        parts[-1].append(chunk)
        used += cost
    retrieved = {chunk.chunk_id for chunk in evidence}
    kept = sorted(
        range(len(parts)),
        key=lambda index: (-sum(chunk.chunk_id in retrieved for chunk in parts[index]), index),
    )[: query_summary.judge_parts]
    return [parts[index] for index in sorted(kept)]


def _widened(
    source: list[RetrievedChunk],
    found: list[RetrievedChunk],
    paper: list[RetrievedChunk],
    query_summary: QuerySummarySettings,
) -> list[RetrievedChunk]:
    """`source` and, as far as `query_summary.context_tokens` still holds, the `found` passages
    it lacks, in reading order."""
    budget = query_summary.context_tokens - estimate_tokens(citations.evidence_block(source))
    return _filled(source, found, budget, paper)


def _filled(
    kept: list[RetrievedChunk],
    candidates: list[RetrievedChunk],
    budget: int,
    paper: list[RetrievedChunk],
) -> list[RetrievedChunk]:
    """`kept` and each of `candidates` in turn that is new and still fits `budget` tokens (one
    too long is passed over, a shorter one after it may fit), in reading order."""
    kept = list(kept)
    for chunk in candidates:
        cost = estimate_tokens(citations.evidence_block([chunk]))
        if chunk in kept or cost > budget:
            continue
        kept.append(chunk)
        budget -= cost
    return _in_reading_order(kept, paper)


def _checked(text: str, source: list[RetrievedChunk], writer: str) -> str:
    """`text` without the markers that resolve to no passage of `source`, after a warning."""
    _, unresolved = citations.citations(text, source)
    if unresolved:
        logger.warning(
            "%s cited pages it was not given; removed: %s", writer, ", ".join(unresolved)
        )
    return without_markers(text, unresolved)


def _cited(
    reply: QuerySummaryReply, source: list[RetrievedChunk], request: QuerySummaryRequest
) -> tuple[str, list[str], list[Citation]]:
    """The reply's summary and highlights with invented markers removed, and their citations."""
    writer = f"the summary of {request.paper_id} for {request.key}"
    summary = _checked(" ".join(reply.summary.split()), source, writer)
    highlights = [
        cleaned
        for item in reply.highlights
        if (cleaned := _checked(" ".join(item.split()), source, writer))
    ]
    found, _ = citations.citations(" ".join([summary, *highlights]), source)
    return summary, highlights, found


def summarize_for_query(
    request: QuerySummaryRequest,
    title: str,
    abstract: str,
    paper: list[RetrievedChunk],
    search: Search,
    query_summary: QuerySummarySettings,
    asker: Asker,
) -> QuerySummary:
    """The MAIS loop for one request. `paper` is the whole paper's passages in reading order
    (`paper_passages`); `search` finds the paper's passages for a text (`paper_search`)."""
    if not paper:
        raise QuerySummaryError(f"unknown paper {request.paper_id!r}: no passage of it was given")
    strangers = sorted({chunk.paper_id for chunk in paper} - {request.paper_id})
    if strangers:
        raise QuerySummaryError(
            f"the passages given for {request.paper_id!r} belong to other papers: "
            f"{', '.join(strangers)}"
        )
    query_evidence = search(request.query)
    questions, _ = write_questions(
        QueryQuestionsInput(
            paper_id=request.paper_id,
            title=title,
            abstract=abstract,
            query=request.query,
            evidence=query_evidence,
            most=query_summary.questions,
        ),
        asker,
    )
    found = [*query_evidence, *(chunk for q in questions for chunk in search(q.text))]
    evidence = _in_reading_order(found, paper)

    whole_tokens = estimate_tokens(citations.evidence_block(paper))
    route: SummaryRoute
    if whole_tokens <= query_summary.context_tokens or not evidence:
        route, source = "whole_paper", paper
        route_reason = (
            f"the whole paper (about {whole_tokens} tokens) fits query_summary.context_tokens "
            f"({query_summary.context_tokens})"
            if evidence
            else "retrieval found no passage for the query or the questions"
        )
    else:
        route, source = "evidence", evidence
        route_reason = (
            f"the paper (about {whole_tokens} tokens) exceeds query_summary.context_tokens "
            f"({query_summary.context_tokens}): its {len(evidence)} passages retrieved "
            f"for the query and {len(questions)} questions"
        )

    # What the judge checks each summary against: the summarizer's source when the paper fits
    # the context (then the source is the whole paper); else, for a model, the whole paper in
    # parts. The offline judge keeps to the summarizer's source: the offline summarizer adds
    # only sentences of what it reads, and the passages retrieved for a topic seldom hold the
    # sentence the offline judge finds best anywhere in the paper, so the loop would run to
    # its cap (measured on the bundled LitQA2 paper: 15 passes, never approved).
    judges_whole_paper = whole_tokens > query_summary.context_tokens and not asker.offline(
        JudgeAgent()
    )
    judged = judge_parts(paper, evidence, query_summary) if judges_whole_paper else [source]
    judged_passages = sum(len(part) for part in judged)
    judge_note = ""
    if judges_whole_paper:
        judge_note = (
            f"; the judge checks the whole paper in {len(judged)} parts"
            if judged_passages == len(paper)
            else f"; the judge checks {judged_passages} of its {len(paper)} passages in "
            f"{len(judged)} parts (query_summary.judge_parts)"
        )

    acus = (
        units_from(
            request.paper_id,
            asker.ask(
                AcusAgent(),
                AcusInput(
                    paper_id=request.paper_id,
                    title=title,
                    query=request.query,
                    passages=source,
                    most=query_summary.acus,
                ),
            ),
            query_summary.acus,
        )
        if query_summary.acus
        else []
    )

    summarizer, qa_agent, judge = QuerySummaryAgent(), SummaryQAAgent(), JudgeAgent()
    iterations: list[SummaryIteration] = []
    previous = ""
    topics: list[str] = []
    for iteration in range(1, query_summary.max_iterations + 1):
        if topics and judges_whole_paper and len(source) < len(paper):
            # The judge read the whole paper: what it found missing may lie outside what the
            # summarizer read, which then gets the passages retrieved for each topic.
            source = _widened(
                source, [c for topic in topics for c in search(topic)], paper, query_summary
            )
        inputs = QuerySummaryInput(
            paper_id=request.paper_id,
            title=title,
            query=request.query,
            passages=source,
            previous=previous,
            mismatch_topics=topics,
        )
        reply = asker.ask(summarizer, inputs)
        if iteration == 1 and not reply.evidence_sufficient and route == "evidence":
            # Self-Route: the retrieved passages do not hold the answer; the whole paper may.
            route, source = "whole_paper", within_context(evidence, paper, query_summary)
            route_reason = (
                f"the summarizer found the {len(evidence)} passages retrieved for the query and "
                f"the questions insufficient (the whole paper is about {whole_tokens} tokens"
                + (
                    ")"
                    if len(source) == len(paper)
                    else f"; the {len(source)} of its {len(paper)} passages that fit "
                    f"query_summary.context_tokens, the retrieved ones first)"
                )
            )
            inputs = inputs.model_copy(update={"passages": source})
            reply = asker.ask(summarizer, inputs)
        if iteration == 1 and not reply.evidence_sufficient:
            logger.warning(
                "%s: the summarizer found nothing on the query %r in %s; the judge decides",
                request.paper_id,
                request.query,
                route,
            )
        summary, highlights, found_citations = _cited(reply, source, request)
        qa_inputs = SummaryQAInput(summary=summary, questions=questions)
        answers = answers_by_question(qa_inputs, asker.ask(qa_agent, qa_inputs))
        judge_inputs = [
            JudgeInput(
                query=request.query,
                questions=questions,
                answers=answers,
                passages=part,
                part=number,
                parts=len(judged),
            )
            for number, part in enumerate(judged, 1)
        ]
        replies = [asker.ask(judge, inputs) for inputs in judge_inputs]
        verdict, pairs = verdict_from(
            judge_inputs[0],
            replies[0] if len(replies) == 1 else combined_reply(judge_inputs, replies),
        )
        verdict = verdict.model_copy(update={"parts": len(judged)})
        acu_inputs = AcuCheckInput(summary=summary, units=acus)
        held = acu_accuracy(acu_inputs, asker.ask(AcuCheckAgent(), acu_inputs)) if acus else None
        iterations.append(
            SummaryIteration(
                iteration=iteration,
                revised_from=topics,
                summary=summary,
                highlights=highlights,
                citations=found_citations,
                qa=pairs,
                verdict=verdict,
                acu_accuracy=held,
            )
        )
        logger.info(
            "%s %s: iteration %d, accuracy %.2f, %s",
            request.paper_id,
            request.key,
            iteration,
            verdict.accuracy,
            "approved" if verdict.approved else f"mismatch: {'; '.join(verdict.mismatch_topics)}",
        )
        if verdict.approved:
            break
        previous, topics = summary, verdict.mismatch_topics

    last = iterations[-1]
    engines = {agent: asker.engine(agent) for agent in MAIS_AGENTS}
    return QuerySummary(
        request=request,
        title=title,
        status="approved" if last.verdict.approved else "max_iterations_reached",
        route=route,
        route_reason=route_reason + judge_note,
        questions=questions,
        acus=acus,
        iterations=iterations,
        max_iterations=query_summary.max_iterations,
        summary=last.summary,
        highlights=last.highlights,
        citations=last.citations,
        source=source,
        engine=engines["query_summary"],
        engines=engines,
    )


def query_summary_version(
    query_summary: QuerySummarySettings, retrieval: RetrievalSettings, asker: Asker
) -> str:
    """Hash of all that decides a query summary: the six agents (prompt, schema, code, route),
    this workflow's code and the loop's settings. Retrieval's own version is its stage's."""
    agents = (
        QueryQuestionsAgent(),
        QuerySummaryAgent(),
        SummaryQAAgent(),
        JudgeAgent(),
        AcusAgent(),
        AcuCheckAgent(),
    )
    return digest(
        *(asker.version(agent) for agent in agents),
        # The offline engines' shared helpers.
        *(
            inspect.getsource(module)
            for module in (sys.modules[__name__], answering, paper_summary)
        ),
        str(query_summary.max_iterations),
        str(query_summary.questions),
        str(query_summary.context_tokens),
        str(query_summary.judge_parts),
        str(query_summary.acus),
        str(retrieval.evidence_per_question),
    )
