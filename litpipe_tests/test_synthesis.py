"""The expert synthesis writer: the offline engine (cited, verbatim, every paper covered) in its
three patterns, and the model path through the stub: the three parts of the request, the
coverage fix, invented markers removed, map-reduce's concurrent map then reduce."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import litellm
import pytest

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.cluster_summary import cluster
from litpipe.agents.plain_summary import write_plain_summary
from litpipe.agents.relationship_analysis.relationships import type_distribution
from litpipe.agents.synthesis import (
    ALSO_IN_COLLECTION,
    choose_pattern,
    clipped,
    covered,
    question_answer_pairs,
)
from litpipe.evaluation.checks import coverage
from litpipe.extractive import synthesis as synthesis_engine
from litpipe.extractive.cluster_summary import Member
from litpipe.extractive.paper_summary import (
    EVIDENCE_SENTENCES,
    PaperSummaryInput,
    offline_paper_summary,
)
from litpipe.extractive.synthesis import RELATION_VERBS, WrittenReply, central_findings
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.retrieval.centrality import closest_to_centroid
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import (
    Answer,
    Citation,
    Insight,
    PaperAnswers,
    Question,
    Relationship,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
)
from litpipe.settings import Settings
from litpipe.text import (
    cited_sentences,
    estimate_tokens,
    marker,
    markers_in,
    sentences,
    strip_markers,
)
from litpipe.workflows.synthesis import synthesis_version, write_synthesis
from litpipe.workflows.tokens import token_counter
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_agents import ScriptedClient

GCK = "10.1093_nar_gkae252"
PLM = "arxiv-2312.01234"
BRCA = "nature-s41586"
PAPERS = [GCK, PLM, BRCA]
TITLES = {
    GCK: "Deep mutational scanning maps the fitness landscape of human glucokinase",
    PLM: "Protein language models predict the effects of missense variants",
    BRCA: "Saturation genome editing classifies BRCA1 variants of uncertain significance",
}
# Two answers per paper, from two and three passages (page, section, text).
PASSAGES: dict[str, list[list[tuple[int, str, str]]]] = {
    GCK: [
        [
            (
                3,
                "Results",
                "We measured the activity of 9,003 glucokinase variants with a yeast "
                "complementation assay. Variant fitness correlated strongly with enzyme activity "
                "measured in vitro for a panel of 40 purified variants. Most missense variants in "
                "the hydrophobic core reduced glucokinase activity below the growth threshold.",
            ),
            (
                4,
                "Results",
                "Surface positions tolerated nearly every substitution without loss of function. "
                "Activating variants clustered in the allosteric site that binds small-molecule "
                "activators. These activating variants cause congenital hyperinsulinism in "
                "patients carrying them.",
            ),
        ],
        [
            (
                6,
                "Discussion",
                "The fitness map separates pathogenic from benign clinical variants with an "
                "area under the curve of 0.91. Variants of uncertain significance could be "
                "reclassified for 64 percent of the glucokinase variants reported in ClinVar.",
            ),
            (
                7,
                "Discussion",
                "Combining the fitness map with protein stability predictions explained why "
                "buried variants fail. Loss of stability rather than loss of catalysis accounted "
                "for most of the damaging variants in the core.",
            ),
            (
                8,
                "Discussion",
                "Glucokinase variants that escaped the assay were rare and mostly located near "
                "the glucose binding cleft, where yeast growth depends less on full activity. "
                "We therefore report these positions separately and recommend confirmation by "
                "enzyme kinetics before any clinical use of their scores.",
            ),
        ],
    ],
    PLM: [
        [
            (
                2,
                "Methods",
                "We scored every possible missense variant with the log-likelihood ratio of a "
                "protein language model trained on 250 million sequences. The model requires no "
                "alignment and no labelled clinical data. Scores were computed for all human "
                "proteins in under a day on one accelerator.",
            ),
            (
                3,
                "Results",
                "Language model scores matched deep mutational scanning measurements across 41 "
                "assays with a mean Spearman correlation of 0.52. The scores outperformed "
                "alignment-based predictors on proteins with few homologous sequences.",
            ),
        ],
        [
            (
                5,
                "Results",
                "Language model scores classified ClinVar pathogenic and benign variants with an "
                "area under the curve of 0.89. Performance dropped for variants in disordered "
                "regions, where the model had seen little conserved sequence.",
            ),
            (
                6,
                "Discussion",
                "Predictions for allosteric activating variants were poor, because such variants "
                "increase function rather than disrupt the protein. Experimental maps remain "
                "necessary for gain-of-function mechanisms.",
            ),
            (
                7,
                "Discussion",
                "Combining language model scores with structural features improved the "
                "classification of variants at protein interfaces. Because the model is "
                "unsupervised, its scores are not circular with the clinical labels used to "
                "evaluate them, unlike predictors trained on those labels.",
            ),
        ],
    ],
    BRCA: [
        [
            (
                1,
                "Introduction",
                "Saturation genome editing introduces every single-nucleotide variant into the "
                "native BRCA1 locus of haploid human cells. Cells carrying loss-of-function "
                "variants are depleted because BRCA1 is essential in these cells.",
            ),
            (
                2,
                "Results",
                "We edited 3,893 variants across 13 exons and measured their depletion by deep "
                "sequencing over eleven days. Function scores were bimodal and separated "
                "nonfunctional from functional variants for 96 percent of them.",
            ),
        ],
        [
            (
                4,
                "Results",
                "Function scores agreed with ClinVar classifications for 99 percent of the "
                "variants of known significance. Splice-disrupting variants were depleted as "
                "strongly as nonsense variants in the same exons.",
            ),
            (
                5,
                "Discussion",
                "Editing the native locus captures effects on splicing that complementation "
                "assays of complementary DNA miss. The scores can be used directly as evidence "
                "for clinical variant classification.",
            ),
            (
                6,
                "Discussion",
                "The assay is limited to genes that are essential in haploid cells, which "
                "excludes many disease genes. Variants with intermediate scores were enriched "
                "at the edges of functional domains and may reflect partial loss of function "
                "rather than measurement noise.",
            ),
        ],
    ],
}
THEME = "Measuring and predicting the functional effects of human missense variants"
NARRATIVE = (
    f"Three studies measure or predict the effects of human variants. A yeast assay maps "
    f"glucokinase fitness [{GCK}:3]. A protein language model predicts variant effects without "
    f"labels [{PLM}:2]. Saturation genome editing scores BRCA1 variants in their native locus "
    f"[{BRCA}:2]."
)


def chunk(paper: str, index: int, page: int, section: str, text: str) -> RetrievedChunk:
    return RetrievedChunk(
        chunk_id=f"{paper}:{index}",
        paper_id=paper,
        section=section,
        page_start=page,
        page_end=page,
        char_start=index * 1000,
        char_end=index * 1000 + len(text),
        text=text,
        fused_rank=1,
        fused_score=1.0,
    )


def paper_answers(paper: str) -> PaperAnswers:
    answers = []
    for number, passages in enumerate(PASSAGES[paper]):
        evidence = [
            chunk(paper, number * 2 + index, page, section, text)
            for index, (page, section, text) in enumerate(passages)
        ]
        question = Question(
            question_id=f"{paper}:q{number:02d}",
            paper_id=paper,
            style="broad",
            text="What does the paper find?",
        )
        text = " ".join(f"{p.text} {citations.chunk_marker(p)}" for p in evidence)
        found, _ = citations.citations(text, evidence)
        answers.append(
            Answer(question=question, text=text, citations=found, evidence=evidence, engine="x")
        )
    return PaperAnswers(
        paper_id=paper, collection="variants", mode="single", engine="offline", answers=answers
    )


def first_sentence(paper: str, answer: int, passage: int) -> tuple[str, Citation]:
    page, _, text = PASSAGES[paper][answer][passage]
    sentence = sentences(text)[0].text
    return sentence, Citation(
        marker=marker(paper, page),
        paper_id=paper,
        page=page,
        chunk_ids=[f"{paper}:{answer * 2 + passage}"],
    )


def make_insights() -> list[Insight]:
    insights = []
    for paper in PAPERS:
        for answer in range(2):
            sentence, citation = first_sentence(paper, answer, 0)
            insights.append(
                Insight(
                    insight_id=f"i{len(insights)}",
                    paper_id=paper,
                    papers=[paper],
                    question_ids=[f"{paper}:q{answer:02d}"],
                    text=f"{sentence[:-1]} {citation.marker}.",
                    citations=[citation],
                )
            )
    return insights


RELATIONSHIPS = [
    Relationship(
        source="i2",
        target="i0",
        type="extension",
        explanation="Both score glucokinase-scale variant sets, one by prediction.",
    ),
    Relationship(
        source="i5",
        target="i3",
        type="complementary",
        explanation="Clinical agreement is shown by an experiment and by a model.",
    ),
    Relationship(
        source="i3",
        target="i1",
        type="contradiction",
        explanation="The model misses the activating variants the map finds.",
    ),
]


def make_analysis() -> RelationshipAnalysis:
    return RelationshipAnalysis(
        collection="variants",
        engine="offline",
        papers=PAPERS,
        theme=THEME,
        narrative=NARRATIVE,
        insights=make_insights(),
        relationships=RELATIONSHIPS,
        type_distribution={
            "extension": 1,
            "contradiction": 1,
            "complementary": 1,
            "improvement": 0,
            "parallel": 0,
        },
    )


ANSWERS = {paper: paper_answers(paper) for paper in PAPERS}
EVIDENCE = [c for answers in ANSWERS.values() for a in answers.answers for c in a.evidence]
TEMPLATE_WORDS = [
    *RELATION_VERBS.values(),
    "Relationships",
    "Extension",
    "Complementary",
    "Contradiction",
    ALSO_IN_COLLECTION,
]


def unmarked(text: str) -> str:
    return " ".join(strip_markers(text).split())


def leftover(text: str, sources: list[str]) -> str:
    """What of `text` is neither one of the sources (markers ignored) nor template words."""
    rest = unmarked(text)
    for source in sorted({unmarked(s) for s in sources}, key=len, reverse=True):
        rest = rest.replace(source, " ")
    for word in TEMPLATE_WORDS:
        rest = rest.replace(word, " ")
    return rest


def analysis_where_nothing_is_cited_of(paper_id: str) -> RelationshipAnalysis:
    """The analysis with the paper's insights citing no passage (a model's, kept as written)."""
    analysis = make_analysis()
    analysis.insights = [
        i.model_copy(update={"citations": [], "text": "It reports results."})
        if i.paper_id == paper_id
        else i
        for i in analysis.insights
    ]
    return analysis


def offline_sources(analysis: RelationshipAnalysis) -> list[str]:
    passage_sentences = [span.text for c in EVIDENCE for span in sentences(c.text)]
    return [
        *passage_sentences,
        *(insight.text for insight in analysis.insights),
        analysis.narrative,
        analysis.theme,
        *(r.explanation for r in analysis.relationships),
        *TITLES.values(),
    ]


def write_offline(tmp_path: Path, **overrides: Any) -> Synthesis:
    settings = Settings(home=tmp_path, **overrides)
    return write_synthesis(
        make_analysis(),
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )


def test_a_comparative_finding_two_questions_share_is_listed_once(tmp_path: Path) -> None:
    analysis = make_analysis()
    paper_insight = analysis.insights[0]
    comparative = [
        paper_insight.model_copy(
            update={"insight_id": f"c{n}", "paper_id": None, "question_ids": [f"cmp:q{n:02d}"]}
        )
        for n in range(2)
    ]
    analysis = analysis.model_copy(update={"insights": [*analysis.insights, *comparative]})
    settings = Settings(home=tmp_path)
    synthesis = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    across = synthesis.text.split("## Across the papers")[1].split("\n## ")[0]
    assert across.count(paper_insight.text) == 1


def test_a_paper_is_introduced_by_its_own_finding_not_one_it_cites() -> None:
    """Seen on the bundled biology papers: the synthesis opened with "Protein complementation
    assays (Tarassov et al. 2008; Michnick et al. 2016) have also successfully been used ...",
    an introduction's sentence about other work, central because it is generic."""
    theme = "complementation assays measure protein binding in yeast"
    cited_work = [
        "Complementation assays measure protein binding in yeast (Tarassov et al. 2008) [p:2].",
        "Complementation assays measure protein binding in yeast [3, 4] [p:2].",
    ]
    own = "We scored 9,003 mutants of the kinase for activity [p:5]."
    for background in cited_work:
        assert central_findings([background, own], theme, [])[0] == own
    # A paper whose every finding cites other work still has one.
    assert central_findings(cited_work, theme, [])[0] in cited_work


