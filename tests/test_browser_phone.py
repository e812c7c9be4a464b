"""Every tab read on a phone in Chinese, and the Translate tab on a desktop, in headless Chromium.

The server and the browser are those of tests/test_browser.py (its fixtures, imported: the run's one server and
browser, tests/conftest.py). Readability is tests/readability.py's: no figure text under 9 px, no text over another or
under a button, no number box or text cut, no number broken across lines, no escaped markup, no sideways scroll.
"""
import os

import pytest

from tests import readability
from tests.conftest import TOP_TABS, needs_shipped

# app and browser: test_browser's fixtures, the run's one server and one browser
from tests.test_browser import CHROMIUM, SENTENCE, app, browser, learner, translate, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                                                  reason=f"{CHROMIUM} not installed")]

PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
             locale="zh-CN")
DESKTOP = dict(viewport={"width": 1400, "height": 900}, locale="en-US")
REGION = "[data-checking]"  # the panel being read, marked by PANEL_JS

# the tab panel open at `arg` levels below the top (0: the top level's), marked as the region to read; its
# sub-tabs' ids, or null while it is not shown
PANEL_JS = """(depth) => {
  let panel = null;
  for (let i = 0; i <= depth; i++) {
    const tabs = (panel ?? document).querySelector('.tabs');
    panel = tabs && [...tabs.children].find(e => e.matches('[role=tabpanel]') && e.offsetHeight);
    if (!panel) return null;
  }
  document.querySelectorAll('[data-checking]').forEach(e => delete e.dataset.checking);
  panel.dataset.checking = '';
  const inner = panel.querySelector('.tabs');
  return inner ? [...inner.querySelectorAll('[role=tab][data-tab-id]')].filter(b => b.closest('.tabs') === inner)
    .map(b => b.dataset.tabId) : [];
}"""
# the marked panel drawn: no event pending on its components, no figure still empty
DRAWN = """(() => { const p = el('[data-checking]');
  const shown = [...p.querySelectorAll('[data-testid=status-tracker]:not(.hide), [aria-label="Empty value"]')]
    .filter(e => e.offsetHeight);
  return shown.length === 0; })()"""


# a figure further down the page is drawn when it comes near the screen (app/page/plotly-lazy.js): the
# reader scrolls to each one the check reads, from the top of the panel down; the page is back at its top after
SCROLL_TO_EACH = """async () => {
  const waiting = () => [...document.querySelectorAll('[data-checking] [data-testid=plotly]')]
    .filter(e => e.__waiting && e.getClientRects().length);
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (let i = 0, w = waiting(); w.length && i < 200; i++, w = waiting()) {
    w[0].scrollIntoView({block: 'center'});
    await frame();
  }
  window.scrollTo(0, 0);
  return waiting().map(e => e.closest('[id]')?.id ?? '?');
}"""


def open_page(app, browser, device, path):  # noqa: F811
    return learner(app, browser, path=path, device=device)


def read(page, where):
    """The marked panel, once drawn: tests/readability.py's problems, each prefixed with `where`."""
    wait_until(page, DRAWN, what=f"{where} drawn")
    left = page.evaluate(SCROLL_TO_EACH)
    assert left == [], f"{where}: figures never drawn as the reader scrolled to them: {left}"
    wait_until(page, DRAWN, what=f"{where} drawn to its end")
    return [f"{where}: {p}" for p in readability.problems(page, REGION)]


def open_and_read(page, selector, depth, where):
    page.locator(selector).click()
    subs = page.wait_for_function(PANEL_JS, arg=depth).json_value()
    return subs, read(page, where)


