"""Citation intent, offline: what a citing sentence says of the work it cites, from cue
phrases near its marker and the section it sits in. Checked on written sentences with the
marker placed, on the bundled papers' real contexts, and on any text at all.

What a user would notice: "we extend [3]", "unlike [3]", "outperforms [3]" and "we used [3]"
are told apart; a cue a clause away from the marker, or negated, does not decide; a tool cited
in Methods is a use, and most of an Introduction's citations are background.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.extractive.citation_intent import citation_intent, citation_intents, methods_headings
from litpipe.ingest.citation_contexts import citation_contexts
from litpipe.ingest.references import parse_references
from litpipe.schemas import (
    CITATION_INTENT_LABELS,
    CitationContext,
    CitationIntent,
    PaperDocument,
    Section,
)
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, bundled_document

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)


def _intent(sentence: str, marker: str = "[3]", section: str = "Results") -> CitationIntent:
    """The intent of `marker`'s first place in `sentence`, set at offset 100 of its paper."""
    start = 100
    context = CitationContext(
        reference_index=0,
        marker=marker,
        marker_start=start + sentence.index(marker),
        sentence=sentence,
        char_start=start,
        char_end=start + len(sentence),
        page=1,
        section=section,
    )
    return citation_intent(context)


@pytest.mark.parametrize(
    ("sentence", "label", "cue"),
    [
        (
            "We extend the framework of Smith et al. [3] to three species.",
            "extends",
            "extend the framework of",
        ),
        ("Building on [3], we model the whole pathway.", "extends", "Building on"),
        ("This study builds upon the screen in [3].", "extends", "builds upon"),
        ("Following [3], we fine-tune every layer.", "extends", "Following"),
        ("Our approach extends the work of [3] to proteins.", "extends", "extends the work of"),
        ("Our model outperforms ESM-2 [3] on every task.", "compares", "outperforms"),
        ("Accuracy was higher than [3] on all benchmarks.", "compares", "than"),
        ("Compared with [3], the editor halves the indel rate.", "compares", "Compared with"),
        ("The editor improves on the fusions of [3].", "compares", "improves on"),
        ("Unlike [3], we find no effect of temperature.", "contrasts", "Unlike"),
        ("In contrast to earlier reports [3], the motif is dispensable.", "contrasts", None),
        ("Deletion was lethal in [3], whereas our strains grew.", "contrasts", "whereas"),
        ("Our results contradict the model of [3].", "contrasts", "contradict"),
        ("These rates are inconsistent with [3].", "contrasts", "inconsistent with"),
        ("However, Smith et al. reported the opposite [3].", "contrasts", None),
        ("We used the variant calls of [3] as the reference.", "uses", "We used"),
        ("Sequences were downloaded from UniProt [3].", "uses", "downloaded from"),
        ("Thus we scored each variant with the GEMME software [3].", "uses", "software"),
        ("DNA repair keeps the genome stable [3].", "background", None),
    ],
)
def test_each_label_on_a_sentence_with_its_marker_placed(
    sentence: str, label: str, cue: str | None
) -> None:
    intent = _intent(sentence)
    assert intent.label == label, intent.why
    if cue is not None:
        assert intent.cue == cue
    assert intent.cue is None or intent.cue in sentence


def test_the_cue_nearest_the_marker_decides_for_each_marker() -> None:
    sentence = "Unlike [3], we used the alignments of [4] throughout."
    assert _intent(sentence, "[3]").label == "contrasts"
    assert _intent(sentence, "[4]").label == "uses"


@pytest.mark.parametrize(
    "sentence",
    [
        # Past the cue's reach.
        "We extend this analysis to three new species, which took many years of field work "
        "and patience to sample, whose first description is by Smith [3].",
        # A clause away.
        "We extend the model to yeast; its first form is described elsewhere [3].",
        "Unlike the other strains; the lager strain ferments slowly [3].",
        # What is compared or built on ends at a comma.
        "The short timeframe of selection compared to evolution, making subtle effects "
        "difficult to discern [3].",
        "Building on these results, others proposed a second site [3].",
        # A cue that must lead its citation, after it.
        "The estimates of [3] than ours differ.",
    ],
)
def test_a_cue_far_from_the_marker_does_not_decide(sentence: str) -> None:
    assert _intent(sentence, section="Discussion").label == "background"


@pytest.mark.parametrize(
    ("sentence", "label"),
    [
        ("We did not build on [3], which studies another organism.", "background"),
        ("Our rates are not inconsistent with [3].", "background"),
        ("The phenotype is not unlike that in [3].", "background"),
        ("We never used the data of [3].", "background"),
        # A negated comparison is still a comparison.
        ("Our model does not outperform [3] on short proteins.", "compares"),
        # `than` counting things compares nothing.
        ("The list holds more than 600 proteins [3].", "background"),
    ],
)
def test_negated_cues(sentence: str, label: str) -> None:
    assert _intent(sentence).label == label


