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

from litpipe_tests.llama_server import LlamaServer, skip_unless_available

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
