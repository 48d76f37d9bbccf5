"""`litpipe status --keys` (every paper's citation key, who gave it, and the library keys that
could not be given) and `litpipe key PAPER KEY` (the user's own key for a paper).

A key is the paper's library's (a BibTeX entry's key, Better BibTeX's of a Zotero item), the
user's, or generated (`lewis2020retrieval`): `litpipe.citation_keys` says how. The user's key
is refused, in one line and with nothing changed, when no manuscript could cite it or another
paper holds it (regardless of case, as BibTeX compares keys).
"""

from __future__ import annotations

import argparse
import sys

from litpipe.commands.flags import add_common_flags
from litpipe.settings import HomePaths


def add_key_parser(commands: argparse._SubParsersAction) -> None:
    """The `key` command's parser, among `commands`."""
    key = commands.add_parser(
        "key",
        help="cite a paper by your own key in the pages and exports (`status --keys` lists them)",
    )
    key.add_argument("paper", help="the paper's id, as `litpipe status --keys` lists it")
    key.add_argument("key", help="the citation key, e.g. garcia2019rev1")
    add_common_flags(key)


def key_command(paths: HomePaths, paper_id: str, key: str) -> int:
    from litpipe.catalog import Catalog

    if not paths.catalog_path.exists():
        print(f"litpipe key: no catalog in {paths.home}: run papers first", file=sys.stderr)
        return 2
    catalog = Catalog(paths.catalog_path)
    try:
        catalog.set_key(paper_id, key)
    except KeyError:
        print(
            f"litpipe key: no paper {paper_id!r} in the catalog {paths.catalog_path} "
            "(`litpipe status --keys` lists its papers); nothing changed",
            file=sys.stderr,
        )
        return 2
    except ValueError as refused:
        print(f"litpipe key: {refused}; nothing changed", file=sys.stderr)
        return 2
    print(f"{paper_id} is cited as {key}")
    return 0


def keys_listing(paths: HomePaths) -> int:
    """`status --keys`: a line a paper, `KEY  PAPER  (given by ...)`, by collection, then the
    library keys that were not given, each with why."""
    from litpipe.artifacts import ArtifactStore
    from litpipe.catalog import Catalog
    from litpipe.workflows.citation_keys import citation_keys

    if not paths.catalog_path.exists():
        print(f"nothing registered yet under {paths.home}: try `litpipe run SOURCE`")
        return 0
    catalog = Catalog(paths.catalog_path)
    store = ArtifactStore(paths.artifacts_dir)
    for collection in catalog.collections():
        papers = catalog.papers(collection, retracted=True)
        keys = citation_keys(catalog, store, papers)
        given = catalog.keys(papers)
        print(f"{collection}:")
        width = max((len(key) for key in keys.values()), default=0)
        for paper_id in papers:
            if paper_id in keys:
                print(f"  {keys[paper_id]:<{width}}  {paper_id}  ({given[paper_id].given_by})")
            else:
                print(f"  {'-':<{width}}  {paper_id}  (none yet: its document was never read)")
    for clash in catalog.key_clashes():
        instead = f"; cited as {clash.key_given}" if clash.key_given else ""
        print(
            f"library key {clash.library_key!r} of {clash.paper_id} not given: "
            f"{clash.reason}{instead}"
        )
    return 0
