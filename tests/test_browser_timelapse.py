"""The Time-lapse tab in headless Chromium, on a model with a history beside it (tests/conftest.py history):
a link opens a point, the scrubber moves to another (the address follows), and Play runs to the last point. It
waits on what the page shows, never for a time."""
import os
import re

import pytest

from tests.conftest import app_page, needs_shipped
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 60_000  # a bound on any one condition on a busy machine, never a pause

SAID = "() => [...document.querySelectorAll('#tl-said .tok')].map(t => t.firstChild.textContent).join(' ')"


def flat(english):
    """A translation as the token strip shows it, spaces left out: its pieces, then </s>."""
    return english.replace(" ", "") + "</s>"


def where_is(page, n):
    page.wait_for_function("n => (document.querySelector('#tl-where')?.innerText || '').startsWith(n)", arg=n)


def test_a_link_the_scrubber_and_play(tmp_path, monkeypatch, chromium, history):
    from app.figures import timelapse as figures
    from app.i18n import speaking
    from app.tabs import timelapse
    model = history
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(model))
    pts = timelapse.points()
    with speaking("en"):
        probe = timelapse.sentence_of(None, "probe-0")
    with app_page(chromium, tmp_path / "app.log", TIMEOUT_MS) as (app, page, errors):
        page.goto(f"{app.url}?tab=timelapse&snapshot=step-30&lang=en")
        where_is(page, "1 / 3")  # counted as the slider counts: 0 is the initialisation
        page.wait_for_selector("#tl-curves .js-plotly-plot")
        # further down: drawn when the reader comes near it (app/page/plotly-lazy.js)
        page.locator("#tl-heads").scroll_into_view_if_needed()
        page.wait_for_selector("#tl-heads .js-plotly-plot")
        page.wait_for_function(f"() => ({SAID})().length > 0")
        # a probe sentence: what that point said of it when it was exported
        page.locator("#tl-sentence input").click()
        page.get_by_role("option", name=re.compile("^probe sentence 1")).click()
        page.wait_for_function(f"e => ({SAID})().replace(/▁/g, ' ').replace(/\\s+/g, '') === e",
                               arg=flat(pts[1]["probes"][0]))
        assert probe.split()[0] in page.locator("#tl-sentence input").input_value()
        # the scrubber to the third point: drawn for it, the address records it
        box = page.locator("#tl-snap input[type=number]")
        box.fill("2")
        box.press("Enter")
        where_is(page, "2 / 3")
        page.wait_for_function(f"e => ({SAID})().replace(/▁/g, ' ').replace(/\\s+/g, '') === e",
                               arg=flat(pts[2]["probes"][0]))
        page.wait_for_function("() => new URL(location.href).searchParams.get('snapshot') === 'step-200'")
        before, now = (timelapse._inspected(pts[i]["label"], probe).out_tokens for i in (1, 2))
        assert page.locator("#tl-said").inner_html().count("outline:2px") == len(
            figures.changed_positions(before, now)) > 0
        # Play from here runs to the last point and stops
        page.locator("#tl-play").click()
        page.wait_for_function("() => document.querySelector('#tl-play').innerText.includes('Pause')")
        where_is(page, "3 / 3")
        page.wait_for_function("() => document.querySelector('#tl-play').innerText.includes('Play')")
        page.wait_for_function(f"e => ({SAID})().replace(/▁/g, ' ').replace(/\\s+/g, '') === e",
                               arg=flat(pts[3]["probes"][0]))
        page.wait_for_function("() => new URL(location.href).searchParams.get('snapshot') === 'epoch-1'")
    assert errors == []
