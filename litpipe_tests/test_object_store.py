"""The chunk tables on object storage (issue 49, point 2): `operations.lancedb_uri` names an
S3 bucket, served here by moto's standalone server on loopback (`object_store_server.py` says
what it does not prove), and litpipe embeds into it, reads from it on the next run, and keeps
nothing of the tables in the home. A store that cannot be reached is one line, exit 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe_tests.object_store_server import ObjectStoreServer, object_store_server

TABLE = Path(__file__).parent / "data" / "tables" / "abstracts.csv"


@pytest.fixture(scope="module")
def object_store() -> Iterator[ObjectStoreServer]:
    with object_store_server() as server:
        yield server


@pytest.fixture
def on_object_store(object_store: ObjectStoreServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket, its endpoint and credentials in the environment: its URI for the tables."""
    for name, value in object_store.environment().items():
        monkeypatch.setenv(name, value)
    return object_store.new_bucket()


def run(home: Path, embedder: Path, uri: str) -> tuple[int, dict]:
    code = main(
        ["run", str(TABLE), "--home", str(home), "--embedder", str(embedder),
         "--set", f"operations.lancedb_uri={uri}"]
    )  # fmt: skip
    reports = list((home / "outputs").glob("*/report.json"))
    return code, json.loads(reports[0].read_text("utf-8")) if reports else {}


def test_a_run_embeds_into_the_bucket_reads_it_again_and_keeps_no_table_in_the_home(
    tmp_path: Path, tiny_model: Path, object_store: ObjectStoreServer, on_object_store: str
) -> None:
    bucket, home = on_object_store, tmp_path / "home"
    uri = f"s3://{bucket}/lancedb"

    code, report = run(home, tiny_model, uri)

    assert code == 0 and report["papers"] == 3 and report["failed_papers"] == []
    embedder_id = Embedder(str(tiny_model)).embedder_id
    table = ChunkStore(uri).open_table(embedder_id)
    assert table is not None and table.count_rows() == report["embedded_chunks"] > 0
    stored = object_store.keys(bucket, "lancedb/")
    assert any(key.endswith(".lance") and "/data/" in key for key in stored), stored
    assert not (home / "lancedb").exists()
    assert not any(path.suffix == ".lance" for path in home.rglob("*"))
    synthesis = (home / "outputs" / report["collection"] / "synthesis.md").read_text("utf-8")
    assert "## References" in synthesis

    # Again: every paper up to date, nothing embedded, the same rows in the bucket.
    code, again = run(home, tiny_model, uri)
    assert code == 0 and again["papers_up_to_date"] == 3 and again["embedded_chunks"] == 0
    assert ChunkStore(uri).open_table(embedder_id).count_rows() == table.count_rows()


def test_an_object_store_that_does_not_answer_is_one_line_naming_it_exit_2(
    tmp_path: Path,
    tiny_model: Path,
    on_object_store: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A closed port of loopback: nothing listens there.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    uri = f"s3://{on_object_store}/lancedb"

    code, _ = run(tmp_path / "home", tiny_model, uri)

    said = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    (line,) = [line for line in said if "object store" in line]
    assert line.startswith(f"litpipe run: {uri}: the object store cannot be opened (")
    assert "http://127.0.0.1:9" in line and "Traceback" not in "\n".join(said)
