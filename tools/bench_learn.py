"""The Learn path as a learner meets it: a click on Next or Back to the new step's figure drawn, in headless Chromium.

    python -m tools.bench --learn [--clicks 2]

Starts `python app.py` (tools.serve.AppProcess), opens it at desktop width in Debian's chromium, and walks the path
forwards and back `clicks` times (every step change is a measured click). A change is done when the heading names
the new step, the figure is a new one (its title changed) and no event that writes to it is pending; times are taken
inside the page (tools.bench_browser.measure). Beside them, measured in the same run: the server's own work for a
step (app.tabs.learn.render in this process, on the sentence the page translates on load), and a trivial Gradio
event (the echo page of tools.bench_browser). Then the language switch, clicked ten times (中文 and English in
turn): from the click to the step on screen redrawn in the other language, while every tab's views on screen
redraw too.
"""
import statistics
import time

from tools.bench_browser import CHROMIUM, LAUNCH_ARGS, measure, new_page, run_echo

CHANGED = ("text('#learn-head').includes(arg.heading) && plot('learn-figure')?.layout?.title?.text !== arg.title "
           "&& settled('learn-figure') && settled('learn-head')")


def render_floor(runs=3):
    """The median time of app.tabs.learn.render per step, on the page's first example, in this process (each
    step's recorded pass already made, as the page has it after its first visit)."""
    from app.i18n import speaking
    from app.shared import examples, get_translator
    from app.tabs import learn
    ins = get_translator().inspect(examples()[0], method="greedy")
    times = {}
    for _ in range(runs + 1):  # the first round records the pass the Inside steps read; not counted
        for k, step in enumerate(learn.STEPS):
            t0 = time.perf_counter()
            with speaking("en"):
                learn.render(ins, {"step": k, "done": []})
            times.setdefault(step.key, []).append((time.perf_counter() - t0) * 1e3)
    return {key: statistics.median(ms[1:]) for key, ms in times.items()}


def walk(page, net, clicks):
    """Every step change, forwards then back, `clicks` times: [(step key, ms)]."""
    from app.i18n import text
    from app.learn_path import STEPS
    out = []
    order = list(range(1, len(STEPS))) + list(range(len(STEPS) - 2, -1, -1))
    k = 0
    for _ in range(clicks):
        for target in order:
            button = "#learn-next" if target > k else "#learn-back"
            title = page.evaluate("document.querySelector('#learn-figure .js-plotly-plot')?.layout?.title?.text")
            heading = text("en", "learn.step", k=target + 1, n=len(STEPS))
            times, _ = measure(page, net, f"el('{button}').click()", {"drawn": CHANGED},
                               {"heading": heading, "title": title}, f"step {target + 1}")
            out.append((STEPS[target].key, times["drawn"]))
            k = target
    return out


SWITCHED = ("text('#learn-head').includes(arg.heading) && plot('learn-figure')?.layout?.title?.text !== arg.title "
            "&& settled('learn-figure') && settled('learn-head')")


def switch_language(page, net, times_):
    """The language switch clicked `times_` times, 中文 and English in turn, on the Learn tab: [ms] from the click
    to the step's text and figure redrawn in the other language (every tab's views on screen redraw with it)."""
    from app.i18n import LANGS, text
    from app.learn_path import STEPS
    out, k = [], int(page.evaluate("document.querySelector('#learn-path .learn-path')?.dataset.step ?? '1'"))
    for i in range(times_):
        lang = LANGS[i % 2]
        title = page.evaluate("document.querySelector('#learn-figure .js-plotly-plot')?.layout?.title?.text")
        heading = text(lang, "learn.step", k=k, n=len(STEPS))
        click = f"document.querySelector('#lang input[value=\"{lang}\"]').click()"
        times, _ = measure(page, net, click, {"drawn": SWITCHED}, {"heading": heading, "title": title},
                           f"the switch to {lang}")
        out.append(times["drawn"])
    return out


def run(clicks=2):
    from playwright.sync_api import sync_playwright

    from tools.serve import AppProcess
    floor = render_floor()
    with AppProcess() as app, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page, net = new_page(browser, app.url)
        page.wait_for_function("() => document.querySelector('#learn-figure .js-plotly-plot')", timeout=120_000)
        walk(page, net, 1)  # the first visit of each step records what later visits reuse: not counted
        rows = walk(page, net, clicks)
        switches = switch_language(page, net, 10)
        echo = run_echo(browser, 5)
        browser.close()
    report(rows, floor, echo, switches)


def report(rows, floor, echo, switches):
    ms = [t for _, t in rows]
    q = statistics.quantiles(ms, n=10)
    print(f"{'step change (click → figure drawn)':40s} {'median':>8s} {'p90':>8s} {'max':>8s}")
    print(f"{'every step, ' + str(len(ms)) + ' clicks (ms)':40s} {statistics.median(ms):8.0f} {q[-1]:8.0f} "
          f"{max(ms):8.0f}")
    q = statistics.quantiles(switches, n=10)
    print(f"{'language switch, ' + str(len(switches)) + ' clicks (ms)':40s} {statistics.median(switches):8.0f} "
          f"{q[-1]:8.0f} {max(switches):8.0f}")
    print(f"{'reference: trivial Gradio event (ms)':40s} {echo['echo_ms']:8.0f}")
    print(f"{'reference: render of a step, server (ms)':40s} {statistics.median(floor.values()):8.1f} "
          f"{'':8s} {max(floor.values()):8.1f}")
    print("\nper step: median click → drawn (ms), beside the server's render of it (ms)")
    by = {}
    for key, t in rows:
        by.setdefault(key, []).append(t)
    for key, t in by.items():
        print(f"  {key:12s} {statistics.median(t):7.0f} {floor[key]:8.1f}")
