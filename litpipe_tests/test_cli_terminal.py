"""What the terminal shows of other libraries during a command: nothing by default (their bars
and warnings go to the home's log), all of it with -v; litpipe's own messages either way."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from litpipe.commands.terminal import HF_PROGRESS_BARS, LOG_FILE, other_libraries_to_the_log
from litpipe_tests.bundled import short_paper


def test_a_default_run_shows_no_loading_bar_nor_torch_warning(tmp_path: Path) -> None:
    """A user's first `litpipe run`, in a process of its own as a user starts it: the default
    embedder (MiniLM, quantized to int8 by torch) loads, and says so only in the log."""
    folder = tmp_path / "papers"
    folder.mkdir()
    short_paper(folder, 0)
    home = tmp_path / "home"
    env = {name: value for name, value in os.environ.items() if name != HF_PROGRESS_BARS}
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("litpipe")), "run", str(folder)],
        env={**env, "LITPIPE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Loading weights" not in completed.stderr
    assert "Warning" not in completed.stderr
    assert "1 paper ingested" in completed.stderr  # litpipe's own lines are all there
    log = (home / LOG_FILE).read_text(encoding="utf-8")
    assert "UserWarning: torch.quantize_per_tensor" in log


def warn_as_torch(message: str) -> None:
    """A warning raised inside another library, as torch raises its deprecations."""
    warnings.warn_explicit(
        message, DeprecationWarning, "/site-packages/torch/quantized.py", 78, module="torch"
    )


def say_everything() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warn_as_torch("torch.quantize_per_channel is deprecated")
    logging.getLogger("litpipe.llm.client").info("llm call answers: made")
    logging.getLogger("litpipe.workflows").warning("litpipe's own warning")
    # A library logging through the standard hierarchy, as sentence-transformers does.
    # Not transformers: once imported (by an earlier test in the same worker), its logger
    # prints with its own handler and stops propagating, so no handler of litpipe's sees it.
    logging.getLogger("sentence_transformers").warning("a library's warning")
    logging.getLogger("alembic").info("a library's info")
    logging.getLogger("lancedb").error("a library's error")


@pytest.fixture
def shown_as_before(monkeypatch: pytest.MonkeyPatch) -> list[type[Warning]]:
    """The warnings Python shows (on stderr, outside pytest), by category."""
    shown: list[type[Warning]] = []
    monkeypatch.setattr(warnings, "showwarning", lambda _, category, *args: shown.append(category))
    monkeypatch.delenv(HF_PROGRESS_BARS, raising=False)
    return shown


def test_other_libraries_warnings_go_to_the_log_and_litpipes_to_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shown_as_before: list[type[Warning]]
) -> None:
    with other_libraries_to_the_log(tmp_path, verbose=False):
        assert os.environ[HF_PROGRESS_BARS] == "1"  # before transformers is imported
        say_everything()
    assert shown_as_before == []
    terminal = capsys.readouterr().err
    assert "litpipe's own warning" in terminal
    assert "a library's error" in terminal
    for quiet in ("torch.quantize_per_channel", "a library's warning", "a library's info"):
        assert quiet not in terminal
    assert "llm call" not in terminal
    log = (tmp_path / LOG_FILE).read_text(encoding="utf-8")
    assert "DeprecationWarning: torch.quantize_per_channel is deprecated" in log
    assert "a library's warning" in log and "litpipe's own warning" in log
    # Once the command is over, everything is as it was.
    assert HF_PROGRESS_BARS not in os.environ
    logging.getLogger("sentence_transformers").warning("after the command")
    assert "after the command" not in (tmp_path / LOG_FILE).read_text(encoding="utf-8")
    warn_as_torch("after the command")
    assert shown_as_before == [DeprecationWarning]


def test_verbose_shows_other_libraries_warnings_bars_and_litpipes_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shown_as_before: list[type[Warning]]
) -> None:
    with other_libraries_to_the_log(tmp_path, verbose=True):
        assert HF_PROGRESS_BARS not in os.environ
        say_everything()
    assert shown_as_before == []
    terminal = capsys.readouterr().err
    for shown in (
        "DeprecationWarning: torch.quantize_per_channel is deprecated",
        "llm call answers: made",
        "litpipe's own warning",
        "a library's warning",
        "a library's error",
    ):
        assert shown in terminal
    assert "a library's info" not in terminal  # every library's info would drown the rest
    assert "torch.quantize_per_channel" in (tmp_path / LOG_FILE).read_text(encoding="utf-8")


def test_a_command_that_logs_nothing_makes_no_log(tmp_path: Path) -> None:
    with other_libraries_to_the_log(tmp_path / "home", verbose=False):
        pass
    assert not (tmp_path / "home").exists()
