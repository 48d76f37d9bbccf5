"""The nightly digest: what changed in each collection's synthesis during a day (its kept
versions, `synthesis_history`), the papers that arrived on the day, each in brief, how
their insights relate to those of the papers their collections held before that day, and what
they changed in each collection's citation graph (`day_citations`: the works often cited that
they cite, and the citations they make or receive), and the rows they have in each collection's
comparison table.

Runs without Dagster (`build_digest(day, arrivals, before, sources, synthesis, asker)`);
the `nightly_digest` asset wraps it. A new paper's insights are its question-and-answer pairs'
key insights (the `insights` agent, as the relationship analysis makes them); the existing
papers' insights come from their collection's last `relationship_analysis` when it covers them,
else from their answers; the `relationships` agent relates the two sets (offline: term overlap
and cue words), and only relationships touching a new insight are kept.

A paper that arrived but has no answers yet (its runs had not finished, or it failed) is listed
as not yet analysed, with what is known of it, rather than failing the digest: building the
day's partition again once its answers exist brings it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from scipy.sparse import csr_array

from litpipe.agents.asker import Asker
from litpipe.agents.relationship_analysis.insights import insights_for
from litpipe.ingest.often_cited import MIN_CITING_PAPERS
from litpipe.retrieval.text import content_terms
from litpipe.schemas import (
    Answer,
    CitationEdge,
    CitationGraph,
    ComparisonTable,
    Digest,
    DigestCollection,
    DigestPaper,
    Insight,
    OftenCited,
    PaperAbstract,
    PaperAnswers,
    PaperArrival,
    RelationshipAnalysis,
    RetrievedChunk,
    SynthesisDiff,
)
from litpipe.schemas.standing_questions import AnswerDiff
from litpipe.settings import SynthesisSettings
from litpipe.text import strip_markers
from litpipe.workflows import answer_history, standing_questions, synthesis_history
from litpipe.workflows.relationship_analysis import relate_insights

if TYPE_CHECKING:
    from litpipe.retrieval.store import TextEncoder

DIGEST_AGENTS = ("insights", "relationships")
# The existing insights nearest to the new ones that the relationships agent is given: however
# large the collection grows, a model's prompt stays bounded (offline, the strongest relations
# are among the nearest anyway).
MAX_EXISTING_INSIGHTS = 60
# Existing insights compared with the new ones at once (`_nearest`).
_BLOCK_ROWS = 512
NEW, EXISTING = "n", "e"


class DigestSources(Protocol):
    """What the digest reads of the stages before it."""

    def abstracts(self, paper_ids: Iterable[str]) -> dict[str, PaperAbstract]: ...

    def answers(self, paper_ids: Iterable[str]) -> dict[str, PaperAnswers]: ...

    def analysis(self, collection: str) -> RelationshipAnalysis | None: ...

    def citations(self, collection: str) -> CitationGraph | None: ...

    def comparison(self, collection: str) -> ComparisonTable | None: ...


@dataclass
class MappingSources:
    """Sources held in memory (a notebook's, a test's): papers without an entry have none."""

    abstract_of: Mapping[str, PaperAbstract] = field(default_factory=dict)
    answers_of: Mapping[str, PaperAnswers] = field(default_factory=dict)
    analysis_of: Mapping[str, RelationshipAnalysis] = field(default_factory=dict)
    citations_of: Mapping[str, CitationGraph] = field(default_factory=dict)
    comparison_of: Mapping[str, ComparisonTable] = field(default_factory=dict)

    def abstracts(self, paper_ids: Iterable[str]) -> dict[str, PaperAbstract]:
        return {p: self.abstract_of[p] for p in paper_ids if p in self.abstract_of}

    def answers(self, paper_ids: Iterable[str]) -> dict[str, PaperAnswers]:
        return {p: self.answers_of[p] for p in paper_ids if p in self.answers_of}

    def analysis(self, collection: str) -> RelationshipAnalysis | None:
        return self.analysis_of.get(collection)

    def citations(self, collection: str) -> CitationGraph | None:
        return self.citations_of.get(collection)

    def comparison(self, collection: str) -> ComparisonTable | None:
        return self.comparison_of.get(collection)


def digest_engine(asker: Asker) -> str:
    return " + ".join(dict.fromkeys(asker.engine(a) for a in DIGEST_AGENTS))


def build_digest(
    day: date,
    arrivals: Sequence[PaperArrival],
    before: Mapping[str, list[str]],
    sources: DigestSources,
    synthesis: SynthesisSettings,
    asker: Asker,
    encoder: TextEncoder | None = None,
    history: Path | None = None,
) -> Digest:
    """The digest of `day`: `arrivals` are the papers that arrived that day, `before` each of
    their collections' papers that arrived earlier (papers that arrived later are in neither,
    so a day's digest built again later says the same). With an `encoder` (the collection's
    embedder) the relationships agent weighs only nearest neighbours (`relate`), so a day of
    thousands of papers is not related pair by pair. With the `history` of a home
    (`synthesis_history`), it opens with what changed in each collection's synthesis during
    the day (`day_changes`). Where a collection's citation graph is built, it says what the
    day's papers changed in it (`day_citations`); where its comparison table is, the rows the
    day's papers have in it."""
    new_ids = [arrival.paper_id for arrival in arrivals]
    abstracts = sources.abstracts(new_ids)
    answers = sources.answers(new_ids)
    asked = [answer for p in new_ids if p in answers for answer in answers[p].answers]
    found = insights_for(asked, asker)
    new_insights = _by_paper(_renumbered(_distinct(found), NEW))
    titles = {arrival.paper_id: _title(arrival, abstracts) for arrival in arrivals}
    papers = [
        DigestPaper(
            paper_id=arrival.paper_id,
            title=titles[arrival.paper_id],
            arrived_at=arrival.arrived_at,
            collections=arrival.collections,
            abstract=abstracts[arrival.paper_id].abstract if arrival.paper_id in abstracts else "",
            analysed=arrival.paper_id in answers,
            insights=new_insights.get(arrival.paper_id, []),
        )
        for arrival in arrivals
    ]
    pool = _evidence(answers.values())
    collections: list[DigestCollection] = []
    for collection in dict.fromkeys(c for arrival in arrivals for c in arrival.collections):
        here = [a.paper_id for a in arrivals if collection in a.collections]
        related, existing_pool = _related(
            collection,
            [i for paper_id in here for i in new_insights.get(paper_id, [])],
            before.get(collection, []),
            sources,
            titles,
            synthesis,
            asker,
            encoder,
        )
        graph = sources.citations(collection)
        often, citations = (
            day_citations(graph, here, [*before.get(collection, []), *here])
            if graph is not None
            else ([], [])
        )
        table = sources.comparison(collection)
        rows = [row for row in table.rows if row.paper_id in here] if table is not None else []
        collections.append(
            related.model_copy(
                update={
                    "new_papers": here,
                    "often_cited": often,
                    "citations": citations,
                    "comparison_rows": rows,
                }
            )
        )
        pool.update(existing_pool)
        pool.update((chunk.chunk_id, chunk) for row in rows for chunk in row.passages)
    # The earlier papers these name, titled from their abstracts as the relationships' are.
    named = {
        paper_id
        for c in collections
        for paper_id in chain(
            (p for work in c.often_cited for p in work.citing_paper_ids),
            (p for edge in c.citations for p in (edge.citing, edge.cited)),
        )
    }
    titles.update(
        {p: " ".join(a.title.split()) for p, a in sources.abstracts(named - titles.keys()).items()}
    )
    shown = [i for paper in papers for i in paper.insights]
    shown += [i for c in collections for i in c.insights]
    cells = [cell for c in collections for row in c.comparison_rows for cell in row.cells]
    cited = dict.fromkeys(
        chunk
        for citations in chain((i.citations for i in shown), (cell.citations for cell in cells))
        for c in citations
        for chunk in c.chunk_ids
    )
    return Digest(
        day=day.isoformat(),
        engine=digest_engine(asker),
        engines={agent: asker.engine(agent) for agent in DIGEST_AGENTS},
        papers=papers,
        collections=collections,
        titles=titles,
        passages=[pool[chunk_id] for chunk_id in cited if chunk_id in pool],
        changes=day_changes(history, day, [c.collection for c in collections])
        if history is not None
        else [],
        standing=standing_changes(history, day) if history is not None else [],
    )


