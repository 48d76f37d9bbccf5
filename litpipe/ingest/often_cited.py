""" "Often cited, not in your library": the works that several papers of a collection cite and
that none of its papers is, ranked by how many papers cite them, then by recency.

Two records (of one paper's list or of two) denote the same work by the identity rules of
`citation_matching`: equal DOIs, else equal arXiv ids, else equal titles of at least
`MIN_TITLE_WORDS` words whose years differ by at most `MAX_YEAR_GAP` (a preprint and its
journal version). Sameness is transitive: a record with a DOI and a title joins the records
sharing either. A record with neither an id nor such a title and a year is too little to
tell works apart and is left out.

A work any of whose records names a paper of the collection (matched, or ambiguous between
several) is in the library, even where another paper's record of it was too damaged to match:
they are one work. A paper citing a work twice counts once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from itertools import pairwise

from litpipe.ingest.citation_matching import (
    MAX_YEAR_GAP,
    MIN_TITLE_WORDS,
    arxiv_key,
    doi_key,
    title_key,
)
from litpipe.schemas import (
    CitationContexts,
    CitationMatches,
    CitingSentence,
    OftenCited,
    ReferenceRecord,
)

MIN_CITING_PAPERS = 2

# A record by its citing paper and its 0-based index in that paper's list.
_RecordAt = tuple[str, int]


def often_cited(
    references: Mapping[str, list[ReferenceRecord]],
    matches: Mapping[str, CitationMatches],
    contexts: Mapping[str, CitationContexts],
    min_papers: int = MIN_CITING_PAPERS,
) -> list[OftenCited]:
    """The works cited by at least `min_papers` of the papers in `references` (each paper's
    list, by paper id) and matching none of the collection's papers (`matches`, by paper id;
    a paper without them matched nothing), most cited first, then the most recent, then by
    title; each with the sentences citing it (`contexts`, by paper id)."""
    works = _same_works(references)
    in_library = {
        (paper_id, match.reference_index)
        for paper_id, paper_matches in matches.items()
        for match in paper_matches.matches
        if match.paper_id is not None or match.ambiguous
    }
    found = []
    for work in works:
        citing = sorted({paper_id for paper_id, _ in work})
        if len(citing) < min_papers or any(record in in_library for record in work):
            continue
        found.append(
            OftenCited(
                reference=_most_complete([references[paper_id][index] for paper_id, index in work]),
                citing_paper_ids=citing,
                contexts=_citing_sentences(work, contexts),
            )
        )
    return sorted(found, key=_rank)


def _same_works(references: Mapping[str, list[ReferenceRecord]]) -> list[list[_RecordAt]]:
    """The records grouped by the work they denote (see the module docstring), each group in
    its papers' order (sorted by id) and list order; the records that cannot be told apart
    left out."""
    parent: dict[_RecordAt, _RecordAt] = {}

    def root(at: _RecordAt) -> _RecordAt:
        while parent[at] != at:
            parent[at] = parent[parent[at]]
            at = parent[at]
        return at

    def join(first: _RecordAt, second: _RecordAt) -> None:
        parent[root(second)] = root(first)

    by_id: dict[tuple[str, str], list[_RecordAt]] = defaultdict(list)
    by_title: dict[str, list[tuple[int, _RecordAt]]] = defaultdict(list)
    for paper_id in sorted(references):
        for index, record in enumerate(references[paper_id]):
            at = (paper_id, index)
            title = title_key(record.title)
            dated_title = (
                (title, record.year)
                if record.year is not None and len(title.split()) >= MIN_TITLE_WORDS
                else None
            )
            ids = [("doi", doi_key(record.doi)), ("arxiv", arxiv_key(record.arxiv_id))]
            ids = [(rule, key) for rule, key in ids if key]
            if not ids and dated_title is None:
                continue
            parent[at] = at
            for rule_key in ids:
                by_id[rule_key].append(at)
            if dated_title is not None:
                by_title[dated_title[0]].append((dated_title[1], at))
    for same_id in by_id.values():
        for at in same_id[1:]:
            join(same_id[0], at)
    for dated in by_title.values():
        dated.sort()
        # Years a gap apart or less chain into one work, in year order.
        for (year, at), (next_year, next_at) in pairwise(dated):
            if next_year - year <= MAX_YEAR_GAP:
                join(at, next_at)
    groups: dict[_RecordAt, list[_RecordAt]] = defaultdict(list)
    for at in parent:
        groups[root(at)].append(at)
    return list(groups.values())


def _most_complete(records: list[ReferenceRecord]) -> ReferenceRecord:
    """The record with the most of DOI, title, authors, year and venue (then an arXiv id);
    the first of those tied."""

    def completeness(record: ReferenceRecord) -> int:
        fields = (record.doi, record.title, record.authors, record.year, record.venue)
        return 2 * sum(1 for value in fields if value) + bool(record.arxiv_id)

    return max(records, key=completeness)


def _citing_sentences(
    work: list[_RecordAt], contexts: Mapping[str, CitationContexts]
) -> list[CitingSentence]:
    """The sentences citing the work's records, in its papers' order and each paper's text
    order, each once (a sentence citing two records of the work is one)."""
    indexes: dict[str, set[int]] = defaultdict(set)
    for paper_id, index in work:
        indexes[paper_id].add(index)
    found: dict[tuple[str, int, str], CitingSentence] = {}
    for paper_id in sorted(indexes):
        paper_contexts = contexts.get(paper_id)
        for context in paper_contexts.contexts if paper_contexts else []:
            if context.reference_index in indexes[paper_id]:
                found.setdefault(
                    (paper_id, context.char_start, context.sentence),
                    CitingSentence(
                        paper_id=paper_id,
                        sentence=context.sentence,
                        page=context.page,
                        section=context.section,
                    ),
                )
    return list(found.values())


def _rank(entry: OftenCited) -> tuple[int, int, int, str, str]:
    """Most citing papers first, then the most recent (no year last), then by title; the
    raw entry breaks what is left of the ties, so that the order never depends on input
    order."""
    record = entry.reference
    return (
        -len(entry.citing_paper_ids),
        record.year is None,
        -(record.year or 0),
        title_key(record.title),
        record.raw,
    )
