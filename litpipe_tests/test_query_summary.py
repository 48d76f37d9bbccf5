"""MAIS query-focused summaries: the offline loop (a short first draft, a judge checking that
each diagnostic question's best source sentence is covered, revisions adding what is missing),
Self-Route, the loop through a model (the local stub: scripted verdicts, the cap), citations,
and bad requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.query_summary import QuerySummaryAgent
from litpipe.agents.summary_judge import combined_reply
from litpipe.extractive.query_questions import (
    MAX_QUESTIONS,
    QueryQuestionsInput,
    offline_query_questions,
)
from litpipe.extractive.query_summary import QuerySummaryInput, summary_sentences, unmarked
from litpipe.extractive.summary_judge import (
    JudgeInput,
    JudgeReply,
    QuestionJudgement,
    offline_judge,
)
from litpipe.extractive.summary_qa import NOT_IN_SUMMARY, SummaryQAInput, offline_summary_qa
from litpipe.ingest.chunking import chunk_document
from litpipe.ingest.pdf import parse_pdf
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.rerank import NoReranker
from litpipe.retrieval.store import ChunkStore
from litpipe.retrieval.text import tokenize
from litpipe.schemas import (
    DiagnosticQuestion,
    QuerySummary,
    QuerySummaryRequest,
    RetrievedChunk,
)
from litpipe.settings import Settings
from litpipe.text import estimate_tokens, markers_in
from litpipe.workflows.query_summary import (
    QuerySummaryError,
    Search,
    paper_passages,
    paper_search,
    query_summary_version,
    request_for,
    summarize_for_query,
)
from litpipe_tests.bundled import CORPUS
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_agents import judge_verdict
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_store import paper as stored_paper

PAPER_ID = "rev1fly"
TITLE = "Domains of REV1 in Drosophila damage tolerance"
ABSTRACT = "We test which REV1 domains protect flies lacking polymerase zeta from MMS."
QUERY = "Which REV1 domain matters most for MMS survival of rev3 flies?"
TEXTS = [
    "Translesion synthesis lets cells replicate past damaged DNA. In flies, the polymerase zeta "
    "complex contains the catalytic subunit REV3 and requires the scaffold protein REV1. How "
    "each REV1 domain contributes to damage tolerance in an animal is not known.",
    "We generated Drosophila mutants lacking single REV1 domains with CRISPR editing. Each "
    "mutant allele was combined with a rev3 deletion. Larvae were exposed to methyl "
    "methanesulfonate at increasing doses and adult survival was scored.",
    "Rev1 BRCT rev3 double mutants were more sensitive to MMS than rev3 single mutants. Rev1 "
    "UBM rev3 double mutants showed a similar modest increase in sensitivity. Rev1 DTD rev3 "
    "double mutants showed the greatest increase in sensitivity, equivalent to the rev1 null "
    "mutant.",
    "The deoxycytidyl transferase domain therefore protects flies lacking polymerase zeta from "
    "alkylation damage. Catalytically dead REV1 rescued survival only partly. Wild-type REV1 "
    "restored full survival of rev3 larvae.",
    "Flies were raised on standard cornmeal food at 25 degrees. Stocks were obtained from the "
    "Bloomington stock centre. Genotypes were confirmed by sequencing of PCR products.",
    "Mutation frequencies were measured with a lacZ reporter. Loss of the C-terminal domain "
    "reduced mutagenesis after MMS treatment. Point mutations in the reporter were mostly G to "
    "A transitions.",
    "Hydroxyurea sensitivity did not differ between the mutants. Ionizing radiation caused "
    "similar lethality in all genotypes. The REV1 domains thus act specifically on alkylation "
    "lesions.",
    "Our results suggest that in the absence of polymerase zeta REV1 inserts cytosine opposite "
    "alkylated bases. This backup pathway may explain why rev3 mutants survive moderate MMS "
    "doses.",
    "We thank the fly community for reagents and discussions. This work was funded by a grant "
    "from the national science foundation. The authors declare no competing interests. Data "
    "and strains are available on request.",
]
# Chunk i lies on page i + 1.
PAPER = [retrieved_chunk(PAPER_ID, index, index + 1, text) for index, text in enumerate(TEXTS)]
REQUEST = QuerySummaryRequest(paper_id=PAPER_ID, query=QUERY)


def term_search(paper: list[RetrievedChunk], keep: int = 3) -> Search:
    """The passages sharing the most terms with the text: a retriever for hand-made papers."""

    def search(text: str) -> list[RetrievedChunk]:
        wanted = set(tokenize(text))
        return sorted(paper, key=lambda c: -len(wanted & set(tokenize(c.text))))[:keep]

    return search


def offline(tmp_path: Path, **overrides: Any) -> QuerySummary:
    settings = Settings(home=tmp_path, **overrides)
    return summarize_for_query(
        REQUEST,
        TITLE,
        ABSTRACT,
        PAPER,
        term_search(PAPER),
        settings.query_summary,
        Asker(settings.llm),
    )


def source_sentences(source: list[RetrievedChunk]) -> str:
    return " ".join(" ".join(chunk.text.split()) for chunk in source)


def assert_cited_from_source(text: str, source: list[RetrievedChunk]) -> None:
    """Every marker resolves to a passage of the source, and every sentence is the source's."""
    found, unresolved = citations.citations(text, source)
    assert found and unresolved == []
    whole = source_sentences(source)
    for sentence in summary_sentences(text):
        assert markers_in(sentence), sentence
        assert unmarked(sentence).rstrip(".") in whole, sentence