def day_citations(
    graph: CitationGraph, new: Sequence[str], held: Sequence[str]
) -> tuple[list[OftenCited], list[CitationEdge]]:
    """What a collection's `new` papers changed in its citation graph, among the papers it
    `held` by the day's end (one that came later, which a graph built since holds, counts for
    nothing, so a day's digest built again later says the same): the works often cited that
    one of them cites, most cited first, and the citations they make or receive."""
    fresh, kept = set(new), set(held)
    works = []
    for work in graph.often_cited:
        citing = [paper_id for paper_id in work.citing_paper_ids if paper_id in kept]
        if len(citing) >= MIN_CITING_PAPERS and fresh.intersection(citing):
            contexts = [context for context in work.contexts if context.paper_id in kept]
            works.append(work.model_copy(update={"citing_paper_ids": citing, "contexts": contexts}))
    # Stable: among works cited as often, the graph's order (the more recent first).
    works.sort(key=lambda work: -len(work.citing_paper_ids))
    edges = [
        edge
        for edge in graph.edges
        if {edge.citing, edge.cited} <= kept and fresh.intersection((edge.citing, edge.cited))
    ]
    return works, edges


def day_changes(home: Path, day: date, arrived_in: Sequence[str]) -> list[SynthesisDiff]:
    """What changed in each collection's synthesis during `day` (UTC): from the version kept
    when it began, where the previous day's digest ended, to the one kept when it ended (so a
    day's digest built again later says the same); the collections that changed, and those
    that got new papers (`arrived_in`) whether or not they changed."""
    start = datetime.combine(day, time(), tzinfo=UTC)
    end = start + timedelta(days=1)
    found = []
    for collection in dict.fromkeys([*arrived_in, *synthesis_history.collections(home)]):
        diff = synthesis_history.changes_in(home, collection, start, end)
        if diff.changed or collection in arrived_in:
            found.append(diff)
    return found


