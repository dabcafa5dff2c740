"""The dashboard end to end in real headless Chromium: seeded Redis, the read API on a free port,
leaderboard rows, search, a player page with its SVG rating chart, a round page, live update."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from readside_data import LADDER, Seeded, seed
from stream.api import app as api_app
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
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


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
        # the rating distribution: one bar per bin, every player counted once, the tiers as bands
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rating-histogram rect.bar")) == 30)
        drawn = browser.execute_script("""
            const svg = document.getElementById('rating-histogram');
            return {counts: Array.from(svg.querySelectorAll('rect.bar'), b => Number(b.dataset.count)),
                    heights: Array.from(svg.querySelectorAll('rect.bar'), b => Number(b.getAttribute('height'))),
                    bands: Array.from(svg.querySelectorAll('rect.tier-band'), b => b.dataset.tier)};""")
        with urllib.request.urlopen(f"{server.url}/api/ladders/{LADDER}/distribution?bins=30") as resp:
            served = json.loads(resp.read())
        assert drawn["counts"] == served["counts"] and sum(drawn["counts"]) == len(ranking)
        tallest = max(range(30), key=lambda i: drawn["counts"][i])
        assert drawn["heights"][tallest] == max(drawn["heights"]) > 0
        assert [h for h, n in zip(drawn["heights"], drawn["counts"]) if n == 0] == [0] * drawn["counts"].count(0)
        shown = sorted(seeded.display.values())
        starts = [t["from"] if t["from"] is not None else shown[0] for t in served["tiers"]]
        in_range = [t["tier"] for i, t in enumerate(served["tiers"])
                    if max(shown[0], starts[i]) < (min(shown[-1], starts[i + 1]) if i + 1 < len(starts) else shown[-1])]
        assert drawn["bands"] == in_range and in_range
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
        # the view's nodes are drawn before its data: the name is set with the rows, when the round arrives
        wait.until(lambda d: d.find_element(By.ID, "round-name").text.strip())
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


class Rater:
    """Writes to the ladder as rated rounds do, every ``period_s``: moves every player's rating,
    adds a player now and then, bumps ``updated_at`` (which the event stream follows)."""

    def __init__(self, redis_url: str, players: list[str], period_s: float = 0.15) -> None:
        self.client = redis.Redis.from_url(redis_url)
        self.players = list(players)
        self.period_s = period_s
        self.stop = threading.Event()
        self.updates = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(7)
        while not self.stop.wait(self.period_s):
            self.updates += 1
            if self.updates % 5 == 0:
                self.players.append(f"new{self.updates:04d}")
            pipe = self.client.pipeline(transaction=False)
            for p in self.players:
                shown = rng.uniform(1000, 2000)
                pipe.hset(keys.player(LADDER, p), mapping={"mu": repr(shown + 100), "sigma": "50", "rounds": self.updates})
                pipe.zadd(keys.leaderboard(LADDER), {p: shown})
                pipe.zadd(keys.player_names(LADDER), {p: 0})
            pipe.hset(keys.ladder(LADDER), mapping={"updated_at": repr(1_800_000_000.0 + self.updates),
                                                    "rounds_rated": self.updates})
            pipe.execute()

    def __enter__(self) -> "Rater":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(WAIT_S)
        self.client.close()


def page_state(driver: webdriver.Chrome) -> dict:
    """What a live update must not disturb: the search box (same element, text, focus), the first
    row's element, the scroll position; plus the shown rows and the 'rounds rated' card."""
    return driver.execute_script("""
        const box = document.getElementById('search');
        const first = document.querySelector('tr.lb-row');
        return {box: box ? box.dataset.mark || null : null, text: box ? box.value : null,
                focused: document.activeElement ? document.activeElement.id : null,
                row: first ? first.dataset.mark || null : null, scroll: window.scrollY,
                rows: Array.from(document.querySelectorAll('tr.lb-row'), r => r.dataset.player),
                rated: (document.querySelector('[data-card="rounds rated"] .value') || {}).textContent};""")


