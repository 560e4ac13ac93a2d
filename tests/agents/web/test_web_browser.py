"""``thermopylae web`` in a real browser: Debian's chromium driven by Selenium through chromedriver (no
driver or browser is downloaded), at a phone's width (390 x 844) and a desktop's (1280 x 800). It plays a
co-op game to its end by clicking cards, a duel move by clicking a card, checks that the layout fits the
screen and that the log reads in order, opens a replay and leaves it for the tabs' own games, watches a
duel of two agents, steps a replay, and asks a policy and the search for a hint.

Skipped when chromium, chromedriver or selenium is missing, unless ``THERMOPYLAE_REQUIRE_BROWSER=1`` (CI).
With ``THERMOPYLAE_WEB_SCREENSHOTS=FOLDER`` the pages are saved there as ``web_*.png`` (the docs' images:
``THERMOPYLAE_WEB_SCREENSHOTS=docs/images``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[3]
WIDTHS = {"narrow": (390, 844), "wide": (1280, 800)}

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        return f"no {CHROMIUM} / {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
    for module in ("selenium", "starlette", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (the 'test' and 'web' extras)"
    return None


@pytest.fixture(scope="module")
def browser():
    reason = _missing()
    if reason:
        if os.environ.get("THERMOPYLAE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"THERMOPYLAE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not fetch anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, for errors
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
                     "--disable-gpu", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _viewport(driver, name: str) -> str:
    """The page's viewport set to exactly that size (a phone's is a mobile one, which honours the page's
    viewport meta tag), through the DevTools protocol: a window size would include the browser's frame."""
    width, height = WIDTHS[name]
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                                  "deviceScaleFactor": 1,
                                                                  "mobile": name == "narrow"})
    return name


@pytest.fixture(params=list(WIDTHS))
def width(request, browser) -> str:
    """The test runs at each width."""
    return _viewport(browser, request.param)


@pytest.fixture
def wide(browser) -> str:
    return _viewport(browser, "wide")


@pytest.fixture(scope="module")
def record_file(tmp_path_factory) -> Path:
    from thermopylae_agents.evaluation.replay import record_agent_game

    path = tmp_path_factory.mktemp("records") / "heuristic_coop.jsonl"
    record_agent_game("coop", "heuristic", path, seed=3, options={"num_players": 2})
    return path


