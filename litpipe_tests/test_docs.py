"""The docs site: its reference pages are generated from the code and miss nothing, it builds
with `mkdocs build --strict` (a broken link or anchor fails), and the built site, opened from
disk in headless Chromium as a reader opens it, renders and reaches every page of its nav."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

import pytest

from litpipe.config import settings_fields
from litpipe_tests.browser import headless_chromium, needs_chromium

REPOSITORY = Path(__file__).resolve().parents[1]
HOOK = REPOSITORY / "docs" / "hooks" / "reference.py"


def reference_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_reference_lists_every_setting_with_its_environment_name() -> None:
    page = reference_hook().settings_reference()
    for setting in settings_fields():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{setting.path}` |"))
        assert f"`{setting.environment_name}`" in row
        assert setting.field.description and setting.field.description.split()[0] in row


def test_the_command_reference_lists_every_command_and_flag() -> None:
    hook = reference_hook()
    page = hook.cli_reference()
    sections = re.split(r"^## ", page, flags=re.M)
    paths = hook.command_paths()
    assert {"litpipe run", "litpipe config", "litpipe init", "litpipe eval mais"} <= set(paths)
    for path in paths:
        (section,) = [s for s in sections if s.startswith(f"`{path}`\n")]
        for flag in hook.flags_of(path):
            assert f"`{flag}`" in section, (path, flag)
    # The common flags are on every command that runs (`eval` only groups its evaluations),
    # --set among them.
    running = [path for path in paths if path not in ("litpipe eval", "litpipe init")]
    assert all("--set" in hook.flags_of(path) for path in running)


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names (`how-to/ui.md`), read without a YAML library: each
    nav entry ends with its page."""
    config = (REPOSITORY / "mkdocs.yml").read_text("utf-8")
    nav = config[config.index("\nnav:") :]
    return re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M)


class _Links(HTMLParser):
    """The hrefs and the ids of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))
        if found.get("id"):
            self.ids.add(str(found["id"]))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict), into a folder of the test's."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def parsed(page: Path) -> _Links:
    links = _Links()
    links.feed(page.read_text("utf-8"))
    return links


@pytest.mark.slow
def test_every_link_between_pages_of_the_built_site_lands_on_a_page_and_its_anchor(
    site: Path,
) -> None:
    # 404.html is served at whatever address was not found, so its links are absolute.
    pages = sorted(page for page in site.rglob("*.html") if page.name != "404.html")
    assert (site / "reference" / "settings.html") in pages
    broken = []
    for page in pages:
        for href in parsed(page).hrefs:
            target = urlsplit(href)
            if target.scheme or href.startswith(("mailto:", "//")) or not target.path:
                continue
            landing = (page.parent / unquote(target.path)).resolve()
            if landing.is_dir():
                landing = landing / "index.html"
            if not landing.is_file():
                broken.append(f"{page.relative_to(site)}: {href}")
            elif (
                target.fragment
                and landing.suffix == ".html"
                and target.fragment not in parsed(landing).ids
            ):
                broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    assert broken == []


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_site_opened_from_disk_renders_and_its_nav_reaches_every_page(
    site: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    with headless_chromium(tmp_path) as driver:
        driver.get((site / "index.html").as_uri())
        assert "litpipe" in driver.title
        nav = driver.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary a.md-nav__link[href]")
        targets = {
            link.get_attribute("href")
            for link in nav
            if (link.get_attribute("href") or "").startswith("file:")
        }
        pages = {t.split("#")[0] for t in targets if t} | {(site / "index.html").as_uri()}
        # Every page of mkdocs.yml's nav is reached from the landing page's navigation.
        assert pages == {(site / page).with_suffix(".html").as_uri() for page in nav_pages()}
        for page in sorted(pages):
            driver.get(page)
            headings = driver.find_elements(By.CSS_SELECTOR, "article h1")
            assert headings and headings[0].text.strip(), page
            assert "404" not in driver.title
