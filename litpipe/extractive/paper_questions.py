"""The offline engine of the `paper_questions` agent: K questions per paper from its title and
abstract, in two styles (`broad` and `inner_workings`), and the question schema the other
question-writing agents share (`QuestionText`).

It classifies the abstract's sentences by cue words into context, objective, method and
finding, takes noun-phrase-like key phrases from them (scored by how often their words recur in
the title and abstract) and slots one phrase, verbatim, into a fixed question frame per aspect.
It inserts nothing but the frames' own words and the paper's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from litpipe.text import Phrase, phrases, sentences, word_counts

AskedStyle = Literal["broad", "inner_workings"]
STYLES: tuple[AskedStyle, ...] = get_args(AskedStyle)
DEFAULT_PER_STYLE = 3
Role = Literal["context", "objective", "method", "finding"]


class QuestionsInput(BaseModel):
    paper_id: str
    title: str
    abstract: str
    per_style: int = Field(default=DEFAULT_PER_STYLE, ge=1, le=10)


# A question as the reply schema states it (and a server with structured output keeps it):
# a word, then on the same line a question mark closing the text.
QUESTION_PATTERN = r"\w.*\?\s*$"


class QuestionText(BaseModel):
    text: str = Field(
        description="One question, ending with a question mark.",
        max_length=500,
        pattern=QUESTION_PATTERN,
    )

    @field_validator("text")
    @classmethod
    def _one_line(cls, text: str) -> str:
        return " ".join(text.split())


class QuestionDraft(QuestionText):
    # Only the styles this step asks for: a model answering any other value its schema allowed
    # would leave a question no style of the paper's could hold.
    style: AskedStyle


class QuestionsReply(BaseModel):
    questions: list[QuestionDraft]


@dataclass(frozen=True)
class Frame:
    """A fixed question with one slot for a key phrase, and the sentences that phrase comes from."""

    aspect: str
    roles: tuple[Role, ...]
    template: str

    def ask(self, phrase: str) -> str:
        return self.template.format(phrase=phrase)


# In priority order: with per_style = 3 (the default) the last frame of each style is left out.
# Context is the broad aspect dropped (the introduction gives it, and the findings matter more to
# a synthesis); step-by-step operation is the inner one, being the closest to design.
FRAMES: dict[AskedStyle, tuple[Frame, ...]] = {
    "broad": (
        Frame(
            "objective",
            ("objective",),
            "What does the paper set out to achieve regarding {phrase}?",
        ),
        Frame("method", ("method",), "What role does {phrase} play in the paper's method?"),
        Frame("findings", ("finding",), "What does the paper find about {phrase}?"),
        Frame("context", ("context",), "What problem or context motivates the work on {phrase}?"),
    ),
    "inner_workings": (
        Frame("design", ("method",), "How is the work on {phrase} designed and set up?"),
        Frame("mechanisms", ("finding",), "Which mechanisms drive the results on {phrase}?"),
        Frame("rationale", ("method",), "Why does the approach rely on {phrase}?"),
        Frame("operation", ("method",), "How does {phrase} work, step by step?"),
    ),
}
_CUES: dict[Role, re.Pattern[str]] = {
    "context": re.compile(
        r"\b(however|remains?|unclear|unknown|poorly|little is known|challeng\w*|problems?|"
        r"limit\w*|lack\w*|despite|although|whereas|essential|crucial|important|often|widely|"
        r"commonly|increasingly|traditional\w*|existing|current\w*|previous\w*|has been|"
        r"have been)\b",
        re.I,
    ),
    "objective": re.compile(
        r"\b(here,? we|in this (paper|work|study|article)|this (paper|work|study)|we (propose|"
        r"present|introduce|develop\w*|design\w*|aim|set out|seek|investigat\w*|examine\w*|"
        r"explore\w*|characteri[sz]\w*|stud(y|ied)|address\w*|compared?)|to address|aims?|goals?|"
        r"objectives?|purpose)\b",
        re.I,
    ),
    "method": re.compile(
        r"\b(using|we used?|based on|approach\w*|methods?|framework|algorithms?|architecture|"
        r"pipeline|models?|assays?|screen\w*|sequenc\w*|library|datasets?|data sets?|"
        r"experiments?|simulat\w*|train\w*|benchmarks?|techniques?|protocols?|measur\w*|"
        r"analy[sz]\w*|spectrometry|modules?|networks?|system)\b",
        re.I,
    ),
    "finding": re.compile(
        r"\b(we (find|found|show\w*|demonstrat\w*|observ\w*|report\w*|reveal\w*|identif\w*)|"
        r"results?|reveal\w*|suggest\w*|indicat\w*|demonstrat\w*|achiev\w*|outperform\w*|"
        r"improv\w*|increas\w*|decreas\w*|reduc\w*|enhanc\w*|significant\w*|correlat\w*|"
        r"conclu\w*|together|overall|thus|therefore|consistent|state-of-the-art)\b",
        re.I,
    ),
}
# Names of methods: the frames about the method prefer a phrase holding one ("a multiplexed yeast
# complementation assay" over "nonsense variants" from the same sentence).
_METHOD_NOUNS = re.compile(
    r"\b(assays?|models?|frameworks?|algorithms?|networks?|approach|pipelines?|techniques?|"
    r"tools?|editors?|scanning|spectrometry|sequencing|screens?|librar(y|ies)|systems?|"
    r"architectures?|methods?|protocols?|classifiers?|encoders?|training|fine-tuning|modules?)\b",
    re.I,
)
_METHOD_NOUN_BONUS = 1.0
# A weak prior from position, for sentences whose cue words are few: abstracts open with context
# and close with findings.
_POSITION_WEIGHT = 0.5
# The title names the contribution: it counts as a sentence of objective and method.
_TITLE_ROLES: dict[Role, float] = {"objective": 2.0, "method": 1.0}
_TITLE_WORD_WEIGHT = 2


def _position_prior(role: Role, index: int, count: int) -> float:
    if count == 1:
        return 0.0
    share = index / (count - 1)
    priors: dict[Role, float] = {
        "context": 1 - share,
        "objective": 1 - abs(share - 0.3) * 2,
        "method": 1 - abs(share - 0.5) * 2,
        "finding": share,
    }
    return _POSITION_WEIGHT * max(priors[role], 0.0)


@dataclass(frozen=True)
class _Candidate:
    phrase: Phrase
    score: float
    sentence_scores: dict[Role, float]


def _candidates(title: str, abstract: str) -> list[_Candidate]:
    """Every key phrase of the title (offsets into the title) and abstract, scored."""
    counts = word_counts(title, abstract)
    title_words = set(word_counts(title))

    def score(phrase: Phrase) -> float:
        return sum(
            counts[word] + (_TITLE_WORD_WEIGHT if word in title_words else 0)
            for word in phrase.words
        )

    found: list[_Candidate] = []
    for sentence in sentences(title):
        roles = {role: _TITLE_ROLES.get(role, 0.0) for role in _CUES}
        found += [_Candidate(p, score(p), roles) for p in phrases(title, sentence)]
    abstract_sentences = sentences(abstract)
    for index, sentence in enumerate(abstract_sentences):
        roles = {
            role: len(cue.findall(sentence.text))
            + _position_prior(role, index, len(abstract_sentences))
            for role, cue in _CUES.items()
        }
        found += [_Candidate(p, score(p), roles) for p in phrases(abstract, sentence)]
    return found


def _overlaps(phrase: Phrase, used: list[Phrase]) -> bool:
    """Same words as a phrase already asked about, or a part of one (or the other way round)."""
    words = set(phrase.words)
    return any(words <= set(other.words) or set(other.words) <= words for other in used)


def _surface(candidate: Phrase, candidates: list[_Candidate]) -> Phrase:
    """A phrase's occurrence that does not start a sentence, if it has one: its capitals are its
    own ("incremental class learning", not "Incremental class learning")."""
    if not candidate.sentence_initial:
        return candidate
    for other in candidates:
        if other.phrase.words == candidate.words and not other.phrase.sentence_initial:
            return other.phrase
    return candidate


def _pick(frame: Frame, candidates: list[_Candidate], used: list[Phrase]) -> Phrase | None:
    """The best phrase for a frame: from the sentences most like its aspect, the best scored."""
    best_score = max((c.score for c in candidates), default=1.0) or 1.0
    about_method = "method" in frame.roles

    def fit(candidate: _Candidate) -> float:
        named_method = about_method and _METHOD_NOUNS.search(candidate.phrase.text) is not None
        return (
            max(candidate.sentence_scores[role] for role in frame.roles)
            + candidate.score / best_score
            + (_METHOD_NOUN_BONUS if named_method else 0.0)
        )

    ranked = sorted((-fit(candidate), order) for order, candidate in enumerate(candidates))
    for _, order in ranked:
        phrase = candidates[order].phrase
        if not _overlaps(phrase, used):
            return _surface(phrase, candidates)
    return None


def offline_questions(inputs: QuestionsInput) -> QuestionsReply:
    """per_style questions of each style, each a fixed frame around a phrase of the paper.

    Fewer only when the title and abstract hold fewer distinct key phrases than a style needs.
    """
    candidates = _candidates(inputs.title, inputs.abstract)
    drafts: list[QuestionDraft] = []
    for style in STYLES:
        frames = FRAMES[style]
        used: list[Phrase] = []
        for index in range(inputs.per_style):
            frame = frames[index % len(frames)]
            phrase = _pick(frame, candidates, used)
            if phrase is None:
                break
            used.append(phrase)
            drafts.append(QuestionDraft(style=style, text=frame.ask(phrase.text)))
    return QuestionsReply(questions=drafts)