def check_cited_and_faithful(synthesis: Synthesis) -> None:
    assert {c.paper_id for c in synthesis.citations} == set(PAPERS)
    found, unresolved = citations.citations(synthesis.text, EVIDENCE)
    assert unresolved == [] and found == synthesis.citations
    assert ALSO_IN_COLLECTION not in synthesis.text  # covered by itself, not by the fix
    assert synthesis.appended == []
    assert re.fullmatch(
        r"[\s#\"':,.;-]*", leftover(synthesis.text, offline_sources(make_analysis()))
    )


def test_offline_stuff_synthesis_is_cited_verbatim_and_covers_every_paper(tmp_path: Path) -> None:
    synthesis = write_offline(tmp_path)
    assert synthesis.pattern == "stuff" and synthesis.engine == "offline"
    assert synthesis.audience == "expert" and synthesis.papers == PAPERS
    # What the text is of: not the theme, a sentence the text's first paragraph quotes.
    assert synthesis.title == "What the 3 papers of variants report"
    check_cited_and_faithful(synthesis)
    text = synthesis.text
    # One theme sentence, a finding of a paper, cited: not the analysis' narrative.
    opening = text.split("\n\n")[0]
    assert len(sentences(opening)) == 1 and len(markers_in(opening)) == 1
    assert unmarked(opening) in {unmarked(s.text) for c in EVIDENCE for s in sentences(c.text)}
    assert NARRATIVE not in text
    # A section per paper in the analysis' order, each holding its insights.
    positions = [text.index(f"## {TITLES[paper]}") for paper in PAPERS]
    assert positions == sorted(positions)
    for insight in make_analysis().insights:
        assert insight.text in text
    # Each paper: its two insights and the evidence sentences MMR picks to ground them, the
    # one that opens the text said there only.
    sections = text.split("\n## ")[1:4]
    assert sum(len(markers_in(s.split("\n\n")[-1])) for s in [opening, *sections]) == 3 * (
        2 + EVIDENCE_SENTENCES
    )
    # Transitions from the relationship map, and the map by type at the end.
    assert f'"{TITLES[PLM]}" extends "{TITLES[GCK]}": {RELATIONSHIPS[0].explanation}' in text
    assert "## Relationships" in text and "### Contradiction" in text


