"""The `[comparison]` settings: a collection's comparison table (papers as rows, aspects as
columns, every cell a short value citing its passage)."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from litpipe.settings.base import SettingsGroup


class ComparisonSettings(SettingsGroup):
    """The comparison table: its aspects, the size of a cell and the passages it is written
    from."""

    # Before `aspects`: fields validate in order, and the aspects' check reads the limit.
    max_aspects: int = Field(
        default=6,
        ge=1,
        le=20,
        description="Aspects (columns) of the comparison table, at most: the most a model "
        "proposes, and the most `comparison.aspects` may name.",
    )
    aspects: list[str] = Field(
        default_factory=list,
        description='The table\'s aspects, fixed (e.g. ["organism", "method"]); empty, the '
        "default: proposed by the `comparison_aspects` agent from the collection's papers and "
        "answers, offline the fixed six (problem, approach, data, evaluation, main result, "
        "limitations).",
    )
    # A cell is read across a row at a glance: a clause, not a paragraph. But the offline engine
    # cuts a sentence of the paper to the limit, and the support check's embedding cosine scores
    # a short prefix of a long sentence far from it: on the nine bundled papers
    # (benchmarks/comparison_table.py) 12 words left 6 of 51 verbatim cells "not supported",
    # 16 left 2, 20 none. 20 is the shortest of those at which the check holds the paper's own
    # words.
    cell_words: int = Field(
        default=20,
        ge=3,
        le=60,
        description="Words of a cell's value, at most, citations not counted; a longer value "
        "is cut at a word, `…` marking the cut, its markers kept.",
    )
    passages_per_aspect: int = Field(
        default=3,
        ge=1,
        le=10,
        description="A paper's passages retrieved for each aspect (the hybrid retriever over "
        "that paper alone): what its cell is written from and may cite.",
    )

    @field_validator("aspects", mode="after")
    @classmethod
    def _distinct_aspects_within_the_limit(
        cls, aspects: list[str], info: ValidationInfo
    ) -> list[str]:
        named = [" ".join(aspect.split()) for aspect in aspects]
        if any(not aspect for aspect in named):
            raise ValueError("an aspect is empty: name each aspect in words")
        folded = [aspect.casefold() for aspect in named]
        # Each repeated aspect as first written: "Data" and "data" name one column.
        repeated: dict[str, str] = {}
        for aspect, fold in zip(named, folded, strict=True):
            if folded.count(fold) > 1:
                repeated.setdefault(fold, aspect)
        if repeated:
            raise ValueError(f"an aspect named twice: {', '.join(map(repr, repeated.values()))}")
        most = info.data.get("max_aspects")
        if most is not None and len(named) > most:
            raise ValueError(
                f"{len(named)} aspects, over comparison.max_aspects ({most}): name fewer, "
                "or raise comparison.max_aspects"
            )
        return named
