"""A write the file system refuses (a full disk, a read-only home) ends a command in one line
saying which disk or folder, that nothing written is lost, and what to do; the home is whole
afterwards, and a rerun once space is freed (or the home writable again) succeeds."""

from __future__ import annotations

import errno
import json
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy.exc

from litpipe.artifacts import ArtifactStore
from litpipe.cli import main
from litpipe.commands.terminal import REFUSED_WRITE_EXIT, other_libraries_to_the_log
from litpipe.files import RefusedWrite, refused_write, refused_write_in_text
from litpipe.instance.run_failures import failure_reason, latest_run_failure
from litpipe_tests.homes import home_instance
from litpipe_tests.test_faults import DEMO_CSV, litpipe_env

KEPT = "nothing written so far is lost (every write is whole or not at all)"
FREE_AND_RERUN = "free some space and run it again, and it goes on from where it stopped"
MAKE_WRITABLE = "make it writable (or give another --home) and run it again"


def no_space(path: Path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


# ---------------------------------------------------------------------------------------------
# What counts as a refused write, through every wrapper, and what does not.
# ---------------------------------------------------------------------------------------------


def test_a_refused_write_is_found_through_the_wrappers_and_names_its_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = home / "artifacts" / "x.json"
    assert refused_write(no_space(written)) == RefusedWrite(full=True, path=str(written))
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(written))
    assert refused_write(quota) == RefusedWrite(full=True, path=str(written))
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS), str(home))
    assert refused_write(read_only) == RefusedWrite(full=False, path=str(home))

    # SQLite's own words, wrapped by SQLAlchemy, wrapped again by whoever called it.
    def wrapped(message: str) -> Exception:
        try:
            try:
                raise sqlite3.OperationalError(message)
            except sqlite3.OperationalError as orig:
                raise sqlalchemy.exc.OperationalError("INSERT ...", {}, orig) from orig
        except sqlalchemy.exc.OperationalError as database:
            try:
                raise RuntimeError("storing the run's events failed") from database
            except RuntimeError as outer:
                return outer

    assert refused_write(wrapped("database or disk is full")) == RefusedWrite(full=True)
    assert refused_write(wrapped("attempt to write a readonly database")) == RefusedWrite(
        full=False
    )
    # Neither an error of the data nor a file litpipe reads.
    assert refused_write(wrapped("no such table: runs")) is None
    assert refused_write(ValueError("No space left on device")) is None
    assert refused_write(FileNotFoundError(errno.ENOENT, "No such file", str(written))) is None


def test_permission_denied_is_a_refused_write_only_under_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(home / "catalog.sqlite"))
    assert refused_write(denied, home) == RefusedWrite(
        full=False, path=str(home / "catalog.sqlite"), denied=True
    )
    assert refused_write(denied) is None  # which home, then?
    # A PDF of another user is the paper's own fault: it fails alone.
    source = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "a.pdf"))
    assert refused_write(source, home) is None
    line = refused_write(denied, home).line(home)  # type: ignore[union-attr]
    assert line == (
        f"{home} is not writable by this user (writing {home / 'catalog.sqlite'}): {KEPT}; "
        f"{MAKE_WRITABLE}"
    )


def test_sqlites_vaguer_words_count_only_where_the_disk_is_full_or_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unsure = sqlite3.OperationalError("disk I/O error")
    home = tmp_path / "home"  # not made: its nearest folder is looked at

    def disk(free_blocks: int, flags: int = 0) -> None:
        stats = SimpleNamespace(f_flag=flags, f_bavail=free_blocks, f_frsize=4096)
        monkeypatch.setattr(os, "statvfs", lambda path: stats)

    disk(free_blocks=1 << 20)
    assert refused_write(unsure, home) is None  # 4 GiB free: an I/O error, not a full disk
    disk(free_blocks=3)
    assert refused_write(unsure, home) == RefusedWrite(full=True)
    assert refused_write(unsure) is None  # no home to look at
    disk(free_blocks=1 << 20, flags=os.ST_RDONLY)
    assert refused_write(unsure, home) == RefusedWrite(full=False)


def test_a_stored_error_is_read_by_its_class() -> None:
    """Dagster keeps a failed step's error as its class name and message."""
    stored = "OSError: [Errno 28] No space left on device: '/h/artifacts/paper_chunks/p.json'\n"
    assert refused_write_in_text("OSError", stored) == RefusedWrite(
        full=True, path="/h/artifacts/paper_chunks/p.json"
    )
    assert refused_write_in_text("PermissionError", "[Errno 30] Read-only file system") == (
        RefusedWrite(full=False)
    )
    sqlite_said = "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database or disk"
    assert refused_write_in_text("OperationalError", sqlite_said + " is full") == RefusedWrite(
        full=True
    )
    # A model server's words about its own disk, relayed in an error of the call: not ours.
    relayed = "openai/m still failing after 3 tries: [Errno 28] No space left on device"
    assert refused_write_in_text("TransientLLMError", relayed) is None