def test_too_much_evidence_switches_to_map_reduce_then_hierarchical(tmp_path: Path) -> None:
    small = Settings(home=tmp_path, synthesis={"context_tokens": 1000})
    assert choose_pattern(900, 3, small.synthesis) == "stuff"
    assert choose_pattern(1001, 3, small.synthesis) == "map_reduce"
    tree = Settings(home=tmp_path, synthesis={"context_tokens": 1000, "hierarchical_min_papers": 2})
    assert choose_pattern(1001, 3, tree.synthesis) == "hierarchical"
    # The answers of three papers fit the smallest context: the patterns are named to run them.
    map_reduce = write_offline(tmp_path, synthesis={"pattern": "map_reduce"})
    assert map_reduce.pattern == "map_reduce"
    check_cited_and_faithful(map_reduce)
    hierarchical = write_offline(tmp_path, synthesis={"pattern": "hierarchical"})
    assert hierarchical.pattern == "hierarchical"
    check_cited_and_faithful(hierarchical)
    # The one cluster of the three papers is headed by their titles.
    assert "; ".join(TITLES[paper] for paper in PAPERS) in hierarchical.text


def test_clusters_group_members_by_shared_terms() -> None:
    yeast = "yeast growth assay fitness of enzyme variants measured"
    model = "language model transformer embeddings predict scores"
    members = [
        Member(label=str(index), papers=[str(index)], summary=f"{topic} number {index}")
        for index, topic in enumerate([yeast, model] * 3)
    ]
    assert cluster(members) == [[0, 2, 4], [1, 3, 5]]
    assert cluster(members[:1]) == [[0]]


