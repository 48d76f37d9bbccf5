"""Validated model replies on disk, addressed by the hash of what produced them.

The key covers the model, the messages, the output schema and the parameters (the sampling,
and the structured-output mode the reply was asked in); it leaves out the API base and any key:
the same model behind another endpoint (a proxy, a mirror, a local server on a new port) is
expected to answer alike, and a key is a secret. Entries are written whole (a temporary file,
then `os.replace`), so concurrent writers of one key leave one valid entry and a reader never
sees half of one. A file that cannot be read is a miss. Only valid replies are kept: a failure
is never served to a later run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Part of every key: bump it when the client changes what it sends for the same inputs.
CACHE_FORMAT = 1


class LLMCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(
        model: str,
        messages: list[dict[str, str]],
        schema_json: dict[str, Any],
        params: dict[str, Any],
    ) -> str:
        canonical = json.dumps(
            {
                "format": CACHE_FORMAT,
                "model": model,
                "messages": messages,
                "schema": schema_json,
                "params": params,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        # Two levels of fan-out keep directories small at millions of entries.
        return self.directory / key[:2] / key[2:4] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self.path(key).read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            logger.warning("ignoring unreadable cache entry %s: %s", key, error)
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, reply: dict[str, Any]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{key[:8]}-")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(reply, file, ensure_ascii=False)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