# The offline engine, agent by agent.


def test_offline_questions_are_at_most_seven_each_about_a_phrase_of_the_query_evidence() -> None:
    evidence = term_search(PAPER)(QUERY)
    reply = offline_query_questions(
        QueryQuestionsInput(
            paper_id=PAPER_ID, title=TITLE, abstract=ABSTRACT, query=QUERY, evidence=evidence
        )
    )
    assert 1 <= len(reply.questions) <= MAX_QUESTIONS
    passages = source_sentences(evidence)
    for draft in reply.questions:
        assert draft.question.endswith("?") and draft.topic in draft.question
        assert draft.topic in passages  # the paper's own words
    assert len({draft.topic for draft in reply.questions}) == len(reply.questions)
    fewer = offline_query_questions(
        QueryQuestionsInput(
            paper_id=PAPER_ID,
            title=TITLE,
            abstract=ABSTRACT,
            query=QUERY,
            evidence=evidence,
            most=2,
        )
    )
    assert fewer.questions == reply.questions[:2]


DTD = DiagnosticQuestion(
    question_id=f"{PAPER_ID}:d0",
    text="What is shown about Rev1 DTD rev3 double mutants?",
    topic="Rev1 DTD rev3 double mutants",
)
COOKING = DiagnosticQuestion(
    question_id=f"{PAPER_ID}:d1", text="What role does sourdough baking play?", topic="sourdough"
)
DTD_SENTENCE = (
    "Rev1 DTD rev3 double mutants showed the greatest increase in sensitivity, equivalent to "
    "the rev1 null mutant [rev1fly:3]."
)


def test_offline_qa_answers_from_the_summary_alone() -> None:
    summary = f"Cells replicate past damage [rev1fly:1]. {DTD_SENTENCE}"
    reply = offline_summary_qa(SummaryQAInput(summary=summary, questions=[DTD, COOKING]))
    answers = {answer.question_id: answer.answer for answer in reply.answers}
    assert answers[DTD.question_id] == DTD_SENTENCE
    assert answers[COOKING.question_id] == NOT_IN_SUMMARY


def test_offline_judge_names_the_topic_whose_best_sentence_the_answer_misses() -> None:
    missing = JudgeInput(
        query=QUERY,
        questions=[DTD, COOKING],
        answers={DTD.question_id: NOT_IN_SUMMARY, COOKING.question_id: NOT_IN_SUMMARY},
        passages=PAPER,
    )
    reply = offline_judge(missing)
    assert not reply.approved and reply.mismatch_topics == [DTD.topic]
    # A question no passage bears on is not held against the summary.
    assert [j.accepted for j in reply.judgements] == [False, True]
    covered = missing.model_copy(update={"answers": {DTD.question_id: DTD_SENTENCE}})
    reply = offline_judge(covered)
    assert reply.approved and reply.mismatch_topics == []


