"""ACU accuracy for MAIS: atomic content units (ACUs), short facts of the paper that a summary
for the query must hold, are written once per request (`summary_acus`); at each pass of the loop
`summary_acu_check` says which of them the summary holds, and the share held is the pass's ACU
accuracy, reported beside the judge's overall accuracy. ACUs and their check never steer the
loop: they measure it.

The offline engines: the ACUs are the paper's key sentences for the query (the source sentences
holding any query term, picked by maximal marginal relevance, markers removed); a unit is held
when one sentence of the summary holds at least `COVERED` of its terms (the judge's own test).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.agents.paper_summary import evidence_sentences, mmr_sentences
from litpipe.agents.query_summary import ranked_sentences, summary_sentences, unmarked
from litpipe.agents.summary_judge import covers
from litpipe.citations import evidence_block
from litpipe.llm.prompts import fence
from litpipe.schemas import AtomicContentUnit, RetrievedChunk


class AcusInput(BaseModel):
    paper_id: str
    title: str
    query: str
    passages: list[RetrievedChunk] = Field(description="What the summarizer is first given.")
    most: int = Field(ge=1, description="ACUs at most.")


class AcuText(BaseModel):
    text: str = Field(description="One fact of the paper, in a short sentence.")


class AcusReply(BaseModel):
    units: list[AcuText] = Field(
        description="The facts a summary answering the query must hold, most important first."
    )


def offline_acus(inputs: AcusInput) -> AcusReply:
    candidates = evidence_sentences(inputs.passages)
    relevant = {sentence for _, sentence in ranked_sentences(inputs.query, candidates)}
    # In passage order, so that MMR's ties go to the earlier sentence.
    in_order = [sentence for sentence in candidates if sentence in relevant]
    key = mmr_sentences(in_order, about=[inputs.query], chosen=[], count=inputs.most)
    return AcusReply(units=[AcuText(text=unmarked(sentence)) for sentence in key])


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


class AcuCheckInput(BaseModel):
    summary: str
    units: list[AtomicContentUnit]


class AcuCheck(BaseModel):
    acu_id: str = Field(description="The unit's id, exactly as given.")
    held: bool = Field(description="True when the summary states the unit's fact.")


class AcuCheckReply(BaseModel):
    checks: list[AcuCheck] = Field(description="One per unit, in their order.")


def offline_acu_check(inputs: AcuCheckInput) -> AcuCheckReply:
    sentences = summary_sentences(inputs.summary)
    return AcuCheckReply(
        checks=[
            AcuCheck(
                acu_id=unit.acu_id,
                held=any(covers(sentence, unit.text) for sentence in sentences),
            )
            for unit in inputs.units
        ]
    )


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
