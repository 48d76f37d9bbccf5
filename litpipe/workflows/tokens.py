"""Tokens of a prompt's text as the model that reads it counts them: by the model's server where
it tokenizes (llama.cpp, vLLM); else with the model's tokenizer when litellm knows the model (its
cost map has it: tiktoken's encodings, or the Hugging Face tokenizer litellm picks for Llama,
Cohere or Claude models, tiktoken when that is not in the cache); else (offline, or a model
litellm has no entry for) with the embedder's tokenizer, which is always local. Each tokenizer
is loaded once per process.

    count = token_counter(asker.route("synthesis"), settings.ingest, settings.paths)
    count("Q: What does the paper find?")

It lives with the workflows because it reads the agent's route and the embedder (the `ingest`
group, its models under the home) and joins `litpipe.llm` (the model's and the server's
tokenizer) to `litpipe.retrieval` (the embedder's), two packages of one layer that do not import
each other.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from litpipe.llm import window
from litpipe.llm.window import known_to_litellm, served_name, server_report
from litpipe.retrieval.embedder import Embedder
from litpipe.settings import HomePaths, IngestSettings, Route


@functools.cache
def _model_tokenizer(model: str) -> Any | None:
    """litellm's tokenizer of the model, or None when litellm does not know the model."""
    # Imported here: litellm takes seconds to import, and the offline engine never needs it.
    from litellm.utils import select_tokenizer

    return select_tokenizer(model=model) if known_to_litellm(model) else None


@functools.cache
def _embedder_counter(embedder: str, models_dir: Path) -> Callable[[str], int]:
    tokenizer = Embedder(embedder, models_dir=models_dir).tokenizer
    return lambda text: len(tokenizer.token_offsets([text])[0])


def token_counter(route: Route, ingest: IngestSettings, paths: HomePaths) -> Callable[[str], int]:
    """A counter of the tokens of a text for the model of `route` (an agent's), the embedder's
    where that model's tokenizer is not known."""
    served = None if route.offline or route.api_base is None else route.api_base
    if served is not None and server_report(served, served_name(route.model)).tokenizes:
        return window.token_counter(route.model, served)
    tokenizer = None if route.offline else _model_tokenizer(route.model)
    if tokenizer is None:
        return _embedder_counter(ingest.embedder, paths.models_dir)
    from litellm.utils import encode

    return lambda text: len(encode(model=route.model, text=text, custom_tokenizer=tokenizer))


def tokens_up_to(texts: Iterable[str], count: Callable[[str], int], limit: int) -> int:
    """The texts' tokens in all, counted until they pass `limit` (enough to know they do not
    fit: a collection of thousands of papers is not tokenized whole to learn that)."""
    total = 0
    for text in texts:
        total += count(text)
        if total > limit:
            break
    return total
