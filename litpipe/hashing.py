"""Short content hashes, for code versions and data versions."""

import hashlib


def digest(*parts: str) -> str:
    """16 hex characters of sha256 over the parts, each ended by a NUL so that no two different
    part lists hash alike."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]
