"""A real model server, as a user of litpipe meets it: llama.cpp's llama-server with
SmolLM2-135M (litpipe_tests/llama_server.py), reached through litellm as `openai/smollm2`.

Without the server binary or the weights these tests skip, saying why; `.ci/run` builds the
server where it can and sets LITPIPE_REQUIRE_LLAMA_SERVER=1, under which they fail instead.
The model writes ~30 tokens a second on two cores: replies are kept short.
"""

from __future__ import annotations

import json
import re

import litellm
import pytest

from litpipe_tests.llama_server import (
    LlamaServer,
    served_weights,
    skip_unless_available,
    weights_path,
)

# One server for the module, on one worker (`make test` runs pytest-xdist).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("llama_server")]

PAPER_SCHEMA = {
    "type": "object",
    "properties": {
        # Bounded, so that the grammar lets the reply close within `max_tokens`.
        "title": {"type": "string", "maxLength": 60},
        "keywords": {
            "type": "array",
            "items": {"type": "string", "maxLength": 20},
            "maxItems": 3,
        },
    },
    "required": ["title", "keywords"],
}
ABSTRACT = (
    "We measure how nitrogen fertiliser changes the soil microbiome of wheat fields over "
    "three growing seasons, and find fewer nitrogen-fixing bacteria where more is applied."
)


def test_serves_its_model_under_the_alias(llama_server: LlamaServer) -> None:
    models = llama_server.get("/v1/models")

    assert [model["id"] for model in models["data"]] == ["smollm2"]


def test_props_report_the_context_window_and_slots_it_was_started_with(
    llama_server: LlamaServer,
) -> None:
    props = llama_server.get("/props")

    assert props["default_generation_settings"]["n_ctx"] == llama_server.n_ctx == 2048
    assert props["total_slots"] == llama_server.slots == 1


def test_slots_share_the_context_window() -> None:
    skip_unless_available()
    with LlamaServer(n_ctx=2048, slots=2) as two_slots:
        props = two_slots.get("/props")

    assert props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 1024


def test_tokenize_counts_the_models_tokens(llama_server: LlamaServer) -> None:
    short = llama_server.post("/tokenize", {"content": "Soil bacteria"})["tokens"]
    longer = llama_server.post("/tokenize", {"content": ABSTRACT})["tokens"]

    assert 1 <= len(short) < len(longer) < len(ABSTRACT)
    assert all(isinstance(token, int) for token in longer)


def test_a_json_schema_response_format_holds_the_reply_to_the_schema(
    llama_server: LlamaServer,
) -> None:
    response = litellm.completion(
        model=llama_server.model,
        api_base=llama_server.api_base,
        api_key="not-needed",
        messages=[
            {"role": "system", "content": "Describe the paper as JSON."},
            {"role": "user", "content": ABSTRACT},
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "paper", "schema": PAPER_SCHEMA},
        },
        temperature=0,
        max_tokens=120,
    )

    reply = json.loads(response.choices[0].message.content)
    assert isinstance(reply["title"], str)
    assert isinstance(reply["keywords"], list)
    assert all(isinstance(keyword, str) for keyword in reply["keywords"])
    assert len(reply["keywords"]) <= 3


def test_a_prompt_longer_than_the_window_is_refused_naming_both_sizes(
    llama_server: LlamaServer,
) -> None:
    words = "soil bacteria " * 1200  # ~2400 tokens: more than the 2048 of the window

    with pytest.raises(litellm.ContextWindowExceededError) as refusal:
        litellm.completion(
            model=llama_server.model,
            api_base=llama_server.api_base,
            api_key="not-needed",
            messages=[{"role": "user", "content": words}],
            max_tokens=8,
        )

    assert refusal.value.status_code == 400
    assert re.search(
        r"request \(\d+ tokens\) exceeds the available context size \(2048 tokens\)",
        str(refusal.value),
    )


def test_the_server_reads_the_packaged_weights_each_q4_1_tensor_as_its_f16_values() -> None:
    import gguf
    import numpy as np

    skip_unless_available()
    packaged = gguf.GGUFReader(weights_path())
    served = {tensor.name: tensor for tensor in gguf.GGUFReader(served_weights()).tensors}
    assert sorted(served) == sorted(tensor.name for tensor in packaged.tensors)
    converted = 0
    for tensor in packaged.tensors:
        mine = served[tensor.name]
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            assert mine.tensor_type == gguf.GGMLQuantizationType.F16
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            # F16 holds a Q4_1 value (a half-precision scale times a 4-bit step, plus a
            # half-precision minimum) to within its own rounding.
            assert np.allclose(mine.data, values, rtol=2**-10, atol=2**-14)
            converted += 1
        else:
            assert mine.tensor_type == tensor.tensor_type
            assert np.array_equal(mine.data, tensor.data)
    assert converted > 0
