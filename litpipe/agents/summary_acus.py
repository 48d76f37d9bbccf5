"""ACU accuracy for MAIS: atomic content units (ACUs), short facts of the paper that a summary
for the query must hold, are written once per request (`summary_acus`); at each pass of the loop
`summary_acu_check` says which of them the summary holds, and the share held is the pass's ACU
accuracy, reported beside the judge's overall accuracy. ACUs and their check never steer the
loop: they measure it.

Their offline engines (`litpipe.extractive.summary_acus.offline_acus` and
`offline_acu_check`): the paper's key sentences for the query, and the judge's own coverage
test.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.citations import evidence_block
from litpipe.extractive.summary_acus import (
    AcuCheckInput,
    AcuCheckReply,
    AcusInput,
    AcusReply,
    offline_acu_check,
    offline_acus,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import AtomicContentUnit


class AcusAgent(Agent[AcusInput, AcusReply]):
    name = "summary_acus"
    reply_tokens = 768
    offline = staticmethod(offline_acus)

    def prompt_values(self, inputs: AcusInput) -> dict[str, str]:
        return dict(
            query=fence(inputs.query, "query"),
            title=fence(inputs.title),
            most=str(inputs.most),
            passages=evidence_block(inputs.passages),
        )


def units_from(paper_id: str, reply: AcusReply, most: int) -> list[AtomicContentUnit]:
    """The reply's units, spaced once, without blanks and repeats, at most `most`, each with
    its id `<paper_id>:u<index>`."""
    texts = list(dict.fromkeys(" ".join(unit.text.split()) for unit in reply.units))
    return [
        AtomicContentUnit(acu_id=f"{paper_id}:u{index}", text=text)
        for index, text in enumerate([text for text in texts if text][:most])
    ]


class AcuCheckAgent(Agent[AcuCheckInput, AcuCheckReply]):
    name = "summary_acu_check"
    reply_tokens = 512
    offline = staticmethod(offline_acu_check)

    def prompt_values(self, inputs: AcuCheckInput) -> dict[str, str]:
        units = "\n".join(f"{unit.acu_id}: {unit.text}" for unit in inputs.units)
        return dict(
            summary=fence(inputs.summary or "(empty)", "summary"),
            # The units quote the paper: fenced like it.
            units=fence(units, "units"),
        )


def acu_accuracy(inputs: AcuCheckInput, reply: AcuCheckReply) -> float:
    """The share of the units the reply says the summary holds: each unit by its first check
    (unknown ids ignored); a unit left unchecked counts as not held, nothing vouching for it."""
    held: dict[str, bool] = {}
    for check in reply.checks:
        held.setdefault(check.acu_id.strip(), check.held)
    return sum(held.get(unit.acu_id, False) for unit in inputs.units) / len(inputs.units)
