"""Debian's headless Chromium through Debian's ChromeDriver (never a downloaded one), for the
tests that look at pages as a reader does: the Dagster UI, synthesis.html and the docs site.
`.ci/run` installs both where they are missing; the tests skip, saying so, where they are not."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Generous: two shared cores.
PAGE_S = 90

needs_chromium = pytest.mark.skipif(
    not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()),
    reason=f"Debian's Chromium is not installed ({CHROMIUM} and {CHROMEDRIVER} needed): "
    "apt-get install chromium chromium-driver (as .ci/run does)",
)


@contextlib.contextmanager
def headless_chromium(folder: Path) -> Iterator[WebDriver]:
    """A fresh headless Chromium with its profile under `folder`, quit at the end."""
    # selenium is a `dev` extra: an older .venv lacks it until `make test` reinstalls.
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'"
    )
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in [
        "--headless=new",
        "--no-sandbox",  # as root, Chromium refuses to start with its sandbox
        "--disable-dev-shm-usage",  # containers' /dev/shm is often too small for it
        "--disable-gpu",
        # The machine's network is closed: no update, sync or other background fetches.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        f"--user-data-dir={folder / 'profile'}",
        # The asset catalog renders only the rows in view: tall enough for every asset (29
        # rows at 1,200 px hid the last few once the eval assets grew).
        "--window-size=1600,2400",
    ]:
        options.add_argument(argument)
    # A driver path given explicitly means Selenium Manager is never run; SE_OFFLINE stops it
    # from downloading anything should a later selenium call it anyway.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")
        service = Service(executable_path=str(CHROMEDRIVER), log_output=str(folder / "driver.log"))
        driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(PAGE_S)
    try:
        yield driver
    finally:
        driver.quit()
