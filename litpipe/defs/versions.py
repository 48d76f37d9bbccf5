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


def embedder_version(settings: Settings) -> str:
    """The configured embedder as its id (a local folder's id carries a fingerprint of its
    files), so a model retrained in place makes its chunks and vectors stale like a new name
    does; the setting itself when the model cannot be resolved (the step then says why)."""
    from litpipe.retrieval.embedder import Embedder, EmbedderError

    try:
        return Embedder(settings.embedder).embedder_id
    except (EmbedderError, OSError):
        return settings.embedder


def backfill_policy(settings: Settings) -> dg.BackfillPolicy:
    """How a backfill runs the per-paper assets that batch well (tokenizing, embedding): up to
    `backfill_batch_size` papers a run, one model call and one LanceDB commit for all of them."""
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=settings.backfill_batch_size)


def batch_data_version(versions: dict[str, dg.DataVersion]) -> dg.DataVersion:
    """The one data version Dagster records for every partition of a step run over several
    (a range, in a backfill); a single partition keeps its own, so a run per paper (`litpipe
    run`) versions a paper exactly as before."""
    if len(versions) == 1:
        return next(iter(versions.values()))
    return dg.DataVersion(digest(*(f"{key}={versions[key].value}" for key in sorted(versions))))


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


def grading_version(settings: Settings, prompts: PromptLibrary) -> str:
    """What decides the grades an output carries besides its text and passages: both judges
    (prompt, schema, code, route) and the offline bands. For an asset that keeps its grades
    on its output, so a repeat with the same judge is served as it was and another judge
    regrades (the text itself then comes from the reply cache)."""
    from litpipe.agents.base import version
    from litpipe.agents.claim_judge import ClaimJudgeAgent
    from litpipe.agents.coherence_judge import CoherenceJudgeAgent

    return digest(
        version(ClaimJudgeAgent(), settings, prompts),
        version(CoherenceJudgeAgent(), settings, prompts),
        str(settings.support_threshold),
        str(settings.partial_support_threshold),
    )
