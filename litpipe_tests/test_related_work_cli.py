"""`litpipe related-work` end to end, through the `related_work` asset (a tiny local embedder):
citations that resolve to the table, files written, a repeated request served from its
materialization, another idea or an edited table as another partition, a model writer scripted
on the local stub, and bad input refused with nothing written."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from litpipe.cli import main
from litpipe.defs.assets.related_work import StoredRelatedWorkRequest
from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import related_work_requests
from litpipe.report.related_work import JSON_FILE, MARKDOWN_FILE
from litpipe.runtime.execution import QUIET_RUN_CONFIG
from litpipe.runtime.runner import open_instance, phases
from litpipe.schemas import RelatedWork
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_related_work import (
    DEBATE_REQUEST,
    DEMO,
    IDEA,
    WRITER_REQUEST,
    ScriptedWriter,
    bracketed,
    cited_in_markdown,
    good_section,
    scripted_debate,
    table_ids,
)

ASSET = dg.AssetKey("related_work")


def related_work(home: Path, embedder: Path, *args: str) -> int:
    return main(["related-work", *args, "--home", str(home), "--embedder", str(embedder)])


def request_keys(home: Path) -> list[str]:
    """The stored requests' keys, oldest first."""
    files = sorted(
        (home / "requests" / "related_work").glob("*.json"), key=lambda p: p.stat().st_mtime
    )
    return [path.stem for path in files]


def partitions(home: Path) -> set[str]:
    return set(home_instance(home).get_dynamic_partitions(related_work_requests.name))


def materializations(home: Path, key: str) -> int:
    records = (
        home_instance(home)
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=ASSET, asset_partitions=[key]), limit=100
        )
        .records
    )
    return len(records)


def outputs(home: Path, key: str) -> tuple[str, RelatedWork]:
    folder = home / "outputs" / "related_work" / key
    markdown = (folder / MARKDOWN_FILE).read_text(encoding="utf-8")
    return markdown, RelatedWork.model_validate_json((folder / JSON_FILE).read_text("utf-8"))


