"""A real headless Chromium (Debian's chromium + chromium-driver) driven by selenium, for the page's tests.

`.ci/run` installs the browser and sets PGRECALL_REQUIRE_BROWSER=1: there a missing browser fails
the tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


def _first(paths: tuple[str, ...], name: str) -> str | None:
    return next((p for p in paths if os.path.exists(p)), None) or shutil.which(name)


@pytest.fixture
def browser() -> Iterator[object]:
    """A headless Chromium session (selenium WebDriver), closed after the test."""
    binary, driver_path = _first(CHROMIUM, "chromium"), _first(CHROMEDRIVER, "chromedriver")
    if binary is None or driver_path is None:
        message = "no chromium/chromedriver here (apt-get install chromium chromium-driver)"
        if os.environ.get("PGRECALL_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # Selenium Manager must not try to download a driver: there is no network for it.
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
