"""The optional collection steps: the comparative questions, a thin paper's follow-up
questions and the plain-language summary. The synthesis is written without them, so a model
that fails one of them (any model error: a reply unusable even after repair, a refused request,
a provider that kept failing, the budget) costs that step alone: it is recorded as not run, with
why, and its output is left empty. A programming error or a stop still ends the run."""

from __future__ import annotations

import logging

from litpipe.llm.errors import LLMError
from litpipe.schemas import OptionalStep, StepNotRun

logger = logging.getLogger(__name__)


def not_run(step: OptionalStep, error: LLMError, paper_id: str | None = None) -> StepNotRun:
    """The record of `step` (for `paper_id`, if its own) failed by `error`, logged as a
    warning."""
    record = StepNotRun(step=step, paper_id=paper_id, reason=error_reason(error))
    logger.warning("%s; the synthesis is written without it", record.line())
    return record


def error_reason(error: LLMError) -> str:
    """A model error's message as the one-line reason a reader is given: whole (the client's
    messages are short and redacted already), its whitespace collapsed."""
    return " ".join(str(error).split())
