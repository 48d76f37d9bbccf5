"""`paper_references`: a paper's reference list as records, the markers of its body linked to
them, and what each citing sentence says of the work it cites."""

from __future__ import annotations

from litpipe.extractive.citation_intent import citation_intents
from litpipe.ingest.citation_contexts import citation_contexts
from litpipe.ingest.references import parse_references, year_of_ids
from litpipe.schemas import CollectionPaper, PaperDocument, PaperReferences


def paper_references(document: PaperDocument) -> PaperReferences:
    """The document's reference list as records, its body's markers linked to them, and what
    each citing sentence says of the work it cites (`citation_intents`, offline); the paper as
    other papers' references may name it, its year read off a preprint's id where no source
    gave one."""
    records = parse_references(document.references)
    found = citation_contexts(document, records)
    intents = citation_intents(document, found.contexts)
    paper = CollectionPaper.of(document)
    if paper.year is None:
        # A PDF's pages give no year a parser trusts, but a preprint's DOI or arXiv id dates it:
        # without a year, another paper's reference could name it by title never.
        paper.year = year_of_ids(paper.doi, paper.arxiv_id)
    return PaperReferences(
        paper=paper,
        records=records,
        contexts=[
            context.model_copy(update={"intent": intent})
            for context, intent in zip(found.contexts, intents, strict=True)
        ],
        unresolved=found.unresolved,
    )
