"""tests/readability.py on made pages in headless Chromium: a page that reads well gives no problem, and each
fault of a page that does not is found, once, by the check that names it. Plotly's script is the installed
plotly package's own."""
import os

import pytest

from tests import readability

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

# a plotly figure with a title, axis titles and tick labels (turned ones among them), drawn into #fig
FIGURE = """<script>{plotly}</script><div id="fig" style="width:{width}px;height:320px"></div><script>
Plotly.newPlot('fig', [{{x: ['alphabetic', 'betatron', 'gammaray', 'deltawing', 'epsilonic', 'zetafunc'], y: [3, 1, 4, 1, 5, 9],
  type: 'bar'}}], {{title: {{text: '{title}', x: {title_x}, xanchor: '{anchor}'}}, margin: {{t: 60, b: 80}},
  xaxis: {{title: {{text: 'letter'}}, tickangle: -45, tickfont: {{size: {tick}}}}}, yaxis: {{title: {{text: 'count'}}}}}},
  {{displayModeBar: {modebar}}});
</script>"""

SLIDER = """<div class="block" id="{id}" style="width:{width}px;overflow:hidden;display:flex;gap:4px">
  <input type="range" min="0" max="1" step="0.0001" value="0.5" style="flex:1">
  <input type="number" value="{value}" style="flex:none;width:{box}px;font:14px sans-serif">
  <button style="flex:none;width:40px">↺</button></div>"""

TABLE = """<table style="width:{width}px;border-collapse:collapse;font:14px sans-serif"><tr>
  <th>step</th><td style="{cell}">1234567.891</td><td style="{cell}">0.000012345</td></tr></table>"""

# a table wider than its box, scrolling inside it: with the page's hint above it (GOOD) and without (BAD)
SWIPE_TABLE = ("<table style='display:block;max-width:300px;overflow-x:auto;font:14px sans-serif'><tr>"
               + "".join(f"<td style='white-space:nowrap'>column {k}</td>" for k in range(12)) + "</tr></table>")
HINTED = "<style>table[data-swipe]::before {content:'swipe'; display:block}</style>" + SWIPE_TABLE.replace(
    "<table ", "<table data-swipe ")

# a menu as Gradio draws one: its chosen value in an input, its arrow laid over the box's right end
MENU = """<div class="wrap" style="position:relative;width:220px;border:1px solid #ccc"><div class="secondary-wrap">
  <input role="combobox" value="{value}" readonly style="width:100%;box-sizing:border-box;border:none;font:14px sans-serif;
  padding:4px {pad}px 4px 4px"><div class="icon-wrap" style="position:absolute;right:6px;top:4px;width:16px">▾</div>
  </div></div>"""

# a figure twice as wide as its block, which scrolls sideways, its legend at `x` (of the plot's width)
LEGEND = """<div style="width:300px;overflow-x:auto"><div id="{id}" style="width:640px;height:220px"></div></div><script>
Plotly.newPlot('{id}', [{{y: [1, 3, 2], name: 'first run'}}, {{y: [2, 1, 3], name: 'second run'}}],
  {{margin: {{t: 10, b: 30}}, legend: {{x: {x}, y: 1}}}}, {{displayModeBar: false}});
</script>"""

GOOD = (FIGURE.format(plotly="{plotly}", width=380, title="Counts", title_x=0.05, anchor="left", tick=12,
                      modebar="false")
        + SLIDER.format(id="good-slider", width=360, value="0.5", box=70)
        + TABLE.format(width=360, cell="white-space:nowrap")
        + "<p style='font-size:13px'>&lt;s&gt; is the start token, shown as <code>&lt;s&gt;</code>.</p>"
        + "<div style='width:150px'><span style='display:block;overflow:hidden;text-overflow:ellipsis;"
          "white-space:nowrap'>a token long enough to end in an ellipsis</span></div>"
        + HINTED + MENU.format(value="loss (nats)", pad=26) + LEGEND.format(id="near", x=0.02))
