"""The Compare tab in headless Chromium, on the shipped model and its run's points: the lesson (epoch 1 against the
trained model) draws both translations, the maps and the ranking, a row of the ranking opens its head, and the two
sentences' patching grid is drawn; on a 390 px phone in Chinese the same, with nothing wider than the screen but the
figures that scroll sideways. Opening the tab leaves every tab button its own id. It waits on what the page shows,
never for a time."""
import json
import os

import pytest

from tests.conftest import TOP_TABS, after_mounting, browser_page, needs_shipped, ships_history
from tools.bench_browser import CHROMIUM

pytestmark = [pytest.mark.slow, needs_shipped,
              pytest.mark.skipif(not ships_history(), reason="the lesson needs the shipped model's run"),
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 90_000  # a bound on any one condition on a busy machine, never a pause
STARRED = "[...el.querySelectorAll('.xtick')].some(t => t.textContent.includes('★'))"  # a patching grid drawn: a changed piece's column is starred
TAB_IDS = "() => [...document.querySelectorAll('.tab-wrapper')[0].querySelectorAll('[role=tab]')].map(b => b.dataset.tabId)"


@pytest.fixture(scope="module")
def app(served_app):
    return served_app


def drawn(page, elem_id, condition="el.querySelector('.js-plotly-plot .main-svg')"):
    """Wait until the plot `elem_id` shows `condition` (a JavaScript expression of its element `el`; by default, a
    figure drawn), scrolled to while it waits, as a reader scrolls to a figure: a plot off the screen is drawn when
    it comes near it (plotly-lazy.js), and a figure drawn above it meanwhile can push it off again (the patching
    grid, scrolled to before the patch came, was pushed down by the probabilities' plot and never drawn)."""
    try:
        page.wait_for_function(f"""(id) => {{ const el = document.getElementById(id);
            if (!el) return false;
            if ({condition}) return true;
            el.scrollIntoView({{block: 'center'}});
            return false; }}""", arg=elem_id)
    except sync_api.TimeoutError as e:  # what the plot shows instead (browser_page adds the page's and server's account)
        e.add_note(f"{elem_id}: " + json.dumps(page.evaluate(PLOT_STATE, elem_id), ensure_ascii=False))
        raise


# JavaScript: what a plot shows: whether it is drawn or waits (plotly-lazy.js), its size and least width, its title,
# its x ticks (how many, the first 12) and its y ticks
PLOT_STATE = """(id) => { const el = document.getElementById(id), plot = el?.querySelector('.js-plotly-plot');
  if (!el) return 'no element';
  const r = (plot || el).getBoundingClientRect(), ticks = (a) => [...el.querySelectorAll(`.${a}tick text`)].map(t => t.textContent);
  return {drawn: !!plot?._fullLayout, waiting: !!plot?.__waiting, queued: !!plot?.__queued,
          classes: (plot || el).className, box: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)],
          min_width: plot?.style.minWidth, title: el.querySelector('.gtitle')?.textContent,
          x: [ticks('x').length, ticks('x').slice(0, 12)], y: ticks('y'), text: el.innerText.slice(0, 120)}; }"""


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
        said = [f"layer{layer}" if lang == "en" else f"第{layer}层", f"head{head}" if lang == "en" else f"第{head}头"]
        drawn(page, "cmp-maps", f"{json.dumps(said)}.every(w => (el.querySelector('.gtitle')?.textContent || '')"
                                ".replace(/ /g, '').includes(w))")
        # two sentences: the default edited copy changes one piece; the grid marks it
        page.get_by_role("tab", name=sentences, exact=True).click()
        page.click("#cmp-patch")
        page.wait_for_function("() => (document.querySelector('#cmp-patch-summary')?.innerText || '').length > 20")
        drawn(page, "cmp-grid", STARRED)  # the grid, whose changed piece is starred
        if width < 500:  # nothing but the figures that say so scrolls sideways
            wide = page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= width, wide
        assert not errors, errors


LONG = ("Ein älterer Mann mit einem roten Hut und eine junge Frau in einem blauen Kleid sitzen zusammen auf einer "
        "Holzbank vor einem kleinen Café, während zwei Kinder mit einem braunen Hund im Park spielen.")  # 40 pieces

# JavaScript: the texts of a plot's colour bars and whether each lies across the part of the plot's block on screen
# (a figure wider than a phone scrolls sideways inside its block)
SCALE_SHOWN = """(id) => { const block = document.getElementById(id).getBoundingClientRect();
  return [...document.querySelectorAll(`#${id} .colorbar text`)].map(t => { const r = t.getBoundingClientRect();
    return [t.textContent, r.left >= block.left && r.right <= block.right]; }); }"""
# JavaScript: a plot's tick labels of one axis letter: how many, their smallest font size, and how many overlap the
# one before them
TICKS = """([id, letter]) => { const boxes = [...document.querySelectorAll(`#${id} .${letter}tick text`)]
  .map(t => [t.getBoundingClientRect(), parseFloat(getComputedStyle(t).fontSize)]);
  const along = letter === 'x' ? (([a], [b]) => b.left < a.right - 0.5) : (([a], [b]) => b.top < a.bottom - 0.5);
  boxes.sort(([a], [b]) => letter === 'x' ? a.left - b.left : a.top - b.top);
  return [boxes.length, Math.min(...boxes.map(([, f]) => f)), boxes.slice(1).filter((b, i) => along(boxes[i], b)).length]; }"""


def test_a_long_sentences_patching_grid_reads_on_a_phone_its_scale_on_screen(app, chromium):
    """A 40-piece sentence's grid at 390 px in Chinese: a figure wider than the phone, which scrolls sideways; its 42
    columns' labels (12 px) and its rows' do not overlap, and its diverging scale, -1, 0 and 1 labelled, lies on the
    first screen (centred across 80 % of the figure's 780 px, it showed the phone its -1 end alone)."""
    from app.i18n import text
    with browser_page(chromium, app, TIMEOUT_MS, viewport={"width": 390, "height": 900}) as (page, errors):
        page.goto(f"{app.url}?lang=zh-CN")
        page.get_by_role("tab", name="对比", exact=True).click()
        page.get_by_role("tab", name="两个句子", exact=True).click()
        after_mounting(page)  # (text typed into a tab just mounted can be replaced by its first value)
        page.fill("#cmp-original textarea", LONG)
        page.click("#cmp-patch")  # at once: the edited copy follows the original as the patching's first step
        drawn(page, "cmp-grid", STARRED)
        assert page.locator("#cmp-edited textarea").input_value() == LONG.replace("älterer Mann", "älterer Junge")
        assert page.evaluate("() => document.querySelector('#cmp-grid').scrollWidth") > 390  # it scrolls sideways
        columns, smallest, overlaps = page.evaluate(TICKS, ["cmp-grid", "x"])
        assert columns == 42 and smallest >= 10 and overlaps == 0, (columns, smallest, overlaps)
        rows, smallest, overlaps = page.evaluate(TICKS, ["cmp-grid", "y"])
        assert rows == 4 and smallest >= 10 and overlaps == 0, (rows, smallest, overlaps)
        scale = dict(page.evaluate(SCALE_SHOWN, "cmp-grid"))
        zero = text("zh-CN", "compare.patch.zero")
        assert {"−1", zero, text("zh-CN", "compare.patch.full")} <= set(scale) and all(scale.values()), scale
        assert not errors, errors


@pytest.fixture(scope="module")
def marian_app(tmp_path_factory):
    """`python app.py` with a folder of models (EXPLORER_MODELS) holding a tiny Marian model (random weights, its own
    tokenizers trained here, converted by core.convert, as tests/test_converted_app.py builds one): it and the
    shipped model cut a sentence into different pieces."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")
    import warnings

    from core.convert import convert
    from core.convert.random_opus import made_up_pairs, write_marian
    from tests.conftest import SERVED_ENV
    from tests.test_converted_app import SMALL
    from tools.serve import AppProcess
    root = tmp_path_factory.mktemp("marian-app")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = write_marian(root / "hf", dict(SMALL, max_position_embeddings=256), dict(num_beams=4, max_length=64),
                              made_up_pairs(300, seed=3), 150, seed=3, scale=3.0)
        convert(source, root / "models" / "tiny-marian")
    with AppProcess(log=root / "app.log", env={**SERVED_ENV, "EXPLORER_MODELS": str(root / "models")}) as running:
        yield running


@pytest.mark.parametrize("width, lang, tab", [(1400, "en", "Compare"), (390, "zh-CN", "对比")])
def test_models_that_cut_the_sentence_differently_are_compared_over_words_and_say_so(marian_app, chromium, width,
                                                                                        lang, tab):
    """The shipped model against a Marian model with pieces of its own: the note that everything is compared over
    words is on screen under the translations, and the maps, whose rows and columns are then words, say so in their
    title (they said nothing of it before); their two scales' labels lie on the screen."""
    from app.i18n import text
    with browser_page(chromium, marian_app, TIMEOUT_MS, viewport={"width": width, "height": 900}) as (page, errors):
        page.goto(f"{marian_app.url}?lang={lang}&a=shipped&b=tiny-marian")
        page.get_by_role("tab", name=tab, exact=True).click()
        page.wait_for_function("() => document.querySelector('#cmp-b input')?.value === 'tiny-marian'")
        page.click("#cmp-run")
        note = page.locator("#cmp-table .cmp-note")
        note.wait_for()
        assert text(lang, "compare.by-words") in note.inner_text()
        box = note.bounding_box()
        assert note.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= width, box
        drawn(page, "cmp-maps")
        title = page.evaluate("() => document.querySelector('#cmp-maps .gtitle').textContent").replace(" ", "")
        assert text(lang, "compare.maps-words").replace(" ", "") in title, title
        scale = dict(page.evaluate(SCALE_SHOWN, "cmp-maps"))
        assert "0" in scale and all(scale.values()), scale
        assert not errors, errors
