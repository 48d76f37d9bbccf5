"""The offline engines of ACU accuracy for MAIS (`summary_acus`, `summary_acu_check`): the atomic
content units (ACUs), short facts of the paper that a summary for the query must hold, and which
of them a summary holds.

The ACUs are the paper's key sentences for the query (the source sentences holding any query
term, picked by maximal marginal relevance, markers removed); a unit is held when one sentence
of the summary holds at least `COVERED` of its terms (the judge's own test).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import evidence_sentences, mmr_sentences
from litpipe.extractive.query_summary import ranked_sentences, summary_sentences, unmarked
from litpipe.extractive.summary_judge import covers
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
