from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import dagster as dg

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.defs.versions import embedder_version
from litpipe.files import checked_key
from litpipe.llm import model_client
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.hybrid import HybridRetriever, paper_retrievers
from litpipe.retrieval.store import ChunkStore, TextEncoder
from litpipe.retrieval.vector_cache import CachedEncoder, VectorCache
from litpipe.schemas import EmbeddingResult
from litpipe.settings import (
    HomePaths,
    IngestSettings,
    LLMSettings,
    RetrievalSettings,
    Route,
    environment_name,
)
from litpipe.url_credentials import hide_credentials, holds_credentials

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from pydantic import BaseModel

    from litpipe.llm.client import LLMClient

    Model = TypeVar("Model", bound=BaseModel)


class CatalogResource(dg.ConfigurableResource):
    """The catalog of registered papers: tells a `papers` partition which file or row it is."""

    path: str

    def catalog(self) -> Catalog:
        return Catalog(Path(self.path))


# paper_chunks and every asset built from them: their outputs are sized in the embedder's
# tokens, retrieved from its table or cite ids of chunks in it. Each embedder's are stored
# apart, so that a backfill to another embedder beside a `litpipe run` (or two runs) never
# changes what the other reads. test_definitions checks this is paper_chunks' descendants.
CHUNK_EMBEDDINGS = "chunk_embeddings"
PER_EMBEDDER_ASSETS = frozenset(
    {
        "paper_chunks",
        CHUNK_EMBEDDINGS,
        "corpus_index",
        "question_evidence",
        "query_summary",
        "collection_answer",
        "paper_answers",
        "cross_paper_questions",
        "relationship_analysis",
        "comparison_table",
        "synthesis",
        "plain_summary",
        "collection_outputs",
        "nightly_digest",
    }
)


def artifact_store(ingest: IngestSettings, paths: HomePaths) -> ArtifactStore:
    """The artifacts of the embedder `ingest` names (and those that are the same for all)."""
    return ArtifactStore(paths.artifacts_dir, embedder_version(ingest, paths), PER_EMBEDDER_ASSETS)


class ArtifactsResource(dg.ConfigurableResource):
    """The per-asset JSON outputs the IO manager writes (collection assets read their papers'
    outputs here, one file each, instead of loading every paper partition through Dagster), and
    the folder of the files people read."""

    base_dir: str
    embedder_id: str
    outputs_root: str

    @classmethod
    def of(cls, ingest: IngestSettings, paths: HomePaths) -> ArtifactsResource:
        """The home's artifacts of the embedder `ingest` names."""
        return cls(
            base_dir=str(paths.artifacts_dir),
            embedder_id=embedder_version(ingest, paths),
            outputs_root=str(paths.outputs_root),
        )

    def store(self) -> ArtifactStore:
        return ArtifactStore(Path(self.base_dir), self.embedder_id, PER_EMBEDDER_ASSETS)

    def outputs_dir(self, collection: str) -> Path:
        return Path(self.outputs_root) / checked_key(collection, "collection")

    def of_papers(
        self, asset: str, paper_ids: Iterable[str], model: type[Model]
    ) -> dict[str, Model]:
        """The asset's output of each paper that has one, in the order given. An output kept
        per embedder counts only for a paper this embedder has embedded: where this embedder
        never wrote it, another embedder's copy is read (a backfill leaves answers unchanged
        when the new embedder finds the same evidence), and that copy's citations hold only if
        the paper's chunks are in this embedder's table. A paper registered while a backfill ran
        is not, until the backfill reaches it."""
        store = self.store()
        return {
            paper_id: store.read([asset], paper_id, model)
            for paper_id in paper_ids
            if store.exists([asset], paper_id)
            and (asset not in PER_EMBEDDER_ASSETS or self._embedded(store, paper_id))
        }

    def _embedded(self, store: ArtifactStore, paper_id: str) -> bool:
        path = [CHUNK_EMBEDDINGS]
        return (
            store.exists(path, paper_id)
            and store.read(path, paper_id, EmbeddingResult).embedder_id == self.embedder_id
        )


