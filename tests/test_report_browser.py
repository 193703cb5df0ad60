"""The report's page in a real headless browser (Chromium from the distribution, driven by Playwright): it loads
from file:// with no console error and no request but the file itself, every plot is drawn, and every number
shown is the JSON's."""

import json
import shutil
from pathlib import Path

import pytest

from spn.cli import main
from whatif_logs import pilot_log

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")

#: what keeps a headless Chromium to itself: no sandbox (CI runs as root), no GPU, nothing fetched in the background
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    log = pilot_log(folder / "pilot.json")
    page, data = folder / "report.html", folder / "report.json"
    assert main(["report", str(log), "-o", str(page), "--json", str(data), "--executors", "2,4", "--cores", "1,2",
                 "--input-sizes", "1GB,2GB", "--users", "1,2",
                 "--target", "p95<=8", "--price", "m5.xlarge=0.192", "--max-seconds", "300"]) == 0
    return page, json.loads(data.read_text())


def _at(data, key):
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def test_the_page_in_a_browser(written):
    page_path, data = written
    url = page_path.resolve().as_uri()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            messages, requests = [], []
            page.on("console", lambda m: messages.append((m.type, m.text)))
            page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            boxes = page.eval_on_selector_all(
                "svg", "els => els.map(e => { const b = e.getBoundingClientRect(); return [b.width, b.height]; })")
            numbers = page.eval_on_selector_all(
                "[data-key]", "els => els.map(e => [e.dataset.key, e.dataset.value, e.textContent])")
        finally:
            browser.close()
    assert [m for m in messages if m[0] in ("error", "pageerror")] == []
    assert requests == [url]                           # the file itself, nothing else
    assert len(boxes) == 5 and all(w > 100 and h > 100 for w, h in boxes)
    assert len(numbers) > 50
    for key, value, text in numbers:
        assert json.loads(value) == _at(data, key), key
        assert text.strip()