def test_offline_revision_adds_the_best_sentence_of_each_mismatch_topic() -> None:
    draft = "Cells replicate past damage [rev1fly:1]."
    reply = QuerySummaryAgent().offline(
        QuerySummaryInput(
            paper_id=PAPER_ID,
            title=TITLE,
            query=QUERY,
            passages=PAPER,
            previous=draft,
            mismatch_topics=[DTD.topic],
        )
    )
    assert reply.summary.startswith(draft + " ")
    assert unmarked(DTD_SENTENCE) in unmarked(reply.summary)


# The loop, offline.


def test_offline_loop_revises_from_the_judges_topics_until_it_approves(tmp_path: Path) -> None:
    result = offline(tmp_path)
    assert result.status == "approved"
    assert result.engine == "offline" and set(result.engines.values()) == {"offline"}
    assert 1 <= len(result.questions) <= 7
    first, *rest = result.iterations
    # The first draft is short, so the judge finds what it misses; each revision is given the
    # previous verdict's topics and keeps the previous summary.
    assert len(result.iterations) >= 2
    assert first.revised_from == [] and not first.verdict.approved
    assert first.verdict.mismatch_topics and first.verdict.accuracy < 1
    for before, after in zip(result.iterations, rest, strict=False):
        assert after.revised_from == before.verdict.mismatch_topics
        assert after.summary.startswith(before.summary)
    last = result.iterations[-1]
    assert last.verdict.approved and last.verdict.accuracy == 1.0
    assert [i.iteration for i in result.iterations] == list(range(1, len(result.iterations) + 1))
    for iteration in result.iterations:
        assert [pair.question_id for pair in iteration.qa] == [
            q.question_id for q in result.questions
        ]
        accepted = sum(pair.accepted for pair in iteration.qa) / len(iteration.qa)
        assert iteration.verdict.accuracy == pytest.approx(accepted)
        assert_cited_from_source(iteration.summary, result.source)
        assert 1 <= len(iteration.highlights) <= 3
        assert all(h in iteration.summary for h in iteration.highlights)
    assert result.summary == last.summary and result.citations == last.citations
    assert result.max_iterations == 15
    # Deterministic: the same request gives the same trace.
    assert offline(tmp_path) == result


def test_the_whole_paper_is_read_when_it_fits_the_context(tmp_path: Path) -> None:
    result = offline(tmp_path)
    assert (
        result.route == "whole_paper" and "fits query_summary.context_tokens" in result.route_reason
    )
    assert result.source == PAPER


def test_a_long_paper_is_read_through_its_evidence_in_reading_order(tmp_path: Path) -> None:
    result = offline(tmp_path, query_summary={"context_tokens": 500})
    assert (
        result.route == "evidence"
        and "exceeds query_summary.context_tokens (500)" in result.route_reason
    )
    assert 0 < len(result.source) < len(PAPER)
    indexes = [PAPER.index(chunk) for chunk in result.source]
    assert indexes == sorted(indexes)
    assert_cited_from_source(result.summary, result.source)


def test_evidence_the_summarizer_finds_insufficient_routes_to_the_whole_paper(
    tmp_path: Path,
) -> None:
    """Self-Route: a retriever that finds only the husbandry passage leaves the offline
    summarizer no query term; it says so, and reads the paper instead, as far as fits."""
    husbandry = [PAPER[4]]
    settings = Settings(home=tmp_path, query_summary={"context_tokens": 500})
    result = summarize_for_query(
        REQUEST,
        TITLE,
        ABSTRACT,
        PAPER,
        lambda text: husbandry,
        settings.query_summary,
        Asker(settings.llm),
    )
    assert result.route == "whole_paper"
    assert "found the 1 passages retrieved" in result.route_reason
    assert "insufficient" in result.route_reason
    # As much of the paper as the context holds, the retrieved passage among it.
    assert husbandry[0] in result.source and len(result.source) > 1
    assert estimate_tokens(citations.evidence_block(result.source)) <= 500
    assert_cited_from_source(result.iterations[0].summary, result.source)


