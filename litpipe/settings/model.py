"""`Settings`: litpipe's one settings model, its groups, the order of its sources, and the
paths under its home (`paths`)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from litpipe.schemas.standing_questions import StandingQuestionEntry
from litpipe.settings.comparison import ComparisonSettings
from litpipe.settings.grading import GradingSettings
from litpipe.settings.ingest import IngestSettings
from litpipe.settings.llm import LLMSettings
from litpipe.settings.operations import OperationsSettings
from litpipe.settings.paths import HomePaths
from litpipe.settings.query_summary import QuerySummarySettings
from litpipe.settings.related_work import RelatedWorkSettings
from litpipe.settings.retrieval import RetrievalSettings
from litpipe.settings.routes import DEFAULT_REPLY_TOKENS, Route
from litpipe.settings.sources import (
    DEFAULT_HOME,
    ENV_PREFIX,
    _GroupsAsTables,
    _HomeSettings,
    _Preset,
    _TomlFile,
    config_file,
    preset_names,
)
from litpipe.settings.synthesis import SynthesisSettings
from litpipe.settings.zotero import ZoteroSettings


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid"
    )

    home: Path = Field(
        default=DEFAULT_HOME,
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
    comparison: ComparisonSettings = Field(default_factory=ComparisonSettings)
    query_summary: QuerySummarySettings = Field(default_factory=QuerySummarySettings)
    operations: OperationsSettings = Field(default_factory=OperationsSettings)
    zotero: ZoteroSettings = Field(default_factory=ZoteroSettings)
    questions: list[StandingQuestionEntry] = Field(
        default_factory=list,
        description="Standing questions (`[[questions]]` tables of litpipe.toml: `collection`, "
        "`question`, optional `id`), each answered again when its collection changes.",
    )

    @field_validator("home", "dagster_home", mode="after")
    @classmethod
    def _absolute_home(cls, home: Path) -> Path:
        # Dagster runs steps in other working directories; an absolute home means one place.
        return home.expanduser().resolve()

    @field_validator("questions", mode="after")
    @classmethod
    def _distinct_names(cls, tables: list[StandingQuestionEntry]) -> list[StandingQuestionEntry]:
        names = [table.id or table.request().key for table in tables]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"[[questions]]: two tables name {', '.join(repeated)}")
        return tables

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
        return (
            _GroupsAsTables(init_settings),
            env_settings,
            _TomlFile(settings_cls, config_file()),
            _HomeSettings(settings_cls),
            _Preset(settings_cls),
        )

    def value(self, path: str) -> Any:
        """The setting at a dotted path (`retrieval.candidates`)."""
        return functools.reduce(getattr, path.split("."), self)

    def route(self, agent: str, reply_tokens: int = DEFAULT_REPLY_TOKENS) -> Route:
        """`LLMSettings.route`."""
        return self.llm.route(agent, reply_tokens)

    @property
    def paths(self) -> HomePaths:
        """Where this home keeps each kind of state."""
        return HomePaths(
            home=self.home,
            dagster_home=self.dagster_home,
            lancedb_dir=self.operations.lancedb_uri or self.home / "lancedb",
            watched_roots=tuple(
                self.corpus_roots if self.corpus_roots is not None else [self.home / "inbox"]
            ),
        )
