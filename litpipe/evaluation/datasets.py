"""The evaluations' JSONL datasets, read line by line: each line a record of the dataset's
pydantic model, a bad line refused with the file, the line and what is wrong."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from litpipe.validation import validation_problems

Record = TypeVar("Record", bound=BaseModel)


def line_error(path: Path, number: int, reason: str) -> ValueError:
    """What a dataset's bad line raises: `<path> line <number>: <reason>`."""
    return ValueError(f"{path} line {number}: {reason}")


def json_lines(path: Path, model: type[Record]) -> Iterator[tuple[int, Record]]:
    """Each non-blank line's number and its record as `model` (keys `model` has no field for
    left out); a `line_error` for a line that is not a JSON object or not a `model`."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise line_error(path, number, f"not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise line_error(path, number, "not a JSON object")
        try:
            yield number, model.model_validate(record)
        except ValidationError as error:
            raise line_error(path, number, validation_problems(error)) from None
