"""The requests a command stores before it adds their partition (`litpipe ask`, `litpipe
related-work`): `LITPIPE_HOME/requests/<asset>/<key>.json`, read back by the asset's step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.settings import HomePaths

Request = TypeVar("Request", bound=BaseModel)


def request_store(paths: HomePaths) -> ArtifactStore:
    """Where requests are stored: `requests/<asset>/<key>.json`."""
    return ArtifactStore(paths.requests_dir)


def stored_request(
    paths: HomePaths,
    asset: str,
    key: str,
    model: type[Request],
    how_to_add: str,
    metadata: Mapping[str, Any] | None = None,
) -> Request:
    """The request stored for `asset`'s partition `key`; without one, a Failure no retry
    mends, saying where it was looked for and `how_to_add` one."""
    store = request_store(paths)
    if not store.exists([asset], key):
        raise dg.Failure(
            f"no stored request for partition {key!r} (expected {store.path([asset], key)}): "
            f"{how_to_add}",
            metadata=dict(metadata or {}),
            allow_retries=False,
        )
    return store.read([asset], key, model)