BAD = (FIGURE.format(plotly="{plotly}", width=380, title="A title long enough to run under the toolbar", title_x=1,
                     anchor="right", tick=6, modebar="true")
       + SLIDER.format(id="bad-slider", width=200, value="0.123456789", box=180)
       + TABLE.format(width=120, cell="overflow-wrap:anywhere")
       + "<p style='font-size:8px'>tiny words</p><p>&amp;lt;s&amp;gt; shown escaped</p>"
       + "<div style='width:600px'>wider than the screen</div>"
       + "<div style='width:150px;overflow:hidden'><span style='white-space:nowrap'>a percentage cut off 92.0%"
         "</span></div>"
       + "<svg width='100' height='30'><text x='10' y='20' font-size='14'>a label past its drawing's edge</text></svg>"
       + SWIPE_TABLE + MENU.format(value="change in validation loss when a head is off", pad=4)
       + LEGEND.format(id="far", x=1.02))


@pytest.fixture(scope="module")
def page():
    import plotly.offline
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
        page = context.new_page()
        page.plotly = plotly.offline.get_plotlyjs()
        yield page
        browser.close()


def load(page, body):
    page.set_content(f"<!doctype html><html><body style='margin:4px'>{body.replace('{plotly}', page.plotly)}"
                     "</body></html>")
    page.wait_for_function("document.querySelector('#fig .xtick text')")


def test_a_page_that_reads_well_has_no_problem(page):
    load(page, GOOD)
    assert readability.problems(page, "body") == []


def test_each_fault_is_found_by_its_check(page):
    load(page, BAD)
    found = {check.__name__: check(page, "body") for check in readability.CHECKS}
    small = found["small_text"]
    # the six turned tick labels at 6 px, and the 8 px paragraph; the rest of the figure is 12 px or more
    assert sum("6.0 px" in p for p in small) == 6 and sum("tiny words" in p for p in small) == 1, small
    assert len(small) == 7, small
    covered = found["overlapping_text"]
    assert covered and all("covers" in p and "A title long enough" in p for p in covered), covered
    assert any("cut" in p and "number box" in p for p in found["cut_boxes"]), found["cut_boxes"]
    assert any("button cut" in p for p in found["cut_boxes"]), found["cut_boxes"]
    cut = [p for p in found["cut_text"] if "#bad-slider" not in p]  # the cut reset button's arrow is cut text too
    assert len(cut) == 2 and "a percentage cut off" in cut[0], found["cut_text"]
    assert "runs off its figure" in cut[1] and "past its drawing" in cut[1], found["cut_text"]
    broken = found["broken_numbers"]
    assert any("1234567.891" in p for p in broken) and any("0.000012345" in p for p in broken), broken
    assert [p.split(" in ")[0] for p in found["escaped_markup"]] == ["escaped markup shown: &lt;",
                                                                     "escaped markup shown: &gt;"]
    assert found["sideways_scroll"] and "sideways" in found["sideways_scroll"][0]
    legends = found["hidden_legend"]
    assert len(legends) == 1 and "past the right edge" in legends[0] and "#far" in legends[0], legends
    menus = found["cut_menus"]
    assert len(menus) == 1 and "change in validation loss" in menus[0], menus
    assert len(found["unsaid_scroll"]) == 1 and "nothing says so" in found["unsaid_scroll"][0], found["unsaid_scroll"]


def test_overlapping_texts_are_found_and_turned_neighbours_are_not(page):
    """Turned tick labels whose upright boxes overlap but whose letters do not are no problem; two texts drawn
    on one spot are."""
    load(page, GOOD)
    upright = page.evaluate("[...document.querySelectorAll('#fig .xtick text')].map(t => t.getBoundingClientRect())"
                            ".map(r => [r.left, r.right])")
    assert any(a[1] > b[0] + 2 for a, b in zip(upright, upright[1:])), upright  # upright boxes that overlap
    assert readability.overlapping_text(page, "body") == []
    page.evaluate("""() => { const t = document.querySelector('#fig .xtick text');
        const copy = t.cloneNode(true); copy.setAttribute('dx', '4'); t.parentNode.appendChild(copy); }""")
    found = readability.overlapping_text(page, "body")
    assert len(found) == 1 and "alphabetic" in found[0], found
    # hidden text is skipped
    page.evaluate("document.querySelectorAll('#fig .xtick text')[1].style.visibility = 'hidden'")
    assert readability.overlapping_text(page, "body") == []
