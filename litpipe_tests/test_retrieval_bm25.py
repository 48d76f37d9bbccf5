"""The persisted BM25 index: ranking, filtering, loaded when unchanged, rebuilt when not."""

from __future__ import annotations

from pathlib import Path

from litpipe.retrieval.bm25 import BM25Index
from litpipe.schemas import sha256_text

TEXTS = {
    "p1:0000": "Aspirin lowers the risk of myocardial infarction in adults.",
    "p1:0001": "Statins reduce LDL cholesterol and cardiovascular events.",
    "p2:0000": "IL-6 signalling drives inflammation in rheumatoid arthritis.",
    "p2:0001": "Tocilizumab blocks the IL-6 receptor in arthritis patients.",
    "p3:0000": "Deep learning predicts protein structure from sequence.",
}


def _build(directory: Path, texts: dict[str, str]) -> BM25Index:
    ids = list(texts)
    return BM25Index.load_or_build(
        directory, ids, [sha256_text(texts[i]) for i in ids], [texts[i] for i in ids]
    )


def test_search_ranks_matching_chunks_and_respects_allowed_ids(tmp_path: Path) -> None:
    index = _build(tmp_path, TEXTS)
    hits = index.search("IL6 receptor arthritis", limit=10)
    assert [chunk_id for chunk_id, _ in hits][:2] == ["p2:0001", "p2:0000"]
    # Chunks sharing no term are left out; scores decrease.
    assert {chunk_id for chunk_id, _ in hits} == {"p2:0000", "p2:0001"}
    assert hits[0][1] >= hits[1][1] > 0
    allowed = index.search("IL6 receptor arthritis", limit=10, allowed_ids={"p2:0000", "p1:0000"})
    assert allowed == [hits[1]]
    assert index.search("the of and", limit=10) == []
    assert index.search("arthritis", limit=1)[0][0] in {"p2:0000", "p2:0001"}


def test_index_is_loaded_when_unchanged_and_rebuilt_when_a_chunk_changes(tmp_path: Path) -> None:
    first = _build(tmp_path, TEXTS)
    assert first.built
    again = _build(tmp_path, TEXTS)
    assert not again.built
    assert again.fingerprint == first.fingerprint
    assert again.search("statins cholesterol", 3) == first.search("statins cholesterol", 3)

    changed = {**TEXTS, "p3:0000": "Deep learning predicts cholesterol from diet."}
    rebuilt = _build(tmp_path, changed)
    assert rebuilt.built and rebuilt.fingerprint != first.fingerprint
    assert rebuilt.search("diet", 5)[0][0] == "p3:0000"
    # Only the current state's index stays on disk.
    assert [path.name for path in tmp_path.glob("*.bm25.pkl")] == [
        f"{rebuilt.fingerprint}.bm25.pkl"
    ]
    assert not _build(tmp_path, changed).built


def test_empty_collection(tmp_path: Path) -> None:
    index = _build(tmp_path, {})
    assert len(index) == 0 and index.search("anything", 5) == []
