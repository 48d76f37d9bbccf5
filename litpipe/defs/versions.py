"""Code and data versions: what lets Dagster recompute only what an edit affects."""

from __future__ import annotations

import inspect
import json
from types import ModuleType

import dagster as dg
from pydantic import BaseModel

from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.settings import Settings


def code_version(modules: list[ModuleType], output: type[BaseModel], **parameters: object) -> str:
    """Hash of the code that computes an asset, the schema it returns and its parameters.

    Editing the implementing module, changing the output schema or a parameter (chunk size,
    embedder) marks the asset stale; nothing else does.
    """
    return digest(
        *(inspect.getsource(module) for module in modules),
        json.dumps(output.model_json_schema(), sort_keys=True),
        json.dumps(parameters, sort_keys=True, default=str),
    )


def data_version(output: BaseModel) -> dg.DataVersion:
    """Content hash of an output: a rerun that produces the same output stops staleness there."""
    return dg.DataVersion(digest(output.model_dump_json()))


def asking_version(settings: Settings, prompts: PromptLibrary) -> str:
    """What decides the evidence and answers of questions a collection stage asks itself
    (comparative and follow-up questions): retrieval, reranking and answering."""
    from litpipe.agents.answers import answers_version
    from litpipe.agents.rerankers import reranker_version
    from litpipe.defs.resources import RetrievalResource

    retrieval = RetrievalResource.from_settings(settings)
    return digest(
        answers_version(settings, prompts),
        reranker_version(settings, prompts),
        retrieval.model_dump_json(exclude={"index_dir", "scope"}),
    )
