"""Questions about papers, each naming its paper's PDF: the LitQA2 subset's JSONL format
(`id`, `question`, `pdf_file`; other keys kept out), which `litpipe eval mais` asks of their
own papers."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError


class PaperQuestion(BaseModel):
    id: str = Field(description="The dataset's id of the question.")
    question: str = Field(min_length=1)
    pdf_file: str = Field(min_length=1, description="File name of its paper's PDF.")


def read_questions(path: Path) -> list[PaperQuestion]:
    """Every line's question; a ValueError names the file, the line and what is wrong."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            raise ValueError(f"{path} line {number}: not a JSON object")
        try:
            questions.append(
                PaperQuestion.model_validate(
                    {name: record[name] for name in PaperQuestion.model_fields if name in record}
                )
            )
        except ValidationError as error:
            reason = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
            )
            raise ValueError(f"{path} line {number}: {reason}") from None
    if not questions:
        raise ValueError(f"{path}: no question in it")
    return questions
