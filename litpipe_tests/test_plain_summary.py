"""The plain-language summary: offline (the collection's most central finding and each other
paper's in a plain frame, verbatim and cited) and through the stub (the spine in the request,
the reply's citations checked against the expert synthesis', every paper covered)."""

from __future__ import annotations

import re
from pathlib import Path

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.plain_summary import plain_summary_version, write_plain_summary
from litpipe.agents.synthesis import ALSO_IN_COLLECTION
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import Synthesis
from litpipe.settings import Settings
from litpipe.text import markers_in
from litpipe.workflows.synthesis import write_synthesis
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_synthesis import (
    ANSWERS,
    BRCA,
    EVIDENCE,
    GCK,
    NARRATIVE,
    PAPERS,
    PLM,
    THEME,
    TITLES,
    leftover,
    make_analysis,
    offline_sources,
    silent_insight,
    user_message,
)

PLAIN_REQUEST = "Write a plain-language summary"


def expert(settings: Settings) -> Synthesis:
    return write_synthesis(
        make_analysis(),
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )


def test_offline_plain_summary_is_the_shortest_faithful_version(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    expert_synthesis = expert(settings)
    plain = write_plain_summary(make_analysis(), expert_synthesis, TITLES, Asker(settings.llm))
    assert plain.audience == "plain" and plain.engine == "offline"
    assert plain.pattern == expert_synthesis.pattern and plain.papers == PAPERS
    assert plain.title == "In plain words: what the 3 papers of variants report"
    # The collection's most central finding, then one line per other paper, in a plain frame,
    # its contribution cited to it alone.
    lines = plain.text.split("\n\n")
    assert lines[0].startswith("What these 3 studies have most in common: ")
    assert [line.split(" found: ")[0] for line in lines[1:]] == ["One study", "Another study"]
    cited = [{p for p, _ in markers_in(line)} for line in lines]
    assert all(len(papers) == 1 for papers in cited)
    assert set.union(*cited) == set(PAPERS)
    assert {c.paper_id for c in plain.citations} == set(PAPERS)
    assert citations.citations(plain.text, EVIDENCE)[1] == []
    assert plain.appended == [] and ALSO_IN_COLLECTION not in plain.text
    assert len(plain.text) < len(expert_synthesis.text) / 3
    frames = ["What these 3 studies have most in common", "One study", "Another study", "found"]
    assert re.fullmatch(
        r"[\s\"':,.;]*", leftover(plain.text, [*offline_sources(make_analysis()), *frames])
    )


def test_offline_plain_cites_each_paper_itself_by_an_insight_that_cites_a_passage(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path)
    analysis = make_analysis()
    silent = silent_insight(BRCA)
    analysis.insights.insert(4, silent)

    plain = write_plain_summary(analysis, expert(settings), TITLES, Asker(settings.llm))

    (line,) = [line for line in plain.text.split("\n\n") if f"[{BRCA}:" in line]
    assert silent.text not in line and markers_in(line)
    # The writer cited every paper: nothing appended, nothing for the coverage check to warn of.
    assert plain.appended == [] and ALSO_IN_COLLECTION not in plain.text


def test_plain_request_holds_the_spine_and_the_reply_is_checked(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    settings = stub_settings(
        tmp_path, stub_llm, llm={"agents": {"synthesis": {"model": "offline"}}}
    )
    expert_synthesis = expert(settings)
    reply = (
        f"Scientists test which gene changes matter [{GCK}:3]. A computer model guesses "
        f"the same without experiments [{PLM}:2], though not on a page it never read [{PLM}:40]."
    )
    stub_llm.script(PLAIN_REQUEST, {"title": "Which gene changes matter?", "text": reply})
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    plain = write_plain_summary(
        make_analysis(), expert_synthesis, TITLES, Asker(settings.llm, client)
    )

    (body,) = stub_llm.requests
    request = user_message(body)
    assert THEME in request and NARRATIVE in request
    assert all(insight.text in request for insight in make_analysis().insights)
    assert all(f"{paper}: {TITLES[paper]}" in request for paper in PAPERS)
    assert expert_synthesis.text[:200] in request

    assert plain.engine == "openai/stub" and plain.title == "Which gene changes matter?"
    assert f"[{PLM}:40]" not in plain.text
    assert plain.text.startswith(f"Scientists test which gene changes matter [{GCK}:3].")
    assert f'{ALSO_IN_COLLECTION}, "{TITLES[BRCA]}": ' in plain.text
    assert {c.paper_id for c in plain.citations} == set(PAPERS)
    assert plain.appended == [BRCA]
    known = {c.marker for c in expert_synthesis.citations}
    assert {c.marker for c in plain.citations} <= known


def test_plain_version_follows_its_prompt(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    packaged = PromptLibrary(None)
    settings = Settings(home=tmp_path)
    (folder / "plain_summary.md").write_text(
        packaged.text("plain_summary").replace("curious", "keen"), "utf-8"
    )

    def version_of(prompts: PromptLibrary) -> str:
        return plain_summary_version(Asker(settings.llm, None, prompts))

    assert version_of(packaged) == version_of(PromptLibrary(None))
    assert version_of(PromptLibrary(folder)) != version_of(packaged)
