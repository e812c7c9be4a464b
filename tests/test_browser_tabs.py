"""Every top-level tab opened in headless Chromium after one sentence, then after another: each shows the second
sentence's views, draws each figure once (no resize of a plot that already has its box's size), and the page never
fetches its own address again. The app is the run's `python app.py` (tests/conftest.py served_app), in a browser
context of its own; the conditions are those of `python -m tools.bench --tabs` (tools/bench_tabs.py), waited on in
the page, never for a time."""
import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import after_mounting, browser_page, needs_shipped
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 60_000  # the longest any one condition may take on a busy machine; a bound, never a pause


def test_every_tab_shows_the_new_sentence(served_app, chromium):
    from tools import bench_tabs
    from tools.bench_browser import expected
    a, b = expected(bench_tabs.SENTENCE_A), expected(bench_tabs.SENTENCE_B)
    # the first sentence's words, but those the model weighs for the second (the What if tree shows candidates)
    # (nor the words of the page's own English text: "the" may be gone from the sentence and still on the page)
    page_words = {w for t in json.loads((ROOT / "locale" / "en.json").read_text(encoding="utf-8")).values()
                  for w in re.findall(r"[^\W\d_]+", t)}
    new = bench_tabs.new_words(b, a)
    old = [w for w in bench_tabs.new_words(a, b) if w not in b.cands and w not in page_words]
    assert new and old
    app = served_app
    with browser_page(chromium, app, TIMEOUT_MS) as (page, errors):
        page.goto(app.url)
        page.get_by_role("tab", name="Translate", exact=True).wait_for()
        page.evaluate(bench_tabs.TAB_HELPERS)
        # the page's own address, fetched again (a plot's clip path naming the page as it was, app/links.py)
        again = []
        page.on("request", lambda r: again.append(r.url) if urlsplit(r.url).path in ("", "/") else None)
        for exp, words, gone in ((a, bench_tabs.new_words(a, b), []), (b, new, old)):
            page.get_by_role("tab", name="Translate", exact=True).click()
            after_mounting(page)  # (text typed into a tab just mounted can be replaced by its first value)
            page.locator("#src textarea").fill(exp.text)
            page.locator("#translate-btn").click()
            page.wait_for_function("e => document.querySelector('#out textarea')?.value.trim() === e", arg=exp.english)
            for name, key, plot, shows, anew in bench_tabs.TABS:
                arg = {"tab": name, "key": key, "plot": plot, "words": words if shows else [],
                       "old": gone if shows else [], "anew": anew}
                page.evaluate("arg => window.__clickTab(arg)", arg)
                try:
                    page.wait_for_function("arg => window.__tabOpen(arg)", arg=arg, timeout=TIMEOUT_MS)
                except sync_api.TimeoutError:
                    shown = page.evaluate("() => [...window.__shownWords()].slice(0, 400)")
                    pytest.fail(f"the {name} tab after {exp.text!r}: not drawn for it ({arg}); on screen: {shown}\n"
                                f"app log (end):\n{app.tail(2000)}")
                # plotly lays a plot out again only through a resize timer: none was started for a plot on screen
                resized = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                                        ".filter(g => g.getClientRects().length && g._redrawTimer !== undefined)"
                                        ".map(g => g.closest('[id]')?.id ?? '?')")
                assert resized == [], f"the {name} tab after {exp.text!r}: plots drawn a second time: {resized}"
    assert errors == []
    assert again == [], f"the page fetched its own address again: {again}"
