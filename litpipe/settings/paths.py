"""`HomePaths`: where a home keeps each kind of state, for code that needs a folder or a file
of the home and none of the settings (`Settings.paths`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from litpipe.files import checked_key
from litpipe.settings.sources import home_settings_path


class HomePaths(BaseModel):
    """The folders and files under a litpipe home, and the places settings may move out of it
    (the Dagster instance's folder, the chunk tables' store, the watched folders), by default
    under it as `Settings` has them."""

    model_config = ConfigDict(frozen=True)

    home: Path
    dagster_home: Path = Field(default_factory=lambda fields: fields["home"] / "dagster")
    # The chunk tables' folder, or their object-store URI (kept a string: a Path would fold
    # `s3://` into `s3:/`).
    lancedb_dir: Path | str = Field(default_factory=lambda fields: fields["home"] / "lancedb")
    # The folders the new-paper sensor watches.
    watched_roots: tuple[Path, ...] = Field(
        default_factory=lambda fields: (fields["home"] / "inbox",)
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
    def usage_dir(self) -> Path:
        """One JSONL file of model calls per usage scope (`litpipe.llm.usage`)."""
        return self.home / "usage"

    @property
    def home_settings_path(self) -> Path:
        """The settings litpipe recorded for this home (`sources.home_settings_path`)."""
        return home_settings_path(self.home)

    @property
    def outputs_root(self) -> Path:
        return self.home / "outputs"

    def outputs_dir(self, collection: str) -> Path:
        return self.outputs_root / checked_key(collection, "collection")