class EmbedderResource(dg.ConfigurableResource):
    """The sentence-transformers embedder whose tokens size the chunks and whose vectors fill
    its LanceDB table. The model loads once per process, however many runs build this resource."""

    model: str
    device: str = "cpu"
    batch_size: int = 32
    backend: str = "torch"  # an `EmbedderBackend` (Dagster's config takes no Literal)
    models_dir: str | None = None
    vectors_dir: str | None = None

    @classmethod
    def of(cls, ingest: IngestSettings, paths: HomePaths) -> EmbedderResource:
        """The embedder `ingest` names, its built models and its vectors under the home."""
        return cls(
            model=ingest.embedder,
            device=ingest.embed_device,
            batch_size=ingest.embed_batch_size,
            backend=ingest.embedder_backend,
            models_dir=str(paths.models_dir),
            vectors_dir=str(paths.vectors_dir),
        )

    def embedder(self) -> Embedder:
        return Embedder(
            self.model,
            device=self.device,
            batch_size=self.batch_size,
            backend=self.backend,
            models_dir=Path(self.models_dir) if self.models_dir else None,
        )

    def cached(self, known: Mapping[str, NDArray[np.float32]] | None = None) -> CachedEncoder:
        """The embedder behind the home's vector cache: a text encoded once, by any step or
        process, is looked up after; `known` vectors (chunks' stored ones) are not encoded."""
        embedder = self.embedder()
        cache = (
            VectorCache(Path(self.vectors_dir), embedder.embedder_id) if self.vectors_dir else None
        )
        return CachedEncoder(embedder, cache, known)


class ChunkingResource(dg.ConfigurableResource):
    """Chunk size and overlap in the embedder's tokens; size defaults to what the embedder takes."""

    max_tokens: int | None = None
    overlap_tokens: int = 32


class LanceDBResource(dg.ConfigurableResource):
    """The LanceDB database holding one chunk table per embedder, with its vectors: a folder,
    or an object-store URI (s3://bucket/path) that every step can reach."""

    uri: str

    def store(self) -> ChunkStore:
        return ChunkStore(self.uri)


class RetrievalResource(dg.ConfigurableResource):
    """How evidence is retrieved (the `retrieval` settings: scope, candidates, RRF's k, MMR's
    lambda) and where collections' BM25 indexes are saved."""

    index_dir: str
    scope: Literal["own", "all", "others"] = "own"
    candidates: int = 100
    rerank_candidates: int = 20
    keep: int = 3
    rrf_k: int = 10
    mmr_lambda: float = 0.7

    @classmethod
    def of(cls, retrieval: RetrievalSettings, paths: HomePaths) -> RetrievalResource:
        """Retrieval as `retrieval` sets it, the BM25 indexes under the home."""
        return cls(
            index_dir=str(paths.bm25_dir),
            scope=retrieval.evidence_scope,
            candidates=retrieval.candidates,
            rerank_candidates=retrieval.rerank_candidates,
            keep=retrieval.evidence_per_question,
            rrf_k=retrieval.rrf_k,
            mmr_lambda=retrieval.mmr_lambda,
        )

    def retriever(
        self, store: ChunkStore, embedder: TextEncoder, collection: str, papers: list[str]
    ) -> HybridRetriever:
        """Over the collection's `papers` (the catalog's list), its BM25 index saved under the
        collection's name."""
        return HybridRetriever(
            store,
            embedder,
            collection,
            Path(self.index_dir),
            rrf_k=self.rrf_k,
            mmr_lambda=self.mmr_lambda,
            papers=papers,
        )

    def paper_retriever(
        self, store: ChunkStore, embedder: TextEncoder, paper_id: str
    ) -> HybridRetriever:
        """Over one paper, its BM25 index in memory (a hundred chunks index in milliseconds,
        and the paper's results then depend on no other paper)."""
        return HybridRetriever(
            store,
            embedder,
            paper_id,
            None,
            rrf_k=self.rrf_k,
            mmr_lambda=self.mmr_lambda,
            papers=[paper_id],
        )

    def paper_retrievers(
        self, store: ChunkStore, embedder: TextEncoder, paper_ids: list[str]
    ) -> dict[str, HybridRetriever]:
        """`paper_retriever` for each of `paper_ids`, their chunks read in one query and
        searched in memory: a step's batch of papers costs one read, not a dozen each."""
        return paper_retrievers(
            store, embedder, paper_ids, rrf_k=self.rrf_k, mmr_lambda=self.mmr_lambda
        )


