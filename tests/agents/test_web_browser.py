"""``thermopylae web`` in a real browser: Debian's chromium driven by Selenium through chromedriver (no
driver or browser is downloaded). It plays a co-op game to its end by clicks, a duel turn as each side,
watches a duel of two agents (paused, stepped, then at the fastest speed to its end), steps a replay
forward and back, and asks a policy and the search for a hint.

Skipped when chromium, chromedriver or selenium is missing, unless ``THERMOPYLAE_REQUIRE_BROWSER=1`` (CI).
With ``THERMOPYLAE_WEB_SCREENSHOTS=FOLDER`` the pages are saved there as ``web_*.png`` (the docs' images:
``THERMOPYLAE_WEB_SCREENSHOTS=docs/images``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]

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
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     "--disable-gpu", "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def record_file(tmp_path_factory) -> Path:
    from thermopylae_agents.evaluation.replay import record_agent_game

    path = tmp_path_factory.mktemp("records") / "heuristic_coop.jsonl"
    record_agent_game("coop", "heuristic", path, seed=3, options={"num_players": 2})
    return path


@pytest.fixture(scope="module")
def server(record_file):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "agents")]))
    process = subprocess.Popen(
        [sys.executable, "-m", "thermopylae_agents", "web", "--port", "0", "--record", str(record_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    try:
        line = process.stdout.readline()
        match = re.search(r"http://\S+/", line)
        assert match, f"no address printed: {line!r}"
        yield match.group(0)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _shot(driver, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"web_{name}.png"
    driver.execute_script("window.scrollTo(0, 0)")
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
    return _text(driver, "#table .status")


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


def test_a_coop_game_is_played_to_its_end_by_clicks_with_an_agent_hint(browser, server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

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
    assert len(browser.find_elements(By.CSS_SELECTOR, ".card.persian")) >= 2
    Select(browser.find_element(By.ID, "hint-agent")).select_by_value("coop_2p_maskable_ppo")
    browser.find_element(By.ID, "hint-button").click()
    _wait(browser, lambda d: "most probable" in d.find_element(By.ID, "hint").text)
    assert browser.find_elements(By.CSS_SELECTOR, "button.action.hinted")
    Select(browser.find_element(By.ID, "hint-agent")).select_by_value("search")
    browser.find_element(By.ID, "hint-button").click()
    _wait(browser, lambda d: "estimated win chance" in d.find_element(By.ID, "hint").text)
    chosen = browser.find_elements(By.CSS_SELECTOR, "#hint .search-hint li.chosen")
    hinted = browser.find_elements(By.CSS_SELECTOR, "button.action.hinted")
    assert len(chosen) == 1 and len(hinted) == 1
    assert chosen[0].get_attribute("data-action") == hinted[0].get_attribute("data-action")
    _shot(browser, tmp_path, "coop")
    for _ in range(400):
        if _status(browser).startswith("GAME OVER"):
            break
        buttons = browser.find_elements(By.CSS_SELECTOR, "button.action")
        if buttons:
            _click_and_wait(browser, buttons[0])
        else:  # the heuristic seat moves by itself
            _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button.action")
                  or _status(d).startswith("GAME OVER"))
        assert not _error(browser), _error(browser)
    assert _status(browser).startswith("GAME OVER"), _status(browser)
    assert "/record" in browser.find_element(By.ID, "download-record").get_attribute("href")


@pytest.mark.parametrize("side", ["greek", "persian"])
def test_a_duel_turn_is_played_by_clicks_as_each_side(browser, server, tmp_path, side):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, server)
    browser.find_element(By.ID, "tab-duel").click()
    other = "persian" if side == "greek" else "greek"
    Select(browser.find_element(By.ID, f"duel-{side}")).select_by_value("human")
    Select(browser.find_element(By.ID, f"duel-{other}")).select_by_value("heuristic")
    browser.find_element(By.ID, "start-duel").click()
    _wait(browser, lambda d: _status(d).startswith("Turn 1"))
    assert browser.find_elements(By.CSS_SELECTOR, ".card.duel")
    if side == "greek":
        _shot(browser, tmp_path, "duel")
    for _ in range(60):
        if not _status(browser).startswith("Turn 1"):
            break
        buttons = browser.find_elements(By.CSS_SELECTOR, "button.action")
        _click_and_wait(browser, buttons[-1])  # the last legal action: done, commit or decline
        assert not _error(browser)
    assert _status(browser).startswith(("Turn 2", "GAME OVER"))


def test_a_duel_of_two_agents_is_watched_paused_stepped_and_played_to_its_end(browser, server, tmp_path):
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
    assert not browser.find_elements(By.CSS_SELECTOR, "#table .card.back.small-card")  # both hands shown
    browser.find_element(By.ID, "watch-pause").click()
    _wait(browser, lambda d: _text(d, "#watch-pause") == "Play")
    _wait(browser, lambda d: "to move" in _text(d, "#controls .thinking"))  # a move in flight has ended
    before = _text(browser, "#log")
    browser.find_element(By.ID, "watch-step").click()
    _wait(browser, lambda d: _text(d, "#log") != before)
    _shot(browser, tmp_path, "watch")
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("0")
    browser.find_element(By.ID, "watch-pause").click()
    _wait(browser, lambda d: _status(d).startswith("GAME OVER: the "), seconds=120)
    assert re.match(r"GAME OVER: the (Greek|Persian)s won", _status(browser)), _status(browser)
    assert not _error(browser) and not browser.find_element(By.ID, "watch-step").is_enabled()


def test_a_replay_steps_forward_and_back_and_plays_by_itself(browser, server, record_file, tmp_path):
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
    _wait(browser, lambda d: _status(d).startswith("GAME OVER"))
    browser.find_element(By.ID, "replay-first").click()
    _wait(browser, lambda d: step().startswith("step 0 /"))
    Select(browser.find_element(By.ID, "watch-speed")).select_by_value("0")
    browser.find_element(By.ID, "watch-pause").click()  # a replay waits for Play, then plays by itself
    _wait(browser, lambda d: _status(d).startswith("GAME OVER"), seconds=60)
    assert not _error(browser) and _text(browser, "#watch-pause") == "Pause"
