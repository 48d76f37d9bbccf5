"""`litpipe run`: a source's papers (a folder of PDFs, an abstract table, a Zotero library, a
BibTeX file) ingested into a collection and its synthesis written, with a line per paper and
a summary of what was built (`report.json`)."""

from __future__ import annotations

import functools
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from litpipe.catalog import Registration
from litpipe.files import write_atomically
from litpipe.llm.usage import calls_counts, calls_line
from litpipe.schemas import (
    CheckReport,
    CitationReport,
    FailedPaper,
    PaperSource,
    RunReport,
    SynthesisDiff,
    SynthesisReport,
)
from litpipe.settings import OFFLINE, HomePaths, IngestSettings, Settings
from litpipe.stopping import STOPPED_EXIT, stop_line
from litpipe.text import counted

if TYPE_CHECKING:
    from litpipe.ingest.sources import Discovery
    from litpipe.runtime.runner import PaperOutcome
    from litpipe.schemas import CitationGraph, RelationshipAnalysis

# What finds a run's papers in its source (a Zotero data directory, a .bib file), given the
# `--collection` asked for.
SourceReader = Callable[[Path, str | None], "Discovery"]


def run_source(
    source: Path | None, zotero: Path | None, zotero_collection: str | None, bibtex: Path | None
) -> tuple[Path, SourceReader | None]:
    """The run's source, and the reader of a reference manager's (None for a folder or a
    table: `discover`)."""
    if zotero is not None:
        from litpipe.ingest.zotero import discover_zotero

        return zotero.expanduser(), functools.partial(
            discover_zotero, zotero_collection=zotero_collection
        )
    if bibtex is not None:
        from litpipe.ingest.bibtex import discover_bibtex

        return bibtex, discover_bibtex
    assert source is not None  # argparse requires exactly one source
    return source, None


