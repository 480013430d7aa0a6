"""The web page of `engram serve`, driven in headless Chromium (Debian's `chromium` and
`chromium-driver`, through Selenium): a real server in its own process on loopback, a store
written here, and API keys. The tests assert on what the page shows.

Without Chromium the browser tests are skipped, loudly; with ``ENGRAM_REQUIRE_BROWSER=1``
(CI: `.ci/run`) a missing browser fails them instead. Screenshots of the views are written to
``$ENGRAM_WEB_SCREENSHOTS`` (default: a temporary directory).
"""

from __future__ import annotations

import os
import re
import tomllib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

import httpx
import pytest

from engramdb.server.keys import KeyStore, keys_path
from web_fixture import Served, build_store

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "src" / "engramdb" / "server" / "web"
CHROMIUM = Path(os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("ENGRAM_CHROMEDRIVER", "/usr/bin/chromedriver"))
WAIT = 120  # seconds an explicit wait allows (a loaded CI machine), never a pass/fail timing


# -- without a browser: what is served, and what ships -----------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`engram serve` on a store with notes, facts and two conversations, and three keys."""
    root = tmp_path_factory.mktemp("web")
    db = root / "web.db"
    build_store(db, root / "notes")
    keys = KeyStore(keys_path(db))
    found = {role: keys.create(["alice"], role)[0] for role in ("write", "read")}
    found["admin"] = keys.create(["alice", "bob"], "admin")[0]
    found["zh"] = keys.create(["alice", "中文"], "read")[0]
    server = Served(db)
    try:
        yield {"url": server.url, **found}
    finally:
        server.stop()


