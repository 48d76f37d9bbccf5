"""How a reply's schema reaches the model, and how the reply is read.

The structured-output modes (`llm.structured_output`): the request each makes (a response
format, the schema in the system message, or both), the mode `auto` resolves to for a route
(what this process learnt from a server's refusal, else what litellm knows of the model), and
the tolerant parsing of a reply against its schema.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from litpipe.llm.client.model_facts import _ModelFacts
from litpipe.settings import Route, StructuredOutput
from litpipe.validation import validation_problems

T = TypeVar("T", bound=BaseModel)
Messages = list[dict[str, str]]

SCHEMA_INSTRUCTION = (
    "Answer with one JSON object that is valid against this JSON schema, and nothing else "
    "(no prose, no Markdown):\n```json\n{schema}\n```"
)
# In `auto`, the mode to ask in once a server refuses one: each carries the schema less strictly.
_NEXT_MODE: dict[StructuredOutput, StructuredOutput] = {
    "json_schema": "json_object",
    "json_object": "prompt",
}
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class UnusableReply(Exception):
    """What is wrong with a reply, in words the model can act on (asked for a repair)."""


# The structured output that works, per (api_base, model), learnt in `auto` from a refusal: for
# the process, so that each server refuses once. Touched only on the model-call loop.
_WORKING_MODE: dict[tuple[str | None, str], StructuredOutput] = {}


@lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


@lru_cache(maxsize=256)
def _schema_instruction(schema: type[BaseModel]) -> str:
    return SCHEMA_INSTRUCTION.format(schema=json.dumps(_schema_json(schema), ensure_ascii=False))


def _mode(route: Route, facts: _ModelFacts) -> StructuredOutput:
    """The route's structured output, `auto` resolved by what this process learnt of the
    server, else by what litellm knows of the model: a model it does not know (one served by
    the user's own server) is asked with a JSON schema first."""
    if route.structured_output != "auto":
        return route.structured_output
    learnt = _WORKING_MODE.get((route.api_base, route.model))
    if learnt is not None:
        return learnt
    return "json_schema" if facts.structured or not facts.known else "prompt"


def structured_request(
    messages: Messages, schema: type[BaseModel], mode: StructuredOutput
) -> tuple[Messages, dict[str, Any] | None]:
    """The messages to send and the response format, if any: the schema goes in one of them
    (in both for `json_object`, which asks for JSON but cannot say which)."""
    if mode == "json_schema":
        # Not strict: OpenAI's strict mode takes a subset of JSON schema (every property
        # required, no open dicts) that litpipe's schemas need not fit, and the reply is
        # validated (and repaired once) here anyway.
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": _schema_json(schema), "strict": False},
        }
        return messages, response_format
    instruction = _schema_instruction(schema)
    if messages and messages[0].get("role") == "system":
        system = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        instructed = [system, *messages[1:]]
    else:
        instructed = [{"role": "system", "content": instruction}, *messages]
    return instructed, {"type": "json_object"} if mode == "json_object" else None


def parse_reply(text: str, schema: type[T], cut_off_at: int | None = None) -> T:
    """The reply's JSON object validated against `schema`: fences and prose around the object
    tolerated; `UnusableReply` says what is wrong (with `cut_off_at`, the max_tokens the reply
    was cut off at)."""
    text = text.strip()
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        problem = "the reply is empty"
    else:
        try:
            return schema.model_validate_json(text)
        except ValidationError as error:
            problem = validation_problems(error)
            # The object with some prose around it.
            start, end = text.find("{"), text.rfind("}")
            if start != -1 and end > start and (start, end) != (0, len(text) - 1):
                try:
                    return schema.model_validate_json(text[start : end + 1])
                except ValidationError:
                    pass
    if cut_off_at is not None:
        problem += f" (cut off at max_tokens={cut_off_at}: raise the agent's max_tokens)"
    raise UnusableReply(problem)