def run_command(
    settings: Settings,
    source: Path,
    collection: str | None,
    stop_requested: Callable[[], bool] = lambda: False,
    move: bool = False,
    reader: SourceReader | None = None,
) -> int:
    # Imported here: Dagster, LanceDB and the tokenizer cost seconds that `--help` should not.
    from litpipe.commands.standing import answer_standing
    from litpipe.ingest.sources import discover
    from litpipe.retrieval.store import ChunkStore
    from litpipe.runtime.runner import open_instance, register, run_papers
    from litpipe.settings.groups import settings_groups
    from litpipe.workflows import synthesis_history
    from litpipe.workflows.ingest import settings_embedder

    started = time.perf_counter()
    try:
        discovery = (reader or discover)(source, collection)
    except ValueError as error:
        print(f"litpipe run: {error}", file=sys.stderr)
        return 2
    elsewhere = _in_other_collections(settings.paths, discovery)
    before = _as_registered(settings.ingest, settings.paths, list(elsewhere))
    print(
        f"{source}: {counted(len(discovery.sources), 'paper')} in collection "
        f"{discovery.collection!r}{_failed_to_enter(discovery.failed)}",
        file=sys.stderr,
    )
    for note in discovery.notes:
        print(f"  note: {note}", file=sys.stderr)
    for failure in discovery.failed:
        print(f"  failed: {_describe(failure)}", file=sys.stderr)
    discovered = time.perf_counter()

    instance = open_instance(settings.llm, settings.paths)
    registrations = register(settings.paths, instance, discovery, move=move)
    shared = SharedPapers(
        collection=discovery.collection,
        elsewhere=elsewhere,
        before=before,
        now=_as_registered(settings.ingest, settings.paths, list(elsewhere)),
        registrations=registrations,
        origin=source.name,
        without_record={s.paper_id for s in discovery.sources if s.kind == "pdf" and not s.fields},
    )
    for line in shared.lines(move):
        print(line, file=sys.stderr)

    def show(done: int, total: int, outcome: PaperOutcome) -> None:
        detail = {
            "materialized": f"{counted(outcome.chunks, 'chunk')}, {outcome.embedded} embedded, "
            f"{counted(outcome.questions, 'question')}, "
            f"{counted(outcome.evidence, 'evidence chunk')}, "
            f"{counted(outcome.answers, 'answer')}",
            "up_to_date": f"up to date ({counted(outcome.chunks, 'chunk')})",
            "failed": f"FAILED: {outcome.failure.reason if outcome.failure else ''}",
            "interrupted": "interrupted (stop requested)",
        }[outcome.status]
        print(
            f"[{done}/{total}] {outcome.paper_id}: {detail} ({outcome.seconds:.1f} s)",
            file=sys.stderr,
        )

    def starting(done: int, papers: int, total: int) -> None:
        # A batch of papers prints its lines once it is built: say what is under way meanwhile.
        if papers > 1:
            print(f"[{done + 1}-{done + papers}/{total}] building {papers} papers", file=sys.stderr)

    # What this run changes in the synthesis: from the version kept now to the latest.
    history_since = synthesis_history.now()
    papers_run = run_papers(
        settings,
        instance,
        registrations,
        on_progress=show,
        on_batch=starting,
        stop_requested=stop_requested,
        left_collections=sorted({c for held in elsewhere.values() for c in held}) if move else (),
    )
    outcome_list, usage = papers_run.outcomes, papers_run.llm_usage
    if papers_run.stopped:
        statuses = Counter(outcome.status for outcome in outcome_list)
        done = (
            f"{counted(statuses['materialized'], 'paper')} built, {statuses['up_to_date']} up "
            "to date, "
            f"{statuses['failed']} failed, {statuses['interrupted']} interrupted"
        )
        left = (
            f"not built: {counted(len(papers_run.not_built), 'paper')} and the collection's "
            "synthesis"
        )
        print(stop_line("run", done, left), file=sys.stderr)
        return STOPPED_EXIT
    finished = time.perf_counter()

    embedder = settings_embedder(settings.ingest, settings.paths)
    store = ChunkStore(settings.paths.lancedb_dir)
    ingested = [o for o in outcome_list if o.status != "failed"]
    report = RunReport(
        collection=discovery.collection,
        source=str(source.resolve()),
        papers=len(ingested),
        papers_materialized=sum(o.status == "materialized" for o in outcome_list),
        papers_up_to_date=sum(o.status == "up_to_date" for o in outcome_list),
        chunks=sum(o.chunks for o in ingested),
        embedded_chunks=sum(o.embedded for o in ingested),
        questions=sum(o.questions for o in ingested),
        evidence_chunks=sum(o.evidence for o in ingested),
        answers=sum(o.answers for o in ingested),
        synthesis=synthesis_report(
            settings.ingest,
            settings.paths,
            discovery.collection,
            papers_run.checks.get(discovery.collection, []),
            history_since,
        ),
        collection_failure=papers_run.collection_failure,
        failed_papers=[*discovery.failed, *(o.failure for o in outcome_list if o.failure)],
        engine=settings.llm.model or OFFLINE,
        llm_calls=calls_counts(usage),
        llm_calls_by_agent=papers_run.llm_usage_by_agent,
        tokens={"in": usage.tokens_in, "out": usage.tokens_out},
        cost_usd=usage.cost_usd,
        embedder=embedder.embedder_id,
        lancedb_table=store.table_name(embedder.embedder_id),
        lancedb_rows=store.count_rows(embedder.embedder_id),
        timings={
            "discover_s": round(discovered - started, 3),
            "pipeline_s": round(finished - discovered, 3),
            "total_s": round(time.perf_counter() - started, 3),
        },
    )
    out_dir = settings.paths.outputs_dir(discovery.collection)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(out_dir / "report.json", report.model_dump_json(indent=2))
    print(
        f"{counted(report.papers, 'paper')} ingested ({report.papers_up_to_date} already up to "
        "date), "
        f"{len(report.failed_papers)} failed; {counted(report.chunks, 'chunk')}, "
        f"{report.embedded_chunks} embedded now; {counted(report.lancedb_rows, 'row')} in "
        f"{report.lancedb_table}; {counted(report.questions, 'question')} by {report.engine}, "
        f"{counted(report.evidence_chunks, 'evidence chunk')} "
        f"(model calls: {calls_line(usage)}). Report: {out_dir / 'report.json'}",
        file=sys.stderr,
    )
    if report.synthesis is not None:
        written = report.synthesis
        types = ", ".join(f"{count} {kind}" for kind, count in written.relationship_types.items())
        appended = (
            f", {written.appended_papers} of them only by an appended sentence"
            if written.appended_papers
            else ""
        )
        print(
            f"{counted(written.papers, 'paper')} analysed: {counted(written.insights, 'insight')}, "
            f"{counted(written.relationships, 'relationship')} ({types}); synthesis "
            f"({written.synthesis_pattern}, {counted(written.synthesis_words, 'word')}, "
            f"{written.cited_papers}/{counted(written.papers, 'paper')} cited{appended}) and plain "
            "summary "
            f"({counted(written.plain_words, 'word')}): {out_dir / 'synthesis.html'}",
            file=sys.stderr,
        )
        for paper in written.left_out:
            print(f"  left out: {paper.paper_id}: {paper.reason}", file=sys.stderr)
        if written.changes is not None:
            print(f"  {changes_line(written.changes)}", file=sys.stderr)
    # Also when a blocking check stopped the collection's assets: it says why.
    for check in papers_run.checks.get(discovery.collection, []):
        print(
            f"  check {check.asset}/{check.check}: {check.verdict()}: {check.description}",
            file=sys.stderr,
        )
    if report.collection_failure:
        print(f"  collection assets FAILED: {report.collection_failure}", file=sys.stderr)
    for line in answer_standing(settings_groups(settings), settings.questions):
        print(line, file=sys.stderr)
    return 0 if report.papers and not report.collection_failure else 1


