"""The issue's scenario for real: `stream stack --demo` rates its demo stream while someone types
into the dashboard's search box in Chromium; the text, the focus and the filter hold while the
rounds-rated card keeps moving."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from e2e.test_dashboard import OUTPUT, WAIT_S, browser, page_state  # noqa: F401 - browser is a fixture
from stack.test_stack_cli import start_stack, stop_stack
from stream.stack.ports import free_port, wait_for_port

pytestmark = pytest.mark.integration


def test_typing_a_search_while_the_demo_stream_is_rated(tmp_path: Path, browser) -> None:  # noqa: F811
    port = free_port()
    proc, _ = start_stack(tmp_path / "stack.json", "--demo", "--demo-rate", "15", "--demo-rounds", "400",
                          "--web-port", str(port))
    try:
        wait = WebDriverWait(browser, 60)
        wait_for_port(port, timeout_s=60)  # the demo's worker serves the dashboard once it runs
        browser.get(f"http://127.0.0.1:{port}/")
        wait.until(lambda d: len(page_state(d)["rows"]) == 25)
        wait.until(lambda d: "on" in (d.find_element(By.ID, "live").get_attribute("class") or ""))
        box = browser.find_element(By.ID, "search")
        box.click()
        rated_before = int(page_state(browser)["rated"])
        for char in "p1":
            box.send_keys(char)
            time.sleep(0.4)
        # the demo's players are p000..p199: the filter shows p1xx only, and it keeps doing so
        wait.until(lambda d: d.find_element(By.ID, "page-info").text.endswith("of 100")
                   and all(p.startswith("p1") for p in page_state(d)["rows"]))
        for _ in range(3):
            rated = int(page_state(browser)["rated"])
            wait.until(lambda d: int(page_state(d)["rated"]) > rated)  # live updates keep landing
            now = page_state(browser)
            assert (now["text"], now["focused"]) == ("p1", "search")
            assert len(now["rows"]) == 25 and all(p.startswith("p1") for p in now["rows"])
        assert int(page_state(browser)["rated"]) > rated_before
        browser.save_screenshot(str(OUTPUT / "dashboard-demo-search.png"))
    finally:
        text = stop_stack(proc, group=True)
    assert proc.returncode == 0, text
