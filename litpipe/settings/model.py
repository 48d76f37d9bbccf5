"""`Settings`: litpipe's one settings model, its groups, the order of its sources, and the
paths under its home."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from litpipe.files import checked_key
from litpipe.settings.grading import GradingSettings
from litpipe.settings.ingest import IngestSettings
from litpipe.settings.llm import LLMSettings
from litpipe.settings.operations import OperationsSettings
from litpipe.settings.query_summary import QuerySummarySettings
from litpipe.settings.related_work import RelatedWorkSettings
from litpipe.settings.retrieval import RetrievalSettings
from litpipe.settings.routes import DEFAULT_REPLY_TOKENS, Route
from litpipe.settings.sources import (
    DEFAULT_HOME,
    ENV_PREFIX,
    _FlatEnvironment,
    _FlatNamesIn,
    _HomeSettings,
    _Preset,
    config_file,
    home_settings_path,
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
    def model_limits_path(self) -> Path:
        """Where `llm.rate_limits` and `llm.nightly_budget_usd` are counted when the instance
        is not on PostgreSQL (SQLite: the processes of one machine)."""
        return self.home / "model_limits.sqlite"

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.sqlite"

    @property
    def requests_dir(self) -> Path:
        """A request's inputs (`requests/<asset>/<key>.json`): what a request-partitioned
        asset reads of the partition it materializes."""
        return self.home / "requests"

    @property
    def home_settings_path(self) -> Path:
        """The settings litpipe recorded for this home (`sources.home_settings_path`)."""
        return home_settings_path(self.home)

    @property
    def outputs_root(self) -> Path:
        return self.home / "outputs"

    def outputs_dir(self, collection: str) -> Path:
        return self.outputs_root / checked_key(collection, "collection")