def _in_other_collections(paths: HomePaths, discovery: Discovery) -> dict[str, list[str]]:
    """The source's papers that the catalog holds in other collections, with those; read only
    (a home without a catalog holds none)."""
    from litpipe.catalog import Catalog

    if not paths.catalog_path.exists():
        return {}
    catalog = Catalog(paths.catalog_path)
    held = catalog.collections_of([s.paper_id for s in discovery.sources])
    others = {
        paper_id: [name for name in collections if name != discovery.collection]
        for paper_id, collections in held.items()
    }
    return {paper_id: names for paper_id, names in others.items() if names}


def _as_registered(
    ingest: IngestSettings, paths: HomePaths, paper_ids: list[str]
) -> dict[str, RegisteredPaper]:
    """The papers as the catalog holds them (their source) and as last built (the title of
    their document, where one was built)."""
    from litpipe.catalog import Catalog
    from litpipe.defs.resources import artifact_store
    from litpipe.schemas import PaperDocument

    if not paper_ids:
        return {}
    catalog = Catalog(paths.catalog_path)
    artifacts = artifact_store(ingest, paths)
    return {
        paper_id: RegisteredPaper(
            source=catalog.source(paper_id),
            built_title=artifacts.read(["paper_document"], paper_id, PaperDocument).title
            if artifacts.exists(["paper_document"], paper_id)
            else None,
        )
        for paper_id in paper_ids
    }


class RegisteredPaper(BaseModel):
    """A paper as the catalog holds it, and the title its document was last built with (None
    before its first build)."""

    source: PaperSource
    built_title: str | None = None


# Papers named per collection in a line about papers of other collections; the rest counted.
NAMED_PAPERS = 5


