"""Process-level faults: real processes sharing one LITPIPE_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lancedb
import numpy as np
import pytest

from litpipe.retrieval.store import table_name
from litpipe_tests.conftest import FakeEmbedder

REPO_ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# Two processes embedding the same papers into one chunk table at once (issue 16, point 2).
# ---------------------------------------------------------------------------------------------

EMBEDDER_PAPERS = 20
EMBEDDER_CHUNKS_PER_PAPER = 10

# Each writer announces it is ready, waits for the test's "go" on stdin (so both write at once),
# then stores the papers one commit each, as the `chunk_embeddings` asset does.
_EMBEDDING_WRITER = """
import sys
from pathlib import Path
from litpipe.retrieval.store import ChunkStore
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_faults import embedder_papers

store = ChunkStore(Path(sys.argv[1]))
embedder = FakeEmbedder()
papers = embedder_papers()
print("ready", flush=True)
sys.stdin.readline()
for chunks in papers:
    store.embed_paper(chunks, embedder)
"""


def embedder_papers() -> list:
    from litpipe_tests.test_store import paper

    return [
        paper(
            f"paper{number:02d}",
            [
                f"Paper {number} passage {index} on enzyme {number * 31 + index} kinetics."
                for index in range(EMBEDDER_CHUNKS_PER_PAPER)
            ],
        )
        for number in range(EMBEDDER_PAPERS)
    ]


def _start_embedding_writer(db_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _EMBEDDING_WRITER, str(db_dir)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_two_processes_embedding_the_same_papers_leave_one_row_per_chunk(tmp_path: Path) -> None:
    db_dir = tmp_path / "home" / "lancedb"
    writers = [_start_embedding_writer(db_dir) for _ in range(2)]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        for writer in writers:
            _, stderr = writer.communicate(timeout=120)
            assert writer.returncode == 0, stderr
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()

    # Read with LanceDB itself: what the writers left, before any repair on open.
    rows = lancedb.connect(str(db_dir)).open_table(table_name(FakeEmbedder.embedder_id)).to_arrow()
    chunk_ids = rows.column("chunk_id").to_pylist()
    assert len(chunk_ids) == len(set(chunk_ids)) == EMBEDDER_PAPERS * EMBEDDER_CHUNKS_PER_PAPER
    text_of = {chunk.chunk_id: chunk.text for p in embedder_papers() for chunk in p.chunks}
    vectors = np.stack(rows.column("vector").to_numpy(zero_copy_only=False))
    expected = FakeEmbedder().encode([text_of[chunk_id] for chunk_id in chunk_ids])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
