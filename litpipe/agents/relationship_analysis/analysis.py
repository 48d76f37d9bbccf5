"""The `analysis` agent: the whole relationship analysis of a collection in one call, as X-Sum's
pipeline 2 makes it: from every question-and-answer pair at once, one key insight per pair (none
skipped), typed relationships between insights of different papers, a theme and a narrative.

It does in one call what `insights` (one call per paper) and `relationships` (one call) do in
`1 + papers` calls, so a collection costs no more calls than X-Sum's pipeline 2. It is used
(`one_call_analysis`) when the three agents go to the same model, the pairs are at most
`MAX_PAIRS` (its reply, an insight per pair, must fit `reply_tokens`) and the prompt with the
reply fits the model's window; otherwise the analysis is made in the two steps, whose calls
each fit a small window.

Its reply is checked as theirs are: each pair's insight against the pair's evidence
(`insights.checked`: a missing one is the offline engine's), relationships between known
insights of different papers, the narrative's markers against the insights'. Its offline
engine (for an item whose reply cannot be used), `offline_one_call`, is theirs in sequence:
`litpipe.extractive.insights`' and `litpipe.extractive.relationships`', the insights numbered
and checked by `insights_from` between them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent, WindowedClient
from litpipe.agents.relationship_analysis.insights import (
    COMPARATIVE_GROUP,
    insights_from,
    pair_block,
    pair_groups,
)
from litpipe.agents.relationship_analysis.relationships import (
    RelationshipDraft,
    citations_block,
    draft_from,
    papers_block,
)
from litpipe.extractive.insights import (
    InsightDraft,
    InsightsInput,
    InsightsReply,
    offline_insights,
)
from litpipe.extractive.relationships import (
    PaperLabel,
    RelationsInput,
    RelationsReply,
    offline_analysis,
)
from litpipe.llm.window import messages_tokens
from litpipe.schemas import Answer, CitedRelationship, Insight, Relationship

# The most pairs one call analyses: its reply holds an insight (~40 tokens) per pair besides the
# relationships, theme and narrative (what the `relationships` agent alone is given 2,048 for).
MAX_PAIRS = 48
# The agents whose work one call does: it is used only when they go to the model it goes to.
SPLIT_AGENTS = ("insights", "relationships")


class AnalysisInput(BaseModel):
    collection: str
    papers: list[PaperLabel]
    groups: list[InsightsInput] = Field(
        description="The pairs by paper, then the comparative ones (`pair_groups`)."
    )
    citations: list[CitedRelationship] = Field(
        default_factory=list,
        description="How papers of the collection relate to those they cite, as their citing "
        "sentences say: evidence for the types.",
    )


class AnalysisInsight(BaseModel):
    insight_id: str = Field(description="The pair's id, `i01`, `i02`, ...")
    text: str = Field(description="One sentence citing the pair's markers.", min_length=1)


class AnalysisReply(BaseModel):
    insights: list[AnalysisInsight]
    relationships: list[Relationship]
    theme: str = Field(description="One sentence.")
    narrative: str = Field(description="3-5 sentences naming every paper, citing each.")


def insight_ids(groups: list[InsightsInput]) -> list[str]:
    """Each pair's insight id, in order: `i01`, `i02`, ... as `insights_from` numbers them."""
    count = sum(len(group.answers) for group in groups)
    return [f"i{index:02d}" for index in range(1, count + 1)]


def _labels(groups: list[InsightsInput], titles: dict[str, str]) -> list[PaperLabel]:
    """Every paper, the collection's in their order, then any other a comparative pair names."""
    papers = list(titles)
    named = [p for g in groups for a in g.answers for p in [g.paper_id, *a.question.papers]]
    papers = list(dict.fromkeys([*papers, *(p for p in named if p)]))
    return [
        PaperLabel(label=f"P{index}", paper_id=paper, title=titles.get(paper, "") or paper)
        for index, paper in enumerate(papers, start=1)
    ]


def _pair_paper(group: InsightsInput, answer: Answer, label: dict[str, str]) -> str:
    if group.paper_id != COMPARATIVE_GROUP:
        return label[group.paper_id]
    papers = [label[p] for p in answer.question.papers if p in label]
    return "comparative: " + ", ".join(papers) if papers else "comparative"


