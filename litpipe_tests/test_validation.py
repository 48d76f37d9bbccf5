"""One line for a pydantic ValidationError, as every message of litpipe says one: where and
what, a validator's own words, at most eight problems."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError, create_model, field_validator

from litpipe.validation import MOST_PROBLEMS, validation_problems


class Inner(BaseModel):
    size: int = Field(ge=1)


class Request(BaseModel):
    query: str
    inner: Inner

    @field_validator("query")
    @classmethod
    def _not_empty(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("the query is empty: say what to look for")
        return query


def refusal(model: type[BaseModel], value: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(value)
    return caught.value


def test_each_problem_says_where_and_what_in_the_validators_own_words() -> None:
    error = refusal(Request, {"query": " ", "inner": {"size": 0}})
    assert validation_problems(error) == (
        "query: the query is empty: say what to look for; "
        "inner.size: Input should be greater than or equal to 1"
    )
    assert validation_problems(error, locations=False) == (
        "the query is empty: say what to look for; Input should be greater than or equal to 1"
    )


def test_a_problem_of_the_whole_value_has_no_where() -> None:
    assert validation_problems(refusal(Inner, [1])) == (
        "Input should be a valid dictionary or instance of Inner"
    )


@given(st.integers(min_value=1, max_value=30))
def test_at_most_eight_problems_then_how_many_more(count: int) -> None:
    model = create_model("Wide", **{f"field{i}": (int, ...) for i in range(count)})
    said = validation_problems(refusal(model, {}))
    shown = min(count, MOST_PROBLEMS)
    assert said.count("Field required") == shown
    assert "\n" not in said
    if count > MOST_PROBLEMS:
        assert said.endswith(f"; and {count - MOST_PROBLEMS} more")
    else:
        assert "more" not in said
