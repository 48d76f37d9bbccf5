"""Why a model call failed, in one line that says what to fix and never holds a key."""

from __future__ import annotations

import os
import re

from litpipe.url_credentials import hide_credentials

# Environment variables whose values are secrets: provider keys, tokens, passwords.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
# Shorter values (flags, region names) would redact ordinary words.
_MIN_SECRET_LENGTH = 8


class LLMError(Exception):
    """A model call that did not give a valid reply."""


class PermanentLLMError(LLMError):
    """Retrying cannot help (a refused key, a bad request, an unknown model): fix the setting."""


class ContextOverflowError(PermanentLLMError):
    """The request does not fit the model's context window, even with the least room for a
    reply: the agent's input must be cut.

    `window` is the window it did not fit where the client knows it (from the settings, the
    server, or the server's refusal of this very request): a prompt fitted before the client
    knew it may be fitted to it and asked once more."""

    def __init__(self, message: str, window: int | None = None) -> None:
        super().__init__(message)
        self.window = window


class TransientLLMError(LLMError):
    """The provider kept failing (rate limits, 5xx, timeouts, dropped connections)."""


class ModelUnreachableError(LLMError):
    """The route's server is not answering (timeouts or refused connections, one after another:
    its breaker is open), or the run's time for waiting on models is spent: nothing more is
    sent to it, and each item is written offline or fails, as `llm.on_unusable` says. Not
    transient: a step retry would only wait again."""


class ReplyValidationError(LLMError):
    """The reply did not match the agent's output schema, even after one repair."""


class BudgetExceededError(LLMError):
    """The next call could take the run over `llm.budget_usd`; nothing was sent."""


class NightlyBudgetExceededError(BudgetExceededError):
    """The next call could take the day's calls of all runs over `llm.nightly_budget_usd`;
    nothing was sent."""


def redact(text: str) -> str:
    """`text` with the value of every secret-looking environment variable, and the password of
    every URL (an api base a provider's message names), replaced by ***."""
    for name, value in os.environ.items():
        if len(value) >= _MIN_SECRET_LENGTH and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, "***")
    return hide_credentials(text)


def one_line(text: str, limit: int = 300) -> str:
    """A provider's message fit for ours: whitespace collapsed, secrets redacted, shortened."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