def _insights(inputs: AnalysisInput, reply: AnalysisReply) -> list[Insight]:
    """The reply's insights as `insights_from` checks them: by pair, in order."""
    drafts: dict[str, str] = {}
    for insight in reply.insights:
        drafts.setdefault(insight.insight_id, insight.text)
    ids = iter(insight_ids(inputs.groups))
    replies = []
    for group in inputs.groups:
        written = []
        for answer in group.answers:
            text = drafts.get(next(ids), "")
            if text.strip():
                written.append(InsightDraft(question_id=answer.question.question_id, text=text))
        replies.append(InsightsReply(insights=written))
    return insights_from(inputs.groups, replies)


def offline_one_call(inputs: AnalysisInput) -> AnalysisReply:
    """The `insights` and `relationships` offline engines in sequence (every pair of insights
    weighed: a set small enough for one call)."""
    insights = insights_from(inputs.groups, [offline_insights(g) for g in inputs.groups])
    related = offline_analysis(
        RelationsInput(collection=inputs.collection, papers=inputs.papers, insights=insights)
    )
    return AnalysisReply(
        insights=[AnalysisInsight(insight_id=i.insight_id, text=i.text) for i in insights],
        relationships=related.relationships,
        theme=related.theme,
        narrative=related.narrative,
    )


class AnalysisAgent(Agent[AnalysisInput, AnalysisReply]):
    name = "analysis"
    reply_tokens = 4096
    offline = staticmethod(offline_one_call)

    def prompt_values(self, inputs: AnalysisInput) -> dict[str, str]:
        label = {paper.paper_id: paper.label for paper in inputs.papers}
        papers = papers_block(inputs.papers)
        ids = iter(insight_ids(inputs.groups))
        pairs = "\n\n".join(
            f"Pair {next(ids)} ({_pair_paper(group, answer, label)}). {pair_block(answer)}"
            for group in inputs.groups
            for answer in group.answers
        )
        count = sum(len(group.answers) for group in inputs.groups)
        citations = citations_block(inputs.citations, label)
        return dict(papers=papers, count=str(count), pairs=pairs, citations=citations)


def analysis_input(
    collection: str,
    pairs: list[Answer],
    titles: dict[str, str],
    citations: Sequence[CitedRelationship] = (),
) -> AnalysisInput:
    groups = pair_groups(pairs)
    return AnalysisInput(
        collection=collection,
        papers=_labels(groups, titles),
        groups=groups,
        citations=list(citations),
    )


def fits_one_call(inputs: AnalysisInput, asker: Asker) -> bool:
    """Whether `one_call_analysis` may make the analysis: a model route shared with the split
    agents', at most `MAX_PAIRS` pairs, and the prompt fitting the window beside the reply
    (a window the client does not know is taken to fit, as every agent's prompt is)."""
    agent = AnalysisAgent()
    route = asker.route(agent)
    if route.offline or any(asker.route(name).model != route.model for name in SPLIT_AGENTS):
        return False
    pairs = sum(len(group.answers) for group in inputs.groups)
    if not 0 < pairs <= MAX_PAIRS:
        return False
    client = asker.client
    if not isinstance(client, WindowedClient):
        return True
    # The window less what litpipe adds to the prompt, less the whole reply: a client keeps at
    # least half the window for the prompt, and one call's reply needs all its room.
    budget = client.prompt_budget(route.model_copy(update={"max_tokens": 1}), agent.reply_schema)
    if budget is None:
        return True
    room = budget + 1 - route.max_tokens
    messages = asker.prompts.render(agent.name, **agent.prompt_values(inputs))
    return messages_tokens(messages, lambda text: client.count_tokens(route, text)) <= room


def one_call_analysis(
    collection: str,
    pairs: list[Answer],
    titles: dict[str, str],
    asker: Asker,
    citations: Sequence[CitedRelationship] = (),
) -> tuple[list[Insight], RelationshipDraft] | None:
    """The insights and the relationship analysis of `pairs` in one call, checked, the
    `citations` between the papers given as evidence; None where `fits_one_call` says the
    analysis must be made in two steps."""
    inputs = analysis_input(collection, pairs, titles, citations)
    if not fits_one_call(inputs, asker):
        return None
    return analysed(inputs, asker)


def analysed(
    inputs: AnalysisInput,
    asker: Asker,
) -> tuple[list[Insight], RelationshipDraft]:
    """The agent's reply to `inputs`, checked: its insights by pair, its analysis against them."""
    reply = asker.ask(AnalysisAgent(), inputs)
    insights = _insights(inputs, reply)
    related = RelationsReply(
        relationships=reply.relationships, theme=reply.theme, narrative=reply.narrative
    )
    return insights, draft_from(related, insights)
