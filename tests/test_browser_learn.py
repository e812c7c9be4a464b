"""The Learn tab's own sentence box and step 4's map, in headless Chromium on a 390 px phone in Chinese: a sentence
translated there gets the Translate tab's notices and goes into the address as that tab's does, and step 4's map
keeps every column of a sentence within reach, a short one on the screen as it stands.

The server and the browser are tests/test_browser.py's (its fixtures, imported: the run's one server and browser).
"""
import os
import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.conftest import needs_shipped

# app and browser: test_browser's fixtures, the run's one server and one browser
from tests.test_browser import CHROMIUM, app, browser, learner, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                                                  reason=f"{CHROMIUM} not installed")]

PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
             locale="zh-CN")
# German with an emoji and a phrase of Arabic among its words: fewer than half its characters, so the page said
# nothing of them (german_hint), while the model read each run as <unk>
MIXED = "Ein Hund 🐕 läuft mit einem Ball مرحبا بالعالم über die grüne Wiese."
LONG = ("Der Hund läuft über die Wiese. " * 40)[:1000]  # 1,000 characters: cut to the model's length
LONG55 = ("Eine junge Frau mit einem roten Regenschirm und ein älterer Mann mit einer blauen Mütze gehen langsam über "
          "die nasse Brücke, während hinter ihnen zwei kleine Hunde im Regen mit einem gelben Ball spielen und laut "
          "bellen, weil sie heute glücklich sind.")  # 55 pieces


def notice_paragraphs(markdown_text):
    """The notices of a status line or of the Learn box's notice, as a reader sees them: its paragraphs that
    begin with the word "Notice" (注意)."""
    return [p.strip() for p in re.split(r"\n+", markdown_text) if p.strip().startswith(("注意", "Notice"))]


def learn_translate(page, typed):
    """Type `typed` into the Learn tab's box and press its Translate; wait until the English under it is the
    new translation's and the step is drawn on it."""
    before = page.evaluate("document.querySelector('#learn-english')?.innerText ?? ''")
    page.locator("#learn-src textarea").fill(typed)
    page.locator("#learn-go").click()
    wait_until(page, "text('#learn-english') !== arg && settled('learn-notice') && settled('learn-figure')"
               " && settled('learn-english')", before, what="the Learn box's translation")


def test_the_learn_box_gives_the_translate_tabs_notices_and_records_its_sentence(app, browser):  # noqa: F811
    """Under the Learn tab's box, a sentence with an emoji and Arabic among its German is told which characters the
    model has no piece for, and a 1,000-character one that it was cut and is longer than any training sentence, one
    count of its pieces: the same notices as the Translate tab's status line for that translation. Each sentence is
    then the address's `text`, as a translation in the Translate tab is."""
    from app.i18n import speaking
    from app.shared import get_translator
    from app.translating import unknown_hint
    context, page = learner(app, browser, path="?lang=zh-CN", device=PHONE)
    try:
        for typed in (MIXED, LONG):
            learn_translate(page, typed)
            wait_until(page, "text('#learn-notice').includes('注意')", what="the notices under the Learn box")
            notice = notice_paragraphs(page.locator("#learn-notice").inner_text())
            assert parse_qs(urlparse(page.url).query).get("text") == [typed]  # recorded as the Translate tab's
            page.locator("[role=tab][data-tab-id=translate]").click()
            wait_until(page, "text('#status').includes('注意') && settled('status')", what="the status line")
            assert notice == notice_paragraphs(page.locator("#status").inner_text())
            page.locator("[role=tab][data-tab-id=learn]").click()
            page.locator("#learn-src").wait_for(state="visible")
            if typed == MIXED:
                assert len(notice) == 1 and all(f"“\u2068{run}\u2069”" in notice[0]
                                              for run in ("🐕", "مرحبا", "بالعالم"))
                with speaking("zh-CN"):
                    # the Markdown as a reader sees it: no escapes, no code span's backticks
                    expected = re.sub(r"\\(.)", r"\1", unknown_hint(typed)).replace("`", "")
                assert notice[0].endswith(expected)
            else:
                pieces = str(get_translator().max_src_tokens)
                assert len(notice) == 2 and [re.findall(r"\d+", n)[0] for n in notice] == [pieces, pieces]
        assert page.errors == [], page.errors
    finally:
        context.close()


# each column of the map: its centre's x in the page, the plot area's edges, and the block's visible edges
COLUMNS_JS = """() => { const gd = document.querySelector('#learn-figure .js-plotly-plot');
  const ax = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, n = ax.tickvals.length;
  const box = gd.getBoundingClientRect(), block = gd.closest('.block').getBoundingClientRect();
  const left = box.left + ax._offset, right = left + ax._length;
  return {n, centres: [...Array(n).keys()].map(i => box.left + ax._offset + ax.l2p(i)), left, right,
          seen: [block.left, block.left + gd.closest('.block').clientWidth], height: box.height,
          rows: [Math.ceil(Math.min(...ya.range)), Math.floor(Math.max(...ya.range))], step: ax._length / n,
          scrolls: gd.closest('.block').scrollWidth > gd.closest('.block').clientWidth}; }"""


def open_step_4(page):
    page.locator("#learn-path button.learn-mark[data-step='4']").tap()
    wait_until(page, "el('#learn-path .learn-path')?.dataset.step === '4' && settled('learn-figure')"
               " && settled('learn-head') && plot('learn-figure')?.querySelector('svg')", what="step 4")
    page.locator("#learn-figure").scroll_into_view_if_needed()
    wait_until(page, "plot('learn-figure')?._fullLayout?.xaxis?._length > 0", what="step 4's map laid out")
    return page.evaluate(COLUMNS_JS)


def test_step_4s_map_keeps_every_column_within_reach_on_a_phone(app, browser):  # noqa: F811
    """Step 4 on a 390 px phone: the page's first sentence (13 pieces) has every column within the plot area and
    on the screen, no sideways scroll; a 55-piece one is less than a screen tall, shows a window of rows, its
    buttons move the window, and every column is within the plot area, given a turned label's width, in a block
    that scrolls sideways to them."""
    context, page = learner(app, browser, path="?lang=zh-CN", device=PHONE)
    try:
        short = open_step_4(page)
        assert short["n"] == 13 and not short["scrolls"], short
        assert all(short["left"] <= x <= short["right"] and short["seen"][0] <= x <= short["seen"][1]
                   for x in short["centres"]), short
        learn_translate(page, LONG55)
        long = open_step_4(page)
        assert long["n"] == 55 and long["scrolls"] and long["step"] >= 12, long
        assert all(long["left"] <= x <= long["right"] for x in long["centres"]), long
        assert long["height"] <= 844 - 150 and long["rows"] == [0, 18], long  # less than a screen: 19 rows of 55
        page.locator("#learn-figure .updatemenu-button").nth(2).click()  # the third window: rows 39 to 55
        wait_until(page, "Math.floor(Math.max(...plot('learn-figure')._fullLayout.yaxis.range)) === 54",
                   what="the last window of rows")
        assert page.evaluate(COLUMNS_JS)["rows"] == [38, 54]
        assert page.errors == [], page.errors
    finally:
        context.close()
