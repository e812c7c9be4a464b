"""Opening each top-level tab, as a reader meets it, in headless Chromium: first visit, then after a new sentence.

    python -m tools.bench --tabs [--rounds 2] [--save FILE]

Starts `python app.py` (tools.serve.AppProcess) and, in a fresh page at desktop width each round, once the page
has settled and loaded plotly (as a reader types the sentence): translates sentence A on the Translate tab, opens every other top-level tab in page order (its first visit), then translates
sentence B and opens each again. A tab is open when its button is selected, no Gradio status tracker shows on
screen, every plot within the window is drawn (its svg there and no drawing of it pending; one further down is
drawn when it comes near: app/page/plotly-lazy.js), its main element is on screen and, where the tab
shows the sentence, a
word of the new sentence is on screen (text or figure labels), and where its main element is drawn for each
sentence, it shows something other than before the click. Times are taken inside the page, from the click
to the first animation frame where that holds (the main element: a plot drawn with data, or HTML with text) (tools.bench_browser.measure); each figure is the median over the
rounds. After each opening the reader looks at the tab (LOOKED) before the next click. Beside them, measured in the same run: a trivial Gradio event (the echo page of tools.bench_browser).
"""
import json
import os
import statistics

from app.gradio_adapter import NEAR_PX
from tools import bench_browser as bb
from tools.bench_browser import ENGLISH, VIEWS, arg_of, expected, measure

SENTENCE_A = "Zwei Hunde spielen im Schnee."
SENTENCE_B = "Eine alte Frau füttert Tauben im Park."
# each top-level tab but Translate, in page order: (its name, its main element, whether that is a plot (else HTML
# with text), whether the tab shows the sentence's words, whether its main element is drawn anew for each sentence)
TABS = [("Learn", "#learn-figure", True, False, True), ("Overview", "#diagram", False, False, True),
        ("Attention", "#heatmap", True, True, True), ("Heads", "#heads-atlas", False, False, False),
        ("Why", "#why-source", True, True, True), ("What if", "#whatif-tree", True, True, True),
        ("Inside", "#in-tree", False, False, False), ("Masks", "#m-masks", True, False, False),
        ("Positional encoding", "#pe-curves", True, False, False), ("Training", "#r-fig", True, False, False),
        ("Lab", "#lab-curve", True, False, False), ("Engineering", None, False, False, False)]

# window.__clickTab(arg): click the tab named arg.tab, noting what its main element (arg.key) shows first.
# window.__tabOpen(arg): the tab named arg.tab is open, drawn and quiet (the module's docstring); arg.anew: its main
# element, where it showed something before the click, shows something else (a plot: Gradio mounts one anew for each
# figure it is given; HTML: other markup); arg.words: the
# sentence's words, one of which must be on screen (none asked for when empty); arg.old: words none of which may be
TAB_HELPERS = r"""(() => {
  const onScreen = e => !!e?.getClientRects().length && e.offsetHeight > 0;
  const labels = g => { const out = [];
    const add = a => { if (!a || typeof a === 'string' || typeof a.length !== 'number') return;
      for (const v of a) { if (typeof v === 'string') out.push(v); else if (Array.isArray(v)) add(v); else break; } };
    for (const [k, ax] of Object.entries(g._fullLayout ?? {}))
      if (/^[xy]axis\d*$/.test(k) && ax) { add(ax.ticktext); add(ax._categories); }
    for (const d of g.data ?? []) { add(d.x); add(d.y); add(d.text); add(d.labels); add(d.customdata); }
    return out; };
  window.__shownWords = () => { const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(onScreen);
    const all = [document.body.innerText, ...plots.flatMap(labels)].join(' ').replaceAll('\u2581', ' ');
    return new Set(all.split(/[\s"'<>(),.;:!?\[\]{}|]+/).filter(Boolean)); };
  const named = name => [...document.querySelectorAll('[role=tab]')].find(t => t.textContent.trim() === name);
  const shows = key => { const m = key && document.querySelector(key);
    return m ? (m.querySelector('.js-plotly-plot') ?? (m.innerHTML || null)) : null; };
  window.__clickTab = arg => { window.__before = shows(arg.key); named(arg.tab).click(); };
  window.__tabOpen = arg => {
    const tab = named(arg.tab);
    if (tab?.getAttribute('aria-selected') !== 'true') return false;
    if (arg.anew && window.__before && shows(arg.key) === window.__before) return false;
    if ([...document.querySelectorAll('[data-testid=status-tracker]')].some(t => !t.classList.contains('hide')
        && t.getClientRects().length)) return false;
    const main = arg.key && document.querySelector(arg.key), g = main?.querySelector('.js-plotly-plot');
    if (main && !(onScreen(main) && (arg.plot ? g?.data?.length : main.innerText.trim()))) return false;
    // every plot component on screen that holds a figure (Gradio's [data-testid=plotly] box, which plotly draws into):
    // displayed and within the window (a figure further down is drawn when it comes near: app/gradio_adapter.py)
    const inWindow = e => { const r = e.getBoundingClientRect();
      return e.getClientRects().length && r.bottom > 0 && r.top < innerHeight; };
    const plots = [...document.querySelectorAll('[data-testid=plotly], .js-plotly-plot')].filter(inWindow);
    // drawn: plotly's svg is there, and no drawing is pending (a resize lays the plot out again when its timer fires)
    if (!plots.every(g => g.querySelector('svg.main-svg') && !g._resolveResize && !g._promises?.length)) return false;
    if (!arg.words.length) return true;
    const shown = window.__shownWords();
    return arg.words.some(w => shown.has(w)) && !(arg.old ?? []).some(w => shown.has(w)); };
})()"""
OPEN = "window.__tabOpen(arg)"
# the page has settled: plotly is loaded (app/page/idle.js)
SETTLED = "() => !!window.Plotly"
# a reader looks at the open tab: no plot within NEAR_PX of the window still waits to be drawn
# (app/page/plotly-lazy.js), and the page is quiet, before the next click
LOOKED = """() => { const near = e => { const r = e.getBoundingClientRect();
    return e.getClientRects().length && r.bottom > -NEAR && r.top < innerHeight + NEAR; };
  return ![...document.querySelectorAll('[data-testid=plotly]')].some(e => e.__waiting && near(e))
    && ![...document.querySelectorAll('[data-testid=status-tracker]')].some(t => !t.classList.contains('hide')
       && t.getClientRects().length); }""".replace("NEAR", str(NEAR_PX))


