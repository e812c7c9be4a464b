"""The model chosen in the page (issue 54), in headless Chromium: a link's `?model=` opens the page on that model
(the header's menu, its line, the Translate tab's English and status line all say so), the menu moves the page to
another model (the sentence translated again on it, the address following), and a name the server does not have is
said in the header, escaped, the page staying on its model: on a desktop in English and on a phone in Chinese.

The server and the browser are tests/test_browser.py's (the run's one server and one browser)."""
import os
import urllib.parse

import pytest

from tests import readability
from tests.conftest import needs_shipped, ships_history

# app and browser: test_browser's fixtures, the run's one server and one browser
from tests.test_browser import CHROMIUM, app, browser, learner, wait_until  # noqa: F401

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not ships_history(), reason="no run shipped"),
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]

PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
             locale="zh-CN")
DESKTOP = dict(viewport={"width": 1400, "height": 900}, locale="en-US")
SENTENCE = "Ein Hund läuft über die Wiese."
POINT = "shipped@epoch-1"
BAD = "<img src=x onerror=alert(1)>"
SHOTS = os.environ.get("EXPLORER_SHOTS")  # a folder to keep the screenshots in (they are looked at by a person)


def english_of(model):
    """The greedy translation of SENTENCE by `model`, made here as the server makes it."""
    from app.translating import translate
    return translate(SENTENCE, "greedy", model=model)[0]


def address(page):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)


def open_translate(page):
    page.locator("[role=tab][data-tab-id=translate]").click()
    wait_until(page, "el('#out textarea') && el('#status').innerText.length > 0", what="the Translate tab")


def choose(page, label):
    """Open the header's menu and pick the model shown as `label`."""
    page.locator("#model-menu input").click()
    page.locator("ul[role=listbox] li", has_text=label).first.click()


def shot(page, tmp_path, name):
    """The page's top (the header: its line, the menus, the note) as the screen shows it."""
    page.evaluate("window.scrollTo(0, 0)")
    path = os.path.join(SHOTS or str(tmp_path), f"{name}.png")
    page.screenshot(path=path, full_page=False)
    return path


def test_a_link_chooses_the_model_and_the_menu_moves_the_page(app, browser, tmp_path):  # noqa: F811
    context, page = learner(app, browser, device=DESKTOP,
                            path="?" + urllib.parse.urlencode({"model": POINT, "text": SENTENCE, "method": "greedy"}))
    try:
        wait_until(page, "el('#model-menu input').value.includes('after epoch 1')", what="the menu on the point")
        wait_until(page, "text('#model-line').includes('after epoch 1')", what="the header's line on the point")
        shot(page, tmp_path, "model-desktop-en-linked")
        open_translate(page)
        assert page.locator("#out textarea").input_value() == english_of(POINT)
        assert "model: the shipped model, after epoch 1" in page.locator("#status").inner_text()
        # the menu: the page's sentence translated again on the shipped model, the address following
        choose(page, "the shipped model")
        shipped = english_of("shipped")
        assert shipped != english_of(POINT)  # the two models differ on it, so the English shows which translated
        wait_until(page, "el('#out textarea').value === arg", shipped, what="the shipped model's English")
        wait_until(page, "!text('#status').includes('model:')", what="the status line of the page's own model")
        wait_until(page, "!new URL(location.href).searchParams.has('model')", what="the address without a model")
        assert "trained here on Multi30k" in page.locator("#model-line").inner_text()
        shot(page, tmp_path, "model-desktop-en-chosen")
        problems = readability.problems(page, "#page-choices")
        assert problems == [], problems
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_a_name_not_on_the_list_is_said_in_chinese_on_a_phone(app, browser, tmp_path):  # noqa: F811
    context, page = learner(app, browser, device=PHONE, path="?" + urllib.parse.urlencode({"model": BAD}))
    try:
        wait_until(page, "text('#model-note').includes('没有')", what="the note in Chinese")
        note = page.locator("#model-note")
        assert BAD in note.inner_text() and note.locator("img").count() == 0  # said as typed, never markup
        assert "随附的模型" in note.inner_text()  # the page stays on the shipped model
        assert "随附的模型" in page.locator("#model-menu input").input_value()
        box = page.locator("#model-menu").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # on the screen, not beside it
        shot(page, tmp_path, "model-phone-zh-unknown")
        # choosing a model in the menu takes the note away and the page to that model
        choose(page, "随附的模型，第 1 轮之后")
        wait_until(page, "text('#model-note').trim() === ''", what="the note gone")
        wait_until(page, "text('#model-line').includes('第 1 轮之后')", what="the header's line on the point")
        wait_until(page, "new URL(location.href).searchParams.get('model') === arg", POINT, what="the address")
        # the page's sentence (the first example: the link named none) translated again on the point
        from app.shared import examples
        from app.translating import translate
        wait_until(page, "text('#learn-english').includes(arg)", translate(examples()[0], model=POINT)[0],
                   what="the Learn tab's English, the point's")
        shot(page, tmp_path, "model-phone-zh-chosen")
        problems = readability.problems(page, "#page-choices")
        assert problems == [], problems
    finally:
        context.close()
