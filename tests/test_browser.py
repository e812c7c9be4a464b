"""The real app in headless Chromium: `python app.py` on a free port, driven by Playwright.

Needs Debian's chromium at /usr/bin/chromium (scripts/install.sh --dev installs it) and the shipped model.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT, needs_shipped

CHROMIUM = "/usr/bin/chromium"
APP_LOG = {}  # the app's log file, for failure messages
pytestmark = [needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = APP_LOG["path"] = tmp_path_factory.mktemp("app") / "app.log"
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited: {log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError(f"app.py did not serve within 120 s: {log.read_text()[-3000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(server, browser, tmp_path_factory):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.requests, page.errors, page.events = [], [], []
    page.shots = tmp_path_factory.mktemp("screenshots")
    page.on("request", lambda r: page.requests.append(r.url))
    # every event the page sends to the server (which function, with what inputs), for failure messages
    page.on("request", lambda r: page.events.append(event_line(r)) if "queue/join" in r.url else None)
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(server)
    page.wait_for_selector("#diagram svg")
    # the first translation runs on load: its shapes reach the diagram (no "S" placeholders left)
    page.wait_for_function("() => /memory 1 × \\d+ × \\d+/.test(document.querySelector('#diagram').textContent)",
                           timeout=60000)
    shot(page, "overview")
    yield page
    page.close()


def event_line(request):
    try:
        body = json.loads(request.post_data or "{}")
    except ValueError:
        body = {}
    return f"{time.strftime('%X')} fn {body.get('fn_index')}: {str(body.get('data'))[:80]}"


def shot(page, name):
    page.screenshot(path=str(page.shots / f"{name}.png"), full_page=True)


def open_tab(page, name):
    page.get_by_role("tab", name=name, exact=True).click()
    page.wait_for_timeout(300)


def set_number(page, elem_id, value):
    """Type into the number box of a Gradio slider and commit it."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def wait_settled(page, elem_id):
    """Wait until no event that writes to this component is pending (its status tracker is hidden again).

    Gradio applies an event's outputs one property at a time, each behind an await, and marks the event
    complete only after all of them; a value typed before then can be overwritten by the event's own."""
    page.wait_for_function(f"() => document.querySelector('#{elem_id} [data-testid=status-tracker]')"
                           "?.classList.contains('hide')")


def diagnostics(page):
    """What the page and the server were doing, for a failure message."""
    state = page.evaluate("""() => { const s = document.querySelector('#step');
        return {box: s?.querySelector('input[type=number]')?.value, label: s?.querySelector('label')?.innerText,
                trackers: [...document.querySelectorAll('[data-testid=status-tracker]:not(.hide)')]
                          .map(t => t.closest('[id]')?.id + ': ' + t.innerText.slice(0, 40)),
                steps_shown: document.body.innerText.match(/Step \\d+: next-token/g),
                tokens: [...document.querySelectorAll('#token-probs')].map(e => e.innerText.slice(0, 60)),
                toasts: [...document.querySelectorAll('.toast-body')].map(t => t.innerText.slice(0, 200))}; }""")
    log = APP_LOG["path"].read_text(errors="replace")[-2500:] if APP_LOG.get("path") else ""
    return (f"page: {state}\nconsole errors: {page.errors[-5:]}\nlast events sent: {page.events[-6:]}\n"
            f"app log (end):\n{log}")


def wait_text(page, text, timeout=30000):
    """Wait until the page shows `text`; on timeout, fail with what the page and the server were doing."""
    try:
        page.wait_for_function(f"() => document.body.innerText.includes({text!r})", timeout=timeout)
    except Exception as e:
        raise AssertionError(f"{text!r} not shown within {timeout / 1000:.0f} s ({e.__class__.__name__})\n"
                             + diagnostics(page)) from None


def plot_text(page, elem_id):
    return page.locator(f"#{elem_id} .js-plotly-plot").first.inner_text()