def test_search_focus_scroll_and_pages_survive_live_updates(redis_url: str, browser: webdriver.Chrome,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Typing into the search box while the ladder changes several times a second: the text, the
    focus and the filter hold, the rows are patched (the same elements), the scroll position and the
    page stay; the pause toggle stops the patching and resuming catches up."""
    monkeypatch.setattr(api_app, "SSE_POLL_S", 0.1)
    players = [f"p{i:03d}" for i in range(60)] + [f"q{i:03d}" for i in range(60)]
    seed(redis_url, players=players, rounds=2)
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server, Rater(redis_url, players) as rater:
        browser.get(f"{server.url}/#/l/{LADDER}")
        wait.until(lambda d: len(rows(d)) == 25)
        wait.until(lambda d: "on" in (d.find_element(By.ID, "live").get_attribute("class") or ""))
        box = browser.find_element(By.ID, "search")
        browser.execute_script("document.getElementById('search').dataset.mark = 'kept'")
        box.click()
        for char in "q01":  # typed slowly, live updates landing in between
            box.send_keys(char)
            time.sleep(0.3)
        wanted = {p for p in players if p.startswith("q01")}
        wait.until(lambda d: set(page_state(d)["rows"]) == wanted)
        browser.execute_script("document.querySelector('tr.lb-row').dataset.mark = 'row'")
        seen = rater.updates
        before = page_state(browser)["rated"]
        wait.until(lambda d: page_state(d)["rated"] != before and rater.updates >= seen + 5)
        now = page_state(browser)
        assert (now["box"], now["text"], now["focused"]) == ("kept", "q01", "search")
        assert set(now["rows"]) == wanted  # still filtered
        # rows were patched, not rebuilt: the marked row element is still in the table
        assert browser.execute_script("return document.querySelectorAll('tr.lb-row[data-mark=\"row\"]').length") == 1
        browser.save_screenshot(str(OUTPUT / "dashboard-live-search.png"))

        # the second page, scrolled down, stays the second page at the same scroll position
        box.clear()
        box.send_keys("\n")
        wait.until(lambda d: len(page_state(d)["rows"]) == 25 and page_state(d)["text"] == "")
        browser.find_element(By.ID, "next").click()
        wait.until(lambda d: d.find_element(By.ID, "page-info").text.startswith("26–50"))
        browser.execute_script("window.scrollTo(0, 300)")
        scroll = page_state(browser)["scroll"]
        assert scroll > 0
        before = page_state(browser)["rated"]
        wait.until(lambda d: page_state(d)["rated"] != before)
        assert browser.find_element(By.ID, "page-info").text.startswith("26–50")
        assert page_state(browser)["scroll"] == scroll

        # pause: nothing is patched while the ladder changes; resume catches up at once
        browser.find_element(By.ID, "pause").click()
        assert browser.find_element(By.ID, "pause").get_attribute("aria-pressed") == "true"
        paused = page_state(browser)
        seen = rater.updates
        wait.until(lambda d: rater.updates >= seen + 8)
        assert page_state(browser)["rated"] == paused["rated"] and page_state(browser)["rows"] == paused["rows"]
        browser.find_element(By.ID, "pause").click()
        wait.until(lambda d: page_state(d)["rated"] != paused["rated"])


def test_rejected_view(redis_url: str, local_stack, fresh_prefix: str, browser: webdriver.Chrome) -> None:
    """The ladder's rejected rounds, read from the dead-letter topic: reason, field, message, when;
    another ladder's dead letters are not shown, a cut original still names its round."""
    from kafka import KafkaProducer

    from stream.contracts import DeadLetter, RoundRejected
    from stream.pipeline.topics import ensure_topics

    seed(redis_url)
    topic = f"{fresh_prefix}rounds-dlq"
    ensure_topics(local_stack.bootstrap, {topic: 2})
    letters = [
        (LADDER, DeadLetter.from_rejection(RoundRejected("conflict", "already used", "round_id"),
                                           json.dumps({"round_id": "r1", "ladder": LADDER}).encode(),
                                           rejected_at=1_800_000_000.0, topic=f"{fresh_prefix}rounds", partition=0, offset=3)),
        ("other", DeadLetter.from_rejection(RoundRejected("schema", "bad"), b"{}", rejected_at=1_800_000_001.0)),
        (LADDER, DeadLetter.from_rejection(RoundRejected("bad_rank", "rank must be >= 1", "standings.1.rank"),
                                           json.dumps({"round_id": "r9", "ladder": LADDER, "standings": []}).encode()[:20],
                                           rejected_at=1_800_000_002.0)),
    ]
    producer = KafkaProducer(bootstrap_servers=local_stack.bootstrap, acks="all")
    for ladder, letter in letters:
        producer.send(topic, key=ladder.encode(), value=letter.to_json().encode(), partition=0).get(WAIT_S)
    producer.close()
    settings = Settings(redis_url=redis_url, kafka_bootstrap=local_stack.bootstrap, topic_prefix=fresh_prefix)
    with ApiThread(settings, host="127.0.0.1", port=free_port(), probe=False) as server:
        browser.get(f"{server.url}/#/l/{LADDER}")
        wait = WebDriverWait(browser, WAIT_S)
        wait.until(lambda d: len(rows(d)) > 0)
        browser.find_element(By.ID, "rejected-link").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.rejected-row")) == 2)
        shown = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                 for tr in browser.find_elements(By.CSS_SELECTOR, "tr.rejected-row")]
        assert shown == [["2027-01-15 08:00", "r9", "bad_rank", "standings.1.rank", "rank must be >= 1"],
                         ["2027-01-15 08:00", "r1", "conflict", "round_id", "already used"]]
        browser.save_screenshot(str(OUTPUT / "dashboard-rejected.png"))


