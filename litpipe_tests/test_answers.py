"""The answers agent: offline answers made of cited evidence sentences, and answers through a
model (the local stub): what it is shown, how its citations resolve, one concurrent batch."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.answers import AnswersAgent, answer_questions, answers_version
from litpipe.agents.asker import Asker
from litpipe.citations import chunk_marker, resolve
from litpipe.extractive.answering import NO_ANSWER, AnswerInput, offline_answer
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import Answer, Question, QuestionEvidence, RetrievedChunk
from litpipe.settings import Settings
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_llm import StubLLM, stub_settings

# A marker and the text before it, back to the previous marker.
# A cited sentence: its words, its marker, and its closing full stop ("... damage [p1:5].").
_CITED_UNIT = re.compile(r"\s*(.*?)\s*\[([A-Za-z0-9._-]+):(\d+)\]([.!?]?)")


REV1 = "Loss of REV1 caused the strongest sensitivity to alkylation damage."
GROWTH = "Cells were grown at 30 degrees in rich medium."
TLS = "Translesion synthesis polymerases tolerate alkylation damage during replication."
EVIDENCE = [
    retrieved_chunk(
        "smith2023",
        4,
        5,
        "We screened 4,000 yeast deletion strains for growth defects. "
        f"{GROWTH} {REV1} Plates were imaged daily.",
    ),
    retrieved_chunk(
        "lee2024",
        2,
        3,
        f"{TLS} In human cells, REV1 knockdown increased sensitivity to\ntemozolomide. "
        "The library was sequenced on an Illumina platform.",
    ),
    retrieved_chunk(
        "smith2023",
        7,
        8,
        "Figure 3 shows growth curves. The REV1 mutant accumulated fewer mutations than wild type.",
    ),
]


def question(text: str, index: int = 0) -> Question:
    return Question(
        question_id=f"smith2023:q{index:02d}", paper_id="smith2023", style="broad", text=text
    )


SENSITIVITY = question("Which genes confer sensitivity to alkylation damage?")


def cited_units(text: str) -> list[tuple[str, str, int]]:
    """(sentence, paper id, page) for every marker of `text`, the sentence as written in its
    passage; fails on uncited text."""
    units = [
        (m.group(1) + m.group(4), m.group(2), int(m.group(3))) for m in _CITED_UNIT.finditer(text)
    ]
    assert _CITED_UNIT.sub("", text).strip() == "", f"uncited text in {text!r}"
    return units


def assert_verbatim_and_cited(answer_text: str, evidence: list[RetrievedChunk]) -> None:
    """Every sentence is the words of a passage its marker resolves to."""
    units = cited_units(answer_text)
    assert units
    for sentence, paper_id, page in units:
        citation = resolve(paper_id, page, evidence)
        assert citation is not None, (paper_id, page)
        passages = [" ".join(c.text.split()) for c in evidence if c.chunk_id in citation.chunk_ids]
        assert any(sentence in passage for passage in passages), sentence


def test_offline_answer_is_evidence_sentences_each_cited_and_resolving() -> None:
    reply = offline_answer(AnswerInput(question=SENSITIVITY, evidence=EVIDENCE))
    assert_verbatim_and_cited(reply.answer, EVIDENCE)
    temozolomide = question("Does REV1 knockdown change the response to temozolomide?")
    reply = offline_answer(AnswerInput(question=temozolomide, evidence=EVIDENCE))
    assert_verbatim_and_cited(reply.answer, EVIDENCE)
    # A sentence broken over lines in the passage is quoted with its words, spaced once.
    assert reply.answer.startswith(
        "In human cells, REV1 knockdown increased sensitivity to temozolomide [lee2024:3]."
    )


def test_offline_answer_picks_the_answering_sentence_over_off_topic_ones() -> None:
    reply = offline_answer(AnswerInput(question=SENSITIVITY, evidence=EVIDENCE))
    sentences = [sentence for sentence, _, _ in cited_units(reply.answer)]
    assert sentences[0] == REV1
    assert f"{REV1[:-1]} [smith2023:5]." in reply.answer
    for off_topic in (GROWTH, "Plates were imaged daily.", "Figure 3 shows growth curves."):
        assert off_topic not in reply.answer


@pytest.mark.parametrize(
    "fragment",
    [
        "showed that the REV1 protein performs several functions",
        "2016), showed that the REV1 protein performs several functions",
    ],
)
def test_a_passage_cut_mid_sentence_is_not_quoted_from_its_fragment(fragment: str) -> None:
    # The chunker cut a long sentence: the second passage opens on its tail.
    whole = (
        "Furthermore, as others did (Smith et al. 2016), we showed that the REV1 protein performs "
        "several functions in damage tolerance."
    )
    evidence = [
        retrieved_chunk("smith2023", 0, 4, REV1),
        retrieved_chunk("smith2023", 1, 5, f"{fragment}."),
        retrieved_chunk("smith2023", 2, 6, whole),
    ]
    functions = question("Which functions does the REV1 protein perform?")
    reply = offline_answer(AnswerInput(question=functions, evidence=evidence))
    assert f"{fragment} [smith2023:5]" not in reply.answer
    assert reply.answer.startswith(f"{whole[:-1]} [smith2023:6].")
    # Where nothing whole answers, the fragment is better than nothing.
    only_cut = offline_answer(AnswerInput(question=functions, evidence=evidence[1:2]))
    assert only_cut.answer == f"{fragment} [smith2023:5]."


def test_the_better_ranked_passage_wins_a_tie() -> None:
    same = "Alkylation damage stalls replication forks."
    evidence = [retrieved_chunk("lee2024", 0, 2, same), retrieved_chunk("smith2023", 1, 6, same)]
    reply = offline_answer(AnswerInput(question=SENSITIVITY, evidence=evidence))
    # Said twice, quoted once: from the passage the reranker put first.
    assert reply.answer == "Alkylation damage stalls replication forks [lee2024:2]."


def test_a_question_the_passages_do_not_touch_gets_the_fixed_sentence(tmp_path: Path) -> None:
    unrelated = question("How does photosynthetic carbon fixation vary with latitude?")
    items = [QuestionEvidence(question=unrelated, chunks=EVIDENCE, reranked=False)]
    settings = Settings(home=tmp_path)
    (answer,) = answer_questions(items, settings.synthesis.answer_mode, Asker(settings.llm))
    assert answer.text == NO_ANSWER
    assert answer.citations == []
    assert answer.engine == "offline" and answer.views == {}
    assert answer.evidence == EVIDENCE and answer.question == unrelated


def test_offline_answers_resolve_to_the_chunks_they_quote(tmp_path: Path) -> None:
    items = [QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)]
    settings = Settings(home=tmp_path)
    (answer,) = answer_questions(items, settings.synthesis.answer_mode, Asker(settings.llm))
    by_marker = {c.marker: c.chunk_ids for c in answer.citations}
    assert by_marker["[smith2023:5]"] == ["smith2023:4"]
    assert by_marker["[lee2024:3]"] == ["lee2024:2"]


# Through a model.


def user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def asked_question(body: dict[str, Any]) -> str:
    match = re.search(r"<question>\n(.*?)\n</question>", user_message(body), re.S)
    assert match is not None
    return match.group(1)


def model_answers(
    tmp_path: Path, stub: StubLLM, items: list[QuestionEvidence], **overrides: Any
) -> list[Answer]:
    settings = stub_settings(tmp_path, stub, **overrides)
    return answer_questions(
        items,
        settings.synthesis.answer_mode,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )


def test_the_model_is_shown_the_question_and_every_passage_with_its_marker(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    items = [QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)]
    (answer,) = model_answers(tmp_path, stub_llm, items)
    (request,) = stub_llm.requests
    system = request["messages"][0]["content"]
    assert "never an instruction" in system and NO_ANSWER in system
    user = user_message(request)
    assert f"<question>\n{SENSITIVITY.text}\n</question>" in user
    for passage in EVIDENCE:
        assert f"{chunk_marker(passage)} (Results)\n{' '.join(passage.text.split())}" in user
    assert answer.engine == "openai/stub"


def test_the_replys_markers_become_citations_and_invented_ones_are_removed(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    stub_llm.script(
        "stub",
        {
            "answer": "REV1 loss sensitises yeast [smith2023:5]. Human cells agree "
            "[lee2024:3; smith2023:8]. It is essential everywhere [smith2023:99; nature2020:1]."
        },
    )
    items = [QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)]
    with caplog.at_level(logging.WARNING):
        (answer,) = model_answers(tmp_path, stub_llm, items)
    assert answer.text == (
        "REV1 loss sensitises yeast [smith2023:5]. Human cells agree "
        "[lee2024:3; smith2023:8]. It is essential everywhere."
    )
    assert [(c.marker, c.chunk_ids) for c in answer.citations] == [
        ("[smith2023:5]", ["smith2023:4"]),
        ("[lee2024:3]", ["lee2024:2"]),
        ("[smith2023:8]", ["smith2023:7"]),
    ]
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "[smith2023:99]" in warning and "[nature2020:1]" in warning
    assert SENSITIVITY.question_id in warning


def test_all_questions_go_to_the_model_as_one_concurrent_batch(tmp_path: Path) -> None:
    texts = [
        "Which genes confer sensitivity to alkylation damage?",
        "Which polymerases tolerate alkylation damage?",
        "How was the library sequenced?",
        "What happens to mutation rates in the REV1 mutant?",
    ]
    items = [
        QuestionEvidence(question=question(text, index), chunks=EVIDENCE, reranked=True)
        for index, text in enumerate(texts)
    ]
    with StubLLM(latency_s=0.3) as stub:
        stub.report_slots(8)
        stub.respond("stub", lambda body: {"answer": f"About: {asked_question(body)} [lee2024:3]"})
        answers = model_answers(tmp_path, stub, items)
        assert stub.request_count == len(texts)
        assert stub.max_in_flight > 1
    # In the questions' order, each answering its own question.
    assert [a.question.text for a in answers] == texts
    assert [a.text for a in answers] == [f"About: {text} [lee2024:3]" for text in texts]


def test_answers_version_follows_the_mode_and_the_prompt(tmp_path: Path) -> None:
    single = Settings(home=tmp_path)
    packaged = PromptLibrary(None)
    multi = Settings(home=tmp_path, synthesis={"answer_mode": "multi_view"})

    def version_of(settings: Settings, prompts: PromptLibrary) -> str:
        return answers_version(settings.synthesis.answer_mode, Asker(settings.llm, None, prompts))

    assert version_of(single, packaged) == version_of(single, packaged)
    assert version_of(single, packaged) != version_of(multi, packaged)
    overrides = tmp_path / "prompts"
    overrides.mkdir()
    edited = packaged.text("answers").replace("Be direct and brief", "Be brief")
    (overrides / "answers.md").write_text(edited, "utf-8")
    assert version_of(single, PromptLibrary(overrides)) != version_of(single, packaged)
    # The single-view prompt decides nothing in multi-view mode.
    assert version_of(multi, PromptLibrary(overrides)) == version_of(multi, packaged)


def test_messages_render_every_placeholder_of_the_packaged_prompt() -> None:
    system, user = AnswersAgent().messages(
        AnswerInput(question=SENSITIVITY, evidence=EVIDENCE), PromptLibrary(None)
    )
    assert (system["role"], user["role"]) == ("system", "user")
    assert "{{" not in system["content"] + user["content"]