@pytest.fixture(scope="module")
def server(record_file):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "agents")]))
    # --no-warm: the hint test sees the page say that the search is being prepared
    process = subprocess.Popen(
        [sys.executable, "-m", "thermopylae_agents", "web", "--port", "0", "--no-warm",
         "--record", str(record_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    try:
        line = process.stdout.readline()
        match = re.search(r"http://\S+/", line)
        assert match, f"no address printed: {line!r}"
        yield match.group(0)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _get(server: str, path: str) -> dict:
    with urllib.request.urlopen(server.rstrip("/") + path, timeout=30) as response:
        return json.loads(response.read())


def _shot(driver, tmp_path: Path, name: str, show=None) -> None:
    """Save the screen; ``show``: an element scrolled into sight (below the sticky bar), else the top."""
    path = tmp_path / f"web_{name}.png"
    if show is None:
        driver.execute_script("window.scrollTo(0, 0)")
    else:
        driver.execute_script("arguments[0].scrollIntoView({block: 'end'}); window.scrollBy(0, 60)", show)
    driver.save_screenshot(str(path))
    folder = os.environ.get("THERMOPYLAE_WEB_SCREENSHOTS")
    if folder:
        shutil.copy(path, Path(folder) / path.name)


def _wait(driver, condition, seconds: float = 20.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(condition)


def _text(driver, selector: str) -> str:
    """The text of the element (read in the page: a re-render between finding and reading is no race)."""
    return driver.execute_script("const e = document.querySelector(arguments[0]); "
                                 "return e ? e.textContent : '';", selector)


def _status(driver) -> str:
    return _text(driver, "#status")


def _click_and_wait(driver, element) -> None:
    """Click ``element`` and wait for the page to draw the answer (which replaces it); an element that a
    re-render replaced before the click is no click, and the caller looks again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support import expected_conditions as ec

    try:
        element.click()
    except StaleElementReferenceException:
        return
    _wait(driver, ec.staleness_of(element))


def _error(driver) -> str:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "error")
    return box.text if box.is_displayed() else ""


def _open(driver, server: str) -> None:
    driver.get(server)
    _wait(driver, lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == "1")


def _game_id(driver) -> str:
    return _text_attr(driver, "#download-record", "href").split("/api/games/")[1].split("/")[0]


def _text_attr(driver, selector: str, name: str) -> str:
    return driver.execute_script("const e = document.querySelector(arguments[0]); "
                                 "return e ? e.getAttribute(arguments[1]) : '';", selector, name)


def _boxes(driver) -> dict:
    """Where the table, the panel and the status line are drawn, and whether the page scrolls sideways."""
    return driver.execute_script("""
        const box = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
        const status = document.getElementById('status');
        const style = getComputedStyle(status);
        const inner = status.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
        return {table: box('table'), panel: box('panel'), status: box('status'),
                lines: Math.round(inner / parseFloat(style.lineHeight)),
                words: status.textContent.split(' ').length,
                overflow: document.documentElement.scrollWidth - window.innerWidth};""")


def _assert_layout_fits(driver, width: str) -> None:
    boxes = _boxes(driver)
    assert boxes["overflow"] <= 0, boxes  # nothing wider than the screen
    table, panel = boxes["table"], boxes["panel"]
    if width == "narrow":
        assert panel["top"] >= table["bottom"] - 1, boxes  # the panel below the table, not over it
    else:
        assert panel["left"] >= table["right"] - 1 and panel["top"] < table["bottom"], boxes  # side by side
    assert boxes["status"]["width"] >= 0.8 * table["width"], boxes
    assert boxes["lines"] <= max(1, boxes["words"] / 4), boxes  # the status reads as lines, not a column


def _assert_log_in_order(driver, server: str) -> None:
    """The page's log is the server's, oldest first, numbered from the server's first kept line."""
    view = _get(server, f"/api/games/{_game_id(driver)}")["view"]
    shown = driver.execute_script("return Array.from(document.querySelectorAll('#log li'), "
                                  "e => e.textContent)")
    assert shown == view["log"]
    assert int(_text_attr(driver, "#log", "start") or 1) == view["log_start"]
    assert not any(line.endswith(" played") for line in shown)


def test_a_coop_game_is_played_to_its_end_by_clicking_cards(browser, server, tmp_path, width):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from thermopylae_agents.web.views import END_SENTENCES

    _open(browser, server)
    Select(browser.find_element(By.ID, "seat-0")).select_by_value("coop_2p_maskable_ppo")
    browser.find_element(By.ID, "start-coop").click()  # a two-player policy on a one-seat team: refused
    _wait(browser, lambda d: "num_players=2" in _error(d))
    Select(browser.find_element(By.ID, "coop-count")).select_by_visible_text("2")
    Select(browser.find_element(By.ID, "seat-0")).select_by_value("human")
    Select(browser.find_element(By.ID, "seat-1")).select_by_value("heuristic")
    browser.find_element(By.ID, "coop-seed").send_keys("7")
    browser.find_element(By.ID, "start-coop").click()
    _wait(browser, lambda d: _status(d).startswith("Turn"))
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("0")
    _assert_layout_fits(browser, width)
    other = browser.find_element(By.CSS_SELECTOR, '.hand[data-seat="1"] button.card')
    other.click()  # a card of the seat that does not act: the page says why, and nothing is played
    _wait(browser, lambda d: "seat 0's turn" in _text(d, "#notice"))
    assert _status(browser).startswith("Turn 0")
    card = browser.find_elements(By.CSS_SELECTOR, "button.card.playable")[-1]
    card.click()  # a card that can fight: its support counts are offered, with the odds
    _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#choices button.choice")) >= 2)
    card = browser.find_element(By.CSS_SELECTOR, "#board button.card.selected")  # drawn again, selected
    assert card.get_attribute("aria-pressed") == "true"
    assert "support" in _text(browser, "#choices") and "beat" in _text(browser, "#choices")
    assert browser.switch_to.active_element.get_attribute("class") == "choice"  # the keyboard follows
    _shot(browser, tmp_path, f"coop_{width}", show=card if width == "narrow" else None)
    clicks = 0
    for _ in range(400):
        if _status(browser).startswith("Game over"):
            break
        choices = browser.find_elements(By.CSS_SELECTOR, "#choices button.choice")
        cards = browser.find_elements(By.CSS_SELECTOR, "#board button.card.playable")
        gives = browser.find_elements(By.CSS_SELECTOR, "#board button.give-here")
        selected = browser.find_elements(By.CSS_SELECTOR, "#board button.card.selected")
        if selected and choices:
            _click_and_wait(browser, choices[-1])  # the most support left
        elif cards:
            _click_and_wait(browser, cards[clicks % len(cards)])  # selects it, or discards it at once
        elif gives:
            _click_and_wait(browser, gives[clicks % len(gives)])
        elif choices:
            _click_and_wait(browser, choices[0])
        else:  # the heuristic seat moves by itself
            _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#choices button, #board button.card")
                  or _status(d).startswith("Game over"))
            continue
        clicks += 1
        assert not _error(browser), _error(browser)
    status = _status(browser)
    view = _get(server, f"/api/games/{_game_id(browser)}")["view"]
    assert view["terminated"] and status == "Game over · " + END_SENTENCES["coop", view["reason"]], status
    assert "_" not in status and f"({view['reason']})" not in status
    assert set(_text_attr(browser, "#status", "class").split()) & {"won", "lost"}  # the banner's colour
    _assert_log_in_order(browser, server)
    assert "/record" in browser.find_element(By.ID, "download-record").get_attribute("href")
    _assert_layout_fits(browser, width)
    _assert_console_clean(browser)


def _assert_console_clean(driver) -> None:
    """No script error and no missing file in the page's console (the refused requests the test makes on
    purpose are the API's answers, not missing files)."""
    problems = [entry["message"] for entry in driver.get_log("browser")
                if entry["level"] == "SEVERE" and "/api/" not in entry["message"]]
    assert problems == []


def test_a_duel_move_is_played_by_clicking_a_card(browser, server, tmp_path, width):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    browser.find_element(By.ID, "tab-duel").click()
    Select(browser.find_element(By.ID, "duel-greek")).select_by_value("human")
    Select(browser.find_element(By.ID, "duel-persian")).select_by_value("heuristic")
    browser.find_element(By.ID, "duel-seed").send_keys("5")
    browser.find_element(By.ID, "start-duel").click()
    _wait(browser, lambda d: _status(d).startswith("Turn 1 · Greek discard phase"))
    _assert_layout_fits(browser, width)
    hand = browser.find_elements(By.CSS_SELECTOR, "#board button.card.duel")
    assert hand and all("playable" in card.get_attribute("class") for card in hand)
    _shot(browser, tmp_path, f"duel_{width}", show=hand[-1] if width == "narrow" else None)
    name = hand[0].text.rsplit(" (", 1)[0]  # the card's name, without its force
    _click_and_wait(browser, hand[0])  # one legal action for this card: it is discarded at once
    _wait(browser, lambda d: _text(d, "#log li:last-child") == f"Greek (you) discards {name}")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#board button.card.duel")) == len(hand) - 1
    _assert_log_in_order(browser, server)
    for _ in range(40):  # then the moves of no card, from the bar, to the end of the turn
        if not _status(browser).startswith("Turn 1"):
            break
        added = browser.find_elements(By.CSS_SELECTOR, "#board button.card.added")
        if added:  # a card already in the defence says so when clicked
            added[0].click()
            _wait(browser, lambda d: "already in your defence" in _text(d, "#notice"))
        cards = browser.find_elements(By.CSS_SELECTOR, "#board button.card.playable")
        defending = _status(browser).endswith("Greek defence")
        if defending and cards and not added:
            _click_and_wait(browser, cards[-1])
        else:
            _click_and_wait(browser, browser.find_elements(By.CSS_SELECTOR, "#choices button.choice")[0])
        assert not _error(browser), _error(browser)
    assert _status(browser).startswith(("Turn 2", "Game over"))


def test_a_replay_has_its_own_tab_and_leaving_it_shows_each_tabs_own_game(browser, server, tmp_path, width):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    Select(browser.find_element(By.ID, "seat-0")).select_by_value("human")
    browser.find_element(By.ID, "coop-seed").send_keys("3")
    browser.find_element(By.ID, "start-coop").click()
    _wait(browser, lambda d: _status(d).startswith("Turn 0"))
    _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "#choices button.choice"))  # retreat
    coop_status, coop_game = _status(browser), _game_id(browser)
    browser.find_element(By.ID, "tab-duel").click()
    assert "start a duel" in _text(browser, "#board") and not _status(browser)
    Select(browser.find_element(By.ID, "duel-greek")).select_by_value("human")
    browser.find_element(By.ID, "start-duel").click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#board .card.duel"))
    duel_status, duel_game = _status(browser), _game_id(browser)
    browser.find_element(By.ID, "tab-replay").click()
    assert "Open a game record" in _text(browser, "#board")
    browser.find_element(By.ID, "open-listed").click()
    _wait(browser, lambda d: _text(d, "#replay-step").startswith("step 0 / "))
    for expected in ("step 1 /", "step 2 /"):
        browser.find_element(By.ID, "replay-next").click()
        _wait(browser, lambda d, e=expected: _text(d, "#replay-step").startswith(e))
    replay_status = _status(browser)
    browser.find_element(By.ID, "tab-coop").click()  # leaving the replay: the co-op game is back
    assert _game_id(browser) == coop_game and _status(browser) == coop_status
    assert not browser.find_elements(By.ID, "replay-step")
    _assert_log_in_order(browser, server)
    browser.find_element(By.ID, "tab-duel").click()
    assert _game_id(browser) == duel_game and _status(browser) == duel_status
    browser.find_element(By.ID, "tab-replay").click()  # and the replay where it was left
    assert _text(browser, "#replay-step").startswith("step 2 /") and _status(browser) == replay_status
    assert not browser.find_elements(By.ID, "download-record")
    assert not _error(browser)
    _assert_console_clean(browser)


def test_a_duel_of_two_agents_is_watched_paused_stepped_and_played_to_its_end(browser, server, tmp_path,
                                                                              wide):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    browser.find_element(By.ID, "tab-duel").click()
    Select(browser.find_element(By.ID, "duel-greek")).select_by_value("human")
    Select(browser.find_element(By.ID, "duel-persian")).select_by_value("human")
    browser.find_element(By.ID, "start-duel").click()  # two people: refused with the reason
    _wait(browser, lambda d: "an agent on at least one side" in _error(d))
    Select(browser.find_element(By.ID, "duel-greek")).select_by_value("duel_greek_maskable_ppo")
    Select(browser.find_element(By.ID, "duel-persian")).select_by_value("heuristic")
    browser.find_element(By.ID, "duel-seed").send_keys("3")
    browser.find_element(By.ID, "start-duel").click()
    _wait(browser, lambda d: _status(d).startswith("Turn"))
    assert browser.find_element(By.ID, "watch-box").is_displayed()
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("1")
    assert not browser.find_elements(By.CSS_SELECTOR, "#board .card.back.small-card")  # both hands shown
    assert not browser.find_elements(By.CSS_SELECTOR, "#board button.card")  # nothing to click when watching
    browser.find_element(By.ID, "watch-pause").click()
    _wait(browser, lambda d: _text(d, "#watch-pause") == "Play")
    _wait(browser, lambda d: "to move" in _text(d, "#controls .thinking"))  # a move in flight has ended
    before = _text(browser, "#log")
    browser.find_element(By.ID, "watch-step").click()
    _wait(browser, lambda d: _text(d, "#log") != before)
    _shot(browser, tmp_path, "watch")
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("0")
    browser.find_element(By.ID, "watch-pause").click()
    _wait(browser, lambda d: _status(d).startswith("Game over"), seconds=120)
    assert re.match(r"Game over · The (Greeks|Persians) won: ", _status(browser)), _status(browser)
    assert not _error(browser) and not browser.find_element(By.ID, "watch-step").is_enabled()
    _assert_log_in_order(browser, server)


def test_a_replay_steps_forward_and_back_and_plays_by_itself(browser, server, record_file, tmp_path, wide):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    browser.find_element(By.ID, "tab-replay").click()
    browser.find_element(By.ID, "replay-file").send_keys(str(record_file))
    browser.find_element(By.ID, "open-upload").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "replay-step"))

    def step() -> str:
        return _text(browser, "#replay-step")

    assert step().startswith("step 0 / ")
    for expected in ("step 1 /", "step 2 /"):
        browser.find_element(By.ID, "replay-next").click()
        _wait(browser, lambda d, e=expected: step().startswith(e))
    browser.find_element(By.ID, "replay-prev").click()
    _wait(browser, lambda d: step().startswith("step 1 /"))
    _shot(browser, tmp_path, "replay")
    browser.find_element(By.ID, "replay-last").click()
    _wait(browser, lambda d: _status(d).startswith("Game over · The Spartans"))
    browser.find_element(By.ID, "replay-first").click()
    _wait(browser, lambda d: step().startswith("step 0 /"))
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("0")
    browser.find_element(By.ID, "watch-pause").click()  # a replay waits for Play, then plays by itself
    _wait(browser, lambda d: _status(d).startswith("Game over"), seconds=60)
    assert not _error(browser) and _text(browser, "#watch-pause") == "Pause"


