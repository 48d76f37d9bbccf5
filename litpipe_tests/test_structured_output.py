"""`llm.structured_output`: how a reply's schema reaches the model, as the local stub server
receives it, for a model name litellm does not know (`openai/stub`, as a model served by vLLM,
llama.cpp's server, Ollama or LM Studio is named) and one it knows takes a JSON-schema format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from litpipe.agents.asker import Asker
from litpipe.agents.paper_questions import PaperQuestionsAgent
from litpipe.cli import main
from litpipe.llm.errors import PermanentLLMError
from litpipe.llm.prompts import PromptLibrary
from litpipe.settings import AgentRoute, Settings, StructuredOutput
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_llm_client import KNOWN_MODEL, MESSAGES, Findings, make_client, route

JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "Findings", "schema": Findings.model_json_schema(), "strict": False},
}
UNKNOWN_MODEL = "openai/stub"


def told_the_schema(request: dict[str, Any]) -> bool:
    """Whether the request's system message carries the schema instruction (after the
    agent's own system prompt, which stays first)."""
    system = request["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(MESSAGES[0]["content"])
    return '"Findings"' in system["content"] and "Answer with one JSON object" in system["content"]


@pytest.mark.parametrize(
    ("mode", "model", "response_format", "instructed"),
    [
        # A model litellm does not know (the user's own server) is asked with a schema first.
        ("auto", UNKNOWN_MODEL, JSON_SCHEMA_FORMAT, False),
        ("auto", KNOWN_MODEL, JSON_SCHEMA_FORMAT, False),
        ("json_schema", UNKNOWN_MODEL, JSON_SCHEMA_FORMAT, False),
        ("json_schema", KNOWN_MODEL, JSON_SCHEMA_FORMAT, False),
        ("json_object", UNKNOWN_MODEL, {"type": "json_object"}, True),
        ("json_object", KNOWN_MODEL, {"type": "json_object"}, True),
        ("prompt", UNKNOWN_MODEL, None, True),
        ("prompt", KNOWN_MODEL, None, True),
    ],
)
def test_each_mode_sends_the_schema_its_way_and_the_reply_validates(
    tmp_path: Path,
    stub_llm: StubLLM,
    mode: StructuredOutput,
    model: str,
    response_format: dict[str, Any] | None,
    instructed: bool,
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"structured_output": mode})
    result = client.complete_sync(route(client, model), MESSAGES, Findings)
    assert isinstance(result, Findings) and len(result.findings) == 2
    (request,) = stub_llm.requests  # valid at once: no repair
    assert request["model"] == model.removeprefix("openai/")
    assert request.get("response_format") == response_format
    assert told_the_schema(request) == instructed
    assert request["messages"][1:] == MESSAGES[1:]
    if not instructed:
        assert request["messages"] == MESSAGES
    # litellm's own switches stay litellm's: the server gets only OpenAI's fields.
    assert set(request) <= {"model", "messages", "temperature", "max_tokens", "response_format"}


@pytest.mark.parametrize(
    ("mode", "response_format"),
    [("json_schema", JSON_SCHEMA_FORMAT), ("json_object", {"type": "json_object"})],
)
def test_a_chosen_format_reaches_a_model_litellm_thinks_lacks_it(
    tmp_path: Path, stub_llm: StubLLM, mode: StructuredOutput, response_format: dict[str, Any]
) -> None:
    # litellm drops response_format for `gpt-4` (drop_params), whatever serves that name.
    client = make_client(tmp_path, stub_llm, llm={"structured_output": mode})
    assert isinstance(
        client.complete_sync(route(client, "openai/gpt-4"), MESSAGES, Findings), Findings
    )
    (request,) = stub_llm.requests
    assert request["model"] == "gpt-4" and request["response_format"] == response_format
    assert "allowed_openai_params" not in request  # how litpipe tells litellm, not the server