def test_version_changes_with_the_pattern_thresholds(tmp_path: Path) -> None:
    prompts = PromptLibrary(None)

    def version_of(settings: Settings) -> str:
        return synthesis_version(settings.synthesis, Asker(settings.llm, None, prompts))

    default = version_of(Settings(home=tmp_path))
    assert default == version_of(Settings(home=tmp_path))
    assert default != version_of(Settings(home=tmp_path, synthesis={"hierarchical_min_papers": 4}))


# The model path, through the stub.
SYNTHESIS_REQUEST = "Write the synthesis of the papers"
MAP_REQUEST = "Summarize paper"


def model_synthesis(home: Path, stub: StubLLM, **overrides: Any) -> Synthesis:
    settings = stub_settings(home, stub, **overrides)
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    return write_synthesis(
        make_analysis(),
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm, client),
    )


def user_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def part(request: str, number: int) -> str:
    start = request.index(f"=== Part {number}:")
    following = request.find(f"=== Part {number + 1}:")
    return request[start : following if following != -1 else len(request)]


def synthesis_requests(stub: StubLLM) -> list[str]:
    return [user_message(b) for b in stub.requests if SYNTHESIS_REQUEST in user_message(b)]


def test_request_has_three_parts_and_an_uncited_paper_gets_the_fix(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    reply = f"Two studies agree [{GCK}:3] and [{PLM}:5], as the page [{GCK}:99] does not."
    stub_llm.script(SYNTHESIS_REQUEST, {"title": "Variant effects", "text": reply})
    with caplog.at_level(logging.WARNING, logger="litpipe.agents.synthesis"):
        synthesis = model_synthesis(tmp_path, stub_llm)

    (request,) = synthesis_requests(stub_llm)
    spine, evidence, relationship_map = part(request, 1), part(request, 2), part(request, 3)
    assert THEME in spine and NARRATIVE in spine
    assert all(insight.text in spine for insight in make_analysis().insights)
    for paper in PAPERS:
        assert f"### Paper {paper}" in evidence
        assert marker(paper, PASSAGES[paper][0][0][0]) in evidence
    assert RELATIONSHIPS[2].explanation in relationship_map

    assert synthesis.engine == "openai/stub" and synthesis.pattern == "stuff"
    assert synthesis.title == "Variant effects"
    # The invented page is gone; the paper left out is cited by its best insight.
    assert f"[{GCK}:99]" not in synthesis.text
    assert synthesis.text.startswith(f"Two studies agree [{GCK}:3] and [{PLM}:5]")
    (fix,) = [line for line in synthesis.text.splitlines() if ALSO_IN_COLLECTION in line]
    assert fix.startswith(f'{ALSO_IN_COLLECTION}, "{TITLES[BRCA]}": ')
    assert any(i.text in fix for i in make_analysis().insights if i.paper_id == BRCA)
    assert {c.paper_id for c in synthesis.citations} == set(PAPERS)
    assert synthesis.appended == [BRCA]  # what the coverage check counts apart
    assert citations.citations(synthesis.text, EVIDENCE)[1] == []
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert f"[{GCK}:99]" in warnings and BRCA in warnings


def insight_paper(insight_id: str) -> str:
    return next(i.paper_id for i in make_analysis().insights if i.insight_id == insight_id)


def every_answer_cut(request: str) -> None:
    """Each paper's question-and-answer pairs are in the request, each answer cut to 500
    characters at a word, with the markers of what was cut after the cut."""
    for paper in PAPERS:
        block = request[request.index(f"### Paper {paper}") :]
        for answer in ANSWERS[paper].answers:
            assert f"Q: {answer.question.text}\nA: {clipped(answer.text, 500)}" in block
    long_answer = " ".join(ANSWERS[GCK].answers[1].text.split())
    assert len(long_answer) > 500 and long_answer not in request
    assert f"{long_answer[:400]}" in request
    assert all(f"[{GCK}:{page}]" in request for page in (3, 4, 6, 7, 8))


def test_request_gives_every_papers_answers_and_every_relationship_in_words(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """X-Sum's pipeline 2: part 2 is each paper's Q&A pairs, part 3 the relationships in
    words, and the writer expands the narrative."""
    reply = " ".join(f"A finding [{paper}:{PASSAGES[paper][0][0][0]}]." for paper in PAPERS)
    stub_llm.script(SYNTHESIS_REQUEST, {"title": "Variant effects", "text": reply})
    synthesis = model_synthesis(tmp_path, stub_llm)

    (request,) = synthesis_requests(stub_llm)
    every_answer_cut(part(request, 2))
    relationship_map = part(request, 3)
    for r in RELATIONSHIPS:
        source, target = insight_paper(r.source), insight_paper(r.target)
        assert (
            f'- {r.type}: {source} "{TITLES[source]}" {RELATION_VERBS[r.type]} '
            f'{target} "{TITLES[target]}": {r.explanation}'
        ) in relationship_map
    assert not re.search(r"\bi\d+\b", relationship_map)  # papers, not insight ids
    assert "Expand the narrative of Part 1 into the full text" in request
    assert synthesis.text == reply and synthesis.appended == []


def test_flat_method_writes_from_every_answer_in_one_prompt_without_the_analysis(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """X-Sum's pipeline 1: one call, every paper's Q&A pairs, no theme, narrative, insight or
    relationship."""
    reply = " ".join(f"A finding [{paper}:{PASSAGES[paper][0][0][0]}]." for paper in PAPERS)
    stub_llm.script(SYNTHESIS_REQUEST, {"title": "Variant effects", "text": reply})
    synthesis = model_synthesis(tmp_path, stub_llm, synthesis={"method": "flat"})

    (request,) = [user_message(body) for body in stub_llm.requests]
    assert SYNTHESIS_REQUEST in request
    every_answer_cut(request)
    analysis = make_analysis()
    assert THEME not in request and NARRATIVE not in request
    assert not any(i.text in request for i in analysis.insights)
    assert not any(r.explanation in request for r in analysis.relationships)
    assert synthesis.text == reply and synthesis.engine == "openai/stub"


REFINE_REQUEST = "Refine the running summary with paper"
_REFINE_PAPER = re.compile(r"Refine the running summary with paper (\S+)\.")


def refined_summary_reply(body: dict[str, Any]) -> dict[str, Any]:
    paper = _REFINE_PAPER.search(user_message(body)).group(1)  # type: ignore[union-attr]
    return {"summary": f"Summary up to {paper} [{paper}:{PASSAGES[paper][0][0][0]}]."}


def test_refine_updates_one_summary_paper_by_paper_then_writes_from_it(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.respond(REFINE_REQUEST, refined_summary_reply)
    synthesis = model_synthesis(tmp_path, stub_llm, synthesis={"pattern": "refine"})

    assert synthesis.pattern == "refine"
    requests = [user_message(body) for body in stub_llm.requests]
    assert len(requests) == 4 and SYNTHESIS_REQUEST in requests[3]
    refines = requests[:3]
    assert [_REFINE_PAPER.search(r).group(1) for r in refines] == PAPERS  # type: ignore[union-attr]
    # Each step reads the summary the step before wrote, and the paper's own answers.
    assert "Summary up to" not in refines[0]
    for earlier, request in zip(PAPERS, refines[1:], strict=False):
        assert f"Summary up to {earlier}" in request
    for paper, request in zip(PAPERS, refines, strict=True):
        assert clipped(ANSWERS[paper].answers[0].text, 500) in request
    written_from = part(requests[3], 2)
    assert f"Summary up to {BRCA}" in written_from and "Q: " not in written_from


def test_offline_refine_is_cited_verbatim_and_auto_never_picks_it(tmp_path: Path) -> None:
    refined = write_offline(tmp_path, synthesis={"pattern": "refine"})
    assert refined.pattern == "refine"
    check_cited_and_faithful(refined)
    huge = Settings(home=tmp_path, synthesis={"hierarchical_min_papers": 2})
    assert choose_pattern(10**9, 3, huge.synthesis) == "hierarchical"
    assert choose_pattern(10**9, 1, huge.synthesis) == "map_reduce"


def test_the_pattern_is_chosen_by_the_tokens_the_model_would_count_not_characters(
    tmp_path: Path,
) -> None:
    """Answers full of figures: a quarter of their characters fits the context, their tokens
    (the embedder's, offline) do not, so the writer goes map-reduce."""
    figures = "0.91 " * 150
    dense = {
        paper: answers.model_copy(
            update={
                "answers": [
                    a.model_copy(update={"text": figures + a.text}) for a in answers.answers
                ]
            }
        )
        for paper, answers in ANSWERS.items()
    }
    budget = 1100
    part_2 = [question_answer_pairs(dense[paper].answers, 500) for paper in PAPERS]
    assert estimate_tokens("\n\n".join(part_2)) < budget  # chars / 4 would choose `stuff`
    settings = Settings(home=tmp_path, synthesis={"context_tokens": budget})
    written = write_synthesis(
        make_analysis(),
        dense,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    assert written.pattern == "map_reduce"


def test_tokens_are_counted_with_litellms_tokenizer_for_a_model_it_knows_else_the_embedders(
    tmp_path: Path,
) -> None:
    text = "Fitness correlated with activity (r = 0.91) across 9,003 variants [gck:3]."
    known = Settings(home=tmp_path, llm={"model": "gpt-4o-mini"})
    assert token_counter(known.route("synthesis"), known.ingest, known.paths)(
        text
    ) == litellm.token_counter(model="gpt-4o-mini", text=text)
    embedder = Embedder(known.ingest.embedder).tokenizer
    by_embedder = len(embedder.token_offsets([text])[0])
    for other in (Settings(home=tmp_path), Settings(home=tmp_path, llm={"model": "openai/stub"})):
        assert (
            token_counter(other.route("synthesis"), other.ingest, other.paths)(text) == by_embedder
        )
    assert by_embedder != estimate_tokens(text)


_MAP_PAPER = re.compile(r"Summarize paper (\S+) in")


def scripted_summary(body: dict[str, Any]) -> dict[str, Any]:
    paper = _MAP_PAPER.search(user_message(body)).group(1)  # type: ignore[union-attr]
    page = PASSAGES[paper][1][1][0]
    return {"summary": f"Summary of {paper} from its evidence [{paper}:{page}]."}


def test_map_reduce_maps_every_paper_concurrently_then_reduces_once(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.respond(MAP_REQUEST, scripted_summary)
    stub_llm.latency_s = 0.3  # long enough for the map calls to overlap
    stub_llm.report_slots(8)
    synthesis = model_synthesis(tmp_path, stub_llm, synthesis={"pattern": "map_reduce"})

    assert synthesis.pattern == "map_reduce"
    requests = [user_message(body) for body in stub_llm.requests]
    maps = [request for request in requests if MAP_REQUEST in request]
    assert sorted(_MAP_PAPER.search(m).group(1) for m in maps) == sorted(PAPERS)  # type: ignore[union-attr]
    # Three maps at once (the server saw them overlap, whatever the machine's load), then the
    # reduce.
    assert stub_llm.max_in_flight == 3
    assert len(requests) == 4 and SYNTHESIS_REQUEST in requests[-1]
    evidence = part(requests[-1], 2)
    for paper in PAPERS:
        assert f"Summary of {paper} from its evidence" in evidence
        assert PASSAGES[paper][0][0][2][:40] not in evidence  # summaries replace the passages


CLUSTER_REQUEST = "Summarize this group of papers"


def test_hierarchical_maps_then_summarizes_the_cluster_then_writes_from_it(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.respond(MAP_REQUEST, scripted_summary)
    group = " ".join(
        f"Paper {paper} adds a part [{paper}:{PASSAGES[paper][1][1][0]}]." for paper in PAPERS
    )
    stub_llm.script(CLUSTER_REQUEST, {"summary": group})
    synthesis = model_synthesis(tmp_path, stub_llm, synthesis={"pattern": "hierarchical"})

    assert synthesis.pattern == "hierarchical"
    requests = [user_message(body) for body in stub_llm.requests]
    assert [MAP_REQUEST in r for r in requests] == [True, True, True, False, False]
    assert CLUSTER_REQUEST in requests[3] and SYNTHESIS_REQUEST in requests[4]
    assert all(f"Summary of {paper} from its evidence" in requests[3] for paper in PAPERS)
    evidence = part(requests[4], 2)
    assert f"### Group 1: papers {', '.join(PAPERS)}" in evidence and group in evidence
    assert "Summary of" not in evidence  # the cluster's summary replaces the papers'


def silent_insight(paper: str) -> Insight:
    """An insight of `paper` citing nothing, in the theme's own words: it would be the paper's
    closest insight if its lack of a citation were not weighed first."""
    return Insight(
        insight_id="i9",
        paper_id=paper,
        papers=[paper],
        question_ids=[f"{paper}:q09"],
        text=f'On "How are {THEME.lower()}?": The retrieved passages do not answer this question.',
        citations=[],
    )


def test_an_uncited_paper_is_covered_by_a_cited_insight_not_one_saying_nothing() -> None:
    analysis = make_analysis()
    silent = silent_insight(BRCA)
    analysis.insights.insert(4, silent)
    text = f"Two studies agree [{GCK}:3] and [{PLM}:5]."

    fixed, found, appended, left_out = covered(
        text,
        lambda t: citations.citations(t, EVIDENCE),
        analysis,
        TITLES,
        "synthesis",
        {},
        "it has no passage",
    )

    (fix,) = [line for line in fixed.splitlines() if ALSO_IN_COLLECTION in line]
    assert silent.text not in fix
    assert any(i.text in fix for i in analysis.insights if i.paper_id == BRCA and i.citations)
    assert {c.paper_id for c in found} == set(PAPERS)
    assert appended == [BRCA]  # cited, but not by the writer
    assert left_out == []


def test_a_paper_whose_insights_cite_nothing_is_covered_by_its_evidence_and_reported(
    tmp_path: Path,
) -> None:
    """A model whose insights cite nothing (they are kept: they are its words) leaves a paper
    with no cited insight; the synthesis quotes its evidence instead, the plain summary the
    expert sentence that cites it, and both report the paper as appended, not writer-cited."""
    analysis = analysis_where_nothing_is_cited_of(BRCA)
    uncited = WrittenReply(title="T", text=f"Two studies agree [{GCK}:3] and [{PLM}:5].")
    client = ScriptedClient(uncited)
    settings = Settings(home=tmp_path, llm={"model": "openai/x"})

    expert = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm, client),
    )
    (fix,) = [line for line in expert.text.splitlines() if ALSO_IN_COLLECTION in line]
    brca_chunks = [c for c in EVIDENCE if c.paper_id == BRCA]
    assert f"[{BRCA}:" in fix and any(c.text.split(".")[0] in fix for c in brca_chunks)
    assert expert.appended == [BRCA] and {c.paper_id for c in expert.citations} == set(PAPERS)

    plain = write_plain_summary(analysis, expert, TITLES, Asker(settings.llm, client))
    (plain_fix,) = [line for line in plain.text.splitlines() if ALSO_IN_COLLECTION in line]
    assert f"[{BRCA}:" in plain_fix and plain_fix.count(ALSO_IN_COLLECTION) == 1
    assert plain.appended == [BRCA]


def test_a_paper_with_nothing_to_cite_is_left_out_with_its_reason_and_coverage_warns(
    tmp_path: Path,
) -> None:
    """A paper none of whose insights cites a passage and none of whose passages the writers
    were given cannot be cited: both syntheses name it with why, and coverage warns (blocking
    nothing) instead of failing the collection's syntheses for the others."""
    analysis = analysis_where_nothing_is_cited_of(BRCA)
    answers = {
        **ANSWERS,
        BRCA: ANSWERS[BRCA].model_copy(
            update={
                "answers": [a.model_copy(update={"evidence": []}) for a in ANSWERS[BRCA].answers]
            }
        ),
    }
    settings = Settings(home=tmp_path)

    expert = write_synthesis(
        analysis,
        answers,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    plain = write_plain_summary(analysis, expert, TITLES, Asker(settings.llm))

    for written in (expert, plain):
        assert f"[{BRCA}:" not in written.text and written.appended == []
        ((paper, reason),) = [(p.paper_id, p.reason) for p in written.left_out]
        assert paper == BRCA and reason.startswith("nothing of it can be cited")
        outcome = coverage(written)
        assert (outcome.passed, outcome.warn_only) == (False, True)
        assert outcome.description.endswith(f"; left out: {BRCA} ({reason})")
        assert outcome.metadata["missing"] == []
    assert "no passage of it is among the evidence" in expert.left_out[0].reason
    assert "the expert synthesis has no sentence citing it" in plain.left_out[0].reason


def test_offline_text_says_a_repeated_insight_once_and_lists_few_relationships_per_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(synthesis_engine, "LISTED_PER_TYPE", 2)
    analysis = make_analysis()
    # Two questions answered from the same sentence give the same insight twice.
    repeat = analysis.insights[0].model_copy(update={"insight_id": "i6"})
    analysis.insights.append(repeat)
    # Many insight pairs between the same two papers, and more pairs of papers than are listed.
    extra = [
        Relationship(source=f"i{s}", target=f"i{t}", type="parallel", explanation=f"Pair {s}{t}.")
        for s, t in [(0, 2), (1, 3), (0, 3), (2, 4), (3, 5), (4, 0), (5, 1)]
    ]
    analysis.relationships = [*RELATIONSHIPS, *extra]

    settings = Settings(home=tmp_path)
    synthesis = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )

    assert synthesis.text.count(unmarked(repeat.text)[:60]) == 1
    listed = synthesis.text.split("### Parallel\n")[1].split("\n\n")[0].splitlines()
    # i0-i2 and i1-i3 and i0-i3 are one pair of papers (GCK, PLM); so are i2-i4/i3-i5 and
    # i4-i0/i5-i1: three distinct pairs, each listed once.
    assert [line.split(": ")[-1] for line in listed] == [
        "Pair 02.",
        "Pair 24.",
        "- … and 1 more pairs of papers (parallel).",
    ]


def small_collection(size: int) -> tuple[RelationshipAnalysis, dict[str, PaperAnswers]]:
    """`size` papers of one cited answer and insight each, consecutive papers related, and a
    narrative naming every paper (as the offline analysis writes one)."""
    topics = ["yeast fitness", "variant effects", "protein language", "genome editing"]
    answers, insights, relationships = {}, [], []
    for index in range(size):
        paper = f"p{index:04d}"
        text = (
            f"Paper {index} measures {topics[index % 4]} in assay {index % 37} of cohort {index}."
        )
        passage = chunk(paper, 0, 1, "Results", text)
        question = Question(
            question_id=f"{paper}:q00", paper_id=paper, style="broad", text="What is found?"
        )
        cited = f"{text[:-1]} {marker(paper, 1)}."
        found, _ = citations.citations(cited, [passage])
        answers[paper] = PaperAnswers(
            paper_id=paper,
            mode="single",
            engine="offline",
            answers=[
                Answer(
                    question=question, text=cited, citations=found, evidence=[passage], engine="x"
                )
            ],
        )
        insights.append(
            Insight(
                insight_id=f"i{index}",
                paper_id=paper,
                papers=[paper],
                question_ids=[question.question_id],
                text=cited,
                citations=found,
            )
        )
        if index:
            relationships.append(
                Relationship(
                    source=f"i{index}",
                    target=f"i{index - 1}",
                    type="complementary",
                    explanation=f"Both concern {topics[index % 4]}.",
                )
            )
    named = ", ".join(f'"Paper {i}" {marker(f"p{i:04d}", 1)}' for i in range(size))
    analysis = RelationshipAnalysis(
        collection="many",
        engine="offline",
        papers=list(answers),
        theme="Assays of variant effects.",
        narrative=f"Assays of variant effects. The collection also includes {named}.",
        insights=insights,
        relationships=relationships,
        type_distribution=type_distribution(relationships),
    )
    return analysis, answers


class CountingClient:
    """A scripted model: each summary cites the first paper its prompt names, the synthesis one
    marker; records every prompt's estimated tokens."""

    def __init__(self) -> None:
        self.prompt_tokens: list[int] = []

    def _reply(self, messages: list[dict[str, str]], schema: type[Any]) -> Any:
        prompt = "\n".join(message["content"] for message in messages)
        self.prompt_tokens.append(estimate_tokens(prompt))
        # The first marker of the material it is given, as a model cites.
        material = "\n".join(m["content"] for m in messages if m["role"] == "user")
        paper, page = markers_in(material)[0]
        if schema is WrittenReply:
            return WrittenReply(title="Many assays", text=f"Assays agree {marker(paper, page)}.")
        return schema(summary=f"The group's first paper measures assays {marker(paper, page)}.")

    def complete_sync(self, route: Any, messages: list[dict[str, str]], schema: type[Any]) -> Any:
        return self._reply(messages, schema)

    def complete_many_sync(
        self, route: Any, list_of_messages: list[list[dict[str, str]]], schema: type[Any]
    ) -> list[Any]:
        return [self._reply(messages, schema) for messages in list_of_messages]

    complete_each_sync = complete_many_sync


@pytest.mark.slow
def test_a_synthesis_of_two_thousand_papers_keeps_every_prompt_within_the_context_budget(
    tmp_path: Path,
) -> None:
    """At 2,000 small papers the writer goes hierarchical; every prompt a model gets (each
    paper's summary, each cluster's, the synthesis) stays within 1.5 times
    `synthesis.context_tokens` (part 2 within it, the paper list, narrative, insights and
    relationship map within half as much again) plus the prompt's own words, and the offline
    engine writes the same collection, every paper cited, in seconds."""
    analysis, answers = small_collection(2000)
    titles = {paper: f"Paper {int(paper[1:])}" for paper in analysis.papers}
    budget = 4000
    model = Settings(
        home=tmp_path,
        llm={"model": "gpt-4o-mini", "api_base": "http://localhost:9"},
        synthesis={"context_tokens": budget},
    )
    client = CountingClient()
    written = write_synthesis(
        analysis,
        answers,
        None,
        titles,
        model.synthesis,
        model.ingest,
        model.paths,
        Asker(model.llm, client),
    )
    assert written.pattern == "hierarchical"
    assert len(client.prompt_tokens) > 2000  # a summary per paper, then the tree's
    assert max(client.prompt_tokens) <= 1.5 * budget + 1000

    offline = Settings(home=tmp_path, synthesis={"context_tokens": budget})
    started = time.perf_counter()
    synthesis = write_synthesis(
        analysis,
        answers,
        None,
        titles,
        offline.synthesis,
        offline.ingest,
        offline.paths,
        Asker(offline.llm),
    )
    assert time.perf_counter() - started < 60
    assert {citation.paper_id for citation in synthesis.citations} == set(analysis.papers)


def cited_papers_per_sentence(text: str) -> list[set[str]]:
    """The papers each sentence of `text` (each line on its own: headings, list items) cites."""
    return [
        {paper for paper, _ in markers_in(sentence)}
        for line in text.splitlines()
        for sentence in cited_sentences(line)
    ]


def assert_opens_with_a_finding_and_names_few_papers(
    text: str, titles: dict[str, str], findings: set[str]
) -> None:
    """The text's first paragraph is one sentence of a paper (among `findings`, markers
    ignored), citing it; no sentence cites, or names by title, more than three papers."""
    opening = text.split("\n\n")[0]
    assert len(cited_sentences(opening)) == 1 and len(markers_in(opening)) == 1, opening
    assert unmarked(opening) in findings, opening
    assert all(len(papers) <= 3 for papers in cited_papers_per_sentence(text))
    for line in text.splitlines():
        for sentence in cited_sentences(line):
            assert sum(f'"{title}"' in sentence for title in titles.values()) <= 3, sentence


def test_a_large_collection_opens_with_its_central_finding_and_no_sentence_lists_papers(
    tmp_path: Path,
) -> None:
    """Twelve papers, the analysis' narrative naming all of them in one sentence (as the
    offline analysis writes one): neither writer copies it."""
    analysis, answers = small_collection(12)
    titles = {paper: f"Paper {int(paper[1:])}" for paper in analysis.papers}
    settings = Settings(home=tmp_path)
    expert = write_synthesis(
        analysis,
        answers,
        None,
        titles,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    plain = write_plain_summary(analysis, expert, titles, Asker(settings.llm))

    findings = {unmarked(insight.text) for insight in analysis.insights}
    assert_opens_with_a_finding_and_names_few_papers(expert.text, titles, findings)
    plain_lines = plain.text.split("\n\n")
    assert plain_lines[0].startswith("What these 12 studies have most in common: ")
    assert unmarked(plain_lines[0].split(": ", 1)[1]) in findings
    assert all(len(papers) == 1 for papers in cited_papers_per_sentence(plain.text))
    for written in (expert, plain):
        assert {c.paper_id for c in written.citations} == set(analysis.papers)
        assert written.appended == []


def test_a_paper_is_introduced_by_its_central_finding_never_by_its_title(tmp_path: Path) -> None:
    """A question answered from the title page gives an insight that is the paper's title: no
    writer introduces the paper by it, nor by a relationship naming it."""
    analysis = make_analysis()
    title_insight = analysis.insights[4]  # BRCA's first
    analysis.insights[4] = title_insight.model_copy(
        update={"text": f"{TITLES[BRCA]} {title_insight.citations[0].marker}."}
    )
    settings = Settings(home=tmp_path)
    expert = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    plain = write_plain_summary(analysis, expert, TITLES, Asker(settings.llm))

    sections = expert.text.split("\n## ")[1:4]
    introductions = [expert.text.split("\n\n")[0], *(s.split("\n\n")[1] for s in sections)]
    for introduction in introductions:
        first = cited_sentences(introduction)[0]
        assert markers_in(first), first  # a cited finding, not a transition between titles
        assert not any(title in first for title in TITLES.values()), first
    # The plain summary names no title: each finding is introduced by its marker alone.
    assert not any(title in plain.text for title in TITLES.values())


def test_the_centroid_sample_keeps_the_sentences_most_like_the_others() -> None:
    """What bounds LexRank over a large collection: the sentences nearest the centroid, in
    order; an outlier is the one left out."""
    terms = [
        ["yeast", "fitness", "assay"],
        ["galaxy", "redshift", "survey"],
        ["yeast", "fitness", "map"],
        ["fitness", "assay", "map"],
    ]
    assert closest_to_centroid(terms, 3) == [0, 2, 3]
    assert closest_to_centroid(terms, 10) == [0, 1, 2, 3]


def test_a_paper_summary_is_grounded_in_whole_sentences_not_a_passage_cut_mid_sentence() -> None:
    # Two passages the chunker cut inside sentences: each opens on a tail ("2016), traced ...",
    # "showed that ..."), which the passage before holds whole.
    evidence = [
        retrieved_chunk(
            "ale", 0, 2, "2016), traced the ecological origins of beer brewing strains."
        ),
        retrieved_chunk("ale", 1, 3, "showed that ale yeast proteins change across fermentation."),
        retrieved_chunk(
            "ale", 2, 4, "We profiled ale yeast proteins across entire fermentation cycles."
        ),
    ]
    inputs = PaperSummaryInput(
        paper_id="ale",
        title="Ale yeast protein dynamics",
        theme="How ale yeast proteins change across fermentation",
        insights=[],
        evidence=evidence,
    )
    summary = offline_paper_summary(inputs).summary
    assert summary == "We profiled ale yeast proteins across entire fermentation cycles [ale:4]."
