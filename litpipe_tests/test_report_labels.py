"""litpipe's own files cite each paper as its reader knows it (issue 48, point 3): by its
citation key with the page, `[Müller2024, p. 4]`, in `synthesis.html`, the Markdown and the
digest; the link still leads to the passage, and litpipe's marker stays in its pop-up and in
the Markdown's references. A paper without a key is cited by its marker, as before."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from litpipe.citation_keys import key_problem
from litpipe.report.collection import (
    COLLECTION_PAGE,
    collection_pages,
    synthesis_markdown,
    write_collection_outputs,
)
from litpipe.report.digest import digest_html, digest_markdown
from litpipe.report.page import CitationLinks, chunk_anchor, citation_label, labelled
from litpipe.report.related_work import render_html as related_work_html
from litpipe.report.related_work import render_markdown as related_work_markdown
from litpipe.schemas import Citation
from litpipe.text import markers_in
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.html_page import assert_well_formed
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.test_digest import NEW, OLD, hand_made_digest
from litpipe_tests.test_related_work import bracketed, cited_in_markdown, offline
from litpipe_tests.test_report_collection import (
    FEARNET,
    REPAIR,
    REPAIR_4B,
    TITLES,
    Collection,
    demo_collection,
    parsed,
)

# Keys as libraries write them: accents, colons, a DOI's slash.
KEYS = {REPAIR: "Müller2024", FEARNET: "smith:2020:deep"}


def keyed(collection: Collection, keys: dict[str, str] = KEYS) -> str:
    return collection_pages(replace(collection.content(), keys=keys))[COLLECTION_PAGE]


def synthesis_links(page: str) -> list[tuple[str, str, str]]:
    """(text, href, title) of each citation link of the page's synthesis."""
    return [
        (link.text, link.attrs["href"], link.attrs.get("title", ""))
        for link in parsed(page).find("a", class_="cite")
        if "synthesis" in link.inside and "more" not in link.attrs["class"].split()
    ]


def test_the_page_cites_by_key_and_page_its_links_lead_where_they_did_the_pop_up_names_the_id() -> (
    None
):
    collection = demo_collection()
    before, after = synthesis_links(collection.html()), synthesis_links(keyed(collection))

    assert [text for text, _, _ in after] == [
        "Müller2024, p. 4",
        "smith:2020:deep, p. 1",
        "Müller2024, p. 4",
    ]
    # The same passages, in the same order; each pop-up names litpipe's marker first.
    assert [href for _, href, _ in after] == [href for _, href, _ in before]
    for (_, _, title), (marker_text, _, where) in zip(after, before, strict=True):
        assert title == f"{marker_text} · {where}"
    assert "Müller2024" in parsed(keyed(collection)).find("div", class_="passage")[0].text


def test_a_citation_without_a_passage_reads_as_its_key_its_marker_in_the_pop_up() -> None:
    (unresolved,) = parsed(keyed(demo_collection())).find("span", class_="unresolved")

    assert unresolved.text == "smith:2020:deep, p. 9"
    assert unresolved.attrs["title"] == "SJ1Xmf-Rb:9: no passage for this citation"


def test_every_link_of_the_keyed_page_still_leads_to_an_element_of_the_page() -> None:
    page = parsed(keyed(demo_collection()))
    ids = {element.attrs["id"] for element in page.elements if "id" in element.attrs}
    hrefs = {link.attrs["href"] for link in page.find("a") if "href" in link.attrs}

    assert hrefs and {href[1:] for href in hrefs} <= ids
    assert f"#{chunk_anchor(REPAIR_4B.chunk_id)}" in hrefs


def test_a_paper_without_a_key_is_cited_by_its_marker_beside_one_with_a_key() -> None:
    links = synthesis_links(keyed(demo_collection(), {REPAIR: "Müller2024"}))

    assert [text for text, _, _ in links] == ["Müller2024, p. 4", "SJ1Xmf-Rb:1", "Müller2024, p. 4"]
    assert links[1][2].startswith(TITLES[FEARNET].split(":")[0])


def test_the_markdown_cites_by_key_and_page_and_its_references_map_each_key_to_its_id() -> None:
    collection = demo_collection()
    markdown = synthesis_markdown(collection.synthesis, TITLES, labels=KEYS)
    body, references = markdown.split("## References", 1)

    assert "abasic sites [Müller2024, p. 4], while FearNet" in body
    assert "[smith:2020:deep, p. 1; Müller2024, p. 4]" in body
    assert "[smith:2020:deep, p. 9]" in body and "[see above]" in body
    assert markers_in(body) == []
    lines = [line for line in references.splitlines() if line.startswith("- ")]
    assert lines[0].startswith("- Müller2024: ") and f"(`{REPAIR}`): p. 4" in lines[0]
    assert lines[1].startswith("- smith:2020:deep: **FearNet")
    assert f"(`{FEARNET}`): p. 1, p. 9" in lines[1]
    # Without keys, the file is what it was.
    assert synthesis_markdown(collection.synthesis, TITLES, labels={}) == synthesis_markdown(
        collection.synthesis, TITLES
    )


