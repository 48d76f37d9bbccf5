"""Code and data versions: what lets Dagster recompute only what an edit affects."""

from __future__ import annotations

import hashlib
import inspect
import json
from types import ModuleType

import dagster as dg
from pydantic import BaseModel


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def code_version(modules: list[ModuleType], output: type[BaseModel], **parameters: object) -> str:
    """Hash of the code that computes an asset, the schema it returns and its parameters.

    Editing the implementing module, changing the output schema or a parameter (chunk size,
    embedder) marks the asset stale; nothing else does.
    """
    return _digest(
        *(inspect.getsource(module) for module in modules),
        json.dumps(output.model_json_schema(), sort_keys=True),
        json.dumps(parameters, sort_keys=True, default=str),
    )


def data_version(output: BaseModel) -> dg.DataVersion:
    """Content hash of an output: a rerun that produces the same output stops staleness there."""
    return dg.DataVersion(_digest(output.model_dump_json()))
