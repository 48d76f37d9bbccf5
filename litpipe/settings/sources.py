"""Where the settings' values come from, below the arguments given in code: the `LITPIPE_*`
environment, litpipe.toml (or `LITPIPE_CONFIG`'s file), the home's recorded settings
(HOME/settings.toml) and the named preset; each source's flat names moved to their groups, with
a warning each."""

from __future__ import annotations

import functools
import json
import os
import tomllib
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource

from litpipe.settings.base import FlatSettingWarning, SettingsGroup
from litpipe.settings.flat_names import FLAT_NAMES

ENV_PREFIX = "LITPIPE_"


def environment_name(path: str) -> str:
    """The environment variable of the setting at a dotted path (`LITPIPE_LLM__API_BASE`)."""
    return ENV_PREFIX + path.replace(".", "__").upper()


def config_file() -> Path:
    return Path(os.environ.get("LITPIPE_CONFIG", "litpipe.toml"))


# What litpipe records as one home's own defaults: the embedder a gated backfill switched it to
# (`litpipe backfill --gate`), as `[ingest]` embedder and embedder_backend.
HOME_SETTINGS = "settings.toml"
DEFAULT_HOME = Path(".litpipe")


def home_settings_path(home: Path) -> Path:
    """HOME/settings.toml: the settings litpipe recorded for the home."""
    return home / HOME_SETTINGS


def presets_dir() -> Path:
    return Path(str(resources.files("litpipe") / "presets"))


def preset_names() -> list[str]:
    return sorted(path.stem for path in presets_dir().glob("*.toml"))


@functools.cache
def preset_values(name: str) -> dict[str, Any]:
    """A preset's settings, nested by group (litpipe/presets/<name>.toml)."""
    with (presets_dir() / f"{name}.toml").open("rb") as toml:
        return tomllib.load(toml)


def _nest_flat_names(
    values: dict[str, Any], new_spelling: Callable[[str, str, str], str]
) -> dict[str, Any]:
    """`values` with each flat name moved to its group, warning once per name with the
    spelling (from `new_spelling(flat, group, name)`) to use instead. A value the same source
    also gives by its nested name wins over the flat one."""
    nested = dict(values)
    for flat in [key for key in values if key in FLAT_NAMES]:
        group, name = FLAT_NAMES[flat].split(".")
        warnings.warn(
            f"{new_spelling(flat, group, name)} (the flat name {flat!r} is deprecated)",
            FlatSettingWarning,
            stacklevel=2,
        )
        nested[group] = {name: nested.pop(flat), **nested.get(group, {})}
    return nested


class _FlatNamesIn(PydanticBaseSettingsSource):
    """A source whose flat names are moved to their groups (with a warning each)."""

    def __init__(
        self,
        source: PydanticBaseSettingsSource,
        new_spelling: Callable[[str, str, str], str],
    ) -> None:
        super().__init__(source.settings_cls)
        self._source = source
        self._new_spelling = new_spelling

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        values = self._source()
        # A group given as a model (`Settings(llm=LLMSettings(model=...))`) merges with what the
        # other sources set in that group, as a table of the fields it was given would.
        values = {
            key: value.model_dump(exclude_unset=True) if isinstance(value, SettingsGroup) else value
            for key, value in values.items()
        }
        return _nest_flat_names(values, self._new_spelling)


class _FlatEnvironment(PydanticBaseSettingsSource):
    """The `LITPIPE_<FLAT NAME>` environment variables (LITPIPE_LLM_MODEL), nested."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, "", False

    def __call__(self) -> dict[str, Any]:
        by_name = {name.upper(): value for name, value in os.environ.items()}
        given: dict[str, Any] = {}
        for flat in FLAT_NAMES:
            value = by_name.get(f"{ENV_PREFIX}{flat}".upper())
            if value is None:
                continue
            # A dict setting (`agents`) is JSON in the environment, as the nested one is.
            given[flat] = json.loads(value) if value.lstrip().startswith("{") else value
        return _nest_flat_names(
            given,
            lambda flat, group, name: (
                f"set {ENV_PREFIX}{group.upper()}__{name.upper()}, not {ENV_PREFIX}{flat.upper()}"
            ),
        )


class _HomeSettings(PydanticBaseSettingsSource):
    """HOME/settings.toml, the home's recorded defaults (HOME from the sources above it), below
    the environment and litpipe.toml, above the preset."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, "", False

    def __call__(self) -> dict[str, Any]:
        home = Path(self.current_state.get("home") or DEFAULT_HOME).expanduser().resolve()
        path = home_settings_path(home)
        if not path.is_file():
            return {}
        with path.open("rb") as toml:
            return tomllib.load(toml)


class _Preset(PydanticBaseSettingsSource):
    """The named preset's values, below every source that names it (and can override it)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, "", False

    def __call__(self) -> dict[str, Any]:
        name = self.current_state.get("preset")
        # An unknown name is left to the `preset` field's validator, which lists the names.
        return preset_values(name) if name in preset_names() else {}
