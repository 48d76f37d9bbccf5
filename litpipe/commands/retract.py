"""`litpipe retract PAPER [--reason TEXT] [--undo]`: a paper marked retracted (or corrected:
the reason says which) in the catalog, or its mark lifted, and every collection that holds it
rebuilt without it (or with it again), with a line for what is rebuilt.

The paper stays in the catalog and in its collections, marked (`Catalog.retract`): the
collections read their papers without it (`Catalog.papers`), so their index, the evidence of
their other papers (when `retrieval.evidence_scope` searches other papers), the relationship
analysis, the syntheses and `report.json` are rebuilt without it, and the synthesis names it
among the papers it leaves out, with the reason. A paper the catalog does not hold is refused
(exit 2), and nothing changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from litpipe.commands.flags import add_common_flags
from litpipe.files import write_atomically
from litpipe.settings import HomePaths, Settings
from litpipe.text import counted

if TYPE_CHECKING:
    from litpipe.catalog import Catalog
    from litpipe.runtime.runner import PaperOutcome, PapersRun


def add_retract_parser(commands: argparse._SubParsersAction) -> None:
    """The `retract` command's parser, among `commands`."""
    retract = commands.add_parser(
        "retract",
        help="mark a paper retracted (or corrected), or lift the mark (--undo), and rebuild "
        "its collections without it (or with it again); it stays in the catalog, marked",
    )
    retract.add_argument("paper", help="the paper's id, as `litpipe status --all` lists it")
    retract.add_argument(
        "--reason",
        default="",
        help="why, as the synthesis's list of papers left out says it (e.g. 'retracted by the "
        "journal, 2024-05-02' or 'corrected: table 2 was wrong')",
    )
    retract.add_argument(
        "--undo", action="store_true", help="lift the paper's mark: its collections cite it again"
    )
    add_common_flags(retract)


def retract_command(settings: Settings, paper_id: str, reason: str, undo: bool) -> int:
    # Imported here: Dagster, LanceDB and the tokenizer cost seconds that `--help` should not.
    from litpipe.catalog import Catalog
    from litpipe.commands.run import synthesis_report
    from litpipe.commands.standing import answer_standing
    from litpipe.settings.groups import settings_groups

    if not settings.paths.catalog_path.exists():
        print(f"litpipe retract: no catalog in {settings.home}: run papers first", file=sys.stderr)
        return 2
    catalog = Catalog(settings.paths.catalog_path)
    try:
        if undo:
            lifted = catalog.restore(paper_id)
            changed = lifted is not None
            said = (
                f"{paper_id}: its retraction ({lifted.reason or 'no reason given'}) is lifted"
                if lifted is not None
                else f"{paper_id} is not retracted: nothing to undo"
            )
        else:
            changed = catalog.retract(paper_id, " ".join(reason.split()))
            said = f"{paper_id} is marked retracted" + (f": {reason}" if reason else "")
            if not changed:
                said = f"{paper_id} was already marked retracted so: nothing to rebuild"
    except KeyError:
        print(
            f"litpipe retract: no paper {paper_id!r} in the catalog {settings.paths.catalog_path} "
            "(`litpipe status --all` lists its papers); nothing changed",
            file=sys.stderr,
        )
        return 2
    print(said, file=sys.stderr)
    held = catalog.collections_of([paper_id]).get(paper_id, [])
    if not changed or not held:
        return 0
    rebuilt = [name for name in held if catalog.papers(name)]
    for name in held:
        if name not in rebuilt:
            print(
                f"  {name!r} has no other paper: its outputs are left as they were",
                file=sys.stderr,
            )
    if not rebuilt:
        return 0
    print(
        f"rebuilding {', '.join(repr(name) for name in rebuilt)} "
        f"{'with' if undo else 'without'} it",
        file=sys.stderr,
    )
    papers_run = _rebuild(settings, catalog, rebuilt)
    code = 0
    for name in rebuilt:
        report = synthesis_report(
            settings.ingest, settings.paths, name, papers_run.checks.get(name, [])
        )
        if report is None:
            code = 1
            continue
        _update_report(settings.paths, name, report.model_dump(mode="json"))
        left = "; ".join(f"{paper.paper_id}: {paper.reason}" for paper in report.left_out)
        print(
            f"  {name!r} rebuilt: synthesis cites {report.cited_papers}/{report.papers} papers"
            + (f"; left out: {left}" if left else "")
            + f" ({report.outputs.get('synthesis.html', settings.paths.outputs_dir(name))})",
            file=sys.stderr,
        )
    if papers_run.collection_failure:
        print(f"  collection assets FAILED: {papers_run.collection_failure}", file=sys.stderr)
        code = 1
    # The standing answers of its collections: the next answer drops (or restores) its
    # citations.
    for line in answer_standing(settings_groups(settings), settings.questions):
        print(line, file=sys.stderr)
    return code


def _rebuild(settings: Settings, catalog: Catalog, collections: list[str]) -> PapersRun:
    """The collections' papers brought up to date (what read the paper's chunks, when their
    evidence searches other papers), then the collections rebuilt, whatever the instance says
    of them: a home built before retractions were recorded cannot tell."""
    from litpipe.catalog import Registration
    from litpipe.runtime.runner import open_instance, run_papers

    papers = sorted({paper for name in collections for paper in catalog.papers(name)})

    def show(done: int, total: int, outcome: PaperOutcome) -> None:
        if outcome.status != "up_to_date":
            detail = outcome.failure.reason if outcome.failure else outcome.status
            print(f"  [{done}/{total}] {outcome.paper_id}: {detail}", file=sys.stderr)

    def starting(done: int, papers: int, total: int) -> None:
        checking = counted(papers, "paper")
        print(f"  [{done + 1}-{done + papers}/{total}] checking {checking}", file=sys.stderr)

    return run_papers(
        settings,
        open_instance(settings.llm, settings.paths),
        dict.fromkeys(papers, Registration.UNCHANGED),
        on_progress=show,
        on_batch=starting,
        rebuild_collections=collections,
    )


def _update_report(paths: HomePaths, collection: str, synthesis: dict[str, object]) -> None:
    """`report.json`'s synthesis as it is now (the rest says what the last run did)."""
    path = paths.outputs_dir(collection) / "report.json"
    if not path.exists():
        return
    report = json.loads(path.read_text("utf-8"))
    report["synthesis"] = synthesis
    write_atomically(path, json.dumps(report, indent=2, ensure_ascii=False))
