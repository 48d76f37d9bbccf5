"""What litpipe says when the object store that holds the chunk tables cannot be opened: a
module of its own, light to import, so that the CLI catches it without loading the store."""

from __future__ import annotations

import re


class ObjectStoreUnreachable(RuntimeError):
    """The object store named for the chunk tables could not be opened (not answering, a bucket
    or credentials it refuses): its URI, and what the store's client said, in one line."""

    def __init__(self, uri: str, error: Exception) -> None:
        said = str(error)
        # LanceDB's Rust client writes a whole error chain on one line: its innermost message
        # and the endpoint it asked are what a user can act on.
        messages = re.findall(r'message: "([^"]+)"', said)
        asked = re.search(r"uri: Some\((\w+://[^/?)]+)", said)
        reason = messages[-1] if messages else " ".join(said.split())[:200]
        where = f" at {asked[1]}" if asked else ""
        super().__init__(
            f"{uri}: the object store cannot be opened ({reason}{where}); check the URI, and "
            "the endpoint and credentials in the environment (AWS_ENDPOINT_URL, AWS_*)"
        )
        self.uri = uri
