"""X-Sum's two pipelines compared on one collection: the flat synthesis (pipeline 1, every
paper's answers in one prompt, `synthesis.method = "flat"`) against the relational one (pipeline
2, the relationship analysis first, then the synthesis written from it, litpipe's default).

Both write from the same papers' answers: the main chain runs once (`litpipe.workflows.pipeline`,
in a home of its own under `HOME/eval/synthesis-pipelines`, so the collection's vectors and
replies are kept apart from the user's and a rerun is served from the reply cache), then the flat
writer writes from its answers. Each synthesis is graded as the `synthesis` asset grades it
(`litpipe.evaluation.grading`): the share of its cited sentences the claim judge finds supported
by the passages they cite; the share of the analysis' key insights it carries (completeness,
measured for both against the same analysis); coherence, 1 to 5, by the coherence judge (a model
only). Beside the grades: words, papers cited, and what each pipeline's synthesis stage asked of
the model: pipeline 1 its writer's calls, pipeline 2 the comparative questions', the analysis'
(and its follow-ups') and its writer's. The papers' own stages are the same for both and are not
counted in either.

Which pipeline writes better is a model's question: offline, both writers are the extractive
engine and the figures say what that engine does with each prompt's material, not what a model
would.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.agents.asker import Asker
from litpipe.agents.base import ModelClient
from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.agents.relationship_analysis.analysis import SPLIT_AGENTS
from litpipe.agents.synthesis import SYNTHESIS_AGENTS
from litpipe.evaluation import grading
from litpipe.evaluation.rouge import without_citations
from litpipe.evaluation.runner import evaluation_asker, models
from litpipe.extractive.related_work import count_words
from litpipe.llm.usage import CallRecord, watch_calls
from litpipe.retrieval.support import Encoder
from litpipe.schemas import RelationshipAnalysis, Synthesis
from litpipe.settings import GradingSettings, HomePaths
from litpipe.settings.groups import SettingsGroups
from litpipe.text import counted

PIPELINES = ("flat", "relational")
# The agents of the relational pipeline's synthesis stage, after the papers' answers: the
# comparative questions, the analysis (one call, or its split form) and its follow-ups, and the
# writer with its map-reduce helpers.
_RELATIONAL_STAGE = frozenset(
    {"cross_paper_questions", "analysis", *SPLIT_AGENTS, "followups", *SYNTHESIS_AGENTS}
)
# Every agent the run asks: the main chain's and the judges'.
AGENTS = tuple(
    dict.fromkeys(
        (
            "paper_abstract",
            "paper_questions",
            *ANSWER_AGENTS,
            *AGENT_RERANKERS,
            *_RELATIONAL_STAGE,
            "plain_summary",
            *grading.GRADING_AGENTS,
        )
    )
)


class GradedPipeline(BaseModel):
    """One pipeline's synthesis, its grades and what its synthesis stage asked of the model."""

    pipeline: str = Field(description="`flat` (X-Sum pipeline 1) or `relational` (pipeline 2).")
    engine: str = Field(description="Its writer's engine: `offline` or the model.")
    text: str
    words: int
    papers_cited: int
    cited_sentences: int
    supported: float = Field(description="Share of the cited sentences graded supported.")
    partially_supported: float
    completeness: float = Field(description="Share of the analysis' key insights it carries.")
    coherence: int | None = Field(description="1-5 from the coherence judge; None offline.")
    calls: int = Field(description="Its synthesis stage's model calls, cached replies included.")
    fallbacks: int = Field(
        description="Items of its synthesis stage written offline: the model's reply was unusable."
    )
    tokens_in: int
    tokens_out: int


class SynthesisPipelinesEvaluation(BaseModel):
    dataset: str
    examples: int = Field(description="The papers built, each cited by both syntheses.")
    engine: str
    model: str | None
    embedder: str
    papers_left_out: list[str] = Field(description="Papers that could not be built, with why.")
    pipelines: dict[str, GradedPipeline]
    seconds: float


