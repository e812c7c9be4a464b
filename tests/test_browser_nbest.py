"""The Translate tab's n-best list in headless Chromium: after a beam search the table lists the beam's final
hypotheses, and a click on the second opens it as the translation shown: the English, the status line, the token
strip, the files of its numbers and the Attention tab's figure all read it. At 1400 px in English and 390 px in Chinese, nothing wider than
a phone. It waits on what the page shows, never for a time."""
import os

import pytest

from tests.conftest import browser_page, needs_shipped
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 90_000


@pytest.fixture(scope="module")
def app(served_app):
    return served_app


@pytest.mark.parametrize("width, lang, attention, said", [(1400, "en", "Attention", "hypothesis 2 of"),
                                                          (390, "zh-CN", "注意力", "第 2 个假设")])
def test_a_row_of_the_nbest_list_opens_in_every_tab(app, chromium, width, lang, attention, said):
    with browser_page(chromium, app, TIMEOUT_MS, viewport={"width": width, "height": 900}) as (page, errors):
        page.goto(f"{app.url}?lang={lang}&method=beam&beam=4&kind=cross&tab=translate")
        page.wait_for_selector("#nbest [data-testid=cell-1-1]", state="visible")
        first = page.locator("#out textarea").input_value()
        second = page.locator("#nbest [data-testid=cell-1-1]").inner_text().strip()
        assert page.locator("#nbest [data-testid=cell-0-0]").inner_text().strip() == "● 1"
        page.locator("#nbest [data-testid=cell-1-1]").click()
        page.wait_for_function("(s) => document.querySelector('#out textarea').value === s", arg=second)
        assert second != first
        page.wait_for_function("(s) => document.querySelector('#status').innerText.includes(s)", arg=said)
        page.wait_for_function("() => document.querySelector('#nbest [data-testid=cell-1-0]').innerText.trim() === '● 2'")
        strip = page.locator("#token-probs").inner_text()
        assert all(w.strip(".") in strip for w in second.split()[:4]), (strip, second)
        # its numbers: four files, each named after its view and the sentence
        page.click("#numbers-btn")
        page.wait_for_function("() => document.querySelectorAll('#numbers-btn-files a').length === 4")
        names = page.locator("#numbers-btn-files").inner_text()
        assert all(n in names for n in ("attention-ein-mann", "probabilities-ein-mann", ".csv", ".npz")), names
        if width < 500:
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        # the Attention tab draws the chosen output: its pieces label the cross-attention's rows
        page.get_by_role("tab", name=attention, exact=True).click()
        page.locator("#heatmap").scroll_into_view_if_needed()
        words = [w.strip(".") for w in second.split() if w.strip(".") not in first.split()]
        page.wait_for_function(
            "(words) => { const t = [...document.querySelectorAll('#heatmap .ytick')].map(e => e.textContent)"
            ".join(' '); return words.every(w => t.includes(w)); }", arg=words)
        assert not errors, errors
