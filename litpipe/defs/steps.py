"""The one pattern of litpipe's assets, so that an asset's file states only what is particular
to it: its step (a `ModelStep`, or the `CodeVersion` of a step that calls no model), the
resources its function reads, its place in the graph, and its work.

- `step_asset` declares an asset: its code version (with a model step's pool and retry policy)
  and the resources it reads, by name; its function takes its context and its upstream outputs
  and reads those resources as `Resources(context)`, each as its type.
- `paper_asset` declares a per-paper asset: `papers` partitions, built a batch of papers a run
  (its backfill policy, as `litpipe run` batches them). Its function hands `each_paper` how one
  paper is built; the step is opened once for the batch (`paper_batch`), and each paper is
  built, written and reported alone (`paper_batches.build_papers`).
- `Collection` is a collection step's collection: its papers as the catalog lists them (the
  retracted ones left out, and recorded on the output as `MEMBERS`, so that a change of them
  makes it stale), their stored outputs, and the search over their chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import dagster as dg

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.defs import resources as defined
from litpipe.defs.llm_steps import ModelStep, StepRun
from litpipe.defs.paper_batches import PaperBuild, build_papers
from litpipe.defs.partitions import papers
from litpipe.defs.staleness import MEMBERS, members_fingerprint
from litpipe.defs.versions import CodeVersion, backfill_policy, versioned_asset
from litpipe.settings.groups import SettingsGroups

if TYPE_CHECKING:
    from pydantic import BaseModel

    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.store import TextEncoder

    Model = TypeVar("Model", bound=BaseModel)

Kind = TypeVar("Kind")

# What a step reads to search a collection's chunks: the catalog's members, their stored
# outputs, the embedder's LanceDB table and the retrieval settings.
SEARCH = ("catalog", "artifacts", "embedder", "lancedb", "retrieval")


class _Resource(Generic[Kind]):
    """A resource of a step's context, by the attribute's name, as its type."""

    def __init__(self, kind: type[Kind]) -> None:
        self.kind = kind

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, resources: Resources, owner: type | None = None) -> Kind:
        return cast(Kind, getattr(resources.of_context, self.name))


class Resources:
    """The resources of a step, each by its name and as its type: those its asset names
    (`step_asset`), which Dagster alone gives it."""

    artifacts = _Resource(defined.ArtifactsResource)
    catalog = _Resource(defined.CatalogResource)
    chunker = _Resource(defined.ChunkingResource)
    embedder = _Resource(defined.EmbedderResource)
    lancedb = _Resource(defined.LanceDBResource)
    llm = _Resource(defined.LLMResource)
    retrieval = _Resource(defined.RetrievalResource)

    def __init__(self, context: dg.AssetExecutionContext) -> None:
        self.of_context = context.resources


def step_asset(
    step: ModelStep | CodeVersion,
    groups: SettingsGroups,
    *,
    resources: Iterable[str],
    checks_may_skip: bool = False,
    **asset_args: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """`dg.asset` of a step's asset under the settings `groups` its factory hands it: a model
    step's (`ModelStep.asset`: its pool, retry policy and code version; it reads `llm` besides
    `resources`), or one that calls no model, versioned by its `CodeVersion`. The function reads
    `resources` (names) through `Resources`; `checks_may_skip` as `versioned_asset` has it."""
    if isinstance(step, ModelStep):
        return step.asset(
            groups,
            checks_may_skip=checks_may_skip,
            required_resource_keys={"llm", *resources},
            **asset_args,
        )
    return versioned_asset(
        step,
        groups,
        checks_may_skip=checks_may_skip,
        required_resource_keys=set(resources),
        **asset_args,
    )


def paper_asset(
    step: ModelStep | CodeVersion,
    groups: SettingsGroups,
    *,
    resources: Iterable[str] = ("catalog", "artifacts"),
    **asset_args: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """`step_asset` of a per-paper asset: `papers` partitions, and a backfill from the UI runs
    a batch of them a run (`operations.batch_size`). `each_paper` (`paper_batch`) reads the
    catalog and the artifacts."""
    return step_asset(
        step,
        groups,
        resources=resources,
        partitions_def=papers,
        backfill_policy=backfill_policy(groups["operations"]),
        **asset_args,
    )


@dataclass
class PaperBatch:
    """One run of a per-paper asset over its papers (its partitions): its resources, the
    artifacts and the catalog, and a model step's run, each opened once for the batch."""

    context: dg.AssetExecutionContext
    resources: Resources
    store: ArtifactStore
    catalog: Catalog
    run: StepRun | None = None

    @property
    def step(self) -> StepRun:
        """The model step's run: its settings, agents (`asker`) and usage."""
        if self.run is None:
            raise TypeError(f"{self.context.asset_key.to_user_string()} calls no model")
        return self.run

    def paper(
        self, value: Model, metadata: Mapping[str, Any], version: dg.DataVersion | None = None
    ) -> PaperBuild[Model]:
        """One paper's output and metadata (with the model usage spent on it, for a model
        step), versioned by its content unless `version` says otherwise."""
        if self.run is not None:
            return self.run.paper(value, metadata, version)
        return PaperBuild(value, metadata, version)

    def build(self, build: Callable[[PaperBatch, str], PaperBuild[Any]]) -> dg.MaterializeResult:
        """Each paper built by `build`, written and reported alone (`build_papers`)."""
        return build_papers(
            self.context, self.store, self.catalog, lambda paper_id: build(self, paper_id)
        )