def test_an_agent_can_have_a_mode_of_its_own(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(
        tmp_path,
        stub_llm,
        llm={
            "structured_output": "json_schema",
            "agents": {"answers": AgentRoute(structured_output="prompt")},
            "cache": False,
        },
    )
    for agent in ("answers", "insights"):
        client.complete_sync(client.llm.route(agent), MESSAGES, Findings)
    own, default = stub_llm.requests
    assert "response_format" not in own and told_the_schema(own)
    assert default["response_format"] == JSON_SCHEMA_FORMAT and default["messages"] == MESSAGES


def test_each_mode_keeps_its_own_cached_replies(tmp_path: Path, stub_llm: StubLLM) -> None:
    """A reply asked with the schema in the prompt is not the reply a response format would
    get: the mode that produced a reply is part of its key. `auto` shares the replies of the
    mode it resolves to (json_schema, for a model litellm does not know)."""
    for mode in ("prompt", "json_schema", "json_object"):
        client = make_client(tmp_path, stub_llm, llm={"structured_output": mode})
        client.complete_sync(route(client), MESSAGES, Findings)
        assert client.usage.summary().cached == 0
    assert stub_llm.request_count == 3
    resolved = make_client(tmp_path, stub_llm, llm={"structured_output": "auto"})
    resolved.complete_sync(route(resolved), MESSAGES, Findings)
    assert resolved.usage.summary().cached == 1 and stub_llm.request_count == 3


def test_the_mode_is_not_in_the_agents_code_version(tmp_path: Path) -> None:
    agent, prompts = PaperQuestionsAgent(), PromptLibrary(None)
    versions = {
        Asker(
            Settings(home=tmp_path, llm={"model": "openai/stub", "structured_output": mode}).llm,
            None,
            prompts,
        ).version(agent)
        for mode in ("auto", "json_schema", "json_object", "prompt")
    }
    assert len(versions) == 1


def test_a_server_refusing_the_format_is_named_as_the_likely_cause(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.fail_next("bad_request")
    client = make_client(tmp_path, stub_llm, llm={"structured_output": "json_schema"})
    with pytest.raises(PermanentLLMError) as caught:
        client.complete_sync(route(client), MESSAGES, Findings)
    assert (
        "and that the server takes response_format 'json_schema' (else set "
        "llm.structured_output to one it takes)"
    ) in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value", "setting"),
    [
        ("LITPIPE_LLM__STRUCTURED_OUTPUT", "json", "llm.structured_output"),
        (
            "LITPIPE_LLM__AGENTS",
            json.dumps({"questions": {"structured_output": "schema"}}),
            "llm.agents.questions.structured_output",
        ),
    ],
)
def test_a_bad_mode_fails_naming_the_setting_and_the_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, setting: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as caught:
        Settings(home=tmp_path)
    message = str(caught.value)
    assert f"{setting}\n" in message
    assert "Input should be 'auto', 'json_schema', 'json_object' or 'prompt'" in message


def test_the_cli_flag_reaches_every_request(
    tmp_path: Path, stub_llm: StubLLM, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["run", str(tmp_path), "--structured-output", "json"])
    assert usage.value.code == 2 and "invalid choice: 'json'" in capsys.readouterr().err

    # Every request refused: the paper fails at its first model call, which is all there is to see.
    stub_llm.fail_next("unauthorized", 100)
    table = tmp_path / "src" / "yeast.csv"
    table.parent.mkdir()
    table.write_text("id,title,abstract\ny1,Yeast,We profile ale yeast proteins.\n", "utf-8")
    model = ["--model", "openai/stub", "--api-base", stub_llm.url]
    flags = ["--home", str(tmp_path / "home"), "--embedder", str(tiny_model), *model]
    assert main(["run", str(table), *flags, "--structured-output", "json_object"]) == 1
    assert stub_llm.requests
    for request in stub_llm.requests:
        assert request["response_format"] == {"type": "json_object"}
        assert "Answer with one JSON object" in request["messages"][0]["content"]


def test_auto_asks_again_once_in_json_object_when_the_server_refuses_json_schema_and_remembers(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-cpp-python's server answers a json_schema format with HTTP 500 naming the formats
    it takes: asked again at once in json_object (the schema in the prompt), never retried as
    a transient error, and the next call goes straight to json_object; one warning says so."""
    stub_llm.refused_formats = {"json_schema"}
    client = make_client(tmp_path, stub_llm)
    other = [MESSAGES[0], {"role": "user", "content": "Paper p2: we measured more."}]
    with caplog.at_level("WARNING", logger="litpipe.llm.client"):
        for messages in (MESSAGES, other):
            assert isinstance(client.complete_sync(route(client), messages, Findings), Findings)
    kinds = [(r.get("response_format") or {}).get("type") for r in stub_llm.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert told_the_schema(stub_llm.requests[1])
    refusals = [r for r in caplog.records if "refuses structured output" in r.getMessage()]
    assert len(refusals) == 1 and "'json_object'" in refusals[0].getMessage()
    assert client.usage.summary().failed == 0


def test_auto_falls_through_to_the_prompt_when_the_server_takes_no_format(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.refused_formats = {"json_schema", "json_object"}
    client = make_client(tmp_path, stub_llm)
    assert isinstance(client.complete_sync(route(client), MESSAGES, Findings), Findings)
    kinds = [(r.get("response_format") or {}).get("type") for r in stub_llm.requests]
    assert kinds == ["json_schema", "json_object", None]
    assert told_the_schema(stub_llm.requests[-1])


def test_a_chosen_format_the_server_refuses_fails_at_once_naming_the_setting(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """Not retried (the server will refuse it every time), and the message says what to set."""
    stub_llm.refused_formats = {"json_schema"}
    client = make_client(tmp_path, stub_llm, llm={"structured_output": "json_schema"})
    with pytest.raises(PermanentLLMError) as caught:
        client.complete_sync(route(client), MESSAGES, Findings)
    assert stub_llm.request_count == 1
    assert "does not take structured output 'json_schema' (llm.structured_output)" in str(
        caught.value
    )
