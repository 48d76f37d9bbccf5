"""The `related_work` agent (LitLLM's writer): a related-work section for a research idea from
the top-k references, each with its debate verdict, citing them as `[id]`.

Citations here are the reference table's ids in square brackets (`[abc]`, several as
`[abc; def]`), not the `[paper_id:page]` markers of `litpipe.citations`: a related-work section
cites whole references. Every square bracket of a section is read as a citation (the prompt keeps
brackets for citations only), so a bracket that names no supplied reference is an invented one.
They are written and read by `litpipe.extractive.related_work` (`citation`, `cited_ids`,
`count_words`, ...).

Whatever wrote it, a section is held to three rules, checked by `review`:
- it cites only the references it was given;
- it cites every one of them;
- it has at most N sentences and W words (citations are not words).
The writer's step (`litpipe.workflows.related_work.write_section`) sends a model's section that
breaks any back with one revision request naming each problem; what remains is then fixed
without a model (`settle` there), each fix logged and recorded: invented citations are removed; a
reference still uncited gets a sentence of its own, its abstract's sentence closest to the idea;
a section still too long loses whole sentences (never one that is the only citation of a
reference, the closing one last, as it usually motivates the idea). Sentences are never cut in
the middle; a section that still does not fit is kept, with a warning, and is marked as such.

The offline engine (`litpipe.extractive.related_work.offline_related_work`) is extractive:
every sentence is an abstract's own, citing that abstract only, but for the last, the idea's
own, uncited; the references quoted by query-focused LexRank within N sentences and W words, the
others named in one listing sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from litpipe.agents.base import Agent
from litpipe.extractive.related_work import (
    RelatedWorkInput,
    RelatedWorkReply,
    citation,
    cited_ids,
    count_sentences,
    count_words,
    offline_related_work,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import ScoredReference

# The writer's prompt's {{plan}} when there is a plan: it guides, the rules above it still hold.
PLAN_INSTRUCTION = "\nWrite the section to this plan, the rules above coming first:\n{plan}\n"
REVISION_REQUEST = (
    "Your section cannot be used as it is: {problems}. Write it again, fixing all of this, and "
    "reply with only the JSON object."
)


# The checks every section goes through.


@dataclass
class Review:
    """What a section breaks of the three rules."""

    unknown: list[str]
    missing: list[str]
    sentences: int
    words: int
    max_sentences: int
    max_words: int

    @property
    def within_length(self) -> bool:
        return self.sentences <= self.max_sentences and self.words <= self.max_words

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.missing and self.within_length

    def problems(self, supplied: list[str]) -> list[str]:
        found = []
        if self.unknown:
            found.append(
                f"it cites {', '.join(citation([i]) for i in self.unknown)}, which "
                f"{'is' if len(self.unknown) == 1 else 'are'} not among the references given "
                f"(cite only {', '.join(citation([i]) for i in supplied)})"
            )
        if self.missing:
            found.append(
                f"it does not cite {', '.join(citation([i]) for i in self.missing)} (cite every "
                "reference given at least once)"
            )
        if self.sentences > self.max_sentences:
            found.append(f"it has {self.sentences} sentences, more than {self.max_sentences}")
        if self.words > self.max_words:
            found.append(
                f"it has {self.words} words (citations not counted), more than {self.max_words}"
            )
        return found


def review(text: str, supplied: list[str], max_sentences: int, max_words: int) -> Review:
    cited = cited_ids(text)
    return Review(
        unknown=[i for i in cited if i not in supplied],
        missing=[i for i in supplied if i not in cited],
        sentences=count_sentences(text),
        words=count_words(text),
        max_sentences=max_sentences,
        max_words=max_words,
    )


# The agent.


def reference_block(scored: ScoredReference) -> str:
    """One reference as the writer sees it: its id and probability, its title and abstract
    (and a collection paper's full-text passage, fenced as paper text), the debate's arguments
    and quotes (fenced too: they quote it)."""
    verdict = scored.verdict
    debate = [
        *(f"For: {argument}" for argument in verdict.arguments_for),
        *(f'Quote for: "{" ".join(quote.split())}"' for quote in verdict.quotes_for),
        *(f"Against: {argument}" for argument in verdict.arguments_against),
        *(f'Quote against: "{" ".join(quote.split())}"' for quote in verdict.quotes_against),
    ]
    reference = scored.reference
    return (
        f"### Reference {citation([reference.id])}: relevance {verdict.probability}/100\n"
        + fence(f"Title: {' '.join(reference.title.split())}\n\n{reference.text().strip()}")
        + "\nDebate of its relevance:\n"
        + fence("\n".join(debate) or "(no arguments)", "debate")
    )


def writing_values(inputs: RelatedWorkInput) -> dict[str, str]:
    """The prompt values the writer and its planner share: the idea, the references' markers and
    blocks, and the number of sentences."""
    return dict(
        idea=fence(inputs.idea, "idea"),
        ids=", ".join(citation([i]) for i in inputs.ids),
        references="\n\n".join(reference_block(scored) for scored in inputs.references),
        sentences=str(inputs.sentences),
    )


class RelatedWorkAgent(Agent[RelatedWorkInput, RelatedWorkReply]):
    name = "related_work"
    reply_tokens = 1024
    offline = staticmethod(offline_related_work)

    def prompt_values(self, inputs: RelatedWorkInput) -> dict[str, str]:
        return dict(
            writing_values(inputs),
            words=str(inputs.words),
            plan=PLAN_INSTRUCTION.format(plan=inputs.plan.strip()) if inputs.plan.strip() else "",
        )
