"""Embedding backends (`ingest.embedder_backend`): each one's vectors, its place in the embedder
id (a switch re-embeds), and the models a backend builds once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from litpipe.defs.versions import embedder_version
from litpipe.retrieval import embedder as embedder_module
from litpipe.retrieval.embedder import Embedder, EmbedderError
from litpipe.retrieval.store import table_name
from litpipe.settings import HomePaths, IngestSettings, Settings

TEXTS = [
    "Aspirin lowers the risk of a second heart attack.",
    "Gut bacteria shape the immune response of newborn mice.",
    "A short one.",
    "Statins reduce LDL cholesterol in adults with diabetes, in a trial of 2,000 patients "
    "followed for five years; side effects were rare and mild.",
]


def test_torch_keeps_the_embedder_id_of_homes_made_before_backends(tmp_path: Path) -> None:
    """Homes embedded before backends existed (by torch) stay current when set to torch; the
    default is int8, the fastest backend of equal nDCG@10, a new embedder."""
    assert embedder_version(IngestSettings(embedder_backend="torch"), HomePaths(home=tmp_path)) == (
        "all-MiniLM-L6-v2"
    )
    assert (
        embedder_version(IngestSettings(), HomePaths(home=tmp_path))
        == "all-MiniLM-L6-v2.torch-int8"
    )


@pytest.mark.parametrize("backend", ["torch-int8", "onnx", "model2vec"])
def test_another_backend_is_another_embedder_with_its_own_table(
    tmp_path: Path, backend: str
) -> None:
    """Its id versions the embedding assets (a switch makes them stale, so a rerun re-embeds)
    and names the LanceDB table its vectors go to."""
    settings = Settings(home=tmp_path, ingest={"embedder_backend": backend})
    assert embedder_version(settings.ingest, settings.paths) == f"all-MiniLM-L6-v2.{backend}"
    assert table_name(embedder_version(settings.ingest, settings.paths)) != table_name(
        "all-MiniLM-L6-v2"
    )


def test_an_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(EmbedderError, match="unknown embedder backend 'tensorrt'"):
        Embedder("all-MiniLM-L6-v2", backend="tensorrt")


@pytest.mark.parametrize("backend", ["torch-int8", "onnx"])
def test_a_backend_gives_vectors_close_to_torchs(
    tiny_model: Path, tmp_path: Path, backend: str
) -> None:
    torch_vectors = Embedder(str(tiny_model)).encode(TEXTS)
    other = Embedder(str(tiny_model), backend=backend, models_dir=tmp_path).encode(TEXTS)
    assert other.shape == torch_vectors.shape
    assert other.dtype == np.float32
    assert (other * torch_vectors).sum(axis=1).min() > 0.99


@pytest.mark.slow
def test_model2vec_is_distilled_once_into_the_models_folder(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Embedder(str(tiny_model), backend="model2vec", models_dir=tmp_path)
    vectors = first.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), first.dimension)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    (built,) = built_models(tmp_path / "model2vec")

    def distill_again(transformer_dir: Path, folder: Path) -> None:
        raise AssertionError(f"distilled {transformer_dir} a second time")

    # Another process (nothing loaded yet) with the same models folder reads what was built.
    monkeypatch.setattr(embedder_module, "_LOADED_BACKENDS", {})
    monkeypatch.setattr(embedder_module, "distill_static", distill_again)
    again = Embedder(str(tiny_model), backend="model2vec", models_dir=tmp_path)
    np.testing.assert_allclose(again.encode(TEXTS), vectors, atol=1e-6)
    assert built_models(tmp_path / "model2vec") == [built]


def built_models(folder: Path) -> list[Path]:
    """The models built in `folder` (not the hidden lock files beside them)."""
    return [path for path in folder.iterdir() if not path.name.startswith(".")]


class CountingBackend:
    """Stands in for a backend: one-hot-ish vectors, and the texts it was given."""

    dimension = 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return np.eye(len(texts), self.dimension, dtype=np.float32)


def test_a_text_given_twice_in_one_call_is_encoded_once() -> None:
    embedder = Embedder("all-MiniLM-L6-v2")
    backend = CountingBackend()
    embedder.__dict__["_backend"] = backend  # the cached property, as if loaded
    vectors = embedder.encode(["a", "b", "a", "c", "b"])
    assert backend.seen == ["a", "b", "c"]
    assert vectors.shape == (5, 4)
    np.testing.assert_array_equal(vectors[2], vectors[0])
    np.testing.assert_array_equal(vectors[4], vectors[1])
    assert not np.array_equal(vectors[0], vectors[1])
