from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.defs.resources import PER_EMBEDDER_ASSETS


class PydanticJSONIOManager(dg.ConfigurableIOManager):
    """Stores each asset partition's pydantic output as JSON under `LITPIPE_HOME/artifacts`.

    Files are `<asset key path>/<partition key>.json` (`<asset key path>/<embedder id>/...` for
    an asset kept per embedder), so a person can open any stage's output and later stages can
    read single papers through `ArtifactStore` without loading every partition through Dagster.
    """

    base_dir: str
    embedder_id: str

    def _store(self) -> ArtifactStore:
        return ArtifactStore(Path(self.base_dir), self.embedder_id, PER_EMBEDDER_ASSETS)

    def handle_output(self, context: dg.OutputContext, obj: BaseModel) -> None:
        if not isinstance(obj, BaseModel):
            raise TypeError(f"{context.asset_key.to_user_string()} must return a pydantic model")
        partition = context.partition_key if context.has_partition_key else None
        path = self._store().write(list(context.asset_key.path), partition, obj)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> BaseModel:
        model = context.dagster_type.typing_type
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"input {context.name} must be annotated with a pydantic model")
        partition = context.asset_partition_key if context.has_asset_partitions else None
        return self._store().read(list(context.asset_key.path), partition, model)
