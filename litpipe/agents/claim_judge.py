"""The `claim_judge` agent: does the passage a claim cites say what the claim says?

A claim is one cited segment of a written sentence (its text up to and with one group of
markers, the markers removed); its passages are those its markers cite. The judge replies
supported, partially supported (part of the claim is in the passages, part is not) or
unsupported, with a reason.

Its offline engine (`litpipe.extractive.claim_judge.offline_claim_judge`) grades by the
calibrated support score (`litpipe.retrieval.support`), which the grading step computes for
every claim in one embedding batch.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.extractive.claim_judge import ClaimInput, ClaimReply, offline_claim_judge
from litpipe.llm.prompts import fence


class ClaimJudgeAgent(Agent[ClaimInput, ClaimReply]):
    name = "claim_judge"
    reply_tokens = 256
    grades = True
    offline = staticmethod(offline_claim_judge)

    def prompt_values(self, inputs: ClaimInput) -> dict[str, str]:
        passages = "\n\n".join(" ".join(passage.split()) for passage in inputs.passages)
        return dict(
            # The claim quotes a written output, which quotes the papers: fenced like them.
            claim=fence(inputs.claim, "claim"),
            passages=fence(passages or "(no passages)"),
        )
