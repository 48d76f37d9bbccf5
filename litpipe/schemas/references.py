"""A paper's reference list as records, the sentences of its body that cite them, the
collection's papers those records name, and what each citing sentence says of the cited work.

A record keeps the entry as the PDF sets it (`raw`) beside what was read from it, so a field
read wrongly never loses the reference. Contexts point into `PaperDocument.text` by character
offsets; pages are 1-based, as everywhere in litpipe.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.evidence import RetrievedChunk
from litpipe.schemas.papers import PaperDocument


class ReferenceRecord(BaseModel):
    """One entry of a reference list. (`Reference` is LitLLM's candidate reference, in
    `related_work`.)"""

    raw: str = Field(description="The entry as the PDF (or the library) sets it, whole.")
    number: int | None = Field(
        default=None, description="Its number in a numbered list (`[12]`, `12.`)."
    )
    authors: list[str] = Field(
        default_factory=list,
        description="The authors' family names, in order (an organisation's name whole); "
        "`et al.` is not an author.",
    )
    title: str | None = None
    year: int | None = None
    venue: str | None = Field(default=None, description="Journal, proceedings, book or preprint.")
    doi: str | None = None
    arxiv_id: str | None = None


CitationIntentLabel = Literal["extends", "compares", "contrasts", "uses", "background"]
CITATION_INTENT_LABELS: tuple[CitationIntentLabel, ...] = (
    "extends",
    "compares",
    "contrasts",
    "uses",
    "background",
)


class CitationIntent(BaseModel):
    """What a citing sentence says of the work it cites."""

    label: CitationIntentLabel
    cue: str | None = Field(
        default=None, description="The cue phrase as written in the sentence, if one decided."
    )
    why: str = Field(description="One line: the cue and where it sits, or the section's prior.")


class CitationContext(BaseModel):
    """An in-text marker linked to its reference-list entry, with the sentence citing it."""

    reference_index: int = Field(description="0-based index of the entry in the reference list.")
    reference_number: int | None = Field(
        default=None, description="The entry's number in a numbered list."
    )
    marker: str = Field(description="The marker as written: `[3-5]`, `(Lewis et al., 2020)`.")
    marker_start: int = Field(description="The marker's offset in `PaperDocument.text`.")
    sentence: str
    char_start: int = Field(description="The sentence's offset in `PaperDocument.text`.")
    char_end: int
    page: int = Field(description="1-based page of the marker.")
    section: str = Field(description="Heading of the section holding it; '' outside any.")
    intent: CitationIntent | None = Field(
        default=None,
        description="What the sentence says of the cited work (`paper_references` reads it).",
    )


class UnresolvedMarker(BaseModel):
    """A marker that names no entry of the list (or more than one): counted, never an error."""

    marker: str
    reason: str = Field(description="Why it was not linked: no such entry, or ambiguous.")
    char_start: int
    page: int


class CitationContexts(BaseModel):
    """A paper's citation contexts: the linked markers, and those that could not be linked."""

    paper_id: str
    contexts: list[CitationContext] = Field(default_factory=list)
    unresolved: list[UnresolvedMarker] = Field(default_factory=list)


MatchRule = Literal["doi", "arxiv", "title_year"]


class CollectionPaper(BaseModel):
    """What a reference can name a paper of the collection by."""

    paper_id: str
    title: str = ""
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None

    @classmethod
    def of(cls, document: PaperDocument) -> CollectionPaper:
        return cls(
            paper_id=document.paper_id,
            title=document.title,
            year=document.year,
            doi=document.doi,
            arxiv_id=document.arxiv_id,
        )


class CitationMatch(BaseModel):
    """One reference-list entry and the paper of the collection it names, if one alone."""

    reference_index: int = Field(description="0-based index of the entry in the reference list.")
    paper_id: str | None = Field(default=None, description="The matched paper; None if none.")
    rule: MatchRule | None = Field(default=None, description="What matched it.")
    ambiguous: list[str] = Field(
        default_factory=list,
        description="The papers it matched by one rule, more than one: it is left unmatched.",
    )
    note: str = Field(
        default="",
        description="Why a candidate was not taken: the citing paper itself, several papers, "
        "a title too short to tell, a year out of the rule.",
    )


class CitationMatches(BaseModel):
    """A paper's reference list matched to the papers of its collection, entry by entry."""

    paper_id: str
    matches: list[CitationMatch] = Field(default_factory=list)


