"""The persisted BM25 index: ranking, filtering, loaded when unchanged, rebuilt when not."""

from __future__ import annotations

import csv
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from litpipe.retrieval.bm25 import BM25Index
from litpipe.retrieval.text import tokenize
from litpipe.schemas import sha256_text

ROOT = Path(__file__).resolve().parents[1]

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
    assert [path.name for path in tmp_path.glob("*.bm25.npz")] == [
        f"{rebuilt.fingerprint}.bm25.npz"
    ]
    assert not _build(tmp_path, changed).built


def _saved_index(directory: Path) -> Path:
    (path,) = directory.glob("*.bm25.*")
    return path


@pytest.mark.parametrize("damage", ["garbage", "cut short", "empty"])
def test_an_unreadable_index_file_is_rebuilt_and_search_still_works(
    tmp_path: Path, damage: str
) -> None:
    first = _build(tmp_path, TEXTS)
    path = _saved_index(tmp_path)
    saved = path.read_bytes()
    path.write_bytes(
        {"garbage": b"not an index" * 40, "cut short": saved[: len(saved) // 2], "empty": b""}[
            damage
        ]
    )
    rebuilt = _build(tmp_path, TEXTS)
    assert rebuilt.built
    assert rebuilt.search("statins cholesterol", 3) == first.search("statins cholesterol", 3)
    assert not _build(tmp_path, TEXTS).built  # saved whole again


class _RunsCodeWhenUnpickled:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))  # unpickling creates the marker


def test_the_saved_index_holds_no_pickle_and_a_planted_one_is_never_run(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    index = _build(index_dir, TEXTS)
    path = _saved_index(index_dir)
    with np.load(path, allow_pickle=False) as arrays:
        assert {name: arrays[name].dtype.hasobject for name in arrays.files} == dict.fromkeys(
            arrays.files, False
        )

    marker = tmp_path / "code-ran"
    path.write_bytes(pickle.dumps(_RunsCodeWhenUnpickled(marker)))
    reloaded = _build(index_dir, TEXTS)
    assert not marker.exists()
    assert reloaded.built and reloaded.search("IL6", 2) == index.search("IL6", 2)


def test_empty_collection(tmp_path: Path) -> None:
    index = _build(tmp_path, {})
    assert len(index) == 0 and index.search("anything", 5) == []


def _iclr_sentences() -> dict[str, str]:
    """The bundled ICLR abstracts, one chunk per sentence: real text with a real vocabulary."""
    with (ROOT / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    chunks = {}
    for row in rows:
        for number, sentence in enumerate(re.split(r"(?<=\.)\s+", row["abstract"])):
            chunks[f"{row['id']}:{number:04d}"] = sentence
    return chunks


@pytest.mark.parametrize(
    "query",
    [
        "incremental class learning without catastrophic forgetting",
        # Repeated terms count once per occurrence; unknown terms and stop words add nothing.
        "learning learning learning neural networks",
        "graph neural network zzyzxqv adversarial of the",
    ],
)
def test_scores_are_rank_bm25s(tmp_path: Path, query: str) -> None:
    texts = _iclr_sentences()
    ids = list(texts)
    index = _build(tmp_path, texts)
    reference = BM25Okapi([tokenize(texts[i]) for i in ids], k1=index.k1, b=index.b)
    expected = np.asarray(reference.get_scores(tokenize(query)))
    assert (expected > 0).sum() > 20  # the query matches many chunks

    hits = dict(index.search(query, limit=len(ids)))
    assert set(hits) == {ids[i] for i in np.flatnonzero(expected > 0)}
    assert np.allclose([hits[i] for i in hits], [expected[ids.index(i)] for i in hits])
    top = index.search(query, limit=5)
    assert [score for _, score in top] == sorted(expected, reverse=True)[:5]

    # Restricted to a few chunks (looked up in the postings) or to most of them (masked), or
    # leaving a few out.
    everything = index.search(query, limit=len(ids))
    for allowed in (set(ids[::40]), set(ids[: len(ids) * 3 // 4])):
        restricted = index.search(query, limit=len(ids), allowed_ids=allowed | {"unknown:0"})
        assert restricted == [(i, score) for i, score in everything if i in allowed]
        excluded = set(ids[::3])
        both = index.search(query, len(ids), allowed_ids=allowed, excluded_ids=excluded)
        assert both == [hit for hit in restricted if hit[0] not in excluded]
    left_out = {chunk_id for chunk_id, _ in everything[:3]}
    assert index.search(query, 5, excluded_ids=left_out) == everything[3:8]


def test_a_collection_of_stop_words_only_matches_nothing(tmp_path: Path) -> None:
    index = _build(tmp_path, {"p1:0000": "The of and.", "p1:0001": "It is what it is."})
    assert len(index) == 2 and index.search("what is it", 5) == []