def test_the_line_names_the_home_and_the_file_written_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    inside = RefusedWrite(full=True, path=str(home / "lancedb" / "t.lance"))
    assert inside.line(home) == (
        f"no space left on the disk holding {home} (writing {home / 'lancedb' / 't.lance'}): "
        f"{KEPT}; {FREE_AND_RERUN}"
    )
    # A file written elsewhere (`--out`) is on its own disk.
    outside = RefusedWrite(full=True, path=str(tmp_path / "out.json"))
    assert outside.line(home) == (
        f"no space left on the disk holding {tmp_path / 'out.json'}: {KEPT}; {FREE_AND_RERUN}"
    )
    assert (
        RefusedWrite(full=True).line(home).startswith(f"no space left on the disk holding {home}:")
    )
    assert RefusedWrite(full=False).line() == (
        f"the home is on a read-only file system: {KEPT}; {MAKE_WRITABLE}"
    )


# ---------------------------------------------------------------------------------------------
# What reaches the terminal: the one line, nothing of other libraries' notices of it.
# ---------------------------------------------------------------------------------------------


def test_dagsters_notices_of_a_refused_write_stay_off_the_terminal_and_others_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = "(sqlite3.OperationalError) database or disk is full\n(Background on this error)\n"
    with other_libraries_to_the_log(tmp_path / "home", verbose=False):
        # As Dagster's instance writes them (`handle_new_event`, its log handler).
        sys.stderr.write(f"Exception while storing event batch: {full}")
        sys.stderr.write("Falling back to storing multiple single-event storage requests...\n")
        sys.stderr.write(f"Exception while writing logger call to event log: {full}")
        sys.stderr.write("Exception while storing event batch: a GraphQL error\n")
        sys.stderr.write("Falling back to storing multiple single-event storage requests...\n")
        sys.stderr.write("litpipe's own line\n")
    assert capsys.readouterr().err == (
        "Exception while storing event batch: a GraphQL error\n"
        "Falling back to storing multiple single-event storage requests...\n"
        "litpipe's own line\n"
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_log_file_on_a_full_disk_drops_its_records_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    # Every write to /dev/full fails with ENOSPC.
    (home / "logs" / "litpipe.log").symlink_to("/dev/full")
    with other_libraries_to_the_log(home, verbose=False):
        logging.getLogger("another.library").warning("deprecated")
    said = capsys.readouterr().err
    assert "Logging error" not in said and "Traceback" not in said


# ---------------------------------------------------------------------------------------------
# A run meeting a full disk in a step: one line, the run's record says it too, a rerun works.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["building the paper", "writing its output"])
def test_a_step_meeting_a_full_disk_stops_the_run_in_one_line(
    tmp_path: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    home = tmp_path / "home"
    table = tmp_path / "yeast.csv"
    table.write_text(
        'id,title,abstract\ny1,Ale yeast proteomics,"We profile ale yeast proteins."\n'
        'y2,Lager yeast,"We profile lager yeast proteins in the cold."\n',
        encoding="utf-8",
    )
    refused = home / "artifacts" / "paper_document" / "yeast.y1.json"
    if where == "building the paper":
        # Inside the per-paper try of a batch, which takes a paper's own faults one by one.
        def parse(*args: object) -> None:
            raise no_space(refused)

        monkeypatch.setattr("litpipe.defs.assets.ingest.read_document", parse)
    else:
        write = ArtifactStore.write

        def write_unless_a_document(store: ArtifactStore, asset: list[str], *rest: object) -> Path:
            if asset == ["paper_document"]:
                raise no_space(refused)
            return write(store, asset, *rest)  # type: ignore[arg-type]

        monkeypatch.setattr(ArtifactStore, "write", write_unless_a_document)
    run = ["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]

    code = main(run)

    said = capsys.readouterr()
    assert code == REFUSED_WRITE_EXIT == 2
    line = (
        f"litpipe run: no space left on the disk holding {home} (writing {refused}): {KEPT}; "
        f"{FREE_AND_RERUN}"
    )
    assert said.err.splitlines() == [
        f"{table}: 2 papers in collection 'yeast'",
        "[1-2/2] building 2 papers",
        line,
    ]
    assert said.out == ""
    # The run's record says why too (what the UI and a collection leaving a paper out read),
    # for the batch's run as for a paper's own.
    instance = home_instance(home)
    (failed,) = instance.get_runs(limit=1)
    assert instance.get_run_by_id(failed.run_id).is_failure  # type: ignore[union-attr]
    logged = [e.dagster_event for e in instance.all_logs(failed.run_id) if e.dagster_event]
    assert failure_reason(logged) == RefusedWrite(full=True, path=str(refused)).line()

    monkeypatch.undo()
    assert main(run) == 0
    report = json.loads((home / "outputs" / "yeast" / "report.json").read_text())
    assert report["papers"] == 2 and report["failed_papers"] == []


def test_a_papers_own_run_that_met_a_full_disk_says_so(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    table = tmp_path / "one.csv"
    table.write_text('id,title,abstract\nr1,Yeast,"We profile yeast."\n', encoding="utf-8")

    def parse(*args: object) -> None:
        raise no_space(home / "artifacts" / "x.json")

    monkeypatch.setattr("litpipe.defs.assets.ingest.read_document", parse)
    assert main(["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]) == 2
    instance = home_instance(home)
    assert latest_run_failure(instance, "one.r1") == (
        RefusedWrite(full=True, path=str(home / "artifacts" / "x.json")).line()
    )


# ---------------------------------------------------------------------------------------------
# The real thing: a home on a small tmpfs, and a read-only one (root only: mount).
# ---------------------------------------------------------------------------------------------


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """`folder` as a tmpfs of `size`, unmounted at the end; the test skipped where this process
    may not mount one."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def remount(folder: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(folder)], check=True)


def litpipe(home: Path, embedder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A `litpipe` command in its own process, as a user runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "litpipe.cli",
            *args,
            "--home",
            str(home),
            "--embedder",
            str(embedder),
        ],
        env=litpipe_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


def progress_lines(lines: list[str]) -> list[str]:
    """The lines of a run other than its progress: what it found, each batch, each paper."""
    return [line for line in lines if not line.startswith((f"{DEMO_CSV}:", "["))]


@pytest.mark.slow  # a run of the demo table on a full disk, then again once space is freed
def test_a_full_disk_is_one_line_from_run_and_status_and_a_rerun_after_freeing_space_succeeds(
    tmp_path: Path, tiny_model: Path
) -> None:
    with tmpfs(tmp_path / "disk", "3m") as disk:
        home = disk / "home"

        run = litpipe(home, tiny_model, "run", str(DEMO_CSV))

        assert run.returncode == 2, run.stderr
        assert run.stdout == "" and "Traceback" not in run.stderr
        full = f"no space left on the disk holding {home}"
        (line,) = progress_lines(run.stderr.splitlines())
        assert line.startswith(f"litpipe run: {full}") and line.endswith(
            f"{KEPT}; {FREE_AND_RERUN}"
        )

        status = litpipe(home, tiny_model, "status")
        assert status.returncode == 2, status.stderr
        assert status.stderr == f"litpipe status: {full}: {KEPT}; {FREE_AND_RERUN}\n"

        remount(disk, "size=300m")  # space freed
        rerun = litpipe(home, tiny_model, "run", str(DEMO_CSV))
        assert rerun.returncode == 0, rerun.stderr
        report = json.loads((home / "outputs" / "iclr_abstracts_demo" / "report.json").read_text())
        assert report["papers"] == 40 and report["failed_papers"] == []
        assert report["lancedb_rows"] == report["chunks"]
        status = litpipe(home, tiny_model, "status")
        assert status.returncode == 0, status.stderr
        assert "iclr_abstracts_demo: 40 papers" in status.stdout
        assert "paper_answers      40 fresh" in status.stdout


@pytest.mark.slow  # a run of the demo table, then on the same home made read-only, then writable
def test_a_read_only_home_is_one_line_from_run_and_status_and_left_as_it_was(
    tmp_path: Path, tiny_model: Path
) -> None:
    with tmpfs(tmp_path / "disk", "100m") as disk:
        home = disk / "home"
        assert litpipe(home, tiny_model, "run", str(DEMO_CSV)).returncode == 0
        report = home / "outputs" / "iclr_abstracts_demo" / "report.json"
        before = report.read_text()
        remount(disk, "ro")

        run = litpipe(home, tiny_model, "run", str(DEMO_CSV))

        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr
        (line,) = progress_lines(run.stderr.splitlines())
        read_only = f"{home} is on a read-only file system"
        assert line.startswith(f"litpipe run: {read_only}") and line.endswith(
            f"{KEPT}; {MAKE_WRITABLE}"
        )
        status = litpipe(home, tiny_model, "status")
        assert status.returncode == 2
        (status_line,) = status.stderr.splitlines()
        assert status_line.startswith(f"litpipe status: {read_only}")
        assert "Traceback" not in status.stdout + status.stderr

        remount(disk, "rw")
        assert report.read_text() == before
        rerun = litpipe(home, tiny_model, "run", str(DEMO_CSV))
        assert rerun.returncode == 0, rerun.stderr
        assert json.loads(report.read_text())["papers_up_to_date"] == 40