def test_matchup_page(redis_url: str, browser: webdriver.Chrome) -> None:
    """Pick players, see each one's probability of finishing first (bars drawn to the API's figures)
    and expected rank; add a player by typing, remove one."""
    seeded = seed(redis_url)
    ranking = seeded.ranking()
    picked = [ranking[0], ranking[-1], ranking[5]]

    def drawn(d: webdriver.Chrome) -> dict:
        return d.execute_script("""return Object.fromEntries(Array.from(
            document.querySelectorAll('#matchup-chart rect.win-bar'),
            b => [b.dataset.player, [Number(b.dataset.p), Number(b.getAttribute('width'))]]));""")

    def predicted(url: str, players: list[str]) -> dict:
        request = urllib.request.Request(f"{url}/api/ladders/{LADDER}/predict", method="POST",
                                         data=json.dumps({"players": players}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as resp:
            return {p["player"]: p["win_probability"] for p in json.loads(resp.read())["players"]}

    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/#/l/{LADDER}/matchup/" + "/".join(picked))
        wait.until(lambda d: len(drawn(d)) == 3)
        bars = drawn(browser)
        served = predicted(server.url, picked)
        assert {p: v[0] for p, v in bars.items()} == pytest.approx(served)
        assert sum(v[0] for v in bars.values()) == pytest.approx(1.0, abs=1e-6)
        widest = max(bars, key=lambda p: bars[p][1])
        assert widest == max(served, key=served.get) == ranking[0]  # the best player is the favourite
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.matchup-row")) == 3

        box = browser.find_element(By.ID, "matchup-player")
        box.send_keys("newbie\n")  # not rated yet: the newcomer prior
        wait.until(lambda d: len(drawn(d)) == 4)
        assert {p: v[0] for p, v in drawn(browser).items()} == pytest.approx(predicted(server.url, picked + ["newbie"]))
        assert "newbie (unrated)" in browser.find_element(By.ID, "matchup").text
        browser.save_screenshot(str(OUTPUT / "dashboard-matchup.png"))
        browser.find_elements(By.CSS_SELECTOR, "#matchup-players button.remove")[0].click()
        wait.until(lambda d: set(drawn(d)) == set(picked[1:] + ["newbie"]))


def test_rounds_and_rank_over_time(redis_url: str, browser: webdriver.Chrome) -> None:
    """The ladder's rounds-rated-over-time chart and a player's place-and-tier chart draw the API's
    figures: one point per sample, higher counts and better places drawn higher, tiers in the strip."""
    seeded = seed(redis_url, rounds=8)
    OUTPUT.mkdir(exist_ok=True)
    wait = WebDriverWait(browser, WAIT_S)

    def served(url: str) -> dict:
        with urllib.request.urlopen(url) as resp:
            return json.loads(resp.read())  # type: ignore[no-any-return]

    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/?live=off#/l/{LADDER}")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rounds-chart circle.rounds-point")) == 8)
        drawn = browser.execute_script("""
            return Array.from(document.querySelectorAll('#rounds-chart circle.rounds-point'),
                c => [Number(c.dataset.rounds), c.dataset.round,
                      Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]);""")
        activity = served(f"{server.url}/api/ladders/{LADDER}/activity?points=60")
        assert [(n, r) for n, r, _, _ in drawn] == [(p["rounds"], p["round_id"]) for p in activity["points"]]
        assert [r for _, r, _, _ in drawn] == seeded.rounds
        xs, ys = [x for *_, x, _ in drawn], [y for *_, y in drawn]
        assert xs == sorted(xs) and xs[0] < xs[-1]  # rated one day apart: later to the right
        assert ys == sorted(ys, reverse=True) and ys[0] > ys[-1]  # more rounds: higher
        line = browser.find_element(By.ID, "rounds-line").get_attribute("points")
        assert line is not None and len(line.split()) == 8
        browser.execute_script("document.getElementById('rounds-chart').scrollIntoView()")
        browser.save_screenshot(str(OUTPUT / "dashboard-rounds-over-time.png"))

        # the player who played most rounds and moved most on the leaderboard
        def moves(p: str) -> tuple[int, int]:
            places = [q["position"] for q in served(f"{server.url}/api/ladders/{LADDER}/players/{p}/ranks")["points"]]
            return len(places), len(set(places))
        player = max(sorted(seeded.display)[:12], key=moves)  # ids without URL-special characters
        timeline = served(f"{server.url}/api/ladders/{LADDER}/players/{player}/ranks?history=200")
        assert len(set(p["position"] for p in timeline["points"])) > 1  # the picture has something to show
        browser.get(f"{server.url}/?live=off#/l/{LADDER}/p/{player}")
        n = len(timeline["points"])
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rank-chart circle.rank-point")) == n)
        points = browser.execute_script("""
            return Array.from(document.querySelectorAll('#rank-chart circle.rank-point'),
                c => [Number(c.dataset.position), c.dataset.tier, Number(c.getAttribute('cy'))]);""")
        strip = browser.execute_script("""
            return Array.from(document.querySelectorAll('#rank-chart rect.tier-seg'),
                r => [r.dataset.tier, r.getAttribute('class'), Number(r.getAttribute('width'))]);""")
        assert [pos for pos, _, _ in points] == [p["position"] for p in timeline["points"]]
        assert [tier for _, tier, _ in points] == [p["tier"] or "" for p in timeline["points"]]
        best = min(range(n), key=lambda i: points[i][0])
        worst = max(range(n), key=lambda i: points[i][0])
        assert points[best][2] == min(cy for *_, cy in points) < points[worst][2]  # a better place is drawn higher
        assert [t for t, _, _ in strip] == [p["tier"] or "" for p in timeline["points"]]
        for tier, cls, width in strip:
            level = timeline["tiers"].index(tier) % 4 if tier else "none"
            assert f"tier-level-{level}" in cls and width > 0
        assert len(browser.find_element(By.ID, "rank-line").get_attribute("points").split()) == n
        browser.execute_script("document.getElementById('rank-chart').scrollIntoView()")
        browser.save_screenshot(str(OUTPUT / "dashboard-rank-over-time.png"))


def test_round_page_shows_teams_and_shares(redis_url: str, browser: webdriver.Chrome) -> None:
    """A round of teams with partial play (its results as phase two stores them): the round page
    lists every player with his team, members of a team together, and a share below 1 beside
    the player's name."""
    from stream.contracts import RatingChange

    seed(redis_url)
    r = redis.Redis.from_url(redis_url)
    given = [("ann", "red", 1.0, 1), ("cy", "blue", 1.0, 2), ("bob", "red", 0.5, 1), ("dee", "blue", 1.0, 2)]
    r.hset(keys.round_record(LADDER, "team-round"), mapping={"status": "rated", "field_size": 4, "seq": 99,
                                                               "occurred_at": "1700000000.0"})
    r.hset(keys.round_results(LADDER, "team-round"), mapping={player: RatingChange(
        LADDER, "team-round", player, rank, 4, 1500.0, 1500.0, 300.0, 1510.0, 290.0, 930.0, None, 1, 1.7e9,
        team=team, weight=share).to_json() for player, team, share, rank in given})
    wait = WebDriverWait(browser, WAIT_S)
    with ApiServer(redis_url) as server:
        browser.get(f"{server.url}/?live=off#/l/{LADDER}/r/team-round")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.round-row")) == 4)
        shown = browser.execute_script(
            "return Array.from(document.querySelectorAll('tr.round-row'), "
            "r => Array.from(r.children, td => td.textContent).slice(0, 3))")
        OUTPUT.mkdir(exist_ok=True)
        browser.save_screenshot(str(OUTPUT / "dashboard-team-round.png"))
    assert shown == [["1", "red", "ann"], ["1", "red", "bob (played 50%)"], ["2", "blue", "cy"], ["2", "blue", "dee"]]


def test_matchup_page_teams(redis_url: str, browser: webdriver.Chrome) -> None:
    """Build two teams on the match-up page (switch to teams, move players between teams, a share
    played, a draw margin): the bars and the outcome bar draw the API's team prediction and the
    table its expected ranks; on a ladder rated by a rating-only model the page shows the API's
    ``teams_unsupported`` message."""
    from readside_data import OTHER_LADDER

    seeded = seed(redis_url)
    seed(redis_url, ladder=OTHER_LADDER)
    ranking = seeded.ranking()
    strong, weak = ranking[:2], ranking[-2:]
    settings = Settings(redis_url=redis_url, ladders=json.dumps({OTHER_LADDER: {"model": "glicko"}}))

    def drawn(d: webdriver.Chrome) -> dict:
        return d.execute_script("""
            const svg = document.getElementById('matchup-chart');
            if (!svg) return {bars: {}, outcomes: [], rows: []};
            return {bars: Object.fromEntries(Array.from(svg.querySelectorAll('rect.win-bar'),
                        b => [b.dataset.team, Number(b.dataset.p)])),
                    outcomes: Array.from(svg.querySelectorAll('rect.outcome'),
                        r => [r.dataset.outcome, Number(r.dataset.p), Number(r.getAttribute('width'))]),
                    rows: Array.from(document.querySelectorAll('tr.matchup-row'),
                        r => Array.from(r.children, td => td.textContent))};""")

    def predicted(url: str, ladder: str, body: dict) -> tuple[int, dict]:
        request = urllib.request.Request(f"{url}/api/ladders/{ladder}/predict", method="POST",
                                         data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def picks(d: webdriver.Chrome) -> dict:
        """player -> [team, share] as the picked list shows them."""
        return d.execute_script("""return Object.fromEntries(Array.from(
            document.querySelectorAll('#matchup-players li'), li => [li.firstChild.textContent,
                [li.querySelector('select.team')?.value, li.querySelector('input.share')?.value]]));""")

    def rebuilt(d: webdriver.Chrome, expected: dict) -> bool:
        """The view built for the new URL (not the old one, unmarked) shows ``expected`` and its bars."""
        return (not d.find_element(By.ID, "matchup-players").get_attribute("data-old") and picks(d) == expected
                and len(drawn(d)["bars"]) > 0)

    def change(d: webdriver.Chrome, act: Callable[[], object], expected: dict) -> None:
        """``act`` (it changes the URL, so the view is rebuilt), then wait for the new view."""
        d.execute_script("document.getElementById('matchup-players').dataset.old = '1'")
        act()
        wait.until(lambda d: rebuilt(d, expected))

    def pick(d: webdriver.Chrome, player: str) -> webdriver.remote.webelement.WebElement:
        return d.find_element(By.CSS_SELECTOR, f"#matchup-players li[data-key='{player}']")

    wait = WebDriverWait(browser, WAIT_S, ignored_exceptions=[StaleElementReferenceException])  # a pick rebuilds the view
    with ApiThread(settings, host="127.0.0.1", port=free_port(), probe=False) as server:
        players = [strong[0], weak[0], strong[1], weak[1]]
        browser.get(f"{server.url}/?live=off#/l/{LADDER}/matchup/" + "/".join(players))
        wait.until(lambda d: len(drawn(d)["rows"]) == 4)  # players mode first
        browser.find_element(By.ID, "matchup-teams-mode").click()  # teams, alternating: A = strong[0], strong[1]
        wait.until(lambda d: set(drawn(d)["bars"]) == {"A", "B"})
        assert picks(browser) == {strong[0]: ["A", "1"], weak[0]: ["B", "1"], strong[1]: ["A", "1"], weak[1]: ["B", "1"]}
        teams = {strong[0]: ["A", "1"], weak[0]: ["B", "1"], strong[1]: ["A", "1"], weak[1]: ["B", "1"]}
        team = Select(pick(browser, strong[1]).find_element(By.CSS_SELECTOR, "select.team"))
        change(browser, lambda: team.select_by_value("B"), {**teams, strong[1]: ["B", "1"]})
        team = Select(pick(browser, strong[1]).find_element(By.CSS_SELECTOR, "select.team"))
        change(browser, lambda: team.select_by_value("A"), teams)
        share = pick(browser, weak[1]).find_element(By.CSS_SELECTOR, "input.share")
        share.clear()
        change(browser, lambda: share.send_keys("0.5\t"), {**teams, weak[1]: ["B", "0.5"]})
        margin = browser.find_element(By.ID, "matchup-margin")
        margin.clear()
        change(browser, lambda: margin.send_keys("50\t"), {**teams, weak[1]: ["B", "0.5"]})
        wait.until(lambda d: len(drawn(d)["outcomes"]) == 3 and "draw=50" in d.current_url)

        status, served = predicted(server.url, LADDER, {
            "teams": [strong, [weak[0], {"player": weak[1], "weight": 0.5}]], "draw_margin": 50})
        assert status == 200
        shown = drawn(browser)
        assert shown["bars"] == pytest.approx({"A": served["teams"][0]["win_probability"],
                                               "B": served["teams"][1]["win_probability"]})
        outcomes = {o: p for o, p, _ in shown["outcomes"]}
        assert outcomes == pytest.approx({"first": served["first_wins"], "draw": served["draw_probability"],
                                          "second": served["second_wins"]})
        assert outcomes["draw"] > 0 and outcomes["first"] > outcomes["second"]  # the strong team is the favourite
        widths = {o: w for o, _, w in shown["outcomes"]}
        assert sum(widths.values()) == pytest.approx(880 - 160 - 16, abs=1e-3)
        assert widths["first"] > widths["second"]
        assert [row[0] for row in shown["rows"]] == ["A", "B"]
        assert [row[4] for row in shown["rows"]] == [f"{t['expected_rank']:.2f}" for t in served["teams"]]
        assert shown["rows"][1][1] == f"{weak[0]}, {weak[1]} (50%)"
        info = browser.find_element(By.ID, "matchup-info").text
        assert f"draw {100 * served['draw_probability']:.1f} %" in info
        OUTPUT.mkdir(exist_ok=True)
        browser.save_screenshot(str(OUTPUT / "dashboard-matchup-teams.png"))

        # back to players: the players' own prediction
        browser.find_element(By.ID, "matchup-teams-mode").click()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#matchup-chart rect.outcome")
                   and len(drawn(d)["rows"]) == 4 and len(drawn(d)["rows"][0]) == 4)

        # a rating-only ladder answers teams with teams_unsupported: the page says so
        status, refused = predicted(server.url, OTHER_LADDER, {"teams": [["p00"], ["p01"]]})
        assert status == 400 and refused["error"] == "teams_unsupported"
        browser.get(f"{server.url}/?live=off#/l/{OTHER_LADDER}/matchup/p00;A;1/p01;B;1")
        wait.until(lambda d: d.find_element(By.ID, "matchup-name").text == f"Match-up in {OTHER_LADDER}"
                   and d.find_element(By.ID, "matchup-info").text == refused["message"])
        assert not browser.find_elements(By.CSS_SELECTOR, "#matchup-chart rect")