def test_offline_section_cites_table_rows_and_a_repeat_is_served_from_the_asset(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, copy = tmp_path / "home", tmp_path / "copy.md"
    args = ("--abstracts", str(DEMO), "--idea", IDEA, "--top-k", "4", "--out", str(copy))
    assert related_work(home, tiny_model, *args) == 0
    printed = capsys.readouterr()

    [key] = request_keys(home)
    assert key.startswith("rw-") and partitions(home) == {key}
    markdown, related = outputs(home, key)
    assert printed.out == markdown == copy.read_text(encoding="utf-8")
    # Every citation is a row of the table, and every top-k reference is cited.
    # The section cites each row by a key, the references naming the row's id after it.
    cited, listed = cited_in_markdown(markdown)
    top_k = [scored.reference.id for scored in related.references]
    assert len(top_k) == 4 and cited == set(top_k) <= table_ids(DEMO)
    assert listed == related.cited_ids
    assert not bracketed(markdown.split("## Related work", 1)[1].split("*Written by")[0]) & cited
    assert set(related.cited_ids) == set(top_k)
    assert related.engine == "offline" and related.table_rows == 40 and related.within_length
    # The asset's own output, and the stored request with the table's hash.
    artifact = home / "artifacts" / "related_work" / f"{key}.json"
    assert RelatedWork.model_validate_json(artifact.read_text("utf-8")) == related
    stored = StoredRelatedWorkRequest.model_validate_json(
        (home / "requests" / "related_work" / f"{key}.json").read_text("utf-8")
    )
    assert stored.request == related.request and stored.table_path == str(DEMO)
    assert f"{key}: materialized" in printed.err and str(home / "outputs") in printed.err

    # The same request again: served from the materialized asset, nothing recomputed.
    assert related_work(home, tiny_model, *args) == 0
    again = capsys.readouterr()
    assert again.out == markdown and f"{key}: up to date" in again.err
    assert materializations(home, key) == 1

    # Another idea is another partition; the first stays as it was.
    other = "Certified robustness of deep networks against adversarial examples."
    assert related_work(home, tiny_model, "--abstracts", str(DEMO), "--idea", other) == 0
    capsys.readouterr()
    first, second = request_keys(home)
    assert first == key and partitions(home) == {key, second}
    assert materializations(home, key) == materializations(home, second) == 1
    assert outputs(home, second)[1].request.idea == other


def test_an_edited_table_is_a_new_request_and_its_old_partition_refuses_the_new_bytes(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, table, idea_file = tmp_path / "home", tmp_path / "refs.csv", tmp_path / "idea.txt"
    table.write_bytes(DEMO.read_bytes())
    idea_file.write_text(f"{IDEA}\n", encoding="utf-8")
    args = ("--abstracts", str(table), "--idea-file", str(idea_file), "--top-k", "3")
    assert related_work(home, tiny_model, *args) == 0
    [old] = request_keys(home)

    rows = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    table.write_text("".join(rows[:-1]), encoding="utf-8")  # one reference fewer
    assert related_work(home, tiny_model, *args) == 0
    capsys.readouterr()
    new = next(key for key in request_keys(home) if key != old)
    assert partitions(home) == {old, new}
    assert outputs(home, new)[1].table_rows == 39 and outputs(home, old)[1].table_rows == 40

    # Materializing the old request again (from the UI, say) fails rather than mix them up.
    settings = Settings(home=home, ingest={"embedder": str(tiny_model)})
    job = build_definitions(**settings_groups(settings)).resolve_job_def("related_work_job")

    def failure() -> str:
        result = job.execute_in_process(
            partition_key=old,
            instance=open_instance(settings.llm, settings.paths),
            raise_on_error=False,
            run_config=QUIET_RUN_CONFIG,
        )
        assert not result.success
        [event] = [event for event in result.all_events if event.is_step_failure]
        return event.step_failure_data.user_failure_data.description

    assert "changed since this request was made" in failure()
    table.unlink()
    assert "no longer exists" in failure()


def test_the_writer_through_dagster_gets_the_idea_and_the_top_k_abstracts(
    tmp_path: Path, tiny_model: Path, stub_llm: StubLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = ScriptedWriter(good_section, good_section)
    stub_llm.respond(DEBATE_REQUEST, scripted_debate)
    stub_llm.respond(WRITER_REQUEST, writer)
    home = tmp_path / "home"
    args = ("--abstracts", str(DEMO), "--idea", IDEA, "--top-k", "4", "--words", "120")
    model = ("--model", "openai/stub", "--api-base", stub_llm.url)

    # Made offline first: the model is no part of the request, so the same partition goes
    # stale (its code version names the model) and is written again by the model.
    assert related_work(home, tiny_model, *args) == 0
    assert related_work(home, tiny_model, *args, *model) == 0
    printed = capsys.readouterr()
    [key] = request_keys(home)
    assert materializations(home, key) == 2 and f"{key}: materialized (stale" in printed.err
    _, related = outputs(home, key)
    assert related.engine == related.debate_engine == "openai/stub"
    # The search queries, 20 debates, the writer, then the grading on the same model: the
    # claim judge once per cited sentence of the section (4), coherence once.
    assert stub_llm.request_count == 1 + 20 + 1 + 4 + 1 and len(writer.bodies) == 1
    user = " ".join(writer.bodies[0]["messages"][1]["content"].split())
    assert IDEA in user
    for scored in related.references:
        assert " ".join(scored.reference.abstract.split()) in user
    assert related.text == good_section([scored.reference.id for scored in related.references])
    assert "model calls: 27 made" in printed.err

    # Served from the asset: not one more model call.
    assert related_work(home, tiny_model, *args, *model) == 0
    assert stub_llm.request_count == 27 and materializations(home, key) == 2


def test_a_writer_prompt_over_its_context_is_refused_by_the_step_and_leaves_no_request(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The idea fits; the idea with the top-k abstracts does not, which only the step can tell.
    monkeypatch.setenv("LITPIPE_RELATED_WORK__CONTEXT_TOKENS", "500")
    writer = ScriptedWriter(good_section, good_section)
    stub_llm.respond(DEBATE_REQUEST, scripted_debate)
    stub_llm.respond(WRITER_REQUEST, writer)
    home = tmp_path / "home"
    model = ("--model", "openai/stub", "--api-base", stub_llm.url)

    assert related_work(home, tiny_model, "--abstracts", str(DEMO), "--idea", IDEA, *model) == 2
    assert "lower top_k" in capsys.readouterr().err
    assert writer.bodies == []
    assert request_keys(home) == [] and partitions(home) == set()
    assert not (home / "outputs").exists()


def _bad_table(tmp_path: Path) -> Path:
    table = tmp_path / "refs.csv"
    table.write_text("id,title,summary\na1,A title,Some text.\n", encoding="utf-8")
    return table


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing_columns", "missing required column 'abstract'"),
        ("top_k_too_large", "top_k 41 is larger than the table's 40 usable references"),
        ("idea_too_long", "longer than the writer's context"),
        ("no_table", "no such file"),
        ("no_idea_file", "no such file (the research idea"),
        ("empty_idea", "the research idea is empty"),
        ("zero_sentences", "sentences: Input should be greater than or equal to 1"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message_and_writes_nothing(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    long_idea = tmp_path / "long.txt"
    long_idea.write_text("An idea about posterior collapse. " * 1000, encoding="utf-8")
    args = {
        "missing_columns": ["--abstracts", str(_bad_table(tmp_path)), "--idea", IDEA],
        "top_k_too_large": ["--abstracts", str(DEMO), "--idea", IDEA, "--top-k", "41"],
        "idea_too_long": ["--abstracts", str(DEMO), "--idea-file", str(long_idea)],
        "no_table": ["--abstracts", str(tmp_path / "none.csv"), "--idea", IDEA],
        "no_idea_file": ["--abstracts", str(DEMO), "--idea-file", str(tmp_path / "none.txt")],
        "empty_idea": ["--abstracts", str(DEMO), "--idea", "  "],
        "zero_sentences": ["--abstracts", str(DEMO), "--idea", IDEA, "--sentences", "0"],
    }[case]
    home = tmp_path / "home"
    assert related_work(home, tiny_model, *args, "--out", str(tmp_path / "out.md")) == 2
    err = capsys.readouterr().err
    assert err.startswith("litpipe related-work: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    # No request file, no partition, no outputs: not even the home.
    assert not home.exists() and not (tmp_path / "out.md").exists()


def test_related_work_stays_out_of_the_paper_and_collection_pipelines(tmp_path: Path) -> None:
    defs = build_definitions(**settings_groups(Settings(home=tmp_path / "home")))
    for job in ("paper_pipeline", "collection_pipeline"):
        assert ASSET not in defs.resolve_job_def(job).asset_layer.executable_asset_keys
    assert ASSET not in {key for phase in phases(defs) for key in phase.keys}
    job = defs.resolve_job_def("related_work_job")
    assert job.asset_layer.executable_asset_keys == {ASSET}
    assert defs.resolve_asset_graph().get(ASSET).partitions_def == related_work_requests


def test_help_names_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["related-work", "--abstracts", str(DEMO)])  # no idea given
    assert usage.value.code == 2
    assert "one of the arguments --idea --idea-file is required" in capsys.readouterr().err
