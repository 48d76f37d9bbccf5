"""The Dagster UI and synthesis.html as a reader sees them: in Debian's headless Chromium.

A small demo (two collections: three bundled PDFs, and a table of two abstracts; the tiny
embedder) is materialized offline, then `litpipe ui` serves it on 127.0.0.1 exactly as a user
starts it; the tests open the asset graph, the catalog and asset pages, each collection's check
results, a paper's page, and follow a citation in synthesis.html to its passage. Every page is
saved as a PNG under the test's tmp_path and copied to `$LITPIPE_SCREENSHOTS` (default
`litpipe_tests/.artifacts/screenshots/`, git-ignored) so CI keeps them.

Chromium and ChromeDriver come from Debian (`apt-get install chromium chromium-driver`, which
`.ci/run` does when they are missing); the tests skip, saying so, where they are not installed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from litpipe.defs.resources import artifact_store
from litpipe.ingest.sources import discover
from litpipe.runtime.runner import open_instance, register, run_papers
from litpipe.schemas import PaperAbstract
from litpipe.settings import Settings
from litpipe_tests.browser import PAGE_S, headless_chromium, needs_chromium
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.test_check_partitions import abstracts
from litpipe_tests.test_cli import folder_with

pytestmark = [
    pytest.mark.xdist_group("test_ui_browser"),
    pytest.mark.slow,
    pytest.mark.browser,
    needs_chromium,
]

# selenium is a `dev` extra: an older .venv lacks it until `make test` reinstalls.
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'"
)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

COLLECTION = "bio"
# The second collection, of two abstracts: its checks' results say 2 papers where bio's say 3.
OTHER = "plants"
REPOSITORY = Path(__file__).resolve().parents[1]
# Generous: two shared cores, with the UI's code server importing the whole graph first.
SERVER_START_S = 120


@dataclass(frozen=True)
class Demo:
    settings: Settings
    model: Path
    paper_ids: list[str]  # of every collection
    papers_of: dict[str, list[str]]  # each collection's

    @property
    def collections(self) -> list[str]:
        return sorted(self.papers_of)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Demo:
    """Two collections materialized offline in one home, the papers' and the collections'
    assets: three bundled PDFs (`COLLECTION`), and a table of two abstracts (`OTHER`)."""
    root = tmp_path_factory.mktemp("ui-demo")
    settings = Settings(home=root / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)})
    sources = {
        COLLECTION: folder_with(root / "papers", PDFS_BY_SIZE[:3]),
        OTHER: abstracts(root, OTHER, "nitrogen uptake"),
    }
    instance = open_instance(settings.llm, settings.paths)
    papers_of = {}
    for collection, source in sources.items():
        registered = register(settings.paths, instance, discover(source, collection))
        run = run_papers(settings, instance, registered)
        assert run.collection_failure is None
        assert all(outcome.status == "materialized" for outcome in run.outcomes)
        papers_of[collection] = sorted(o.paper_id for o in run.outcomes)
    every = sorted(paper for papers in papers_of.values() for paper in papers)
    return Demo(settings, tiny_model, every, papers_of)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(server: subprocess.Popen[bytes]) -> None:
    """Ctrl-C for `dagster dev` (it then stops its webserver, daemon and code servers), then
    SIGKILL to whatever of its process group is left, so no test leaves a server behind."""
    try:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    server.wait()


@pytest.fixture(scope="module")
def ui(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`litpipe ui` on the demo's home, on a free port of 127.0.0.1; its base URL once the
    webserver answers /server_info."""
    port = free_port()
    log = tmp_path_factory.mktemp("ui-server") / "dagster-dev.log"
    # Only this test's settings: a LITPIPE_* or litpipe.toml of the user's must not leak in
    # (the command runs in the demo's folder, where there is no litpipe.toml).
    env = {key: value for key, value in os.environ.items() if not key.startswith("LITPIPE_")}
    env |= {
        "LITPIPE_CORPUS_ROOTS": "[]",  # the sensor the daemon runs watches nothing
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    script = Path(sys.executable).with_name("litpipe")
    litpipe = [str(script)] if script.exists() else [sys.executable, "-m", "litpipe.cli"]
    command = [
        *litpipe,
        "ui",
        "--home",
        str(demo.settings.home),
        "--embedder",
        str(demo.model),
        "--port",
        str(port),
    ]
    with log.open("wb") as output:
        # Its own session: the teardown signals `dagster dev` and every process it started.
        server = subprocess.Popen(
            command,
            cwd=demo.settings.home.parent,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"litpipe ui exited ({server.returncode}):\n{tail(log)}")
            try:
                with urllib.request.urlopen(f"{base}/server_info", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"litpipe ui not ready after {SERVER_START_S} s:\n{tail(log)}")
            time.sleep(0.5)
        yield base
    finally:
        stop(server)


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text("utf-8", errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Headless Debian Chromium through Debian's ChromeDriver, with a fresh profile."""
    with headless_chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


def screenshot_folder() -> Path:
    return Path(
        os.environ.get("LITPIPE_SCREENSHOTS")
        or REPOSITORY / "litpipe_tests" / ".artifacts" / "screenshots"
    )


def screenshot(driver: WebDriver, tmp_path: Path, name: str) -> Path:
    """Saves the page under the test's folder and copies it where CI keeps artifacts."""
    path = tmp_path / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    kept = screenshot_folder()
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, kept / path.name)
    return path


def open_page(
    driver: WebDriver, tmp_path: Path, url: str, name: str, done: Callable[[WebDriver], bool]
) -> None:
    """Opens a page and waits for it to show what `done` looks for; the screenshot is taken
    either way, so a failure shows what the page looked like."""
    driver.get(url)
    try:
        WebDriverWait(driver, PAGE_S, poll_frequency=0.5).until(done)
    except TimeoutException:
        screenshot(driver, tmp_path, f"{name}-timeout")
        text = driver.find_element(By.TAG_NAME, "body").text
        pytest.fail(f"{url}: not shown within {PAGE_S} s; the page reads:\n{text[-3000:]}")
    screenshot(driver, tmp_path, name)


def dismiss_welcome(driver: WebDriver, base: str) -> None:
    """The UI greets a new browser on localhost with a "Join the Dagster community" dialog
    over the page; it stays away once `communityNux` is in the origin's localStorage, as
    after a click on Skip."""
    driver.get(f"{base}/server_info")
    driver.execute_script("window.localStorage.setItem('communityNux', JSON.stringify('1'))")


def body_lines(driver: WebDriver) -> list[str]:
    return [line.strip() for line in driver.find_element(By.TAG_NAME, "body").text.splitlines()]


@dataclass(frozen=True)
class GraphAsset:
    name: str
    group: str
    partitions: str | None  # the partitions definition's name, for the dynamic ones
    partitioned: bool = True  # an unpartitioned asset's row shows no partition count


def litpipe_assets() -> list[GraphAsset]:
    """What the code location defines (so an asset added to the graph is checked too)."""
    import dagster as dg

    from litpipe.defs.definitions import defs

    graph = defs.resolve_asset_graph()
    found = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        partitions = node.partitions_def
        name = partitions.name if isinstance(partitions, dg.DynamicPartitionsDefinition) else None
        found.append(
            GraphAsset(key.to_user_string(), str(node.group_name), name, partitions is not None)
        )
    return found


def shown_as(name: str, label: str) -> bool:
    """Whether a graph node's label names the asset: zoomed out, the UI shortens long names
    in the middle ("relation…_analysis")."""
    head, ellipsis, end = label.partition("…")
    if not ellipsis:
        return label == name
    return len(head) + len(end) < len(name) and name.startswith(head) and name.endswith(end)


def test_the_asset_graph_shows_every_litpipe_asset(
    ui: str, browser: WebDriver, tmp_path: Path
) -> None:
    assets = litpipe_assets()
    core = {"paper_source", "chunk_embeddings", "paper_answers", "synthesis", "plain_summary"}
    assert core <= {asset.name for asset in assets}
    dismiss_welcome(browser, ui)
    # With several groups the global graph opens with each group folded into one box; the
    # `expanded` query parameter is how the UI itself remembers unfolded groups, by group id:
    # `global@global:<group>` while groups are not split per code location (the default).
    groups = sorted({asset.group for asset in assets})
    expanded = ",".join(f"global@global:{group}" for group in groups)

    def labels(driver: WebDriver) -> list[str]:
        # The asset nodes' name boxes (CSS-module class of the pinned dagster-webserver).
        return [
            element.text.strip()
            for element in driver.find_elements(By.CSS_SELECTOR, "[class*='AssetNode_assetName']")
        ]

    def every_asset_drawn(driver: WebDriver) -> bool:
        drawn = labels(driver)
        return all(any(shown_as(asset.name, label) for label in drawn) for asset in assets)

    open_page(
        browser,
        tmp_path,
        f"{ui}/asset-groups?expanded={expanded}",
        "asset-graph",
        every_asset_drawn,
    )
    drawn = labels(browser)
    assert len(drawn) == len(assets), drawn  # one node per asset, nothing else
    page = body_lines(browser)
    assert "Global asset lineage" in page
    assert set(groups) <= set(page)  # the groups, in the side panel


def test_the_catalog_lists_the_assets_with_their_partitions(
    ui: str, browser: WebDriver, demo: Demo, tmp_path: Path
) -> None:
    assets = litpipe_assets()
    expected = {
        "papers": f"{len(demo.paper_ids)} partitions",
        "collections": f"{len(demo.collections)} partitions",
    }
    dismiss_welcome(browser, ui)

    def counts(driver: WebDriver) -> dict[str, str | None]:
        """Each asset's partition count as its row shows it ("- partitions" until loaded; ""
        for an unpartitioned asset, which shows none), None for an asset not listed."""
        lines = body_lines(driver)
        found: dict[str, str | None] = {}
        for asset in assets:
            if asset.name not in lines:
                found[asset.name] = None
                continue
            if not asset.partitioned:
                found[asset.name] = ""
                continue
            # A row reads: name, description, code location, group, partition count.
            row = lines[lines.index(asset.name) + 1 :]
            found[asset.name] = next(
                (line for line in row if re.fullmatch(r"(\d+|-) partitions?", line)), None
            )
        return found

    def every_asset_listed_with_its_count(driver: WebDriver) -> bool:
        shown = counts(driver)
        return all(
            shown[asset.name] is not None
            and (asset.partitions not in expected or shown[asset.name] != "- partitions")
            for asset in assets
        )

    open_page(browser, tmp_path, f"{ui}/assets", "asset-catalog", every_asset_listed_with_its_count)
    shown = counts(browser)
    for asset in assets:
        if asset.partitions in expected:
            assert shown[asset.name] == expected[asset.partitions], (asset.name, shown)


@pytest.mark.parametrize(
    ("asset", "partitions"),
    [("paper_answers", "papers"), ("synthesis", "collection")],
)
def test_an_asset_page_lists_its_materialized_partitions(
    ui: str, browser: WebDriver, demo: Demo, tmp_path: Path, asset: str, partitions: str
) -> None:
    keys = demo.paper_ids if partitions == "papers" else demo.collections
    dismiss_welcome(browser, ui)

    def every_partition_listed(driver: WebDriver) -> bool:
        lines = set(body_lines(driver))
        return set(keys) <= lines and f"Materialized ({len(keys)})" in lines

    open_page(
        browser,
        tmp_path,
        f"{ui}/assets/{asset}?view=partitions",
        f"asset-{asset}",
        every_partition_listed,
    )
    lines = body_lines(browser)
    assert asset in lines and "Partitions" in lines
    assert {"Missing (0)", "Failed (0)"} <= set(lines)


def test_a_citation_in_synthesis_html_leads_to_its_passage(
    demo: Demo, browser: WebDriver, tmp_path: Path
) -> None:
    page = demo.settings.paths.outputs_dir(COLLECTION) / "synthesis.html"
    browser.get(page.as_uri())
    citation = browser.find_element(By.CSS_SELECTOR, "a.cite")
    anchor = str(citation.get_attribute("href")).partition("#")[2]
    # Read by the paper's key with the page; litpipe's marker, "paper_id:page", leads its pop-up.
    label = citation.text
    key, _, cited_page = label.rpartition(", p. ")
    assert anchor and key and cited_page.isdigit(), label
    marker = str(citation.get_attribute("title")).split(" · ", 1)[0]
    assert marker.endswith(f":{cited_page}"), marker
    citation.click()

    assert browser.execute_script("return location.hash") == f"#{anchor}"
    target = browser.execute_script("return document.querySelector(':target')")
    assert target is not None and target.get_attribute("id") == anchor
    assert "passage" in str(target.get_attribute("class")).split()
    assert target.is_displayed()
    # Scrolled to: the passage's top is at the window's top (to a pixel: layout is fractional),
    # or inside the window when the page ends too soon for it to reach the top.
    top, height = browser.execute_script(
        "const box = arguments[0].getBoundingClientRect(); return [box.top, innerHeight]", target
    )
    assert -1 <= top < height
    # The passage is the cited paper's, and highlighted unlike the passages not targeted.
    assert key in target.find_element(By.CSS_SELECTOR, ".where").text.split(" · ")
    assert target.find_element(By.CSS_SELECTOR, ".text").text.strip()
    others = browser.find_elements(By.CSS_SELECTOR, f".passage:not(#{anchor})")
    if others:
        style = "return getComputedStyle(arguments[0]).backgroundColor"
        assert browser.execute_script(style, target) != browser.execute_script(style, others[0])
    screenshot(browser, tmp_path, "synthesis-citation")


def check_page(driver: WebDriver, tmp_path: Path, ui: str, asset: str, check: str) -> None:
    """Opens the asset's Checks tab on `check`, then the check's own Partitions tab (one
    collection a partition), and waits for every collection to be listed there."""
    dismiss_welcome(driver, ui)
    open_page(
        driver,
        tmp_path,
        f"{ui}/assets/{asset}?view=checks&checkDetail={check}",
        f"checks-{asset}-{check}",
        lambda d: bool(d.find_elements(By.XPATH, _CHECK_PARTITIONS_TAB)),
    )
    driver.find_element(By.XPATH, _CHECK_PARTITIONS_TAB).click()


# The selected check's "Partitions" tab (the asset's own is a link, not a button).
_CHECK_PARTITIONS_TAB = "//button[normalize-space()='Partitions']"


def partition_row(driver: WebDriver, key: str) -> list[WebElement]:
    """The partition's row in the list beside a check's partition detail."""
    return driver.find_elements(
        By.CSS_SELECTOR, f"[class*='assetListContainer'] [data-tooltip='{key}']"
    )


def test_each_collections_check_results_are_shown_under_its_name(
    ui: str, browser: WebDriver, demo: Demo, tmp_path: Path
) -> None:
    """Two collections in one home: a check's Partitions tab lists both, each passed, and
    each one's result is its own (its description counts its own papers)."""
    check_page(browser, tmp_path, ui, "synthesis", "coverage")
    passed = f"Passed ({len(demo.collections)})"

    def every_collection_listed(driver: WebDriver) -> bool:
        lines = body_lines(driver)
        return passed in lines and all(partition_row(driver, c) for c in demo.collections)

    WebDriverWait(browser, PAGE_S, poll_frequency=0.5).until(every_collection_listed)
    screenshot(browser, tmp_path, "check-coverage-partitions")
    assert {"Failed (0)", "Skipped (0)", "Missing (0)"} <= set(body_lines(browser))
    for collection in demo.collections:
        papers = len(demo.papers_of[collection])
        partition_row(browser, collection)[0].click()
        cites = f"expert synthesis: the writer cites {papers} of {papers} papers"

        def its_result_shown(
            driver: WebDriver, collection: str = collection, cites: str = cites
        ) -> bool:
            lines = body_lines(driver)
            return cites in lines and _follows(lines, [collection, "Passed", "Latest execution"])

        try:
            WebDriverWait(browser, PAGE_S, poll_frequency=0.5).until(its_result_shown)
        finally:
            screenshot(browser, tmp_path, f"check-coverage-{collection}")
        lines = body_lines(browser)
        assert lines[lines.index("Description") + 1] == cites


def test_a_check_that_could_not_run_is_shown_skipped_not_passed(
    ui: str, browser: WebDriver, demo: Demo, tmp_path: Path
) -> None:
    """Offline, coherence (a model's grade) cannot run: the UI shows it skipped in every
    collection, never passed, and the asset's metadata says why."""
    check_page(browser, tmp_path, ui, "synthesis", "coherence")
    skipped = f"Skipped ({len(demo.collections)})"
    WebDriverWait(browser, PAGE_S, poll_frequency=0.5).until(
        lambda driver: skipped in body_lines(driver)
    )
    screenshot(browser, tmp_path, "check-coherence-partitions")
    lines = body_lines(browser)
    assert "Passed (0)" in lines and "Failed (0)" in lines
    # In the list of the asset's checks, each followed by its status.
    assert lines[lines.index("coherence") + 1] == "Skipped"
    assert lines[lines.index("coverage") + 1] == "Succeeded"
    partition_row(browser, COLLECTION)[0].click()
    WebDriverWait(browser, PAGE_S, poll_frequency=0.5).until(
        lambda driver: _follows(body_lines(driver), [COLLECTION, "Skipped", "Latest execution"])
    )
    screenshot(browser, tmp_path, "check-coherence-bio")
    assert "Passed" not in body_lines(browser)

    # Why: the collection's synthesis names the check it could not run.
    def says_why(driver: WebDriver) -> bool:
        lines = body_lines(driver)
        return "skipped_checks" in lines and any(
            '"coherence": "coherence of the expert synthesis needs a model' in line
            for line in lines[lines.index("skipped_checks") :]
        )

    open_page(
        browser,
        tmp_path,
        f"{ui}/assets/synthesis?view=partitions&partition={COLLECTION}",
        "synthesis-skipped-checks",
        says_why,
    )


def test_a_papers_page_opens_with_its_title_and_collection(
    ui: str, browser: WebDriver, demo: Demo, tmp_path: Path
) -> None:
    paper_id = demo.papers_of[COLLECTION][0]
    title = (
        artifact_store(demo.settings.ingest, demo.settings.paths)
        .read(["paper_abstract"], paper_id, PaperAbstract)
        .title
    )
    assert title and title != paper_id
    dismiss_welcome(browser, ui)

    def metadata_shown(driver: WebDriver) -> bool:
        lines = body_lines(driver)
        return "Metadata" in lines and title in lines

    open_page(
        browser,
        tmp_path,
        f"{ui}/assets/paper_answers?view=partitions&partition={paper_id}",
        "paper-answers-title",
        metadata_shown,
    )
    lines = body_lines(browser)
    metadata = lines.index("Metadata")
    # The first entries: the title, then its collections (under their key).
    assert lines[metadata + 1 : metadata + 3] == ["title", title]
    assert COLLECTION in lines[metadata + 3 : metadata + 5]


def _follows(lines: list[str], run: list[str]) -> bool:
    """Whether `run` appears in `lines` as consecutive lines."""
    return any(lines[at : at + len(run)] == run for at in range(len(lines) - len(run) + 1))
