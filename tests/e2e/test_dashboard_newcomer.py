"""Issue 29 items 7, 10 and 15 in real headless Chromium: an unknown ladder or player page says so
(no empty skeleton), a corrected round shows its trail, the match-up names a typo'd player with
suggestions, the history's columns are labelled, no page is wider than a phone's screen, a favicon."""

from __future__ import annotations

import json

import redis
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from readside_data import LADDER, seed
from stream.store import keys
from test_dashboard import WAIT_S, ApiServer, browser  # noqa: F401 - the browser fixture

PHONE = (375, 800)


def test_unknown_pages_say_what_is_unknown(redis_url: str, browser) -> None:  # noqa: F811
    seed(redis_url)
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/#/l/blitzz")
        wait.until(lambda d: d.find_elements(By.ID, "not-found"))
        text = browser.find_element(By.ID, "not-found").text
        assert text == f"unknown ladder 'blitzz'; did you mean '{LADDER}'?; known ladders: {LADDER}"
        assert not browser.find_elements(By.ID, "leaderboard")  # no empty skeleton
        browser.get(f"{server.url}/#/l/{LADDER}/p/p0l")
        wait.until(lambda d: d.find_elements(By.ID, "not-found")
                   and "unknown player" in d.find_element(By.ID, "not-found").text)
        assert "did you mean 'p0" in browser.find_element(By.ID, "not-found").text
        assert not browser.find_elements(By.ID, "rating-chart")
        icon = browser.execute_script("return document.querySelector('link[rel=icon]').href")
        assert icon.startswith("data:image/svg+xml")


def test_round_trail_matchup_typo_labels_and_phone_width(redis_url: str, browser) -> None:  # noqa: F811
    seeded = seed(redis_url)
    client = redis.Redis.from_url(redis_url)
    trail = [{"id": "fix-1", "kind": "void", "at": 1700000000.0, "reason": "cheater"}]
    client.hset(keys.round_record(LADDER, "r1"), mapping={"corrections": json.dumps(trail), "voided_by": "fix-1",
                                                          "status": "voided"})
    client.close()
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/#/l/{LADDER}/r/r1")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#round-trail li.trail-step"))
        step = browser.find_element(By.CSS_SELECTOR, "#round-trail li.trail-step").text
        assert step.startswith("voided 2023-11-14 22:13 by correction fix-1") and step.endswith(": cheater")

        best = seeded.ranking()[0]
        browser.get(f"{server.url}/#/l/{LADDER}/matchup/{best}/p0l")
        wait.until(lambda d: "Not rated in this ladder" in d.find_element(By.ID, "matchup-info").text)
        assert "p0l (did you mean p0" in browser.find_element(By.ID, "matchup-info").text

        browser.get(f"{server.url}/#/l/{LADDER}/p/{best}")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#history th"))
        headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#history th")]
        assert headers[5] == "Δμ" and headers[1] == "when (UTC)"
        for chart in ("rating-chart", "rank-chart"):  # distinct time labels, one says UTC; a y-axis title
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#{chart} text.axis-title"))
            labels = browser.execute_script(
                f"return Array.from(document.querySelectorAll('#{chart} text.time-label'), t => t.textContent)")
            assert 1 <= len(labels) == len(set(labels)), labels
            assert any(label.endswith("UTC") for label in labels), labels

        browser.set_window_size(*PHONE)
        for page in (f"#/l/{LADDER}", f"#/l/{LADDER}/p/{best}", f"#/l/{LADDER}/r/r2", f"#/l/{LADDER}/matchup/{best}/p01"):
            browser.get(f"{server.url}/{page}")
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "main h1"))
            wide = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 0, (page, wide)
