"""The whole chain through a server that answers from the JSON schema alone, as a new user's
OpenAI-compatible server does: `litpipe run` on three bundled PDFs, then `ask` and
`related-work`, with no reply written for any agent (`StubLLM(schema_driven=True)`).

This is the path every user with a model takes; a scripted stub only shows the replies a test
expected. A reply that a stage cannot use must fail that step with a reason, never crash the
paper with a KeyError, and the other papers must not notice.
"""

from __future__ import annotations

import shutil
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.defs.definitions import build_definitions
from litpipe.schemas import RunReport
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.stub_llm import StubLLM

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_schema_driven_server")]

CANARY_KEY = "sk-canary-5f1d2c9e7b3a"
MODEL = "openai/served-model"
DEMO = Path(__file__).parents[1] / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"


@pytest.fixture(scope="module")
def server() -> Iterator[StubLLM]:
    with StubLLM(schema_driven=True, lifetime_s=900) as stub:
        yield stub


@pytest.fixture(scope="module")
def run_home(
    server: StubLLM, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """A home where `litpipe run` built three bundled PDFs through the server, the key set."""
    base = tmp_path_factory.mktemp("schema-driven")
    folder = base / "papers"
    folder.mkdir()
    for pdf in PDFS_BY_SIZE[:3]:
        shutil.copy(pdf, folder)
    home = base / "home"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", CANARY_KEY)
        assert main(["run", str(folder), *through(server, home, tiny_model)]) == 0
        yield home


def through(server: StubLLM, home: Path, tiny_model: Path) -> list[str]:
    return [
        "--home",
        str(home),
        "--embedder",
        str(tiny_model),
        "--model",
        MODEL,
        "--api-base",
        server.url,
    ]


def report(home: Path) -> RunReport:
    return RunReport.model_validate_json((home / "outputs" / "papers" / "report.json").read_text())


def test_every_paper_is_built_and_the_synthesis_written_with_every_check(
    run_home: Path,
) -> None:
    built = report(run_home)
    assert built.papers == 3 and built.failed_papers == []
    assert built.collection_failure is None
    assert built.engine == MODEL
    assert built.synthesis is not None
    outputs = run_home / "outputs" / "papers"
    assert (outputs / "synthesis.html").is_file() and (outputs / "synthesis.md").is_file()
    # Every check the graph declares on the two syntheses reports a result.
    graph = build_definitions(**settings_groups(Settings(home=run_home))).resolve_asset_graph()
    declared = {
        (key.asset_key.to_user_string(), key.name)
        for key in graph.asset_check_keys
        if key.asset_key.to_user_string() in ("synthesis", "plain_summary")
    }
    # (The report also carries the optional steps' checks of cross_paper_questions and
    # relationship_analysis: not these two assets'.)
    reported = {
        (check.asset, check.check)
        for check in built.synthesis.checks
        if check.asset in ("synthesis", "plain_summary")
    }
    assert declared and reported == declared


def test_a_rerun_asks_the_server_nothing(run_home: Path, server: StubLLM, tiny_model: Path) -> None:
    folder = run_home.parent / "papers"
    before = server.request_count
    assert main(["run", str(folder), *through(server, run_home, tiny_model)]) == 0
    assert server.request_count == before
    assert report(run_home).papers_up_to_date == 3


def test_ask_and_related_work_complete_through_the_server(
    run_home: Path, server: StubLLM, tiny_model: Path
) -> None:
    paper = PDFS_BY_SIZE[0].stem
    args = through(server, run_home, tiny_model)
    before = server.request_count
    assert main(["ask", "--paper", paper, *args, "What does the paper find?"]) == 0
    idea = "Learning new classes incrementally without forgetting the old ones."
    assert main(["related-work", "--abstracts", str(DEMO), "--idea", idea, *args]) == 0
    assert server.request_count > before


def test_the_api_key_is_in_no_file_of_the_home(run_home: Path) -> None:
    assert run_home.is_dir()
    assert not files_holding(run_home, CANARY_KEY.encode())


def files_holding(home: Path, secret: bytes) -> list[str]:
    """Every file under `home` holding `secret`, as it is or in a zlib-compressed SQLite cell
    (Dagster compresses its snapshots)."""
    found = []
    for path in home.rglob("*"):
        if not path.is_file():
            continue
        if secret in path.read_bytes() or (path.suffix == ".db" and secret_in_cells(path, secret)):
            found.append(str(path.relative_to(home)))
    return found


def secret_in_cells(database: Path, secret: bytes) -> bool:
    with sqlite3.connect(database) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        for table in tables:
            try:
                rows = connection.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.DatabaseError:
                continue  # an index, not a table
            for cell in (cell for row in rows for cell in row):
                if isinstance(cell, str):
                    cell = cell.encode()
                if isinstance(cell, bytes) and (secret in cell or secret in _inflated(cell)):
                    return True
    return False


def _inflated(cell: bytes) -> bytes:
    try:
        return zlib.decompress(cell)
    except zlib.error:
        return b""
