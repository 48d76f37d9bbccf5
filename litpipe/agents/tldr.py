"""The `tldr` agent: a one-sentence summary (a TL;DR) of one paper from its title and abstract.

With a model route the model writes the sentence (`litpipe/prompts/tldr.md`); many papers are
asked in one concurrent batch through the client. Its offline engine
(`litpipe.extractive.tldr.offline_tldr`) picks the abstract's sentence most central to the
abstract and closest to its title.
"""

from __future__ import annotations

from collections.abc import Sequence

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.tldr import TldrInput, TldrReply, offline_tldr
from litpipe.llm.prompts import fence


class TldrAgent(Agent[TldrInput, TldrReply]):
    name = "tldr"
    reply_tokens = 256
    offline = staticmethod(offline_tldr)

    def prompt_values(self, inputs: TldrInput) -> dict[str, str]:
        return dict(title=fence(inputs.title), abstract=fence(inputs.abstract))


def write_tldrs(
    papers: Sequence[TldrInput],
    asker: Asker,
) -> list[str]:
    """Each paper's TL;DR, in order: offline, or from the routed model in one batch."""
    return [reply.tldr for reply in asker.ask_each(TldrAgent(), papers)]
