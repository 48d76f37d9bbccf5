"""What every model-calling step shares: its usage scope and the usage it reports, its pool
and its retry policy, how a model error fails it. A step declares its agents and its code
version once (`ModelStep`); the rest is derived from them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TypeVar, cast

import dagster as dg
from pydantic import BaseModel

from litpipe.agents.answers import ANSWER_AGENTS
from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import CodeVersion, versioned_asset, versioned_output
from litpipe.llm.errors import LLMError, TransientLLMError
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.shared_limits import limits_database, nightly_budget_spent
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import LLMUsage, NightlyBudgetSpent
from litpipe.settings import LLMSettings
from litpipe.settings.groups import SettingsGroups

Output = TypeVar("Output", bound=BaseModel)

# The agents of a collection stage that asks questions of its own (comparative, follow-up):
# reranked retrieval and answers, whose version is `versions.ASKING`.
ASKING_AGENTS = (*ANSWER_AGENTS, *AGENT_RERANKERS)

# The Dagster pool of the steps that may call a model: its limit (instance-wide, across runs)
# bounds how many such steps run at once, each with up to `llm.concurrency` calls in flight.
LLM_POOL = "llm"


def llm_pool(asker: Asker, agents: Sequence[str]) -> str | None:
    """The step's pool: `llm` when one of its agents has a model; offline steps claim no slot."""
    return LLM_POOL if asker.any_model(agents) else None


def llm_retry_policy(
    llm: LLMSettings, asker: Asker, agents: Sequence[str]
) -> dg.RetryPolicy | None:
    """Dagster's retries of a model-calling step. The client already retried each call; this
    outlasts a longer outage. `model_failures_as_step_failures` lets only transient model errors
    through (a bad key, an invalid reply or the budget fail at once), and input errors are
    raised with `allow_retries=False`."""
    if llm.step_retries == 0 or not asker.any_model(agents):
        return None
    return dg.RetryPolicy(
        max_retries=llm.step_retries,
        delay=llm.step_retry_delay_s,
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


def model_limits_at(instance: dg.DagsterInstance, llm: LLMSettings) -> str | None:
    """Where `llm.rate_limits` and `llm.nightly_budget_usd` are counted: the instance's
    PostgreSQL (the URL its run storage connects to), so that every machine of a deployment
    shares them; None, the home's SQLite file, for any other instance. Not looked up without
    either setting."""
    if not llm.rate_limits and llm.nightly_budget_usd is None:
        return None
    for storage in (instance.run_storage, instance.event_log_storage):
        url = getattr(storage, "postgres_url", None)
        if isinstance(url, str):
            return url
    return None


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


@dataclass(frozen=True)
class ModelStep:
    """A step that may call a model, declared once: the agents it may run (their routes put it
    in the `llm` pool with its retry policy, and give it a client) and its code version's
    inputs. `asset` builds its definition; `run` opens its model calls."""

    agents: tuple[str, ...]
    code: CodeVersion

    def asset(
        self, groups: SettingsGroups, *, checks_may_skip: bool = False, **asset_args: Any
    ) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
        """`dg.asset` with the step's pool, retry policy and code version under the settings
        `groups` (`llm` and those its code version reads), each agent's route resolved once for
        all three; with `checks_may_skip`, one whose step may leave a check it could not run
        unreported (`versioned_asset`)."""
        llm = groups["llm"]
        asker = Asker(llm)
        return versioned_asset(
            self.code,
            groups,
            asker=asker,
            checks_may_skip=checks_may_skip,
            pool=llm_pool(asker, self.agents),
            retry_policy=llm_retry_policy(llm, asker, self.agents),
            **asset_args,
        )

    @contextmanager
    def run(
        self, context: dg.AssetExecutionContext, llm: LLMResource | None = None
    ) -> Iterator[StepRun]:
        """The step's model calls, through `llm` (by default its asset's `llm` resource): their
        usage counted towards the run's scope, a model error failing the step
        (`model_failures_as_step_failures`). The `StepRun` stays usable after the block, for
        the output and its usage metadata.

        A step whose checks may be skipped can be launched for its checks alone (the UI offers
        it): they grade the text it writes, so it refuses, saying to materialize the asset."""
        if not context.selected_asset_keys:
            selected = context.selected_asset_check_keys
            asset = ", ".join(sorted({key.asset_key.to_user_string() for key in selected}))
            checks = ", ".join(sorted(key.name for key in selected))
            raise dg.Failure(
                description=f"the checks of {asset} ({checks}) grade what it writes: they run "
                f"when it is materialized, not alone (materialize {asset})",
                allow_retries=False,
            )
        if llm is None:
            llm = cast(LLMResource, context.resources.llm)
        step_llm = llm.settings()
        step = StepRun(
            llm=step_llm,
            prompts=PromptLibrary(step_llm.prompts_dir),
            resource=llm,
            ledger=llm.ledger(usage_scope(context)),
            agents=self.agents,
            limits_at=model_limits_at(context.instance, step_llm),
        )
        with model_failures_as_step_failures():
            yield step


@dataclass
class StepRun:
    """One execution of a `ModelStep`: its `llm` settings (its resource's), prompts, usage
    ledger and clients."""

    llm: LLMSettings
    prompts: PromptLibrary
    resource: LLMResource
    ledger: UsageLedger
    agents: tuple[str, ...]
    # Where the model limits shared by every process are counted (`model_limits_at`).
    limits_at: str | None = None
    # The step's usage when its previous paper was built: each paper shows its own.
    _counted: LLMUsage = field(default_factory=LLMUsage)
    _askers: dict[tuple[str, ...], Asker] = field(default_factory=dict)

    def asker(self, agents: Iterable[str] | None = None) -> Asker:
        """The step's agents (or these `agents`) bound to their models, once per step: one
        client for them (None when all run offline), the step's prompts and usage ledger."""
        chosen = tuple(self.agents if agents is None else agents)
        if chosen not in self._askers:
            asker = Asker(self.llm, None, self.prompts)
            # The client for the routes the asker resolved, which it asks by.
            routes = [asker.route(agent) for agent in chosen]
            asker.client = self.resource.client_for(routes, self.ledger, self.limits_at)
            self._askers[chosen] = asker
        return self._askers[chosen]

    def usage(self) -> dict[str, float | int]:
        return usage_metadata(self.ledger.summary())

    def nightly_budget_spent(self, day: date) -> NightlyBudgetSpent | None:
        """When the model budget of `day` across runs (`llm.nightly_budget_usd`) was spent, and
        the calls it stopped; None where it was not, or there is none (nothing is opened)."""
        if self.llm.nightly_budget_usd is None:
            return None
        where = self.limits_at or self.resource.home_paths().model_limits_path
        return nightly_budget_spent(limits_database(where), day)

    def output(
        self,
        value: Output,
        metadata: Mapping[str, Any],
        version: dg.DataVersion | None = None,
    ) -> dg.Output[Output]:
        """The step's output, versioned by its content unless `version` says otherwise, its
        metadata followed by the step's model usage."""
        return versioned_output(value, {**metadata, **self.usage()}, version)

    def paper(
        self, value: Output, metadata: Mapping[str, Any], version: dg.DataVersion | None = None
    ) -> PaperBuild[Output]:
        """One paper's output in a batch step, its metadata followed by the model usage spent
        on it (since the step's previous paper)."""
        now = self.ledger.summary()
        spent = LLMUsage(
            **{
                name: getattr(now, name) - getattr(self._counted, name)
                for name in LLMUsage.model_fields
            }
        )
        self._counted = now
        return PaperBuild(value, {**metadata, **usage_metadata(spent)}, version)