def test_an_unapproved_loop_stops_at_the_cap(tmp_path: Path) -> None:
    result = offline(tmp_path, query_summary={"max_iterations": 1})
    assert result.status == "max_iterations_reached"
    assert len(result.iterations) == 1 and result.max_iterations == 1
    assert not result.iterations[0].verdict.approved


def test_version_follows_the_loop_settings_and_the_prompts(tmp_path: Path) -> None:
    packaged = PromptLibrary(None)
    base = Settings(home=tmp_path)

    def version_of(settings: Settings, prompts: PromptLibrary) -> str:
        return query_summary_version(
            settings.query_summary, settings.retrieval, Asker(settings.llm, None, prompts)
        )

    assert version_of(base, packaged) == version_of(base, packaged)
    capped = Settings(home=tmp_path, query_summary={"max_iterations": 3})
    assert version_of(capped, packaged) != version_of(base, packaged)
    stronger = Settings(home=tmp_path, llm={"agents": {"query_questions": {"model": "gpt-4o"}}})
    assert version_of(stronger, packaged) != version_of(base, packaged)
    overrides = tmp_path / "prompts"
    overrides.mkdir()
    edited = packaged.text("summary_judge").replace("Approve the summary", "Approve it")
    (overrides / "summary_judge.md").write_text(edited, "utf-8")
    assert version_of(base, PromptLibrary(overrides)) != version_of(base, packaged)


# Through a model (the local stub), each agent on its own model name.

ROUTES = {
    "query_questions": {"model": "openai/stub-questions"},
    "query_summary": {"model": "openai/stub-summary"},
    "summary_qa": {"model": "openai/stub-qa"},
    "summary_judge": {"model": "openai/stub-judge"},
    # The ACUs measure the loop and never steer it: offline here, so the stub's requests are the
    # loop's own.
    "summary_acus": {"model": "offline"},
    "summary_acu_check": {"model": "offline"},
}
QUESTIONS = {
    "questions": [
        {"question": "Which REV1 domain matters most?", "topic": "the decisive domain"},
        {"question": "How were flies exposed to MMS?", "topic": "MMS exposure"},
    ]
}


def user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def fenced(body: dict[str, Any], label: str) -> str:
    match = re.search(rf"<{label}>\n(.*?)\n</{label}>", user_message(body), re.S)
    assert match is not None, label
    return match.group(1)


def requests_to(stub: StubLLM, model: str) -> list[dict[str, Any]]:
    return [body for body in stub.requests if body.get("model") == model]


def scripted_loop(stub: StubLLM) -> None:
    """A summarizer whose drafts are numbered (and cite one page it was not given) and a QA
    agent echoing the summary: every pass then differs, so no reply comes from the cache."""
    drafts = iter(range(1, 100))

    def summarize(body: dict[str, Any]) -> dict[str, Any]:
        number = next(drafts)
        return {
            "evidence_sufficient": True,
            "summary": f"Draft {number}: DTD loss sensitises rev3 flies most [rev1fly:3]. "
            "It is conserved in yeast [rev1fly:99].",
            "highlights": ["DTD matters most [rev1fly:3]."],
        }

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        summary = fenced(body, "summary")
        ids = re.findall(r"^(\S+:d\d+):", fenced(body, "questions"), re.M)
        return {"answers": [{"question_id": i, "answer": summary} for i in ids]}

    stub.script("stub-questions", QUESTIONS)
    stub.respond("stub-summary", summarize)
    stub.respond("stub-qa", answer)


def verdict(approved: bool, accepted: list[bool], topics: list[str]) -> dict[str, Any]:
    return judge_verdict(PAPER_ID, approved, accepted, topics)


def through_the_stub(tmp_path: Path, stub: StubLLM, **overrides: Any) -> QuerySummary:
    settings = stub_settings(tmp_path, stub, **overrides, llm={"agents": ROUTES})
    return summarize_for_query(
        REQUEST,
        TITLE,
        ABSTRACT,
        PAPER,
        term_search(PAPER),
        settings.query_summary,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )


