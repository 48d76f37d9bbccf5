"""Code and data versions: what lets Dagster recompute only what an edit affects."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, cast

import dagster as dg
from pydantic import BaseModel

from litpipe.agents.answers import answers_version
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.agents.claim_judge import ClaimJudgeAgent
from litpipe.agents.coherence_judge import CoherenceJudgeAgent
from litpipe.hashing import digest
from litpipe.settings import HomePaths, IngestSettings, OperationsSettings
from litpipe.settings.groups import SettingsGroups
from litpipe.workflows.reranking import settings_reranker_version

Output = TypeVar("Output", bound=BaseModel)


def code_version(
    modules: list[ModuleType], output: type[BaseModel] | None, **parameters: object
) -> str:
    """Hash of the code that computes an asset, the schema it returns and its parameters.

    Editing the implementing module, changing the output schema or a parameter (chunk size,
    embedder) marks the asset stale; nothing else does.
    """
    schema = [] if output is None else [json.dumps(output.model_json_schema(), sort_keys=True)]
    return digest(
        *(inspect.getsource(module) for module in modules),
        *schema,
        json.dumps(parameters, sort_keys=True, default=str),
    )


@dataclass(frozen=True)
class NamedVersion:
    """A version a stage computes itself (its agents, code and settings together), named so
    that a reader of the graph snapshot sees what an asset's code version takes in."""

    name: str
    # The version from the settings groups its stage's definition was handed.
    of: Callable[[SettingsGroups, Asker], str]


def setting(groups: SettingsGroups, path: str) -> Any:
    """The setting at a dotted path (`retrieval.candidates`), from its group among `groups`."""
    group, _, field = path.partition(".")
    handed = cast(Mapping[str, BaseModel], groups)
    if group not in handed:
        raise KeyError(f"{path}: the {group} settings were not handed to this definition")
    return functools.reduce(getattr, field.split("."), handed[group])


@dataclass(frozen=True)
class CodeVersion:
    """What an asset's code version hashes, declared by name: the agents it runs (prompt,
    reply schema, code, route), the versions of the stages it calls, its own modules and
    output schema, the settings fields it reads, and the embedder's version (its model files,
    not its name) where the embedder decides the output.

    The one rule: the digest of the agents' versions, then the named versions, then
    `code_version` of the modules, output and parameters (the settings fields, and `embedder`),
    in that order; a declaration of a single part takes that part's version as it is."""

    agents: tuple[Agent[Any, Any], ...] = ()
    versions: tuple[NamedVersion, ...] = ()
    modules: tuple[ModuleType, ...] = ()
    output: type[BaseModel] | None = None
    # The settings hashed (dotted paths: `retrieval.candidates`), by parameter name; a tuple
    # hashes each under its path.
    settings: tuple[str, ...] | Mapping[str, str] = ()
    embedder: bool = False

    def parameters(self) -> dict[str, str]:
        """Each hashed setting's path, by the parameter name it is hashed under."""
        if isinstance(self.settings, Mapping):
            return dict(self.settings)
        return {path: path for path in self.settings}

    def of(self, groups: SettingsGroups, asker: Asker | None) -> str:
        """The version under the settings `groups` (those it declares, the embedder's `ingest`
        and `paths`, and its named versions' groups), its agents' routes resolved by `asker`
        (one is needed where it declares agents or named versions)."""
        parts: list[str] = []
        if self.agents or self.versions:
            if asker is None:
                raise ValueError("a code version of agents or named versions needs an asker")
            parts += [asker.version(agent) for agent in self.agents]
            parts += [named.of(groups, asker) for named in self.versions]
        if self.modules or self.output is not None or self.settings or self.embedder:
            parameters: dict[str, object] = {
                name: setting(groups, path) for name, path in self.parameters().items()
            }
            if self.embedder:
                parameters["embedder"] = embedder_version(groups["ingest"], groups["paths"])
            parts.append(code_version(list(self.modules), self.output, **parameters))
        return parts[0] if len(parts) == 1 else digest(*parts)

    def inputs(self) -> dict[str, object]:
        """The declared inputs by name (no hashes): what the graph snapshot records."""
        return {
            "agents": [agent.name for agent in self.agents],
            "versions": [named.name for named in self.versions],
            "modules": [module.__name__ for module in self.modules],
            "output": None if self.output is None else self.output.__name__,
            "settings": sorted(self.parameters().values()),
            "embedder": self.embedder,
        }


# Each asset's declared code-version inputs, by asset name, as its definition was last built:
# the graph snapshot test reads them here (Dagster keeps only the hash).
DECLARED_CODE_VERSIONS: dict[str, CodeVersion] = {}


def declared_code_version(
    name: str, code: CodeVersion, groups: SettingsGroups, asker: Asker | None = None
) -> str:
    """The asset `name`'s code version under the settings `groups` (its agents' routes
    resolved by its step's `asker`, or by one of the `llm` group's), its inputs recorded."""
    DECLARED_CODE_VERSIONS[name] = code
    if asker is None and (code.agents or code.versions):
        asker = Asker(groups["llm"])
    return code.of(groups, asker)


