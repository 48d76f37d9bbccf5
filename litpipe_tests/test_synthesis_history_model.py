"""The synthesis history and what changed, beyond the offline engine: with a model (the local
stub server answering every agent, its relationship analysis finding that a new paper's claim
contradicts a claim the collection held), `litpipe diff`, `report.json` and the nightly digest
name the contradiction and quote both claims as the model stated them; with the home's Dagster
instance on PostgreSQL, the history is still kept under the home, and `litpipe diff` and the
digest say what a rebuild changed (test_synthesis_history.py is the offline scenario)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.agents.asker import Asker
from litpipe.catalog import Catalog
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.report.digest import digest_markdown
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings
from litpipe.workflows import synthesis_history
from litpipe_tests.postgres_server import postgres_for_a_test, template_instance_folder
from litpipe_tests.stub_agents import answer_as_agent, serve_every_agent
from litpipe_tests.stub_llm import ReplyFunction, StubLLM, stub_settings
from litpipe_tests.test_synthesis_history import (
    ADDED,
    COLLECTION,
    CONTRARY,
    FIRST,
    PAPER,
    diff_output,
    digest_on,
    paper_id,
    run,
    write_table,
)

# The model's key insights about the claim of PAPER and the contrary paper's, in words of its
# own (not the abstracts' sentences, which the offline engine would quote), and why they clash.
MODEL_CLAIM = "ClickMe supervision significantly improves the accuracy of an attention network"
MODEL_OPPOSITE = "ClickMe supervision does not improve the accuracy of an attention network"
EXPLANATION = (
    "The new paper finds no gain in accuracy from ClickMe supervision, where the earlier one "
    "reports a significant improvement."
)
# A phrase of the `analysis` agent's system prompt only (the one-call relationship analysis).
ANALYSIS_PROMPT = "first the key insight of every question-and-answer pair"
_LABEL = re.compile(r"^(P\d+) = paper id (\S+), title:$", re.M)
_PAIR = re.compile(r"^Pair (i\d{2}) \((P\d+)\)\. ", re.M)
_MARKERS = re.compile(r"^Markers it may cite: (\[[^\]\n]+\])", re.M)


def contradicting_analysis(calls: list[str]) -> ReplyFunction:
    """The `analysis` agent's reply as `answer_as_agent` makes it, but stating PAPER's claim and
    (once the contrary paper is in the collection) its opposite, related as a contradiction.
    Each request's user prompt is appended to `calls`."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        answered = answer_as_agent(body)
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        calls.append(user)
        papers = dict(_LABEL.findall(user))
        pairs = list(_PAIR.finditer(user))
        first: dict[str, tuple[str, str]] = {}  # a paper's first pair: its id and marker
        for index, pair in enumerate(pairs):
            end = pairs[index + 1].start() if index + 1 < len(pairs) else len(user)
            markers = _MARKERS.search(user, pair.start(), end)
            if pair.group(2) in papers and markers is not None:
                first.setdefault(papers[pair.group(2)], (pair.group(1), markers.group(1)))
        insights = {insight["insight_id"]: insight for insight in answered["insights"]}
        held, held_marker = first[paper_id(PAPER)]
        insights[held]["text"] = f"{MODEL_CLAIM} {held_marker}."
        if paper_id(CONTRARY) in first:
            new, new_marker = first[paper_id(CONTRARY)]
            insights[new]["text"] = f"{MODEL_OPPOSITE} {new_marker}."
            answered["relationships"].append(
                {
                    "source": new,
                    "target": held,
                    "type": "contradiction",
                    "explanation": EXPLANATION,
                }
            )
        return answered

    return reply


def section(markdown: str, heading: str) -> str:
    """The lines under `heading` up to the next heading (of any level)."""
    _, found, rest = markdown.partition(f"{heading}\n")
    assert found, f"no {heading!r} in:\n{markdown}"
    return re.split(r"^#+ ", rest, maxsplit=1, flags=re.M)[0]


def contradiction_quoted(text: str) -> bool:
    """Whether `text` says the contrary paper's claim contradicts PAPER's, quoting both as the
    model stated them, with the model's explanation."""
    return (
        f'*{paper_id(CONTRARY)}*: "{MODEL_OPPOSITE}' in text
        and f'contradicts *{paper_id(PAPER)}*: "{MODEL_CLAIM}' in text
        and EXPLANATION in text
    )


def digest_of(settings: Settings, day: datetime, asker: Asker) -> str:
    """The digest of `day` as Markdown, with the day's arrivals and the home's history."""
    arrivals = Catalog(settings.paths.catalog_path).arrivals(day, day + timedelta(days=1))
    return digest_markdown(digest_on(settings, day.date(), arrivals, asker))


