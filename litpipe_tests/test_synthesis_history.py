"""The synthesis history and what changed: every version of a collection's synthesis kept under
the home, `litpipe diff`, `report.json` and the nightly digest naming a new contradiction with
both claims quoted, a rebuild with nothing new saying nothing changed, and the rule that keeps a
sentence only reworded (offline, on abstracts of the bundled ICLR demo, a tiny embedder)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from litpipe.agents.asker import Asker
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.defs.assets.nightly_digest import ArtifactSources
from litpipe.defs.resources import ArtifactsResource
from litpipe.report.digest import digest_markdown
from litpipe.report.synthesis_diff import digest_lines
from litpipe.schemas import Digest, PaperArrival, RunReport, Synthesis
from litpipe.settings import Settings
from litpipe.workflows import synthesis_history
from litpipe.workflows.nightly_digest import build_digest
from litpipe.workflows.synthesis_diff import same_claim, synthesis_diff
from litpipe_tests.homes import home_instance
from litpipe_tests.test_relationship_analysis_offline import (
    OPPOSITES,
    demo_papers,
    demo_sentence,
)

COLLECTION = "quant"
# The collection's first papers, then two more: one of the demo, one whose abstract is a claim
# of the first paper edited to its opposite (as the relationship tests make one).
FIRST = ["BJGVX3CqYm", "BJgLg3R9KQ", "HkgEQnRqYQ", "rkeDJ04Mf"]
ADDED = "SJ1Xmf-Rb"
CONTRARY = "contrary"
PAPER, OPENING, (WRITTEN, EDITED) = OPPOSITES["negation"]
CLAIM = demo_sentence(PAPER, OPENING)
OPPOSITE = CLAIM.replace(WRITTEN, EDITED)


def write_table(path: Path, ids: list[str], contrary: bool) -> Path:
    papers = demo_papers()
    with path.open("w", encoding="utf-8", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", "title", "abstract"])
        for paper_id in ids:
            writer.writerow([paper_id, papers[paper_id]["title"], papers[paper_id]["abstract"]])
        if contrary:
            writer.writerow([CONTRARY, "Supervision of attention", OPPOSITE])
    return path


def run(home: Path, embedder: Path, table: Path) -> RunReport:
    code = main(["run", str(table), "--home", str(home), "--embedder", str(embedder)])
    assert code == 0
    report = home / "outputs" / COLLECTION / "report.json"
    return RunReport.model_validate_json(report.read_text("utf-8"))


def diff_output(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, dict]:
    capsys.readouterr()
    assert main(["diff", COLLECTION, *args]) == 0
    out = capsys.readouterr().out
    *markdown, last = out.rstrip("\n").split("\n")
    return "\n".join(markdown), json.loads(last)


def paper_id(key: str) -> str:
    return f"{COLLECTION}.{key}"


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path
) -> tuple[Path, dict[str, RunReport], datetime]:
    """A collection built yesterday, then two papers added today (one contradicting a claim it
    held), then built again with nothing new."""
    folder = tmp_path_factory.mktemp("history")
    home, table = folder / "home", folder / f"{COLLECTION}.csv"
    today = datetime.combine(datetime.now(UTC).date(), time(), tzinfo=UTC)
    clock = {"now": today - timedelta(hours=12)}
    patch = pytest.MonkeyPatch()
    patch.setattr(synthesis_history, "now", lambda: clock["now"])
    try:
        reports = {"first": run(home, tiny_model, write_table(table, FIRST, contrary=False))}
        clock["now"] = today + timedelta(minutes=1)
        write_table(table, [*FIRST, ADDED], contrary=True)
        reports["added"] = run(home, tiny_model, table)
        clock["now"] = today + timedelta(minutes=2)
        reports["again"] = run(home, tiny_model, table)
    finally:
        patch.undo()
    return home, reports, today


def quotes_both_claims(text: str) -> bool:
    return CLAIM.rstrip(".") in text and OPPOSITE.rstrip(".") in text


def digest_on(
    settings: Settings, day: date, arrivals: list[PaperArrival], asker: Asker | None = None
) -> Digest:
    """The digest of `day` with these arrivals, opening with what changed in the home's history."""
    return build_digest(
        day,
        arrivals,
        {},
        ArtifactSources(ArtifactsResource.of(settings.ingest, settings.paths)),
        settings.synthesis,
        asker or Asker(settings.llm),
        history=settings.home,
    )


def test_each_version_is_kept_once_and_the_run_reports_what_it_changed(
    built: tuple[Path, dict[str, RunReport], datetime],
) -> None:
    home, reports, _today = built
    kept = synthesis_history.entries(home, COLLECTION, "synthesis")
    # Two versions (the rebuild with nothing new adds none), each with its papers and text.
    assert len(kept) == 2
    first, second = (synthesis_history.read(path) for path in kept)
    assert first.synthesis is not None and second.synthesis is not None
    assert paper_id(CONTRARY) in second.synthesis.papers
    assert paper_id(CONTRARY) not in first.synthesis.papers
    assert len(synthesis_history.entries(home, COLLECTION, "relationship_analysis")) == 2

    changes = reports["added"].synthesis.changes  # type: ignore[union-attr]
    assert changes is not None and changes.changed
    assert set(changes.papers_added) == {paper_id(ADDED), paper_id(CONTRARY)}
    assert changes.papers_removed == []
    (contradiction, *_) = changes.contradicted
    assert {contradiction.source.text, contradiction.target.text} >= {CLAIM, OPPOSITE} or (
        quotes_both_claims(contradiction.explanation)
    )
    assert changes.relationships_appeared[0].type == "contradiction"
    assert any(paper_id(CONTRARY) in s.papers for s in changes.sentences_added)

    again = reports["again"].synthesis.changes  # type: ignore[union-attr]
    assert again is not None and not again.changed