def test_every_tab_reads_on_a_phone_in_chinese(app, browser):  # noqa: F811
    """Each top-level tab but Learn (whose walk is its own test), and each of its sub-tabs, on a 390 px touch
    phone in Chinese after a translation of the reader's own."""
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    try:
        translate(page, SENTENCE)
        top = page.evaluate("[...document.querySelectorAll('[role=tab][data-tab-id]')]"
                            ".filter(b => b.closest('.tabs') === document.querySelector('.tabs'))"
                            ".map(b => b.dataset.tabId)")
        assert top == TOP_TABS, top
        found = []
        for tab in top[1:]:
            subs, problems = open_and_read(page, f"[role=tab][data-tab-id='{tab}']", 0, tab)
            found += problems if not subs else []
            for sub in subs:
                _, problems = open_and_read(page, f"{REGION} [role=tab][data-tab-id='{sub}']", 1, f"{tab}/{sub}")
                found += problems
                page.wait_for_function(PANEL_JS, arg=0)  # the tab's panel marked again for its next sub-tab
        assert found == [], "\n".join(found)
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_desktop_translation_shows_in_view(app, browser):  # noqa: F811
    """At 1400 x 900 the Translate button is on the screen as the tab opens, and after a click the English is."""
    context, page = open_page(app, browser, DESKTOP, "?lang=en")
    try:
        page.locator("[role=tab][data-tab-id=translate]").click()
        page.locator("#translate-btn").wait_for(state="visible")
        in_view = "(r => r.top >= 0 && r.bottom <= window.innerHeight)(el(arg).getBoundingClientRect())"
        assert page.evaluate(f"(arg) => {{ const el = s => document.querySelector(s); return {in_view}; }}",
                             "#translate-btn"), "the Translate button is below the fold"
        translate(page, SENTENCE)
        wait_until(page, in_view, "#out", what="the English in view")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_a_wide_figure_says_it_scrolls_sideways_in_the_pages_language(app, browser):  # noqa: F811
    """On a phone a figure drawn wider than the screen scrolls inside its block, and a line above it says so in
    the page's language, which follows the switch."""
    from app.i18n import text
    from app.style import WIDE_FIGURES
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    try:
        page.locator("[role=tab][data-tab-id=whatif]").click()
        wait_until(page, "plot('whatif-tree') && settled('whatif-tree')", what="the search tree")
        assert "whatif-tree" in WIDE_FIGURES
        state = """() => { const b = document.querySelector('#whatif-tree');
          return [getComputedStyle(b, '::before').content, b.scrollWidth > b.clientWidth]; }"""
        for lang in ("zh-CN", "en"):
            if lang == "en":
                page.locator("#lang label").filter(has_text="English").click()
            wait_until(page, "getComputedStyle(el('#whatif-tree'), '::before').content === JSON.stringify(arg)",
                       text(lang, "page.swipe"), what=f"the hint in {lang}")
            assert page.evaluate(state)[1], "the tree does not scroll sideways in its block"
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_a_menus_value_is_drawn_whole_on_a_phone(app, browser):  # noqa: F811
    """Inside's module menu on a phone: its value, a module's path, is drawn smaller until it fits its box (never
    under app/style.py's MENU_MIN_PX), for the first module and for the longest path chosen in the menu, and at the
    page's own size where it fits."""
    from app.shared import get_translator
    from app.style import MENU_MIN_PX
    longest = max((n for n, _ in get_translator().model.named_modules()), key=len)
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    size = "parseFloat(getComputedStyle(document.querySelector('#in-module input')).fontSize)"
    try:
        page.locator("[role=tab][data-tab-id=inside]").click()
        page.locator("[role=tab][data-tab-id=modules]").click()
        menu = page.locator("#in-module input")
        menu.wait_for(state="visible")
        wait_until(page, f"el('#in-module input').value.includes('.') && {size} < parseFloat(el('#in-module input').dataset.menuPx)",
                   what="the first path fitted")
        assert readability.cut_menus(page, "#in-module") == []
        menu.click()
        menu.fill(longest)
        page.get_by_role("option", name=longest, exact=True).click()
        wait_until(page, "el('#in-module input').value === arg", longest, what="the longest path chosen")
        wait_until(page, f"{size} < parseFloat(el('#in-module input').dataset.menuPx)", what="the longest path fitted")
        assert readability.cut_menus(page, "#in-module") == [] and page.evaluate(size) >= MENU_MIN_PX
        menu.click()
        menu.fill("encoder")
        page.get_by_role("option", name="encoder（编码器）", exact=True).click()
        wait_until(page, "el('#in-module input').style.fontSize === ''", what="a short name at the page's size")
        assert page.errors == [], page.errors
    finally:
        context.close()


