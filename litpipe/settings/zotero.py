"""The `[zotero]` settings: the sensor that syncs a Zotero library."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from litpipe.settings.base import SettingsGroup


class ZoteroSettings(SettingsGroup):
    """Syncing a Zotero library: the sensor that brings in the items added to it."""

    data_dir: Path | None = Field(
        default=None,
        description="Zotero's data directory, the folder holding zotero.sqlite, that the "
        "`zotero_sync_sensor` reads (read-only, as `litpipe run --zotero` does) each tick, "
        "registering the items added or edited since the last one; unset, there is no Zotero "
        "sensor.",
    )
    collections: list[str] = Field(
        default_factory=list,
        description="The Zotero collections it watches, by name or path (`Parent/Child`), "
        "sub-collections included, each into the litpipe collection of its name (slugged, as "
        "`litpipe run --zotero-collection` names it); empty, the whole library, into the "
        "collection `zotero`.",
    )
    sync_interval_s: int = Field(
        default=86_400,
        ge=60,
        description="Seconds between two syncs of the Zotero library; default 86,400: once a "
        "day (nightly), its new papers in that day's digest. While a sync leaves items waiting "
        "(more than `operations.sensor_batch_size`), the next one comes a minute later.",
    )

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, data_dir: Path | None) -> Path | None:
        # Dagster's daemon reads it from its own working directory.
        return data_dir.expanduser().absolute() if data_dir is not None else None