def test_two_disapprovals_then_approval_make_three_iterations_revised_from_the_topics(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    scripted_loop(stub_llm)
    stub_llm.script(
        "stub-judge",
        verdict(False, [False, True], ["the decisive domain"]),
        verdict(False, [True, False], ["MMS doses", "survival scoring"]),
        verdict(True, [True, True], []),
    )
    result = through_the_stub(tmp_path, stub_llm)

    assert result.status == "approved" and len(result.iterations) == 3
    assert [q.question_id for q in result.questions] == ["rev1fly:d0", "rev1fly:d1"]
    assert [i.revised_from for i in result.iterations] == [
        [],
        ["the decisive domain"],
        ["MMS doses", "survival scoring"],
    ]
    assert [i.verdict.mismatch_topics for i in result.iterations] == [
        ["the decisive domain"],
        ["MMS doses", "survival scoring"],
        [],
    ]
    assert [i.verdict.accuracy for i in result.iterations] == [0.5, 0.5, 1.0]
    assert [[p.accepted for p in i.qa] for i in result.iterations] == [
        [False, True],
        [True, False],
        [True, True],
    ]
    # The summarizer is shown the judge's topics, and the summary it revises, from pass 2 on.
    summarizer = requests_to(stub_llm, "stub-summary")
    assert len(summarizer) == 3
    assert fenced(summarizer[0], "feedback") == "(none)"
    assert fenced(summarizer[1], "feedback") == "- the decisive domain"
    assert fenced(summarizer[2], "feedback") == "- MMS doses\n- survival scoring"
    assert fenced(summarizer[1], "summary") == result.iterations[0].summary
    assert len(requests_to(stub_llm, "stub-judge")) == 3
    # The QA agent never sees the paper; the judge does.
    for body in requests_to(stub_llm, "stub-qa"):
        assert TEXTS[2].split(".")[0] not in json.dumps(body)
    assert TEXTS[2].split(".")[0] in user_message(requests_to(stub_llm, "stub-judge")[0])
    # The marker of a page it was not given is removed; the rest resolve.
    assert result.summary.startswith("Draft 3: DTD loss")
    assert "[rev1fly:99]" not in result.summary
    assert [(c.marker, c.chunk_ids) for c in result.citations] == [("[rev1fly:3]", ["rev1fly:2"])]
    assert result.engines == {
        "query_questions": "openai/stub-questions",
        "query_summary": "openai/stub-summary",
        "summary_qa": "openai/stub-qa",
        "summary_judge": "openai/stub-judge",
        "summary_acus": "offline",
        "summary_acu_check": "offline",
    }
    assert result.engine == "openai/stub-summary"


def test_a_judge_that_never_approves_stops_at_the_cap(tmp_path: Path, stub_llm: StubLLM) -> None:
    scripted_loop(stub_llm)
    stub_llm.respond("stub-judge", lambda body: verdict(False, [False, False], ["everything"]))
    result = through_the_stub(tmp_path, stub_llm, query_summary={"max_iterations": 4})
    assert result.status == "max_iterations_reached"
    assert len(result.iterations) == 4 and result.max_iterations == 4
    assert all(i.verdict.accuracy == 0.0 for i in result.iterations)
    assert len(requests_to(stub_llm, "stub-judge")) == 4


def test_a_summarizer_finding_the_evidence_insufficient_gets_the_whole_paper(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    scripted_loop(stub_llm)
    stub_llm.script("stub-summary", {"evidence_sufficient": False, "summary": "", "highlights": []})
    stub_llm.respond("stub-judge", lambda body: verdict(True, [True, True], []))
    result = through_the_stub(tmp_path, stub_llm, query_summary={"context_tokens": 500})
    assert result.route == "whole_paper" and "insufficient" in result.route_reason
    first, second = requests_to(stub_llm, "stub-summary")
    evidence_passages = user_message(first).count("(Results)\n")
    assert 0 < evidence_passages < len(PAPER)
    # The paper does not fit the context (that is why evidence came first): the summarizer
    # gets as much of it as fits, the retrieved passages among it, in reading order.
    widened = result.source
    assert evidence_passages < len(widened) < len(PAPER)
    assert user_message(second).count("(Results)\n") == len(widened)
    assert estimate_tokens(citations.evidence_block(widened)) <= 500
    assert [c.chunk_id for c in widened] == sorted(
        (c.chunk_id for c in widened), key=[p.chunk_id for p in PAPER].index
    )
    assert f"the {len(widened)} of its {len(PAPER)} passages" in result.route_reason
    assert result.status == "approved" and len(result.iterations) == 1


def test_the_judge_of_a_paper_over_the_context_checks_every_part_of_it(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """MAIS checks the summary against the source article: a paper longer than the context is
    judged whole, one call per part, so an omission outside the retrieved passages is found."""
    scripted_loop(stub_llm)
    acknowledgements = TEXTS[8].split(".")[0]

    def judge(body: dict[str, Any]) -> dict[str, Any]:
        if acknowledgements in user_message(body):
            return verdict(False, [True, False], ["the funding"])
        return verdict(True, [True, True], [])

    stub_llm.respond("stub-judge", judge)
    result = through_the_stub(
        tmp_path, stub_llm, query_summary={"context_tokens": 500, "max_iterations": 1}
    )
    # The summarizer read the retrieved passages only; the acknowledgements are not among them.
    assert result.route == "evidence" and PAPER[8] not in result.source
    calls = requests_to(stub_llm, "stub-judge")
    assert len(calls) == result.iterations[0].verdict.parts >= 2
    # Every passage of the paper reached the judge, each in one part.
    for text in TEXTS:
        assert sum(text.split(".")[0] in user_message(body) for body in calls) == 1, text
    assert f"part {len(calls)} of the {len(calls)} parts" in user_message(calls[-1])
    assert f"the judge checks the whole paper in {len(calls)} parts" in result.route_reason
    last = result.iterations[0]
    assert not last.verdict.approved and last.verdict.mismatch_topics == ["the funding"]
    assert last.verdict.accuracy == 0.5
    assert last.qa[1].judgement == f"Part {len(calls)} of {len(calls)}: compared"


def test_parts_combine_omissions_and_claims_no_part_supports() -> None:
    """A rejection in any part rejects; an answer no part bears on is unsupported unless it
    claims nothing."""
    questions = [
        DiagnosticQuestion(question_id=f"rev1fly:d{i}", text=f"Question {i}?", topic=f"topic {i}")
        for i in range(3)
    ]
    answers = {"rev1fly:d0": "DTD.", "rev1fly:d1": "Yeast.", "rev1fly:d2": NOT_IN_SUMMARY}
    parts = [
        JudgeInput(query=QUERY, questions=questions, answers=answers, passages=[chunk])
        for chunk in PAPER[:2]
    ]

    def reply(d0: tuple[bool, bool]) -> JudgeReply:
        unaddressed = [
            QuestionJudgement(
                question_id=f"rev1fly:d{i}", reason="-", accepted=True, addressed=False
            )
            for i in (1, 2)
        ]
        first = QuestionJudgement(
            question_id="rev1fly:d0", reason="r", accepted=d0[0], addressed=d0[1]
        )
        return JudgeReply(judgements=[first, *unaddressed], mismatch_topics=[], approved=all(d0))

    combined = combined_reply(parts, [reply((True, True)), reply((False, True))])
    assert [j.accepted for j in combined.judgements] == [False, False, True]
    assert combined.mismatch_topics == ["topic 1"] and not combined.approved
    approved = combined_reply(parts, [reply((True, True)), reply((True, False))])
    assert [j.accepted for j in approved.judgements] == [True, False, True]


# Bad requests.


@pytest.mark.parametrize(
    ("paper_id", "query", "message"),
    [
        (PAPER_ID, "", "the query is empty"),
        (PAPER_ID, " \n\t ", "the query is empty"),
        ("", QUERY, "the paper id is empty"),
    ],
)
def test_an_empty_query_or_paper_id_is_refused_with_a_clear_message(
    paper_id: str, query: str, message: str
) -> None:
    with pytest.raises(QuerySummaryError, match=message):
        request_for(paper_id, query)


def test_requests_are_keyed_by_paper_and_query_whatever_their_spacing() -> None:
    key = request_for(PAPER_ID, QUERY).key
    assert key == request_for(f" {PAPER_ID} ", f"  {QUERY.replace(' ', '  ')}\n").key
    assert key != request_for(PAPER_ID, QUERY + " Why?").key
    assert re.fullmatch(r"q-[0-9a-f]{16}", key)


def test_an_unknown_paper_is_refused_and_nothing_is_written(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_paper(stored_paper("p1", TEXTS), fake_embedder)
    rows = store.count_rows(fake_embedder.embedder_id)
    with pytest.raises(QuerySummaryError, match=r"unknown paper 'nope': no chunk of it"):
        paper_passages(store, fake_embedder.embedder_id, "nope")
    settings = Settings(home=tmp_path)
    with pytest.raises(QuerySummaryError, match="unknown paper 'nope'"):
        summarize_for_query(
            QuerySummaryRequest(paper_id="nope", query=QUERY),
            TITLE,
            ABSTRACT,
            [],
            term_search(PAPER),
            settings.query_summary,
            Asker(settings.llm),
        )
    # Nothing was written.
    assert store.count_rows(fake_embedder.embedder_id) == rows
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lancedb"]


# From the chunk store, through the real retriever.


def test_a_stored_paper_is_summarized_through_hybrid_retrieval(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_papers(
        [stored_paper(PAPER_ID, TEXTS), stored_paper("other", TEXTS[:2])], fake_embedder
    )
    passages = paper_passages(store, fake_embedder.embedder_id, PAPER_ID)
    assert [chunk.text for chunk in passages] == TEXTS
    assert [chunk.fused_rank for chunk in passages] == list(range(1, len(TEXTS) + 1))
    settings = Settings(home=tmp_path, query_summary={"context_tokens": 500})
    retriever = HybridRetriever(store, fake_embedder, "bio", None, papers=[PAPER_ID])
    search = paper_search(retriever, NoReranker(), PAPER_ID, settings.retrieval)
    found = search(QUERY)
    assert 0 < len(found) <= settings.retrieval.evidence_per_question
    assert {chunk.paper_id for chunk in found} == {PAPER_ID}
    result = summarize_for_query(
        REQUEST, TITLE, ABSTRACT, passages, search, settings.query_summary, Asker(settings.llm)
    )
    assert result.route == "evidence" and result.status == "approved"
    stored = set(store.paper_chunk_ids(fake_embedder.embedder_id, PAPER_ID))
    assert {chunk_id for c in result.citations for chunk_id in c.chunk_ids} <= stored
    assert_cited_from_source(result.summary, result.source)


LITQA2 = Path(__file__).parent / "data" / "litqa2" / "litqa2_subset_with_pdfs.jsonl"


def test_a_litqa2_question_is_summarized_offline_from_its_bundled_paper(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    """The microcin question, against its paper parsed, chunked and stored as the pipeline
    does (with the fake embedder): a long paper, read through its evidence, and the loop
    converges on a summary citing stored chunks."""
    records = [json.loads(line) for line in LITQA2.read_text("utf-8").splitlines() if line]
    record = next(r for r in records if "microcin" in r["question"])
    paper_id = record["pdf_file"].removesuffix(".pdf")
    document = parse_pdf(CORPUS / record["pdf_file"], paper_id)
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_paper(
        chunk_document(document, fake_embedder.tokenizer, 64, 16, fake_embedder.embedder_id),
        fake_embedder,
    )
    settings = Settings(home=tmp_path)
    passages = paper_passages(store, fake_embedder.embedder_id, paper_id)
    retriever = HybridRetriever(store, fake_embedder, "bio", None, papers=[paper_id])
    result = summarize_for_query(
        request_for(paper_id, record["question"]),
        document.title,
        document.abstract,
        passages,
        paper_search(retriever, NoReranker(), paper_id, settings.retrieval),
        settings.query_summary,
        Asker(settings.llm),
    )
    assert result.route == "evidence"
    assert result.status == "approved" and len(result.iterations) >= 2
    assert_cited_from_source(result.summary, result.source)