# in a bertviz frame: its line about scrolling sideways (shown or not, and its words), and whether its page scrolls
FRAME_SWIPE = """() => { const hint = document.getElementById('swipe'), page = document.documentElement;
  return [!hint.hidden && hint.getClientRects().length > 0, hint.textContent, page.scrollWidth > page.clientWidth + 2]; }"""


@pytest.mark.parametrize("device, lang", [(PHONE, "zh-CN"), (DESKTOP, "en")])
def test_the_bertviz_model_view_says_when_its_heads_scroll_sideways(app, browser, device, lang):  # noqa: F811
    """bertviz's model view draws every head of a layer in one row: on a phone the row is wider than its frame and
    scrolls inside it, and a line above it says so in the page's language; on a desktop, where the row fits, no
    line."""
    from app.i18n import text
    from tests.test_browser import bertviz_frame
    context, page = open_page(app, browser, device, f"?lang={lang}")
    try:
        page.locator("[role=tab][data-tab-id=attention]").click()
        page.locator("[role=tab][data-tab-id=bertviz-model]").click()
        page.locator("#bertviz-model iframe").wait_for(state="visible")
        frame = bertviz_frame(page, "#bertviz-model")
        frame.wait_for_function("window.bertvizDrawMs > 0 && document.querySelectorAll('#vis svg rect').length > 1")
        shown, words, scrolls = frame.evaluate(FRAME_SWIPE)
        assert shown == scrolls == (device is PHONE), (shown, scrolls)
        assert words == text(lang, "attention.bertviz.swipe")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_treemap_writes_its_counts_and_shows_no_hover_label_on_a_phone(app, browser):  # noqa: F811
    """The Inside tab's treemap writes each module's count and share in its rectangle; a phone, where a tap zooms,
    shows no hover label over those words, and a desktop keeps its hover."""
    for device, lang, hover in ((PHONE, "zh-CN", "none"), (DESKTOP, "en", "text")):
        context, page = open_page(app, browser, device, "?lang=" + lang)
        try:
            page.locator("[role=tab][data-tab-id=inside]").click()
            wait_until(page, "plot('in-treemap') && settled('in-treemap')", what="the treemap")
            drawn = page.evaluate("""() => { const g = document.querySelector('#in-treemap .js-plotly-plot');
              return [g.data[0].hoverinfo, [...g.querySelectorAll('.slicetext')].map(t => t.textContent)]; }""")
            assert drawn[0] == hover, (lang, drawn[0])
            assert any("%" in t and any(c.isdigit() for c in t) for t in drawn[1]), drawn[1]
            assert page.errors == [], page.errors
        finally:
            context.close()


# a sentence of 40 pieces and more on each side: its heatmaps hold a column per piece
LONG = ("Eine junge Frau mit einem roten Regenschirm und ein älterer Mann mit einer blauen Mütze gehen langsam über "
        "die nasse Brücke, während hinter ihnen zwei kleine Hunde im Regen mit einem gelben Ball spielen und laut "
        "bellen.")
# (top tab, sub-tab or None, the figure's block, the pieces its widest panel row holds across, by side)
SENTENCE_HEATMAPS = [("attention", "one-head", "heatmap", ("src",)), ("attention", "all-heads", "head-grid", ()),
                     ("why", None, "why-source", ("src",)), ("heads", None, "off-maps", ()),
                     ("inside", "scale", "in-scale", ()), ("inside", "residual", "in-residual", ("src",)),
                     ("inside", "ffn", "in-units", ("src",)), ("learn", None, "learn-figure", ("src",))]
# each labelled column's px across, at the least: a turned 12 px label needs about this many not to touch the next
COLUMN_PX = 12
COLUMNS_JS = """(id) => { const gd = document.querySelector(`#${id} .js-plotly-plot`);
  const ax = gd._fullLayout.xaxis, n = (ax.tickvals || ax._vals || []).length;
  return [ax._length, n, gd.closest('.block').scrollWidth > gd.closest('.block').clientWidth]; }"""


