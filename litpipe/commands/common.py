"""Helpers more than one command uses: the lines of an asset's grading checks, and the
settings with `--max-iterations` applied."""

from __future__ import annotations

from collections.abc import Iterable

from litpipe.schemas import CheckReport
from litpipe.settings import Settings


def grading_lines(checks: list[CheckReport], asset: str, names: Iterable[str]) -> list[str]:
    """One line per grading check of the asset (in the order of `names`): its latest result."""
    order = list(names)
    graded = [c for c in checks if c.asset == asset and c.check in order]
    return [
        f"Check {c.check}: {c.verdict()}: {c.description}"
        for c in sorted(graded, key=lambda c: order.index(c.check))
    ]


def with_max_iterations(settings: Settings, max_iterations: int | None) -> Settings:
    """`settings` with the MAIS loop's `--max-iterations` (a ValueError under 1)."""
    if max_iterations is None:
        return settings
    if max_iterations < 1:
        raise ValueError(f"--max-iterations must be at least 1, not {max_iterations}")
    values = settings.model_dump()
    values["query_summary"]["max_iterations"] = max_iterations
    return Settings.model_validate(values)