# What `dg.asset` takes that belongs to the asset itself (not to its step): in a multi-asset,
# its `AssetOut`'s (the description is the step's too, as `dg.asset` makes it).
_ASSET_OUT_ARGS = (
    "group_name",
    "description",
    "metadata",
    "io_manager_key",
    "tags",
    "kinds",
    "owners",
    "automation_condition",
)


def versioned_asset(
    code: CodeVersion,
    groups: SettingsGroups,
    *,
    asker: Asker | None = None,
    checks_may_skip: bool = False,
    **asset_args: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """`dg.asset` with the code version `code` declares, under the settings `groups`.

    With `checks_may_skip`, the same asset as a subsettable one-asset `dg.multi_asset` (its
    output named `result` as `dg.asset`'s is): a plain asset must report every check it
    declares, or its step fails; this one's step may leave a check it could not run unreported,
    and Dagster shows that check as not run (skipped), not as passed (`check_results.checked`).
    Its checks can then be launched without it, which its step refuses (`ModelStep.run`)."""

    def decorate(compute: Callable[..., Any]) -> dg.AssetsDefinition:
        name = asset_args.get("name") or compute.__name__
        version_of = declared_code_version(name, code, groups, asker)
        if not checks_may_skip:
            return dg.asset(code_version=version_of, **asset_args)(compute)
        step_args = {
            key: value
            for key, value in asset_args.items()
            if key not in _ASSET_OUT_ARGS and key != "name"
        }
        out = dg.AssetOut(
            key=dg.AssetKey(name),
            code_version=version_of,
            **{key: value for key, value in asset_args.items() if key in _ASSET_OUT_ARGS},
        )
        return dg.multi_asset(
            name=name,
            outs={"result": out},
            can_subset=True,
            description=asset_args.get("description"),
            **step_args,
        )(compute)

    return decorate


def data_version(output: BaseModel) -> dg.DataVersion:
    """Content hash of an output: a rerun that produces the same output stops staleness there."""
    return dg.DataVersion(digest(output.model_dump_json()))


def versioned_output(
    value: Output, metadata: Mapping[str, Any], version: dg.DataVersion | None = None
) -> dg.Output[Output]:
    """An asset's output with its metadata, versioned by its content (`data_version`) unless
    `version` says otherwise."""
    return dg.Output(value, data_version=version or data_version(value), metadata=dict(metadata))


def embedder_version(ingest: IngestSettings, paths: HomePaths) -> str:
    """The configured embedder as its id (a local folder's id carries a fingerprint of its
    files), so a model retrained in place makes its chunks and vectors stale like a new name
    does; the setting itself when the model cannot be resolved (the step then says why)."""
    from litpipe.retrieval.embedder import EmbedderError
    from litpipe.workflows.ingest import settings_embedder

    try:
        return settings_embedder(ingest, paths).embedder_id
    except (EmbedderError, OSError):
        return ingest.embedder


def backfill_policy(operations: OperationsSettings) -> dg.BackfillPolicy:
    """How a backfill launched from the UI runs the per-paper assets: up to
    `operations.batch_size` papers a run, as `litpipe run` does (`defs.paper_batches`)."""
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=operations.batch_size)


def batch_data_version(versions: dict[str, dg.DataVersion]) -> dg.DataVersion:
    """The one data version Dagster records for every partition of a step run over several
    (a batch); a single partition keeps its own. Staleness compares a batch's versions by when
    they were written (`staleness._input_changed`)."""
    if len(versions) == 1:
        return next(iter(versions.values()))
    return dg.DataVersion(digest(*(f"{key}={versions[key].value}" for key in sorted(versions))))


def asking_version(groups: SettingsGroups, asker: Asker) -> str:
    """What decides the evidence and answers of questions a collection stage asks itself
    (comparative and follow-up questions): retrieval, reranking and answering."""
    retrieval = {path: setting(groups, path) for path in RETRIEVAL_SETTINGS}
    return digest(
        answers_version(groups["synthesis"].answer_mode, asker),
        settings_reranker_version(groups["retrieval"], asker),
        json.dumps(retrieval, sort_keys=True),
    )


# The settings a search reads (`RetrievalResource`'s, its scope apart): candidates, reranked
# candidates, passages kept, RRF's k and MMR's lambda.
RETRIEVAL_SETTINGS = (
    "retrieval.candidates",
    "retrieval.rerank_candidates",
    "retrieval.evidence_per_question",
    "retrieval.rrf_k",
    "retrieval.mmr_lambda",
)
ANSWERS = NamedVersion(
    "answers", lambda groups, asker: answers_version(groups["synthesis"].answer_mode, asker)
)
RERANKER = NamedVersion(
    "reranker", lambda groups, asker: settings_reranker_version(groups["retrieval"], asker)
)
ASKING = NamedVersion("asking", asking_version)


def grading_version(groups: SettingsGroups, asker: Asker) -> str:
    """What decides the grades an output carries besides its text and passages: both judges
    (prompt, schema, code, route) and the offline bands. For an asset that keeps its grades
    on its output, so a repeat with the same judge is served as it was and another judge
    regrades (the text itself then comes from the reply cache)."""
    return digest(
        asker.version(ClaimJudgeAgent()),
        asker.version(CoherenceJudgeAgent()),
        str(groups["grading"].support_threshold),
        str(groups["grading"].partial_support_threshold),
    )


GRADING = NamedVersion("grading", grading_version)