def test_a_long_sentence_reads_in_every_sentence_heatmap_on_a_phone(app, browser):  # noqa: F811
    """On a 390 px phone in Chinese, a sentence of 40 pieces and more: every heatmap of the sentence (Attention,
    Why, Heads off, Inside, Learn) reads (tests/readability.py: no tick label over another, none cut, no text too
    small) and gives each labelled piece room across, in a block a finger scrolls sideways."""
    from app.shared import get_translator
    ins = get_translator().inspect(LONG)
    assert len(ins.src_tokens) >= 40, len(ins.src_tokens)
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    try:
        translate(page, LONG)
        found = []
        for top, sub, block, _ in SENTENCE_HEATMAPS:
            page.locator(f"[role=tab][data-tab-id='{top}']").click()
            page.wait_for_function(PANEL_JS, arg=0)
            if sub:
                page.locator(f"{REGION} [role=tab][data-tab-id='{sub}']").click()
                page.wait_for_function(PANEL_JS, arg=1)
            if top == "learn":  # step 4: the scores of the sentence against itself
                page.locator("#learn-path button.learn-mark[data-step='4']").tap()
                wait_until(page, "settled('learn-figure') && settled('learn-head')", what="step 4")
            where = f"{top}/{sub or ''}#{block}"
            read(page, where)  # the panel drawn, every figure scrolled to
            found += [f"{where}: {p}" for p in readability.problems(page, f"#{block}")]
            length, labelled, scrolls = page.evaluate(COLUMNS_JS, block)
            if labelled >= 40:
                per = length / labelled
                if per < COLUMN_PX:
                    found.append(f"{where}: {per:.1f} px a labelled column (under {COLUMN_PX})")
                if not scrolls:
                    found.append(f"{where}: {labelled} labelled columns, and the block does not scroll sideways")
        assert found == [], "\n".join(found)
        assert page.errors == [], page.errors
    finally:
        context.close()


# the top tab bar on a phone: its buttons' boxes, the bar's box and the strip that scrolls, the screen's height
TAB_BAR = """() => { const strip = document.querySelector('#top-tabs > .tab-wrapper > .tab-container');
  const box = (e) => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const tabs = [...strip.querySelectorAll(':scope > [role=tab]')];
  return {bar: box(strip.parentElement), strip: box(strip), height: innerHeight,
          tabs: tabs.map(b => ({id: b.dataset.tabId, ...box(b), whole: b.scrollWidth <= b.clientWidth + 1,
                                open: b.getAttribute('aria-selected') === 'true'}))}; }"""


def test_the_top_tabs_are_one_line_that_stays_at_the_top_of_a_phone(app, browser):  # noqa: F811
    """On a 390 px phone in Chinese the top tabs are one line (every name whole, a finger scrolls the line sideways)
    in the upper 60% of the first screen, and the line stays at the screen's top as the page scrolls down; a link to
    the last tab finds that tab in the line's view. Wrapped, the sixteen tabs took four rows, 459 to 635 px down."""
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    try:
        page.evaluate("window.scrollTo(0, 0)")  # the first screen (the Learn tab may have scrolled to its step)
        wait_until(page, "scrollY === 0", what="the page at its top")
        bar = page.evaluate(TAB_BAR)
        assert [t["id"] for t in bar["tabs"]] == TOP_TABS
        assert len({round(t["top"]) for t in bar["tabs"]}) == 1, [(t["id"], t["top"]) for t in bar["tabs"]]
        assert bar["bar"]["bottom"] - bar["bar"]["top"] <= 60, bar["bar"]
        assert bar["bar"]["bottom"] <= 0.6 * bar["height"], f"the tab bar ends {bar['bar']['bottom']:.0f} px down"
        assert all(t["whole"] for t in bar["tabs"]), [t["id"] for t in bar["tabs"] if not t["whole"]]
        assert bar["tabs"][-1]["right"] > bar["strip"]["right"], "the line should scroll: it holds them all"
        for down in (900, 3000):
            page.evaluate("(y) => window.scrollTo(0, y)", down)
            wait_until(page, "scrollY > 0", what="the page scrolled")
            held = page.evaluate(TAB_BAR)["bar"]
            assert abs(held["top"]) <= 1, f"scrolled {down} px down, the tab bar's top is at {held['top']:.0f} px"
            # the bar is drawn over the page, not under it: what is at its middle is one of its tabs
            middle = [(held["left"] + held["right"]) / 2, (held["top"] + held["bottom"]) / 2]
            assert page.evaluate("([x, y]) => !!document.elementFromPoint(x, y)?.closest('#top-tabs > .tab-wrapper')",
                                 middle)
        assert page.errors == [], page.errors
    finally:
        context.close()
    context, page = open_page(app, browser, PHONE, f"?lang=zh-CN&tab={TOP_TABS[-1]}")
    try:
        wait_until(page, "el(`[role=tab][data-tab-id=${arg}]`).getAttribute('aria-selected') === 'true'", TOP_TABS[-1],
                   what="the linked tab open")
        in_view = f"(b => b.tabs.some(t => t.open && t.left >= b.strip.left - 1 && t.right <= b.strip.right + 1))(({TAB_BAR})())"
        wait_until(page, in_view, what="the linked tab in the tab bar's view")
        assert page.errors == [], page.errors
    finally:
        context.close()