def test_the_page_and_its_assets_are_served_with_a_strict_policy(served: dict[str, Any]) -> None:
    page = httpx.get(served["url"] + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "default-src 'none'" in policy
    assert '<script type="module" src="/web/js/app.js">' in page.text
    for path in re.findall(r'(?:src|href)="(/web/[^"]+)"', page.text):
        assert httpx.get(served["url"] + path).status_code == 200, path
    for module in sorted((WEB / "js").glob("*.js")):
        asset = httpx.get(f"{served['url']}/web/js/{module.name}")
        assert asset.status_code == 200 and "javascript" in asset.headers["content-type"], module.name
    assert httpx.get(served["url"] + "/web/../app.py").status_code == 404
    assert "/" not in httpx.get(served["url"] + "/openapi.json").json()["paths"]  # the page is not an endpoint


def test_without_the_page_the_server_serves_the_api_only(tmp_path: Path) -> None:
    from test_server import Running

    running = Running(tmp_path / "api-only.db", web=False)
    try:
        with running.client() as http:
            assert http.get("/").status_code == 404 and http.get("/web/js/app.js").status_code == 404
            assert http.get("/healthz").status_code == 200
    finally:
        running.stop()


def test_the_page_uses_only_its_own_files_and_the_public_api() -> None:
    files = [p for p in WEB.rglob("*") if p.is_file()]
    text = {p: p.read_text(encoding="utf-8") for p in files}
    for path, body in text.items():
        external = [u for u in re.findall(r"https?://[^\s\"'`)]+", body) if u != "http://www.w3.org/2000/svg"]
        assert not external, f"{path.name} refers to {external}"  # no CDN, no fonts from elsewhere
        assert len(body.splitlines()) <= 500, path.name
    called = set()
    for body in text.values():
        called |= set(re.findall(r"[\"`](/v1/[a-z/-]+)", body))
    public = {"/v1/memories", "/v1/memories/search", "/v1/namespaces", "/v1/stats", "/v1/timeline", "/v1/sessions",
              "/v1/memories/"}
    assert called and called <= public, called - public
    assert "innerHTML" not in "".join(text.values())  # stored text is only ever set as text


def test_every_web_file_ships_in_the_package_and_the_presets_list_is_current() -> None:
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["engramdb"]
    package = REPO / "src" / "engramdb"
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    missing = [str(p.relative_to(package)) for p in WEB.rglob("*") if p.is_file() and p not in shipped]
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"
    listed = re.search(r"export const PRESETS = \[([^\]]*)\]", (WEB / "js" / "search.js").read_text()).group(1)
    presets = sorted(p.stem for p in (package / "pipeline" / "presets").glob("*.toml"))
    assert sorted(re.findall(r'"([a-z0-9_-]+)"', listed)) == presets


# -- the browser -------------------------------------------------------------------------

def _chromium_or_skip(profile: Path) -> Any:
    """Selenium's Chrome driver for Debian's chromium, or a loud skip (a failure in CI).

    `profile` is the browser's user-data directory: one pytest removes with its other temporary
    directories, so runs do not leave a profile behind in /tmp.
    """
    problem = None
    try:
        from selenium import webdriver  # noqa: F401
    except ImportError:
        problem = "selenium is not installed (pip install -e '.[test]')"
    if problem is None:
        absent = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
        if absent:
            problem = f"{', '.join(absent)} not found (apt-get install chromium chromium-driver)"
    if problem is not None:
        if os.environ.get("ENGRAM_REQUIRE_BROWSER"):
            pytest.fail(f"ENGRAM_REQUIRE_BROWSER is set but {problem}")
        warnings.warn(f"web page browser tests SKIPPED: {problem}", stacklevel=2)
        pytest.skip(f"web page browser tests need Chromium: {problem}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--disable-dev-shm-usage", "--lang=en-US",
                 "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=1280,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ.setdefault("SE_AVOID_STATS", "true")  # Selenium Manager stays out of it: both paths are given
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("ENGRAM_WEB_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Page:
    """The browser on one server, with explicit waits on what the page shows."""

    def __init__(self, driver: Any, url: str, shots: Path) -> None:
        self.driver, self.url, self.shots = driver, url, shots

    def open(self, path: str = "/", key: str | None = None, width: int = 1280) -> None:
        self.driver.set_window_size(width, 900)
        self.driver.get(self.url + "/web/icon.svg")  # the origin, to set its storage before the page runs
        self.driver.execute_script("localStorage.clear(); "
                                   "if (arguments[0]) localStorage.setItem('engram.key', arguments[0]);", key)
        self.driver.get(self.url + path)

    def until(self, condition: Callable[[], Any], what: str) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        def probe(_: Any) -> Any:
            try:
                return condition()
            except StaleElementReferenceException:
                return False
        try:
            return WebDriverWait(self.driver, WAIT, poll_frequency=0.1).until(probe)
        except TimeoutException:
            raise AssertionError(f"the page never showed {what}; it shows: {self.text('main')[:1500]!r}") from None

    def ready(self, view: str) -> None:
        """Wait until `view` has drawn (the page marks it on <body>)."""
        self.until(lambda: self.driver.execute_script("return document.body.dataset.ready") == view and
                   self.driver.execute_script(f"return document.getElementById('view-{view}')"
                                              ".getAttribute('aria-busy') === 'false'"), f"the {view} view")

    def act(self, view: str, action: Callable[[], Any]) -> None:
        """Do something that redraws `view`, and wait for the redraw."""
        self.driver.execute_script("document.body.dataset.ready = ''")
        action()
        self.ready(view)

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def click(self, target: Any) -> None:
        """Click an element (or the first that matches a selector), scrolled clear of the top bar."""
        element = self.find(target) if isinstance(target, str) else target
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        found = self.all(css)
        return "\n".join(e.text for e in found)

    def type(self, css: str, text: str) -> None:
        field = self.find(css)
        field.clear()
        field.send_keys(text)

    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlparse(self.driver.current_url).query)

    def screenshot(self, name: str, full: bool = True) -> Path:
        """The page from the top: all of it (up to 2200 px), or its first 860 px."""
        size = self.driver.get_window_size()
        self.driver.execute_script("window.scrollTo(0, 0)")
        height, frame = self.driver.execute_script("return [document.documentElement.scrollHeight, "
                                                   "window.outerHeight - window.innerHeight]")
        wanted = min(max(height, 600), 2200) if full else min(height, 860)
        self.driver.set_window_size(size["width"], wanted + max(frame, 0))
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(size["width"], size["height"])
        return path

    def script_errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser")
                if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]]


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    chrome = _chromium_or_skip(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture()
def page(driver: Any, served: dict[str, Any], shots: Path) -> Iterator[Page]:
    view = Page(driver, served["url"], shots)
    yield view
    assert not view.script_errors()


def search_for(page: Page, query: str) -> None:
    page.act("search", lambda: (page.type("#q", query), page.click("#search-button")))


# -- the tests ---------------------------------------------------------------------------

def test_a_key_is_asked_for_once_then_search_shows_evidence_and_provenance(page: Page, served: dict[str, Any]) -> None:
    page.open("/")
    page.until(lambda: page.find("#key-panel").is_displayed(), "the key form")
    assert "needs an API key" in page.text("#key-panel")
    page.type("#key-input", "eg_wrong")
    page.click("#key-form button[type=submit]")
    page.until(lambda: "unknown or revoked API key" in page.text("#key-message"), "the 401 message")
    # A refused key is not kept: it showed "Key ✓", and after Close every view stayed blank.
    assert page.driver.execute_script("return localStorage.getItem('engram.key')") is None
    assert page.text("#key-button") == "Key" and "needs an API key" in page.text("#banner")
    page.type("#key-input", served["write"])
    page.act("search", lambda: page.click("#key-form button[type=submit]"))
    assert not page.find("#key-panel").is_displayed()
    assert page.driver.execute_script("return localStorage.getItem('engram.key')") == served["write"]

    search_for(page, "which city did Alice move to?")
    assert served["write"] not in page.driver.current_url  # the key never goes in the address
    # for screen readers: the open view and tab are marked, the view has a heading, the key field a label
    assert page.find("#nav-search").get_attribute("aria-current") == "page"
    assert page.find("#nav-browse").get_attribute("aria-current") is None
    assert page.find("#tab-results").get_attribute("aria-current") == "page"
    assert page.driver.execute_script("return document.querySelector('#view-search h1').textContent") == "Search"
    assert page.driver.execute_script("return document.getElementById('key-input').labels[0].textContent") == "API key"
    assert page.query()["q"] == ["which city did Alice move to?"]
    first = page.all(".hit")[0]
    assert "Lisbon" in first.text
    hits = page.text("#hits")
    assert "semantic" in hits and "lexical" in hits and "#1" in hits  # channel names and ranks
    bars = page.all(".hit .evidence .channel .fill")
    widths = [b.value_of_css_property("width") for b in bars]
    assert bars and all(float(w.removesuffix("px")) > 0 for w in widths)
    summary = page.text("#result-summary")
    assert "hits" in summary and "preset default" in summary and "namespace alice" in summary
    # provenance: notes by file › heading, turns by session › turn with the speaker
    search_for(page, "who owns the evaluation harness")
    note = next(h for h in page.all(".hit") if "evaluation harness" in h.text)
    assert "projects/atlas.md" in note.text and "Project Atlas" in note.text and "Team" in note.text
    search_for(page, "When did Alice fly to Oslo?")  # the fact outranks its turn (one place for both)
    fact = next(h for h in page.all(".hit") if h.text.count("Oslo") and "FACT" in h.text)
    page.until(lambda: "I flew to Oslo yesterday" in fact.find_element("css selector", ".derived").text,
               "the turn the fact came from")
    assert "session trip-2024-03" in fact.text and "turn trip-2024-03:1" in fact.text
    # an English question finds the Chinese note through the dictionary, and the page says so
    search_for(page, "who drinks Longjing tea")
    tea = next(h for h in page.all(".hit") if "龙井茶" in h.text)
    translated = tea.find_element("css selector", ".channel[data-channel=translated]")
    assert "absent" not in translated.get_attribute("class")
    assert "other language" in translated.get_attribute("title")
    assert float(translated.find_element("css selector", ".fill").value_of_css_property("width").removesuffix("px")) > 0
    assert "absent" in tea.find_element("css selector", ".channel[data-channel=lexical]").get_attribute("class")
    search_for(page, "which city did Alice move to?")
    page.screenshot("search", full=False)


def test_explain_shows_the_stages_as_a_timeline(page: Page, served: dict[str, Any]) -> None:
    page.open("/?q=" + quote("what did Alice do last week?"), key=served["read"])
    page.ready("search")
    page.act("search", lambda: page.click("#tab-explain"))
    assert page.query()["tab"] == ["explain"]
    stages = [li.get_attribute("data-stage") for li in page.all(".timeline > .stage")]
    assert stages[:3] == ["plan", "recall", "fuse"] and stages[-1] == "select"
    plan = page.text("[data-stage=plan]")
    assert "rules planner" in plan and "temporal" in plan and "last week" in plan and "Mar 11, 2024" in plan
    recall = page.text("[data-stage=recall]")
    for channel in ("semantic", "lexical", "symbolic", "temporal"):
        assert channel in recall
    assert "weighted fusion of z-scored channel scores" in page.text("[data-stage=fuse]")
    assert "skipped: no gates set" in page.text("[data-stage=gate]")
    neighbours = page.text("[data-stage=neighbours]")  # the default's `combine = "or"`, said in words
    assert "±2 turns, lift 0.2; lift × score combined with a turn's own as probabilities" in neighbours
    assert "combine or" not in neighbours  # named in the summary, so not repeated among the raw fields
    assert "kept the top 10" in page.text("[data-stage=select]")
    assert '["' not in page.text(".timeline")  # lists of words read as lists, not as JSON arrays
    page.screenshot("explain")
    fuse = page.find("[data-stage=fuse] details.cands")
    page.click(fuse.find_element("css selector", "summary"))
    page.until(lambda: len(fuse.find_elements("css selector", "tr")) >= 5, "the fused candidates")
    page.until(lambda: all(t.text for t in fuse.find_elements("css selector", ".cand-text")), "the candidates' text")
    page.act("search", lambda: page.click("#tab-results"))
    assert page.all(".hit") and "tab" not in page.query()


def test_a_search_is_a_link_and_the_address_follows_the_search(page: Page, served: dict[str, Any]) -> None:
    page.open("/?q=" + quote("项目代号") + "&k=2&kind=chunk", key=served["read"])
    page.ready("search")
    assert page.find("#q").get_attribute("value") == "项目代号"
    assert page.find("#k").get_attribute("value") == "2"
    assert page.find("#sf-kind").get_attribute("value") == "chunk"
    hits = page.all(".hit")
    assert 1 <= len(hits) <= 2 and all("CHUNK" in h.text for h in hits)
    assert "项目代号是 XYZ" in hits[0].text and "生活/旅行.md" in hits[0].text
    search_for(page, "龙井茶")
    assert page.query()["q"] == ["龙井茶"] and page.query()["k"] == ["2"]
    assert page.query()["kind"] == ["chunk"]
    page.act("search", lambda: page.driver.back())
    assert page.find("#q").get_attribute("value") == "项目代号" and "项目代号是 XYZ" in page.text("#hits")
    page.open("/?q=" + quote("Bob") + "&person=Bob&since=2023-06-01", key=served["read"])
    page.ready("search")
    assert page.find("#more-options").get_attribute("open") is not None  # the filters in use are shown
    assert "Bob prefers green tea" in page.text("#hits")
    page.open("/?q=x&k=500", key=served["read"])
    page.ready("search")
    assert "400 bad_input: k must be an integer from 1 to 100 here, not 500" in page.text("#search-output")


def test_browse_pages_through_the_list_and_curates_an_entry(page: Page, served: dict[str, Any]) -> None:
    page.open("/?view=browse&limit=10", key=served["write"])
    page.ready("browse")
    first = [r.get_attribute("data-id") for r in page.all(".entry-row")]
    assert len(first) == 10 and "page 1" in page.text("#page-label")
    page.screenshot("browse", full=False)
    page.act("browse", lambda: page.click("#page-next"))
    second = [r.get_attribute("data-id") for r in page.all(".entry-row")]
    assert len(second) == 10 and not set(first) & set(second) and "page 2" in page.text("#page-label")
    assert "cursor" in page.query()
    page.act("browse", lambda: page.click("#page-prev"))
    assert [r.get_attribute("data-id") for r in page.all(".entry-row")] == first
    # filters
    page.act("browse", lambda: (page.type("#bf-person", "Bob"), page.click("#browse-apply")))
    assert page.query()["person"] == ["Bob"]
    assert "Bob prefers green tea over coffee." in page.text("#entries")
    assert "Lisbon" not in page.text("#entries")

    # open one, edit it, see the change in its history
    page.open("/?view=browse&kind=fact&person=Alice&limit=50", key=served["write"])
    page.ready("browse")
    row = next(r for r in page.all(".entry-row") if "Lisbon" in r.text)
    page.act("entry", lambda: page.click(row.find_element("css selector", ".row-text a")))
    assert page.text("#entry-text") == "Alice moved to Lisbon in May 2023."
    assert "confidence" in page.text("#entry") and "ADD" in page.text("#history")
    page.click("#edit-button")
    page.type("#edit-text", "Alice moved to Lisbon in May 2023, near the river.")
    page.type("#edit-expires", "2099-01-31")
    page.act("entry", lambda: page.click("#edit-save"))
    assert "Saved." in page.text("main")
    assert page.text("#entry-text") == "Alice moved to Lisbon in May 2023, near the river."
    history = page.text("#history")
    assert "UPDATE" in history and "near the river" in history
    assert "expires at" in history and "Jan 31, 2099" in history
    assert [e.get_attribute("class") for e in page.all(".event")] == ["event ev-add", "event ev-update"]
    page.screenshot("entry")
    # supersede: a new entry is the truth; the old one says so
    entry_id = page.text("#entry-id")
    page.click("#supersede-button")
    page.type("#supersede-text", "Alice moved from Lisbon to Porto in 2024.")
    assert page.find("#supersede-persons").get_attribute("value") == "Alice"  # the old entry's, to edit
    page.type("#supersede-entities", "Porto")
    page.act("entry", lambda: page.click("#supersede-save"))
    assert "superseded" in page.text("main") and page.text("#entry-text") == "Alice moved from Lisbon to Porto in 2024."
    new_id = page.query()["id"][0]
    stored = httpx.get(f"{served['url']}/v1/memories/{new_id}", headers={"Authorization": f"Bearer {served['write']}"}).json()
    # it kept the people and metadata the old one was found by (only the text was sent)
    assert (stored["persons"], stored["entities"], stored["metadata"]) == (["Alice"], ["Porto"],
                                                                        {"source": "chat", "confidence": 0.9})
    assert entry_id in page.text("#entry")  # "supersedes <old id>"
    page.act("entry", lambda: page.click(f"#entry a[href*='{entry_id}']"))
    assert "SUPERSEDED" in page.text("#entry").upper()
    assert not page.all("#supersede-button")  # an old version is not superseded again (the server refuses)
    # delete: gone from the namespace, its history still readable
    page.click("#delete-button")
    page.act("entry", lambda: page.click("#delete-yes"))
    assert "Deleted." in page.text("main") and "not in the namespace" in page.text("#entry-missing")
    assert [e.get_attribute("class") for e in page.all(".event")][-1] == "event ev-delete"
    auth = {"Authorization": f"Bearer {served['write']}"}
    assert httpx.get(f"{served['url']}/v1/memories/{entry_id}", headers=auth).status_code == 404


def test_a_session_is_a_thread_with_the_facts_of_each_turn(page: Page, served: dict[str, Any]) -> None:
    page.open("/?view=sessions", key=served["read"])
    page.ready("sessions")
    rows = {r.get_attribute("data-session"): r.text for r in page.all(".session-row")}
    assert set(rows) == {"trip-2024-03", "会议-0320"}
    assert "5 turns" in rows["trip-2024-03"] and "Alice, Bob" in rows["trip-2024-03"]
    page.act("session", lambda: page.click("[data-session='trip-2024-03'] a"))
    turns = page.all("#thread > .turn")
    assert len(turns) == 5 and "I flew to Oslo yesterday" in turns[0].text
    assert "Alice flew to Oslo on 13 March 2024" in turns[0].find_element("css selector", ".facts").text
    assert "Bob" in turns[1].text and not turns[1].find_elements("css selector", ".facts")
    page.screenshot("session")
    page.act("entry", lambda: page.click(turns[0].find_element("css selector", ".facts a")))
    page.until(lambda: "I flew to Oslo yesterday" in page.text("#entry"), "the fact's source turn")
    page.act("entry", lambda: page.click("#entry .derived a"))
    assert page.text("#entry-text").startswith("Alice: I flew to Oslo")
    assert "Alice flew to Oslo on 13 March 2024" in page.text("#derived-facts")
    page.open("/?view=session&session=" + quote("会议-0320"), key=served["read"])
    page.ready("session")
    assert "王伟" in page.text("#thread") and "上海出差" in page.text("#thread")


def test_a_read_key_is_refused_edits_and_deletes_with_the_api_message(page: Page, served: dict[str, Any]) -> None:
    page.open("/?view=browse&person=Bob", key=served["read"])
    page.ready("browse")
    page.act("entry", lambda: page.click(".entry-row .row-text a"))
    text = page.text("#entry-text")
    page.click("#edit-button")
    page.type("#edit-text", "A reader's change.")
    page.click("#edit-save")
    refusal = "403 forbidden: this key's role is 'read'; this needs 'write'"
    page.until(lambda: refusal in page.text("#entry-message"), "the 403 message")
    page.click("#delete-button")
    page.click("#delete-yes")
    page.until(lambda: refusal in page.text("#entry-message"), "the 403 message for delete")
    page.click("#supersede-button")
    page.type("#supersede-text", "A reader's new truth.")
    page.click("#supersede-save")
    page.until(lambda: refusal in page.text("#entry-message"), "the 403 message for supersede")
    page.act("entry", lambda: page.driver.refresh())
    assert page.text("#entry-text") == text and "UPDATE" not in page.text("#history")


def test_overview_counts_and_the_chart_and_what_a_read_key_may_not_see(page: Page, served: dict[str, Any]) -> None:
    page.open("/?view=overview", key=served["read"])
    page.ready("overview")
    counts = page.text("#namespace-counts")
    assert "alice" in counts and "bob" not in counts  # a key sees its own namespaces
    assert "need an admin key" in page.text("#store-card") and "403 forbidden" in page.text("#store-card")
    assert len(page.all("#timeline-chart rect.bar")) >= 1
    page.act("overview", lambda: page.click("#timeline-card .tab:not(.active)"))
    assert page.query()["time"] == ["event"]
    assert len(page.all("#timeline-chart rect.bar")) >= 10  # months from 2023 to 2025
    assert "without an event time" in page.text("#timeline-card")
    page.open("/?view=overview&time=event", key=served["admin"])
    page.ready("overview")
    assert "bob" in page.text("#namespace-counts")  # the admin key is bound to both
    assert "MiniLM" in page.text("#store-model") and "store-wide" in page.text("#store-scoped")
    assert not page.all("#store-size") and "web.db" not in page.text("#store-card")  # the operator's, not a key's
    page.screenshot("overview")
    # a key with several namespaces acts in one at a time, picked in the page
    page.act("overview", lambda: page.click("#namespace option[value=bob]"))
    assert page.query()["ns"] == ["bob"]
    page.act("browse", lambda: page.click("#nav-browse"))
    assert page.text("#entries") == "" or "Bob keeps his own notes." in page.text("#entries")
    assert "Lisbon" not in page.text("#entries")


def test_a_chinese_namespace_works_in_the_page_and_the_header(page: Page, served: dict[str, Any]) -> None:
    page.open("/?ns=" + quote("中文") + "&q=" + quote("黄山冷吗"), key=served["zh"])
    page.ready("search")
    assert "黄山山顶晚上很冷" in page.text("#hits") and "namespace 中文" in page.text("#result-summary")
    page.act("browse", lambda: page.driver.get(served["url"] + "/?view=browse&ns=" + quote("中文")))
    assert page.find(".entry-row .row-text").get_attribute("lang") == "zh"  # read as Chinese, the page being en
    import httpx

    raw = {"Authorization": f"Bearer {served['zh']}", "X-Engram-Namespace": "中文".encode()}
    listed = httpx.get(served["url"] + "/v1/memories", headers=raw, timeout=30)  # UTF-8 bytes, as curl sends
    assert listed.status_code == 200, listed.text
    assert "黄山" in listed.json()["results"][0]["text"]


def test_a_namespace_a_key_may_not_use_is_not_kept_and_a_key_of_several_names_one(page: Page,
                                                                                    served: dict[str, Any]) -> None:
    """A link's ns= was saved, so with a key that may not use it every later visit failed with
    403; a key of two namespaces was offered "key's namespace" after a reload, which the server
    refuses (it must name one)."""
    page.open("/?view=browse&ns=bogus", key=served["write"])
    page.ready("browse")
    assert "may not use namespace \"bogus\"" in page.text("#banner") and "Lisbon" in page.text("#entries")
    assert page.driver.execute_script("return localStorage.getItem('engram.namespace')") in (None, "")
    page.act("browse", lambda: page.driver.get(served["url"] + "/?view=browse"))  # a later visit
    assert "Lisbon" in page.text("#entries") and not page.text("#banner")
    page.open("/?view=browse", key=served["admin"])  # alice and bob
    page.ready("browse")
    for _ in range(2):  # the first visit, and after a reload
        options = [o.text for o in page.all("#namespace option")]
        assert [o.split(" (")[0] for o in options] == ["alice", "bob"], options
        page.act("browse", lambda: page.driver.refresh())


def test_the_metadata_filter_reads_as_the_command_line_does(page: Page, served: dict[str, Any]) -> None:
    """"title=Q3, planning" was two filters (a made-up planning=true), and a quoted "3" was sent
    with its quotes in a search; the listing read it as the text 3."""
    page.open("/", key=served["read"])
    page.ready("search")
    read = page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('/web/js/filters.js').then((m) => done([m.searchFilters({meta: arguments[0]}),"
        " m.listFilters({meta: arguments[0]})]));", 'title=Q3, planning, level="3", done=true, n=2')
    assert read[0] == {"metadata.title": "Q3, planning", "metadata.level": "3", "metadata.done": True, "metadata.n": 2}
    assert read[1] == ["metadata.title=Q3, planning", 'metadata.level="3"', "metadata.done=true", "metadata.n=2"]
    page.act("search", lambda: page.driver.get(served["url"] + "/?q=" + quote("what did Alice read") + "&meta="
                                                + quote("shelf=fiction")))
    assert "Reading log" in page.text("#hits") and "Lisbon" not in page.text("#hits")


def test_the_page_fits_a_phone(page: Page, served: dict[str, Any]) -> None:
    page.open("/?q=" + quote("what does Bob drink?"), key=served["read"], width=390)
    page.ready("search")
    assert "green tea" in page.text("#hits")
    overflow = page.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    page.screenshot("phone-search", full=False)
    page.open("/?view=session&session=trip-2024-03", key=served["read"], width=390)
    page.ready("session")
    assert page.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth") <= 0
    for width in (390, 375):  # the overview's cards stuck out 16 px at 375
        page.open("/?view=overview", key=served["admin"], width=width)
        page.ready("overview")
        wide = page.driver.execute_script(
            "return [...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > "
            "window.innerWidth + 0.5).map((e) => e.tagName + '.' + e.className).slice(0, 5)")
        overflow = page.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (width, wide)


def test_stored_markup_is_shown_as_text(page: Page, served: dict[str, Any]) -> None:
    page.open("/?q=" + quote("Markup stays text"), key=served["read"])
    page.ready("search")
    assert "<b>bold</b> & <img src=x onerror=alert(1)>" in page.text("#hits")
    assert not page.all("#hits b") and not page.all("#hits img")


def test_an_open_loopback_server_needs_no_key(driver: Any, tmp_path: Path, shots: Path) -> None:
    from engramdb import Memory

    db = tmp_path / "open.db"
    with Memory(db, embedder="minilm") as memory:
        memory.add(["The spare key is under the blue flowerpot."])
    server = Served(db)
    try:
        page = Page(driver, server.url, shots)
        page.open("/?q=" + quote("where is the spare key"))
        page.ready("search")
        assert not page.find("#key-panel").is_displayed()
        assert "blue flowerpot" in page.text("#hits")
        assert page.find("#namespace").get_attribute("value") == ""  # the server's default
        assert "default" in page.text("#namespace")
        assert not page.script_errors()
    finally:
        server.stop()


def test_a_dialogue_context_keeps_its_lines_and_enter_searches(page: Page, served: dict[str, Any]) -> None:
    """The query box was a one-line input: a pasted dialogue lost its line breaks ("Alice: …Bob: …"),
    and the page could not send what the API reads as a dialogue context. Now Shift+Enter adds a
    line and Enter searches."""
    from selenium.webdriver.common.keys import Keys

    page.open("/", key=served["read"])
    page.ready("search")
    box = page.find("#q")
    assert box.tag_name == "textarea"
    box.send_keys("Bob: I'm planning a trip.", Keys.SHIFT, Keys.ENTER, Keys.SHIFT,
                  "Alice: Nice, where to?", Keys.SHIFT, Keys.ENTER, Keys.SHIFT, "Bob: which city did Alice move to?")
    assert page.find("#q").get_attribute("value").count("\n") == 2  # Shift+Enter: a new line, no search yet
    page.act("search", lambda: page.find("#q").send_keys(Keys.ENTER))
    assert page.query()["q"] == ["Bob: I'm planning a trip.\nAlice: Nice, where to?\nBob: which city did Alice move to?"]
    assert page.find("#q").get_attribute("value").count("\n") == 2  # drawn again from the address, lines kept
    page.act("search", lambda: page.click("#tab-explain"))
    assert "dialogue true" in page.text("[data-stage=fuse]")  # read as a dialogue: its weights
    assert "semantic\n0.65" in page.text("[data-stage=fuse]")
