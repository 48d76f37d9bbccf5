"""Atomic file writes, exclusive locks between processes, names safe as file names, and the
writes a file system refuses (a full disk, a read-only home).

Atomic file writes: a reader (another process, a browser refreshing a page) sees the old file
or the new one, never half of one, and a write that fails or is killed leaves the old file.

Each write goes to its own temporary file in the target's folder (so `os.replace` is a rename on
one file system), named after the writer's process and a random token: two writers of one path,
in two processes or two threads, never write into each other's temporary file, and the last
rename wins whole. The data is flushed to disk before the rename, so a machine that crashes just
after it does not leave an empty file behind the new name.
"""

from __future__ import annotations

import builtins
import errno
import fcntl
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


# A write the file system refused: out of room (a full disk, a quota), or not writable (a
# read-only mount; permission denied under the home). Nothing in the data causes these, and no
# retry helps until the user frees space or makes the home writable: a command says so in one
# line (`RefusedWrite.line`) rather than failing paper after paper, each with a traceback.
_FULL = {errno.ENOSPC, errno.EDQUOT}
_READ_ONLY = {errno.EROFS}
# Only under the home: a source file litpipe cannot read (a PDF of another user) is the
# paper's own fault.
_DENIED = {errno.EACCES, errno.EPERM}
# SQLite's words for the same (it names no errno and no file).
_SQLITE_FULL = "database or disk is full"
_SQLITE_READ_ONLY = "attempt to write a readonly database"
# What SQLite says when it cannot write its journal, whatever the cause: a refused write only
# where the home's file system is found full or read-only.
_SQLITE_UNSURE = ("disk I/O error", "unable to open database file")
# How Python writes an OSError: `[Errno 28] No space left on device: '/home/x.json'`.
_OS_ERROR_TEXT = re.compile(r"\[Errno (\d+)\][^\n:]*(?:: '([^'\n]+)')?")
# Free space under which a file system counts as full when SQLite's words leave it open.
NEARLY_FULL_BYTES = 1 << 20


@dataclass(frozen=True)
class RefusedWrite:
    """Why the file system refused a write, and the file or folder it refused (when the
    error names one)."""

    full: bool
    path: str | None = None
    # Permission denied, not a read-only file system.
    denied: bool = False

    def error(self) -> OSError:
        """The refusal as the OSError a write would have raised."""
        number = errno.ENOSPC if self.full else errno.EACCES if self.denied else errno.EROFS
        return OSError(number, os.strerror(number), self.path)

    def line(self, home: Path | None = None) -> str:
        """What the user reads: which disk or folder, that nothing written is lost (every
        write under the home is whole or not at all: files renamed into place, the catalog's
        and Dagster's SQLite records in transactions, LanceDB's versions committed at once),
        and what to do."""
        in_home = home is not None and (self.path is None or _under(self.path, home))
        where = str(home) if in_home else self.path
        writing = f" (writing {self.path})" if self.path and self.path != where else ""
        kept = "nothing written so far is lost (every write is whole or not at all)"
        if self.full:
            disk = f"the disk holding {where}" if where else "the disk"
            return (
                f"no space left on {disk}{writing}: {kept}; free some space and run it again, "
                "and it goes on from where it stopped"
            )
        state = "not writable by this user" if self.denied else "on a read-only file system"
        return (
            f"{where or 'the home'} is {state}{writing}: {kept}; make it writable (or give "
            "another --home) and run it again"
        )


def refused_write(error: BaseException, home: Path | None = None) -> RefusedWrite | None:
    """The refused write that `error` is, or that caused it (through every wrapper: SQLAlchemy's
    OperationalError, Dagster's step errors); None for any other error. Permission denied
    counts only for a path under `home`, and SQLite's vaguer words only where `home`'s file
    system is full or read-only (`file_system_refuses`)."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        found = None
        if isinstance(link, OSError) and link.errno is not None:
            found = _refused_errno(link.errno, link.filename, home)
        elif isinstance(link, sqlite3.Error):
            found = _refused_by_sqlite(str(link), home)
        if found is not None:
            return found
        link = link.__cause__ or link.__context__
    return None


# The names of Python's OSError classes, as a stored error names its class.
_OS_ERRORS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, OSError)
)
# The class names of SQLite's errors, and of SQLAlchemy's wrapping them.
_SQLITE_ERRORS = frozenset({"OperationalError", "DatabaseError"})


def refused_write_in_text(
    class_name: str | None, message: str, home: Path | None = None
) -> RefusedWrite | None:
    """The refused write an error stored as text names (Dagster keeps a failed step's error as
    its class name and message), as `refused_write` reads a live one."""
    if class_name in _OS_ERRORS:
        written = _OS_ERROR_TEXT.search(message)
        return _refused_errno(int(written[1]), written[2], home) if written else None
    if class_name in _SQLITE_ERRORS:
        return _refused_by_sqlite(message, home)
    return None


def _refused_by_sqlite(message: str, home: Path | None) -> RefusedWrite | None:
    if _SQLITE_FULL in message:
        return RefusedWrite(full=True)
    if _SQLITE_READ_ONLY in message:
        return RefusedWrite(full=False)
    if home is not None and any(words in message for words in _SQLITE_UNSURE):
        return file_system_refuses(home)
    return None


def _refused_errno(number: int, path: object, home: Path | None) -> RefusedWrite | None:
    named = os.fsdecode(path) if isinstance(path, str | bytes) else None
    if number in _FULL:
        return RefusedWrite(full=True, path=named)
    if number in _READ_ONLY:
        return RefusedWrite(full=False, path=named)
    if number in _DENIED and home is not None and named is not None and _under(named, home):
        return RefusedWrite(full=False, path=named, denied=True)
    return None


def _under(path: str, home: Path) -> bool:
    return Path(path).absolute().is_relative_to(home.absolute())


def file_system_refuses(path: Path) -> RefusedWrite | None:
    """Whether the file system holding `path` (or its nearest folder that exists) is read-only
    or has less than `NEARLY_FULL_BYTES` free, as a refused write; None when it takes writes or
    cannot be looked at."""
    existing = path.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        stats = os.statvfs(existing)
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return RefusedWrite(full=False)
    if stats.f_bavail * stats.f_frsize < NEARLY_FULL_BYTES:
        return RefusedWrite(full=True)
    return None
