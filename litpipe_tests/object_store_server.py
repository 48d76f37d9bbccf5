"""A throwaway S3-compatible server on 127.0.0.1 for tests: moto's standalone server
(`moto[server]`, a dev dependency), a bucket made for each test, its credentials and endpoint
handed to litpipe through the environment as a deployment hands them (LanceDB's object-store
client and boto3 read the same AWS_* variables).

moto keeps its objects in memory and answers S3's API, conditional puts included, which is
what LanceDB commits with. It proves litpipe's reads and writes through that API; it does not
prove S3's or MinIO's consistency under load, their latencies, or their permissions."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

START_TIMEOUT_S = 30
REGION = "us-east-1"


@dataclass(frozen=True)
class ObjectStoreServer:
    endpoint: str

    def environment(self) -> dict[str, str]:
        """The variables a deployment sets for its object store (moto takes any keys)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "litpipe-test",
            "AWS_SECRET_ACCESS_KEY": "litpipe-test",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            # The endpoint is plain HTTP on loopback, which LanceDB refuses unless allowed.
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self) -> Any:  # boto3 ships no types
        import boto3

        environment = self.environment()
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"],
        )

    def new_bucket(self) -> str:
        bucket = f"litpipe-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object's key under `prefix` in `bucket`."""
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def object_store_server() -> Iterator[ObjectStoreServer]:
    """moto's server on a free port of 127.0.0.1, stopped at the end."""
    port = _free_port()
    # Its log to a file: it writes a line a request, which would fill an unread pipe and stall it.
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(server, port, log)
            yield ObjectStoreServer(endpoint=f"http://127.0.0.1:{port}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


def _wait_for(server: subprocess.Popen[bytes], port: int, log: IO[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                said = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"moto's server did not start on {port}: {said}") from None
            time.sleep(0.1)
