"""The Compare tab in headless Chromium, on the shipped model and its run's points: the lesson (epoch 1 against the
trained model) draws both translations, the maps and the ranking, a row of the ranking opens its head, and the two
sentences' patching grid is drawn; on a 390 px phone in Chinese the same, with nothing wider than the screen but the
figures that scroll sideways. Opening the tab leaves every tab button its own id. It waits on what the page shows,
never for a time."""
import os

import pytest

from tests.conftest import TOP_TABS, browser_page, needs_shipped, ships_history
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not ships_history(), reason="the lesson needs the shipped model's run"),
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 90_000  # a bound on any one condition on a busy machine, never a pause
TAB_IDS = "() => [...document.querySelectorAll('.tab-wrapper')[0].querySelectorAll('[role=tab]')].map(b => b.dataset.tabId)"


@pytest.fixture(scope="module")
def app(served_app):
    return served_app


def drawn(page, elem_id):
    """Wait until the plot `elem_id` has drawn a figure (scrolled to: plots far off screen wait, plotly-lazy.js)."""
    page.locator(f"#{elem_id}").scroll_into_view_if_needed()
    page.wait_for_selector(f"#{elem_id} .js-plotly-plot .main-svg")


def run_lesson(page, tab_name):
    page.get_by_role("tab", name=tab_name, exact=True).click()
    page.wait_for_selector("#cmp-lesson")
    page.click("#cmp-lesson")
    page.wait_for_selector("#cmp-table .cmp-translation")
    drawn(page, "cmp-maps")


@pytest.mark.parametrize("width, lang, tab, sentences", [(1400, "en", "Compare", "Two sentences"),
                                                         (390, "zh-CN", "对比", "两个句子")])
def test_the_lesson_the_ranking_and_the_patching_grid(app, chromium, width, lang, tab, sentences):
    with browser_page(chromium, app, TIMEOUT_MS, viewport={"width": width, "height": 900}) as (page, errors):
        page.goto(f"{app.url}?lang={lang}")
        page.wait_for_selector("[role=tab][data-tab-id=compare]")
        before = page.evaluate(TAB_IDS)
        assert before == TOP_TABS, before
        run_lesson(page, tab)
        assert page.evaluate(TAB_IDS) == before  # opening the tab left every button its own id
        texts = page.locator("#cmp-table .cmp-text").all_inner_texts()
        assert len(texts) == 2 and texts[0] != texts[1]  # epoch 1 does not translate as the trained model does
        drawn(page, "cmp-maps")
        panel = page.evaluate("() => document.querySelector('#cmp-maps .annotation-text').textContent").replace(" ", "")
        assert ("epoch1" in panel) if lang == "en" else ("第1轮" in panel), panel  # A's panel names its model
        # the ranking's third row opens its head in the maps
        page.locator("#cmp-ranking").scroll_into_view_if_needed()
        layer, head = (page.locator(f"#cmp-ranking [data-testid=cell-2-{i}]").inner_text().strip() for i in (2, 3))
        page.locator("#cmp-ranking [data-testid=cell-2-1]").click()
        page.wait_for_function(
            "([l, h]) => { const t = (document.querySelector('#cmp-maps .gtitle')?.textContent || '')"
            ".replace(/ /g, ''); return t.includes(l) && t.includes(h); }",
            arg=[f"layer{layer}" if lang == "en" else f"第{layer}层", f"head{head}" if lang == "en" else f"第{head}头"])
        # two sentences: the default edited copy changes one piece; the grid marks it
        page.get_by_role("tab", name=sentences, exact=True).click()
        page.click("#cmp-patch")
        page.wait_for_function("() => (document.querySelector('#cmp-patch-summary')?.innerText || '').length > 20")
        drawn(page, "cmp-grid")  # (the placeholder, then the grid, whose changed piece is starred)
        page.wait_for_function("() => [...document.querySelectorAll('#cmp-grid .xtick')].some(t => t.textContent.includes('★'))")
        if width < 500:  # nothing but the figures that say so scrolls sideways
            wide = page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width, wide
        assert not errors, errors
