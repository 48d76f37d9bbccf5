"""litpipe's offline extractive engine: every agent's reply written from the inputs' own text,
deterministically, with no model. It imports nothing of `litpipe.agents`: an agent names its
engine function here, and the engine can be used, tested and read on its own."""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil


@functools.cache
def source() -> str:
    """The source of every module of the engine, in name order: part of each agent's code
    version, so that an edit to the engine rebuilds what its replies wrote."""
    names = sorted(info.name for info in pkgutil.walk_packages(__path__, f"{__name__}."))
    return "\n".join(
        inspect.getsource(importlib.import_module(name)) for name in [__name__, *names]
    )
