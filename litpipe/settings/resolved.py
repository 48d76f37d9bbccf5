"""The resolved settings as a file: what a command resolved from all its sources (defaults,
preset, the home's settings.toml, litpipe.toml, environment, flags) written once, for the Dagster
processes it starts (`litpipe ui`'s code server, and the runs, sensors and backfills it launches)
to read as they are, with none of those sources read again.

The command names the file to them by one environment variable, `LITPIPE_SETTINGS_FILE`, which
the processes they start inherit; without it, `code_location_settings` is `Settings()`.

What does not go into the file as it is:
- credentials: a setting holding a URL with user info (`llm.api_base`,
  `http://user:password@host/v1`) is written with its password as `***`; its reader finds the
  URL again in its environment (`LITPIPE_LLM__API_BASE`, which `served_settings_environment`
  sets) or litpipe.toml. API keys are no settings at all: litellm reads them from the
  environment.
- relative paths: they are written absolute, from the writer's working directory, since a
  reader may run in another (the daemon, a pod).

The file is named by its content, under the Dagster home: two commands serving one home with
different settings each keep theirs (a run launched later by one reads its own, not the
other's), and one with the same settings rewrites the same file, atomically. None is removed:
a run may start long after its command, and each is a few kB.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_settings import InitSettingsSource

from litpipe.files import write_atomically
from litpipe.hashing import digest
from litpipe.settings.model import Settings
from litpipe.settings.sources import ENV_PREFIX, environment_name
from litpipe.url_credentials import hide_credentials, holds_credentials

SETTINGS_FILE_VARIABLE = f"{ENV_PREFIX}SETTINGS_FILE"
# Under the Dagster home: the files the processes serving it read their settings from.
RESOLVED_SETTINGS_DIR = "litpipe_settings"


class CredentialsNotGiven(ValueError):
    """A setting whose credentials were kept out of a file, and that its reader's environment
    and litpipe.toml do not give."""


def served_settings_environment(settings: Settings) -> dict[str, str]:
    """What a process started to serve `settings` needs in its environment: the file of the
    whole settings (written now), and each credential kept out of it."""
    return {
        SETTINGS_FILE_VARIABLE: str(write_resolved_settings(settings)),
        **credentials_environment(settings),
    }


def credentials_environment(settings: Settings) -> dict[str, str]:
    """Each setting holding credentials, by the variable it is read from (LITPIPE_LLM__API_BASE):
    how it reaches a Dagster step, whose resource config names the variable, never the value."""
    values = settings.model_dump(mode="json")
    return {environment_name(path): value for path, value in _held_credentials(values)}


@contextmanager
def credentials_in_environment(settings: Settings) -> Iterator[None]:
    """This process's environment holding the credentials of `settings`
    (`credentials_environment`) for the block, as it was after: the runs a command executes
    in-process read them there, as a launched run's process does."""
    given = credentials_environment(settings)
    before = {name: os.environ.get(name) for name in given}
    os.environ.update(given)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def write_resolved_settings(settings: Settings) -> Path:
    """`settings` in a file under its Dagster home, named by its content: its path."""
    values = _with_absolute_paths(settings).model_dump(mode="json")
    for path, value in list(_held_credentials(values)):
        values = _replaced(values, path, hide_credentials(value))
    text = json.dumps(values, indent=1, sort_keys=True)
    folder = settings.dagster_home / RESOLVED_SETTINGS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return write_atomically(folder / f"{digest(text)}.json", text)


def read_resolved_settings(path: Path) -> Settings:
    """The settings a file of `write_resolved_settings` holds, its credentials found again (a
    `CredentialsNotGiven` where this process's environment and litpipe.toml lack one)."""
    values = with_credentials(json.loads(path.read_text("utf-8")))
    # The file's values alone: another source (the environment, litpipe.toml) would merge its
    # tables (`llm.agents`) into the file's, which already hold what the writer resolved.
    return Settings(_build_sources=((InitSettingsSource(Settings, init_kwargs=values),), values))


def code_location_settings() -> Settings:
    """The settings a Dagster process of litpipe's serves: the file `LITPIPE_SETTINGS_FILE`
    names where it is set (by the command that started the process, or its parent), else
    `Settings()` from this process's own sources."""
    path = os.environ.get(SETTINGS_FILE_VARIABLE)
    return read_resolved_settings(Path(path)) if path else Settings()


def with_credentials(values: dict[str, Any]) -> dict[str, Any]:
    """Dumped settings `values` with each URL whose password shows as *** replaced by the one
    this process's environment or litpipe.toml gives (a `CredentialsNotGiven` where neither
    gives a URL that hides as it)."""
    # A URL that hides as itself shows its password as *** already (one in clear stays).
    hidden = {path: url for path, url in _held_credentials(values) if hide_credentials(url) == url}
    if not hidden:
        return values
    # The other sources give what `values` leave out: the URLs, and only them.
    without = values
    for path in hidden:
        without = _without(without, path)
    given = Settings(**without)
    found = values
    for path, shown in hidden.items():
        url = given.value(path)
        if not isinstance(url, str) or hide_credentials(url) != shown:
            group, _, name = path.rpartition(".")
            in_toml = f"{name} under [{group}]" if group else name
            raise CredentialsNotGiven(
                f"{path} {shown} holds credentials, which litpipe keeps out of what it stores: "
                f"set {environment_name(path)} (or {in_toml} in litpipe.toml)"
            )
        found = _replaced(found, path, url)
    return found


def _held_credentials(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each setting of dumped `values` (by its dotted path) that is a URL with user info."""
    for name, value in values.items():
        # A group's table (`llm`) holds its settings; a top-level setting is a value itself.
        settings = value.items() if isinstance(value, dict) else [("", value)]
        for key, text in settings:
            if isinstance(text, str) and holds_credentials(text):
                yield f"{name}.{key}" if key else name, text


def _replaced(values: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Dumped settings `values` with the setting at a dotted path set to `value`."""
    group, _, name = path.rpartition(".")
    if not group:
        return {**values, name: value}
    return {**values, group: {**values[group], name: value}}


def _without(values: dict[str, Any], path: str) -> dict[str, Any]:
    """Dumped settings `values` without the setting at a dotted path."""
    group, _, name = path.rpartition(".")
    if not group:
        return {key: value for key, value in values.items() if key != name}
    return {**values, group: {key: value for key, value in values[group].items() if key != name}}


def _with_absolute_paths(value: Any) -> Any:
    """`value` (a model, or one of its fields) with every relative path made absolute."""
    if isinstance(value, Path):
        return value.absolute()
    if isinstance(value, list):
        return [_with_absolute_paths(item) for item in value]
    if isinstance(value, dict):
        return {key: _with_absolute_paths(item) for key, item in value.items()}
    if isinstance(value, BaseModel):
        return value.model_copy(
            update={
                name: _with_absolute_paths(getattr(value, name))
                for name in type(value).model_fields
            }
        )
    return value
