"""The Compare tab against the Attention tab, in headless Chromium, in the same run:

    python -m tools.bench --compare [--rounds 3] [--save FILE]
    python -m tools.bench_compare [--rounds 3] [--against URL]   (URL: another version of the app, served apart,
                                                                  measured in the same rounds, one after the other)

Starts `python app.py` (tools.serve.AppProcess) and, in a fresh page at desktop width each round, once the page's
first translation is shown: opens the Attention tab (its one-head map drawn for that sentence), moves its head
(the map redrawn), then opens the Compare tab, runs its lesson (the shipped model at epoch 1 against the trained
one: both models run, both translations and their scores drawn; the maps further down are drawn as they come near),
moves its head (A's map, B's and A - B redrawn from the kept result: one figure, or, in a version before it,
three plots of which the first two), and
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


def _words(elem_id):
    """A plot's title and annotations (the maps' panel titles), spaces dropped (JavaScript)."""
    return (f"[...document.querySelectorAll('#{elem_id} .gtitle, #{elem_id} .annotation-text')]"
            ".map(t => t.textContent).join(' ').replace(/ /g, '')")


def _maps_say(word, b=True):
    """JavaScript: the Compare tab's maps show `word`: in its one figure (#cmp-maps), or, in a version before it,
    in A's plot and (`b`) in B's."""
    old = f"{_words('cmp-map-a')}.includes('{word}')" + (f" && {_words('cmp-map-b')}.includes('{word}')" if b else "")
    return f"(document.querySelector('#cmp-maps') ? {_words('cmp-maps')}.includes('{word}') : {old})"


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


MOVES = (3, 5, 2)  # the heads a round moves to, in each tab


def _moves(page, menu, done):
    """The median ms of moving the head menu `menu` to each of MOVES, from the click on the option to the first
    frame where `done(head)` (JavaScript) holds."""
    times = []
    for h in MOVES:
        page.locator(f"{menu} input").click()
        times.append(_timed(page, _option(page, h), done(h)))
        page.wait_for_timeout(300)  # the page's own work after a drawing (a resize, the address) left out
    return statistics.median(times)


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
        out["attention_head"] = _moves(page, "#head", lambda h: f"{_title('heatmap')}.includes('head{h}')")
        page.wait_for_timeout(300)
        page.evaluate(click % "compare")
        page.wait_for_selector("#cmp-lesson", timeout=TIMEOUT_MS)
        # the first screen: both translations and the scores drawn (the maps below are drawn as they come near)
        out["compare_lesson"] = _timed(page, "document.querySelector('#cmp-lesson').click()",
                                       "document.querySelector('#cmp-table .cmp-translation') !== null && "
                                       f"{_title('cmp-scores')}.length > 0")
        page.locator("#cmp-maps, #cmp-map-a").first.scroll_into_view_if_needed()
        page.wait_for_function(f"() => {_maps_say('epoch1', b=False)}", timeout=TIMEOUT_MS)
        page.locator("#cmp-head").scroll_into_view_if_needed()
        out["compare_head"] = _moves(page, "#cmp-head", lambda h: _maps_say(f"head{h}"))
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


def _rounds(urls, rounds):
    """{url: [one_round's figures, ...]}: `rounds` fresh pages on each server, the servers taken in turn."""
    from playwright.sync_api import sync_playwright
    results = {url: [] for url in urls}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            for _ in range(rounds):
                for url in urls:
                    results[url].append(one_round(browser, url))
        finally:
            browser.close()
    return {url: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for url, rs in results.items()}


def _report(figures, against=None):
    """The table: this version's figures, and beside them those of the version `against` serves, if given."""
    both = against is not None
    print(f"{'':55s} {'ms':>8s}" + (f" {'against':>8s}" if both else ""))
    for key, label in ROWS:
        if key in figures:
            print(f"{label:55s} {figures[key]:8.0f}" + (f" {against[key]:8.0f}" if both and key in against else ""))
    for what, a, b in (("Compare lesson / Attention opening", "compare_lesson", "attention_open"),
                       ("Compare head / Attention head", "compare_head", "attention_head")):
        print(f"{what:55s} {figures[a] / figures[b]:8.2f}" + (f" {against[a] / against[b]:8.2f}" if both else "") + " x")


def run(rounds=3, save=None, against=None):
    """Measure the app served from this checkout (and, in the same rounds, the one at URL `against`); print the
    table and one JSON line; returns this version's figures."""
    from tools.serve import AppProcess
    with AppProcess() as app:
        measured = _rounds([app.url] + ([against] if against else []), rounds)
    figures = measured[app.url]
    figures.update(model_times())
    _report(figures, measured.get(against))
    print(json.dumps({f"compare_{k}" if not k.startswith("compare") else k: round(v, 1) for k, v in figures.items()}))
    if save:
        with open(save, "w") as f:
            json.dump(figures, f, indent=1)
    return figures


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="fresh pages measured on each server (median)")
    ap.add_argument("--against", metavar="URL", help="another version of the app, already served, measured alike")
    ap.add_argument("--save", metavar="FILE", help="write this version's figures to FILE as JSON")
    args = ap.parse_args()
    run(args.rounds, args.save, args.against)
