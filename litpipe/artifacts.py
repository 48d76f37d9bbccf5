"""Per-asset JSON outputs under `LITPIPE_HOME/artifacts`: written by the Dagster IO manager,
read back by later stages, the CLI and people."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)

UNPARTITIONED = "__all__"


class ArtifactStore:
    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir

    def path(self, asset: list[str], partition: str | None) -> Path:
        return self.base_dir.joinpath(*asset, f"{partition or UNPARTITIONED}.json")

    def write(self, asset: list[str], partition: str | None, output: BaseModel) -> Path:
        path = self.path(asset, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a file, a failed write keeps the old one.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(output.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(path)
        return path

    def read(self, asset: list[str], partition: str | None, model: type[Model]) -> Model:
        return model.model_validate_json(self.path(asset, partition).read_text(encoding="utf-8"))

    def exists(self, asset: list[str], partition: str | None) -> bool:
        return self.path(asset, partition).is_file()
