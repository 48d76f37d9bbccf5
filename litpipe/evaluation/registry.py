"""The `litpipe eval` datasets: one entry per evaluation, read by the CLI and the Dagster assets.

Each entry names a pure-Python evaluation (`litpipe/evaluation/<module>.py`): its function
`evaluate(groups, dataset, limit, client)` (`groups`: the settings' groups, of which it
unpacks those it reads) returning a pydantic model (`client`: the step's,
so its model calls count in the run's usage), the Markdown table of that model, and the flat
numeric figures tracked over time (each becomes float metadata of the asset's
materializations, which the Dagster UI plots). The evaluation model must have the fields
`dataset`, `examples`, `engine` and `seconds`, and may have `model` and `embedder`: those are the
run's facts, written beside the figures.

`litpipe eval <name> --dataset PATH [--limit N] [--out DIR]` materializes the asset
`eval_<name>` (group "evaluation") in-process, which writes `<stem>.md` and `<stem>.json`.
An evaluation whose work runs other Dagster runs (`litqa` asks `query_summary` partitions;
`scholarqa` and `litqa --collection-wide` ask `collection_answer` partitions) has no `evaluate`:
a run must not launch runs, so its own command does the work and reports the materialization of
an external asset of the same key (see `litpipe/defs/assets/evaluation.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.agents.base import ModelClient
from litpipe.evaluation import (
    litqa,
    litqa_collection_wide,
    related_work,
    scholarqa,
    scholarqa_answer_modes,
    synthesis_pipelines,
    tldr,
)
from litpipe.settings.groups import SettingsGroups

# The facts of a run, besides its figures, in the order the CLI's JSON line gives them.
FACTS = ("dataset", "examples", "engine", "model", "embedder")


@dataclass(frozen=True)
class RegisteredEvaluation:
    """One `litpipe eval` dataset."""

    name: str
    """The CLI's name (`litpipe eval <name>`); the asset is `eval_<name with _>`."""
    description: str
    """One line: what is measured on what (the CLI's help and the asset's description)."""
    dataset_help: str
    """What `--dataset` must be (its format)."""
    default_dataset: str
    """Where the full dataset lies under ../shared/data (documentation and benchmarks only)."""
    stem: str
    """The written files: `<stem>.md` and `<stem>.json`."""
    result: type[BaseModel]
    """The evaluation's model, as `evaluate` returns it and `<stem>.json` holds it."""
    table: Callable[[Any], str]
    """The Markdown table; its first line says the dataset, examples, engine and model."""
    figures: Callable[[Any], dict[str, float]]
    """The numbers tracked over time, e.g. `{"litpipe_rouge1": 0.31, ...}`."""
    evaluate: Callable[[SettingsGroups, Path, int | None, ModelClient | None], BaseModel] | None = (
        None
    )
    """None when the work runs Dagster runs itself: its command reports the materialization."""
    agents: tuple[str, ...] = ()
    """The agents its run asks (their routes put its step in the `llm` pool, with retries)."""
    input_errors: tuple[type[Exception], ...] = (OSError, ValueError)
    """Exceptions of `evaluate` that blame the dataset or the arguments (the CLI exits 2); a
    pydantic ValidationError and the workflows' input errors are ValueErrors."""
    runs: str = "query_summary"
    """With no `evaluate`: the asset whose partitions its command materializes."""
    command: str = ""
    """The command's words after `litpipe eval`, where they are not `name`."""

    @property
    def asset_name(self) -> str:
        return "eval_" + self.name.replace("-", "_")

    @property
    def cli(self) -> str:
        """The command, as typed: `litpipe eval <name>` or its `command`."""
        return f"litpipe eval {self.command or self.name}"


def run_facts(evaluation: BaseModel) -> dict[str, str | int]:
    """The dataset, examples, engine and, where the evaluation has them, model and embedder."""
    return {
        name: getattr(evaluation, name)
        for name in FACTS
        if getattr(evaluation, name, None) is not None
    }