class SharedPapers(BaseModel):
    """The run's papers that other collections hold (`elsewhere`: each with those), as the
    catalog held them `before` this run registered them and holds them `now`, with their
    `registrations`; `origin` names the run's source (`refs.bib`)."""

    collection: str
    elsewhere: dict[str, list[str]]
    before: dict[str, RegisteredPaper]
    now: dict[str, RegisteredPaper]
    registrations: dict[str, Registration]
    origin: str
    without_record: set[str] = Field(
        default_factory=set,
        description="The run's PDFs found without a library's record (in a folder).",
    )

    def lines(self, move: bool) -> list[str]:
        """What the run says of them, before it builds: with `move`, the papers it takes out
        of the other collections; else those shared as they were (nothing of them built again),
        and one line per other collection rebuilt for papers this source changed, with why."""
        if not self.elsewhere:
            return []
        if move:
            return [
                f"moving {counted(len(self.elsewhere), 'paper')} into {self.collection!r} out of "
                f"{_held(self.elsewhere)}"
            ]
        changed = {
            paper_id: others
            for paper_id, others in self.elsewhere.items()
            if self.registrations.get(paper_id) is Registration.CHANGED
        }
        same = {p: others for p, others in self.elsewhere.items() if p not in changed}
        lines = []
        if same:
            # Found in a folder, and known to the catalog from a library: its record stays.
            library = sum(
                p in self.without_record and bool(self.now[p].source.fields) for p in same
            )
            keeps = {
                0: "",
                1: f"; {'it' if len(same) == 1 else '1 of them'} keeps the title its library "
                "gives it",
            }.get(library, f"; {library} of them keep the titles their library gives them")
            lines.append(
                f"{counted(len(same), 'paper')} also in other collections ({_held(same)}): their "
                f"per-paper work is shared, not done again{keeps} (--move takes them out of those)"
            )
        for other, paper_ids in _by_collection(changed).items():
            reasons = "; ".join(self._why_changed(p) for p in paper_ids[:NAMED_PAPERS])
            more = len(paper_ids) - NAMED_PAPERS
            lines.append(
                f"rebuilding {other!r} too: {reasons}" + (f"; and {more} more" if more > 0 else "")
            )
        return lines

    def _why_changed(self, paper_id: str) -> str:
        """Why a paper of other collections is built again: what its source says now."""
        before, now = self.before[paper_id], self.now[paper_id]
        old, new = before.source.fields, now.source.fields
        if old == new:
            return f"{paper_id}: its {'file' if now.source.kind == 'pdf' else 'row'} changed"
        title, had = new.get("title"), old.get("title") or before.built_title
        if title and title != had:
            was = "" if had is None else f" (it had {had!r})"
            return f"{paper_id} takes the title {self.origin} gives it, {title!r}{was}"
        # The title is the one the paper had: what else the record says is what changed.
        known = {**old, "title": had} if had else old
        names = ", ".join(sorted(n for n in {*old, *new} if known.get(n) != new.get(n)))
        if not old:
            return f"{paper_id} takes the record {self.origin} gives it ({names})"
        return f"{paper_id}: {self.origin} changed its {names}"


def _by_collection(elsewhere: dict[str, list[str]]) -> dict[str, list[str]]:
    """The papers per other collection that holds them."""
    by_collection: dict[str, list[str]] = {}
    for paper_id, others in sorted(elsewhere.items()):
        for other in others:
            by_collection.setdefault(other, []).append(paper_id)
    return by_collection


def _held(elsewhere: dict[str, list[str]]) -> str:
    """`'a': p1, p2; 'b': p3`: the papers each other collection holds, the first few named."""
    return "; ".join(
        f"{other!r}: {', '.join(ids[:NAMED_PAPERS])}"
        + (f" and {len(ids) - NAMED_PAPERS} more" if len(ids) > NAMED_PAPERS else "")
        for other, ids in _by_collection(elsewhere).items()
    )


