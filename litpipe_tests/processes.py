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
    terminates them with SIGTERM, which a worker ignores when the test process hands it an
    ignored SIGTERM (as an earlier test in the same pytest worker may leave it): the join then
    waits for ever."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.starmap(function, arguments)
        pool.close()
        pool.join()
    return results
