"""What every model-calling step shares: its usage scope and the usage it reports."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from litpipe.llm.errors import LLMError, TransientLLMError
from litpipe.schemas import LLMUsage

# `litpipe run` tags its runs with one scope, so its budget and report span all of its runs;
# a run launched from the UI or a sensor is its own scope.
USAGE_SCOPE_TAG = "litpipe/usage_scope"


def usage_scope(context: dg.AssetExecutionContext) -> str:
    return context.run.tags.get(USAGE_SCOPE_TAG, context.run.run_id)


def usage_metadata(usage: LLMUsage) -> dict[str, float | int]:
    return {f"llm_{name}": value for name, value in usage.model_dump().items()}


@contextmanager
def model_failures_as_step_failures() -> Iterator[None]:
    """A model error fails the step with its one-line message (which says what to fix); only a
    transient one (retries exhausted) may be retried by Dagster's retry policy."""
    try:
        yield
    except LLMError as error:
        raise dg.Failure(
            description=str(error), allow_retries=isinstance(error, TransientLLMError)
        ) from error
