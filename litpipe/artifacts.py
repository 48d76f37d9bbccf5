"""Per-asset JSON outputs under `LITPIPE_HOME/artifacts`: written by the Dagster IO manager,
read back by later stages, the CLI and people."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from litpipe.files import UnsafeKeyError, checked_key, write_atomically

Model = TypeVar("Model", bound=BaseModel)

UNPARTITIONED = "__all__"


class ArtifactStore:
    """`<base>/<asset...>/<partition>.json`; an asset named in `per_embedder` (its output depends
    on the embedder: chunks sized in its tokens, ids of chunks in its table) is kept per embedder,
    `<base>/<asset...>/<embedder_id>/<partition>.json`, so that runs of two embedders on one home
    never read each other's output."""

    def __init__(
        self,
        base_dir: Path,
        embedder_id: str | None = None,
        per_embedder: Collection[str] = (),
    ) -> None:
        self.base_dir = base_dir
        self.embedder_id = embedder_id
        self.per_embedder = frozenset(per_embedder)

    def path(self, asset: list[str], partition: str | None) -> Path:
        """Where the asset's output for `partition` is written. A partition key can come from
        outside (the UI, GraphQL): one that is not an id, or a path that leads out of the base
        (a symlinked folder), raises `UnsafeKeyError` naming the key."""
        if asset[0] not in self.per_embedder:
            return self._checked(asset, [], partition)
        if self.embedder_id is None:
            raise ValueError(f"{'/'.join(asset)} is kept per embedder: name the embedder")
        return self._checked(asset, [checked_key(self.embedder_id, "embedder id")], partition)

    def _checked(self, asset: list[str], folders: list[str], partition: str | None) -> Path:
        name = checked_key(partition) if partition else UNPARTITIONED
        path = self.base_dir.joinpath(*asset, *folders, f"{name}.json")
        if not path.resolve().is_relative_to(self.base_dir.resolve()):
            raise UnsafeKeyError(
                f"partition key {partition!r} of {'/'.join(asset)}: {path} resolves to "
                f"{path.resolve()}, outside {self.base_dir}"
            )
        return path

    def _readable(self, asset: list[str], partition: str | None) -> Path:
        """The written path; for a per-embedder asset this embedder never built, the newest
        other copy: another embedder's, or the one file all embedders shared before (a home
        from an older litpipe). A step reads such an asset only when Dagster's records found
        it fresh, and those describe its latest materialization, the newest copy: e.g. the
        answers a backfill did not rerun because the new embedder found the same evidence."""
        path = self.path(asset, partition)
        if path.is_file() or asset[0] not in self.per_embedder:
            return path
        return next(iter(self._other_copies(asset, partition)), path)

    def _other_copies(self, asset: list[str], partition: str | None) -> list[Path]:
        """A per-embedder asset's outputs for `partition` written for other embedders, or
        shared by all in a home from an older litpipe: the newest first."""
        own = self.path(asset, partition)
        folder = self.base_dir.joinpath(*asset)
        embedders = (
            [child for child in folder.iterdir() if child.is_dir()] if folder.is_dir() else []
        )
        copies = [folder / own.name, *(embedder / own.name for embedder in embedders)]
        written = [copy for copy in copies if copy != own and copy.is_file()]
        return sorted(written, key=lambda copy: copy.stat().st_mtime_ns, reverse=True)

    def latest_of_another_embedder(
        self, asset: list[str], partition: str | None, model: type[Model]
    ) -> Model | None:
        """The newest output of a per-embedder asset written for another embedder (or shared
        by all, in a home from an older litpipe); None if there is none."""
        copies = self._other_copies(asset, partition)
        return model.model_validate_json(copies[0].read_text(encoding="utf-8")) if copies else None

    def write(self, asset: list[str], partition: str | None, output: BaseModel) -> Path:
        path = self.path(asset, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_atomically(path, output.model_dump_json(indent=1))

    def read(self, asset: list[str], partition: str | None, model: type[Model]) -> Model:
        text = self._readable(asset, partition).read_text(encoding="utf-8")
        return model.model_validate_json(text)

    def exists(self, asset: list[str], partition: str | None) -> bool:
        return self._readable(asset, partition).is_file()
