"""Per-asset JSON outputs under `LITPIPE_HOME/artifacts`: written by the Dagster IO manager,
read back by later stages, the CLI and people."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from litpipe.files import write_atomically

Model = TypeVar("Model", bound=BaseModel)

UNPARTITIONED = "__all__"

# A partition key becomes a file or folder name under the home: only the characters of
# `litpipe.ingest.ids.slug`, starting with a letter or digit (so never `.`, `..` or a hidden
# name), short enough for a file name with its suffixes. Every id litpipe makes (slugs, hashes,
# days) is one; a key added from outside (the UI, GraphQL) may not be. Here, not in `ids`, so
# that settings can check a collection without importing the PDF reader.
_SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class UnsafeKeyError(ValueError):
    """A partition key that could name a path outside the home."""


def checked_key(key: str, kind: str = "partition key") -> str:
    """`key` itself when it is safe as a file name under the home; else `UnsafeKeyError`."""
    if not _SAFE_KEY.fullmatch(key):
        raise UnsafeKeyError(
            f"{kind} {key!r} is not a litpipe id (letters, digits, '.', '_' and '-', starting "
            "with a letter or digit, at most 200 characters): refusing to build a path from it"
        )
    return key


class ArtifactStore:
    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir

    def path(self, asset: list[str], partition: str | None) -> Path:
        """`<base>/<asset...>/<partition>.json`. A partition key can come from outside (the UI,
        GraphQL): one that is not an id, or a path that leads out of the base (a symlinked
        folder), raises `UnsafeKeyError` naming the key."""
        name = checked_key(partition) if partition else UNPARTITIONED
        path = self.base_dir.joinpath(*asset, f"{name}.json")
        if not path.resolve().is_relative_to(self.base_dir.resolve()):
            raise UnsafeKeyError(
                f"partition key {partition!r} of {'/'.join(asset)}: {path} resolves to "
                f"{path.resolve()}, outside {self.base_dir}"
            )
        return path

    def write(self, asset: list[str], partition: str | None, output: BaseModel) -> Path:
        path = self.path(asset, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_atomically(path, output.model_dump_json(indent=1))

    def read(self, asset: list[str], partition: str | None, model: type[Model]) -> Model:
        return model.model_validate_json(self.path(asset, partition).read_text(encoding="utf-8"))

    def exists(self, asset: list[str], partition: str | None) -> bool:
        return self.path(asset, partition).is_file()
