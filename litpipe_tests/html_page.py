"""A page of litpipe's HTML read as a test reads it: its ids, its in-page links (citations
counted), its text, and whether every element it opens is closed."""

from __future__ import annotations

from html.parser import HTMLParser

from litpipe.report.comparison import SORT_SCRIPT


class Page(HTMLParser):
    """The page's ids, in-page links, text and whether every opened tag was closed."""

    VOID = frozenset({"br", "meta", "hr", "img", "link", "input"})

    def __init__(self, page: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []
        self.citations = 0
        self.open: list[str] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and (found.get("href") or "").startswith("#"):
            self.targets.append(str(found["href"])[1:])
            self.citations += "cite" in (found.get("class") or "")
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_well_formed(page: str) -> Page:
    parsed = Page(page)
    assert parsed.open == []
    assert set(parsed.targets) <= parsed.ids  # every link, citations included, lands on the page
    # The one script a page may hold sorts the comparison table's columns (issue 47).
    assert page.replace(SORT_SCRIPT, "").count("<script") == 0
    return parsed
