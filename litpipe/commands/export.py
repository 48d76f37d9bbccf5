"""`litpipe export COLLECTION --to latex|pandoc|docx|bibtex|csl-json
[--what synthesis|plain|comparison] [--cited] [--out DIR]`: a built collection's synthesis (or
plain-language summary, or comparison table) for a manuscript, every paper cited by its
citation key (`litpipe status --keys`), with its bibliography; or the bibliography alone.

Files go to `--out` (default `outputs/<collection>/export/`), named by `--what`
(`synthesis.tex`, `synthesis-standalone.tex`, `synthesis.bib`, ...): `workflows.export` says
which each format writes. A collection not built is refused (exit 2), saying how to build it;
so is a text citing a paper without a key, and `docx` without the `pandoc` program. Nothing
is written then.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import cast

from litpipe.commands.flags import add_common_flags
from litpipe.settings import HomePaths, IngestSettings

# What `--what` exports, by the asset it reads.
WHAT = {"synthesis": "synthesis", "plain": "plain_summary", "comparison": "comparison_table"}


def add_export_parser(commands: argparse._SubParsersAction) -> None:
    """The `export` command's parser, among `commands`."""
    from litpipe.schemas.exports import EXPORT_FORMATS

    export = commands.add_parser(
        "export",
        help="a collection's synthesis for a manuscript: LaTeX, Pandoc or Word citing your "
        "keys, with its BibTeX and CSL-JSON",
    )
    export.add_argument("collection", help="a built collection, as `litpipe status` lists it")
    export.add_argument("--to", choices=EXPORT_FORMATS, required=True, help="the format")
    export.add_argument(
        "--what",
        choices=tuple(WHAT),
        default="synthesis",
        help="the expert synthesis (default), the plain-language summary, or the comparison "
        "table (a LaTeX tabular or Pandoc table citing in every cell, and a CSV by key)",
    )
    export.add_argument(
        "--cited",
        action="store_true",
        help="bibtex, csl-json: only the papers the text cites (default: every paper of the "
        "collection)",
    )
    export.add_argument(
        "--out", type=Path, help="the folder to write (default: outputs/COLLECTION/export)"
    )
    add_common_flags(export)


def export_command(
    ingest: IngestSettings,
    paths: HomePaths,
    collection: str,
    to: str,
    what: str,
    cited: bool,
    out: Path | None,
) -> int:
    from litpipe.catalog import Catalog
    from litpipe.defs.resources import artifact_store
    from litpipe.report.manuscript import UncitedKey
    from litpipe.schemas import ComparisonTable, RelationshipAnalysis, Synthesis
    from litpipe.schemas.exports import ExportFormat
    from litpipe.workflows.export import (
        EXPORT_FOLDER,
        PandocMissing,
        export_comparison,
        export_synthesis,
    )

    store = artifact_store(ingest, paths)
    catalog = Catalog(paths.catalog_path)
    asset = WHAT[what]
    if collection not in catalog.collections() or not store.exists([asset], collection):
        print(
            f"litpipe export: collection {collection!r} is not built under {paths.home}: "
            f"`litpipe run SOURCE --collection {collection}` builds it",
            file=sys.stderr,
        )
        return 2
    analysis = (
        store.read(["relationship_analysis"], collection, RelationshipAnalysis)
        if store.exists(["relationship_analysis"], collection)
        else None
    )
    to_format = cast("ExportFormat", to)  # one of EXPORT_FORMATS: argparse's choices
    folder = out or paths.outputs_dir(collection) / EXPORT_FOLDER
    try:
        if what == "comparison":
            table = store.read([asset], collection, ComparisonTable)
            written = export_comparison(to_format, table, catalog, store, folder, what)
        else:
            written = export_synthesis(
                to_format,
                store.read([asset], collection, Synthesis),
                analysis,
                catalog,
                store,
                folder,
                what,
                papers=None if cited else catalog.papers(collection),
            )
    except (UncitedKey, PandocMissing) as refused:
        print(f"litpipe export: {refused}; nothing written", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as failed:
        said = failed.stderr.decode("utf-8", "replace").strip().splitlines()
        print(f"litpipe export: pandoc failed: {said[-1] if said else failed}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
