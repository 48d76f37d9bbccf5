"""The one way litpipe calls a model: an agent's messages in, a validated pydantic object out.

Calls go through litellm's `acompletion`, so any litellm model string works. How the reply's
schema reaches the model is the route's `structured_output`: by default (`auto`) a model that
litellm says takes a JSON-schema response format gets one, and any other is told the schema in
its system message; `json_schema`, `json_object` and `prompt` choose for a server whose model
litellm does not know. In `auto`, a model litellm does not know is asked with a JSON schema
first, and a server that refuses a response format is asked again in the next mode
(`json_schema`, then `json_object`, then `prompt`), which is remembered for that server and
model. Every request is fitted to the model's context window (`litpipe.llm.window`): its reply
gets what room the prompt leaves, down to `MIN_REPLY_TOKENS`, else it fails as
`ContextOverflowError` before anything is sent. A reply is parsed tolerantly (fences and
surrounding prose), and one that fails validation gets one repair request quoting the error.
Transient failures are retried with backoff; permanent ones fail at once with a message saying
what to fix. A server that does not say how many requests it decodes at once gets one at first,
more only while its replies come as fast; one that stops answering (`llm.breaker_failures`
timeouts or refused connections in a row) is unreachable for the rest of the run, and every
call to it fails at once with `ModelUnreachableError`. A server refusing a request as longer
than its window, which it states, teaches the route that window. Validated replies are cached
on disk; every call is recorded in the usage ledger, and a budget stops a run before a call
could take it over.

The modules, one concern each: `core` (`LLMClient`: the cache, the ledger, batches of calls),
`calls` (one call's requests: format, repair, window, retries), `structured` (the modes'
requests and the parsing of replies), `provider_errors` (transient, permanent, a refused
format, a refused window), `model_facts` (what litellm knows of a model), `budget` (costs and
the budget), `routes` (each route's requests in flight and breaker, the run's time for waiting
on models) and `loop` (the process's one event loop for model calls). Their underscored names
are the package's own; the others are imported from here.
"""

from __future__ import annotations

import gc

import litellm

from litpipe.llm.client.calls import MIN_REPLY_TOKENS, PLACEHOLDER_API_KEY
from litpipe.llm.client.core import LLMClient
from litpipe.llm.client.loop import model_call_loop
from litpipe.llm.client.structured import (
    SCHEMA_INSTRUCTION,
    UnusableReply,
    parse_reply,
    structured_request,
)

__all__ = [
    "MIN_REPLY_TOKENS",
    "PLACEHOLDER_API_KEY",
    "SCHEMA_INSTRUCTION",
    "LLMClient",
    "UnusableReply",
    "model_call_loop",
    "parse_reply",
    "structured_request",
]

# litellm otherwise prints a "Give Feedback / Get Help" banner on stdout with every error.
litellm.suppress_debug_info = True
# Importing litellm leaves ~300,000 long-lived objects, which every full pass of the cyclic
# garbage collector would walk again (0.13 s a pass, measured): exempt what exists by now.
gc.freeze()
