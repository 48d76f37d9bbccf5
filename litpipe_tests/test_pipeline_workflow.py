"""The main chain as a notebook runs it: `litpipe.workflows.pipeline.run` on two papers, offline,
in a fresh process that never imports Dagster; and the syntheses it writes are those `litpipe
run` writes through the asset graph for the same papers and settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from litpipe.defs.resources import artifact_store
from litpipe.ingest.sources import discover
from litpipe.runtime.runner import open_instance, register, run_papers
from litpipe.schemas import Synthesis
from litpipe.settings import Settings
from litpipe.text import markers_in
from litpipe.workflows.pipeline import PipelineResult
from litpipe_tests.bundled import short_paper

REPO = Path(__file__).resolve().parents[1]
COLLECTION = "genes"

# What a notebook cell does; it prints whether Dagster was imported, then the result.
NOTEBOOK = """
import sys
from pathlib import Path

from litpipe.ingest.sources import discover
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.workflows import pipeline

home, embedder, folder = sys.argv[1:]
settings = Settings(home=Path(home), ingest={"embedder": embedder})
result = pipeline.run(discover(Path(folder), "genes"), settings_groups(settings))
print("dagster" in sys.modules)
print(result.model_dump_json())
"""


def two_papers(folder: Path) -> Path:
    folder.mkdir()
    short_paper(folder, 1)
    short_paper(folder, 2)
    return folder


def settings_for(home: Path, tiny_model: Path) -> Settings:
    return Settings(home=home, ingest={"embedder": str(tiny_model)})


def run_in_a_notebook(home: Path, tiny_model: Path, folder: Path) -> tuple[bool, PipelineResult]:
    # Only the offline switches from this environment: no LITPIPE_* setting of the caller's.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    completed = subprocess.run(
        [sys.executable, "-c", NOTEBOOK, str(home), str(tiny_model), str(folder)],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    dagster_imported, result = completed.stdout.strip().splitlines()[-2:]
    return dagster_imported == "True", PipelineResult.model_validate_json(result)


@pytest.mark.slow
def test_the_main_chain_runs_in_a_notebook_without_dagster_as_the_graph_runs_it(
    tmp_path: Path, tiny_model: Path
) -> None:
    folder = two_papers(tmp_path / "papers")
    papers = [source.paper_id for source in discover(folder, COLLECTION).sources]
    assert len(papers) == 2

    dagster_imported, result = run_in_a_notebook(tmp_path / "notebook", tiny_model, folder)

    assert not dagster_imported
    assert result.collection == COLLECTION and result.left_out == []
    assert [paper.answers.paper_id for paper in result.papers] == sorted(papers)
    assert all(paper.answers.answers for paper in result.papers)
    for written in (result.synthesis, result.plain_summary):
        assert written.engine == "offline"
        assert {paper for paper, _ in markers_in(written.text)} == set(papers)
        assert {citation.paper_id for citation in written.citations} == set(papers)

    # The same papers and settings through the asset graph (`litpipe run`'s runner).
    settings = settings_for(tmp_path / "dagster", tiny_model)
    instance = open_instance(settings.llm, settings.paths)
    run = run_papers(
        settings, instance, register(settings.paths, instance, discover(folder, COLLECTION))
    )
    assert run.collection_failure is None
    store = artifact_store(settings.ingest, settings.paths)
    for asset, written in (
        ("synthesis", result.synthesis),
        ("plain_summary", result.plain_summary),
    ):
        built = store.read([asset], COLLECTION, Synthesis)
        assert (built.title, built.text) == (written.title, written.text)
        assert built.citations == written.citations
