"""Per-collection syntheses (expert and plain-language), their checks, and the files people read.

The checks run inside each writer's step (Dagster's checks on partitioned assets go through
`check_specs`): coverage and citation validity block what follows, because a synthesis that
leaves a paper out unsaid or cites a passage that does not exist is wrong; a paper the writer
left out that only an appended "Also in this collection" sentence cites makes coverage warn, as
does a paper left out for a stated reason, named on the page (one bad paper must not cost the
others their synthesis). The grading checks (support, sentence by sentence; completeness of
the expert synthesis; coherence, by a judge only) warn, or block when `grading.blocking` is
set. The sentence grades are kept on the output, so the page marks the sentences they flag.

The plain-language summary is optional: when its model fails it (a model error), it is empty
and ungraded, its `optional_step` check warns with why, and the page is written all the same.
A check that cannot run (coherence without a model; every check of a plain summary not written)
is not reported: Dagster shows it as not run, and the asset's `skipped_checks` metadata says why.

The judges are part of a writer's code version, since the grades are kept on its output: another
judge (prompt, model, offline bands) regrades, and a model's text then comes from the reply cache.
"""

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
from numpy.typing import NDArray

from litpipe import text
from litpipe.agents.plain_summary import PLAIN_SUMMARY_AGENTS, plain_summary_version
from litpipe.agents.synthesis import SYNTHESIS_AGENTS
from litpipe.defs.check_results import Checked, checked, optional_step_result, optional_step_spec
from litpipe.defs.llm_steps import ModelStep, StepRun
from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import analysis_plots, markdown_metadata, outputs_preview
from litpipe.defs.resources import ArtifactsResource
from litpipe.defs.steps import Resources, step_asset
from litpipe.defs.versions import GRADING, CodeVersion, NamedVersion, versioned_output
from litpipe.evaluation import checks, grading
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped, StoredChunk
from litpipe.evaluation.grading import GRADING_AGENTS
from litpipe.report import bibliography, notices
from litpipe.report import citations as report_citations
from litpipe.report import collection as collection_report
from litpipe.report import comparison as report_comparison
from litpipe.report import graphs as report_graphs
from litpipe.report import manuscript as report_manuscript
from litpipe.report import markdown as report_markdown
from litpipe.report import page as report_page
from litpipe.report.manuscript import UncitedKey
from litpipe.report.synthesis_diff import diff_markdown
from litpipe.schemas import (
    CitationGraph,
    CollectionOutputs,
    ComparisonTable,
    CrossPaperQuestions,
    PaperAbstract,
    PaperAnswers,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.settings import (
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    SynthesisSettings,
)
from litpipe.settings.groups import SettingsGroups
from litpipe.workflows import citation_keys as citation_keys_workflow
from litpipe.workflows import export as export_workflow
from litpipe.workflows import plain_summary as plain_workflow
from litpipe.workflows import synthesis_history
from litpipe.workflows.synthesis import (
    given_chunks,
    given_passages,
    synthesis_version,
    write_synthesis,
)

_CHECKS = {
    "coverage": "The writer cites every paper of the collection at least once. A paper it "
    'left uncited gets an appended "Also in this collection" sentence, counted apart '
    "(`appended` in the metadata, beside `writer_cited`): the check then fails with a warning. "
    "So does a paper left out for a stated reason (`left_out`: its own run failed, or nothing "
    "of it can be cited), named with it. A paper cited nowhere for no stated reason fails it "
    "with an error, which blocks.",
    "citation_validity": "Every citation resolves to a stored chunk of the cited paper, on the "
    "cited page.",
    "completeness": "Every key insight of the relationship analysis (those in a relationship) "
    "is said by a sentence citing its paper (support score against `grading.support_threshold`).",
    **grading.check_descriptions("synthesis", "the passages"),
}
_ALWAYS_BLOCKING = {"coverage", "citation_validity"}
_CHUNK_IDS_PER_READ = 1000
# The expert synthesis is built from the analysis' insights; the plain summary retells it.
_EXPERT_ONLY = {"completeness"}


def _blocking(name: str, grading_settings: GradingSettings) -> bool:
    return name in _ALWAYS_BLOCKING or grading_settings.blocking


def _check_names(asset: str) -> list[str]:
    """The checks of a writer's text."""
    return [name for name in _CHECKS if asset == "synthesis" or name not in _EXPERT_ONLY]


def _check_specs(asset: str, grading_settings: GradingSettings) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name,
            asset=asset,
            partitions_def=collections,
            description=_CHECKS[name],
            blocking=_blocking(name, grading_settings),
        )
        for name in _check_names(asset)
    ] + ([optional_step_spec(asset, "plain_summary")] if asset == "plain_summary" else [])


