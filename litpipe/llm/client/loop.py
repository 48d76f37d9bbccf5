"""Where model calls run.

Every model call of every client runs on one event loop per process, in a daemon thread: a
client's concurrency bound then holds across all its callers (async or not, from any thread),
as do the routes' in-flight limits and breakers (`routes`), and litellm's connection pools and
logging worker live on a loop that never closes. Cache hits are served on the caller's thread
and never wait for that loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar, cast

from litpipe.stopping import result_when_done

R = TypeVar("R")


# One event loop per process for every model call (see the module's docstring).
_loop_lock = threading.Lock()
_loop_of_process: tuple[int, asyncio.AbstractEventLoop] | None = None


def model_call_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for model calls, started on first use. Run any other litellm
    call on it too: litellm rebinds its logging worker whenever it meets another loop."""
    global _loop_of_process
    with _loop_lock:
        # A forked child inherits the variable but not the thread: it starts its own.
        if _loop_of_process is None or _loop_of_process[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="litpipe-llm", daemon=True).start()
            _loop_of_process = (os.getpid(), loop)
        return _loop_of_process[1]


async def _all_or_first_failure(calls: Sequence[Coroutine[Any, Any, R]]) -> list[R]:
    """Each call's result, in order; every call runs to its end (its reply cached) before the
    first failure is raised, so that a rerun repeats only the calls that failed."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast(list[R], results)


async def _on_model_call_loop(coroutine: Coroutine[Any, Any, R]) -> R:
    loop = model_call_loop()
    if asyncio.get_running_loop() is loop:
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


def _run_sync(coroutine: Coroutine[Any, Any, R]) -> R:
    loop = model_call_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coroutine.close()
        raise RuntimeError("a synchronous call from the model-call loop would wait for itself")
    return result_when_done(asyncio.run_coroutine_threadsafe(coroutine, loop))