def wait_change(page, fn, before, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = fn()
        if now != before:
            return now
        page.wait_for_timeout(250)
    raise AssertionError(f"nothing changed within {timeout} s (still {before[:200]!r})")


def test_translate_and_step_replay(page):
    open_tab(page, "Translate")  # tabs render when first opened
    page.wait_for_function("() => document.querySelector('#status')?.innerText.includes('ms on the server')")
    page.locator("#src textarea").fill("Zwei Hunde spielen im Schnee.")
    before = page.locator("#out textarea").input_value()
    page.locator("#translate-btn").click()
    # the translation is done when the English box holds a new text (the status line is no signal: while
    # the event runs, its progress text shows inside it) and the event has completed
    english = wait_change(page, lambda: page.locator("#out textarea").input_value(), before)
    wait_settled(page, "out")
    assert re.search(r"[A-Za-z]", english)
    # the rendering event runs after the translation: wait until it shows the new sentence's tokens and
    # has finished (it also resets the step slider to 1, so the step is set after it)
    word = re.findall(r"[A-Za-z]+", english)[-1]
    page.wait_for_function(f"() => document.querySelector('#token-probs')?.innerText.includes({word!r})")
    wait_settled(page, "step")
    n = page.locator("#token-probs .tok").count()
    assert n >= 3
    box = page.locator("#step input[type=number]")
    assert box.input_value() == "1"
    assert f"(1 to {n})" in page.locator("#step label").inner_text()
    wait_text(page, "Step 1: next-token candidates")
    # the buttons move the replay one step at a time, and the slider follows
    page.locator("#step-next").click()
    wait_text(page, "Step 2: next-token candidates")
    page.locator("#step-next").click()
    wait_text(page, "Step 3: next-token candidates")
    assert box.input_value() == "3"
    page.locator("#step-prev").click()
    wait_text(page, "Step 2: next-token candidates")
    assert box.input_value() == "2"
    wait_settled(page, "step")
    # a step typed into the slider's box: the last one, where the decoder chose the end of the sentence
    set_number(page, "step", n)
    wait_text(page, f"Step {n}: next-token candidates")
    assert "&lt;/s&gt;" in page.locator(".step code.chosen").inner_html()
    shot(page, "translate")


def test_attention_heatmap_and_bertviz_render(page):
    open_tab(page, "Attention")
    page.wait_for_selector("#heatmap .js-plotly-plot svg")
    # the maps of the sentence translated in the Translate tab, with its tokens on the axes
    page.wait_for_function("() => document.querySelector('#heatmap').innerText.includes('Hunde')")
    wait_settled(page, "heatmap")
    page.get_by_role("radio", name="Cross-attention (decoder → encoder)").check()
    page.wait_for_function("() => document.querySelector('#heatmap').innerText.includes('Cross-attention')")
    shot(page, "attention")
    open_tab(page, "bertviz head view")
    frame = page.frame_locator("#bertviz-head iframe")
    frame.locator("svg text").first.wait_for(timeout=20000)
    texts = frame.locator("svg text").all_text_contents()
    assert any("Hunde" in t for t in texts)
    shot(page, "bertviz_head")
    open_tab(page, "bertviz model view")
    frame = page.frame_locator("#bertviz-model iframe")
    frame.locator("svg").first.wait_for(timeout=20000)
    assert frame.locator("svg").count() >= 1
    shot(page, "bertviz_model")


def test_masks_tab_reacts(page):
    open_tab(page, "Masks")
    page.wait_for_selector("#m-masks .js-plotly-plot svg")
    before = plot_text(page, "m-masks")
    set_number(page, "m-sent", 2)
    wait_change(page, lambda: plot_text(page, "m-masks"), before)
    assert "Showing sentence 2" in page.locator("#m-summary").inner_text()
    page.locator("#m-en textarea").fill("A dog.")
    page.wait_for_function("() => document.querySelector('#m-summary').innerText.includes('German lines but')")
    shot(page, "masks")


def test_positional_tab_reacts(page):
    open_tab(page, "Positional encoding")
    page.wait_for_selector("#pe-curves .js-plotly-plot svg")
    before = plot_text(page, "pe-curves")
    page.locator("#pe-dims textarea").fill("10, 11")
    page.locator("#pe-dims textarea").press("Enter")
    after = wait_change(page, lambda: plot_text(page, "pe-curves"), before)
    assert "dim 10" in after and "dim 4" not in after
    shot(page, "positional")


def test_replay_plays(page):
    open_tab(page, "Training replay")
    page.wait_for_selector("#r-fig .js-plotly-plot svg")
    set_number(page, "r-step", 1)
    page.wait_for_function("() => /step 1 of/.test(document.querySelector('#r-fig').innerText)")
    page.locator("#play").click()
    title = lambda: re.search(r"step (\d+) of", plot_text(page, "r-fig")).group(1)
    wait_change(page, title, "1")
    page.wait_for_timeout(1500)
    assert int(title()) > 1
    page.locator("#play").click()  # pause
    before = plot_text(page, "ls-fig")
    set_number(page, "ls-eps", 0.3)
    assert "0.3" in wait_change(page, lambda: plot_text(page, "ls-fig"), before)
    shot(page, "replay")


def test_overview_blocks_open_tabs(page):
    open_tab(page, "Overview")
    page.locator('#diagram [data-tab="Positional encoding"]').first.click()
    page.wait_for_function("() => document.querySelector('[role=tab][aria-selected=true]')"
                           "?.textContent.trim() === 'Positional encoding'")


def test_nothing_left_localhost_and_no_console_errors(page, server):
    host = server.rstrip("/")
    outside = [u for u in page.requests if not (u.startswith(host) or u.startswith(("data:", "blob:", "about:")))]
    assert outside == []
    assert page.errors == []


def test_translate_api_endpoint(server):
    client_mod = pytest.importorskip("gradio_client")
    client = client_mod.Client(server, verbose=False)
    result = client.predict("Eine Frau liest ein Buch.", "greedy", 4, 0.6, 1.0, 10, 100, api_name="/translate")
    assert isinstance(result, (list, tuple)) and re.search(r"[A-Za-z]", result[0])
    empty = client.predict("", "greedy", 4, 0.6, 1.0, 10, 100, api_name="/translate")
    assert empty[0] == "" and "Type a German sentence" in empty[1]
