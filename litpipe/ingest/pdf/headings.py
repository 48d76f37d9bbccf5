"""The words headings and labels are recognised by: the section names litpipe knows, heading
numbers, and the labels that open captions and front-matter paragraphs."""

from __future__ import annotations

import re

_CAPTION = re.compile(r"(?:supplementary\s+)?(?:fig(?:ure)?s?|table|movie|video)\.?\s*S?\d", re.I)
# What opens a caption, as a caption (not a heading) is kept: the label, then punctuation, a
# capital or the end ("Fig. 2: ...", "Table 1 Primers", "FIG 3 ..."), so that a sentence that
# opens with one ("Figure 3 shows ...", "Table 1). Deleted ...") is not taken for a caption.
_CAPTION_LABEL = re.compile(
    r"^(?P<label>(?P<kind>(?i:(?:supplementary\s+)?(?:fig(?:ure)?s?\.?|table)))\s*"
    r"(?P<number>S?\d+))(?=\s*[.:|]|\s+[A-Z(]|\s*$)"
)
_NUMBERING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,4}\.|[A-H]\.)\s+")
_KNOWN_HEADINGS = {
    "abstract", "summary", "introduction", "background", "results", "discussion", "methods",
    "conclusion", "conclusions", "materials and methods", "material and methods", "methodology",
    "results and discussion", "experimental procedures", "experimental section", "method details",
    "star methods", "online methods", "acknowledgements", "acknowledgments", "acknowledgement",
    "acknowledgment", "funding", "author contributions", "data availability", "code availability",
    "data and code availability", "competing interests", "conflict of interest",
    "conflicts of interest", "declaration of interests", "supplementary material",
    "supplementary information", "supporting information", "figure legends", "figures", "tables",
    "abbreviations", "appendix", "references", "literature cited", "bibliography",
    "references and notes", "works cited", "significance", "importance", "author summary",
    "availability of data and materials", "declarations", "ethics approval",
}  # fmt: skip
_REFERENCE_HEADINGS = {
    "references", "literature cited", "bibliography", "references and notes", "works cited",
    "reference", "cited literature", "references cited",
}  # fmt: skip
# Labels that open front-matter paragraphs ("Keywords: ...", "IMPORTANCE Class II ...").
_FRONT_LABEL = re.compile(
    r"^(?:[Kk]ey ?[Ww]ords?|KEY ?WORDS?|Abbreviations|ABBREVIATIONS|Importance|IMPORTANCE|"
    r"Significance|SIGNIFICANCE|Author [Ss]ummary|AUTHOR SUMMARY|Highlights|HIGHLIGHTS|"
    r"Graphical [Aa]bstract|Running (?:title|head)|Correspondence|Edited by|Received)\b"
)
_ABSTRACT_LABEL = re.compile(r"^(?:abstract|summary)\s*[:.\u2013\u2014-]?\s+(?=[A-Z])", re.I)


def _normalized_heading(text: str) -> str:
    text = _NUMBERING.sub("", text.strip())
    return re.sub(r"[\s:.]+$", "", text).lower()