@contextmanager
def paper_batch(
    context: dg.AssetExecutionContext, step: ModelStep | None = None
) -> Iterator[PaperBatch]:
    """The batch of a per-paper asset's run, a model step's calls open for it (`ModelStep.run`)
    and its agents bound to their models: one that cannot be fails the step, not each paper."""
    resources = Resources(context)
    store = resources.artifacts.store()
    if step is None:
        yield PaperBatch(context, resources, store, resources.catalog.catalog())
        return
    with step.run(context, resources.llm) as run:
        run.asker()
        yield PaperBatch(context, resources, store, resources.catalog.catalog(), run)


def each_paper(
    context: dg.AssetExecutionContext,
    step: ModelStep | None,
    build: Callable[[PaperBatch, str], PaperBuild[Any]],
) -> dg.MaterializeResult:
    """A per-paper asset's run: each paper of its batch built by `build` (`paper_batch`)."""
    with paper_batch(context, step) as batch:
        return batch.build(build)


def all_partitions(*assets: str) -> list[dg.AssetDep]:
    """Deps on every partition of `assets`: what a step reads of them from their artifacts (the
    papers it names), not through the IO manager, which would load every partition."""
    return [dg.AssetDep(asset, partition_mapping=dg.AllPartitionMapping()) for asset in assets]


@dataclass(frozen=True)
class Collection:
    """A collection step's collection (its partition) and its papers as the catalog lists them
    now, read through the step's resources: without the retracted ones (`retracted`: each with
    its mark's reason), which its outputs name only as left out."""

    name: str
    members: list[str]
    resources: Resources
    retracted: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, context: dg.AssetExecutionContext) -> Collection:
        """The step's collection; its members' fingerprint goes on the step's output
        (`MEMBERS`): a paper retracted, restored or gone leaves the output stale."""
        resources = Resources(context)
        name = context.partition_key
        catalog = resources.catalog.catalog()
        members = catalog.papers(name)
        # A step with checks has an output for each: the metadata goes on the asset's own.
        output = context.assets_def.get_output_name_for_asset_key(context.asset_key)
        context.add_output_metadata({MEMBERS: members_fingerprint(members)}, output_name=output)
        retracted = {paper: mark.reason for paper, mark in catalog.retracted_in(name).items()}
        return cls(name, members, resources, retracted)

    def outputs(
        self, asset: str, model: type[Model], papers: Iterable[str] | None = None
    ) -> dict[str, Model]:
        """The asset's output of each member (or of each of `papers`) that has one, in order
        (`ArtifactsResource.of_papers`)."""
        chosen = self.members if papers is None else papers
        return self.resources.artifacts.of_papers(asset, chosen, model)

    def retriever(self, encoder: TextEncoder | None = None) -> HybridRetriever:
        """The search over the members' chunks in the embedder's table (the embedder's own
        encoder unless `encoder` is given), its BM25 index saved under the collection's name."""
        resources = self.resources
        return resources.retrieval.retriever(
            resources.lancedb.store(),
            encoder or resources.embedder.embedder(),
            self.name,
            self.members,
        )
