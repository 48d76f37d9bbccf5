"""What turns texts into vectors for an embedder (`ingest.embedder_backend`).

- `torch`: the model's own `SentenceTransformer.encode`.
- `torch-int8`: the same with its linear layers quantized to int8 on load
  (`torch.ao.quantization.quantize_dynamic`): close to torch's vectors, faster on AVX2.
- `onnx`: the whole sentence-transformers model exported once with `torch.onnx.export` and run on
  onnxruntime with every graph optimization for this CPU.
- `model2vec`: a static model distilled once from the installed model with model2vec (each
  token's vector, averaged): a hundred times faster, and further from its quality.

A backend that builds a model from the installed one (`onnx`, `model2vec`) keeps it under the
models folder, keyed by the source model's fingerprint, so it is built once per machine and
rebuilt when the source model changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from litpipe.files import exclusive_lock

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class VectorBackend(Protocol):
    """L2-normalised float32 vectors, one row per text, for a non-empty list of texts."""

    dimension: int

    def encode(self, texts: list[str]) -> NDArray[np.float32]: ...


class TorchBackend:
    """`SentenceTransformer.encode` of a loaded model (int8 or not)."""

    def __init__(self, model: SentenceTransformer, batch_size: int) -> None:
        self._model = model
        self._batch_size = batch_size
        self.dimension = int(model.get_embedding_dimension() or 0)

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        return self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def quantized_int8(model: SentenceTransformer) -> SentenceTransformer:
    """A copy of `model` whose linear layers compute in int8 (weights quantized once, activations
    per batch): the matrix products are most of MiniLM's time. Weights get a scale per output
    channel: one scale per matrix put MiniLM's vectors at a cosine of 0.89 to torch's on SciFact,
    one per channel at 0.97."""
    import copy

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig

    return torch.ao.quantization.quantize_dynamic(
        copy.deepcopy(model), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
    )


class OnnxBackend:
    """The sentence-transformers model (transformer, pooling and any later module) as one ONNX
    graph on onnxruntime, fed by the model's own tokenizer; batches are cut from the texts
    sorted by length, as sentence-transformers does, so little of a batch is padding."""

    def __init__(
        self, onnx_file: Path, transformer_dir: Path, max_seq_length: int, batch_size: int
    ):
        import onnxruntime  # type: ignore[import-untyped]
        from transformers import AutoTokenizer

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {graph_input.name for graph_input in self._session.get_inputs()}
        self._tokenizer = AutoTokenizer.from_pretrained(str(transformer_dir))
        self._max_seq_length = max_seq_length
        self._batch_size = batch_size
        self.dimension = int(self._session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        order = np.argsort([-len(text) for text in texts], kind="stable")
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            rows = order[start : start + self._batch_size]
            batch = self._tokenizer(
                [texts[row] for row in rows],
                padding=True,
                truncation="longest_first",
                max_length=self._max_seq_length,
                return_tensors="np",
            )
            feed = {name: batch[name].astype(np.int64) for name in self._inputs}
            vectors[rows] = self._session.run(None, feed)[0]
        return _normalized(vectors)


def export_onnx(model: SentenceTransformer, folder: Path) -> None:
    """`model` as `folder/model.onnx`: inputs the tokenizer's, output the sentence embedding."""
    import torch

    tokenizer: Any = model.tokenizer
    names = [
        name
        for name in ("input_ids", "attention_mask", "token_type_ids")
        if name in tokenizer.model_input_names
    ]

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(names, inputs, strict=True)))["sentence_embedding"]

    # Padded, so the traced graph keeps the attention mask (a batch without padding may drop it).
    example = tokenizer(["a b c", "a"], padding=True, return_tensors="pt")
    dynamic = {name: {0: "batch", 1: "tokens"} for name in names}
    with torch.no_grad():
        torch.onnx.export(
            SentenceEmbedding().eval(),
            tuple(example[name] for name in names),
            str(folder / "model.onnx"),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**dynamic, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


class StaticBackend:
    """A model2vec static model: each token's vector from a table, averaged over the text."""

    def __init__(self, folder: Path) -> None:
        from model2vec import StaticModel

        self._model = StaticModel.from_pretrained(str(folder))
        self.dimension = int(self._model.dim)

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        return _normalized(np.asarray(self._model.encode(texts), dtype=np.float32))


def distill_static(transformer_dir: Path, folder: Path) -> None:
    """A model2vec static model distilled from the transformer in `transformer_dir`, saved in
    `folder`: one forward pass per token of its vocabulary, no download. No PCA: the vectors
    keep the source's length (model2vec's default, 256 dimensions by PCA, scored lower on
    SciFact's test split: hybrid nDCG@10 0.629 against 0.637)."""
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, PreTrainedTokenizerFast

    static = distill_from_model(
        AutoModel.from_pretrained(str(transformer_dir)),
        PreTrainedTokenizerFast.from_pretrained(str(transformer_dir)),
        device="cpu",
        pca_dims=None,
    )
    static.save_pretrained(str(folder))


def built_once(folder: Path, build: Callable[[Path], None]) -> Path:
    """`folder`, built by `build` into a temporary folder beside it and renamed into place the
    first time (under a lock, so two processes build it once); as it is afterwards."""
    if folder.is_dir():
        return folder
    with exclusive_lock(folder.with_name(f".{folder.name}.lock")):
        if not folder.is_dir():
            building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
            try:
                build(building)
                os.replace(building, folder)
            finally:
                shutil.rmtree(building, ignore_errors=True)
    return folder


def _normalized(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.finfo(np.float32).tiny)