def standing_changes(home: Path, day: date) -> list[AnswerDiff]:
    """What changed during `day` (UTC) in each standing question's answer, as `day_changes`
    reads the synthesis: from the version kept when it began to the one kept when it ended."""
    start = datetime.combine(day, time(), tzinfo=UTC)
    found = []
    for question in standing_questions.registered(home):
        request = question.request
        diff = answer_history.changes_in(
            home, request.collection, question.key, start, start + timedelta(days=1)
        )
        if diff is not None and diff.changed:
            found.append(diff)
    return found


def _related(
    collection: str,
    new: list[Insight],
    before: list[str],
    sources: DigestSources,
    titles: dict[str, str],
    synthesis: SynthesisSettings,
    asker: Asker,
    encoder: TextEncoder | None,
) -> tuple[DigestCollection, dict[str, RetrievedChunk]]:
    """The relationships of a collection's new insights (among themselves and with its existing
    ones), the existing insights they name, and those insights' passages. `titles` (the new
    papers') gains the existing papers named."""
    existing, origins, analysis = _existing_insights(collection, before, sources, asker)
    candidates = _nearest(new, existing, MAX_EXISTING_INSIGHTS)
    names = {p: titles[p] for p in dict.fromkeys(i.paper_id for i in new)}
    relationships = []
    if new and (candidates or len({i.paper_id for i in new}) > 1):
        candidate_papers = list(dict.fromkeys(i.paper_id for i in candidates))
        known = {p: a.title for p, a in sources.abstracts(candidate_papers).items()}
        names.update({p: " ".join(known.get(p, p).split()) for p in candidate_papers})
        given = [*new, *candidates]
        # The agent sees `i01`, `i02`, ... as in a collection's analysis (short ids a model
        # copies back reliably); its relationships are mapped back to the digest's ids.
        ids = {f"i{index:02d}": i.insight_id for index, i in enumerate(given, start=1)}
        labelled = [
            i.model_copy(update={"insight_id": label}) for label, i in zip(ids, given, strict=True)
        ]
        draft = relate_insights(collection, labelled, names, synthesis, asker, encoder)
        fresh = {insight.insight_id for insight in new}
        relationships = [
            r.model_copy(update={"source": ids[r.source], "target": ids[r.target]})
            for r in draft.relationships
            if ids[r.source] in fresh or ids[r.target] in fresh
        ]
    named = {insight_id for r in relationships for insight_id in (r.source, r.target)}
    shown = [insight for insight in candidates if insight.insight_id in named]
    titles.update({insight.paper_id: names[insight.paper_id] for insight in shown})
    answered = sources.answers(dict.fromkeys(i.paper_id for i in shown))
    follow_ups = [a for f in analysis.follow_ups for a in f.answers] if analysis else []
    return (
        DigestCollection(
            collection=collection,
            new_papers=[],
            existing_papers=len(before),
            existing_insights_from=origins,
            insights=shown,
            relationships=relationships,
        ),
        _evidence(answered.values(), follow_ups),
    )


