"""Functions run in spawned processes by the tests of concurrent writers."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from typing import Any


def starmap_in_processes(
    function: Callable[..., Any], arguments: Iterable[tuple[Any, ...]], processes: int
) -> list[Any]:
    """`function` over `arguments` in `processes` spawned processes; their results in order.

    The pool is closed and joined, so its workers end on their own. Leaving it by `with` alone
    terminates them with SIGTERM, which they ignore when the test process hands them an ignored
    SIGTERM, and the join then waits for ever. That happens after any in-process Dagster run
    in a pytest started with SIGINT ignored (in the background): restoring its interrupt
    handlers, Dagster sets SIGTERM's to SIGINT's (`dagster._utils.interrupts`)."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.starmap(function, arguments)
        pool.close()
        pool.join()
    return results
