"""Running agents (offline or through a client) and the version that stales their assets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.agents.paper_questions import PaperQuestionsAgent, paper_questions_from
from litpipe.extractive.paper_questions import QuestionsInput, QuestionsReply
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import PaperAbstract
from litpipe.settings import AgentRoute, Route, Settings

INPUTS = QuestionsInput(
    paper_id="SJ1Xmf-Rb",
    title="FearNet: Brain-Inspired Model for Incremental Learning",
    abstract="Incremental class learning involves sequentially learning classes in bursts of "
    "examples from the same class. Here, we propose FearNet for incremental class learning. "
    "FearNet uses a brain-inspired dual-memory system. FearNet achieves state-of-the-art "
    "performance at incremental class learning on image and audio classification benchmarks.",
)
SCRIPTED = QuestionsReply.model_validate(
    {
        "questions": [
            {"style": "broad", "text": "What is FearNet for?"},
            {"style": "inner_workings", "text": "How does the dual-memory system consolidate?"},
        ]
    }
)


class ScriptedClient:
    """Stands in for `LLMClient`: records each call and answers with the scripted reply."""

    def __init__(self, reply: BaseModel) -> None:
        self.reply = reply
        self.calls: list[tuple[Route, list[dict[str, str]], type]] = []

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type) -> Any:
        self.calls.append((route, messages, schema))
        return self.reply


class UntouchableClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the offline engine touched the client ({name})")


def settings(tmp_path: Path, **values: Any) -> Settings:
    llm = {"model": None} | values.pop("llm", {})
    return Settings(home=tmp_path / "home", llm=llm, **values)


def test_offline_route_never_touches_the_client(tmp_path: Path) -> None:
    prompts = PromptLibrary(None)
    agent = PaperQuestionsAgent()
    offline = Asker(settings(tmp_path).llm, UntouchableClient(), prompts).ask(agent, INPUTS)
    assert offline == agent.offline(INPUTS)
    assert Asker(settings(tmp_path).llm, None, prompts).ask(agent, INPUTS) == offline


def test_model_route_calls_the_client_once_with_the_rendered_prompt(tmp_path: Path) -> None:
    prompts = PromptLibrary(None)
    agent = PaperQuestionsAgent()
    client = ScriptedClient(SCRIPTED)
    configured = settings(tmp_path, llm={"model": "gpt-4o-mini", "api_base": "http://localhost:9"})
    reply = Asker(configured.llm, client, prompts).ask(agent, INPUTS)
    assert reply is SCRIPTED
    [(route, messages, schema)] = client.calls
    # The agent's own size for its reply, where the settings set no max_tokens.
    assert route == configured.route("paper_questions", agent.reply_tokens)
    assert route.model == "gpt-4o-mini" and route.max_tokens == agent.reply_tokens
    assert messages == agent.messages(INPUTS, prompts)
    assert schema is QuestionsReply


def test_a_model_route_without_a_client_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="routed to model 'gpt-4o-mini' but no LLM client"):
        Asker(settings(tmp_path, llm={"model": "gpt-4o-mini"}).llm, None, PromptLibrary(None)).ask(
            PaperQuestionsAgent(), INPUTS
        )


def test_paper_questions_from_records_the_engine(tmp_path: Path) -> None:
    abstract = PaperAbstract(
        paper_id=INPUTS.paper_id,
        title=INPUTS.title,
        abstract=INPUTS.abstract,
        source="parsed",
        engine="parsed",
    )
    prompts = PromptLibrary(None)
    offline = paper_questions_from(
        abstract, Asker(settings(tmp_path).llm, None, prompts), per_style=2
    )
    assert offline.engine == "offline" and len(offline.questions) == 4
    per_agent = settings(
        tmp_path, llm={"agents": {"paper_questions": AgentRoute(model="ollama/llama3.1")}}
    )
    client = ScriptedClient(SCRIPTED)
    modelled = paper_questions_from(abstract, Asker(per_agent.llm, client, prompts))
    assert modelled.engine == "ollama/llama3.1"
    assert [q.text for q in modelled.questions] == [q.text for q in SCRIPTED.questions]
    assert [q.question_id for q in modelled.questions] == ["SJ1Xmf-Rb:q00", "SJ1Xmf-Rb:q01"]


class OtherReply(BaseModel):
    questions: list[str]


class QuestionsWithAnotherSchema(PaperQuestionsAgent):
    reply_schema = OtherReply  # type: ignore[assignment]


class QuestionsWithSameSchema(PaperQuestionsAgent):
    pass


def test_version_follows_prompt_schema_and_route_but_not_api_base(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    prompts = PromptLibrary(folder)
    agent: Agent = PaperQuestionsAgent()
    base = Asker(settings(tmp_path).llm, None, prompts).version(agent)
    assert base == Asker(settings(tmp_path).llm, None, PromptLibrary(None)).version(
        PaperQuestionsAgent()
    )
    # Both subclasses live in this module: they differ in their reply schema only.
    same_schema = Asker(settings(tmp_path).llm, None, prompts).version(QuestionsWithSameSchema())
    assert (
        Asker(settings(tmp_path).llm, None, prompts).version(QuestionsWithAnotherSchema())
        != same_schema
    )

    unchanged_model = settings(tmp_path, llm={"api_base": "http://gpu-box:8000/v1"})
    assert Asker(unchanged_model.llm, None, prompts).version(agent) == base
    changed = [
        settings(tmp_path, llm={"model": "gpt-4o-mini"}),
        settings(tmp_path, llm={"agents": {"paper_questions": AgentRoute(model="gpt-4o")}}),
        settings(tmp_path, llm={"agents": {"paper_questions": AgentRoute(temperature=0.7)}}),
        settings(tmp_path, llm={"max_tokens": 300}),
    ]
    versions = {Asker(each.llm, None, prompts).version(agent) for each in changed}
    assert len(versions) == len(changed) and base not in versions
    # Another agent's route is not this agent's business.
    other_agent = settings(tmp_path, llm={"agents": {"paper_abstract": AgentRoute(model="gpt-4o")}})
    assert Asker(other_agent.llm, None, prompts).version(agent) == base

    (folder / "paper_questions.md").write_text(
        PromptLibrary(None).text("paper_questions") + "\nBe brief.\n"
    )
    edited = Asker(settings(tmp_path).llm, None, prompts).version(agent)
    assert edited != base
    (folder / "paper_abstract.md").write_text(
        PromptLibrary(None).text("paper_abstract") + "\nBe brief.\n"
    )
    assert Asker(settings(tmp_path).llm, None, prompts).version(agent) == edited


class NoteInput(BaseModel):
    note: str


class NoteReply(BaseModel):
    summary: str


def note_offline(inputs: NoteInput) -> NoteReply:
    return NoteReply(summary=inputs.note)


class NoteAgent(Agent[NoteInput, NoteReply]):
    name = "note"
    offline = staticmethod(note_offline)

    def prompt_values(self, inputs: NoteInput) -> dict[str, str]:
        return {"note": inputs.note}


Judged = TypeVar("Judged", bound=BaseModel)


class GenericNoteAgent(Agent[NoteInput, Judged]):
    """A generic agent, as PassageAgent is: its subclasses name the reply."""

    def prompt_values(self, inputs: NoteInput) -> dict[str, str]:
        return {"note": inputs.note}


class VerdictNoteAgent(GenericNoteAgent[OtherReply]):
    name = "note"

    def offline(self, inputs: NoteInput) -> OtherReply:
        return OtherReply(questions=[inputs.note])


def test_an_agent_asks_with_its_reply_type_and_its_prompt_values(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "note.md").write_text("## user\nSummarize: {{note}}\n")
    prompts = PromptLibrary(folder)
    modelled = settings(tmp_path, llm={"model": "gpt-4o-mini"})
    for agent, reply in (
        (NoteAgent(), NoteReply(summary="s")),
        (VerdictNoteAgent(), OtherReply(questions=[])),
    ):
        client = ScriptedClient(reply)
        assert Asker(modelled.llm, client, prompts).ask(agent, NoteInput(note="tea")) is reply
        [(_, messages, schema)] = client.calls
        assert messages == [{"role": "user", "content": "Summarize: tea"}]
        assert schema is type(reply)
    assert Asker(settings(tmp_path).llm, None, prompts).ask(NoteAgent(), NoteInput(note="tea")) == (
        NoteReply(summary="tea")
    )
