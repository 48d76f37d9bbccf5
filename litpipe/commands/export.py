"""`litpipe export COLLECTION --to latex|pandoc|docx|bibtex|csl-json
[--what synthesis|plain|comparison|answer ID] [--cited] [--out DIR]`: a built collection's
synthesis (or plain-language summary, comparison table, or an answer of `litpipe ask
--collection`) for a manuscript, every paper cited by its citation key (`litpipe status
--keys`), with its bibliography; or the bibliography alone.

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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from litpipe.commands.flags import add_common_flags
from litpipe.settings import HomePaths, IngestSettings

if TYPE_CHECKING:
    from litpipe.schemas.exports import ExportFormat

# What `--what` exports, by the asset it reads.
WHAT = {"synthesis": "synthesis", "plain": "plain_summary", "comparison": "comparison_table"}


def add_export_parser(commands: argparse._SubParsersAction) -> None:
    """The `export` command's parser, among `commands`."""
    from litpipe.schemas.exports import EXPORT_FORMATS

    export = commands.add_parser(
        "export",
        help="a collection's synthesis, comparison table or answer for a manuscript: LaTeX, "
        "Pandoc or Word citing your keys, with its BibTeX and CSL-JSON",
    )
    export.add_argument("collection", help="a built collection, as `litpipe status` lists it")
    export.add_argument("--to", choices=EXPORT_FORMATS, required=True, help="the format")
    export.add_argument(
        "--what",
        nargs="+",
        metavar="WHAT",
        default=["synthesis"],
        help="synthesis (default: the expert synthesis), plain (the plain-language summary), "
        "comparison (the comparison table: a LaTeX tabular or Pandoc table citing in every "
        "cell, and a CSV by key), or answer ID (an answer of `litpipe ask --collection`, by "
        "the id it printed: `Request c-...`)",
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
    what: list[str],
    cited: bool,
    out: Path | None,
) -> int:
    from litpipe.catalog import Catalog
    from litpipe.defs.resources import artifact_store
    from litpipe.schemas import CollectionAnswer, ComparisonTable, RelationshipAnalysis, Synthesis
    from litpipe.workflows import export

    kind, *named = what
    if kind not in (*WHAT, "answer") or len(named) != (kind == "answer"):
        print(
            f"litpipe export: --what takes {', '.join(WHAT)}, or answer ID (the id `litpipe "
            f"ask --collection` printed); not {' '.join(what)!r}",
            file=sys.stderr,
        )
        return 2
    store = artifact_store(ingest, paths)
    catalog = Catalog(paths.catalog_path)
    asset, partition = ("collection_answer", named[0]) if named else (WHAT[kind], collection)
    if collection not in catalog.collections() or not store.exists([WHAT["synthesis"]], collection):
        print(
            f"litpipe export: collection {collection!r} is not built under {paths.home}: "
            f"`litpipe run SOURCE --collection {collection}` builds it",
            file=sys.stderr,
        )
        return 2
    answer = (
        store.read([asset], partition, CollectionAnswer)
        if named and _safe(partition) and store.exists([asset], partition)
        else None
    )
    if named and (answer is None or answer.request.collection != collection):
        print(
            f"litpipe export: no answer {partition!r} of collection {collection!r}: "
            f"`litpipe ask --collection {collection} QUESTION` answers one and prints its id",
            file=sys.stderr,
        )
        return 2
    if not store.exists([asset], partition):
        print(f"litpipe export: collection {collection!r} has no {asset} yet", file=sys.stderr)
        return 2
    to_format = cast("ExportFormat", to)  # one of EXPORT_FORMATS: argparse's choices
    folder = out or paths.outputs_dir(collection) / export.EXPORT_FOLDER
    papers = None if cited else catalog.papers(collection)

    def exported() -> list[Path]:
        if answer is not None:
            manuscript = export.answer_manuscript(
                answer, export.retracted_left_out(catalog, collection)
            )
            return export.export_manuscript(
                to_format, manuscript, catalog, store, folder, partition, papers
            )
        if kind == "comparison":
            table = store.read([asset], collection, ComparisonTable)
            return export.export_comparison(to_format, table, catalog, store, folder, kind)
        analysis = (
            store.read(["relationship_analysis"], collection, RelationshipAnalysis)
            if store.exists(["relationship_analysis"], collection)
            else None
        )
        synthesis = store.read([asset], collection, Synthesis)
        return export.export_synthesis(
            to_format, synthesis, analysis, catalog, store, folder, kind, papers
        )

    status, written = exporting("export", exported)
    for path in written:
        print(path)
    return status


def _safe(key: str) -> bool:
    from litpipe.files import UnsafeKeyError, checked_key

    try:
        checked_key(key, "answer id")
    except UnsafeKeyError:
        return False
    return True


def exporting(command: str, export: Callable[[], list[Path]]) -> tuple[int, list[Path]]:
    """`export()`'s files, and 0; or, where it is refused (a paper without a key, `docx`
    without pandoc) 2, where pandoc fails 1, with one line saying why under `litpipe COMMAND`
    and nothing written."""
    from litpipe.report.manuscript import UncitedKey
    from litpipe.workflows.export import PandocMissing

    try:
        return 0, export()
    except (UncitedKey, PandocMissing) as refused:
        print(f"litpipe {command}: {refused}; nothing exported", file=sys.stderr)
        return 2, []
    except subprocess.CalledProcessError as failed:
        said = failed.stderr.decode("utf-8", "replace").strip().splitlines()
        print(f"litpipe {command}: pandoc failed: {said[-1] if said else failed}", file=sys.stderr)
        return 1, []
