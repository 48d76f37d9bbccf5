"""Per-collection comparison table: the papers as rows, the aspects as columns, every cell a
short value citing the passage of its own paper it came from, or "not reported"; graded by
the support check."""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import dagster as dg

from litpipe.agents.asker import Asker
from litpipe.agents.comparison_table.comparison_aspects import ComparisonAspectsAgent
from litpipe.agents.comparison_table.comparison_cells import ComparisonCellsAgent
from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.artifacts import ArtifactStore
from litpipe.defs.check_results import optional_step_result, optional_step_spec
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import collections
from litpipe.defs.steps import SEARCH, Collection, all_partitions, step_asset
from litpipe.defs.versions import GRADING, RERANKER, RETRIEVAL_SETTINGS, CodeVersion
from litpipe.evaluation import comparison_table as grading
from litpipe.evaluation.grading import GRADING_AGENTS
from litpipe.llm.errors import LLMError
from litpipe.schemas import ComparisonTable, PaperAbstract, PaperAnswers
from litpipe.settings import (
    ComparisonSettings,
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    RetrievalSettings,
)
from litpipe.text import counted
from litpipe.workflows import comparison_table as workflow
from litpipe.workflows.optional_steps import not_run
from litpipe.workflows.reranking import settings_reranker

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever

SUPPORT_CHECK = "support"

STEP = ModelStep(
    agents=(*workflow.COMPARISON_AGENTS, *AGENT_RERANKERS, *GRADING_AGENTS),
    code=CodeVersion(
        agents=(ComparisonAspectsAgent(), ComparisonCellsAgent()),
        # Each cell's passages are searched as a paper's evidence is; the cells are graded.
        versions=(RERANKER, GRADING),
        modules=(workflow, grading),
        settings=(
            "comparison.aspects",
            "comparison.max_aspects",
            "comparison.cell_words",
            "comparison.passages_per_aspect",
            *RETRIEVAL_SETTINGS,
        ),
        embedder=True,
    ),
)


