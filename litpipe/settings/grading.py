"""The `[grading]` settings: the support thresholds, and whether a failing grade blocks."""

from __future__ import annotations

from pydantic import Field

from litpipe.settings.base import SettingsGroup


class GradingSettings(SettingsGroup):
    """How written outputs (syntheses, summaries, related work) are graded against their
    passages, and whether a failing grade blocks what follows."""

    support_threshold: float = Field(
        # Fitted on the train half of real pairs (benchmarks/support_calibration.py), for the
        # default embedder (MiniLM); another embedder's cosines need their own calibration.
        default=0.579,
        ge=0,
        le=1,
        description="Least support score of a cited sentence (embedding cosine with its "
        "closest cited passage sentence, mixed with the share of its terms they hold).",
    )
    partial_support_threshold: float = Field(
        # Measured on the same labelled pairs (docs/methods.md, "Grading outputs"): below it ~97% of
        # pairs are mismatched; between it and `support_threshold` one in five is a true pair.
        default=0.45,
        ge=0,
        le=1,
        description="Offline grading with an embedder: a cited segment scoring at least this "
        "(and under `support_threshold`) is `partially_supported`, below it `unsupported`.",
    )
    blocking: bool = Field(
        default=False,
        description="Whether a failing grading check (support, completeness, coherence) of a "
        "written output blocks what follows it, as a synthesis' coverage and citation validity "
        "always do.",
    )