class LLMResource(dg.ConfigurableResource):
    """The model behind the agents: the `llm` settings (routes, the reply cache, usage and the
    budget) and the home whose cache, usage and shared model limits their calls use.

    Without a model (the default) every agent runs on litpipe's offline extractive engine.
    Keys are never configured here: litellm reads them from the environment.
    """

    # The `llm` settings as JSON: Dagster config holds `dg.Config` classes but not the pydantic
    # models of litpipe.settings (nor their Literal and Path fields), which stay below Dagster
    # (docs/design.md, "Layers"). This config is in every run's job snapshot, which the instance
    # stores and the UI shows: an api base's password is *** in it.
    llm_json: str
    # The api base whole, where it holds credentials: a `dg.EnvVar`, so that Dagster stores the
    # variable's name and the process running the step reads the value from its environment
    # (`litpipe ui` and the in-process runs put it there: `settings.credentials_environment`).
    api_base_with_credentials: str | None = None
    home: str

    @classmethod
    def of(cls, llm: LLMSettings, home: HomePaths) -> LLMResource:
        api_base = llm.api_base
        if api_base is None or not holds_credentials(api_base):
            return cls(llm_json=llm.model_dump_json(), home=str(home.home))
        shown = llm.model_copy(update={"api_base": hide_credentials(api_base)})
        return cls(
            llm_json=shown.model_dump_json(),
            api_base_with_credentials=dg.EnvVar(API_BASE_VARIABLE),
            home=str(home.home),
        )

    def settings(self) -> LLMSettings:
        """The `llm` settings, parsed once per process (every step of a run asks for them), as
        a copy that no caller's change reaches another's, with the api base's password as the
        environment of the process running the step has it."""
        parsed = _parsed_llm_settings(self.llm_json)
        whole = self.api_base_with_credentials
        if whole is None:
            return parsed.model_copy(deep=True)
        if hide_credentials(whole) != parsed.api_base:
            raise dg.Failure(
                description=f"{API_BASE_VARIABLE} holds another api base than the run's "
                f"llm.api_base {parsed.api_base}: set it to that one",
                allow_retries=False,
            )
        return parsed.model_copy(update={"api_base": whole}, deep=True)

    def home_paths(self) -> HomePaths:
        """The home's paths the model calls use: its reply cache, usage and model limits."""
        return HomePaths(home=Path(self.home))

    def prompts(self) -> PromptLibrary:
        return PromptLibrary(self.settings().prompts_dir)

    def ledger(self, scope: str) -> UsageLedger:
        """Usage of one step; its calls also count towards its scope's total (and budget)."""
        return UsageLedger(usage_path(self.home_paths(), scope))

    def client_for(
        self, routes: Iterable[Route], ledger: UsageLedger, limits_at: str | None = None
    ) -> LLMClient | None:
        """One client for a step's calls by `routes` (`litpipe.llm.model_client`; its shared
        limits counted at `limits_at`), or None when all of them run offline."""
        return model_client(self.settings(), self.home_paths(), routes, ledger, limits_at)


# The variable an api base with credentials reaches a step's process by.
API_BASE_VARIABLE = environment_name("llm.api_base")


@functools.lru_cache(maxsize=8)
def _parsed_llm_settings(llm_json: str) -> LLMSettings:
    return LLMSettings.model_validate_json(llm_json)


def usage_path(home: HomePaths, scope: str) -> Path:
    """One JSONL file of model calls per scope: a `litpipe run`, or a run launched elsewhere."""
    return home.usage_dir / f"{scope}.jsonl"
