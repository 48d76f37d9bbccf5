"""What an output file cites, read as its reader reads it: each citation by the paper's key with
the page (`[muller2021rdcosts, p. 4; smith2020deep, p. 7]` in the Markdown, `>key, p. 4</a>` as a
link's text on a page), and a paper without a key by its `[paper_id:page]` marker."""

from __future__ import annotations

import re
from pathlib import Path

from litpipe.catalog import Catalog
from litpipe.settings import Settings
from litpipe.text import markers_in

# One citation of a bracket, or a link's text: the key, then its page.
CITATION_LABEL = re.compile(r"[\[;>]\s*([^\s\[\];<>]+), p\. (\d+)")


def home_keys(home: Path) -> dict[str, str]:
    """The citation keys the home's catalog gives, by paper."""
    catalog = Catalog(Settings(home=home).paths.catalog_path)
    return {paper_id: key.key for paper_id, key in catalog.keys().items()}


def cited_papers(text: str, home: Path) -> set[str]:
    """The papers `text` cites, by their keys in the home's catalog or by their markers."""
    papers = {key: paper_id for paper_id, key in home_keys(home).items()}
    by_key = {papers[key] for key, _ in CITATION_LABEL.findall(text) if key in papers}
    return by_key | {paper_id for paper_id, _ in markers_in(text)}
