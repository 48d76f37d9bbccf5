"""What the commands show on the terminal and what they keep off it: other libraries' warnings,
log records and progress bars go to the home's log file (and with `-v` to stderr too); a write
the file system refused (a full disk, a read-only home) is one line, not a traceback."""

from __future__ import annotations

import functools
import io
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from litpipe.files import refused_write, refused_write_in_text

# Under the home: other libraries' warnings (and litpipe's), kept off the terminal without -v.
LOG_FILE = Path("logs") / "litpipe.log"
# huggingface_hub's switch, which transformers' bars (a model's "Loading weights") follow too.
HF_PROGRESS_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"
# The exit status of a command whose writes the file system refused: as for a bad flag or a
# missing source, the user has something to fix before a rerun can succeed (1 stays for a run
# whose papers or collection failed).
REFUSED_WRITE_EXIT = 2
# What Dagster writes straight to stderr when it cannot store an event (its instance's
# `handle_new_event`, which then stores a batch's events one by one, and its log handler),
# before it raises the error.
_EVENT_NOT_STORED = (
    "Exception while storing event batch: ",
    "Exception while writing logger call to event log: ",
)
_STORING_ONE_BY_ONE = "Falling back to storing multiple single-event storage requests"

logger = logging.getLogger(__name__)


def refused_write_exit(error: Exception, command: str, home: Path) -> int | None:
    """When `error` is a write the file system refused (`litpipe.files.refused_write`), says so
    in one line on stderr (which disk or folder, that nothing written is lost, what to do; the
    traceback only in the debug log) and returns the command's exit status; None for any
    other error, which the caller raises."""
    refused = refused_write(error, home)
    if refused is None:
        return None
    logger.debug("%s: a refused write", command, exc_info=error)
    print(f"{command}: {refused.line(home)}", file=sys.stderr)
    return REFUSED_WRITE_EXIT


@contextmanager
def other_libraries_to_the_log(home: Path, verbose: bool) -> Iterator[None]:
    """While open, what other libraries write on their own (sentence-transformers' "Loading
    weights" bars, torch's deprecation warnings, their log records) stays off the terminal: their
    warnings go to `HOME/logs/litpipe.log`, and with `verbose` to stderr as well, with their
    bars and litpipe's info. litpipe's own messages and warnings, and anyone's errors, show as
    before. Everything is put back as it was at the end (tests call `main` many times)."""
    if not verbose and HF_PROGRESS_BARS not in os.environ:
        # Read when huggingface_hub and transformers are imported (lazily, after this).
        os.environ[HF_PROGRESS_BARS] = "1"
        set_here = True
    else:
        set_here = False
    to_file = _LogFile(home / LOG_FILE, encoding="utf-8", delay=True)
    to_file.setLevel(logging.WARNING)
    to_file.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    to_terminal = _CurrentStderrHandler()
    to_terminal.addFilter(_verbose_record if verbose else _quiet_record)
    root = logging.getLogger()
    level = root.level
    if verbose:
        root.setLevel(min(level, logging.INFO))
    root.addHandler(to_file)
    root.addHandler(to_terminal)
    shown = warnings.showwarning
    warnings.showwarning = functools.partial(_show_or_log_warning, shown)
    stderr = sys.stderr
    sys.stderr = _WithoutDagsterNoticesOfRefusedWrites(stderr)
    try:
        yield
    finally:
        sys.stderr = stderr
        warnings.showwarning = shown
        root.removeHandler(to_terminal)
        root.removeHandler(to_file)
        root.setLevel(level)
        to_file.close()
        if set_here:
            os.environ.pop(HF_PROGRESS_BARS, None)


def _quiet_record(record: logging.LogRecord) -> bool:
    """Shown without -v: litpipe's warnings, anyone's errors."""
    litpipe = record.name.split(".")[0] == "litpipe"
    return record.levelno >= (logging.WARNING if litpipe else logging.ERROR)


def _verbose_record(record: logging.LogRecord) -> bool:
    """Shown with -v: litpipe's info (each model call), anyone's warnings (not the info of
    every library, Alembic's migrations and the like)."""
    litpipe = record.name.split(".")[0] == "litpipe"
    return record.levelno >= (logging.INFO if litpipe else logging.WARNING)


class _LogFile(logging.FileHandler):
    """A log file whose folder is made when it is first written: a command that logs nothing
    makes none. A record the file system refuses (a full disk, a read-only home) is left out
    quietly: the command says that in one line, without logging's traceback of each record."""

    def _open(self) -> io.TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if error is not None and refused_write(error) is not None:
            return
        super().handleError(record)

    def close(self) -> None:
        # Closing flushes what the refused writes left buffered, and is refused alike; the file
        # is closed all the same.
        try:
            super().close()
        except OSError as error:
            if refused_write(error) is None:
                raise


class _WithoutDagsterNoticesOfRefusedWrites:
    """`sys.stderr` without the lines Dagster writes on it when it cannot store an event for a
    refused write (`_EVENT_NOT_STORED`): the command says that in one line once it stops.
    Anything else, those notices for another error included, passes as it is."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._left_out = False

    def write(self, text: str) -> int:
        notice = next((start for start in _EVENT_NOT_STORED if text.startswith(start)), None)
        if notice is not None:
            said = text.removeprefix(notice)
            self._left_out = refused_write_in_text("OperationalError", said) is not None
        elif not text.startswith(_STORING_ONE_BY_ONE):
            self._left_out = False
        return len(text) if self._left_out else self._stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class _CurrentStderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever `sys.stderr` is when a record comes (the progress display's proxy
    while its bars are drawn, so that a record is printed above them), as Python's own last
    resort does; bare messages, as that one printed litpipe's."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        pass


def _show_or_log_warning(
    shown: Callable[..., None],
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning written to a file of its own is left to it; another library's go to the
    `py.warnings` log, as `logging.captureWarnings` does."""
    if file is not None:
        shown(message, category, filename, lineno, file, line)
        return
    text = warnings.formatwarning(message, category, filename, lineno, line)
    logging.getLogger("py.warnings").warning("%s", text.rstrip())
