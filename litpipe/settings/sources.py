"""Where the settings' values come from, below the arguments given in code: the `LITPIPE_*`
environment, litpipe.toml (or `LITPIPE_CONFIG`'s file), the home's recorded settings
(HOME/settings.toml) and the named preset; a key of litpipe.toml that names no setting refused
with the nearest ones."""

from __future__ import annotations

import difflib
import functools
import os
import tomllib
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource

from litpipe.settings.base import SettingsGroup

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


def setting_fields(settings_cls: type[BaseModel]) -> Iterator[tuple[str, FieldInfo, str | None]]:
    """Each setting's dotted path (`retrieval.candidates`), field and group (None at the top
    level), in the model's order."""
    for name, field in settings_cls.model_fields.items():
        group = field.annotation
        if isinstance(group, type) and issubclass(group, SettingsGroup):
            for inner, inner_field in group.model_fields.items():
                yield f"{name}.{inner}", inner_field, name
        else:
            yield name, field, None


def nearest(key: str, names: Sequence[str]) -> list[str]:
    """The names (at most three) nearest to `key`, whole or by its last dotted part, that part
    without its first word too (`method` finds `synthesis.method`, `llm_model` `llm.model`,
    `mais_acus` `query_summary.acus`)."""
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    last_parts = list(dict.fromkeys(name.rpartition(".")[2] for name in names))
    last = key.rpartition(".")[2]
    near = [
        found
        for part in dict.fromkeys([last, last.partition("_")[2]])
        if part
        for found in difflib.get_close_matches(part, last_parts, n=3, cutoff=0.75)
    ]
    by_part = [name for part in near for name in names if name.rpartition(".")[2] == part]
    return list(dict.fromkeys([*close, *by_part]))[:3]


def did_you_mean(names: Sequence[str]) -> str:
    """`; did you mean a, b or c?`, or nothing for no names."""
    if not names:
        return ""
    if len(names) == 1:
        return f"; did you mean {names[0]}?"
    return f"; did you mean {', '.join(names[:-1])} or {names[-1]}?"


class UnknownSettingError(ValueError):
    """A key that names no setting (in `--set`, or in litpipe.toml); the message names the
    closest ones."""


def unknown_setting(where: str, key: str, paths: Sequence[str]) -> UnknownSettingError:
    """`<where>: no such setting`, with the settings (of `paths`) nearest to `key`."""
    suggestions = did_you_mean(nearest(key, paths)) or " (`litpipe config` lists them all)"
    return UnknownSettingError(f"{where}: no such setting{suggestions}")


class _GroupsAsTables(PydanticBaseSettingsSource):
    """The arguments given in code, a group given as a model (`Settings(llm=LLMSettings(...))`)
    taken as the table of the fields it was given: it merges with what the other sources set
    in that group, as a table would."""

    def __init__(self, source: PydanticBaseSettingsSource) -> None:
        super().__init__(source.settings_cls)
        self._source = source

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        return {
            key: value.model_dump(exclude_unset=True) if isinstance(value, SettingsGroup) else value
            for key, value in self._source().items()
        }


class _TomlFile(PydanticBaseSettingsSource):
    """litpipe.toml (or `LITPIPE_CONFIG`'s file). A key naming no setting is refused naming
    the file and the nearest settings: a name from before the settings were grouped
    (`llm_model`) finds where the setting is now (`llm.model`)."""

    def __init__(self, settings_cls: type[BaseSettings], toml: Path) -> None:
        super().__init__(settings_cls)
        self._toml = toml
        self._source = TomlConfigSettingsSource(settings_cls, toml_file=toml)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._source.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        values = self._source()
        known = [path for path, _, _ in setting_fields(self.settings_cls)]
        groups = {path.partition(".")[0] for path in known if "." in path}
        for key, value in values.items():
            given = (
                [f"{key}.{name}" for name in value]
                if key in groups and isinstance(value, dict)
                else [key]
            )
            for path in [path for path in given if path not in known]:
                raise unknown_setting(f"{self._toml}: {path}", path, known)
        return values


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
