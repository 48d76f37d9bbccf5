"""An entry's related entries: biblatex's `related` field (`related = {key1, key2}`, its
`relatedtype` saying how they relate: a translation, a reprint, a review, ...)."""

from __future__ import annotations

from litpipe.ingest.bibtex.parser import BibEntry


def related_keys(entry: BibEntry) -> list[str]:
    """The cite keys the entry's `related` field names, in order, each once; not its own."""
    keys = entry.fields.get("related", "").replace("{", "").replace("}", "").split(",")
    return [key for key in dict.fromkeys(key.strip() for key in keys) if key and key != entry.key]
