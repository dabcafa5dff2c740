"""The what-if page and the explain panel in real headless Chromium, against the read API over a
real redis-server: pasted standings give the API's deltas and tier targets; a history row's "why?"
shows the API's explanation in plain words."""

from __future__ import annotations

import json
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from readside_data import LADDER as RS, seed
from test_dashboard import OUTPUT, WAIT_S, ApiServer, browser  # noqa: F401 - the browser fixture
from whatif_data import LADDER, PLAYERS, seed_states


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as reply:
        return json.loads(reply.read())  # type: ignore[no-any-return]


def test_what_if_page_and_explain_panel(redis_url: str, browser) -> None:  # type: ignore[no-untyped-def]
    seed_states(redis_url)
    seed(redis_url)
    OUTPUT.mkdir(exist_ok=True)
    wait = WebDriverWait(browser, WAIT_S)
    order = PLAYERS[::-1][:12] + ["rookie"]
    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/?live=off#/l/{LADDER}")
        wait.until(ec.element_to_be_clickable((By.ID, "whatif-link"))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "whatif-name"), "What if"))
        box = browser.find_element(By.ID, "whatif-input")
        box.send_keys("\n".join(order))
        browser.find_element(By.ID, "whatif-explain").send_keys(order[3])
        browser.find_element(By.ID, "whatif-run").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.whatif-row")) == len(order))
        shown = browser.execute_script("""return Array.from(document.querySelectorAll('tr.whatif-row'),
            r => Array.from(r.children, c => c.textContent))""")
        answer = post(f"{server.url}/api/ladders/{LADDER}/what-if",
                      {"standings": [{"player": p, "rank": i + 1} for i, p in enumerate(order)], "explain_for": [order[3]]})
        assert [row[1] for row in shown] == [p if p in PLAYERS else f"{p} (new)" for p in order]
        assert [row[4] for row in shown] == [f"{c['mu_after']:.0f}" for c in answer["changes"]]
        assert [row[7] for row in shown] == [f"{c['display_rating']:.0f}" for c in answer["changes"]]
        target = browser.find_element(By.CSS_SELECTOR, "li.whatif-target").text
        assert target.startswith(f"{order[3]}: ") and answer["targets"][0]["next_tier"] in target
        browser.save_screenshot(str(OUTPUT / "dashboard-what-if.png"))
        # bad standings: the API's code is shown, the page stays
        box.clear()
        box.send_keys("alone")
        browser.find_element(By.ID, "whatif-run").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "error"), "no_outcome"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.whatif-row")) == len(order)

        # the explain panel of a player page
        player = "p03"
        browser.get(f"{server.url}/?live=off#/l/{RS}/p/{player}")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.history-row button.why")) > 0)
        row = browser.find_elements(By.CSS_SELECTOR, "tr.history-row")[-1]  # oldest round
        round_id = row.get_attribute("data-key")
        row.find_element(By.CSS_SELECTOR, "button.why").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#explain-text li")) > 0)
        with urllib.request.urlopen(f"{server.url}/api/ladders/{RS}/players/{player}/changes/{round_id}/explain") as r:
            explained = json.loads(r.read())
        lines = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#explain-text li")]
        assert lines == explained["text"] and round_id in browser.find_element(By.ID, "explain-title").text
        browser.save_screenshot(str(OUTPUT / "dashboard-explain.png"))


def test_leaderboard_eligible_only(redis_url: str, browser) -> None:  # type: ignore[no-untyped-def]
    """The leaderboard's "eligible only" box shows the players the ladder's rules admit, in order."""
    from stream.api.server import ApiThread
    from stream.settings import Settings
    from stream.stack.ports import free_port

    seeded = seed(redis_url)
    ladders = json.dumps({RS: {"model": "mmr", "display": {"min_rounds": 4, "provisional_rounds": 5}}})
    wait = WebDriverWait(browser, WAIT_S)
    with ApiThread(Settings(redis_url=redis_url, ladders=ladders), host="127.0.0.1", port=free_port(),
                   probe=False) as server:
        with urllib.request.urlopen(f"{server.url}/api/ladders/{RS}/leaderboard?eligible=true&limit=200") as r:
            admitted = [row["player"] for row in json.loads(r.read())["rows"]]
        assert 0 < len(admitted) < len(seeded.display)
        browser.get(f"{server.url}/?live=off#/l/{RS}")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.lb-row")) == len(seeded.display))
        marked = browser.execute_script("return Array.from(document.querySelectorAll('tr.lb-row td:nth-child(3)'), c => c.textContent)")
        assert any(text.endswith("?") for text in marked)  # provisional ratings are marked
        browser.find_element(By.ID, "eligible-only").click()
        wait.until(lambda d: d.execute_script(
            "return Array.from(document.querySelectorAll('tr.lb-row'), r => r.dataset.player)") == admitted)
        assert browser.find_element(By.ID, "search").get_attribute("disabled") is not None