def test_through_a_model_diff_report_and_digest_quote_the_contradiction_it_found(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[str] = []
    # Before `serve_every_agent`'s reply to every agent: the stub tries its replies in order.
    stub_llm.respond(ANALYSIS_PROMPT, contradicting_analysis(calls))
    serve_every_agent(stub_llm)
    # The model named as a user's environment names it, for `litpipe run` and `litpipe diff`.
    monkeypatch.setenv("LITPIPE_LLM__MODEL", "openai/stub")
    monkeypatch.setenv("LITPIPE_LLM__API_BASE", stub_llm.url)
    home, table = tmp_path / "home", tmp_path / f"{COLLECTION}.csv"
    today = datetime.combine(datetime.now(UTC).date(), time(), tzinfo=UTC)
    clock = {"now": today - timedelta(hours=12)}
    monkeypatch.setattr(synthesis_history, "now", lambda: clock["now"])

    first = run(home, tiny_model, write_table(table, FIRST, contrary=False))
    clock["now"] = today + timedelta(minutes=1)
    added = run(home, tiny_model, write_table(table, [*FIRST, ADDED], contrary=True))

    # Both builds' analyses were the model's (one call each), the second seeing the new papers.
    assert len(calls) == 2
    assert paper_id(CONTRARY) not in calls[0] and paper_id(CONTRARY) in calls[1]
    assert first.engine == added.engine == "openai/stub"
    # The versions kept under the home say the model wrote them.
    for asset in ("synthesis", "relationship_analysis"):
        kept = [
            synthesis_history.read(p) for p in synthesis_history.entries(home, COLLECTION, asset)
        ]
        outputs = [entry.synthesis or entry.analysis for entry in kept]
        assert [o.engine for o in outputs if o is not None] == ["openai/stub"] * 2, asset

    # report.json: what the run changed, the contradiction as the model stated it.
    changes = added.synthesis.changes  # type: ignore[union-attr]
    assert changes is not None and changes.changed
    assert set(changes.papers_added) == {paper_id(ADDED), paper_id(CONTRARY)}
    (contradiction,) = changes.contradicted
    assert contradiction.explanation == EXPLANATION
    assert contradiction.source.paper_id == paper_id(CONTRARY)
    assert contradiction.source.text.startswith(MODEL_OPPOSITE)
    assert not contradiction.source.known_before
    assert contradiction.target.paper_id == paper_id(PAPER)
    assert contradiction.target.text.startswith(MODEL_CLAIM)
    assert contradiction.target.known_before

    # `litpipe diff` (the model still configured: it reads the history, calling no model).
    requests = stub_llm.request_count
    markdown, figures = diff_output(capsys, "--home", str(home))
    assert stub_llm.request_count == requests
    assert figures["changed"] and figures["contradicted"] == 1 and figures["papers_added"] == 2
    assert contradiction_quoted(section(markdown, "## New contradictions of its claims"))
    assert f"- added: `{paper_id(CONTRARY)}`" in markdown

    # The digest of today, written through the model too, opens with it.
    settings = stub_settings(home, stub_llm, corpus_roots=[])
    asker = Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger()))
    opening = digest_of(settings, today, asker).split("## New papers")[0]
    assert "## What changed" in opening and f"### {COLLECTION}" in opening
    assert contradiction_quoted(section(opening, "New contradictions:"))
    # Yesterday's: the collection built, no contradiction yet.
    yesterday = digest_of(settings, today - timedelta(days=1), asker)
    assert f"### {COLLECTION}\n\n{len(FIRST)} papers added" in yesterday
    assert "New contradictions" not in yesterday


@pytest.fixture
def postgres_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A litpipe home whose Dagster instance (HOME/dagster) is deploy/dagster.postgres.yaml, on
    a database of its own of a throwaway PostgreSQL server, its DAGSTER_PG_* variables set."""
    with postgres_for_a_test() as server:
        home = tmp_path / "home"
        for name, value in template_instance_folder(server, home / "dagster").items():
            monkeypatch.setenv(name, value)
        yield home


def test_on_postgresql_the_history_is_kept_under_the_home_and_diff_and_digest_read_it(
    tmp_path: Path,
    postgres_home: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, table = postgres_home, tmp_path / f"{COLLECTION}.csv"
    today = datetime.combine(datetime.now(UTC).date(), time(), tzinfo=UTC)
    clock = {"now": today - timedelta(hours=12)}
    monkeypatch.setattr(synthesis_history, "now", lambda: clock["now"])

    run(home, tiny_model, write_table(table, FIRST[:2], contrary=False))
    clock["now"] = today + timedelta(minutes=1)
    report = run(home, tiny_model, write_table(table, FIRST[:3], contrary=False))

    # The runs went to PostgreSQL (no SQLite storage in the home), the history to the home.
    settings = Settings(home=home, corpus_roots=[])
    instance = open_instance(settings.llm, settings.paths)
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert len(instance.get_runs()) >= 2
    assert not list((home / "dagster").rglob("*.db"))
    kept = synthesis_history.entries(home, COLLECTION, "synthesis")
    assert len(kept) == 2
    assert all(path.is_relative_to(home / "history" / COLLECTION) for path in kept)
    assert len(synthesis_history.entries(home, COLLECTION, "relationship_analysis")) == 2
    changes = report.synthesis.changes  # type: ignore[union-attr]
    assert changes is not None and changes.papers_added == [paper_id(FIRST[2])]

    # The synthesis' page in the UI reads its materializations from PostgreSQL: the newest
    # says what it changed.
    (latest,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("synthesis"), asset_partitions=[COLLECTION]),
        limit=1,
    ).records
    assert latest.asset_materialization is not None
    shown = str(latest.asset_materialization.metadata["changes"].value)
    assert f"- added: `{paper_id(FIRST[2])}`" in shown

    markdown, figures = diff_output(capsys, "--home", str(home))
    assert figures["changed"] and figures["papers_added"] == 1
    assert figures["papers_removed"] == 0
    assert section(markdown, "## Papers").strip() == f"- added: `{paper_id(FIRST[2])}`"

    opening = digest_of(settings, today, Asker(settings.llm)).split("## New papers")[0]
    assert "## What changed" in opening
    assert f"### {COLLECTION}\n\n1 paper added" in opening