def test_hints_of_a_policy_and_of_the_search_which_says_when_it_is_being_prepared(browser, server, wide):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    Select(browser.find_element(By.ID, "coop-count")).select_by_visible_text("2")
    Select(browser.find_element(By.ID, "seat-1")).select_by_value("heuristic")
    browser.find_element(By.ID, "coop-seed").send_keys("7")
    browser.find_element(By.ID, "start-coop").click()
    _wait(browser, lambda d: _status(d).startswith("Turn"))
    Select(browser.find_element(By.ID, "hint-agent")).select_by_value("coop_2p_maskable_ppo")
    browser.find_element(By.ID, "hint-button").click()
    _wait(browser, lambda d: "most probable" in d.find_element(By.ID, "hint").text)
    assert browser.find_elements(By.CSS_SELECTOR, "button.action.hinted")
    cold = _get(server, "/api/status")["search"] != "ready"
    browser.execute_script("""
        window.preparingSeen = false;
        const hint = document.getElementById('hint');
        new MutationObserver(() => {
          const text = hint.textContent.toLowerCase();
          if (text.includes('preparing the search (one-time')) window.preparingSeen = true;
        }).observe(hint, {childList: true, subtree: true, characterData: true});""")
    Select(browser.find_element(By.ID, "hint-agent")).select_by_value("search")
    browser.find_element(By.ID, "hint-button").click()
    _wait(browser, lambda d: "estimated win chance" in d.find_element(By.ID, "hint").text, seconds=180)
    assert browser.execute_script("return window.preparingSeen") == cold
    assert _get(server, "/api/status")["search"] == "ready"
    chosen = browser.find_elements(By.CSS_SELECTOR, "#hint .search-hint li.chosen")
    hinted = browser.find_elements(By.CSS_SELECTOR, "button.action.hinted")
    assert len(chosen) == 1 and len(hinted) == 1
    assert chosen[0].get_attribute("data-action") == hinted[0].get_attribute("data-action")
