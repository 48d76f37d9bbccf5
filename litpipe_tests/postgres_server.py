"""A throwaway PostgreSQL server on 127.0.0.1 for tests, from the binaries of Debian's
`postgresql` package (`.ci/run` installs it where it is missing).

PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` system user
(which the package creates) and its commands run as that user through `runuser`.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SYSTEM_USER = "postgres"
START_TIMEOUT_S = 60
PREFIX = "litpipe-pg-"
OWNER_FILE = "owner.pid"
# The instance the tests and the deployment share.
TEMPLATE = Path(__file__).resolve().parents[1] / "deploy" / "dagster.postgres.yaml"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str

    def environment(self) -> dict[str, str]:
        """The variables deploy/dagster.postgres.yaml reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.database,
        }


def find_binaries() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: on PATH, else Debian's newest
    /usr/lib/postgresql/<version>/bin (the package does not put them on PATH)."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).resolve().parent
    folders = [
        folder
        for folder in Path("/usr/lib/postgresql").glob("*/bin")
        if (folder / "pg_ctl").exists() and (folder / "initdb").exists()
    ]
    if not folders:
        return None
    return max(folders, key=lambda folder: [int(n) for n in re.findall(r"\d+", folder.parent.name)])


def unavailable_reason() -> str | None:
    """Why no server can be started here, or None."""
    if find_binaries() is None:
        return (
            "no PostgreSQL binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin: "
            "install Debian's `postgresql` package (.ci/run does)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            return f"running as root, and there is no `{SYSTEM_USER}` user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root, and there is no `runuser` to run PostgreSQL as postgres"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_as_owner(command: list[str]) -> subprocess.CompletedProcess[str]:
    """`command` as the cluster's owner: the postgres user when we are root, else ourselves."""
    prefix = ["runuser", "-u", SYSTEM_USER, "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)


def reap_orphans(binaries: Path) -> None:
    """Stops and deletes the clusters of test sessions that died without stopping theirs (a
    killed pytest never reaches its `finally`): each cluster's folder names the process that
    started it."""
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            pid = int((root / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not one of ours, or still being set up
        if _alive(pid):
            continue
        if (root / "data" / "postmaster.pid").exists():
            pg_ctl = str(binaries / "pg_ctl")
            _run_as_owner([pg_ctl, "--pgdata", str(root / "data"), "--mode", "immediate", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_postgres(database: str = "dagster") -> Iterator[PostgresServer]:
    """A fresh cluster in a temporary folder, listening on 127.0.0.1 only, with a password
    user and an empty `database`; stopped and deleted on exit."""
    import psycopg2

    binaries = find_binaries()
    assert binaries is not None, unavailable_reason()
    reap_orphans(binaries)
    as_root = os.geteuid() == 0
    # Not under pytest's tmp_path: as root that is a 0700 folder the postgres user cannot enter.
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    data, log, password_file = root / "data", root / "server.log", root / "password"
    server = PostgresServer("127.0.0.1", _free_port(), "litpipe", "litpipe-test", database)
    password_file.write_text(server.password + "\n", encoding="utf-8")
    if as_root:
        account = pwd.getpwnam(SYSTEM_USER)
        for path in (root, password_file):
            os.chown(path, account.pw_uid, account.pw_gid)
    # Written last: a folder whose owner file names a dead process is an orphan to reap.
    (root / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")

    def run(*command: str) -> None:
        done = _run_as_owner(list(command))
        if done.returncode != 0:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, output=done.stdout, stderr=done.stderr
            )

    try:
        run(
            str(binaries / "initdb"),
            "--pgdata",
            str(data),
            "--username",
            server.user,
            "--pwfile",
            str(password_file),
            "--auth",
            "scram-sha-256",
            "--encoding",
            "UTF8",
            "--no-sync",  # a throwaway cluster: no need to wait for the disk
        )
        # TCP on 127.0.0.1 only; its socket in its own folder; fsync off (nothing to keep).
        options = f"-h {server.host} -p {server.port} -k {root} -F -c max_connections=200"
        run(
            str(binaries / "pg_ctl"),
            "--pgdata",
            str(data),
            "--log",
            str(log),
            "--options",
            options,
            "--wait",
            "--timeout",
            str(START_TIMEOUT_S),
            "start",
        )
        try:
            admin = psycopg2.connect(
                host=server.host,
                port=server.port,
                user=server.user,
                password=server.password,
                dbname="postgres",
            )
            admin.autocommit = True  # CREATE DATABASE cannot run in a transaction
            with admin.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{database}"')
            admin.close()
            yield server
        finally:
            run(str(binaries / "pg_ctl"), "--pgdata", str(data), "--mode", "immediate", "stop")
    except subprocess.CalledProcessError as error:
        server_log = log.read_text(errors="replace") if log.exists() else ""
        raise RuntimeError(
            f"{' '.join(error.cmd)} failed:\n{error.stdout}\n{error.stderr}\n{server_log}"
        ) from error
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_for_a_test() -> Iterator[PostgresServer]:
    """`running_postgres()` for a test, which skips without PostgreSQL's binaries: fails instead
    under LITPIPE_REQUIRE_POSTGRES=1 (`.ci/run`, where they are installed)."""
    import pytest

    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("LITPIPE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"LITPIPE_REQUIRE_POSTGRES=1, but {reason}")
        pytest.skip(reason)
    with running_postgres() as server:
        yield server


def template_instance_folder(postgres: PostgresServer, folder: Path) -> dict[str, str]:
    """Writes `folder/dagster.yaml` as deploy/dagster.postgres.yaml, on a new database of its
    own on `postgres`; the DAGSTER_PG_* variables the template reads, to set."""
    import psycopg2

    database = f"test_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(
        host=postgres.host,
        port=postgres.port,
        user=postgres.user,
        password=postgres.password,
        dbname=postgres.database,
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{database}"')
    admin.close()
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TEMPLATE, folder / "dagster.yaml")
    server = PostgresServer(
        postgres.host, postgres.port, postgres.user, postgres.password, database
    )
    return server.environment()