def test_a_use_by_others_is_background_outside_methods() -> None:
    sentence = "Many studies traced brewing strains using genomics [3]."
    assert _intent(sentence, section="Introduction").label == "background"
    assert _intent(sentence, section="Materials and methods").label == "uses"
    assert _intent("We aligned the reads using BWA [3].", section="Results").label == "uses"


def test_a_methods_citation_without_a_cue_is_a_use_and_following_a_protocol_too() -> None:
    stained = _intent("Nuclei were stained with DAPI [3].", section="Materials and Methods")
    assert (stained.label, stained.cue) == ("uses", None)
    assert _intent("Nuclei were stained with DAPI [3].", section="Introduction").label == (
        "background"
    )
    followed = _intent("Following [3], cells were fixed for 10 min.", section="Methods")
    assert (followed.label, followed.cue) == ("uses", "Following")


def test_methods_headings_are_its_heading_and_the_subsections_under_it() -> None:
    headings = [
        "Introduction",
        "Results",
        "Methods",
        "Cell culture",
        "Statistical analyses",
        "Availability of data and materials",
        "Figure legends",
    ]
    sections = [
        Section(heading=heading, char_start=index, char_end=index + 1, page_start=1, page_end=1)
        for index, heading in enumerate(headings)
    ]
    document = PaperDocument(paper_id="p", source_path="p.pdf", title="t", text="x" * 7)
    document = document.model_copy(update={"sections": sections})
    assert methods_headings(document) == {"Methods", "Cell culture", "Statistical analyses"}


def test_offsets_that_do_not_hold_the_marker_fall_back_to_its_text() -> None:
    sentence = "Unlike [3], we find no effect."
    context = CitationContext(
        reference_index=0,
        marker="[3]",
        marker_start=5,
        sentence=sentence,
        char_start=900,
        char_end=930,
        page=1,
        section="",
    )
    assert citation_intent(context).label == "contrasts"


# Three bundled papers of three marker styles, each parsed once.
BUNDLED = ("10.1093_g3journal_jkad293", "10.1186_s13059-023-02935-8", "10.1186_s12915-024-01918-w")


@pytest.fixture(scope="module")
def bundled() -> dict[str, list[tuple[CitationContext, CitationIntent]]]:
    found = {}
    for name in BUNDLED:
        document = bundled_document(name)
        contexts = citation_contexts(document, parse_references(document.references)).contexts
        found[name] = list(zip(contexts, citation_intents(document, contexts), strict=True))
    return found


def _labelled(pairs: list, ending: str, marker: str) -> CitationIntent:
    return next(
        intent
        for context, intent in pairs
        if context.sentence.endswith(ending) and context.marker == marker
    )


def test_a_tool_cited_in_methods_is_a_use(bundled: dict) -> None:
    maxquant = _labelled(
        bundled["10.1093_g3journal_jkad293"],
        "based on extracted ion-chromatography (XIC) feature intensities.",
        "(Tyanova et al. 2016)",
    )
    assert (maxquant.label, maxquant.cue) == ("uses", "using")
    gemme = _labelled(
        bundled["10.1186_s13059-023-02935-8"],
        "(Uniprot ID: P35557—isoform 1).",
        "[98]",
    )
    assert gemme.label == "uses"


def test_a_claim_of_superiority_over_a_cited_editor_is_a_comparison(bundled: dict) -> None:
    editors = _labelled(
        bundled["10.1186_s12915-024-01918-w"],
        "abolish NHEJ activity in human and mouse cell lines.",
        "[8]",
    )
    assert (editors.label, editors.cue) == ("compares", "superior to")


def test_real_contexts_are_not_all_background_and_introductions_mostly_are(
    bundled: dict,
) -> None:
    pairs = [pair for name in BUNDLED for pair in bundled[name]]
    labels = Counter(intent.label for _, intent in pairs)
    assert labels["uses"] >= 0.1 * len(pairs)
    assert labels["background"] >= 0.5 * len(pairs)
    introduction = [intent.label for context, intent in pairs if context.section == "Introduction"]
    assert introduction.count("background") >= 0.9 * len(introduction)


@settings(max_examples=300, deadline=None)
@given(
    sentence=st.text(max_size=300)
    | st.lists(
        st.sampled_from(["we", "used", "unlike", "[3]", "not", "than", ";", "Following", "9"]),
        max_size=30,
    ).map(" ".join),
    marker=st.text(max_size=12) | st.just("[3]"),
    marker_start=st.integers(min_value=-5, max_value=400),
    char_start=st.integers(min_value=0, max_value=400),
    section=st.text(max_size=30) | st.sampled_from(["Methods", "Introduction", ""]),
)
def test_any_context_gets_a_label_and_never_raises(
    sentence: str, marker: str, marker_start: int, char_start: int, section: str
) -> None:
    context = CitationContext(
        reference_index=0,
        marker=marker,
        marker_start=marker_start,
        sentence=sentence,
        char_start=char_start,
        char_end=char_start + len(sentence),
        page=1,
        section=section,
    )
    intent = citation_intent(context)
    assert intent.label in CITATION_INTENT_LABELS
    assert intent.cue is None or intent.cue in sentence
    assert intent.why
