"""A paper's reference-list records matched to the papers of its collection.

Rules, in order; the first that finds any candidate decides:

1. `doi`: equal DOIs, compared lower-case without a resolver's prefix (`https://doi.org/`,
   `doi:`) or trailing punctuation;
2. `arxiv`: equal arXiv ids, without `arXiv:` or a version (`2005.11401v4` is `2005.11401`);
3. `title_year`: equal titles, compared casefolded, without accents, punctuation or runs of
   spaces, whose years differ by at most one: a collection keeps one version of a paper, and a
   preprint cited in the year it was posted is often published the next (bioRxiv's
   `2023.12.13.571462` appeared in a journal in 2024). A title of fewer than `MIN_TITLE_WORDS`
   words (`Introduction`, `Yeast genetics`), or a year missing on either side, is too little to
   tell two papers apart and matches nothing.

A record matches at most one paper: one that a rule finds in several papers is left unmatched
and names them all. The citing paper is never its own match: a record naming it is dropped.
Papers are indexed once per collection, so that matching each paper's list costs its length,
not the collection's size.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable

from litpipe.ingest.tables import normalized_doi
from litpipe.schemas import (
    CitationMatch,
    CitationMatches,
    CollectionPaper,
    MatchRule,
    ReferenceRecord,
)

MIN_TITLE_WORDS = 4
# A preprint's year and its journal version's: see the module docstring.
MAX_YEAR_GAP = 1

_DOI_TRAILING = ".,;:"
_ARXIV_PREFIX = re.compile(r"^\s*arxiv\s*:\s*", re.I)
_ARXIV_VERSION = re.compile(r"v\d+$", re.I)
_NOT_WORD = re.compile(r"[\W_]+")


def doi_key(doi: str | None) -> str:
    """A DOI as compared; empty for none."""
    return normalized_doi((doi or "").strip().rstrip(_DOI_TRAILING))


def arxiv_key(arxiv_id: str | None) -> str:
    """An arXiv id as compared: lower-case, no `arXiv:`, no version; empty for none."""
    bare = _ARXIV_PREFIX.sub("", arxiv_id or "").strip().lower()
    return _ARXIV_VERSION.sub("", bare)


def title_key(title: str | None) -> str:
    """A title as compared: casefolded, accents dropped, punctuation and spaces collapsed to
    single spaces."""
    decomposed = unicodedata.normalize("NFKD", (title or "").casefold())
    letters = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(_NOT_WORD.sub(" ", letters).split())


class CollectionIndex:
    """A collection's papers, indexed by each rule's key."""

    def __init__(self, papers: Iterable[CollectionPaper]) -> None:
        self._by_doi: dict[str, set[str]] = defaultdict(set)
        self._by_arxiv: dict[str, set[str]] = defaultdict(set)
        self._by_title: dict[str, dict[str, int | None]] = defaultdict(dict)
        for paper in papers:
            if key := doi_key(paper.doi):
                self._by_doi[key].add(paper.paper_id)
            if key := arxiv_key(paper.arxiv_id):
                self._by_arxiv[key].add(paper.paper_id)
            if key := title_key(paper.title):
                self._by_title[key][paper.paper_id] = paper.year

    def matches(self, citing_paper_id: str, records: list[ReferenceRecord]) -> CitationMatches:
        """Each of the citing paper's records, in order, with the paper it names."""
        return CitationMatches(
            paper_id=citing_paper_id,
            matches=[
                self.match(citing_paper_id, index, record) for index, record in enumerate(records)
            ],
        )

    def match(self, citing_paper_id: str, index: int, record: ReferenceRecord) -> CitationMatch:
        """The paper the record at `index` of the citing paper's list names, if one alone."""
        unmatched = CitationMatch(reference_index=index)
        # No paper is indexed under an empty key, so a record without the id finds none.
        if by_doi := self._by_doi.get(doi_key(record.doi)):
            return _decided(unmatched, citing_paper_id, "doi", by_doi)
        if by_arxiv := self._by_arxiv.get(arxiv_key(record.arxiv_id)):
            return _decided(unmatched, citing_paper_id, "arxiv", by_arxiv)
        return self._by_title_and_year(unmatched, citing_paper_id, record)

    def _by_title_and_year(
        self, unmatched: CitationMatch, citing_paper_id: str, record: ReferenceRecord
    ) -> CitationMatch:
        key = title_key(record.title)
        titled = self._by_title.get(key) if key else None
        if not titled:
            return unmatched
        if citing_paper_id in titled:
            return unmatched.model_copy(update={"note": "by title: the citing paper itself"})
        named = ", ".join(sorted(titled))
        if len(key.split()) < MIN_TITLE_WORDS:
            note = f"title of {len(key.split())} words, too short to tell: {named}"
            return unmatched.model_copy(update={"note": note})
        if record.year is None:
            return unmatched.model_copy(update={"note": f"title without a year: {named}"})
        in_years = {
            paper_id
            for paper_id, year in titled.items()
            if year is not None and abs(year - record.year) <= MAX_YEAR_GAP
        }
        if not in_years:
            years = ", ".join(
                f"{paper_id} ({'no year' if year is None else year})"
                for paper_id, year in sorted(titled.items())
            )
            note = f"title matches, year {record.year} does not: {years}"
            return unmatched.model_copy(update={"note": note})
        return _decided(unmatched, citing_paper_id, "title_year", in_years)


def _decided(
    unmatched: CitationMatch, citing_paper_id: str, rule: MatchRule, candidates: set[str]
) -> CitationMatch:
    """The one candidate, or the record left unmatched: it names the citing paper itself, or
    several papers."""
    if citing_paper_id in candidates:
        return unmatched.model_copy(update={"note": f"by {rule}: the citing paper itself"})
    if len(candidates) > 1:
        ambiguous = sorted(candidates)
        note = f"by {rule}: {len(ambiguous)} papers"
        return unmatched.model_copy(update={"ambiguous": ambiguous, "note": note})
    return unmatched.model_copy(update={"paper_id": next(iter(candidates)), "rule": rule})


def match_references(
    papers: Iterable[CollectionPaper], citing_paper_id: str, records: list[ReferenceRecord]
) -> CitationMatches:
    """One paper's records matched to the collection's papers (index the collection once with
    `CollectionIndex` to match many papers' lists)."""
    return CollectionIndex(papers).matches(citing_paper_id, records)
