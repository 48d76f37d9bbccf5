"""The offline engine of the `claim_judge` agent: does the passage a claim cites say what the
claim says?

It grades by the calibrated support score (`litpipe.retrieval.support`). The score needs an
encoder, which an agent's input cannot carry: the grading step scores every claim in one
embedding batch and hands each claim its score (`ClaimInput.offline_score`, never shown to a
model). Without a score (no encoder) it falls back to the lexical share, as `support_scores`
does.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.retrieval.support import SupportScore, support_scores
from litpipe.schemas import Verdict


class ClaimInput(BaseModel):
    claim: str = Field(description="The cited segment, markers removed.")
    passages: list[str] = Field(description="What its markers cite.")
    offline_score: SupportScore | None = Field(
        default=None, description="The offline engine's score, computed in the step's batch."
    )
    threshold: float = Field(description="Least score of a supported claim.")
    partial_threshold: float | None = Field(
        default=None,
        description="Least score of a partially supported one; None when the score has no "
        "calibrated middle band (the lexical share).",
    )


class ClaimReply(BaseModel):
    # The reason first: a model writing its JSON in order reasons before it decides.
    reason: str = Field(description="One sentence: what the passages hold or lack of the claim.")
    verdict: Literal["supported", "partially_supported", "unsupported"]


def offline_verdict(score: float, threshold: float, partial_threshold: float | None) -> Verdict:
    """The verdict a support score stands for: supported at `threshold` or above, partially
    supported down to `partial_threshold` (when there is one), unsupported below."""
    if score >= threshold:
        return "supported"
    if partial_threshold is not None and score >= partial_threshold:
        return "partially_supported"
    return "unsupported"


def offline_claim_judge(inputs: ClaimInput) -> ClaimReply:
    scored = inputs.offline_score
    if scored is None:
        (scored,) = support_scores([(inputs.claim, inputs.passages)], None)
    verdict = offline_verdict(scored.score, inputs.threshold, inputs.partial_threshold)
    if not inputs.passages:
        reason = "No passage is cited for this claim."
    else:
        measure = "support score" if scored.semantic is not None else "share of its terms found"
        reason = f"{measure}: {scored.score:.3f}, supported at {inputs.threshold:.3f}"
        if scored.missing:
            reason += "; the passages lack: " + ", ".join(scored.missing)
    return ClaimReply(reason=reason, verdict=verdict)