class CitingSentence(BaseModel):
    """A sentence of a paper of the collection that cites a work, where it sits."""

    paper_id: str = Field(description="The citing paper.")
    sentence: str
    page: int = Field(description="1-based page of the marker.")
    section: str = Field(default="", description="Heading of the section holding it.")


class OftenCited(BaseModel):
    """A work that several papers of the collection cite and none of its papers is: one of
    "Often cited, not in your library"."""

    reference: ReferenceRecord = Field(
        description="The most complete of the citing papers' records of it."
    )
    citing_paper_ids: list[str] = Field(description="The papers citing it, each once, sorted.")
    contexts: list[CitingSentence] = Field(
        default_factory=list, description="The sentences citing it, paper by paper."
    )


class PaperReferences(BaseModel):
    """The `paper_references` asset: a paper's reference list as records, the sentences of its
    body citing them, each with its intent, and what could not be linked. Built once per paper
    whatever its collections; a collection's `citation_graph` matches the records."""

    paper: CollectionPaper = Field(description="What another paper's reference names it by.")
    records: list[ReferenceRecord] = Field(default_factory=list)
    contexts: list[CitationContext] = Field(default_factory=list)
    unresolved: list[UnresolvedMarker] = Field(default_factory=list)

    @property
    def untitled(self) -> list[ReferenceRecord]:
        """The entries no title was read from: kept, but never matched by title."""
        return [record for record in self.records if not record.title]


class CitationEdge(BaseModel):
    """`citing` → `cited`: a paper of the collection whose reference list names another, with
    the sentences citing it (none when the list names it but no marker of the body does)."""

    citing: str
    cited: str
    reference_index: int = Field(description="0-based index of the entry in `citing`'s list.")
    rule: MatchRule
    contexts: list[CitationContext] = Field(default_factory=list)


class UnmatchedReference(BaseModel):
    """A reference left unmatched because it names more than one paper of the collection."""

    paper_id: str = Field(description="The citing paper.")
    reference_index: int
    raw: str
    candidates: list[str] = Field(description="The papers it names, each by the same rule.")
    note: str


class PaperCitationCounts(BaseModel):
    """What of one paper's references and markers could not be used, named."""

    paper_id: str
    references: int = Field(description="Entries of its reference list.")
    untitled: list[str] = Field(
        default_factory=list, description="The entries (raw) no title was read from."
    )
    unresolved: list[str] = Field(
        default_factory=list, description="The markers naming no entry, each with why."
    )


class CitationGraph(BaseModel):
    """The `citation_graph` asset of a collection: which of its papers cite which, the works
    they keep citing but the collection lacks, and what could not be linked."""

    collection: str
    papers: list[str] = Field(description="The members whose references are built.")
    edges: list[CitationEdge] = Field(default_factory=list)
    often_cited: list[OftenCited] = Field(
        default_factory=list, description="Often cited, not in your library: most cited first."
    )
    ambiguous: list[UnmatchedReference] = Field(default_factory=list)
    counts: list[PaperCitationCounts] = Field(
        default_factory=list, description="Per paper: its entries, and what was not usable."
    )

    def among(self, papers: Iterable[str]) -> CitationGraph:
        """The graph with only the edges between `papers` (those an analysis covers)."""
        kept = set(papers)
        edges = [edge for edge in self.edges if edge.citing in kept and edge.cited in kept]
        return self.model_copy(update={"edges": edges})

    def cites(self, paper_id: str) -> list[str]:
        """The papers of the collection `paper_id` cites, in its list's order."""
        return list(dict.fromkeys(edge.cited for edge in self.edges if edge.citing == paper_id))

    def cited_by(self, paper_id: str) -> list[str]:
        """The papers of the collection citing `paper_id`."""
        return list(dict.fromkeys(edge.citing for edge in self.edges if edge.cited == paper_id))


CitedRelationshipType = Literal["extension", "improvement", "contrast", "complementary"]


class CitedRelationship(BaseModel):
    """How a paper relates to one it cites, as its citing sentences say: `extends` → extension,
    `compares` → improvement, `contrasts` → contrast; a citation for its use or as background
    supports no type and stays complementary, `why` saying so."""

    citing: str
    cited: str
    type: CitedRelationshipType
    context: CitationContext = Field(description="The sentence that decided the type.")
    passage: RetrievedChunk | None = Field(
        default=None,
        description="The citing paper's chunk holding that sentence: what a synthesis cites "
        "the relationship by, `[citing:page]`.",
    )
    why: str