def build_comparison_table_assets(
    comparison: ComparisonSettings,
    llm: LLMSettings,
    retrieval: RetrievalSettings,
    grading_settings: GradingSettings,
    ingest: IngestSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    def _built(
        name: str,
        abstracts: dict[str, PaperAbstract],
        answers: dict[str, PaperAnswers],
        retriever_of: "Callable[[str], HybridRetriever]",
        earlier: tuple[list[str], str] | None,
        asker: Asker,
        comparison: ComparisonSettings,
    ) -> ComparisonTable:
        """The table, its aspects first, then a row per paper searched through its own
        retriever (`retriever_of`, one paper's chunks in memory at a time); optional: a model
        error on the aspects leaves it empty, on a paper's row leaves that row out, each
        recorded with why."""
        proposer = asker.engine(ComparisonAspectsAgent.name)
        try:
            if earlier is not None and not comparison.aspects and earlier[1] == proposer:
                aspects, chosen_by = earlier
            else:
                aspects, chosen_by = workflow.comparison_aspects(
                    name, list(abstracts.values()), answers, comparison, asker
                )
        except LLMError as error:
            return ComparisonTable(
                collection=name,
                aspects=[],
                aspects_engine=proposer,
                rows=[],
                not_run=[not_run("comparison_table", error)],
            )
        reranker = settings_reranker(retrieval, ingest, asker)
        rows, failed = [], []
        for paper_id, abstract in abstracts.items():
            try:
                rows.append(
                    workflow.comparison_row(
                        paper_id,
                        abstract.title,
                        retriever_of(paper_id),
                        reranker,
                        aspects,
                        comparison,
                        retrieval,
                        asker,
                    )
                )
            except LLMError as error:
                failed.append(not_run("comparison_table", error, paper_id))
        table = workflow.comparison_table(name, rows, aspects, chosen_by)
        return table.model_copy(update={"not_run": failed})

    @step_asset(
        STEP,
        {
            "comparison": comparison,
            "llm": llm,
            "retrieval": retrieval,
            "grading": grading_settings,
            "ingest": ingest,
            "paths": paths,
        },
        resources=SEARCH,
        partitions_def=collections,
        group_name="comparison_table",
        # Lineage only: the rows read each paper's chunks from LanceDB and its answers and
        # abstract from their artifacts.
        deps=all_partitions("paper_abstract", "paper_answers", "chunk_embeddings"),
        check_specs=[
            optional_step_spec("comparison_table", "comparison_table"),
            dg.AssetCheckSpec(
                SUPPORT_CHECK,
                asset="comparison_table",
                partitions_def=collections,
                description="Every filled cell is supported by the passage it cites (the "
                "support check: each cell against its passages, as a synthesis' sentences "
                "are). A cell that fails is marked on the page; the check warns, never blocks.",
            ),
        ],
        description="The collection's papers side by side: one row per paper, one column per "
        "aspect (`comparison.aspects`, else proposed by the model from the papers, offline "
        "problem, approach, data, evaluation, main result, limitations), each cell at most "
        "`comparison.cell_words` words from the paper's own passages retrieved for that "
        'aspect, citing its passage, or "not reported". A row depends on its paper alone: '
        "a new paper's row is the only one asked, the LLM cache answers the others.",
    )
    def comparison_table(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.Output[ComparisonTable] | dg.AssetCheckResult]:
        collection = Collection.of(context)
        abstracts = collection.outputs("paper_abstract", PaperAbstract)
        if not abstracts:
            raise dg.Failure(
                f"{collection.name}: no paper has an abstract yet; run its papers first",
                allow_retries=False,
            )
        answers = collection.outputs("paper_answers", PaperAnswers, abstracts)
        resources = collection.resources
        store, model = resources.lancedb.store(), resources.embedder.cached()

        def retriever_of(paper_id: str) -> "HybridRetriever":
            return resources.retrieval.paper_retriever(store, model, paper_id)

        earlier = _earlier_aspects(resources.artifacts.store(), collection.name)
        with STEP.run(context) as step:
            asker = step.asker()
            table = _built(
                collection.name, abstracts, answers, retriever_of, earlier, asker, comparison
            )
            judge = step.asker(GRADING_AGENTS)
            table = grading.graded_cells(table, grading_settings, judge, model)
            outcome = grading.cells_support(table, judge.engine("claim_judge"))
        chosen_by = table.aspects_engine
        filled = sum(not cell.not_reported for row in table.rows for cell in row.cells)
        context.log.info(
            f"{collection.name}: {counted(len(table.rows), 'row')} by "
            f"{counted(len(table.aspects), 'aspect')} ({chosen_by}), "
            f"{filled} cells filled, the rest not reported"
        )
        yield step.output(
            table,
            {
                "rows": len(table.rows),
                "aspects": dg.MetadataValue.json(table.aspects),
                "aspects_chosen_by": chosen_by,
                "filled_cells": filled,
                "preview": _preview(table),
            },
        )
        yield optional_step_result("comparison_table", "comparison_table", table.not_run)
        yield dg.AssetCheckResult(
            check_name=SUPPORT_CHECK,
            passed=outcome.passed,
            severity=dg.AssetCheckSeverity.WARN,
            description=outcome.description,
            metadata=dict(outcome.metadata),
        )

    return [comparison_table]


def _earlier_aspects(store: ArtifactStore, collection: str) -> tuple[list[str], str] | None:
    """The aspects of the collection's table as last built, and what chose them: a model's
    proposal is kept while its engine is, so that a new paper adds its row alone (asked
    again, the model would propose from every paper, and a new aspect refills every row)."""
    if not store.exists(["comparison_table"], collection):
        return None
    earlier = store.read(["comparison_table"], collection, ComparisonTable)
    if earlier.aspects_engine == workflow.FIXED_BY_SETTINGS:
        return None
    return earlier.aspects, earlier.aspects_engine


def _preview(table: ComparisonTable, rows: int = 50) -> dg.TableMetadataValue:
    """The table's first rows as Dagster table metadata, for the asset's page in the UI: the
    paper's id and title, then each aspect's value with its markers."""
    columns = ["paper", "title", *table.aspects]
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "paper": row.paper_id,
                    "title": row.title,
                    **{cell.aspect: cell.value for cell in row.cells},
                }
            )
            for row in table.rows[:rows]
        ],
        schema=dg.TableSchema(columns=[dg.TableColumn(name, "string") for name in columns]),
    )