# each panel of a figure of several: its plot area's box on screen, from plotly's own axes (their place and length)
PANELS_JS = """(id) => { const gd = document.querySelector(`#${id} .js-plotly-plot`), box = gd.getBoundingClientRect();
  const full = gd._fullLayout, block = gd.closest('.block');
  const panels = Object.keys(full).filter(k => /^xaxis\\d*$/.test(k)).map(k => {
    const x = full[k], y = full[x._anchor === 'free' ? 'yaxis' : x.anchor.replace('y', 'yaxis')];
    return {left: box.left + x._offset, right: box.left + x._offset + x._length,
            top: box.top + y._offset, bottom: box.top + y._offset + y._length}; });
  return {panels, width: innerWidth, scrolls: block.scrollWidth > block.clientWidth + 2,
          notes: [...gd.querySelectorAll('.annotation-text')].map(t => t.textContent)}; }"""
PANEL_PX = 50  # px across a panel of Layers x heads needs at the least: 13 pieces, about 4 px a cell


def test_every_head_of_the_layers_by_heads_grid_is_on_a_phones_screen(app, browser):  # noqa: F811
    """Attention's layers x heads on a 390 px phone in Chinese: every panel (each layer's every head) lies within the
    screen, at least PANEL_PX across, in a block that does not scroll sideways, each head named; drawn 640 px wide
    in eight columns, the screen showed four heads of eight. At 1400 px in English, one row a layer as before."""
    from app.shared import get_translator
    layers, heads = (get_translator().config[k] for k in ("N", "h"))
    for device, lang in ((PHONE, "zh-CN"), (DESKTOP, "en")):
        context, page = open_page(app, browser, device, f"?lang={lang}")
        try:
            page.locator("[role=tab][data-tab-id=attention]").click()
            page.locator("[role=tab][data-tab-id=layers-heads]").click()
            wait_until(page, "plot('overview-grid') && settled('overview-grid')", what="the layers x heads grid")
            drawn = page.evaluate(PANELS_JS, "overview-grid")
            panels = drawn["panels"]
            assert len(panels) == layers * heads
            rows = sorted({round(p["top"]) for p in panels})
            if device is PHONE:
                off = [i for i, p in enumerate(panels) if p["left"] < 0 or p["right"] > drawn["width"]]
                narrow = [i for i, p in enumerate(panels) if p["right"] - p["left"] < PANEL_PX]
                assert off == [] and narrow == [] and not drawn["scrolls"], (off, narrow, drawn["scrolls"])
                assert all(f"头 {h}" in drawn["notes"] for h in range(heads)), drawn["notes"]
                found = readability.problems(page, "#overview-grid")
                assert found == [], found
            else:
                assert len(rows) == layers, rows
            assert page.errors == [], page.errors
        finally:
            context.close()