def test_litpipe_diff_prints_the_contradiction_quoting_both_claims(
    built: tuple[Path, dict[str, RunReport], datetime],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, _reports, today = built
    markdown, figures = diff_output(capsys, "--home", str(home))
    assert figures["changed"] and figures["contradicted"] >= 1
    assert figures["papers_added"] == 2
    assert "New contradictions of its claims" in markdown
    assert quotes_both_claims(markdown)
    assert f"- added: `{paper_id(CONTRARY)}`" in markdown

    # The same by version names, and nothing since the last build.
    first, second = (
        p.stem.rsplit("-", 1)[1] for p in synthesis_history.entries(home, COLLECTION, "synthesis")
    )
    named, _ = diff_output(capsys, "--home", str(home), "--from", first[:8], "--to", second)
    assert named == markdown
    since = (today + timedelta(minutes=2)).isoformat()
    unchanged, figures = diff_output(capsys, "--home", str(home), "--since", since)
    assert not figures["changed"]
    assert "nothing changed" in unchanged


def test_the_synthesis_page_in_the_ui_shows_what_each_materialization_changed(
    built: tuple[Path, dict[str, RunReport], datetime],
) -> None:
    home, _reports, _today = built
    records = (
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("synthesis"), asset_partitions=[COLLECTION]
            ),
            limit=10,
        )
        .records
    )
    shown = [
        str(record.asset_materialization.metadata["changes"].value)
        for record in records
        if record.asset_materialization is not None
    ]
    # Newest first: the second version names the contradiction; the first, every paper added.
    assert any("New contradictions of its claims" in md and quotes_both_claims(md) for md in shown)
    assert f"- added: `{paper_id(FIRST[0])}`" in shown[-1]


def test_the_digest_opens_with_the_contradiction_quoting_both_claims(
    built: tuple[Path, dict[str, RunReport], datetime],
) -> None:
    home, _reports, today = built
    settings = Settings(home=home, corpus_roots=[])
    arrivals = Catalog(settings.paths.catalog_path).arrivals(today, today + timedelta(days=1))
    digest = digest_on(settings, today.date(), arrivals)
    (changes,) = digest.changes
    assert changes.contradicted
    markdown = digest_markdown(digest)
    opening = markdown.split("## New papers")[0]
    assert "## What changed" in opening and "New contradictions:" in opening
    assert quotes_both_claims(opening)

    # The day before: the collection was built, nothing of it kept earlier.
    yesterday = digest_on(settings, (today - timedelta(days=1)).date(), [])
    (built_then,) = yesterday.changes
    assert built_then.from_version is None and len(built_then.papers_added) == len(FIRST)
    # Tomorrow: new papers (here: none) but no change says so in one line.
    tomorrow = digest_on(settings, (today + timedelta(days=1)).date(), arrivals)
    (unchanged,) = tomorrow.changes
    assert not unchanged.changed
    assert "6 new papers, no change in its conclusions." in digest_markdown(tomorrow)


# The reworded-sentence rule.

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)


@hypothesis_settings(max_examples=200, deadline=None)
@given(words=st.lists(WORDS, min_size=1, max_size=30), page=st.integers(1, 99))
def test_any_sentence_compared_with_itself_is_kept(words: list[str], page: int) -> None:
    sentence = " ".join(words).capitalize() + f" [p1:{page}]."
    assert same_claim(sentence, sentence)


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    words=st.lists(WORDS, min_size=1, max_size=30),
    where=st.integers(0, 29),
    replacement=WORDS,
    kind=st.sampled_from(["replaced", "added", "removed"]),
)
def test_a_sentence_with_one_word_changed_is_kept(
    words: list[str], where: int, replacement: str, kind: str
) -> None:
    index = where % len(words)
    changed = list(words)
    if kind == "replaced":
        changed[index] = replacement
    elif kind == "added":
        changed.insert(index, replacement)
    elif len(changed) > 1:
        del changed[index]
    assert same_claim(" ".join(words) + " [p1:2].", " ".join(changed) + " [p1:3].")


def test_a_sentence_citing_another_paper_or_saying_something_else_is_not_kept() -> None:
    assert not same_claim(CLAIM + " [a:1]", OPPOSITE + " [b:1]")
    assert same_claim(CLAIM + " [a:1]", OPPOSITE + " [a:1]")
    other = demo_sentence(*OPPOSITES["antonym"][:2])
    assert not same_claim(CLAIM + " [a:1]", other + " [a:1]")


def test_a_kept_sentence_now_also_citing_a_new_paper_is_a_claim_that_gained_support() -> None:
    def written(text: str, papers: list[str]) -> Synthesis:
        return Synthesis(
            collection="c",
            audience="expert",
            engine="offline",
            pattern="stuff",
            title="T",
            text=text,
            citations=[],
            papers=papers,
        )

    old = written(f"# Spine\n\n{CLAIM[:-1]} [a:1]. Another finding holds [b:2].", ["a", "b"])
    new = written(
        f"# Spine\n\n{CLAIM[:-1].replace('we extend', 'we have extended')} [a:1; n:3]. "
        "Another finding holds [b:2].",
        ["a", "b", "n"],
    )

    diff = synthesis_diff("c", (old, None), (new, None))

    assert diff.papers_added == ["n"] and diff.reworded == 1
    assert diff.sentences_added == diff.sentences_removed == []
    (support,) = diff.support_changed
    assert support.gained == ["n"] and support.lost == []
    assert "Claims that gained support:" in "\n".join(digest_lines(diff, 1))