class _CallsHeard:
    """The model calls this process records while watched, whichever ledger records them."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []

    def expect(self, agent: str, calls: int) -> None:
        """Announcements carry no call."""

    def finished(self, call: CallRecord) -> None:
        self.calls.append(call)


def evaluate_synthesis_pipelines(
    groups: SettingsGroups,
    dataset: Path,
    limit: int | None = None,
    client: ModelClient | None = None,
) -> SynthesisPipelinesEvaluation:
    """Both pipelines' syntheses of the first `limit` papers of `dataset` (a folder of PDFs or an
    abstract table), graded; `client` (a step's) or one of its own when an agent is routed to a
    model. A ValueError when fewer than two papers can be read."""
    from litpipe.ingest.sources import discover
    from litpipe.workflows import pipeline
    from litpipe.workflows.ingest import settings_embedder
    from litpipe.workflows.synthesis import given_passages, write_synthesis

    started = time.perf_counter()
    found = discover(dataset)
    discovery = found.model_copy(update={"sources": found.sources[:limit]})
    sources = discovery.sources
    if len(sources) < 2:
        raise ValueError(f"{dataset}: two papers at least are compared, not {len(sources)}")
    # Its own home, its chunks in their own table there unless they are kept elsewhere
    # (`operations.lancedb_uri`), as `Settings.paths` has them.
    home = groups["paths"].home / "eval" / "synthesis-pipelines"
    lancedb_uri = groups["operations"].lancedb_uri
    paths = HomePaths(home=home, lancedb_dir=lancedb_uri or home / "lancedb")
    relational: SettingsGroups = {**groups, "paths": paths}
    flat = groups["synthesis"].model_copy(update={"method": "flat"})
    asker = evaluation_asker(groups["llm"], paths, AGENTS, client)

    heard = _CallsHeard()
    with watch_calls(heard):
        built = pipeline.run(discovery, relational, asker.client)
        relational_calls = [call for call in heard.calls if call.agent in _RELATIONAL_STAGE]
        flat_from = len(heard.calls)
        answers = {paper.answers.paper_id: paper.answers for paper in built.papers}
        titles = {paper.abstract.paper_id: paper.abstract.title for paper in built.papers}
        analysis = built.relationship_analysis
        flat_synthesis = write_synthesis(
            analysis, answers, None, titles, flat, groups["ingest"], paths, asker
        )
        flat_calls = heard.calls[flat_from:]
        passages = given_passages(answers, built.cross_paper_questions, analysis)
        encoder = settings_embedder(groups["ingest"], paths)
        pipelines = {
            name: _graded(
                name, synthesis, calls, passages, analysis, groups["grading"], asker, encoder
            )
            for name, synthesis, calls in (
                ("flat", flat_synthesis, flat_calls),
                ("relational", built.synthesis, relational_calls),
            )
        }
    return SynthesisPipelinesEvaluation(
        dataset=str(dataset),
        examples=len(built.papers),
        engine=", ".join(dict.fromkeys(p.engine for p in pipelines.values())),
        model=models(asker, AGENTS),
        embedder=groups["ingest"].embedder,
        papers_left_out=[f"{left.paper_id}: {left.reason}" for left in built.left_out],
        pipelines=pipelines,
        seconds=round(time.perf_counter() - started, 3),
    )


def _graded(
    name: str,
    synthesis: Synthesis,
    calls: list[CallRecord],
    passages: dict[str, str],
    analysis: RelationshipAnalysis,
    grading_settings: GradingSettings,
    asker: Asker,
    encoder: Encoder,
) -> GradedPipeline:
    """The synthesis graded as the `synthesis` asset grades it, with its stage's calls."""
    grades = grading.grade_output(
        synthesis.text,
        grading.cited_passages(synthesis.citations, passages),
        grading_settings,
        asker,
        encoder,
    )
    coherence = grading.grade_coherence(synthesis.title, synthesis.text, asker)
    verdicts = [sentence.verdict for sentence in grades.sentences if sentence.verdict != "uncited"]
    share = grading.completeness(
        synthesis.text, analysis, grading_settings.support_threshold, encoder
    ).metadata["share"]
    return GradedPipeline(
        pipeline=name,
        # The writer's engine as it wrote: offline, or its model with any items written offline.
        engine=synthesis.engine,
        text=synthesis.text,
        words=count_words(without_citations(synthesis.text)),
        papers_cited=len({citation.paper_id for citation in synthesis.citations}),
        cited_sentences=len(verdicts),
        supported=_share(verdicts.count("supported"), len(verdicts)),
        partially_supported=_share(verdicts.count("partially_supported"), len(verdicts)),
        completeness=share if isinstance(share, float) else 0.0,
        coherence=coherence.score if coherence is not None else None,
        calls=sum(not call.fallback for call in calls),
        fallbacks=sum(call.fallback for call in calls),
        tokens_in=sum(call.tokens_in for call in calls),
        tokens_out=sum(call.tokens_out for call in calls),
    )


def _share(part: int, whole: int) -> float:
    return round(part / whole, 3) if whole else 0.0


def figures(evaluation: SynthesisPipelinesEvaluation) -> dict[str, float]:
    """Each pipeline's grades and calls, `<pipeline>_<figure>`."""
    found: dict[str, float] = {}
    for name, graded in evaluation.pipelines.items():
        for figure in ("supported", "completeness", "words", "calls", "fallbacks", "tokens_in"):
            found[f"{name}_{figure}"] = float(getattr(graded, figure))
        if graded.coherence is not None:
            found[f"{name}_coherence"] = float(graded.coherence)
    return found


def format_table(evaluation: SynthesisPipelinesEvaluation) -> str:
    """A Markdown table: one row per pipeline, its grades, length and synthesis-stage calls."""
    lines = [
        "X-Sum pipeline 1 (flat) against pipeline 2 (relational) on "
        f"{Path(evaluation.dataset).name}: "
        f"{counted(evaluation.examples, 'paper')}, engine(s) {evaluation.engine}, embedder "
        f"{evaluation.embedder}; the same papers' answers for both",
        "",
        "| pipeline | supported | partially | completeness | coherence | words | papers cited | "
        "synthesis-stage calls | offline fallbacks | tokens in | tokens out |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for graded in evaluation.pipelines.values():
        coherence = "n/a" if graded.coherence is None else f"{graded.coherence} / 5"
        lines.append(
            f"| {graded.pipeline} | {graded.supported:.0%} of {graded.cited_sentences} | "
            f"{graded.partially_supported:.0%} | {graded.completeness:.0%} | {coherence} | "
            f"{graded.words} | {graded.papers_cited} | {graded.calls} | {graded.fallbacks} | "
            f"{graded.tokens_in:,} | "
            f"{graded.tokens_out:,} |"
        )
    lines += [
        "",
        "Supported: the share of cited sentences the claim judge finds supported by the passages "
        "they cite. Completeness: the share of the relationship analysis' key insights the text "
        "carries. Coherence needs a model (n/a: offline).",
    ]
    texts = {graded.text for graded in evaluation.pipelines.values()}
    if len(texts) == 1:
        lines += [
            "",
            "Both wrote the same text: the flat writer's offline engine is the relational "
            "writer's, so only a model's prose tells the pipelines apart.",
        ]
    if evaluation.papers_left_out:
        lines += ["", "Left out: " + "; ".join(evaluation.papers_left_out)]
    return "\n".join(lines) + "\n"
