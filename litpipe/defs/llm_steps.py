"""What every model-calling step shares: its usage scope and the usage it reports, its pool
and its retry policy."""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import dagster as dg

from litpipe.llm.errors import LLMError, TransientLLMError
from litpipe.schemas import LLMUsage
from litpipe.settings import Settings

# The Dagster pool of the steps that may call a model: its limit (instance-wide, across runs)
# bounds how many such steps run at once, each with up to `llm_concurrency` calls in flight.
LLM_POOL = "llm"


def calls_a_model(settings: Settings, agents: Iterable[str]) -> bool:
    """Whether a step running these agents may call a model (and not only the offline engine)."""
    return any(not settings.route(agent).offline for agent in agents)


def llm_pool(settings: Settings, agents: Iterable[str]) -> str | None:
    """The step's pool: `llm` when one of its agents has a model; offline steps claim no slot."""
    return LLM_POOL if calls_a_model(settings, agents) else None


def llm_retry_policy(settings: Settings, agents: Iterable[str]) -> dg.RetryPolicy | None:
    """Dagster's retries of a model-calling step. The client already retried each call; this
    outlasts a longer outage. `model_failures_as_step_failures` lets only transient model errors
    through (a bad key, an invalid reply or the budget fail at once), and input errors are
    raised with `allow_retries=False`."""
    if settings.llm_step_retries == 0 or not calls_a_model(settings, agents):
        return None
    return dg.RetryPolicy(
        max_retries=settings.llm_step_retries,
        delay=settings.llm_step_retry_delay_s,
        backoff=dg.Backoff.EXPONENTIAL,
        jitter=dg.Jitter.PLUS_MINUS,
    )


# `litpipe run` tags its runs with one scope, so its budget and report span all of its runs;
# a run launched from the UI or a sensor is its own scope.
USAGE_SCOPE_TAG = "litpipe/usage_scope"


def usage_scope(context: dg.AssetExecutionContext) -> str:
    return context.run.tags.get(USAGE_SCOPE_TAG, context.run.run_id)


def usage_metadata(usage: LLMUsage) -> dict[str, float | int]:
    return {f"llm_{name}": value for name, value in usage.model_dump().items()}


# The metadata flag of a step failed because a signal interrupted its model calls.
INTERRUPTED = "litpipe/interrupted"


@contextmanager
def model_failures_as_step_failures() -> Iterator[None]:
    """A model error fails the step with its one-line message (which says what to fix); only a
    transient one (retries exhausted) may be retried by Dagster's retry policy. A signal that
    interrupts the model calls fails it too, flagged `INTERRUPTED`: Dagster would retry an
    interrupted step under its retry policy and the run would go on, but a stop was asked."""
    try:
        yield
    except LLMError as error:
        raise dg.Failure(
            description=str(error), allow_retries=isinstance(error, TransientLLMError)
        ) from error
    except dg.DagsterExecutionInterruptedError as interruption:
        raise dg.Failure(
            description="interrupted (stop requested)",
            allow_retries=False,
            metadata={INTERRUPTED: True},
        ) from interruption
