"""Each figure a plot is given is drawn by plotly once, into the plot on the page (app/page/plotly-lazy.js).

Gradio's plot component mounts its plotly component anew for every figure (a `{#key}` block), and the old one's
effect drew the new figure into its own element, which the new mounting then took out of the page: every update of
every plot was drawn twice, once for nothing. Here the front end's plot chunk is served with plotly's own `react`
and `Plots.resize` counted (wrapped as the chunk sets window.Plotly, before the page's head wraps them): each call
that reaches plotly, and whether its element is still on the page once the update is shown. Driven in headless
Chromium against the run's served app; it waits on what the page shows, never for a time."""
import os
import re

import pytest

from tests.conftest import browser_page, click_sending, needs_shipped, open_sending
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 90_000  # a bound on any one condition on a busy machine, never a pause
SENTENCE = "Drei Kinder bauen am Strand eine Sandburg."  # not the example translated on load
SET = "window.Plotly=e"  # how the plot chunk hands plotly over (app/gradio_adapter.py FRONTEND_FACTS)

# plotly's own react and resize, counted: every element each was called with, in order
COUNT = """
window.__reacts = []; window.__resizes = [];
window.__countPlotly = (p) => {
  const react = p.react, resize = p.Plots.resize;
  p.react = function (gd, ...args) { window.__reacts.push(gd); return react.call(this, gd, ...args); };
  p.Plots.resize = function (gd, ...args) { window.__resizes.push(gd); return resize.call(this, gd, ...args); };
  window.__counting = true;
};"""
# what reached plotly since the last reset: every call, those whose element is still on the page, and the
# elements drawn more than once
COUNTED = """() => ({reacts: __reacts.length, connected: __reacts.filter((e) => e.isConnected).length,
  again: __reacts.length - new Set(__reacts).size, resizes: __resizes.length})"""
RESET = "() => { window.__reacts = []; window.__resizes = []; }"
JS = """const el = (s) => document.querySelector(s);
const settled = (id) => el(`#${id} [data-testid=status-tracker]`)?.classList.contains('hide') ?? false;
const words = (id) => (el(`#${id} .js-plotly-plot`)?.textContent ?? '').replace(/\\s/g, '');"""


def counted_chunk(route):
    body = route.fetch().text()
    assert SET in body, f"the plot chunk no longer sets plotly as {SET!r}"
    route.fulfill(body=body.replace(SET, "window.Plotly=(window.__countPlotly(e),e)", 1),
                  content_type="text/javascript")


def wait(page, condition, arg=None):
    page.wait_for_function(f"(arg) => {{ {JS}\nreturn {condition}; }}", arg=arg)


def counted(page, act, shown, arg=None):
    """What reached plotly from running `act` (Python) until the page shows `shown` (JavaScript) and is settled."""
    page.evaluate(RESET)
    act()
    wait(page, shown, arg)
    return page.evaluate(COUNTED)


def test_each_figure_is_drawn_once_into_the_plot_on_the_page(served_app, chromium):
    with browser_page(chromium, served_app, TIMEOUT_MS) as (page, errors):
        page.add_init_script(COUNT)
        page.route(re.compile(r".*/assets/PlotlyPlot-[\w-]+\.js$"), counted_chunk)
        page.goto(f"{served_app.url}?lang=en")
        page.get_by_role("tab", name="Attention", exact=True).click()
        wait(page, "words('heatmap').includes('head0') && settled('heatmap')")
        assert page.evaluate("window.__counting === true")
        # the head moved: one plot, one new figure each time
        for head in (3, 5):
            def move():
                page.locator("#head input").click()
                page.locator("[role=option]").filter(has_text=re.compile(rf"^\W*{head}\s*$")).click()
            got = counted(page, move, "words('heatmap').includes(`head${arg}`) && settled('heatmap')", head)
            assert got == {"reacts": 1, "connected": 1, "again": 0, "resizes": 0}, (head, got)
        # a new sentence, then the Attention tab again: its map redrawn for it (and whatever the translation drew)
        before = page.evaluate(f"() => {{ {JS}\nreturn words('heatmap'); }}")
        page.evaluate(RESET)
        # the tab drawn before the reader types (its drawing sent as it opens, and answered)
        open_sending(page, "translate", "token-probs")
        wait(page, "el('#out textarea')?.value && settled('out') && el('#token-probs')?.innerText.trim() "
                   "&& settled('token-probs')")
        english = page.locator("#out textarea").input_value()
        page.locator("#src textarea").fill(SENTENCE)
        click_sending(page, "#translate-btn", "out", 0, SENTENCE)
        wait(page, "el('#out textarea').value !== arg && settled('out')", english)
        page.get_by_role("tab", name="Attention", exact=True).click()
        # the new sentence's map (its tokens on the axes), not the emptied one a hidden view is given meanwhile
        wait(page, "words('heatmap') !== arg[0] && words('heatmap').includes(arg[1]) && settled('heatmap')",
             [before, "Sandburg"])
        got = page.evaluate(COUNTED)
        assert got["reacts"] >= 1 and got["connected"] == got["reacts"] and got["again"] == 0, got
        assert got["resizes"] == 0, got
        assert not errors, errors