# The grades are kept on the output: another judge regrades (the text from the reply cache).
SYNTHESIS_STEP = ModelStep(
    agents=SYNTHESIS_AGENTS + GRADING_AGENTS,
    code=CodeVersion(
        versions=(
            NamedVersion(
                "synthesis", lambda groups, asker: synthesis_version(groups["synthesis"], asker)
            ),
            GRADING,
        )
    ),
)
PLAIN_STEP = ModelStep(
    agents=PLAIN_SUMMARY_AGENTS + GRADING_AGENTS,
    code=CodeVersion(
        versions=(
            NamedVersion("plain", lambda _groups, asker: plain_summary_version(asker)),
            GRADING,
        ),
        modules=(plain_workflow,),
    ),
)


def build_synthesis_assets(
    llm: LLMSettings,
    synthesis_settings: SynthesisSettings,
    grading_settings: GradingSettings,
    ingest: IngestSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    groups: SettingsGroups = {
        "llm": llm,
        "synthesis": synthesis_settings,
        "grading": grading_settings,
    }

    @_writer_asset(
        SYNTHESIS_STEP,
        groups,
        "The expert synthesis in three parts (the spine: theme, narrative, every insight; the "
        "evidence grouped by paper; the relationship map), citing every paper; map-reduce by "
        "paper or a tree of cluster summaries when the evidence does not fit.",
    )
    def synthesis(
        context: dg.AssetExecutionContext,
        relationship_analysis: RelationshipAnalysis,
        cross_paper_questions: CrossPaperQuestions,
    ) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
        def write(
            titles: dict[str, str], answers: dict[str, PaperAnswers], step: StepRun
        ) -> Synthesis:
            return write_synthesis(
                relationship_analysis,
                answers,
                cross_paper_questions,
                titles,
                synthesis_settings,
                ingest,
                paths,
                step.asker(SYNTHESIS_AGENTS),
            )

        yield from _written_and_checked(
            "synthesis",
            SYNTHESIS_STEP,
            write,
            context,
            relationship_analysis,
            cross_paper_questions,
            grading_settings,
            paths,
        )

    @_writer_asset(
        PLAIN_STEP,
        groups,
        "The same argument as the synthesis for a general audience, from the same spine, each "
        "paper's contribution still distinguishable and cited. Optional: when the model fails "
        "it, it is empty, ungraded, and its optional_step check says why.",
    )
    def plain_summary(
        context: dg.AssetExecutionContext,
        relationship_analysis: RelationshipAnalysis,
        synthesis: Synthesis,
        cross_paper_questions: CrossPaperQuestions,
    ) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
        def write(
            titles: dict[str, str], answers: dict[str, PaperAnswers], step: StepRun
        ) -> Synthesis:
            return plain_workflow.plain_summary(
                relationship_analysis,
                synthesis,
                titles,
                step.asker(PLAIN_SUMMARY_AGENTS),
            )

        yield from _written_and_checked(
            "plain_summary",
            PLAIN_STEP,
            write,
            context,
            relationship_analysis,
            cross_paper_questions,
            grading_settings,
            paths,
        )

    @step_asset(
        CodeVersion(
            modules=(
                collection_report,
                report_citations,
                bibliography,
                report_comparison,
                report_graphs,
                report_page,
                report_markdown,
                report_manuscript,
                export_workflow,
                citation_keys_workflow,
                notices,
                text,
            ),
            output=CollectionOutputs,
        ),
        {},
        resources=("artifacts", "catalog"),
        partitions_def=collections,
        group_name="synthesis",
        # In backticks: the UI renders descriptions as Markdown and drops a bare <collection>.
        description="The files a person reads, in `LITPIPE_HOME/outputs/<collection>/`: "
        "synthesis.md, plain.md and synthesis.html (the synthesis with clickable citations "
        "showing their passages, the relationship map with its graph and the papers' citations "
        "of one another, the per-paper Q&A, the works often cited and not in the collection), "
        "the pictures relationships.svg and relationship_types.svg, citations.json with "
        "often_cited.bib and often_cited.ris for a reference manager, and the comparison table "
        "as comparison.md and comparison.csv (and a sortable section of synthesis.html); "
        "and export/, the synthesis for a manuscript citing each paper's key: synthesis.tex "
        "with synthesis-standalone.tex, synthesis.pandoc.md, synthesis.bib, synthesis.csl.json.",
    )
    def collection_outputs(
        context: dg.AssetExecutionContext,
        synthesis: Synthesis,
        plain_summary: Synthesis,
        relationship_analysis: RelationshipAnalysis,
        cross_paper_questions: CrossPaperQuestions,
        citation_graph: CitationGraph,
        comparison_table: ComparisonTable,
    ) -> dg.Output[CollectionOutputs]:
        collection, artifacts = context.partition_key, Resources(context).artifacts
        answers = artifacts.of_papers("paper_answers", relationship_analysis.papers, PaperAnswers)
        # The papers left out are named by title too: a retracted one's abstract is still kept.
        left_out = [paper.paper_id for paper in synthesis.left_out]
        titles = _titles(artifacts, [*relationship_analysis.papers, *left_out])
        # The files cite each paper by its key, as the exports do (those read before keys were
        # given get theirs now).
        keys = citation_keys_workflow.citation_keys(
            Resources(context).catalog.catalog(),
            artifacts.store(),
            list(dict.fromkeys([*relationship_analysis.papers, *synthesis.papers, *left_out])),
        )
        content = collection_report.CollectionContent(
            synthesis,
            plain_summary,
            relationship_analysis,
            answers,
            cross_paper_questions,
            titles,
            given_chunks(answers, cross_paper_questions, relationship_analysis),
            citation_graph,
            comparison_table,
            keys,
        )
        written = collection_report.write_collection_outputs(
            artifacts.outputs_dir(collection), content
        )
        written |= _exports(
            context, synthesis, relationship_analysis, artifacts.outputs_dir(collection)
        )
        outputs = CollectionOutputs(
            collection=collection, files={name: str(path) for name, path in written.items()}
        )
        return versioned_output(
            outputs,
            {
                **{name: dg.MetadataValue.path(path) for name, path in outputs.files.items()},
                "preview": outputs_preview(synthesis, relationship_analysis, outputs.files),
                **analysis_plots(relationship_analysis, titles),
            },
        )

    return [synthesis, plain_summary, collection_outputs]


def _exports(
    context: dg.AssetExecutionContext,
    synthesis: Synthesis,
    analysis: RelationshipAnalysis,
    outputs_dir: Path,
) -> dict[str, Path]:
    """The synthesis exported for a manuscript (`BUILT_EXPORTS`: LaTeX and Pandoc, each paper
    cited by its key) into `export/`, by name (`export/synthesis.tex`, ...). A paper cited
    without a key leaves them out, with a warning: the pages are written all the same."""
    resources = Resources(context)
    files: dict[str, Path] = {}
    try:
        for to in export_workflow.BUILT_EXPORTS:
            for path in export_workflow.export_synthesis(
                to,
                synthesis,
                analysis,
                resources.catalog.catalog(),
                resources.artifacts.store(),
                outputs_dir / export_workflow.EXPORT_FOLDER,
                "synthesis",
            ):
                files[f"{export_workflow.EXPORT_FOLDER}/{path.name}"] = path
    except UncitedKey as missing:
        context.log.warning(f"the synthesis is not exported: {missing}")
        return {}
    return files


def _writer_asset(
    step: ModelStep, groups: SettingsGroups, description: str
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """A writer's asset (`_written_and_checked`): the checks of its text, which its step may
    leave unreported when it cannot run them."""

    def decorate(compute: Callable[..., Any]) -> dg.AssetsDefinition:
        return step_asset(
            step,
            groups,
            resources=("artifacts", "embedder", "lancedb"),
            checks_may_skip=True,
            partitions_def=collections,
            group_name="synthesis",
            check_specs=_check_specs(compute.__name__, groups["grading"]),
            description=description,
        )(compute)

    return decorate


def _written_and_checked(
    asset: str,
    model_step: ModelStep,
    write: Callable[[dict[str, str], dict[str, PaperAnswers], StepRun], Synthesis],
    context: dg.AssetExecutionContext,
    analysis: RelationshipAnalysis,
    comparative: CrossPaperQuestions,
    grading_settings: GradingSettings,
    paths: HomePaths,
) -> Iterator[dg.Output[Synthesis] | dg.AssetCheckResult]:
    """A writer's step: the text written and graded, then its checks (those that could not
    run named in the output's metadata, not reported)."""
    resources = Resources(context)
    answers = resources.artifacts.of_papers("paper_answers", analysis.papers, PaperAnswers)
    titles = _titles(resources.artifacts, analysis.papers)
    passages = given_passages(answers, comparative, analysis)
    # The collection's embedder scores support offline: its threshold is calibrated for MiniLM.
    # The passages are stored chunks, whose vectors LanceDB holds: only sentences are encoded.
    encoder = resources.embedder.cached(known=_chunk_vectors(resources, list(passages)))
    with model_step.run(context) as step:
        judge = step.asker(GRADING_AGENTS)
        written = write(titles, answers, step)
        if written.not_run is not None:  # an optional writer whose model failed: nothing to grade
            skipped = CheckSkipped(reason=written.not_run.line())
            not_run = _checked(asset, dict.fromkeys(_check_names(asset), skipped), grading_settings)
            yield _output(step, written, analysis, titles, not_run.metadata())
            yield optional_step_result(asset, written.not_run.step, [written.not_run])
            return
        grades, graded = grading.graded_checks(
            written.text,
            grading.cited_passages(written.citations, passages),
            f"{written.audience} synthesis",
            grading_settings,
            judge,
            encoder,
            title=written.title,
        )
    written = written.model_copy(update={"grades": grades})
    outcomes: dict[str, CheckOutcome | CheckSkipped] = {
        "coverage": checks.coverage(written),
        "citation_validity": checks.citation_validity(written, _stored(resources, written)),
        **graded,
    }
    if asset == "synthesis":
        outcomes["completeness"] = grading.completeness(
            written.text, analysis, grading_settings.support_threshold, encoder
        )
    # The expert synthesis' page in the UI shows the pictures of the analysis it is built on,
    # and what changed since the version kept before it (`synthesis_history`).
    plots = analysis_plots(analysis, titles) if asset == "synthesis" else {}
    if asset == "synthesis":
        plots["changes"] = markdown_metadata(_changes(paths.home, written, analysis))
    results = _checked(asset, outcomes, grading_settings)
    yield _output(step, written, analysis, titles, {**plots, **results.metadata()})
    yield from results.results
    if asset == "plain_summary":
        yield optional_step_result(asset, "plain_summary", [])


def _output(
    step: StepRun,
    written: Synthesis,
    analysis: RelationshipAnalysis,
    titles: Mapping[str, str],
    more: Mapping[str, dg.MetadataValue],
) -> dg.Output[Synthesis]:
    notice = notices.markdown_lines(notices.synthesis_notice(written, analysis))
    return step.output(
        written,
        {
            "engine": written.engine,
            "pattern": written.pattern,
            "papers": len(written.papers),
            "citations": len(written.citations),
            "words": len(written.text.split()),
            "preview": markdown_metadata(
                "\n".join([f"# {written.title}", "", *notice, written.text])
            ),
            # The UI names papers by id: the table says which paper each id is.
            "paper_titles": markdown_metadata(_titles_table(written.papers, titles)),
            **more,
        },
    )


def _changes(home: Path, written: Synthesis, analysis: RelationshipAnalysis) -> str:
    """Keeps the synthesis in the collection's history (unless the version kept last is the
    same: then nothing changed) and says what changed from the version kept before it."""
    kept = synthesis_history.entries(home, written.collection, "synthesis")
    previous = synthesis_history.read(kept[-1]) if kept else None
    current = synthesis_history.record(home, written, analysis) or previous
    # At most 50 items of a list: a first version's every sentence is "added".
    return diff_markdown(
        synthesis_history.diff_between(home, written.collection, previous, current), limit=50
    )


def _titles_table(papers: list[str], titles: Mapping[str, str]) -> str:
    cells = {paper_id: titles.get(paper_id, "").replace("|", "\\|") for paper_id in papers}
    rows = [f"| {paper_id} | {title} |" for paper_id, title in cells.items()]
    return "\n".join(["| paper | title |", "|---|---|", *rows])


def _titles(artifacts: ArtifactsResource, papers: list[str]) -> dict[str, str]:
    return {
        paper_id: abstract.title
        for paper_id, abstract in artifacts.of_papers(
            "paper_abstract", papers, PaperAbstract
        ).items()
    }


def _chunk_vectors(resources: Resources, chunk_ids: list[str]) -> dict[str, NDArray[np.float32]]:
    """The stored vectors of the chunks `chunk_ids`, by their text (read a slice at a time: a
    filter naming thousands of ids at once is slow to plan)."""
    store, embedder_id = resources.lancedb.store(), resources.embedder.embedder().embedder_id
    vectors: dict[str, NDArray[np.float32]] = {}
    for start in range(0, len(chunk_ids), _CHUNK_IDS_PER_READ):
        rows = store.chunk_rows(
            embedder_id,
            ["text", "vector"],
            chunk_ids=chunk_ids[start : start + _CHUNK_IDS_PER_READ],
        )
        for chunk_text, vector in zip(
            rows.column("text").to_pylist(), rows.column("vector").to_pylist(), strict=True
        ):
            vectors[chunk_text] = np.asarray(vector, dtype=np.float32)
    return vectors


def _stored(resources: Resources, written: Synthesis) -> dict[str, StoredChunk]:
    """The stored chunks of the cited papers of the collection, as the citation check compares
    them (a cited paper the collection does not hold has none)."""
    cited = {citation.paper_id for citation in written.citations}
    rows = resources.lancedb.store().chunk_rows(
        resources.embedder.embedder().embedder_id,
        ["chunk_id", "paper_id", "page_start", "page_end"],
        paper_ids=sorted(cited.intersection(written.papers)),
    )
    return checks.stored_chunks(rows.to_pylist())


def _checked(
    asset: str,
    outcomes: Mapping[str, CheckOutcome | CheckSkipped],
    grading_settings: GradingSettings,
) -> Checked:
    return checked(asset, outcomes, lambda name: _blocking(name, grading_settings))
