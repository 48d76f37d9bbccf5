"""Atomic writes: whole files, each writer with its own temporary file."""

from __future__ import annotations

from pathlib import Path

import pytest

from litpipe.files import replacing, temporary_path, write_atomically


def test_two_writers_of_one_path_never_share_a_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    assert temporary_path(path) != temporary_path(path)
    assert temporary_path(path).parent == tmp_path
    # Two writers at once, the first to start finishing last: each writes its own file whole,
    # and the last rename wins.
    with replacing(path) as first:
        first.write(b'{"writer": 1')
        with replacing(path) as second:
            second.write(b'{"writer": 2}')
        first.write(b"}")
    assert path.read_text() == '{"writer": 1}'
    assert list(tmp_path.iterdir()) == [path]


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = write_atomically(tmp_path / "convergence.md", "old\n")
    with pytest.raises(RuntimeError), replacing(path) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("killed")
    assert path.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [path]
