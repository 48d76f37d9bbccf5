"""The evaluations' JSONL datasets: every reader (ScholarQA, related work, LitQA2, SciTLDR)
reads its lines as its records and refuses a bad one naming the file, the line and what is
wrong, blank lines not counted out of the numbering."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

from litpipe.evaluation import litqa, related_work, scholarqa, tldr
from litpipe.evaluation.datasets import json_lines

DATA = Path(__file__).parent / "data"
# Each reader with a dataset it reads and a line of the right JSON shape but wrong content.
READERS: dict[str, tuple[Callable[[Path], Sequence[BaseModel]], Path, str, str]] = {
    "scholarqa": (
        scholarqa.read_examples,
        DATA / "scholarqa" / "scholarqa_multi_first20.jsonl",
        '{"id": "q", "query": "Why?", "papers": []}',
        "gold_answer: Field required",
    ),
    "related_work": (
        related_work.read_examples,
        DATA / "related-work-tiny" / "related_work_tiny.jsonl",
        '{"idx": "seven", "query_abstract": "A.", "ref_abstracts": [], "gold_related_work": ""}',
        "idx: Input should be a valid integer",
    ),
    "litqa": (
        litqa.read_questions,
        DATA / "litqa2" / "litqa2_subset_with_pdfs.jsonl",
        '{"id": "a", "question": "", "pdf_file": "a.pdf"}',
        "question: String should have at least 1 character",
    ),
    "tldr": (
        tldr.read_examples,
        DATA / "scitldr" / "scitldr_a_test_sample.jsonl",
        '{"paper_id": 7, "source": ["An abstract."], "target": [" "]}',
        "target: no gold TL;DR",
    ),
}


@pytest.mark.parametrize("name", READERS)
@pytest.mark.parametrize(
    ("bad", "reason"),
    [("{not json", "not JSON (Expecting property name"), ("[1, 2]", "not a JSON object")],
)
def test_a_line_that_is_no_json_object_is_refused_with_its_file_and_number(
    tmp_path: Path, name: str, bad: str, reason: str
) -> None:
    read, sample, _, _ = READERS[name]
    dataset = tmp_path / "bad.jsonl"
    first = sample.read_text(encoding="utf-8").splitlines()[0]
    dataset.write_text(f"{first}\n\n{bad}\n", encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read(dataset)
    assert str(refused.value).startswith(f"{dataset} line 3: {reason}")


@pytest.mark.parametrize("name", READERS)
def test_a_line_its_model_refuses_says_which_field_and_why(tmp_path: Path, name: str) -> None:
    read, sample, bad, reason = READERS[name]
    dataset = tmp_path / "bad.jsonl"
    first = sample.read_text(encoding="utf-8").splitlines()[0]
    dataset.write_text(f"{first}\n{bad}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: ") as refused:
        read(dataset)
    assert str(refused.value).startswith(f"{dataset} line 2: ")
    assert reason in str(refused.value)
    # The first line alone reads as one record.
    dataset.write_text(f"{first}\n", encoding="utf-8")
    assert len(read(dataset)) == 1


class Pair(BaseModel):
    question: str
    paper: str


def test_lines_are_numbered_as_the_file_has_them_and_extra_keys_are_left_out(
    tmp_path: Path,
) -> None:
    dataset = tmp_path / "pairs.jsonl"
    dataset.write_text(
        '\n{"question": "Why?", "paper": "p1", "recorded_at": "today"}\n  \n'
        '{"question": "How?", "paper": "p2"}\n',
        encoding="utf-8",
    )
    assert list(json_lines(dataset, Pair)) == [
        (2, Pair(question="Why?", paper="p1")),
        (4, Pair(question="How?", paper="p2")),
    ]
