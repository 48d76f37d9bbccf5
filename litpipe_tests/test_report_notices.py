"""The offline notice: every page and file the offline engine wrote says so under its title,
naming what the engine cannot do there; a page a model wrote says nothing; a page mixing engines
names its offline parts."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from litpipe.evaluation.convergence import convergence_report
from litpipe.report.collection import write_collection_outputs
from litpipe.report.digest import digest_html, digest_markdown
from litpipe.report.notices import ENGINE
from litpipe.report.query_summary import (
    convergence_markdown,
    evaluated,
    render_html,
    render_markdown,
    render_text,
    with_offline_notice,
)
from litpipe.report.related_work import render_html as related_work_html
from litpipe.report.related_work import render_markdown as related_work_markdown
from litpipe.schemas import (
    DebateVerdict,
    Digest,
    QuerySummary,
    Reference,
    RelatedWork,
    RelatedWorkRequest,
    ScoredReference,
)
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.test_digest import hand_made_digest
from litpipe_tests.test_query_summary import offline as offline_query_summary
from litpipe_tests.test_report_collection import Collection, demo_collection

MODEL = "openai/x"
_HEADER_NOTICE = re.compile(
    r"<header>.*?<p class=\"notice\" role=\"note\">(.*?)</p>\s*<nav>.*?</header>", re.S
)


def page_notice(page: str) -> str | None:
    """The notice a page shows in its header, under its title and before its navigation."""
    assert_well_formed(page)
    found = _HEADER_NOTICE.search(page)
    if found is None:
        assert 'class="notice"' not in page  # nowhere else either
        return None
    return html.unescape(found.group(1))


def markdown_notice(markdown: str) -> str | None:
    """The notice a Markdown file quotes before its first section."""
    head = markdown.split("\n## ", 1)[0]
    quoted = [line[2:] for line in head.splitlines() if line.startswith("> ") and ENGINE in line]
    assert len(quoted) <= 1
    if not quoted:
        assert ENGINE not in markdown
    return quoted[0] if quoted else None


def model_written(collection: Collection, engine: str = MODEL) -> Collection:
    def by_model(model: Any) -> Any:
        return model.model_copy(update={"engine": engine})

    return Collection(
        synthesis=by_model(collection.synthesis),
        plain=by_model(collection.plain),
        analysis=by_model(collection.analysis),
        answers={paper: by_model(answers) for paper, answers in collection.answers.items()},
        comparative=by_model(collection.comparative),
        passages=collection.passages,
    )


def collection_files(collection: Collection, folder: Path) -> dict[str, str]:
    written = write_collection_outputs(folder, collection.content())
    return {name: written[name].read_text("utf-8") for name in ("synthesis.md", "plain.md")} | {
        "synthesis.html": written["synthesis.html"].read_text("utf-8")
    }


def test_an_offline_collection_says_so_in_its_page_and_both_markdown_files(
    tmp_path: Path,
) -> None:
    collection = demo_collection()
    files = collection_files(collection, tmp_path)

    page = page_notice(files["synthesis.html"])
    assert page is not None and page.startswith(f"Written by {ENGINE}: ")
    assert "copied from the papers" in page and "not from reading" in page
    assert "no model wrote or checked this" in page and "README, Models" in page
    expert = markdown_notice(files["synthesis.md"])
    assert expert is not None and "copied from the papers" in expert
    title = "Memory & repair &lt;b>bold&lt;/b>"  # its markup shown as text
    assert files["synthesis.md"].startswith(f"# {title}\n\n> {expert}\n")
    plain = markdown_notice(files["plain.md"])
    assert plain is not None and "cannot rephrase" in plain


def test_a_model_written_collection_shows_no_notice(tmp_path: Path) -> None:
    files = collection_files(model_written(demo_collection()), tmp_path)

    assert page_notice(files["synthesis.html"]) is None
    assert markdown_notice(files["synthesis.md"]) is None
    assert markdown_notice(files["plain.md"]) is None


def test_a_page_mixing_engines_names_its_offline_parts_escaped(tmp_path: Path) -> None:
    collection = demo_collection()
    odd = "openai/<b>x</b>&y"
    written = model_written(collection, odd)
    # The relationship analysis offline, the prose by a model.
    written.analysis = collection.analysis
    files = collection_files(written, tmp_path)

    page = page_notice(files["synthesis.html"])
    assert page is not None
    assert page.startswith(f"Partly written by {ENGINE} (the relationship map; the rest by {odd})")
    assert "relationship types come from shared terms" in page and "copied" not in page
    assert "<b>x</b>" not in files["synthesis.html"]
    expert = markdown_notice(files["synthesis.md"])
    assert expert is not None and "(the relationship analysis it is built from;" in expert


FELL_BACK = f"{MODEL}, offline fallback for 6 of 6: stub: {MODEL} gave no valid AnswerReply"


def test_items_written_offline_in_a_models_place_are_counted_on_the_page_and_in_both_files(
    tmp_path: Path,
) -> None:
    """A model was configured, but its replies could not be used: the page and the Markdown
    files say how many items of which part the offline engine wrote instead, and why."""
    collection = demo_collection()
    written = model_written(collection)
    written.answers = {
        paper: answers.model_copy(update={"engine": FELL_BACK})
        for paper, answers in written.answers.items()
    }
    written.analysis = written.analysis.model_copy(
        update={"engine": f"{MODEL}, offline fallback for 1 of 1: the model is unreachable"}
    )
    files = collection_files(written, tmp_path)

    papers = len(written.answers)
    page = page_notice(files["synthesis.html"])
    assert page is not None and page.startswith(f"Written in part by {ENGINE} in the model's place")
    assert f"the answers, {6 * papers} of {6 * papers} items" in page
    assert "the relationship map, 1 of 1 items" in page
    assert "First reason: the model is unreachable" in page
    for name in ("synthesis.md", "plain.md"):
        shown = markdown_notice(files[name])
        assert shown is not None
        assert "the relationship analysis it is built from, 1 of 1 items" in shown
        assert "First reason: the model is unreachable" in shown


def test_an_offline_digest_says_so_and_a_model_written_one_does_not(tmp_path: Path) -> None:
    digest = hand_made_digest(tmp_path)
    assert digest.engines == {"insights": "offline", "relationships": "offline"}

    shown = markdown_notice(digest_markdown(digest))
    assert shown is not None and shown.startswith(f"Written by {ENGINE}: each key insight ")
    assert page_notice(digest_html(digest)) == shown

    by_model = digest.model_copy(
        update={"engine": MODEL, "engines": {"insights": MODEL, "relationships": MODEL}}
    )
    assert markdown_notice(digest_markdown(by_model)) is None
    assert page_notice(digest_html(by_model)) is None
    mixed = digest.model_copy(update={"engines": {"insights": MODEL, "relationships": "offline"}})
    partly = page_notice(digest_html(mixed))
    assert partly is not None
    assert partly.startswith(f"Partly written by {ENGINE} (the relationships; the rest by {MODEL})")
    fell_back = digest.model_copy(
        update={"engines": {"insights": FELL_BACK, "relationships": MODEL}}
    )
    for shown in (markdown_notice(digest_markdown(fell_back)), page_notice(digest_html(fell_back))):
        assert shown is not None and "the key insights, 6 of 6 items" in shown


def test_a_digest_written_before_engines_were_recorded_still_says_so(tmp_path: Path) -> None:
    old = Digest.model_validate(
        hand_made_digest(tmp_path).model_dump(exclude={"engines"}) | {"engine": "offline"}
    )
    assert old.engines == {}
    assert page_notice(digest_html(old)) is not None


def test_an_offline_query_summary_says_its_convergence_is_built_in(tmp_path: Path) -> None:
    result = offline_query_summary(tmp_path)

    shown = markdown_notice(render_markdown(result, "bio"))
    assert shown is not None and shown.startswith(f"Written by {ENGINE}: ")
    assert "convergence is built into the offline engine" in shown
    assert page_notice(render_html(result, "bio")) == shown
    assert render_text(result).splitlines()[1] == shown


def model_query_summary(result: QuerySummary) -> QuerySummary:
    return result.model_copy(
        update={"engine": MODEL, "engines": dict.fromkeys(result.engines, MODEL)}
    )


def test_a_model_written_query_summary_shows_no_notice(tmp_path: Path) -> None:
    result = model_query_summary(offline_query_summary(tmp_path))

    assert markdown_notice(render_markdown(result, "bio")) is None
    assert page_notice(render_html(result, "bio")) is None
    assert ENGINE not in render_text(result)


def test_with_only_the_judge_offline_the_page_names_it_and_convergence_is_not_called_built_in(
    tmp_path: Path,
) -> None:
    result = model_query_summary(offline_query_summary(tmp_path))
    result.engines["summary_judge"] = "offline"

    shown = page_notice(render_html(result, "bio"))
    assert shown is not None and shown.startswith(f"Partly written by {ENGINE} (the judge;")
    assert "a word count, not a reading" in shown and "built into" not in shown


def related_work(engine: str, debate_engine: str) -> RelatedWork:
    reference = Reference(id="r1", title="A reference", abstract="It finds a thing.")
    scored = ScoredReference(
        reference=reference,
        retrieval_rank=1,
        fused_score=0.5,
        verdict=DebateVerdict(
            arguments_for=["It is about the thing."],
            arguments_against=[],
            quotes=["It finds a thing."],
            probability=80,
        ),
    )
    return RelatedWork(
        request=RelatedWorkRequest(idea="We study a thing.", sentences=2, words=50, top_k=1),
        engine=engine,
        debate_engine=debate_engine,
        text="It finds a thing [r1].",
        cited_ids=["r1"],
        references=[scored],
        candidates=[scored],
        table_rows=1,
        sentences=1,
        words=4,
        within_length=True,
        revised=False,
    )


def test_related_work_says_which_of_its_parts_the_offline_engine_made() -> None:
    offline = related_work("offline", "offline")
    shown = markdown_notice(related_work_markdown(offline))
    assert shown is not None and shown.startswith(f"Written by {ENGINE}: ")
    assert "reference abstract" in shown and "no argument was weighed" in shown
    assert page_notice(related_work_html(offline)) == shown

    by_model = related_work(MODEL, MODEL)
    assert markdown_notice(related_work_markdown(by_model)) is None
    assert page_notice(related_work_html(by_model)) is None

    scored_offline = page_notice(related_work_html(related_work(MODEL, "offline")))
    assert scored_offline is not None
    assert scored_offline.startswith(f"Partly written by {ENGINE} (the relevance scores;")


@pytest.mark.parametrize(
    ("model_agents", "expected"),
    [
        ((), "Offline run: the loop's convergence is built into the offline engine"),
        (("query_summary",), "Offline judge: "),
        (("summary_judge",), "Offline summarizer: "),
        (("query_summary", "summary_judge"), None),
    ],
)
def test_the_convergence_report_says_above_its_table_when_the_loop_ran_offline(
    tmp_path: Path, model_agents: tuple[str, ...], expected: str | None
) -> None:
    result = offline_query_summary(tmp_path)
    engines = result.engines | dict.fromkeys(model_agents, MODEL)
    result = result.model_copy(update={"engines": engines})

    report = with_offline_notice(convergence_report([result]))
    text = convergence_markdown(report, [evaluated("q1", result)], "MAIS on bio")

    assert report.engines["summary_judge"] == [engines["summary_judge"]]
    if expected is None:
        assert report.notice is None and "Offline" not in text
        return
    assert report.notice is not None and report.notice.startswith(expected)
    assert "measure" in report.notice and "MAIS" in report.notice
    above_the_table = text.split("| runs |", 1)[0]
    assert f"> {report.notice}" in above_the_table
