"""Each paper's citation key, as the pages and exports cite it: the one the catalog holds
(`Catalog.keys`: the user's, their library's or one generated when the paper was read), and
for a paper read before keys were given, one generated now from its document.

    keys = citation_keys(catalog, store, ["10.1093_nar_gkae252", "refs.garcia2019"])
"""

from __future__ import annotations

from collections.abc import Sequence

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.citation_keys import KeyParts
from litpipe.schemas import PaperDocument


def key_parts(document: PaperDocument) -> KeyParts:
    """What a generated key is made of: the document's first author, year and title (the
    library's or the table's where they gave them, else what the PDF's first page yields)."""
    return KeyParts(authors=document.authors, year=document.year, title=document.title)


def citation_keys(
    catalog: Catalog, store: ArtifactStore, paper_ids: Sequence[str]
) -> dict[str, str]:
    """The papers' keys, by paper: those given, and for the papers without one whose document
    was read, one generated from it now (in the order they were registered). A paper whose
    document was never read has none yet."""
    given = {paper_id: key.key for paper_id, key in catalog.keys(list(paper_ids)).items()}
    missing = {
        paper_id: key_parts(store.read(["paper_document"], paper_id, PaperDocument))
        for paper_id in paper_ids
        if paper_id not in given and store.exists(["paper_document"], paper_id)
    }
    if missing:
        given |= catalog.give_generated_keys(missing)
    return {paper_id: given[paper_id] for paper_id in paper_ids if paper_id in given}
