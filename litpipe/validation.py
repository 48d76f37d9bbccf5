"""A pydantic `ValidationError` in one line, as every message of litpipe says one: a settings
value refused, a dataset's line, a request, a model's reply."""

from __future__ import annotations

from pydantic import ValidationError

# Shown of one error at the most: a reply with every field wrong would otherwise fill a screen.
MOST_PROBLEMS = 8


def validation_problems(error: ValidationError, *, locations: bool = True) -> str:
    """`where: what` for each problem, `; `-joined, `; and N more` after the first
    `MOST_PROBLEMS`. A validator's own message is given in its words (without pydantic's
    `Value error, `); `locations=False` leaves out where, for a model whose validators name
    the field themselves."""
    parts = []
    for problem in error.errors(include_url=False)[:MOST_PROBLEMS]:
        message = problem["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in problem["loc"]) if locations else ""
        parts.append(f"{where}: {message}" if where else message)
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
