"""Atomic file writes, exclusive locks between processes, and names safe as file names.

Atomic file writes: a reader (another process, a browser refreshing a page) sees the old file
or the new one, never half of one, and a write that fails or is killed leaves the old file.

Each write goes to its own temporary file in the target's folder (so `os.replace` is a rename on
one file system), named after the writer's process and a random token: two writers of one path,
in two processes or two threads, never write into each other's temporary file, and the last
rename wins whole. The data is flushed to disk before the rename, so a machine that crashes just
after it does not leave an empty file behind the new name.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from litpipe.stopping import WAKE_S


def temporary_path(path: Path) -> Path:
    """Where one writer writes `path` before renaming it: hidden, beside it, its own."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


@contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into; on leaving the block without an
    error, synced to disk and renamed onto `path`; on an error, deleted (`path` is left as
    it was)."""
    temporary = temporary_path(path)
    try:
        with temporary.open("wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, content: str | bytes) -> Path:
    """Write `content` (text as UTF-8) to `path` atomically; `path`."""
    with replacing(path) as handle:
        handle.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Held by one process of this machine at a time (an exclusive `flock` on `path`, created
    with its folder when missing); the system releases it when its process dies, so a killed
    holder never blocks the others. Not re-entrant: a process taking it twice waits for itself.

    A taken lock is tried again after a wait that doubles up to `WAKE_S`, rather than waited
    for in one blocking call, which a signal handled on another thread would not interrupt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        wait_s = 0.001
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(wait_s)
                wait_s = min(2 * wait_s, WAKE_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
