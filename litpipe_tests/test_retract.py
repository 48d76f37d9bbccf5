"""Retractions as a user makes them (`litpipe retract`, a table's `retracted` column, a BibTeX
field) and sees them: the paper stays in the catalog, marked, and nothing its collection writes
cites it or names it but the list of papers left out, with the reason; `--undo` brings it back."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from litpipe.catalog import SOURCE_REASON, Catalog
from litpipe.cli import main
from litpipe.defs.resources import artifact_store
from litpipe.ingest.bibtex import discover_bibtex
from litpipe.report.digest import digest_markdown
from litpipe.schemas import PaperEvidence, PaperSource, RelationshipAnalysis
from litpipe.settings import Settings
from litpipe.text import markers_in
from litpipe.workflows import synthesis_history
from litpipe.workflows.synthesis_diff import synthesis_sentences
from litpipe_tests.cited import cited_papers
from litpipe_tests.test_synthesis_history import digest_on

ICLR_TABLE = (
    Path(__file__).resolve().parents[1]
    / "corpora"
    / "iclr-abstracts-demo"
    / "iclr_abstracts_demo.csv"
)
# The written outputs whose text must not cite a retracted paper.
OUTPUTS = ("synthesis.md", "plain.md", "synthesis.html")


def demo_table(path: Path, rows: int, retracted: dict[int, str] | None = None) -> Path:
    """The first `rows` rows of the bundled ICLR abstracts (id, title, abstract), with a
    `retracted` column when `retracted` gives some rows (by index) a value."""
    with ICLR_TABLE.open(encoding="utf-8", newline="") as handle:
        kept = [row for _, row in zip(range(rows), csv.DictReader(handle), strict=False)]
    columns = ["id", "title", "abstract", *(["retracted"] if retracted is not None else [])]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore")
    writer.writeheader()
    for number, row in enumerate(kept):
        writer.writerow({**row, "retracted": (retracted or {}).get(number, "")})
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def cli(home: Path, embedder: Path, *args: str) -> int:
    return main([*args, "--home", str(home), "--embedder", str(embedder)])


def outputs(home: Path, collection: str) -> dict[str, str]:
    folder = home / "outputs" / collection
    return {name: (folder / name).read_text("utf-8") for name in (*OUTPUTS, "report.json")}


def lines_naming(text: str, paper_id: str) -> list[str]:
    return [line for line in text.splitlines() if paper_id in line]


def strings_naming(value: object, paper_id: str) -> list[str]:
    """The strings of a JSON value that name the paper, but its `paper_id` fields."""
    if isinstance(value, dict):
        return [
            text
            for key, item in value.items()
            if key != "paper_id"
            for text in strings_naming(item, paper_id)
        ]
    if isinstance(value, list):
        return [text for item in value for text in strings_naming(item, paper_id)]
    return [value] if isinstance(value, str) and paper_id in value else []


def evidence_papers(settings: Settings, paper_id: str) -> set[str]:
    found = artifact_store(settings.ingest, settings.paths).read(
        ["question_evidence"], paper_id, PaperEvidence
    )
    return {chunk.paper_id for item in found.questions for chunk in item.chunks}


def test_a_retracted_paper_leaves_every_output_but_the_left_out_list_and_undo_restores_it(
    tmp_path: Path,
    tiny_model: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    table = demo_table(tmp_path / "demo.csv", 3)
    # Each paper's evidence comes from the others': the retracted paper's chunks are in theirs.
    scope = ("--set", "retrieval.evidence_scope=others")
    # Built yesterday, retracted today: today's digest says what the retraction changed.
    today = datetime.combine(datetime.now(UTC).date(), time(), tzinfo=UTC)
    monkeypatch.setattr(synthesis_history, "now", lambda: today - timedelta(hours=1))
    assert cli(home, tiny_model, "run", str(table), *scope) == 0
    monkeypatch.undo()
    settings = Settings(home=home)
    catalog = Catalog(settings.paths.catalog_path)
    papers = catalog.papers("demo")
    before = outputs(home, "demo")
    target = sorted(cited_papers(before["synthesis.md"], home))[0]
    # Its text cites each paper by its key, the markers kept for the checks.
    assert markers_in(before["synthesis.md"].split("## References")[0]) == []
    others = [paper for paper in papers if paper != target]
    assert any(target in evidence_papers(settings, paper) for paper in others)
    capsys.readouterr()

    code = cli(home, tiny_model, "retract", target, "--reason", "data fabricated", *scope)

    err = capsys.readouterr().err
    assert code == 0, err
    assert f"{target} is marked retracted: data fabricated" in err
    assert "rebuilding 'demo' without it" in err
    assert f"'demo' rebuilt: synthesis cites 2/2 papers; left out: {target}: retracted: " in err
    # The catalog still holds it, in its collection, marked, with the reason and when.
    assert catalog.papers("demo") == others
    assert catalog.papers("demo", retracted=True) == papers
    mark = catalog.retractions()[target]
    assert (mark.reason, mark.restored_at) == ("data fabricated", None)
    assert (datetime.now(UTC) - mark.retracted_at).total_seconds() < 600
    # No output cites it; only the list of papers left out names it, with the reason.
    after = outputs(home, "demo")
    for name in OUTPUTS:
        assert target not in cited_papers(after[name], home), name
        assert cited_papers(after[name], home) <= set(others), name
    title = catalog.source(target).fields["title"]
    for name in ("synthesis.md", "plain.md"):
        assert "## Left out" in after[name]
        (named,) = lines_naming(after[name], target)
        assert named.endswith("retracted: data fabricated"), name
        assert f"**{title}**" in named, name
    (named,) = lines_naming(after["synthesis.html"], target)
    assert "retracted: data fabricated</li>" in named
    report = json.loads(after["report.json"])
    assert report["synthesis"]["left_out"] == [
        {"paper_id": target, "reason": "retracted: data fabricated"}
    ]
    # Elsewhere in the report, only the coverage checks' lines on the papers left out name it.
    assert all("retracted: data fabricated" in text for text in strings_naming(report, target))
    for figure in (home / "outputs" / "demo").glob("*.svg"):
        assert target not in figure.read_text("utf-8"), figure.name
    analysis = artifact_store(settings.ingest, settings.paths).read(
        ["relationship_analysis"], "demo", RelationshipAnalysis
    )
    assert target not in analysis.papers
    assert all(insight.paper_id != target for insight in analysis.insights)
    assert [paper.paper_id for paper in analysis.left_out] == [target]
    # The other papers' evidence was found again without its chunks.
    for paper in others:
        assert target not in evidence_papers(settings, paper), paper
    # Today's digest lists each sentence that had cited it, and what took its place.
    first = synthesis_history.read(synthesis_history.entries(home, "demo", "synthesis")[0])
    assert first.synthesis is not None
    had = [s.text for s in synthesis_sentences(first.synthesis.text) if target in s.papers]
    assert had
    digest = digest_on(settings, today.date(), [])
    (changes,) = digest.changes
    (retraction,) = changes.retracted
    assert (retraction.paper_id, retraction.reason) == (target, "retracted: data fabricated")
    assert [sentence.before.text for sentence in retraction.sentences] == had
    for sentence in retraction.sentences:
        assert (sentence.after is None) == (sentence.how == "removed")
        assert sentence.after is None or target not in sentence.after.papers
    opening = digest_markdown(digest).split("## New papers")[0]
    assert "Retracted, and what replaced the sentences that cited them:" in opening
    assert f"`{target}` (retracted: data fabricated)" in opening
    for text in had:
        assert f'had: "{text}"' in opening
    replaced = [s.after.text for s in retraction.sentences if s.after is not None]
    assert all(f'"{text}"' in opening for text in replaced)

    # The command again with the same reason has nothing to do.
    assert cli(home, tiny_model, "retract", target, "--reason", "data fabricated", *scope) == 0
    assert "already marked retracted" in capsys.readouterr().err

    # --undo: cited again, nothing left out, the mark kept in the history as lifted.
    assert cli(home, tiny_model, "retract", target, "--undo", *scope) == 0
    err = capsys.readouterr().err
    assert f"{target}: its retraction (data fabricated) is lifted" in err
    assert "rebuilding 'demo' with it" in err
    restored = outputs(home, "demo")
    assert target in cited_papers(restored["synthesis.md"], home)
    assert "## Left out" not in restored["synthesis.md"]
    assert json.loads(restored["report.json"])["synthesis"]["left_out"] == []
    assert catalog.papers("demo") == papers and catalog.retractions() == {}
    (history,) = catalog.retraction_history()
    assert history.paper_id == target and history.restored_at is not None


def test_an_unknown_paper_is_refused_and_nothing_changes(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert cli(home, tiny_model, "run", str(demo_table(tmp_path / "demo.csv", 2))) == 0
    before = outputs(home, "demo")
    capsys.readouterr()

    assert cli(home, tiny_model, "retract", "no-such-paper", "--reason", "x") == 2
    err = capsys.readouterr().err
    assert "no paper 'no-such-paper' in the catalog" in err and "nothing changed" in err
    assert cli(home, tiny_model, "retract", "no-such-paper", "--undo") == 2
    assert outputs(home, "demo") == before
    assert Catalog(Settings(home=home).paths.catalog_path).retraction_history() == []


def test_a_tables_retracted_column_marks_the_row_at_ingest_and_lifts_it_when_cleared(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    table = tmp_path / "demo.csv"
    assert cli(home, tiny_model, "run", str(demo_table(table, 3))) == 0
    catalog = Catalog(Settings(home=home).paths.catalog_path)
    papers = catalog.papers("demo")
    target = sorted(cited_papers(outputs(home, "demo")["synthesis.md"], home))[-1]
    row = _row_of(catalog, target)

    # The same table, the row now marked: `litpipe run` alone rebuilds the collection without it.
    assert cli(home, tiny_model, "run", str(demo_table(table, 3, {row: "yes"}))) == 0
    assert catalog.retractions()[target].reason == SOURCE_REASON
    assert catalog.papers("demo", retracted=True) == papers
    written = outputs(home, "demo")
    for name in OUTPUTS:
        assert target not in cited_papers(written[name], home), name
    assert lines_naming(written["synthesis.md"], target)[0].endswith(f"retracted: {SOURCE_REASON}")
    # Another reason in the column is the reason; a cleared one lifts the mark.
    assert cli(home, tiny_model, "run", str(demo_table(table, 3, {row: "corrected: fig. 2"}))) == 0
    assert catalog.retractions()[target].reason == "corrected: fig. 2"
    assert cli(home, tiny_model, "run", str(demo_table(table, 3, {row: "false"}))) == 0
    assert catalog.retractions() == {}
    assert target in cited_papers(outputs(home, "demo")["synthesis.md"], home)


def _row_of(catalog: Catalog, paper_id: str) -> int:
    row = catalog.source(paper_id).row_number
    assert row is not None
    return row - 1


def test_a_mark_made_by_the_command_is_not_lifted_by_the_source(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    source = PaperSource(paper_id="p", kind="table_row", path="t.csv", content_sha256="a")
    catalog.register(source, "c")
    assert catalog.retract("p", "by hand")
    catalog.register(source, "c")  # the table says nothing of it
    assert catalog.retractions()["p"].reason == "by hand"
    assert catalog.restore("p") is not None and catalog.papers("c") == ["p"]
    with pytest.raises(KeyError):
        catalog.retract("q", "unknown")


def test_a_catalog_from_before_retractions_is_migrated_and_keeps_its_papers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "catalog.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE papers (paper_id TEXT PRIMARY KEY, content_sha256 TEXT NOT NULL, "
            "source_json TEXT NOT NULL, registered_at TEXT NOT NULL);"
            "CREATE TABLE memberships (collection TEXT NOT NULL, paper_id TEXT NOT NULL, "
            "PRIMARY KEY (collection, paper_id));"
        )
        source = PaperSource(paper_id="p", kind="table_row", path="t.csv", content_sha256="a")
        db.execute(
            "INSERT INTO papers VALUES (?, ?, ?, ?)",
            ("p", "a", source.model_dump_json(), "2026-01-02T03:04:05.000006+00:00"),
        )
        db.execute("INSERT INTO memberships VALUES ('c', 'p')")
        db.execute("PRAGMA user_version = 1")
    db.close()

    catalog = Catalog(path)

    assert catalog.papers("c") == ["p"] and catalog.retraction_history() == []
    assert catalog.retract("p", "gone")
    assert catalog.papers("c") == [] and catalog.papers("c", retracted=True) == ["p"]
    with sqlite3.connect(path) as db:
        assert (
            db.execute("PRAGMA user_version").fetchone()[0] == 3
        )  # and on, through the citation keys
    db.close()


def test_a_bibtex_entrys_retracted_field_marks_it_and_a_note_does_not(tmp_path: Path) -> None:
    bib = tmp_path / "refs.bib"
    bib.write_text(
        "@article{kept, title={Kept}, abstract={A paper that stands.}, "
        "note={cites a retracted study}}\n"
        "@article{gone, title={Gone}, abstract={A paper withdrawn.}, retracted={true}}\n",
        encoding="utf-8",
    )
    found = discover_bibtex(bib)
    catalog = Catalog(tmp_path / "catalog.sqlite")
    for source in found.sources:
        catalog.register(source, found.collection)
    (gone,) = [s.paper_id for s in found.sources if s.external_id == "gone"]
    assert list(catalog.retractions()) == [gone]
    assert catalog.retractions()[gone].reason == SOURCE_REASON
    assert "retracted" not in next(s for s in found.sources if s.external_id == "kept").fields


def test_an_item_zotero_marks_retracted_is_marked_with_zoteros_reasons(tmp_path: Path) -> None:
    from litpipe.ingest.zotero import DATABASE, discover_zotero
    from litpipe_tests.test_zotero import write_library

    data_dir = write_library(tmp_path / "Zotero")
    with sqlite3.connect(data_dir / DATABASE) as db:
        # Zotero's own table, which it fills from Retraction Watch.
        db.execute(
            "CREATE TABLE retractedItems (itemID INTEGER PRIMARY KEY, data TEXT, "
            "flag INT DEFAULT 0)"
        )
        db.execute(
            "INSERT INTO retractedItems SELECT itemID, ?, 0 FROM items WHERE key = 'ABSTRACT'",
            (json.dumps({"date": "2024-05-02", "reasons": ["Error in Data"]}),),
        )
    db.close()
    found = discover_zotero(data_dir, "reading", "Reading")
    catalog = Catalog(tmp_path / "catalog.sqlite")
    for source in found.sources:
        catalog.register(source, found.collection)

    (gone,) = [s.paper_id for s in found.sources if s.external_id == "ABSTRACT"]
    assert {p: m.reason for p, m in catalog.retractions().items()} == {
        gone: "Retraction Watch, via Zotero: Error in Data"
    }
    assert gone not in catalog.papers("reading")
