"""The web page at its edges, in headless Chromium as in tests/test_web_page.py (`engram serve`
in a process of its own, here open on loopback): an address naming no entry, a timeline over
ten thousand years, and an entry of 20,000 characters."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from engramdb import Memory
from test_web_page import Page, driver, search_for, shots  # noqa: F401  (the browser fixtures)
from web_fixture import Served

LONG = "The long report begins here. " + " ".join(f"word{n}" for n in range(2400))  # over 20,000 characters


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("edges") / "edges.db"
    with Memory(db, embedder="minilm") as memory:
        memory.add([LONG, "A short note about green tea."])
        memory.add([{"text": "An ancient record.", "timestamp": "0001-01-01"},
                    {"text": "A record from the far future.", "timestamp": "9999-12-31T23:59:59"}], namespace="ids")
    server = Served(db)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture()
def page(driver: Any, edges: str, shots: Path) -> Iterator[Page]:  # noqa: F811
    view = Page(driver, edges, shots)
    yield view
    assert not view.script_errors()


def test_an_address_without_an_entry_id_says_so(page: Page) -> None:
    page.open("/?view=entry&id=")
    page.ready("entry")
    assert "No entry named" in page.text("#view-entry") and "gives no entry id" in page.text("#entry-missing")
    assert not page.find("#banner").is_displayed()  # no TypeError, no API error


def test_the_timeline_keeps_every_entry_however_long_the_span(page: Page) -> None:
    page.open("/?view=overview&ns=ids&time=event")
    page.ready("overview")
    bars = page.all("#timeline-chart rect.bar")
    counts = [int(b.get_attribute("data-count")) for b in bars]
    assert sum(counts) == 2 and len(bars) == 200  # years 1 to 9999, 50 to a bar: none dropped
    titles = [b.get_attribute("textContent") for b, n in zip(bars, counts) if n]
    assert titles[0].startswith("1 – 49: 1") and titles[-1].startswith("9950 – 9999: 1"), titles
    assert "each bar is 50 years" in page.text("#timeline-note")
    grid = [t.get_attribute("textContent") for t in page.all("#timeline-chart .grid text")]
    assert grid == ["0", "1"]  # whole numbers, each once
    assert re.search(r"\d+ (KB|MB)", page.text("#store-size"))  # no keys: the operator's whole view


def test_a_long_entry_is_clipped_with_a_way_to_read_it_all(page: Page) -> None:
    assert len(LONG) > 19_000
    page.open("/?view=browse")
    page.ready("browse")
    row = next(r for r in page.all(".entry-row") if "The long report begins here." in r.text)
    shown = row.find_element("css selector", ".row-text a .clipped")
    assert len(shown.get_attribute("textContent")) < 700
    toggle = row.find_element("css selector", ".row-text button.clip-toggle")
    assert f"show all {len(LONG):,} characters" in toggle.text
    page.click(toggle)
    assert shown.get_attribute("textContent") == LONG and toggle.text == "show less"
    assert "view=browse" in page.driver.current_url  # the button is not the link
    page.click(toggle)
    assert len(shown.get_attribute("textContent")) < 700
    page.open("/?q=" + quote("the long report begins here"))
    page.ready("search")
    hit = next(h for h in page.all(".hit") if "The long report begins here." in h.text)
    text = hit.find_element("css selector", ".hit-text .clipped")
    assert len(text.get_attribute("textContent")) < 700
    page.click(hit.find_element("css selector", ".hit-text button.clip-toggle"))
    assert text.get_attribute("textContent") == LONG


def test_the_k_field_follows_the_servers_max_k(driver: Any, tmp_path: Path, shots: Path) -> None:  # noqa: F811
    """`engram serve --max-k 250`: the page's k field takes up to 250 (it was fixed at 100, so the
    browser refused a k the server would have served), and a search with k = 150 returns 150."""
    db = tmp_path / "many.db"
    with Memory(db, embedder="minilm") as memory:
        memory.add([f"note {n} about green tea and the garden" for n in range(160)])
    server = Served(db, "--max-k", "250")
    try:
        assert httpx.get(f"{server.url}/healthz").json()["max_k"] == 250
        view = Page(driver, server.url, shots)
        view.open("/")
        view.ready("search")
        assert view.find("#k").get_attribute("max") == "250"
        view.type("#k", "150")
        search_for(view, "green tea")  # the browser submits the form: 150 is within its k field's max
        view.until(lambda: len(view.all(".hit")) == 150, "150 hits")
        assert view.query()["k"] == ["150"] and not view.script_errors()
    finally:
        server.stop()
