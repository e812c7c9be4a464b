"""The rough edges a new reader felt (issue 41), in headless Chromium: the Learn tab's Translate answers under its
box, and the Translate tab's sliders that do not apply to the chosen decoding are out of use.

The server and the browser are tests/test_browser.py's (its module-scoped fixtures, imported: one server for this
module); every wait is on a condition in the page.
"""
import os

import pytest

from tests.conftest import needs_shipped
from tests.test_browser import CHROMIUM, SENTENCE, app, browser, learner, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                                                  reason=f"{CHROMIUM} not installed")]
PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
             locale="zh-CN")
DESKTOP = dict(viewport={"width": 1400, "height": 900}, locale="en-US")
SHOTS = os.environ.get("SHOTS_DIR")  # where a run that asks for them saves its screenshots


def shot(page, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


@pytest.mark.parametrize("device,lang,word", [(PHONE, "zh-CN", "英文："), (DESKTOP, "en", "English:")])
def test_the_learn_tabs_translate_shows_the_english_under_its_box(app, browser, device, lang, word):  # noqa: F811
    context, page = learner(app, browser, path=f"?lang={lang}", device=device)
    try:
        wait_until(page, "text('#learn-english').includes(arg)", word, what="the English of the sentence on load")
        before = page.locator("#learn-english b").inner_text()
        page.locator("#learn-src textarea").fill(SENTENCE)
        page.locator("#learn-go").click()
        wait_until(page, "text('#learn-english b') !== arg && settled('learn-english')", before,
                   what="the new English under the box")
        english = page.locator("#learn-english b").inner_text()
        assert "dog" in english.lower(), english
        # under the box, on the screen as the reader presses Translate
        box = page.locator("#learn-english").bounding_box()
        button = page.locator("#learn-go").bounding_box()
        assert box["y"] >= button["y"] and box["y"] - (button["y"] + button["height"]) < 120, (box, button)
        shot(page, f"learn-english-{lang}")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_sliders_a_method_does_not_read_are_out_of_use(app, browser):  # noqa: F811
    context, page = learner(app, browser, path="?lang=en", device=DESKTOP)
    try:
        page.locator("[role=tab][data-tab-id=translate]").click()
        page.locator("#set-beam").wait_for(state="visible")
        disabled = """(arg) => arg.map(id => document.querySelector(`#set-${id} input[type=range]`).disabled)"""
        names = ["beam", "alpha", "temperature", "top-k", "max-len"]
        assert page.evaluate(disabled, names) == [True, True, True, True, False]  # greedy reads the length alone
        shot(page, "translate-greedy-en")
        for method, expected in (("beam", [False, False, True, True, False]),
                                 ("sample", [True, True, False, False, False])):
            page.locator("#set-method label").filter(has_text=method).click()
            page.wait_for_function(f"([names, want]) => JSON.stringify(({disabled})(names)) === JSON.stringify(want)",
                                   arg=[names, expected])
        assert page.errors == [], page.errors
    finally:
        context.close()


# a slider's label on one line, and the probe table within the screen: (tab, slider blocks)
ONE_LINE_LABELS = {"training": ("n-warm",), "lab": ("lab-eps",)}
LABEL_LINES_JS = """(id) => { const label = document.querySelector(`#${id} [data-testid=block-info]`)
    ?? document.querySelector(`#${id} label, #${id} span`);
  const r = label.getBoundingClientRect(), line = parseFloat(getComputedStyle(label).lineHeight) || 20;
  return r.height / line; }"""


def test_on_a_phone_slider_labels_keep_a_line_and_the_probe_table_fits(app, browser):  # noqa: F811
    """At 390 px in Chinese a slider in a row of several takes the row's width, so its label ("预热步数",
    "标签平滑 ε") reads on one line rather than one character a line; the probe sentences' table wraps its
    columns within the screen instead of cutting the model's output."""
    context, page = learner(app, browser, path="?lang=zh-CN", device=PHONE)
    try:
        for tab, blocks in ONE_LINE_LABELS.items():
            page.locator(f"[role=tab][data-tab-id='{tab}']").click()
            for block in blocks:
                page.locator(f"#{block}").wait_for(state="visible")
                lines = page.evaluate(LABEL_LINES_JS, block)
                assert lines < 1.6, f"{tab}: #{block}'s label takes {lines:.1f} lines"
            if tab == "training":
                page.locator("#r-probes table").wait_for(state="visible")
                shot(page, "training-phone-zh")
                fits = page.evaluate("""() => { const t = document.querySelector('#r-probes table');
                  return t.getBoundingClientRect().right <= document.querySelector('#r-probes').getBoundingClientRect().right + 1
                    && t.scrollWidth <= t.clientWidth + 1; }""")
                assert fits, "the probe table is cut at the screen's edge"
        assert page.errors == [], page.errors
    finally:
        context.close()
