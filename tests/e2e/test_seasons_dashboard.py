"""The seasons page and the player page's seasons panel in real headless Chromium, against the
read API over a real redis-server: the schedule with the current season, the league thresholds
from target shares, the season selector's archived final standings (as the API answers), and a
player's past season on his page."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import redis.asyncio as aioredis
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from readside_data import LADDER, seed
from stream.store import seasons as store
from test_dashboard import OUTPUT, WAIT_S, browser  # noqa: F401 - the browser fixture

LADDERS = json.dumps({LADDER: {"model": "mmr", "seasons": {
    "schedule": [{"name": "S1", "start": "2020-01-01T00:00:00Z"}, {"name": "S2", "start": "2021-01-01T00:00:00Z"}],
    "shares": [0.5, 0.3, 0.2]}, "display": {"tiers": [["Low", None], ["Mid", 1400], ["High", 1600]]}}})


def archive(redis_url: str, players: list[str]) -> None:
    async def go() -> None:
        r = aioredis.Redis.from_url(redis_url)
        standings = {p: {"mu": 1500.0 + 10 * i, "sigma": 90.0, "display_rating": 1320.0 + 10 * i, "tier": "Low",
                         "rounds": 4, "rank": len(players) - i, "league": "Low", "division": None}
                     for i, p in enumerate(players)}
        await store.write_archive(r, LADDER, "S1", standings, {p: d["display_rating"] for p, d in standings.items()})
        await store.record_shares(r, LADDER, 1.6e9, {"leagues": ["Low", "Mid", "High"], "thresholds": [None, 1.0, 2.0],
                                                     "counts": [5, 3, 2], "players": 10, "shares": [0.5, 0.3, 0.2],
                                                     "top": None})
        await r.aclose()

    asyncio.run(go())


def test_seasons_page_and_player_panel(redis_url: str, browser) -> None:  # type: ignore[no-untyped-def]
    from stream.api.server import ApiThread
    from stream.settings import Settings
    from stream.stack.ports import free_port

    seeded = seed(redis_url)
    players = sorted(seeded.display)[:6]
    archive(redis_url, players)
    OUTPUT.mkdir(exist_ok=True)
    wait = WebDriverWait(browser, WAIT_S)
    with ApiThread(Settings(redis_url=redis_url, ladders=LADDERS), host="127.0.0.1", port=free_port(),
                   probe=False) as server:
        browser.get(f"{server.url}/?live=off#/l/{LADDER}")
        wait.until(ec.element_to_be_clickable((By.ID, "seasons-link"))).click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.season-row")) == 2)
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.season-row")]
        assert rows[1].startswith("S2") and rows[1].endswith("current")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#season-leagues tbody tr")) == 3
        # S2 (current) is not archived; the selector shows S1's archive
        wait.until(ec.text_to_be_present_in_element((By.ID, "season-standings-note"), "not archived"))
        Select(browser.find_element(By.ID, "season-select")).select_by_value("S1")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.standing-row")) == len(players))
        with urllib.request.urlopen(f"{server.url}/api/ladders/{LADDER}/seasons/S1/leaderboard") as r:
            want = [row["player"] for row in json.loads(r.read())["rows"]]
        shown = [r.find_elements(By.TAG_NAME, "td")[1].text for r in browser.find_elements(By.CSS_SELECTOR, "tr.standing-row")]
        assert shown == want
        browser.save_screenshot(str(OUTPUT / "dashboard-seasons.png"))
        # the player page: his past season S1, linked to its standings
        browser.find_elements(By.CSS_SELECTOR, "tr.standing-row td a")[0].click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#player-past-seasons tbody tr")) == 1)
        past = browser.find_element(By.CSS_SELECTOR, "#player-past-seasons tbody tr").text
        assert past.startswith("S1 1 ")  # the best archived player: rank 1
        assert browser.find_element(By.ID, "player-season").text.startswith("S2: ")