# a figure's tick labels along one axis: each label's box on screen (a turned label's upright box)
TICKS_JS = """([id, axis]) => [...document.querySelectorAll(`#${id} .js-plotly-plot .${axis}tick text`)]
  .filter(t => t.textContent.trim()).map(t => { const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""


@pytest.mark.skipif("timelapse" not in TOP_TABS, reason="the shipped model has no run history")
def test_the_time_lapse_heatmaps_labels_stand_apart_on_a_phone(app, browser):  # noqa: F811
    """The Time-lapse's cross-attention of one head on a 390 px phone in Chinese: the German's labels under it, turned
    upright, each stand clear of the next (their boxes read from the page) and inside the screen, and the figure
    reads (tests/readability.py). With the colour bar at the right, 13 labels shared 130 px and ran into each
    other."""
    context, page = open_page(app, browser, PHONE, "?lang=zh-CN")
    try:
        page.locator("[role=tab][data-tab-id=timelapse]").click()
        wait_until(page, "plot('tl-cross') && settled('tl-cross')", what="the time-lapse's heatmap")
        ticks = sorted(page.evaluate(TICKS_JS, ["tl-cross", "x2"]), key=lambda t: t["left"])
        assert len(ticks) >= 10, ticks
        touching = [(a["text"], b["text"], round(a["right"] - b["left"], 1)) for a, b in zip(ticks, ticks[1:])
                    if a["right"] > b["left"] + readability.TOLERANCE]
        assert touching == [], touching
        assert ticks[0]["left"] >= 0 and ticks[-1]["right"] <= PHONE["viewport"]["width"], (ticks[0], ticks[-1])
        found = readability.problems(page, "#tl-cross")
        assert found == [], found
        assert page.errors == [], page.errors
    finally:
        context.close()


# in a bertviz frame: the heights of its Save SVG button and menus, and its head squares' boxes (the head view's
# rects at the top of its drawing, one a head) with the frame's width
FRAME_CONTROLS = """() => { const h = (e) => e.getBoundingClientRect().height;
  const squares = [...document.querySelectorAll('#vis svg > g > rect')].filter(r => r.getBBox().y === 0)
    .map(r => { const b = r.getBoundingClientRect(); return [b.left, b.right, b.height]; });
  return {save: h(document.getElementById('save-svg')), menus: [...document.querySelectorAll('select')].map(h), squares,
          width: document.documentElement.clientWidth}; }"""
TOUCH_PX = 44


@pytest.mark.parametrize("device, lang", [(PHONE, "zh-CN"), (DESKTOP, "en")])
def test_bertvizs_controls_are_a_fingers_size_on_a_phone(app, browser, device, lang):  # noqa: F811
    """bertviz's head and model views on a 390 px phone: their Save SVG button, their menus (layer, attention) and the
    head view's squares, one a head, are at least TOUCH_PX tall (they were 20 to 21 px), every square within the
    frame; at 1400 px, bertviz's own sizes (20 px squares, menus under TOUCH_PX)."""
    from app.shared import get_translator
    from tests.test_browser import bertviz_frame
    heads = get_translator().config["h"]
    context, page = open_page(app, browser, device, f"?lang={lang}")
    try:
        page.locator("[role=tab][data-tab-id=attention]").click()
        for view in ("head", "model"):
            page.locator(f"[role=tab][data-tab-id=bertviz-{view}]").click()
            page.locator(f"#bertviz-{view} iframe").wait_for(state="visible")
            frame = bertviz_frame(page, f"#bertviz-{view}")
            frame.wait_for_function("window.bertvizDrawMs > 0 && document.querySelectorAll('#vis svg rect').length > 1")
            got = frame.evaluate(FRAME_CONTROLS)
            assert len(got["menus"]) == (2 if view == "head" else 1), got
            heights = [got["save"], *got["menus"], *(s[2] for s in got["squares"])]
            if view == "head":
                assert len(got["squares"]) == heads, got["squares"]
            if device is PHONE:
                assert min(heights) >= TOUCH_PX - 0.5, (view, got)
                assert all(0 <= s[0] and s[1] <= got["width"] for s in got["squares"]), (got["squares"], got["width"])
            else:
                assert all(s[2] == 20 for s in got["squares"]) and max(got["menus"]) < TOUCH_PX, (view, got)
        assert page.errors == [], page.errors
    finally:
        context.close()
