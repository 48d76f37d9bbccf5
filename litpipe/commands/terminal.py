"""What the commands show on the terminal and what they keep off it: other libraries' warnings,
log records and progress bars go to the home's log file (and with `-v` to stderr too)."""

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

# Under the home: other libraries' warnings (and litpipe's), kept off the terminal without -v.
LOG_FILE = Path("logs") / "litpipe.log"
# huggingface_hub's switch, which transformers' bars (a model's "Loading weights") follow too.
HF_PROGRESS_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"


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
    try:
        yield
    finally:
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
    makes none."""

    def _open(self) -> io.TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


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
    """litpipe's own warnings (a setting's old name) are the user's to act on and show as
    always; another library's go to the `py.warnings` log, as `logging.captureWarnings` does."""
    if file is not None or category.__module__.split(".")[0] == "litpipe":
        shown(message, category, filename, lineno, file, line)
        return
    text = warnings.formatwarning(message, category, filename, lineno, line)
    logging.getLogger("py.warnings").warning("%s", text.rstrip())
