"""End to end in a real headless Chromium against `streamlit run` on a loopback port."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragstream.settings import Settings
from tests.servers import free_port, wait_for_http

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "ragstream" / "app" / "ui_streamlit.py"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROMPT = "# Task\nExplain how excerpts are fenced and how the A4 pause works.\n# Format\nbullet list"  # keeps 2+ chunks


@pytest.fixture()
def streamlit_url(indexed: Settings, tmp_path: Path):
    port = free_port()
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(indexed.data_dir), "RAGSTREAM_LLM_PROVIDER": "local"}
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(APP),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for_http(f"{url}/_stcore/health", proc, 120, tmp_path / "streamlit.log")
    yield url
    proc.terminate()
    proc.wait(timeout=20)


LAPTOP = {"width": 1366, "height": 768}  # a common laptop window
# Debian's Chromium as root on a closed network: no sandbox, and no background calls that would be refused.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
OVERFLOWING = "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_review_form_at_laptop_width_in_a_real_browser(streamlit_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=LAPTOP)
        page.set_default_timeout(180_000)
        page.goto(streamlit_url)
        prompt = page.get_by_label("Prompt", exact=True)
        prompt.fill(PROMPT)
        prompt.press("Control+Enter")
        # While Streamlit reruns, the previous run's buttons may still be on the page beside the new ones.
        expect(page.get_by_role("button", name="Prompt Builder").first).to_be_visible()
        labels = page.locator("[data-testid='stBaseButton-secondary'] p").evaluate_all(OVERFLOWING)
        assert labels == []  # every stage button shows its whole label
        # While Streamlit reruns after the prompt was sent, the old (disabled) button can still be on the page.
        page.get_by_role("button", name="Run all", disabled=False).click()
        review = page.get_by_label("Condensed context (editable)")
        expect(review).to_be_visible(timeout=180_000)
        boxes = page.locator("label:has(input[type='checkbox']:not([role='switch']))")  # the keep boxes
        assert boxes.count() > 1
        boxes.first.click()  # untick the first chunk
        expect(boxes.first.locator("input")).not_to_be_checked()
        assert page.locator("h1").count() == 1  # only the title: document previews show as text, never as Markdown
        boxes.first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "review.png"))
        review.fill("### Facts\n- EDITED IN A REAL BROWSER")
        review.press("Control+Enter")
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_text("SuperPrompt - stage: built")).to_be_visible(timeout=180_000)
        code = page.locator("[data-testid='stCode'] pre").first
        final = code.inner_text()
        wrapped = code.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        page.get_by_text("## Source excerpts").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "final_prompt.png"))
        browser.close()
    shots = os.environ.get("RAGSTREAM_SCREENSHOTS")
    if shots:  # keep them to look at
        for name in ("review.png", "final_prompt.png"):
            shutil.copy(tmp_path / name, Path(shots) / name)
    assert wrapped  # the final prompt box wraps its long lines at laptop width
    assert "EDITED IN A REAL BROWSER" in final and 'excerpt source="' in final
    assert (tmp_path / "final_prompt.png").stat().st_size > 10_000


NARROW = {"width": 480, "height": 900}  # a phone held upright, or a window beside an editor


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_at_a_narrow_width_every_button_label_shows_and_off_buttons_say_why(streamlit_url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=NARROW)
        page.set_default_timeout(180_000)
        page.goto(streamlit_url)
        expect(page.get_by_text("Type a prompt above to enable PreProcessing")).to_be_visible(timeout=180_000)
        assert page.get_by_role("button", name="A3 NLI Gate").is_disabled()
        prompt = page.get_by_label("Prompt", exact=True)
        prompt.fill(PROMPT)
        prompt.press("Control+Enter")
        # The rerun's old (disabled) button may still be on the page beside the new one.
        expect(page.get_by_role("button", name="PreProcessing", disabled=False)).to_be_visible()
        main = page.locator("[data-testid='stMain']")  # the sidebar is folded away at this width
        labels = main.locator("[data-testid='stBaseButton-secondary'] p").evaluate_all(OVERFLOWING)
        shown = main.locator("[data-testid='stBaseButton-secondary'] p").count()
        browser.close()
    assert shown >= 8  # the stage buttons were looked at
    assert labels == []
