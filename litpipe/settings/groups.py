"""`SettingsGroups`: the settings as their groups, each by its name in `Settings`, and the home's
`HomePaths` as `paths`. Where the resolved settings enter the graph they are unpacked into these
(`build_definitions(**settings_groups(settings))`); a step's definition is handed the few it
reads (its code version's settings, its model routes, its batch size)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from litpipe.settings.comparison import ComparisonSettings
from litpipe.settings.grading import GradingSettings
from litpipe.settings.ingest import IngestSettings
from litpipe.settings.llm import LLMSettings
from litpipe.settings.operations import OperationsSettings
from litpipe.settings.paths import HomePaths
from litpipe.settings.query_summary import QuerySummarySettings
from litpipe.settings.related_work import RelatedWorkSettings
from litpipe.settings.retrieval import RetrievalSettings
from litpipe.settings.synthesis import SynthesisSettings
from litpipe.settings.zotero import ZoteroSettings

if TYPE_CHECKING:
    from litpipe.settings.model import Settings


class SettingsGroups(TypedDict, total=False):
    """Some or all of the groups, by name: what a definition takes of the settings."""

    paths: HomePaths
    ingest: IngestSettings
    llm: LLMSettings
    retrieval: RetrievalSettings
    synthesis: SynthesisSettings
    grading: GradingSettings
    related_work: RelatedWorkSettings
    comparison: ComparisonSettings
    query_summary: QuerySummarySettings
    operations: OperationsSettings
    zotero: ZoteroSettings


def settings_groups(settings: Settings) -> SettingsGroups:
    """Every group of `settings`, and its home's paths."""
    return SettingsGroups(
        paths=settings.paths,
        ingest=settings.ingest,
        llm=settings.llm,
        retrieval=settings.retrieval,
        synthesis=settings.synthesis,
        grading=settings.grading,
        related_work=settings.related_work,
        comparison=settings.comparison,
        query_summary=settings.query_summary,
        operations=settings.operations,
        zotero=settings.zotero,
    )
