"""Every setting by its dotted name (`synthesis.method`), as the command line reaches it: the
`--set KEY=VALUE` assignments, the effective value of each setting and where it came from
(`litpipe config`), and a commented `litpipe.toml` (`litpipe init`).

The names and their documentation come from the pydantic models of `litpipe.settings`, so a
setting added there is reachable here with nothing else to write.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from litpipe.settings import (
    Settings,
    config_file,
    environment_name,
    preset_values,
    setting_fields,
    unknown_setting,
)
from litpipe.url_credentials import hide_credentials

Source = Literal["default", "preset", "home", "toml", "environment", "flag"]


@dataclass(frozen=True)
class Setting:
    """One setting: its dotted name, its field and the group model holding it."""

    path: str
    field: FieldInfo
    group: str | None

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def environment_name(self) -> str:
        return environment_name(self.path)

    @property
    def type_name(self) -> str:
        """The type as a reader writes it: `int`, `'relational' | 'flat'`, `str | None`."""
        return _type_name(self.field.annotation)


def settings_fields() -> list[Setting]:
    """Every setting of `Settings`, top-level ones first, then each group's in order."""
    found = [Setting(path, field, group) for path, field, group in setting_fields(Settings)]
    return sorted(found, key=lambda setting: setting.group is not None)


def settings_by_path() -> dict[str, Setting]:
    return {setting.path: setting for setting in settings_fields()}


def assignments(items: list[str]) -> dict[str, Any]:
    """`--set KEY=VALUE` items as `Settings` takes them, nested by group. A value is a string
    for pydantic to convert (`5`, `true`, `flat`), or JSON where it opens a list or a table
    (`llm.agents={"synthesis": {"model": "gpt-4o"}}`). A ValueError names a malformed item or
    an unknown key with the closest names."""
    known = settings_by_path()
    nested: dict[str, Any] = {}
    for item in items:
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE, e.g. synthesis.method=flat")
        if key not in known:
            raise unknown_setting(f"--set {key}", key, list(known))
        parsed: Any = value
        if value.lstrip()[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"--set {key}: not JSON ({error.msg})") from error
        group, _, name = key.rpartition(".")
        (nested.setdefault(group, {}) if group else nested)[name] = parsed
    return nested


def origins(settings: Settings, flags: Mapping[str, Any]) -> dict[str, Source]:
    """Where each setting's value came from, by the order `Settings` reads its sources: a flag
    (or `--set`), the environment, litpipe.toml, the home's settings.toml (what a gated backfill
    recorded), the preset, or the default."""
    toml = _paths_of(_toml_values())
    home = _paths_of(_home_values(settings))
    preset = _paths_of(preset_values(settings.preset)) if settings.preset else {}
    environment = _environment_paths()
    given = _paths_of(flags)
    found: dict[str, Source] = {}
    for setting in settings_fields():
        path = setting.path
        if path in given:
            found[path] = "flag"
        elif path in environment:
            found[path] = "environment"
        elif path in toml:
            found[path] = "toml"
        elif path in home:
            found[path] = "home"
        elif path in preset:
            found[path] = "preset"
        else:
            found[path] = "default"
    return found


def effective(settings: Settings) -> Iterator[tuple[Setting, Any]]:
    """Each setting with its value in `settings`, as JSON would write it."""
    dumped = settings.model_dump(mode="json")
    for setting in settings_fields():
        value: Any = dumped
        for part in setting.path.split("."):
            value = value[part]
        yield setting, value


def config_lines(settings: Settings, flags: Mapping[str, Any]) -> list[str]:
    """`litpipe config`: one line per setting, `path = value  # source`, values as JSON, a
    password in a URL hidden."""
    source = origins(settings, flags)
    width = max(len(setting.path) for setting in settings_fields())
    return [
        f"{setting.path:<{width}} = {hide_credentials(json.dumps(value))}  # {source[setting.path]}"
        for setting, value in effective(settings)
    ]


def commented_toml() -> str:
    """A `litpipe.toml` with every setting commented out at its default, each after its
    description: a user uncomments what they change."""
    lines = [
        "# litpipe.toml: litpipe's settings for commands run in this folder (or the file",
        "# $LITPIPE_CONFIG names). Every setting is commented out at its default; uncomment a",
        "# line to change it. An environment variable (shown for each) or a flag wins over",
        '# this file; a preset (`preset = "fast"`) fills what neither sets.',
        "",
    ]
    defaults = Settings.model_construct().model_dump(mode="json")
    group: str | None = None
    for setting in settings_fields():
        if setting.group != group:
            group = setting.group
            lines += ["", f"[{group}]"] if group else []
        description = " ".join((setting.field.description or "").split())
        lines += [f"# {part}" for part in _wrapped(description, 96)]
        lines.append(f"# ({setting.type_name}; {setting.environment_name})")
        value = _default_of(setting, defaults)
        lines.append(f"# {setting.name} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _default_of(setting: Setting, defaults: dict[str, Any]) -> Any:
    value: Any = defaults
    for part in setting.path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _toml_value(value: Any) -> str:
    if value is None:
        return "  (not set by default)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and not value:
        return "{}"
    return json.dumps(value)


def _wrapped(text: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(choice) for choice in get_args(annotation))
    if origin is not None and get_args(annotation):
        arguments = [_type_name(argument) for argument in get_args(annotation)]
        if str(origin) in ("typing.Union", "<class 'types.UnionType'>"):
            return " | ".join(arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(arguments)}]"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def _paths_of(values: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted settings a nested mapping gives (a group's table: its keys)."""
    groups = {s.group for s in settings_fields() if s.group}
    found: set[str] = set()
    for key, value in values.items():
        if not prefix and key in groups and isinstance(value, Mapping):
            found |= {f"{key}.{name}" for name in value}
        else:
            found.add(prefix + key)
    return found


def _environment_paths() -> set[str]:
    given = {name.upper() for name in os.environ}
    return {s.path for s in settings_fields() if s.environment_name in given}


def _toml_values() -> dict[str, Any]:
    path = config_file()
    if not path.is_file():
        return {}
    with path.open("rb") as file:
        return tomllib.load(file)


def _home_values(settings: Settings) -> dict[str, Any]:
    path = settings.paths.home_settings_path
    if not path.is_file():
        return {}
    with path.open("rb") as file:
        return tomllib.load(file)


def record_home_settings(settings: Settings, values: Mapping[str, Mapping[str, str]]) -> Path:
    """Writes `values` (group to setting to value) into the home's settings.toml, keeping what
    else it holds; the next `Settings` of this home reads them below the environment and
    litpipe.toml."""
    from litpipe.files import write_atomically

    recorded: dict[str, dict[str, Any]] = {
        group: dict(names) for group, names in _home_values(settings).items()
    }
    for group, names in values.items():
        recorded.setdefault(group, {}).update(names)
    lines = ["# Settings litpipe recorded for this home (`litpipe backfill --gate`)."]
    for group, names in recorded.items():
        lines += ["", f"[{group}]", *(f"{name} = {_toml_value(v)}" for name, v in names.items())]
    path = settings.paths.home_settings_path
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8"))
    return path
