"""The offline extractive engine on its own (`litpipe.extractive`): what its replies say is the
inputs' own text, cited where it cites, and it is imported, used and tested without the agents
that name it."""

from __future__ import annotations

import subprocess
import sys

from litpipe import citations
from litpipe.extractive.answering import NO_ANSWER, AnswerInput, offline_answer
from litpipe.extractive.paper_questions import STYLES, QuestionsInput, offline_questions
from litpipe.extractive.related_work import (
    RelatedWorkInput,
    cited_ids,
    count_sentences,
    count_words,
    offline_related_work,
)
from litpipe.extractive.relationships import offline_relationships
from litpipe.extractive.synthesis import PaperMaterial, SynthesisInput, offline_synthesis
from litpipe.extractive.tldr import TldrInput, offline_tldr
from litpipe.schemas import (
    DebateVerdict,
    Question,
    Reference,
    ScoredReference,
)
from litpipe.text import markers_in, sentences, strip_markers
from litpipe_tests.passages import insight, retrieved_chunk


def test_importing_the_engine_imports_no_agent() -> None:
    """Every module of the engine imports without `litpipe.agents` (nor a model client)."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import litpipe.extractive as engine\n"
        "for module in pkgutil.walk_packages(engine.__path__, 'litpipe.extractive.'):\n"
        "    importlib.import_module(module.name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('litpipe.agents') or m == 'litellm'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"


ABSTRACT = (
    "Sickle cell disease is caused by a single mutation in the HBB gene. "
    "We corrected the sickle mutation in patient haematopoietic stem cells with an adenine "
    "base editor. "
    "Edited cells engrafted in mice and produced normal adult haemoglobin for 16 weeks. "
    "Off-target editing was below the detection limit."
)


def test_the_tldr_is_a_sentence_of_the_abstract_or_the_title() -> None:
    title = "Base editing of haematopoietic stem cells rescues sickle cell disease"
    written = offline_tldr(TldrInput(title=title, abstract=ABSTRACT)).tldr
    assert written in [" ".join(span.text.split()) for span in sentences(ABSTRACT)]
    # Without an abstract, the title is all the paper says of itself.
    assert offline_tldr(TldrInput(title=title, abstract="")).tldr == title


def test_opposite_claims_about_the_same_terms_are_related_as_a_contradiction() -> None:
    claim = "Low-dose aspirin reduced the risk of recurrent stroke in elderly patients"
    opposite = claim.replace("reduced", "increased")
    unrelated = "Statins lowered cholesterol in a cohort of middle-aged adults with diabetes"
    titles = {"p1": "Aspirin trial", "p2": "Aspirin cohort", "p3": "Statins"}
    insights = [insight("i01", "p1", claim), insight("i02", "p2", opposite)]

    relationships = offline_relationships([*insights, insight("i03", "p3", unrelated)], titles)

    (relationship,) = relationships
    assert (relationship.source, relationship.target) == ("i01", "i02")
    assert relationship.type == "contradiction"
    # Both claims quoted whole, after their papers' titles.
    assert f'"Aspirin trial" says "{claim}"' in relationship.explanation
    assert f'"Aspirin cohort" says "{opposite}"' in relationship.explanation


def test_a_paraphrase_is_no_contradiction() -> None:
    claim = "Low-dose aspirin reduced the risk of recurrent stroke in elderly patients"
    same = "In elderly patients, low-dose aspirin lowered the recurrent stroke risk"
    (relationship,) = offline_relationships(
        [insight("i01", "p1", claim), insight("i02", "p2", same)], {"p1": "A", "p2": "B"}
    )
    assert relationship.type in ("parallel", "complementary")


EVIDENCE = {
    "editing": [
        retrieved_chunk("editing", 0, 2, ABSTRACT),
        retrieved_chunk(
            "editing",
            1,
            5,
            "Base editing restored adult haemoglobin in erythroid progeny of edited stem cells. "
            "Engraftment of edited cells was stable for 16 weeks in immunodeficient mice.",
        ),
    ],
    "screens": [
        retrieved_chunk(
            "screens",
            0,
            3,
            "A saturation screen of BRCA1 variants classified 2,000 single-nucleotide variants "
            "by their effect on homology-directed repair. Variants in the RING domain lost "
            "repair function.",
        ),
    ],
}


def synthesis_input() -> SynthesisInput:
    insights = [
        insight("i01", "editing", "Adenine base editing corrected the sickle mutation", 2),
        insight("i02", "editing", "Edited stem cells engrafted for 16 weeks", 5),
        insight("i03", "screens", "Saturation screens classified BRCA1 variants by repair", 3),
    ]
    titles = {"editing": "Base editing for sickle cell disease", "screens": "BRCA1 screens"}
    return SynthesisInput(
        collection="genomes",
        pattern="stuff",
        theme=strip_markers(insights[0].text),
        narrative=" ".join(i.text for i in insights),
        insights=insights,
        relationships=[],
        type_distribution={},
        papers=[
            PaperMaterial(paper_id=paper, title=titles[paper], evidence=EVIDENCE[paper])
            for paper in EVIDENCE
        ],
        context_tokens=4000,
    )


def test_the_offline_synthesis_cites_every_paper_and_only_the_passages_it_was_given() -> None:
    inputs = synthesis_input()
    evidence = [chunk for chunks in EVIDENCE.values() for chunk in chunks]

    written = offline_synthesis(inputs)

    found, unresolved = citations.citations(written.text, evidence)
    assert unresolved == []
    assert {citation.paper_id for citation in found} == set(EVIDENCE)
    assert {paper for paper, _ in markers_in(written.text)} == set(EVIDENCE)
    assert written.title == "What the 2 papers of genomes report"


def test_the_offline_answer_quotes_its_passages_with_their_markers() -> None:
    question = Question(
        question_id="editing:q00",
        paper_id="editing",
        style="broad",
        text="How long did the edited stem cells engraft?",
    )
    inputs = AnswerInput(question=question, evidence=EVIDENCE["editing"])

    answer = offline_answer(inputs).answer

    found, unresolved = citations.citations(answer, inputs.evidence)
    assert found and unresolved == []
    passages = " ".join(" ".join(chunk.text.split()) for chunk in inputs.evidence)
    for sentence in sentences(strip_markers(answer)):
        assert " ".join(sentence.text.split()).rstrip(" .") in passages
    unrelated = question.model_copy(update={"text": "Which telescope observed the quasar?"})
    assert offline_answer(AnswerInput(question=unrelated, evidence=[])).answer == NO_ANSWER


def scored(reference_id: str, title: str, abstract: str) -> ScoredReference:
    return ScoredReference(
        reference=Reference(id=reference_id, title=title, abstract=abstract),
        retrieval_rank=1,
        fused_score=0.1,
        verdict=DebateVerdict(
            arguments_for=[], quotes_for=[], arguments_against=[], probability=80
        ),
    )


def test_the_offline_related_work_cites_every_reference_given_and_no_other() -> None:
    references = [
        scored("a", "Base editing", ABSTRACT),
        scored("b", "BRCA1 screens", EVIDENCE["screens"][0].text),
        scored(
            "c",
            "Prime editing",
            "Prime editing writes new genetic information into a target site without "
            "double-strand breaks. We installed transversions and small insertions in human "
            "cells.",
        ),
    ]
    inputs = RelatedWorkInput(
        idea="We propose to correct pathogenic BRCA1 variants in stem cells with base editors.",
        references=references,
        sentences=5,
        words=120,
    )

    text = offline_related_work(inputs).text

    assert cited_ids(text) and set(cited_ids(text)) == {"a", "b", "c"}
    assert count_sentences(text) <= inputs.sentences
    assert count_words(text) <= inputs.words


def test_the_offline_questions_slot_phrases_of_the_paper_into_question_frames() -> None:
    inputs = QuestionsInput(
        paper_id="editing",
        title="Base editing of haematopoietic stem cells rescues sickle cell disease",
        abstract=ABSTRACT,
        per_style=2,
    )

    drafts = offline_questions(inputs).questions

    assert [d.style for d in drafts] == [style for style in STYLES for _ in range(2)]
    assert all(d.text.endswith("?") for d in drafts)
    assert len({d.text for d in drafts}) == len(drafts)