def test_the_written_files_cite_by_key_synthesis_and_plain_alike(tmp_path: Path) -> None:
    written = write_collection_outputs(tmp_path, replace(demo_collection().content(), keys=KEYS))

    for name in ("synthesis.md", "plain.md"):
        text = written[name].read_text("utf-8")
        body = text.split("## References", 1)[0]
        assert "[Müller2024, p. 4]" in body and markers_in(body) == [], name
        assert f"`{REPAIR}`" in text, name
    assert "Müller2024, p. 4</a>" in written[COLLECTION_PAGE].read_text("utf-8")


def test_the_digest_cites_by_key_in_its_markdown_and_on_its_page(tmp_path: Path) -> None:
    digest = hand_made_digest(tmp_path)
    keys = {NEW: "lee2026prime", OLD: "old2020base"}

    markdown = digest_markdown(digest, keys)
    body, references = markdown.split("\n## References", 1)
    assert "[lee2026prime, p. 5]" in body and "[old2020base, p. 2]" in body
    assert markers_in(body) == []
    assert "- lee2026prime: " in references and f"(`{NEW}`)" in references
    assert f"(`{OLD}`)" in references

    page = digest_html(digest, keys)
    assert_well_formed(page)
    links = parsed(page).find("a", class_="cite")
    assert "lee2026prime, p. 5" in {link.text for link in links}
    assert any(link.attrs["title"].startswith(f"{NEW}:5 · ") for link in links)
    # Without keys, the digest cites by the markers as before.
    assert f"[{NEW}:5]" in digest_markdown(digest)


# Keys as `key_problem` takes them, with Markdown's and HTML's characters among them.
_KEY_CHARACTERS = st.characters(
    codec="utf-8", categories=("L", "N", "P", "S"), include_characters="&<>*`[]_:/.-+"
)
KEYS_ANY = st.text(_KEY_CHARACTERS, min_size=1, max_size=30).filter(
    lambda key: key_problem(key) is None
)


@given(
    key=st.one_of(st.sampled_from(["Müller2024", "smith:2020:deep", "10.1000/xyz-1"]), KEYS_ANY),
    page=st.integers(1, 9999),
)
def test_any_valid_key_and_page_read_as_the_link_and_the_marker_stays_in_the_pop_up(
    key: str, page: int
) -> None:
    paper = "refs.muller2021"
    chunk = retrieved_chunk(paper, 0, page, "A passage.")
    marker = f"[{paper}:{page}]"
    citation = Citation(marker=marker, paper_id=paper, page=page, chunk_ids=[chunk.chunk_id])
    links = CitationLinks({chunk.chunk_id: chunk}, {paper: "A <title>"}, {paper: key})

    rendered = links.inline(f"A claim {marker}.", [citation])
    (link,) = parsed(f"<p>{rendered}</p>").find("a", class_="cite")
    assert link.text == f"{key}, p. {page}" == citation_label(paper, page, {paper: key})
    assert link.attrs["href"] == f"#{chunk_anchor(chunk.chunk_id)}"
    assert link.attrs["title"].startswith(f"{paper}:{page} · A <title>, p. {page}")
    # Escaped: the key is the link's text, never markup.
    assert f">{html.escape(key)}, p. {page}</a>" in rendered

    markdown = labelled(f"A claim {marker}.", {paper: key})
    assert markers_in(markdown) == []
    shown = markdown.removeprefix("A claim [").removesuffix("].")
    assert re.sub(r"\\(.)", r"\1", shown) == f"{key}, p. {page}"


def test_a_related_work_section_cites_by_key_its_references_and_pop_ups_name_the_id(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    related, _ = offline(tmp_path, fake_embedder)
    keys = {paper: f"Key{number}:{paper[:3]}" for number, paper in enumerate(related.cited_ids)}

    markdown = related_work_markdown(related, keys)
    cited, listed = cited_in_markdown(markdown)
    assert cited == set(related.cited_ids) and listed == related.cited_ids
    section = markdown.split("## Related work", 1)[1].split("*Written by", 1)[0]
    assert bracketed(section) <= set(keys.values())
    page = parsed(related_work_html(related, keys))
    links = page.find("a", class_="cite")
    assert links and {link.text for link in links} <= set(keys.values())
    for link in links:
        paper = next(p for p, key in keys.items() if key == link.text)
        assert link.attrs["title"].startswith(f"{paper}: ")
    # Without keys, the section cites by the ids as before.
    assert bracketed(related_work_markdown(related).split("*Written by")[0]) >= cited
