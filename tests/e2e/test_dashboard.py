"""The dashboard end to end in real headless Chromium: seeded Redis, the read API on a free port,
leaderboard rows, search, a player page with its SVG rating chart, a round page, live update."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from readside_data import LADDER, Seeded, seed
from stream.api.server import ApiThread
from stream.settings import Settings
from stream.stack.ports import free_port
from stream.store import keys

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
WAIT_S = 20
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1200,1000"]

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):  # scripts/setup.sh installs both
    pytest.fail("chromium and chromium-driver are required (apt-get install -y chromium chromium-driver)",
                pytrace=False)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def ApiServer(redis_url: str) -> ApiThread:
    """The read API as the worker serves it (its own thread and event loop), on a free port."""
    return ApiThread(Settings(redis_url=redis_url), host="127.0.0.1", port=free_port(), probe=False)


@pytest.fixture()
def browser() -> Iterator[webdriver.Chrome]:
    profile = tempfile.mkdtemp(prefix="dashboard-chrome-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def rows(driver: webdriver.Chrome) -> list[str]:
    """Player ids of the leaderboard rows, read in one script (the page may re-render meanwhile)."""
    return driver.execute_script(  # type: ignore[no-any-return]
        "return Array.from(document.querySelectorAll('tr.lb-row'), r => r.dataset.player)")


def test_dashboard_pages(redis_url: str, browser: webdriver.Chrome) -> None:
    seeded: Seeded = seed(redis_url)
    ranking = seeded.ranking()
    OUTPUT.mkdir(exist_ok=True)
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        browser.get(server.url + "/")
        # leaderboard: the first page, best first
        wait.until(lambda d: len(rows(d)) == len(ranking))
        assert rows(browser) == ranking
        first = browser.find_element(By.CSS_SELECTOR, "tr.lb-row td").text
        assert first == "1"
        browser.save_screenshot(str(OUTPUT / "dashboard-leaderboard.png"))

        # search by prefix (literal, glob characters included)
        box = browser.find_element(By.ID, "search")
        box.send_keys("x[")
        box.send_keys("\n")
        wait.until(lambda d: rows(d) == ["x[1]"])

        # player page: the SVG chart has the band, the line and one point per rated round
        best = ranking[0]
        browser.get(f"{server.url}/#/l/{LADDER}/p/{best}")
        wait.until(ec.text_to_be_present_in_element((By.ID, "player-name"), best))
        chart = browser.find_element(By.ID, "rating-chart")
        history = len(redis.Redis.from_url(redis_url).lrange(keys.history(LADDER, best), 0, -1))
        assert len(chart.find_elements(By.CSS_SELECTOR, "circle.perf-point")) == history
        line = chart.find_element(By.ID, "rating-line").get_attribute("points")
        assert line is not None and len(line.split()) == history
        band = chart.find_element(By.ID, "sigma-band").get_attribute("points")
        assert band is not None and len(band.split()) == 2 * history
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.history-row")) == history
        browser.save_screenshot(str(OUTPUT / "dashboard-player.png"))

        # round page, reached by clicking a round of the player's history
        browser.find_element(By.CSS_SELECTOR, "tr.history-row a").click()
        wait.until(ec.presence_of_element_located((By.ID, "round-results")))
        round_id = browser.find_element(By.ID, "round-name").text.split()[-1]
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.round-row")) == seeded.field_sizes[round_id]
        browser.save_screenshot(str(OUTPUT / "dashboard-round.png"))

        # live update: a new player appears on the open leaderboard without a reload
        browser.get(f"{server.url}/?fresh#/l/{LADDER}")  # a new document: no search kept
        wait.until(lambda d: len(rows(d)) == len(ranking))
        wait.until(lambda d: "on" in (d.find_element(By.ID, "live").get_attribute("class") or ""))
        r = redis.Redis.from_url(redis_url)
        r.hset(keys.player(LADDER, "zz-new"), mapping={"mu": "3000", "sigma": "50", "rounds": 1, "tier": "Master"})
        r.zadd(keys.leaderboard(LADDER), {"zz-new": 2900.0})
        r.hset(keys.ladder(LADDER), "updated_at", "1800000000.5")
        wait.until(lambda d: rows(d)[:1] == ["zz-new"])
        r.close()
