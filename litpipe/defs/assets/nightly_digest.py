"""The nightly digest: one partition per UTC day (litpipe/workflows/nightly_digest.py builds it)."""

from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from litpipe import text
from litpipe.agents.relationship_analysis.insights import InsightsAgent
from litpipe.agents.relationship_analysis.relationships import RelationshipsAgent
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.partitions import nightly
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.resources import ArtifactsResource
from litpipe.defs.steps import Resources, all_partitions, step_asset
from litpipe.defs.versions import CodeVersion
from litpipe.report import answer_diff as answer_diff_report
from litpipe.report import citations as citations_report
from litpipe.report import digest as digest_report
from litpipe.report import markdown as report_markdown
from litpipe.report import notices
from litpipe.report import page as report_page
from litpipe.report import synthesis_diff as diff_report
from litpipe.retrieval import neighbours
from litpipe.schemas import (
    CitationGraph,
    ComparisonTable,
    Digest,
    PaperAbstract,
    PaperAnswers,
    RelationshipAnalysis,
)
from litpipe.settings import HomePaths, IngestSettings, LLMSettings, SynthesisSettings
from litpipe.workflows import (
    answer_history,
    standing_questions,
    synthesis_diff,
    synthesis_history,
)
from litpipe.workflows import citation_keys as citation_keys_workflow
from litpipe.workflows import nightly_digest as digest_workflow


class ArtifactSources:
    """The digest's reading of earlier stages: their artifacts, one file per paper read only
    for the papers it names (not every partition through the IO manager)."""

    def __init__(self, artifacts: ArtifactsResource) -> None:
        self.artifacts = artifacts

    def abstracts(self, paper_ids: Iterable[str]) -> dict[str, PaperAbstract]:
        return self.artifacts.of_papers("paper_abstract", paper_ids, PaperAbstract)

    def answers(self, paper_ids: Iterable[str]) -> dict[str, PaperAnswers]:
        return self.artifacts.of_papers("paper_answers", paper_ids, PaperAnswers)

    def analysis(self, collection: str) -> RelationshipAnalysis | None:
        store = self.artifacts.store()
        if not store.exists(["relationship_analysis"], collection):
            return None
        return store.read(["relationship_analysis"], collection, RelationshipAnalysis)

    def citations(self, collection: str) -> CitationGraph | None:
        store = self.artifacts.store()
        if not store.exists(["citation_graph"], collection):
            return None
        return store.read(["citation_graph"], collection, CitationGraph)

    def comparison(self, collection: str) -> ComparisonTable | None:
        store = self.artifacts.store()
        if not store.exists(["comparison_table"], collection):
            return None
        return store.read(["comparison_table"], collection, ComparisonTable)


STEP = ModelStep(
    agents=digest_workflow.DIGEST_AGENTS,
    code=CodeVersion(
        agents=(InsightsAgent(), RelationshipsAgent()),
        # Relationship candidates are the insights' nearest neighbours by the embedder.
        modules=(
            digest_workflow,
            digest_report,
            # What changed in each collection's synthesis and standing answers: their
            # histories, diffs and rendering.
            synthesis_history,
            synthesis_diff,
            diff_report,
            answer_history,
            standing_questions,
            answer_diff_report,
            # The works often cited and the citations the day's papers bring.
            citations_report,
            report_page,
            report_markdown,
            notices,
            text,
            neighbours,
            # The keys its files cite the papers by.
            citation_keys_workflow,
        ),
        output=Digest,
        settings=("synthesis.relationship_neighbours",),
        embedder=True,
    ),
)


def build_nightly_digest_assets(
    llm: LLMSettings, synthesis: SynthesisSettings, ingest: IngestSettings, paths: HomePaths
) -> list[dg.AssetsDefinition]:
    @step_asset(
        STEP,
        {"llm": llm, "synthesis": synthesis, "ingest": ingest, "paths": paths},
        resources=("catalog", "artifacts", "embedder"),
        partitions_def=nightly,
        group_name="nightly_digest",
        # For lineage: a day reads the abstracts and answers of its new papers, the insights
        # of their collections' other papers (from the last analysis, else their answers) and
        # their collections' citation graphs and comparison tables.
        deps=all_partitions(
            "paper_abstract",
            "paper_answers",
            "relationship_analysis",
            "citation_graph",
            "comparison_table",
        ),
        description="What changed in each collection's synthesis during the day (its kept "
        "versions under LITPIPE_HOME/history), the papers that arrived on the day (UTC; first "
        "registered in the catalog then), each with its abstract and key insights, and how "
        "their insights relate to those of the papers their collections held before, and the "
        "works often cited, not in the collection, that they cite, the citations they make "
        "or receive, and the rows they added to its comparison table; "
        "LITPIPE_HOME/outputs/digests/"
        "<day>.md and .html. A day without new papers says so.",
    )
    def nightly_digest(context: dg.AssetExecutionContext) -> dg.Output[Digest]:
        window, resources = context.partition_time_window, Resources(context)
        papers_catalog = resources.catalog.catalog()
        arrivals = papers_catalog.arrivals(window.start, window.end)
        # Each collection read once, however many of the day's papers it got.
        collections = dict.fromkeys(c for arrival in arrivals for c in arrival.collections)
        before = {
            collection: papers_catalog.papers(collection, arrived_before=window.start)
            for collection in collections
        }
        with STEP.run(context) as step:
            built = digest_workflow.build_digest(
                window.start.date(),
                arrivals,
                before,
                ArtifactSources(resources.artifacts),
                synthesis,
                step.asker(),
                # Through the home's vector cache: the night's relationship analysis encoded
                # these insights already, so the digest loads no model to find neighbours.
                resources.embedder.cached(),
                history=paths.home,
            )
            built.model_budget = step.nightly_budget_spent(window.start.date())
        # Its files cite each paper by its key, as the collections' files do.
        keys = citation_keys_workflow.citation_keys(
            papers_catalog, resources.artifacts.store(), list(built.titles)
        )
        files = digest_report.write_digest(
            Path(resources.artifacts.outputs_root) / digest_report.DIGESTS_FOLDER, built, keys
        )
        pending = [paper.paper_id for paper in built.papers if not paper.analysed]
        if pending:
            context.log.warning(
                f"{built.day}: {len(pending)} new papers not yet analysed ({', '.join(pending)}): "
                "materialize this partition again once their answers are built"
            )
        return step.output(
            built,
            {
                "papers": len(built.papers),
                "not_yet_analysed": len(pending),
                "relationships": sum(len(c.relationships) for c in built.collections),
                **{
                    path.suffix.lstrip("."): dg.MetadataValue.path(str(path))
                    for path in files.values()
                },
                "preview": markdown_metadata(digest_report.digest_markdown(built, keys)),
            },
        )

    return [nightly_digest]
