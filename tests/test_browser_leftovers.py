"""The page at a phone's and a desktop's width, in headless Chromium: a tab's sub-tabs are one line on a phone, and
the header's model menu is of its own size on a desktop.

The server and the browser are those of tests/test_browser.py (its fixtures, imported: the run's one server and
browser, tests/conftest.py).
"""
import os

import pytest

from tests.conftest import needs_shipped

# app and browser: test_browser's fixtures, the run's one server and one browser
from tests.test_browser import CHROMIUM, app, browser, learner, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                                                  reason=f"{CHROMIUM} not installed")]

PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
             locale="zh-CN")
DESKTOP = dict(viewport={"width": 1400, "height": 900}, locale="en-US")

# the sub-tabs of the tab whose sub-tab `arg` is: their buttons' boxes, the strip's box and how far it scrolls, and
# whether the page itself is wider than the screen
SUB_TABS = """(id) => { const open = document.querySelector(`[role=tab][data-tab-id=${id}]`);
  const strip = open.parentElement, box = (e) => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  return {strip: {...box(strip), scrolls: strip.scrollWidth > strip.clientWidth + 1},
          wide: document.scrollingElement.scrollWidth > innerWidth + 1,
          tabs: [...strip.querySelectorAll(':scope > [role=tab]')].map(b => ({id: b.dataset.tabId, ...box(b),
            whole: b.scrollWidth <= b.clientWidth + 1, open: b.getAttribute('aria-selected') === 'true'}))}; }"""


@pytest.mark.parametrize("tab, sub, first", [("attention", "bertviz-model", "one-head"),
                                             ("inside", "lens", "modules")])
def test_a_tabs_sub_tabs_are_one_line_on_a_phone(app, browser, tab, sub, first):  # noqa: F811
    """At 390 px in Chinese a tab's sub-tabs are one line, as the top tabs are (app/page/style.css): every name
    whole, the line scrolling sideways within the screen, and a link to the last sub-tab finds it in the line's
    view (app/page/tab-bar.js). Wrapped, the Attention tab's five took two rows of 44 px, its two bertviz views on
    the second."""
    context, page = learner(app, browser, path=f"?lang=zh-CN&tab={tab}/{sub}", device=PHONE)
    try:
        wait_until(page, "el(`[role=tab][data-tab-id=${arg}]`)?.getAttribute('aria-selected') === 'true' &&"
                         " el(`[role=tab][data-tab-id=${arg}]`).getClientRects().length > 0", sub,
                   what=f"the linked sub-tab {sub} open")
        in_view = (f"(b => b.tabs.some(t => t.open && t.left >= b.strip.left - 1 && t.right <= b.strip.right + 1))"
                   f"(({SUB_TABS})(arg))")
        wait_until(page, in_view, sub, what=f"the linked sub-tab {sub} in its line's view")
        bar = page.evaluate(SUB_TABS, sub)
        assert bar["tabs"][0]["id"] == first and bar["tabs"][-1]["id"] == sub, [t["id"] for t in bar["tabs"]]
        assert len({round(t["top"]) for t in bar["tabs"]}) == 1, [(t["id"], t["top"]) for t in bar["tabs"]]
        assert bar["strip"]["bottom"] - bar["strip"]["top"] <= 60, bar["strip"]
        assert all(t["whole"] for t in bar["tabs"]), [t["id"] for t in bar["tabs"] if not t["whole"]]
        assert bar["strip"]["scrolls"], "the line holds every sub-tab, wider than the screen: it should scroll"
        assert bar["strip"]["right"] <= 390 and not bar["wide"], bar["strip"]
        assert page.errors == [], page.errors
    finally:
        context.close()


# the header's menu, open: its block's width, the row's, and how wide each of its names is in the box's own font,
# beside the room the box gives a name (its width less its padding, the arrow's room on the right)
MENU = r"""() => { const block = document.querySelector('#model-menu'), input = block.querySelector('input');
  const s = getComputedStyle(input), c = document.createElement('canvas').getContext('2d');
  c.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const names = [...document.querySelectorAll('ul[role=listbox] li')]
    .map(li => li.textContent.replace(/^\s*✓/, '').trim());  // the chosen one's tick is no part of its name
  return {width: block.getBoundingClientRect().width, row: block.closest('.row').getBoundingClientRect().width,
          room: input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight),
          names: names.map(n => [n, c.measureText(n).width])}; }"""


def test_the_model_menu_is_of_its_own_size_on_a_desktop(app, browser):  # noqa: F811
    """At 1400 px in English the header's model menu is about a quarter of its row (app/header.py MENU_PX), not
    two thirds of it (800 px at scale 2), and still holds each model's name whole beside its arrow."""
    from app.header import MENU_PX
    context, page = learner(app, browser, device=DESKTOP)
    try:
        page.locator("#model-menu input").click()
        wait_until(page, "document.querySelectorAll('ul[role=listbox] li').length > 1", what="the menu's names listed")
        menu = page.evaluate(MENU)
        assert MENU_PX - 10 <= menu["width"] <= menu["row"] / 3, (menu["width"], menu["row"])
        assert any(n.startswith("the shipped model") for n, _ in menu["names"]), menu["names"]
        cut = [(n, round(w)) for n, w in menu["names"] if w > menu["room"]]
        assert cut == [], f"names wider than the menu's {menu['room']:.0f} px: {cut}"
        assert page.errors == [], page.errors
    finally:
        context.close()
