"""The dashboard in real headless Chromium with ids that need encoding: the leaderboard's links
lead to the pages of players "a/b", "50% off" and ".." and of rounds "2026/11/22 r1" and ".."
(the API's query form for the dot-segments), on a ladder whose name holds ':'.

The browser and the server in a thread come from the dashboard's own end-to-end test."""

from __future__ import annotations

from urllib.parse import quote

import redis
from e2e.test_dashboard import WAIT_S, ApiServer, browser, rows  # noqa: F401 - browser is a fixture
from readside_data import seed
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from stream.store import keys

LADDER = "cup:2026"
PLAYERS = ["a/b", "50% off", "..", "ünï", "p01", "p02"]
ROUNDS = ["2026/11/22 r1", "..", "r3"]


def text(driver: webdriver.Chrome, element_id: str) -> str:
    found = driver.find_elements(By.ID, element_id)
    return found[0].text if found else ""


def open_from_leaderboard(driver: webdriver.Chrome, url: str, css: str) -> None:
    """Load the ladder's leaderboard and click the link ``css`` selects (a player or a round)."""
    driver.get(url)
    WebDriverWait(driver, WAIT_S).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) == 1)
    driver.find_element(By.CSS_SELECTOR, css).click()


def test_player_and_round_pages_of_ids_that_need_encoding(redis_url: str, browser: webdriver.Chrome) -> None:  # noqa: F811
    seeded = seed(redis_url, ladder=LADDER, players=PLAYERS, round_ids=ROUNDS)
    r = redis.Redis.from_url(redis_url)
    history = {p: r.llen(keys.history(LADDER, p)) for p in PLAYERS}
    r.close()
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        board = f"{server.url}/#/l/{quote(LADDER, safe='')}"
        for player in ("a/b", "50% off", ".."):
            open_from_leaderboard(browser, board, f'tr.lb-row[data-player="{player}"] a')
            wait.until(lambda d: text(d, "player-name") == player or text(d, "error"))
            assert (text(browser, "player-name"), text(browser, "error")) == (player, "")
            assert len(browser.find_elements(By.CSS_SELECTOR, "tr.history-row")) == history[player]

        for round_id in ("2026/11/22 r1", ".."):
            open_from_leaderboard(browser, board, f'#recent-rounds a[href$="/r/{quote(round_id, safe="")}"]')
            wait.until(lambda d: text(d, "round-name") == f"Round {round_id}" or text(d, "error"))
            assert (text(browser, "round-name"), text(browser, "error")) == (f"Round {round_id}", "")
            assert len(browser.find_elements(By.CSS_SELECTOR, "tr.round-row")) == seeded.field_sizes[round_id]