def synthesis_report(
    ingest: IngestSettings,
    paths: HomePaths,
    collection: str,
    checks: list[CheckReport],
    since: datetime | None = None,
) -> SynthesisReport | None:
    """The collection stages' figures, read from their outputs, with what changed in the
    synthesis since `since` (from the version kept last before it); None until they exist."""
    from litpipe.defs.resources import artifact_store
    from litpipe.schemas import (
        CitationGraph,
        CollectionOutputs,
        CrossPaperQuestions,
        RelationshipAnalysis,
        Synthesis,
    )
    from litpipe.workflows.synthesis_history import changes_since

    artifacts = artifact_store(ingest, paths)
    needed = ["cross_paper_questions", "relationship_analysis", "synthesis", "plain_summary"]
    if not all(artifacts.exists([asset], collection) for asset in [*needed, "collection_outputs"]):
        return None
    comparative = artifacts.read(["cross_paper_questions"], collection, CrossPaperQuestions)
    analysis = artifacts.read(["relationship_analysis"], collection, RelationshipAnalysis)
    expert = artifacts.read(["synthesis"], collection, Synthesis)
    plain = artifacts.read(["plain_summary"], collection, Synthesis)
    outputs = artifacts.read(["collection_outputs"], collection, CollectionOutputs)
    graph = (
        artifacts.read(["citation_graph"], collection, CitationGraph)
        if artifacts.exists(["citation_graph"], collection)
        else None
    )
    return SynthesisReport(
        papers=len(analysis.papers),
        comparative_questions=len(comparative.answers),
        insights=len(analysis.insights),
        relationships=len(analysis.relationships),
        relationship_types=analysis.type_distribution,
        follow_up_papers=[item.paper_id for item in analysis.follow_ups],
        synthesis_pattern=expert.pattern,
        synthesis_words=len(expert.text.split()),
        plain_words=len(plain.text.split()),
        cited_papers=len({citation.paper_id for citation in expert.citations}),
        appended_papers=len(expert.appended),
        left_out=expert.left_out,
        citations=citation_report(graph, analysis) if graph is not None else None,
        outputs=outputs.files,
        checks=checks,
        changes=changes_since(paths.home, collection, since),
    )


def citation_report(graph: CitationGraph, analysis: RelationshipAnalysis) -> CitationReport:
    """`report.json`'s account of the collection's citation graph."""
    return CitationReport(
        references=sum(paper.references for paper in graph.counts),
        edges=len(graph.edges),
        cited_relationships=dict(
            Counter(relation.type for relation in analysis.cited_relationships)
        ),
        often_cited=len(graph.often_cited),
        untitled_references={p.paper_id: p.untitled for p in graph.counts if p.untitled},
        unresolved_markers={p.paper_id: p.unresolved for p in graph.counts if p.unresolved},
        ambiguous_references=[
            f"{item.paper_id}: {item.raw} ({', '.join(item.candidates)})"
            for item in graph.ambiguous
        ],
    )


def changes_line(diff: SynthesisDiff) -> str:
    """One line on what a run changed in the synthesis (`litpipe diff` shows it whole)."""
    if not diff.changed:
        return "synthesis: nothing changed"
    if diff.from_version is None:
        return f"synthesis: its first version is kept (`litpipe diff {diff.collection}` later)"
    return (
        f"synthesis changed: {counted(len(diff.papers_added), 'paper')} added, "
        f"{len(diff.papers_removed)} removed; {counted(len(diff.sentences_added), 'sentence')} "
        f"added, {len(diff.sentences_removed)} removed, {diff.reworded} reworded; "
        f"{counted(len(diff.support_changed), 'claim')} whose support changed, "
        f"{len(diff.contradicted)} newly contradicted; "
        f"{counted(len(diff.relationships_appeared), 'relationship')} appeared, "
        f"{len(diff.relationships_gone)} went (`litpipe diff {diff.collection}`)"
    )


def _failed_to_enter(failed: list[FailedPaper]) -> str:
    """What of the source could not enter the collection, counted apart from its papers: the
    rows of a table, the entries of a library (each listed on its own line)."""
    if not failed:
        return ""
    rows = all(failure.row is not None for failure in failed)
    what = counted(len(failed), "row") if rows else counted(len(failed), "entry", "entries")
    return f" ({what} failed: listed below)"


def _describe(failure: FailedPaper) -> str:
    where = failure.file if failure.row is None else f"{failure.file} row {failure.row}"
    return f"{where}: {failure.reason}"