def look(page):
    """Wait until the open tab is drawn as far as a reader looking at it sees (LOOKED)."""
    page.wait_for_function(LOOKED)


def new_words(exp, other):
    """The words of `exp`'s sentence (source and output) that `other`'s has not, longer than two characters."""
    theirs = set(other.src) | set(other.out)
    return sorted({w for w in exp.src + exp.out if len(w) > 2 and w not in theirs and w.isalpha()})


def translate(page, net, exp):
    """Translate `exp`'s sentence on the Translate tab and wait for its views."""
    measure(page, net, "tab('Translate').click()", {"open": "open('Translate') && !busy().length"}, {}, "Translate")
    page.locator("#src textarea").fill(exp.text)
    measure(page, net, "el('#translate-btn').click()", {"english": ENGLISH, "views": VIEWS}, arg_of(exp),
            f"the translation of {exp.text!r}")


def visit_all(page, net, exp, other):
    """Open each tab of TABS in turn: {tab name: ms}."""
    out = {}
    for name, key, plot, shows, anew in TABS:
        arg = {"tab": name, "key": key, "plot": plot, "words": new_words(exp, other) if shows else [], "anew": anew}
        t, _ = measure(page, net, "window.__clickTab(arg)", {"open": OPEN}, arg, f"the {name} tab on {exp.text!r}")
        out[name] = t["open"]
        look(page)
    return out


def one_round(browser, url, a, b):
    """A fresh page: sentence A and every tab's first visit, then sentence B and every tab again."""
    page, net = bb.new_page(browser, url)
    try:
        page.get_by_role("tab", name="Translate", exact=True).wait_for()
        page.evaluate(TAB_HELPERS)
        # a reader types the first sentence in about the time the page takes to settle and load plotly, which it
        # does once quiet (app/page/idle.js): the first click comes after that
        page.wait_for_function(SETTLED)
        translate(page, net, a)
        first = visit_all(page, net, a, b)
        translate(page, net, b)
        return first, visit_all(page, net, b, a)
    finally:
        page.context.close()


def key(name):
    return name.lower().replace(" ", "_")


def table(r):
    lines = [f"{'tab opened (median of %d rounds, ms)' % r['tabs_rounds']:40s} {'first':>8s} {'again':>8s} "
             f"{'Gradio':>8s}"]
    for name, *_ in TABS:
        k = f"tabs_{key(name)}"
        lines.append(f"{name:40s} {r[k + '_first_ms']:8.0f} {r[k + '_again_ms']:8.0f} {r['tabs_echo_ms']:8.0f}")
    lines.append(f"{'median over all tabs':40s} {r['tabs_median_first_ms']:8.0f} {r['tabs_median_again_ms']:8.0f} "
                 f"{r['tabs_echo_ms']:8.0f}")
    lines.append(f"{'slowest':40s} {r['tabs_max_first_ms']:8.0f} {r['tabs_max_again_ms']:8.0f}")
    lines.append("first: the tab's first visit after sentence A; again: after sentence B; Gradio: click -> output "
                 "shown on a one-textbox echo page, same run (its very first click: "
                 f"{r['tabs_echo_first_ms']:.0f} ms)")
    return "\n".join(lines)


def run(rounds=2, save=None):
    """Measure, print the table and the JSON line; merge the figures into `save` if given. Returns them."""
    if not os.path.exists(bb.CHROMIUM):
        raise SystemExit(f"{bb.CHROMIUM} not found (scripts/install.sh --dev installs it)")
    from playwright.sync_api import sync_playwright

    from tools.serve import AppProcess
    a, b = expected(SENTENCE_A), expected(SENTENCE_B)
    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bb.CHROMIUM, args=bb.LAUNCH_ARGS)
        try:
            echo = bb.run_echo(browser, 5)
            with AppProcess() as app:
                try:
                    for i in range(rounds):
                        runs.append(one_round(browser, app.url, a, b))
                        print(f"  round {i + 1} of {rounds} done", flush=True)
                except Exception as e:
                    raise RuntimeError(f"{e}\napp log (end):\n{app.tail(2000)}") from None
        finally:
            browser.close()
    r = {"rounds": rounds, "echo_ms": echo["echo_ms"], "echo_first_ms": echo["echo_first_ms"]}
    for which, i in (("first", 0), ("again", 1)):
        medians = [statistics.median(run[i][name] for run in runs) for name, *_ in TABS]
        for (name, *_), ms in zip(TABS, medians):
            r[f"{key(name)}_{which}_ms"] = ms
        r[f"median_{which}_ms"], r[f"max_{which}_ms"] = statistics.median(medians), max(medians)
    r = bb.rounded(r, prefix="tabs_")
    print(table(r))
    print(json.dumps(r))
    if save:
        bb.merge_json(save, r)
    return r