def _existing_insights(
    collection: str,
    before: list[str],
    sources: DigestSources,
    asker: Asker,
) -> tuple[list[Insight], list[str], RelationshipAnalysis | None]:
    """The insights of the papers the collection held before the day: from its last analysis
    for the papers it covers (no model call), from their answers for the others."""
    analysis = sources.analysis(collection) if before else None
    covered = set(analysis.papers).intersection(before) if analysis else set()
    from_analysis = [i for i in analysis.insights if i.paper_id in covered] if analysis else []
    missing = sources.answers(p for p in before if p not in covered)
    computed = (
        insights_for([a for paper in missing.values() for a in paper.answers], asker)
        if missing
        else []
    )
    origins = ["relationship_analysis"] * bool(from_analysis) + ["paper_answers"] * bool(computed)
    return _renumbered(_distinct([*from_analysis, *computed]), EXISTING), origins, analysis


def _renumbered(insights: list[Insight], kind: str) -> list[Insight]:
    """Ids `<paper>/<kind><k>`, unique across new (`n`) and existing (`e`) insights of any
    papers, whichever analysis numbered them; comparative insights (no one paper) left out."""
    count: dict[str, int] = {}
    kept = []
    for insight in insights:
        if not insight.paper_id:
            continue
        count[insight.paper_id] = count.get(insight.paper_id, 0) + 1
        insight_id = f"{insight.paper_id}/{kind}{count[insight.paper_id]}"
        kept.append(insight.model_copy(update={"insight_id": insight_id}))
    return kept


def _distinct(insights: list[Insight]) -> list[Insight]:
    """Without repeats of an earlier insight of the same paper: several questions answered from
    one sentence give the same insight, which a brief should say once."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for insight in insights:
        key = (insight.paper_id, " ".join(strip_markers(insight.text).split()).casefold())
        if key not in seen:
            seen.add(key)
            kept.append(insight)
    return kept


def _by_paper(insights: list[Insight]) -> dict[str, list[Insight]]:
    grouped: dict[str, list[Insight]] = {}
    for insight in insights:
        grouped.setdefault(insight.paper_id, []).append(insight)
    return grouped


def _nearest(new: list[Insight], existing: list[Insight], limit: int) -> list[Insight]:
    """The `limit` existing insights sharing the largest share of terms (Jaccard) with some new
    one, in their own order: the shares of every pair computed as sparse matrix products, a
    block of existing insights at a time, not pair by pair in Python."""
    if len(existing) <= limit:
        return existing
    new_terms, existing_terms = (
        [content_terms(strip_markers(insight.text)) for insight in insights]
        for insights in (new, existing)
    )
    vocabulary = {
        term: column
        for column, term in enumerate(dict.fromkeys(chain(*new_terms, *existing_terms)))
    }

    def incidence(terms: list[frozenset[str]]) -> csr_array:
        columns = [vocabulary[term] for held in terms for term in held]
        rows = np.repeat(np.arange(len(terms)), [len(held) for held in terms])
        return csr_array(
            (np.ones(len(columns)), (rows, columns)), shape=(len(terms), len(vocabulary))
        )

    new_matrix, existing_matrix = incidence(new_terms), incidence(existing_terms)
    new_sizes = np.array([len(held) for held in new_terms])
    closeness = np.zeros(len(existing))
    for start in range(0, len(existing), _BLOCK_ROWS):
        block = existing_matrix[start : start + _BLOCK_ROWS]
        shared = (block @ new_matrix.T).toarray()
        sizes = np.array([len(held) for held in existing_terms[start : start + _BLOCK_ROWS]])
        union = sizes[:, None] + new_sizes[None, :] - shared
        share = shared / np.where(union > 0, union, 1)
        closeness[start : start + len(share)] = share.max(axis=1, initial=0.0)
    nearest = set(np.argsort(-closeness, kind="stable")[:limit].tolist())
    return [insight for index, insight in enumerate(existing) if index in nearest]


def _evidence(
    answers: Iterable[PaperAnswers], extra: Iterable[Answer] = ()
) -> dict[str, RetrievedChunk]:
    """The passages the answers were written from, by chunk id."""
    every = [*(a for paper in answers for a in paper.answers), *extra]
    return {chunk.chunk_id: chunk for answer in every for chunk in answer.evidence}


def _title(arrival: PaperArrival, abstracts: Mapping[str, PaperAbstract]) -> str:
    """Its title, or, before its abstract is built, what its file or row is called."""
    abstract = abstracts.get(arrival.paper_id)
    if abstract is not None and abstract.title.strip():
        return " ".join(abstract.title.split())
    source = arrival.source
    name = Path(source.path).name
    return f"{name} row {source.row_number}" if source.row_number is not None else name
