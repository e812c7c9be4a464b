"""The Compare tab against the Attention tab, in headless Chromium, in the same run:

    python -m tools.bench --compare [--rounds 3] [--save FILE]

Starts `python app.py` (tools.serve.AppProcess) and, in a fresh page at desktop width each round, once the page's
first translation is shown: opens the Attention tab (its one-head map drawn for that sentence), moves its head
(the map redrawn), then opens the Compare tab, runs its lesson (the shipped model at epoch 1 against the trained
one: both models run, both translations and their scores drawn; the maps further down are drawn as they come near),
moves its head (A's and B's maps, side by side, redrawn from the kept result), and
runs the patching grid of its two sentences. Each time is taken inside the page, from the click to the first
animation frame where the figures show the new drawing; each figure is the median over the rounds. The model's
own time for the lesson's comparison and the patching grid (core.analysis, called in this process) is printed
beside them.
"""
import json
import re
import statistics
import time

from tools.bench_browser import CHROMIUM

TIMEOUT_MS = 120_000

# time from running `act` to the first animation frame where `done` holds (both JavaScript, `done` an expression)
TIMED = """async ([act, done, timeout]) => {
  const t0 = performance.now();
  new Function(act)();
  for (;;) {
    await new Promise(r => requestAnimationFrame(r));
    if (new Function(`return (${done})`)()) return performance.now() - t0;
    if (performance.now() - t0 > timeout) return -1;
  }
}"""


def _title(elem_id):
    return f"(document.querySelector('#{elem_id} .gtitle')?.textContent || '').replace(/ /g, '')"


def _timed(page, act, done):
    """ms from running the JavaScript `act` (or, given a Playwright locator, clicking it as a reader does) to the
    first animation frame where `done` holds."""
    if not isinstance(act, str):
        page.evaluate("() => { window.__t0 = performance.now(); }")
        act.click()
        act = ""
    ms = page.evaluate(TIMED, [act, done, TIMEOUT_MS])
    if ms >= 0 and act == "":
        ms = page.evaluate("() => performance.now() - window.__t0")
    if ms < 0:
        raise RuntimeError(f"not within {TIMEOUT_MS // 1000} s: {done}")
    return ms


def _option(page, value):
    """The option `value` of the menu that is open."""
    return page.locator("[role=option]").filter(has_text=re.compile(rf"^\W*{value}\s*$"))


def one_round(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{url}?lang=en")
        click = "document.querySelector('[role=tab][data-tab-id=%s]').click()"
        page.wait_for_selector("[role=tab][data-tab-id=translate]", timeout=TIMEOUT_MS)
        page.evaluate(click % "translate")  # the page's first translation shown there
        page.wait_for_function("() => (document.querySelector('#out textarea')?.value || '').length > 0",
                               timeout=TIMEOUT_MS)
        out = {}
        out["attention_open"] = _timed(page, click % "attention", f"{_title('heatmap')}.includes('head0')")
        page.locator("#head input").click()
        out["attention_head"] = _timed(page, _option(page, 3), f"{_title('heatmap')}.includes('head3')")
        page.wait_for_timeout(300)
        page.evaluate(click % "compare")
        page.wait_for_selector("#cmp-lesson", timeout=TIMEOUT_MS)
        # the first screen: both translations and the scores drawn (the maps below are drawn as they come near)
        out["compare_lesson"] = _timed(page, "document.querySelector('#cmp-lesson').click()",
                                       "document.querySelector('#cmp-table .cmp-translation') !== null && "
                                       f"{_title('cmp-scores')}.length > 0")
        page.locator("#cmp-map-a").scroll_into_view_if_needed()
        page.wait_for_function(f"() => {_title('cmp-map-a')}.includes('epoch1') && {_title('cmp-map-b')}.length > 0",
                               timeout=TIMEOUT_MS)
        page.locator("#cmp-head").scroll_into_view_if_needed()
        page.locator("#cmp-head input").click()
        out["compare_head"] = _timed(page, _option(page, 3),
                                     f"{_title('cmp-map-a')}.includes('head3') && {_title('cmp-map-b')}.includes('head3')")
        page.evaluate(click % "sentences")
        page.wait_for_selector("#cmp-patch", timeout=TIMEOUT_MS)
        out["compare_patch"] = _timed(page, "document.querySelector('#cmp-patch').click()",
                                      "[...document.querySelectorAll('#cmp-grid .xtick')].some(t => t.textContent.includes('★'))")
        return out
    finally:
        page.close()


def model_times(repeat=3):
    """The model's own time, in this process, for the lesson's comparison and the default patching grid (ms)."""
    from app.models import MODELS
    from app.shared import examples
    from app.tabs.compare import _lesson_pair, edited_default
    from core.analysis.compare import compare
    from core.analysis.patching import patch_grid
    a, b = (MODELS.get(n) for n in _lesson_pair())
    text = examples()[0]
    edited = edited_default(text, b.tokenizer)
    out = {}
    for name, fn in (("compare_model", lambda: compare(a, b, text)), ("patch_model", lambda: patch_grid(b, text, edited))):
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        out[name] = statistics.median(times)
    return out


ROWS = [("attention_open", "Attention tab opened (one head drawn)"), ("attention_head", "Attention: head moved"),
        ("compare_lesson", "Compare: lesson run (two models; translations, scores drawn)"),
        ("compare_head", "Compare: head moved (A's and B's maps redrawn)"),
        ("compare_patch", "Compare: patching grid run and drawn"),
        ("compare_model", "  the comparison alone, in Python"), ("patch_model", "  the patching grid alone, in Python")]


def run(rounds=3, save=None):
    from playwright.sync_api import sync_playwright

    from tools.serve import AppProcess
    results = []
    with AppProcess() as app, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            for _ in range(rounds):
                results.append(one_round(browser, app.url))
        finally:
            browser.close()
    figures = {k: statistics.median(r[k] for r in results) for k in results[0]}
    figures.update(model_times())
    for key, label in ROWS:
        print(f"{label:55s} {figures[key]:8.0f} ms")
    print(f"{'Compare lesson / Attention opening':55s} {figures['compare_lesson'] / figures['attention_open']:8.2f} x")
    print(f"{'Compare head / Attention head':55s} {figures['compare_head'] / figures['attention_head']:8.2f} x")
    print(json.dumps({f"compare_{k}" if not k.startswith("compare") else k: round(v, 1) for k, v in figures.items()}))
    if save:
        with open(save, "w") as f:
            json.dump(figures, f, indent=1)
    return figures
