"""The reply cache: keyed on what produced a reply, written whole, used only for valid replies."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from litpipe.llm.cache import LLMCache
from litpipe.llm.client import LLMClient
from litpipe.llm.errors import PermanentLLMError, ReplyValidationError, TransientLLMError
from litpipe.llm.usage import UsageLedger
from litpipe.settings import Route
from litpipe_tests.stub_llm import StubLLM, stub_settings

MESSAGES = [{"role": "user", "content": "Summarise paper p1."}]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
PARAMS = {"temperature": 0.0, "max_tokens": 100}


class Summary(BaseModel):
    text: str


class ShortSummary(BaseModel):
    text: str
    words: int


def test_the_key_is_stable_and_covers_every_input() -> None:
    key = LLMCache.key("openai/m", MESSAGES, SCHEMA, PARAMS)
    assert key == LLMCache.key("openai/m", [dict(MESSAGES[0])], dict(SCHEMA), dict(PARAMS))
    assert len(key) == 64 and int(key, 16) >= 0
    others = {
        LLMCache.key("openai/other", MESSAGES, SCHEMA, PARAMS),
        LLMCache.key("openai/m", [{"role": "user", "content": "Summarise p2."}], SCHEMA, PARAMS),
        LLMCache.key("openai/m", MESSAGES, {**SCHEMA, "required": ["text"]}, PARAMS),
        LLMCache.key("openai/m", MESSAGES, SCHEMA, {**PARAMS, "temperature": 0.7}),
        LLMCache.key("openai/m", MESSAGES, SCHEMA, {**PARAMS, "max_tokens": 200}),
    }
    assert key not in others and len(others) == 5


def test_entries_fan_out_and_round_trip(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    key = LLMCache.key("openai/m", MESSAGES, SCHEMA, PARAMS)
    assert cache.get(key) is None
    cache.put(key, {"value": {"text": "ü"}})
    assert cache.path(key) == tmp_path / key[:2] / key[2:4] / f"{key}.json"
    assert cache.get(key) == {"value": {"text": "ü"}}
    assert [path.name for path in tmp_path.rglob("*") if path.is_file()] == [f"{key}.json"]


def test_an_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    cache.put("ab" * 32, {"value": 1})
    cache.path("ab" * 32).write_text('{"value": ')
    assert cache.get("ab" * 32) is None


def write_many(directory: str, key: str, writer: int) -> None:
    cache = LLMCache(Path(directory))
    for round_number in range(50):
        cache.put(key, {"writer": writer, "round": round_number, "padding": "x" * 20_000})


# The same, in a fresh interpreter that imports only the cache (not litellm: seconds).
WRITE_MANY = f"""
import sys
from pathlib import Path
from litpipe.llm.cache import LLMCache
{inspect.getsource(write_many)}
write_many(sys.argv[1], sys.argv[2], int(sys.argv[3]))
"""


def assert_one_valid_entry(directory: Path, key: str, writers: int) -> None:
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert files == [LLMCache(directory).path(key)]  # no temporary files left behind
    entry = json.loads(files[0].read_text("utf-8"))
    assert entry["writer"] in range(writers) and entry["round"] == 49


def test_concurrent_threads_writing_one_key_leave_one_valid_entry(tmp_path: Path) -> None:
    key = "cd" * 32
    threads = [threading.Thread(target=write_many, args=(str(tmp_path), key, n)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_one_valid_entry(tmp_path, key, 4)


def test_concurrent_processes_writing_one_key_leave_one_valid_entry(tmp_path: Path) -> None:
    key = "ef" * 32
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITE_MANY, str(tmp_path), key, str(n)])
        for n in range(3)
    ]
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0]
    assert_one_valid_entry(tmp_path, key, 3)


# Through the client.


def make_client(home: Path, stub: StubLLM, **overrides: Any) -> LLMClient:
    settings = stub_settings(home, stub, **overrides)
    return LLMClient(settings.llm, settings.paths, UsageLedger())


def agent_route(client: LLMClient, **changes: Any) -> Route:
    return client.llm.route("summary").model_copy(update=changes)


def test_an_unchanged_call_is_answered_from_the_cache(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm)
    first = client.complete_sync(agent_route(client), MESSAGES, Summary)
    assert stub_llm.request_count == 1
    # A new client (a re-materialization), another agent name, another endpoint: no request.
    again = make_client(
        tmp_path, stub_llm, llm={"api_base": stub_llm.url.replace("127.0.0.1", "localhost")}
    )
    route = agent_route(again, agent="other-agent")
    assert again.complete_sync(route, MESSAGES, Summary) == first
    assert stub_llm.request_count == 1
    (record,) = again.usage.records
    assert record.cached and (record.tokens_in, record.cost_usd, record.requests) == (0, 0.0, 0)
    entry = LLMCache(tmp_path / "cache").get(
        LLMCache.key(
            "openai/stub",
            MESSAGES,
            Summary.model_json_schema(),
            PARAMS | {"max_tokens": 2048, "structured_output": "json_schema"},
        )
    )
    assert entry is not None and entry["value"] == first.model_dump()
    assert set(entry) == {"model", "schema", "value", "usage", "created"}


def test_a_change_of_model_sampling_messages_or_schema_is_a_miss(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm)
    client.complete_sync(agent_route(client), MESSAGES, Summary)
    changed = [
        (agent_route(client, model="openai/stub-2"), MESSAGES, Summary),
        (agent_route(client, temperature=0.5), MESSAGES, Summary),
        (agent_route(client, max_tokens=512), MESSAGES, Summary),
        (agent_route(client), [{"role": "user", "content": "Summarise paper p2."}], Summary),
        (agent_route(client), MESSAGES, ShortSummary),
        # A reply asked with the schema in the prompt is another reply than one asked with a
        # response format: the mode that produced it is part of its key.
        (agent_route(client, structured_output="prompt"), MESSAGES, Summary),
    ]
    for route, messages, schema in changed:
        client.complete_sync(route, messages, schema)
    assert stub_llm.request_count == 1 + len(changed)
    assert client.usage.summary().cached == 0


def test_with_the_cache_off_every_call_is_made(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    for _ in range(3):
        client.complete_sync(agent_route(client), MESSAGES, Summary)
    assert stub_llm.request_count == 3
    assert not (tmp_path / "cache").exists()


def test_neither_a_failed_call_nor_an_unusable_reply_is_cached(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """A provider's failure may pass, and an unusable reply may not come again (the server
    fixed, the model behind the name replaced): both are asked again."""
    client = make_client(tmp_path, stub_llm, llm={"max_retries": 0})
    stub_llm.fail_next("server_error")
    stub_llm.fail_next("not_found")
    for expected in (TransientLLMError, PermanentLLMError):
        with pytest.raises(expected):
            client.complete_sync(agent_route(client), MESSAGES, Summary)
    assert not list((tmp_path / "cache").rglob("*.json"))
    client.complete_sync(agent_route(client), MESSAGES, Summary)  # now it works, and is cached
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1
    assert client.usage.summary().model_dump(include={"made", "failed"}) == {
        "made": 1,
        "failed": 2,
    }
    other = [{"role": "user", "content": "Summarize paper p2."}]
    stub_llm.fail_next("invalid_schema", 4)
    for _ in range(2):
        with pytest.raises(ReplyValidationError, match="even after one repair"):
            client.complete_sync(agent_route(client), other, Summary)
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1
    # 2 failures, 1 reply, then twice the unusable one and its repair
    assert stub_llm.request_count == 7
    assert client.complete_sync(agent_route(client), other, Summary) is not None  # it works now
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def test_a_cached_reply_that_no_longer_validates_is_a_miss(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm)
    client.complete_sync(agent_route(client), MESSAGES, Summary)
    (entry_path,) = (tmp_path / "cache").rglob("*.json")
    entry = json.loads(entry_path.read_text("utf-8"))
    entry_path.write_text(json.dumps(entry | {"value": {"text": 3}}))
    client.complete_sync(agent_route(client), MESSAGES, Summary)
    assert stub_llm.request_count == 2
    assert json.loads(entry_path.read_text("utf-8"))["value"] == entry["value"]  # rewritten