EVALUATIONS: dict[str, RegisteredEvaluation] = {
    entry.name: entry
    for entry in (
        RegisteredEvaluation(
            name="related-work",
            description="ROUGE of related-work sections against gold paragraphs, next to lead, "
            "LexRank and TextRank (CiteBench's Multi-XScience JSONL)",
            dataset_help="JSONL (or a folder holding one) with query_abstract, ref_abstracts, "
            "gold_related_work",
            default_dataset="citebench-related-work/multixscience_sample50.jsonl",
            stem=related_work.MARKDOWN_FILE.removesuffix(".md"),  # its files, as before
            result=related_work.RelatedWorkEvaluation,
            table=related_work.format_table,
            figures=related_work.figures,
            evaluate=related_work.evaluate_related_work,
            agents=("search_queries", "debate", "related_work_plan", "related_work"),
        ),
        RegisteredEvaluation(
            name="tldr",
            description="ROUGE of one-sentence summaries of single papers (title and abstract) "
            "against SciTLDR's gold TL;DRs, next to lead-1 and TextRank-1",
            dataset_help="SciTLDR-A JSONL (source, target, title) or a CSV with "
            "id,title,abstract,tldr_first,tldrs_all",
            default_dataset="scitldr/scitldr_a_test_titles_abstracts.csv",
            stem="tldr_eval",
            result=tldr.TldrEvaluation,
            table=tldr.format_table,
            figures=tldr.figures,
            evaluate=tldr.evaluate_tldr,
            agents=("tldr",),
        ),
        RegisteredEvaluation(
            name="scholarqa",
            description="ScholarQA's expert questions, each asked of its paper snippets "
            "ingested as a collection (as `litpipe ask --collection` asks): ROUGE against the "
            "expert answer and citation precision and recall of the expert's papers, next to "
            "lead, LexRank and TextRank",
            dataset_help="JSONL with id, query, gold_answer (citing papers as [n]) and papers "
            "(title, url, year, text)",
            default_dataset="scholarqa-multi/scholarqa_multi.jsonl",
            stem="scholarqa_eval",
            result=scholarqa.ScholarQAEvaluation,
            table=scholarqa.format_table,
            figures=scholarqa.figures,
            runs="collection_answer",
        ),
        RegisteredEvaluation(
            name="scholarqa-answer-modes",
            description="ScholarQA's expert questions answered in each answer mode (single-view, "
            "MASS-RAG multi-view, multi-view answers) from the same passages: ROUGE against the "
            "expert answer, citation precision and recall, model calls and time per mode",
            dataset_help="JSONL with id, query, gold_answer (citing papers as [n]) and papers "
            "(title, url, year, text)",
            default_dataset="scholarqa-multi/scholarqa_multi.jsonl",
            stem="scholarqa_answer_modes",
            result=scholarqa_answer_modes.AnswerModesEvaluation,
            table=scholarqa_answer_modes.format_table,
            figures=scholarqa_answer_modes.figures,
            evaluate=scholarqa_answer_modes.evaluate_answer_modes,
            agents=ANSWER_AGENTS,
        ),
        RegisteredEvaluation(
            name="synthesis-pipelines",
            description="X-Sum's pipeline 1 (flat) against pipeline 2 (relational) on one "
            "collection: each expert synthesis graded for support, completeness and coherence, "
            "with its synthesis stage's model calls",
            dataset_help="a folder of PDFs or an abstract table (.csv/.jsonl with id,title,"
            "abstract), as `litpipe run` reads it; --limit N takes its first N papers",
            default_dataset="litqa2-cc-by/pdfs",
            stem="synthesis_pipelines",
            result=synthesis_pipelines.SynthesisPipelinesEvaluation,
            table=synthesis_pipelines.format_table,
            figures=synthesis_pipelines.figures,
            evaluate=synthesis_pipelines.evaluate_synthesis_pipelines,
            agents=synthesis_pipelines.AGENTS,
        ),
        RegisteredEvaluation(
            name="litqa",
            description="LitQA2: does each question's query-focused summary of its own paper "
            "state the ideal answer (or a distractor)?",
            dataset_help="JSONL with id, question, ideal, distractors, pdf_file (LitQA2's format)",
            default_dataset="litqa2-cc-by/litqa2_subset_with_pdfs.jsonl",
            stem="litqa_eval",
            result=litqa.LitQAEvaluation,
            table=litqa.format_table,
            figures=litqa.figures,
        ),
        RegisteredEvaluation(
            name="litqa-collection-wide",
            description="LitQA2 asked of one collection of all the questions' papers (as "
            "`litpipe ask --collection` asks): accuracy (the ideal answer stated), precision "
            "(right among those answered), the share declined, answers citing the question's "
            "own paper",
            dataset_help="JSONL with id, question, ideal, distractors, pdf_file (LitQA2's format)",
            default_dataset="litqa2-cc-by/litqa2_subset_with_pdfs.jsonl",
            stem="litqa_collection_wide",
            result=litqa_collection_wide.CollectionWideEvaluation,
            table=litqa_collection_wide.format_table,
            figures=litqa_collection_wide.figures,
            runs="collection_answer",
            command="litqa --collection-wide",
        ),
    )
}
