"""The real app in headless Chromium: `python app.py` (started by tools.serve.AppProcess), driven by Playwright.

The server and the browser are the run's (tests/conftest.py served_app, chromium, shared with the other browser
tests and the load tests); each test has a page of its own (in its own browser context), makes whatever translation it reads, and waits on conditions in the page, never for a time. After each
test its page is checked: no request left the server and the console shows no error.
Needs Debian's chromium at /usr/bin/chromium (scripts/install.sh --dev installs it) and the shipped model.
"""
import json
import os
import re
import urllib.parse
import urllib.request

import pytest

from tests.conftest import (
    TOP_TABS,
    after_mounting,
    click_sending,
    needs_shipped,
    open_sending,
    page_diagnostics,
    record_event,
)

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")]
sync_api = pytest.importorskip("playwright.sync_api")

TIMEOUT_MS = 60_000  # the longest any one condition may take on a busy machine; a bound, never a pause
SENTENCE = "Zwei Hunde spielen im Schnee."  # not the example translated on load, so its translation is new
OTHER = "Eine Katze schläft auf dem Sofa."
TABS = {"Overview": "#diagram", "Translate": "#src", "Attention": "#heatmap", "Heads": "#heads-atlas",
        "Why": "#why-source",
        "What if": "#whatif-tree", "Inside": "#in-tree",
        "Masks": "#m-masks",
        "Positional encoding": "#pe-curves", "Training": "#r-fig", "Engineering": None,
        "Lab": "#lab-curve"}
ATTENTION_VIEWS = {"One head": "#heatmap", "All heads of the layer": "#head-grid", "Layers × heads": "#overview-grid",
                   "bertviz head view": "#bertviz-head", "bertviz model view": "#bertviz-model"}
# for the conditions below: `arg` is the value passed with one, and
# settled(id): no event that writes to component `id` is pending (its status tracker is hidden). Gradio applies an
# event's outputs one at a time, each behind an await, and hides the trackers of all of them only at the end.
JS_HELPERS = """const el = s => document.querySelector(s), text = s => el(s)?.innerText ?? '';
const settled = id => el(`#${id} [data-testid=status-tracker]`)?.classList.contains('hide') ?? false;
// a reader looks at the figure a condition reads: one further down is drawn only when it comes near the screen
// (app/page/plotly-lazy.js), so a figure still waiting is scrolled to
const look = id => { const box = el(`#${id} [data-testid=plotly]`); if (box?.__waiting) box.scrollIntoView({block: 'center'}); };
const plot = id => { look(id); return el(`#${id} .js-plotly-plot`); }, plotText = id => plot(id)?.innerText ?? '';
const replayStep = () => +(plotText('r-fig').match(/step (\\d+) of/) ?? [])[1];"""


@pytest.fixture(scope="module")
def app(served_app):
    """The run's one `python app.py` (tests/conftest.py served_app: the Lab's runs capped at 40 steps)."""
    return served_app


@pytest.fixture(scope="module")
def browser(chromium):
    return chromium


@pytest.fixture
def page(app, browser, tmp_path):
    """A fresh page on the app once the translation run on load is shown; afterwards, checked for requests that
    left the server and for console errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.app, page.shots, page.requests, page.errors, page.events = app, tmp_path, [], [], []
    context.on("request", lambda r: page.requests.append(r.url))  # the page's and its frames' (one in its own process)
    # every event the page sends to the server (which function, with what inputs), for failure messages
    page.sent = []  # the same, as (function index, inputs)
    page.on("request", lambda r: record_event(page, r) if "queue/join" in r.url else None)
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    try:
        page.goto(app.url)
        # the page opens on the Learn tab: the load's translation is shown once the step's figure is drawn on it
        # and the rendering event that drew it has completed
        wait_until(page, "plot('learn-figure') && settled('learn-figure') && settled('learn-head')",
                   what="the translation run on load")
        yield page
        host = app.url.rstrip("/")
        outside = [u for u in page.requests if not u.startswith((host, "data:", "blob:", "about:"))]
        assert outside == [], f"requests that left the server: {outside}"
        assert page.errors == [], f"console errors: {page.errors}"
    finally:
        context.close()


def read_by_events(page, elem_ids, sent):
    """For each event in `sent` ((function index, inputs), as the page records them) whose function reads every
    component of `elem_ids`: the values it sent for them, in that order (the page's Gradio config maps each
    function's inputs to components)."""
    return page.evaluate("""([ids, sent]) => {
        const config = window.gradio_config, byElem = {};
        for (const c of config.components) if (ids.includes(c.props?.elem_id)) byElem[c.props.elem_id] = c.id;
        const wanted = ids.map(i => byElem[i]);
        const inputs = Object.fromEntries(config.dependencies.map(d => [d.id, d.inputs]));
        return sent.filter(([fn]) => wanted.every(id => inputs[fn]?.includes(id)))
                   .map(([fn, data]) => wanted.map(id => data[inputs[fn].indexOf(id)])); }""", [elem_ids, sent])


def diagnostics(page):
    """What the page and the server were doing, for a failure message."""
    state = page.evaluate("""() => { const s = document.querySelector('#step');
        return {tab: document.querySelector('[role=tab][aria-selected=true]')?.textContent.trim(),
                box: s?.querySelector('input[type=number]')?.value, label: s?.querySelector('label')?.innerText,
                english: document.querySelector('#out textarea')?.value,
                steps_shown: document.body.innerText.match(/Step \\d+: next-token/g),
                tokens: [...document.querySelectorAll('#token-probs')].map(e => e.innerText.slice(0, 60)),
                learn: document.querySelector('#learn-head') && {
                  head_top: Math.round(document.querySelector('#learn-head').getBoundingClientRect().top),
                  scroll: [scrollY, document.documentElement.scrollHeight, innerHeight],
                  placing: window.learnPlacing ?? null, path_step: document.querySelector('#learn-path .learn-path')
                    ?.dataset.step, picked: document.querySelector('#learn-question input:checked')?.value ?? null,
                  answer: document.querySelector('#learn-answer')?.innerText.slice(0, 80)}}; }""")
    return f"this page: {state}\n" + page_diagnostics(page, events=30, log_chars=1500)


def js(expression):
    """A function of `arg` that returns the JavaScript `expression`, with the helpers above in scope."""
    return f"(arg) => {{ {JS_HELPERS}\nreturn {expression}; }}"


def wait_until(page, condition, arg=None, what=None):
    """Wait until the JavaScript expression `condition` holds in the page; else fail with the page's state."""
    try:
        page.wait_for_function(js(condition), arg=arg, timeout=TIMEOUT_MS)
    except sync_api.TimeoutError:
        failed = AssertionError(f"not within {TIMEOUT_MS / 1000:.0f} s: {what or condition} (arg {arg!r})\n"
                                + diagnostics(page))
        failed.diagnosed = True  # (browser_page adds no second copy)
        raise failed from None


def wait_text(page, text):
    wait_until(page, "document.body.innerText.includes(arg)", text, what=f"the page shows {text!r}")


def open_tab(page, name, content=None):
    """Click a tab and wait until its panel alone shows in its set of tabs (and `content`, a selector, is visible),
    its components mounted and given their values (tests/conftest.py after_mounting), ready to be typed into."""
    page.get_by_role("tab", name=name, exact=True).click()
    wait_until(page, """(() => {
        const tab = [...document.querySelectorAll('[role=tab]')].find(t => t.textContent.trim() === arg);
        if (tab?.getAttribute('aria-selected') !== 'true') return false;
        const shown = [...tab.closest('.tabs').children].filter(e => e.matches('[role=tabpanel]') && e.offsetHeight);
        return shown.length === 1; })()""", name, what=f"the {name} tab")
    if content:
        page.locator(content).first.wait_for(state="visible")
    after_mounting(page)


def wait_plot(page, elem_id):
    """Wait until the plot has been drawn and no event that writes to it is pending."""
    wait_until(page, "plot(arg)?.querySelector('svg') && settled(arg)", elem_id, what=f"the plot #{elem_id}")


def wait_plot_change(page, elem_id, before):
    wait_until(page, "plotText(arg[0]) !== arg[1] && settled(arg[0])", [elem_id, before],
               what=f"a new plot in #{elem_id}")
    return plot_text(page, elem_id)


def plot_text(page, elem_id):
    wait_until(page, "plot(arg)", elem_id, what=f"the plot #{elem_id} drawn")
    return page.locator(f"#{elem_id} .js-plotly-plot").first.inner_text()


def set_number(page, elem_id, value):
    """Type into the number box of a Gradio slider and commit it."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def translate(page, german):
    """Translate `german` in the Translate tab (opened by its id: its name is in the page's language); return the
    English once the views of the translation are shown."""
    # the tab drawn before the reader types (its drawing sent as it opens, and answered)
    open_sending(page, "translate", "token-probs")
    wait_until(page, "text('#token-probs') && settled('token-probs') && settled('out')", what="the Translate tab drawn")
    english, tokens = page.evaluate("[document.querySelector('#out textarea').value, "
                                    "document.querySelector('#token-probs').innerText]")
    page.locator("#src textarea").fill(german)
    click_sending(page, "#translate-btn", "out", 0, german)
    # the status line is no signal (while the event runs, its progress text shows inside it): the translation
    # is done when the English box holds a new text and its event has completed
    wait_until(page, "el('#out textarea').value !== arg && settled('out')", english, what="a new translation")
    # then the rendering event shows the new tokens and completes (it also resets the step slider to 1)
    wait_until(page, "text('#token-probs') !== arg && settled('token-probs') && settled('step')", tokens,
               what="the new translation's views")
    return page.locator("#out textarea").input_value()


def shot(page, name):
    page.screenshot(path=str(page.shots / f"{name}.png"), full_page=True)


def test_translate_and_step_replay(page):
    english = translate(page, SENTENCE)
    assert re.search(r"[A-Za-z]", english)
    n = page.locator("#token-probs .tok").count()
    assert n >= 3
    box = page.locator("#step input[type=number]")
    assert box.input_value() == "1"
    assert page.locator("#step input[type=range]").get_attribute("max") == str(n)  # a step per output token
    wait_text(page, "Step 1: next-token candidates")
    # the buttons move the replay one step at a time, and the slider follows
    page.locator("#step-next").click()
    wait_text(page, "Step 2: next-token candidates")
    page.locator("#step-next").click()
    wait_text(page, "Step 3: next-token candidates")
    assert box.input_value() == "3"
    page.locator("#step-prev").click()
    wait_text(page, "Step 2: next-token candidates")
    assert box.input_value() == "2"
    wait_until(page, "settled('step')", what="the step buttons' last event")
    # a step typed into the slider's box: the last one, where the decoder chose the end of the sentence
    set_number(page, "step", n)
    wait_text(page, f"Step {n}: next-token candidates")
    assert "&lt;/s&gt;" in page.locator(".step code.chosen").inner_html()
    shot(page, "translate")


def test_one_sentence_for_the_page_and_a_notice_when_it_is_not_german(page):
    """A sentence translated in the Translate tab is the one the Learn box shows (its steps are drawn from it);
    an English one is translated all the same, with a notice under both boxes."""
    from app.i18n import speaking
    from app.translating import german_hint
    english_input = "A dog runs on the beach."
    assert translate(page, english_input)  # translated: the notice never refuses it
    with speaking("en"):
        notice = re.sub(r"\\(.)", r"\1", german_hint(english_input))  # the Markdown as a reader sees it
    wait_until(page, "text('#status').includes(arg)", notice[:40], what="the notice in the status line")
    open_tab(page, "Learn", "#learn-src")
    wait_until(page, "el('#learn-src textarea').value === arg && text('#learn-notice').includes(arg2)"
               .replace("arg2", json.dumps(notice[:40])), english_input, what="the Learn box on the page's sentence")
    # and back to German: the notice goes
    translate(page, SENTENCE)
    open_tab(page, "Learn", "#learn-src")
    wait_until(page, "el('#learn-src textarea').value === arg && text('#learn-notice').trim() === ''", SENTENCE,
               what="the Learn box on the German sentence, without a notice")


def test_attention_heatmap_and_bertviz_render(page):
    translate(page, SENTENCE)
    open_tab(page, "Attention", "#heatmap")
    wait_plot(page, "heatmap")
    # the maps of the sentence just translated, with its tokens on the axes
    assert "Hunde" in plot_text(page, "heatmap")
    page.get_by_role("radio", name="Cross-attention (decoder → encoder)").check()
    wait_until(page, "plotText('heatmap').includes('Cross-attention') && settled('heatmap')",
               what="the cross-attention map")
    shot(page, "attention")
    open_tab(page, "bertviz head view", "#bertviz-head")
    frame = page.frame_locator("#bertviz-head iframe")
    frame.locator("svg text").first.wait_for()
    texts = frame.locator("svg text").all_text_contents()
    assert any("Hunde" in t for t in texts)
    shot(page, "bertviz_head")
    open_tab(page, "bertviz model view", "#bertviz-model")
    frame = page.frame_locator("#bertviz-model iframe")
    frame.locator("svg").first.wait_for()
    assert frame.locator("svg").count() >= 1
    shot(page, "bertviz_model")
    # another sentence: each view of the tab, opened again, shows it and never the last sentence's maps
    translate(page, OTHER)
    open_tab(page, "Attention", "#bertviz-model")
    frame.locator("svg").first.wait_for()
    open_tab(page, "bertviz head view", "#bertviz-head")
    # (the iframe is sandboxed away from the page, so Playwright looks inside it)
    page.frame_locator("#bertviz-head iframe").locator("svg text", has_text="Katze").first.wait_for()
    open_tab(page, "One head", "#heatmap")
    wait_until(page, "plotText('heatmap').includes('Katze') && settled('heatmap')", what="the new sentence's map")
    assert "Hunde" not in plot_text(page, "heatmap") and "Cross-attention" in plot_text(page, "heatmap")


BERTVIZ_VIEWS = (("bertviz head view", "#bertviz-head"), ("bertviz model view", "#bertviz-model"))
MARKUP_SENTENCE = 'Eine Katze <img src=x onerror="window.__xss=5"> schläft auf dem Sofa.'


def bertviz_frame(page, content):
    """The Frame of a bertviz view's iframe (sandboxed: Playwright reaches into it, the page cannot)."""
    return page.locator(f"{content} iframe").element_handle().content_frame()


def wait_drawn(page, name, content, token, gone):
    """Open a bertviz view and wait until it has drawn `token` as text (the model view: in the detail of its first
    thumbnail, which a click opens) and none of `gone`; return its Frame."""
    open_tab(page, name, content)
    frame = bertviz_frame(page, content)
    shows = "[...document.querySelectorAll('#vis svg text')].map(t => t.textContent)"
    if content == "#bertviz-model":
        # the thumbnails of the new data, then one clicked (its click area, the last rect of its group)
        frame.wait_for_function("(t) => window.bertvizParams?.attention[0].left_text.some(x => x.includes(t))"
                                " && document.querySelectorAll('#vis svg rect').length > 1", arg=token)
        frame.locator("#vis svg rect[style*='opacity: 0']").first.dispatch_event("click")
    frame.wait_for_function(f"(t) => {shows}.some(x => x.includes(t))", arg=token)
    texts = frame.evaluate(shows)
    assert not [t for t in texts if any(g in t for g in gone)], texts
    return frame


def test_bertviz_frames_are_kept_and_draw_each_sentence(page):
    """Both bertviz views, opened for one sentence and then another (with markup in it): each draws the sentence's
    tokens and not the last one's, its weights are bertviz's own parameters exactly, its frame is the same one
    throughout and loaded jQuery and d3 once (a change of layer fetches nothing); the markup is text, never run."""
    import torch

    from app.bertviz_views import _head_view
    from app.i18n import speaking
    from app.tabs.translate import translate as translated
    asked, dialogs = [], []
    page.context.on("request", lambda r: asked.append(r.url))  # the frames' too (one may run in its own process)
    scripts = lambda: [u for u in asked if u.endswith(".js") and "/file=" in u]  # noqa: E731
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    translate(page, SENTENCE)
    open_tab(page, "Attention", "#heatmap")
    frames = [wait_drawn(page, name, content, "Hunde", ["Katze"]) for name, content in BERTVIZ_VIEWS]
    # what bertviz draws in the head view is its own parameters, as its Python writes them for the sentence
    # (translated here too: the weights to 3 decimals, which another process's last float bits may round apart)
    with speaking("en"):
        bertviz = json.loads(_head_view(translated(SENTENCE, "greedy")[2]).split("const params = ", 1)[1]
                             .split("; // HACK", 1)[0])
    drawn = frames[0].evaluate("window.bertvizParams")
    weights = [(torch.tensor(d.pop("attn")), torch.tensor(b.pop("attn")))
               for d, b in zip(drawn["attention"], bertviz["attention"])]
    assert [w.shape for w, _ in weights] == [w.shape for _, w in weights]
    assert max((w - v).abs().max().item() for w, v in weights) <= 0.001 + 1e-9
    assert {**drawn, "root_div_id": None} == {**bertviz, "root_div_id": None}
    # another layer in the head view's own menu: drawn again from the same data, nothing fetched
    loaded = scripts()
    open_tab(page, "bertviz head view", "#bertviz-head")
    frames[0].select_option("#layer", "2")
    frames[0].wait_for_function("document.querySelector('#layer').value === '2' && "
                                "document.querySelectorAll('#vis svg line').length > 0")
    translate(page, MARKUP_SENTENCE)
    open_tab(page, "Attention")  # on the sub-tab it was left on
    for (name, content), frame in zip(reversed(BERTVIZ_VIEWS), reversed(frames)):  # the model view first this time
        assert wait_drawn(page, name, content, "Katze", ["Hunde"]) == frame  # the same frame, the new sentence
    open_tab(page, "bertviz head view", "#bertviz-head")
    frames[0].locator("#vis svg text", has_text="<").first.wait_for()  # the markup's pieces, drawn as text
    assert scripts() == loaded  # nothing fetched again for a layer, a sentence, a view
    files = sorted(u.rsplit("/", 1)[1] for u in loaded)
    # each library at most once a frame; a sandboxed frame drawn in a process of its own is not always seen by the
    # context's request listener (CI saw none once), and its drawing above shows that they loaded
    assert files in ([], ["d3.v5.min.js", "jquery.min.js"], ["d3.v5.min.js"] * 2 + ["jquery.min.js"] * 2), loaded
    assert page.locator("#bertviz-head iframe").count() == page.locator("#bertviz-model iframe").count() == 1
    assert dialogs == [] and touched_anywhere(page) == []
    host = page.app.url.rstrip("/")
    assert [u for u in asked if not u.startswith((host, "data:", "blob:", "about:"))] == []  # nothing from outside


LONG_SENTENCE = ("Auf einer belebten Straße in der Altstadt schiebt ein alter Mann mit grauem Bart einen Karren voller "
                 "Äpfel an einem Café vorbei, während zwei Kinder in gelben Jacken einem Straßenmusiker zuhören. Daneben "
                 "steht eine junge Frau mit einem roten Regenschirm und wartet auf den Bus, der wegen des starken Regens "
                 "verspätet ist, und ein kleiner Hund bellt laut die Tauben an, die auf dem Kopfsteinpflaster nach "
                 "Brotkrumen suchen. Am Ende der Straße spielt eine Gruppe von Musikern Gitarre und Trompete. Es ist "
                 "ein kalter Herbsttag.")


def test_bertviz_model_view_of_a_long_sentence(page):
    """A sentence of over 125 pieces: the model view draws every thumbnail of the encoder (24 of them, a line per
    pair of pieces), its data sent once (it took a page of 5 MB, and timed out)."""
    translate(page, LONG_SENTENCE)
    open_tab(page, "Attention")
    open_tab(page, "bertviz model view", "#bertviz-model")
    frame = bertviz_frame(page, "#bertviz-model")
    frame.wait_for_function("window.bertvizParams?.attention[0].left_text.length >= 125 && window.bertvizDrawMs > 0")
    pieces, layers, heads, lines = frame.evaluate("""[bertvizParams.attention[0].left_text.length,
        bertvizParams.include_layers.length, bertvizParams.total_heads, document.querySelectorAll('#vis line').length]""")
    assert lines == layers * heads * pieces * pieces and pieces >= 125


def test_why_this_word_attributes_the_chosen_token(page):
    """The Why tab draws the attention and the attributions of a token of the translation; picking another
    token redraws them for that token."""
    english = translate(page, SENTENCE)
    open_tab(page, "Why", "#why-source")
    wait_plot(page, "why-source")
    wait_plot(page, "why-target")
    wait_until(page, "text('#why-reading').includes('ranks') && settled('why-reading')", what="the reading")
    first = plot_text(page, "why-source")
    assert "gradient × input" in first and "occlusion" in first
    page.locator("#why-token input").click()
    last = page.get_by_role("option").last
    picked = last.inner_text()
    assert picked.endswith("</s>") and len(english) > 0
    last.click()
    after = wait_plot_change(page, "why-source", first)
    assert "</s>" in after and "output " + picked.split()[0] + "," in after


def test_a_head_chosen_from_the_menu_sends_one_drawing(page):
    """A head chosen from the Attention tab's menu is drawn by one request: the tab's drawing listens to the menu's
    select (its input event comes twice for one choice, and the drawing went twice)."""
    translate(page, OTHER)
    open_tab(page, "Attention", "#heatmap")
    wait_plot(page, "heatmap")
    first, before = plot_text(page, "heatmap"), len(page.sent)
    page.locator("#head input").click()
    page.get_by_role("option", name="3", exact=True).click()
    assert "head 3" in wait_plot_change(page, "heatmap", first)
    wait_until(page, "settled('heatmap')", what="the drawing answered")
    assert read_by_events(page, ["head"], page.sent[before:]) == [[3]]


def test_the_translation_exports_as_json_and_figures_save_themselves(page):
    """Export downloads, in one click, a JSON file of the translation's Inspection; a figure saves itself as SVG; a
    bertviz view saves its SVG from inside its sandbox, and the app writes it as one self-contained HTML file."""
    english = translate(page, SENTENCE)
    wait_until(page, "el('#export-btn') && !el('#export-btn').disabled", what="the export button ready")
    with page.expect_download() as saved:
        page.locator("#export-btn").click()
    assert saved.value.suggested_filename.startswith("translation-") and saved.value.suggested_filename.endswith(".json")
    body = json.load(open(saved.value.path(), encoding="utf-8"))
    assert body["translation"] == english and body["format"] == "transformer-explorer/inspection"
    assert len(body["cross"][0][0]) == len(body["out_tokens"])
    open_tab(page, "Attention", "#heatmap")
    wait_plot(page, "heatmap")
    with page.expect_download() as saved:
        page.locator("#heatmap .save-svg").click()
    assert saved.value.suggested_filename == "heatmap.svg"
    assert open(saved.value.path(), encoding="utf-8").read().startswith("<svg")
    open_tab(page, "bertviz head view", "#bertviz-head")
    frame = page.frame_locator("#bertviz-head iframe")
    frame.locator("#vis svg").first.wait_for()
    with page.expect_download() as saved:
        frame.locator("#save-svg").click()
    assert saved.value.suggested_filename == "bertviz-head-view.svg"
    page.locator("#bertviz-head-save").click()
    link = page.locator("#bertviz-head-file a[href*='.html']").first
    link.wait_for(state="visible")
    standalone = page.request.get(link.get_attribute("href")).text()
    assert "/gradio_api/" not in standalone and "jQuery" in standalone


def test_a_link_restores_sentence_settings_tab_and_head(page):
    """The address records what a translation and the Attention tab's controls chose; opening it elsewhere
    restores the sentence, its settings, the sub-tab and the head."""
    translate(page, OTHER)
    open_tab(page, "Attention", "#heatmap")
    open_tab(page, "All heads of the layer", "#head-grid")
    page.locator("#kind label", has_text="Cross-attention").click()
    wait_until(page, "new URL(location.href).searchParams.get('kind') === 'cross'", what="the kind in the address")
    wait_until(page, "plotText('head-grid').includes('Cross-attention') && settled('head-grid')",
               what="the sub-tab redrawn for the kind the reader chose")
    link = page.url
    params = page.evaluate("Object.fromEntries(new URL(location.href).searchParams)")
    assert params["text"] == OTHER and params["tab"] == "attention/all-heads" and params["method"] == "greedy"
    english = page.locator("#out textarea").input_value()
    other = watched_page(page.context, page.app)
    other.goto(link)
    wait_until(other, "plotText('head-grid').includes('Cross-attention') && settled('head-grid')",
               what="the linked sub-tab, drawn for cross-attention")
    open_tab(other, "Translate", "#src")
    wait_until(other, "el('#out textarea')?.value === arg", english, what="the linked translation")
    assert other.locator("#src textarea").input_value() == OTHER
    assert other.locator("#learn-src textarea, #learn-src input").first.input_value() == OTHER
    other.close()


def test_requests_that_reach_the_server_out_of_order_leave_the_last_sub_tab_drawn(page):
    """Two sub-tabs opened one after the other while the server has not yet heard of the first: whatever order the
    page's requests reach the server in (here, the reverse of the order they were sent), the sub-tab open last is
    the one drawn. Each drawing reads the open tabs from the page as it is sent (app/page/open-tabs.js), and the
    page sends a tab's next drawing only once the last one is answered."""
    translate(page, OTHER)
    open_tab(page, "Attention", "#heatmap")
    wait_plot(page, "heatmap")
    held, holding = [], [True]
    page.route("**/queue/join*", lambda route: held.append(route) if holding[0] else route.continue_())
    with page.expect_request("**/queue/join*"):
        page.get_by_role("tab", name="bertviz head view", exact=True).click()
    page.get_by_role("tab", name="All heads of the layer", exact=True).click()
    wait_until(page, "el('[role=tab][aria-selected=true][data-tab-id=all-heads]')", what="the second sub-tab shown")
    holding[0] = False
    for route in reversed(held):  # the last sent first
        route.continue_()
    wait_until(page, "plot('head-grid') && settled('head-grid')", what="the sub-tab opened last, drawn")
    assert held


def test_a_hostile_link_is_read_as_data(page):
    """Markup in the sentence, an unknown tab, numbers out of range: the page shows the text as typed, keeps
    every control in range and runs nothing."""
    dialogs = []
    query = urllib.parse.urlencode({"text": PAYLOADS[0], "tab": "constructor", "layer": "99", "head": "-5",
                                    "kind": "<b>", "method": "eval", "beam": "1e9"})
    # the link opens in a page of its own: leaving the first page while its load's events still run would abort
    # them, which Gradio logs as console errors
    other = watched_page(page.context, page.app)
    other.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    other.goto(page.app.url.rstrip("/") + "/?" + query)
    open_tab(other, "Translate", "#src")
    wait_until(other, "el('#src textarea')?.value === arg && el('#out textarea').value !== '' && settled('out')",
               PAYLOADS[0], what="the linked sentence, translated")
    open_tab(other, "Attention", "#heatmap")
    wait_plot(other, "heatmap")
    # the title as drawn, in whatever lines it was wrapped into (a line's tspan ends without its space)
    assert "Encoderself-attention,layer2,head0" in "".join(plot_text(other, "heatmap").split())
    assert dialogs == [] and touched_anywhere(other) == [] and other.errors == []


def held_page_load(context, app):
    """A page of `app` whose server-side load event (the one that translates the link's sentence, app/links.py)
    is held in the browser until the test lets it go: (page, let_go). let_go() sends it and returns once the load
    has answered, which the page shows by sending the events that follow it."""
    config = json.loads(urllib.request.urlopen(app.url.rstrip("/") + "/config", timeout=30).read())
    ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    load = next(d["id"] for d in config["dependencies"] if d["targets"] == [[0, "load"]] and d["backend_fn"]
                and "out" in [ids.get(o) for o in d["outputs"]])
    after = {d["id"] for d in config["dependencies"] if d.get("trigger_after") == load and d["backend_fn"]}

    def fn(request):  # the function an event the page sends asks for
        return json.loads(request.post_data or "{}").get("fn_index") if "queue/join" in request.url else None
    held = []
    page = watched_page(context, app)
    page.route("**/queue/join*", lambda route: held.append(route) if fn(route.request) == load else route.continue_())
    with page.expect_request(lambda r: fn(r) == load):
        page.goto(app.url)

    def let_go():
        with page.expect_request(lambda r: fn(r) in after):
            held.pop().continue_()
    return page, let_go


def test_what_a_reader_does_before_the_page_load_answers_stays(app, browser):
    """The page's load translates its sentence (a link's, or the first example) and may answer late on a busy
    server. German typed before it answers stays in the box; a translation made before it stays on the page."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        # typed, and the load answers: the box keeps the reader's German, beside the load's English
        page, let_go = held_page_load(context, app)
        open_tab(page, "Translate", "#src")
        page.locator("#src textarea").fill(SENTENCE)
        let_go()
        assert page.locator("#src textarea").input_value() == SENTENCE
        assert page.locator("#out textarea").input_value() != ""
        page.locator("#translate-btn").click()
        wait_until(page, "el('#learn-src textarea, #learn-src input')?.value === arg && settled('out')", SENTENCE,
                   what="the reader's sentence translated, and the Learn tab's box following it")
        # translated before the load ran (its event waits behind the reader's): the reader's translation stays
        other, let_go = held_page_load(context, app)
        open_tab(other, "Translate", "#src")
        other.locator("#src textarea").fill(OTHER)
        other.locator("#translate-btn").click()
        wait_until(other, "el('#out textarea').value !== '' && settled('out')", what="the reader's translation")
        english = other.locator("#out textarea").input_value()
        let_go()
        assert other.locator("#out textarea").input_value() == english
        assert other.locator("#src textarea").input_value() == OTHER
        assert page.errors == [] and other.errors == [], (page.errors, other.errors)
    finally:
        context.close()


def test_search_tree_and_what_if(page):
    """The tab draws the beam search of the translation, and the model continues after a typed prefix; each
    what-if keeps its own result beside the others'."""
    translate(page, SENTENCE)
    open_tab(page, "What if", "#whatif-tree")
    wait_until(page, "plotText('whatif-tree').includes('Beam search, beam 4') && settled('whatif-tree')",
               what="the search tree")
    page.locator("#whatif-prefix textarea, #whatif-prefix input").first.fill("Three cats")
    page.locator("#whatif-go-prefix").click()
    wait_until(page, "text('#whatif-prefixed').includes('after your prefix') && settled('whatif-prefixed')",
               what="the continuation")
    pieces = page.evaluate("[...document.querySelectorAll('#whatif-prefixed .whatif-row')[1].querySelectorAll('.tok')]"
                           ".map(t => t.firstChild.textContent).join('')")
    assert pieces.startswith("Threecats")  # the model's own translation says "Two dogs"
    page.locator("#whatif-mine textarea, #whatif-mine input").first.fill("Two dogs play.")
    page.locator("#whatif-go-mine").click()
    wait_until(page, "text('#whatif-scored').includes('your translation') && settled('whatif-scored')",
               what="the score of the typed translation")
    page.locator("#whatif-swap").click()
    wait_until(page, "text('#whatif-swapped').length > 0 && settled('whatif-swapped')", what="the swapped word")
    assert "after your prefix" in page.locator("#whatif-prefixed").inner_text()  # still there, under its own box
    assert page.locator("#whatif-scored").inner_text().strip()


# the Inside-the-model tab's sub-tabs and the plots each must draw
INSIDE_VIEWS = {"Modules and weights": ("in-treemap", "in-weights", "in-dist"),
                "LayerNorm": ("in-ln", "in-ln-forms", "in-ln-params"), "Why divide by √d_k": ("in-scale", "in-sweep"),
                "Residual stream": ("in-residual",), "Feed-forward units": ("in-ffn", "in-units"),
                "Logit lens": ("in-lens",)}


def test_inside_tab_draws_every_view(page):
    translate(page, SENTENCE)
    open_tab(page, "Inside", "#in-tree")
    wait_until(page, "text('#in-tree').includes('encoder') && settled('in-tree')", what="the module tree")
    for name, plots in INSIDE_VIEWS.items():
        open_tab(page, name)
        for elem_id in plots:
            wait_plot(page, elem_id)
    # the sentence just translated is in the views that read it
    assert "dogs" in plot_text(page, "in-lens") and "Hunde" in plot_text(page, "in-ffn")
    # clicking a module in the tree selects it: its weights are drawn
    open_tab(page, "Modules and weights")
    before = plot_text(page, "in-weights")
    page.locator('#in-tree .mod[data-path="generator.proj"]').click()
    assert "generator.proj.weight" in wait_plot_change(page, "in-weights", before)
    # a slider redraws the LayerNorm view: at 1 and 1 the output is the input again
    open_tab(page, "LayerNorm", "#in-ln")
    for elem_id in ("in-gain", "in-bias"):
        before = plot_text(page, "in-ln")
        set_number(page, elem_id, 1)
        wait_plot_change(page, "in-ln", before)
    wait_until(page, "/Sliders at 1\\.00 \\(gain\\) and 1\\.00/.test(text('#in-ln-note')) && settled('in-ln-note')",
               what="the LayerNorm note with both sliders at 1")
    shot(page, "inside")
    # markup typed as the sentence: its pieces shown as text in the LayerNorm note and the FFN plot, nothing run
    translate(page, PAYLOADS[0])
    open_tab(page, "Inside")  # its LayerNorm sub-tab still the open one
    open_tab(page, "LayerNorm", "#in-ln")
    set_number(page, "in-token", 2)  # the pieces: <s>, ▁, <unk> (for "<"), im, g, ...
    wait_until(page, "text('#in-ln-note').includes('position 2 (<unk>)') && settled('in-ln-note')",
               what="the piece <unk> in the note, as text")
    open_tab(page, "Feed-forward units")
    wait_until(page, "plotText('in-ffn').includes('<unk>') && settled('in-ffn')", what="the pieces on the axis")
    assert touched_anywhere(page) == []


def test_masks_tab_reacts(page):
    open_tab(page, "Masks", "#m-masks")
    wait_plot(page, "m-masks")
    before = plot_text(page, "m-masks")
    set_number(page, "m-sent", 2)
    wait_plot_change(page, "m-masks", before)
    assert "Showing sentence 2" in page.locator("#m-summary").inner_text()
    page.locator("#m-en textarea").fill("A dog.")
    wait_until(page, "text('#m-summary').includes('German lines but')", what="the message on unequal lines")
    shot(page, "masks")


def test_positional_tab_reacts(page):
    open_tab(page, "Positional encoding", "#pe-curves")
    wait_plot(page, "pe-curves")
    before = plot_text(page, "pe-curves")
    page.locator("#pe-dims textarea").fill("10, 11")
    page.locator("#pe-dims textarea").press("Enter")
    after = wait_plot_change(page, "pe-curves", before)
    assert "dim 10" in after and "dim 4" not in after
    shot(page, "positional")


def test_a_figure_further_down_is_drawn_when_it_comes_near(page):
    """The Training tab at 1400 x 1000: its first figure drawn as it opens; the label-smoothing figure, over a
    screen further down, waits with its figure's height kept (the page keeps its layout), and is drawn, with the
    figure the server sent, once the reader scrolls to it (app/page/plotly-lazy.js)."""
    open_tab(page, "Training", "#r-fig")
    wait_plot(page, "r-fig")
    box = """() => { const b = el('#ls-fig [data-testid=plotly]'), r = b.getBoundingClientRect();
      return {waiting: !!b.__waiting, height: r.height, top: r.top, drawn: !!b.querySelector('svg.main-svg')}; }"""
    below = page.evaluate(f"(() => {{ {JS_HELPERS} return ({box})(); }})()")
    from app.gradio_adapter import NEAR_PX
    assert below["top"] > 1000 + NEAR_PX, below  # (the test is about a figure that far down)
    assert below["waiting"] and not below["drawn"] and below["height"] >= 300, below
    page.locator("#ls-fig").scroll_into_view_if_needed()
    wait_until(page, "!el('#ls-fig [data-testid=plotly]').__waiting && el('#ls-fig svg.main-svg')",
               what="the label-smoothing figure drawn once near")
    assert "Smoothed targets" in plot_text(page, "ls-fig")
    drawn = page.evaluate(f"(() => {{ {JS_HELPERS} return ({box})(); }})()")
    assert abs(drawn["height"] - below["height"]) <= 1, (below, drawn)  # the page kept its layout


def test_replay_plays(page):
    open_tab(page, "Training", "#r-fig")
    wait_plot(page, "r-fig")  # the last step, drawn on load
    set_number(page, "r-step", 1)
    wait_until(page, "replayStep() === 1 && settled('r-fig')", what="the replay at step 1")
    page.locator("#play").click()
    # it plays on by itself: past the first tick's step, then past that one
    wait_until(page, "replayStep() > 1", what="the replay's first tick")
    first = page.evaluate(js("replayStep()"))
    assert first > 1
    wait_until(page, "replayStep() > arg", first, what=f"the replay past step {first}")
    page.locator("#play").click()  # pause
    wait_until(page, "text('#play').trim() === 'Play'", what="the Play button back")
    wait_plot(page, "ls-fig")
    before = plot_text(page, "ls-fig")
    set_number(page, "ls-eps", 0.3)
    assert "0.3" in wait_plot_change(page, "ls-fig", before)
    shot(page, "replay")


def test_the_language_switch_redraws_the_figure_on_screen(page):
    """A new language redraws the views of the tab on screen through that tab's own listener (the switch's `said`
    state, set by a queued event: off the queue, Gradio's page would start none of its listeners), then back."""
    translate(page, SENTENCE)
    open_tab(page, "Attention")
    page.locator("[role=tab][data-tab-id=one-head]").click()
    wait_until(page, "plotText('heatmap').includes('layer') && settled('heatmap')", what="the map in English")
    page.locator("#lang label").filter(has_text="中文").click()
    wait_until(page, "plotText('heatmap').includes('层') && settled('heatmap')", what="the map redrawn in Chinese")
    page.locator("#lang label").filter(has_text="English").click()
    wait_until(page, "plotText('heatmap').includes('layer') && settled('heatmap')", what="the map in English again")
    wait_until(page, "el('[role=tab][data-tab-id=translate]').innerText.trim() === 'Translate'",
               what="the tabs relabelled")


def test_heads_switched_off_and_an_atlas_cell_opens_its_head(page):
    english = translate(page, SENTENCE)
    open_tab(page, "Heads", "#heads-atlas")
    wait_until(page, "el('#heads-atlas [data-head]') && settled('heads-atlas')", what="the atlas grids")
    # every cross-attention head of layer 0 but head 0 switched off, the sentence translated again
    page.locator("#off-all-but").click()
    wait_until(page, "text('#off-list').includes('head 7') && settled('off-list')", what="seven heads chosen")
    page.locator("#off-run").click()
    wait_until(page, "text('#off-compare').includes('As translated') && settled('off-compare')",
               what="the translation with heads off")
    compare = page.locator("#off-compare").inner_text()
    assert english in compare and "switched off" in compare and "7 heads switched off" in text_of(page, "#off-status")
    wait_until(page, "plotText('off-maps').includes('head 1: off') && settled('off-maps')", what="the maps, heads off")
    shot(page, "heads")
    # a click on an atlas cell opens that head in the Attention tab, on the one-head view
    before = len(page.sent)
    page.locator('#heads-atlas [data-kind="cross"][data-layer="1"][data-head="3"]').click()
    wait_until(page, "el('[role=tab][aria-selected=true]')?.textContent.trim() === 'Attention'",
               what="the Attention tab selected")
    wait_until(page, "plotText('heatmap').includes('Cross-attention') && plotText('heatmap').includes('layer 1, head 3')"
               " && settled('heatmap')", what="the head clicked, in the Attention tab")
    assert "Hunde" in plot_text(page, "heatmap")
    # the click sets the Attention tab's three controls: no event it set off read them half set (the kind set, the
    # layer and head not yet). Such an event could reach the server last, and its head was then drawn over the one
    # clicked (a fresh-clone run under load failed so).
    read = read_by_events(page, ["kind", "layer", "head"], page.sent[before:])
    assert read and all(r == ["cross", 1, 3] for r in read), read


def text_of(page, selector):
    return page.locator(selector).inner_text()


def test_overview_blocks_open_tabs(page):
    open_tab(page, "Overview", "#diagram")
    shot(page, "overview")
    page.locator('#diagram [data-tab="positional"]').first.click()
    wait_until(page, "el('[role=tab][aria-selected=true]')?.textContent.trim() === 'Positional encoding'",
               what="the Positional encoding tab selected")
    page.locator("#pe-curves").wait_for(state="visible")


def test_every_tab_and_view_opens(page):
    """Every tab, and every view of the Attention tab, shows its panel (the fixture then checks that nothing
    they loaded came from outside the server and that the console stayed clean)."""
    for name, content in TABS.items():
        open_tab(page, name, content)
    open_tab(page, "Attention")
    for name, content in ATTENTION_VIEWS.items():
        open_tab(page, name, content)


PAYLOADS = ['<img src=x onerror="window.__xss=1">', "<script>window.__xss=2</script>", '"><svg onload="window.__xss=3">',
            "[click me](javascript:window.__xss=4) http://example.com"]
# nothing a payload would create: its marker, an element it writes, a link from user text
UNTOUCHED = """() => ({marker: window.__xss ?? null,
  elements: [...document.querySelectorAll('img[src=x], svg[onload], [onerror], a[href^=javascript], #pe-note a')]
            .map(e => e.outerHTML.slice(0, 120)),
  scripts: [...document.querySelectorAll('script')].filter(s => s.textContent.includes('__xss=2')).length})"""


def touched_anywhere(page):
    """What a payload ran or left in the page or in any frame (the bertviz iframes included): [] if nothing."""
    found = []
    for frame in page.frames:
        r = frame.evaluate(UNTOUCHED)
        if r["marker"] is not None or r["elements"] or r["scripts"]:
            found.append((frame.url[:40], r))
    return found


def test_typed_markup_is_shown_and_never_run(page):
    """Markup and Markdown typed into every text box of every tab: shown as typed, nothing runs (no dialog, no
    element, no link), in the page and in the bertviz iframes."""
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    translate(page, " ".join(PAYLOADS))
    open_tab(page, "Attention", "#heatmap")
    wait_plot(page, "heatmap")
    assert "<" in plot_text(page, "heatmap")  # the source pieces ("<", "im", "g", ...) shown as text
    for name, content in (("bertviz head view", "#bertviz-head"), ("bertviz model view", "#bertviz-model")):
        open_tab(page, name, content)
    page.frame_locator("#bertviz-model iframe").locator("svg").first.wait_for()
    open_tab(page, "bertviz head view", "#bertviz-head")
    page.frame_locator("#bertviz-head iframe").locator("svg text", has_text="<").first.wait_for()
    open_tab(page, "Why", "#why-source")
    wait_until(page, "text('#why-reading').includes('ranks') && settled('why-reading')", what="the reading")
    open_tab(page, "Masks", "#m-masks")
    wait_plot(page, "m-masks")
    page.locator("#m-de textarea").fill(f"{PAYLOADS[0]}\n{PAYLOADS[3]}")
    page.locator("#m-en textarea").fill(f"{PAYLOADS[2]}\n{PAYLOADS[1]}")
    wait_until(page, "text('#m-summary').includes('Batch of 2 pairs') && settled('m-masks')", what="the new batch")
    assert "<" in page.locator(".mtable").first.inner_text()
    open_tab(page, "Positional encoding", "#pe-curves")
    page.locator("#pe-dims textarea").fill(PAYLOADS[3] + " " + PAYLOADS[0])
    page.locator("#pe-dims textarea").press("Enter")
    wait_until(page, "text('#pe-note').includes('whole numbers')", what="the message on unreadable dimensions")
    shown = page.locator("#pe-note").inner_text()
    assert "[click me](javascript:window.__xss=4) http://example.com" in shown and PAYLOADS[0] in shown
    assert len(page.frames) >= 3  # the page and both bertviz views
    assert dialogs == [] and touched_anywhere(page) == []


def test_lab_trains_and_shows_the_result(page):
    """The Lab opens with the shipped intact run; a configuration trained here redraws the curve beside it."""
    open_tab(page, "Lab", "#lab-curve")
    wait_plot(page, "lab-curve")
    wait_until(page, "text('#lab-result').includes('exact match')", what="the shipped result")
    page.locator("#lab-breaks label", has_text="no_scale").click()
    page.locator("#lab-breaks label", has_text="untied").click()
    wait_text(page, "has not been trained yet")
    page.locator("#lab-train").click()
    # while it runs, the line beside the button says how far it is (0 of 40 while core.lab's process starts)
    wait_until(page, "/no_scale\\+untied on the CPU: \\d+ of 40 steps · \\d+\\ss since you pressed Train · \\d+ steps to go/"
               ".test(text('#lab-progress'))", what="the run's progress beside the Train button")
    box, button = page.locator("#lab-progress").bounding_box(), page.locator("#lab-train").bounding_box()
    assert abs(box["y"] - button["y"]) < 80 or 0 <= box["y"] - (button["y"] + button["height"]) < 80  # beside it
    wait_until(page, "/exact match \\d/.test(plotText('lab-curve')) && plotText('lab-curve').includes('this run') "
               "&& settled('lab-curve') && / steps in /.test(text('#lab-result'))", what="the run's curve and result")
    wait_until(page, "/no_scale\\+untied on the CPU: \\d+ steps and the evaluation in \\d+\\ss/.test(text('#lab-progress'))",
               what="the finished run's line")
    result = page.locator("#lab-result").inner_text()
    assert "no_scale+untied" in result and int(re.search(r"(\d+) steps in", result)[1]) <= 40  # the lowered cap
    assert page.locator("#lab-examples table tr").count() > 1
    wait_plot(page, "lab-cross")
    shot(page, "lab")
    for name in ("no_scale", "untied", "post_norm"):  # post-norm at depth: shipped, shown without training
        page.locator("#lab-breaks label", has_text=name).click()
    page.locator("#lab-layers label", has_text="6").click()
    wait_until(page, "text('#lab-result').includes('copy/post_norm@6') && settled('lab-curve')",
               what="the shipped deep run")
    assert "N = 6 layers" in page.locator("#lab-result").inner_text()


def test_translate_api_endpoint(app):
    client_mod = pytest.importorskip("gradio_client")
    client = client_mod.Client(app.url, verbose=False)
    settings = ("greedy", 4, 0.6, 1.0, 10, 100)
    result = client.predict("Eine Frau liest ein Buch.", *settings, api_name="/translate")
    from app.translating import translate  # the same callback, called here: the same English and pieces
    english, status, _ = translate("Eine Frau liest ein Buch.", *settings)
    assert result[0] == english and "woman" in english.lower()
    assert result[1].split(" · ")[:2] == status.split(" · ")[:2]  # method, pieces (the time may differ)
    empty = client.predict("", "greedy", 4, 0.6, 1.0, 10, 100, api_name="/translate")
    assert empty[0] == "" and "Type a German sentence" in empty[1]


# ---- the Learn path ----------------------------------------------------------------------------------------

PHONE = {"width": 390, "height": 844}


def watched_page(context, app):
    """A new page in `context` on `app`, whose console errors and uncaught errors are kept in its `errors`."""
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.app, page.errors, page.events = app, [], []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.sent = []  # the same, as (function index, inputs)
    page.on("request", lambda r: record_event(page, r) if "queue/join" in r.url else None)
    return page


def learner(app, browser, viewport=None, locale=None, path="", init=None, device=None):
    """A page in a context of its own (a phone or a desktop, a language; or `device`, new_context's arguments)
    once its Learn step is drawn; `init`, a script run in it before the page's own."""
    context = browser.new_context(**(device or dict(viewport=viewport, locale=locale, has_touch=viewport == PHONE)))
    if init:
        context.add_init_script(init)
    page = watched_page(context, app)
    page.goto(app.url + path)
    wait_until(page, "plot('learn-figure') && settled('learn-figure') && settled('learn-head')", what="the first step")
    return context, page


def step_heading(lang, k):
    from app.i18n import text
    from app.learn_path import STEPS
    return text(lang, "learn.step", k=k, n=len(STEPS))


def do_the_action(page, step):
    """The step's action, as a person would do it: a slider moved by the keyboard, or another choice clicked."""
    if step.control.kind == "slider":
        page.locator("#learn-slider input[type=range]").focus()
        page.keyboard.press("End")
    else:
        page.locator("#learn-choice label").filter(has_not=page.locator("input:checked")).last.click()


# the step's heading at the top of the screen (app/page/learn-where.js puts it 8 px below the top), or as near it as the page
# scrolls: on a tall screen the page may end before the heading reaches the top
HEAD_AT_TOP = ("((t, end) => Math.abs(t - 8) < 24 || (end && t > 0 && t < innerHeight / 5))"
               "(el('#learn-head').getBoundingClientRect().top,"
               " scrollY + innerHeight >= document.documentElement.scrollHeight - 1)")


def read_the_step(page, k):
    """What a reader of step `k` on a phone meets: its heading at the top of the screen once it is drawn, and
    nothing in the tab that cannot be read (tests/readability.py: figure text under 9 px, texts over each other
    or under a button, number boxes cut, escaped markup, the page wider than the screen)."""
    from tests import readability
    wait_until(page, f"{HEAD_AT_TOP} && settled('learn-figure')", what=f"step {k}'s heading at the top of the screen")
    problems = readability.problems(page, "#learn")
    assert problems == [], f"step {k}: {problems}"


def walk_the_path(page, lang, phone):
    from app.i18n import text
    from app.learn_path import STEPS
    for k, step in enumerate(STEPS, start=1):
        wait_until(page, "text('#learn-head').includes(arg) && settled('learn-figure')",
                   f"{step_heading(lang, k)} · {text(lang, f'learn.{step.key}.title')}", what=f"step {k}")
        # after Next (or, for the first, the page's opening) the reader starts at the step's heading
        if phone:
            read_the_step(page, k)
        else:
            wait_until(page, HEAD_AT_TOP, what=f"step {k}'s heading at the top of the screen")
        figure = plot_text(page, "learn-figure")
        do_the_action(page, step)
        # the action redraws the figure
        wait_plot_change(page, "learn-figure", figure)  # else: the action left the figure as it was
        # a prediction, then the computed answer: a wrong first pick gets one more try (the second label's), a
        # right one or the second try shows the answer and marks the step done on the path, keeping its number
        for attempt in (1, 2):
            page.locator("#learn-question label").nth(attempt - 1).click()
            # the pick taken by the page before Check sends it (else Check answers "pick an answer first")
            wait_until(page, "el('#learn-question input:checked')", what=f"the prediction picked at step {k}")
            page.locator("#learn-check").click()
            wait_until(page, "/^[✓✗]/.test(text('#learn-answer').trim())", what=f"the answer of step {k}")
            if page.locator(f"#learn-path .learn-mark:nth-child({k}).done").count():
                break
        wait_until(page, "el(`#learn-path .learn-mark:nth-child(${arg})`)?.classList.contains('done')", k,
                   what=f"step {k} done")
        assert page.locator(f"#learn-path .learn-mark:nth-child({k})").inner_text() == str(k)
        if phone:
            sizes = page.evaluate("""() => ['#learn-next', '#learn-back', '#learn-check', '#learn-question label',
                '#learn-path button.learn-mark'].map(s => [s, document.querySelector(s).getBoundingClientRect()])
                .map(([s, r]) => [s, Math.min(r.height, s.includes('mark') ? r.width : r.height)])""")
            assert all(h >= 44 for _, h in sizes), sizes
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), f"step {k} scrolls sideways"
        if k < len(STEPS):
            page.locator("#learn-next").click()
    marks = page.locator("#learn-path .learn-mark.done").count()
    right = page.locator("#learn-path .learn-mark.done.right").count()
    assert marks == len(STEPS) and 0 < right < len(STEPS)
    assert text(lang, "learn.progress", done=len(STEPS), n=len(STEPS), right=right) in \
        page.locator("#learn-path").inner_text()


def test_the_learn_path_in_chinese_on_a_phone(app, browser):
    context, page = learner(app, browser, PHONE, "zh-CN")
    try:
        assert page.locator("#lang input[value='zh-CN']").is_checked()
        # every tab shows, none hides behind an overflow menu, and the Learn tab is the one open
        tabs = page.locator("[role=tab]")
        assert tabs.first.inner_text() == "学习" and tabs.first.get_attribute("aria-selected") == "true"
        assert page.evaluate("[...document.querySelectorAll('[role=tab]')].every(t => t.offsetWidth > 0)")
        # a touch on a figure scrolls the page: plotly's drag layer takes no pointer events on a phone
        assert page.evaluate("getComputedStyle(document.querySelector('#learn-figure .nsewdrag')).pointerEvents") \
            == "none"
        walk_the_path(page, "zh-CN", phone=True)
        # a tapped circle opens its step, its heading at the top of the screen
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.locator("#learn-path button.learn-mark[data-step='3']").tap()
        wait_until(page, "text('#learn-head').includes(arg)", step_heading("zh-CN", 3), what="step 3 from its circle")
        read_the_step(page, 3)
        assert page.locator("#learn-path button[aria-current=step]").get_attribute("data-step") == "3"
        # the current step's own circle, tapped from further down, brings its heading back
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.locator("#learn-path button.learn-mark[data-step='3']").tap()
        wait_until(page, HEAD_AT_TOP, what="step 3's heading back at the top from its own circle")
        # a sentence the tab cannot take is told under its box, in the page's language
        page.locator("#learn-src textarea").fill("   ")
        page.locator("#learn-go").click()
        from app.i18n import text
        wait_until(page, "text('#learn-notice').includes(arg)", text("zh-CN", "translate.status.empty"),
                   what="the notice under the sentence box")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_learn_path_in_english_at_desktop_width(app, browser):
    context, page = learner(app, browser, {"width": 1400, "height": 1000}, "en-US")
    try:
        assert page.locator("[role=tab]").first.inner_text() == "Learn"
        walk_the_path(page, "en", phone=False)
        # the last step's button opens its full tab (the Time-lapse, or the Training tab's log of the run where the
        # model ships no history)
        from app.learn_path import STEPS
        last = STEPS[-1].opens
        page.locator("#learn-open").click()
        wait_until(page, "el(`[role=tab][data-tab-id=${arg}]`)?.getAttribute('aria-selected') === 'true'", last,
                   what=f"the {last} tab")
        assert f"tab={last}" in page.url and f"learn={len(STEPS)}" in page.url
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_a_link_restores_a_learn_step_and_the_switch_changes_language(app, browser):
    from app.i18n import text
    context, page = learner(app, browser, {"width": 1000, "height": 900}, "en-US", "?learn=3&lang=zh-CN")
    try:
        wait_until(page, "text('#learn-head').includes(arg)", step_heading("zh-CN", 3), what="step 3 in Chinese")
        wait_until(page, HEAD_AT_TOP, what="the linked step's heading at the top of the screen")
        assert page.locator("[role=tab]").first.inner_text() == "学习"
        # a link without a sentence: the box shows the sentence the step is drawn on, the page's first example
        from app.shared import examples
        assert page.locator("#learn-src textarea, #learn-src input").first.input_value() == examples()[0]
        # its full view: the Inside tab at its LayerNorm sub-tab
        page.locator("#learn-open").click()
        wait_until(page, "el('[role=tab][data-tab-id=layernorm]')?.getAttribute('aria-selected') === 'true'",
                   what="Inside › LayerNorm")
        page.locator("[role=tab][data-tab-id=learn]").click()
        page.locator("#lang label").filter(has_text="English").click()
        wait_until(page, "text('#learn-head').includes(arg)", step_heading("en", 3), what="step 3 in English")
        wait_until(page, "el('[role=tab][data-tab-id=learn]').innerText.trim() === 'Learn'", what="the tab relabelled")
        assert text("en", "learn.layernorm.title") in page.locator("#learn-head").inner_text()
        assert page.errors == [], page.errors
        # an address that is not a step opens the first one (in a page of its own: leaving this one while the
        # switch's events still run would abort them, which Gradio logs as errors)
        other = watched_page(context, app)
        other.goto(app.url + "?learn=%3Cscript%3E99")
        wait_until(other, "text('#learn-head').includes(arg)", step_heading("en", 1), what="step 1")
        assert other.errors == [], other.errors
    finally:
        context.close()


# ---- one language at a time ------------------------------------------------------------------------------------

# Installed before the page's own scripts: at every frame (requestAnimationFrame runs just before the browser paints),
# the labels of the tab buttons that can be seen, each state recorded once, from the first paint on.
FIRST_PAINT_JS = """window.__tabsSeen = [];
const look = () => {
  const shown = [...document.querySelectorAll('[role=tab]')]
    .filter(b => b.offsetWidth > 0 && b.checkVisibility({visibilityProperty: true}));
  const labels = shown.map(b => b.textContent.trim()).join('|');
  if (labels && window.__tabsSeen.at(-1) !== labels) window.__tabsSeen.push(labels);
  requestAnimationFrame(look);
};
requestAnimationFrame(look);"""


def test_a_tab_button_drawn_in_a_frames_callback_is_relabelled_before_that_frame_is_painted(page):
    """Gradio writes a tab button's label in the language its config was read in (the browser's) and lays out its
    buttons in animation-frame callbacks: a button drawn there is in the page's language by the next callback of
    the same frame (a relabelling queued for the next frame let a Chinese browser paint an English page's tabs in
    Chinese once, the first-paint test's failure under load)."""
    label = page.evaluate("""() => new Promise((resolve) => {
        let button;
        requestAnimationFrame(() => {
          button = document.createElement('button');
          button.setAttribute('role', 'tab');
          button.dataset.tabId = 'overview';
          button.textContent = '概览';
          document.body.appendChild(button);
        });
        requestAnimationFrame(() => { resolve(button.textContent); button.remove(); });
    })""")
    assert label == "Overview"


@pytest.mark.parametrize("locale, path, stored, lang", [
    ("en-US", "?lang=zh-CN", None, "zh-CN"), ("zh-CN", "?lang=en", None, "en"), ("zh-CN", "", "en", "en"),
    ("zh-CN", "", None, "zh-CN"), ("zh-CN", "?lang=toString", None, "en")])
def test_the_first_paint_is_in_one_language(app, browser, locale, path, stored, lang):
    """The address's language, else the last choice, else the browser's: the tab buttons are painted in it from
    the first frame they show (never first in another), and the switch and Gradio's locale agree with it. An
    address's unknown language (even one named like a property of every object) reads as English."""
    from app.i18n import text
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale=locale)
    if stored:
        context.add_init_script(f"window.localStorage.setItem('explorer-lang', {json.dumps(stored)})")
    context.add_init_script(FIRST_PAINT_JS)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.app, page.errors, page.events = app, [], []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(app.url + path)
        wait_until(page, "plot('learn-figure') && settled('learn-figure') && settled('learn-head')", what="the first step")
        seen = page.evaluate("window.__tabsSeen")
        want = [text(lang, f"ui.tab.{t}") for t in ("learn", "overview", "translate")]
        assert seen and all(s.split("|")[:3] == want for s in seen), (want, seen)
        assert page.evaluate("document.documentElement.lang") == lang
        assert page.locator(f"#lang input[value='{lang}']").is_checked()
        assert page.errors == [], page.errors
    finally:
        context.close()


# every text a shown status tracker holds, sampled at every frame
STATUS_LINES_JS = """window.__statusSeen = new Set();
const lines = () => {
  document.querySelectorAll('[data-testid=status-tracker]:not(.hide)').forEach((t) => {
    const s = t.innerText.trim();
    if (s) window.__statusSeen.add(s);
  });
  requestAnimationFrame(lines);
};
requestAnimationFrame(lines);"""


def test_a_chinese_page_has_no_english_words_of_its_own(app, browser):
    """On a zh-CN page: Gradio's status lines, the SVG button and plotly's toolbar in Chinese; after five steps of the Learn path still one
    SVG button per figure; after a switch to English, the sub-tabs of Attention and Inside drawn later are
    labelled in English, and so are the buttons and the toolbar."""
    from app.i18n import table, text
    from app.learn_path import STEPS
    context, page = learner(app, browser, PHONE, "en-US", "?lang=zh-CN", init=STATUS_LINES_JS)
    try:
        # Gradio's lines while a translation runs ("processing |", "queue: 1/2 |"), in Chinese
        before = plot_text(page, "learn-figure")
        page.locator("#learn-src textarea").fill(SENTENCE)
        page.locator("#learn-go").click()
        wait_plot_change(page, "learn-figure", before)
        lines = page.evaluate("[...window.__statusSeen]")
        assert lines and not [t for t in lines if re.search(r"processing|queue", t)], lines
        svg = page.locator("#learn-figure .save-svg")
        assert svg.count() == 1
        assert (svg.inner_text(), svg.get_attribute("title")) == (text("zh-CN", "page.svg"),
                                                                 text("zh-CN", "page.svg_title"))
        plotly_en = {v for k, v in table("en").items() if k.startswith("plotly.")}
        titles = page.evaluate("[...document.querySelectorAll('#learn-figure .modebar-btn')].map(b => b.dataset.title)")
        assert titles and not [t for t in titles if t.split(" (v")[0] in plotly_en], titles
        for k in range(2, 7):  # five redraws of the step's figure
            page.locator("#learn-next").click()
            wait_until(page, "text('#learn-head').includes(arg) && settled('learn-figure')", step_heading("zh-CN", k),
                       what=f"step {k}")
        assert page.locator(".save-svg").count() == page.locator(".js-plotly-plot").count() == 1
        page.locator("#lang label").filter(has_text="English").click()
        wait_until(page, "text('#learn-head').includes(arg) && settled('learn-figure')",
                   f"{step_heading('en', 6)} · {text('en', f'learn.{STEPS[5].key}.title')}", what="step 6 in English")
        assert page.locator("#learn-figure .save-svg").inner_text() == text("en", "page.svg")
        en = table("en")
        for tab, subtabs in (("attention", ("one-head", "all-heads", "bertviz-head")),
                             ("inside", ("modules", "layernorm", "lens"))):
            page.locator(f"[role=tab][data-tab-id={tab}]").click()
            for sub in subtabs:  # Gradio draws a sub-tab's button when its tab opens, and again when it is chosen
                page.locator(f"[role=tab][data-tab-id={sub}]").click()
                wait_until(page, "el(`[role=tab][data-tab-id=${arg}]`)?.getAttribute('aria-selected') === 'true'",
                           sub, what=f"the {sub} sub-tab")
            shown = page.evaluate("[...document.querySelectorAll('[role=tab][data-tab-id]')].filter(b => b.offsetWidth)"
                                  ".map(b => [b.dataset.tabId, b.textContent.trim()])")
            want = {i: en.get(f"ui.tab.{i}", en.get(f"ui.{tab}.tab.{i}")) for i, _ in shown}
            assert [label for i, label in shown if label != want[i]] == [], (want, shown)
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_a_learn_step_asks_before_it_shows_and_keeps_what_it_showed(app, browser):
    """The Noam step on a desktop: the question sits above the action and the figure, and until Check neither the
    fact line nor the figure's rate axis gives the peak away; Check shows both, and the step stays revealed through
    Next and Back and through the language switch."""
    from app import learn_path
    from app.i18n import speaking, text
    noam = learn_path.KEYS.index("noam") + 1  # its number on the path (?learn=K counts from 1)
    context, page = learner(app, browser, {"width": 1400, "height": 900}, "en-US", f"?learn={noam}&lang=en")
    try:
        wait_until(page, "text('#learn-head').includes(arg) && settled('learn-figure')", step_heading("en", noam),
                   what=f"step {noam}")
        tops = page.evaluate("""() => ['#learn-question', '#learn-check', '#learn-slider', '#learn-figure',
            '#learn-fact'].map(s => document.querySelector(s).getBoundingClientRect().top)""")
        assert tops == sorted(tops), tops  # the question and its check come first, the evidence after
        with speaking("en"):
            choices, right, values = learn_path.quiz_noam(learn_path.context(None))
        peak = choices[right]
        assert peak not in text_of(page, "#learn-fact") and peak not in plot_text(page, "learn-figure")
        ticks = page.locator("#learn-figure .ytick").count()
        page.locator("#learn-question label").filter(has_text=peak).click()
        page.locator("#learn-check").click()
        wait_until(page, "text('#learn-answer').trim().startsWith('✓') && text('#learn-fact').includes(arg) "
                   "&& settled('learn-figure')", peak, what="the answer and the peak it kept back")
        assert page.locator("#learn-figure .ytick").count() > ticks  # the rate's scale, drawn now
        for button, k in (("#learn-back", noam - 1), ("#learn-next", noam)):
            page.locator(button).click()
            wait_until(page, "text('#learn-head').includes(arg) && settled('learn-fact')", step_heading("en", k),
                       what=f"step {k}")
        wait_until(page, "text('#learn-fact').includes(arg)", peak, what=f"step {noam}, still revealed")
        page.locator("#lang label").filter(has_text="中文").click()
        wait_until(page, "text('#learn-head').includes(arg) && text('#learn-answer').trim().startsWith('✓')",
                   step_heading("zh-CN", noam), what=f"step {noam} in Chinese, still revealed")
        assert text("zh-CN", "learn.noam.seen", peak=peak) in text_of(page, "#learn-fact")
        assert page.errors == [], page.errors
    finally:
        context.close()


def test_the_patching_steps_button_opens_compare_on_its_own_sentences(app, browser):
    """The Learn path's patching step: its button opens Compare › Two sentences with the sentence the step drew and
    the edited copy in the boxes, and the grid patched for them (the Patch button pressed)."""
    from app import learn_path
    from app.edits import edited_default
    from app.i18n import text
    from app.shared import examples, get_translator
    k = learn_path.KEYS.index("patching") + 1
    context, page = learner(app, browser, {"width": 1400, "height": 900}, "en-US", f"?learn={k}&lang=en")
    try:
        wait_until(page, "text('#learn-head').includes(arg) && settled('learn-figure')", step_heading("en", k),
                   what=f"step {k}")
        page.locator("#learn-open").click()
        wait_until(page, "el('[role=tab][data-tab-id=sentences]')?.getAttribute('aria-selected') === 'true'",
                   what="Compare › Two sentences")
        sentence = examples()[0]
        edited = edited_default(sentence, get_translator().tokenizer)
        assert edited != sentence
        wait_until(page, "el('#cmp-original textarea')?.value === arg[0] && el('#cmp-edited textarea')?.value === arg[1]",
                   [sentence, edited], what="the step's sentences in Compare's boxes")
        wait_until(page, "text('#cmp-patch-status').includes(arg) && plot('cmp-grid') && settled('cmp-grid')",
                   text("en", "compare.patch.status.done", model="shipped"), what="the grid patched for them")
        assert "tab=compare" in page.url and "sentences" in page.url
        assert page.errors == [], page.errors
    finally:
        context.close()


# ---- every tab in Chinese --------------------------------------------------------------------------------------

# the short texts a person reads as a page's labels: component labels, buttons, choices, tabs, accordions' titles
LABELS_JS = """(panel) => [...panel.querySelectorAll(
    '[data-testid=block-info], button, label > span, [role=tab], .label-wrap > span, [data-testid=block-label]')]
  .filter(e => e.offsetWidth > 0).map(e => e.innerText.trim()).filter(t => t)"""


TITLED_PLOTS = {"attention": "heatmap", "why": "why-source", "whatif": "whatif-tree", "inside": "in-treemap",
                "masks": "m-masks", "positional": "pe-curves", "training": "r-fig", "lab": "lab-curve"}


def test_every_tab_in_chinese_shows_its_labels_in_chinese(app, browser):
    """Each top-level tab opened on a zh-CN page on a phone: none of its labels is one of the page's English
    strings, no key is shown in place of a label, its first figure is titled in Chinese, and nothing scrolls
    sideways."""
    from app.i18n import table
    from tools.i18n_report import english
    en, zh = table("en"), table("zh-CN")
    english_labels = {s for k, s in en.items() if k.startswith("ui.") and english(s) and zh[k] != s}
    context, page = learner(app, browser, PHONE, "zh-CN")
    try:
        ids = page.evaluate("[...document.querySelectorAll('[role=tab][data-tab-id]')]"
                            ".filter(b => b.closest('.tabs') === document.querySelector('.tabs'))"
                            ".map(b => b.dataset.tabId)")  # the top level's tabs
        assert ids == TOP_TABS, ids
        for tab in ids:
            page.locator(f"[role=tab][data-tab-id='{tab}']").click()
            # its panel shown, with its labels drawn (Gradio mounts a tab when it is first opened)
            wait_until(page, """(() => { const panel = [...el('.tabs').children]
                .find(e => e.matches('[role=tabpanel]') && e.offsetHeight);
              return panel && /[\\u4e00-\\u9fff]/.test(panel.innerText); })()""", what=f"the {tab} tab in Chinese")
            panel = page.evaluate_handle("[...document.querySelector('.tabs').children]"
                                         ".find(e => e.matches('[role=tabpanel]') && e.offsetHeight)")
            labels = page.evaluate(LABELS_JS, panel)
            left = [t for t in labels if t in english_labels]
            assert left == [], (tab, left)
            assert not [t for t in labels if "__i18n__" in t], tab
            if tab in TITLED_PLOTS:  # a figure drawn at run time, its title in the page's language
                wait_until(page, "/[\\u4e00-\\u9fff]/.test(plot(arg)?.querySelector('.gtitle')?.textContent ?? '')",
                           TITLED_PLOTS[tab], what=f"the {tab} tab's figure titled in Chinese")
            wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 0, f"the {tab} tab scrolls {wide} px sideways on a phone"
        assert "__i18n__" not in page.locator("body").inner_text()
        assert page.errors == [], page.errors
    finally:
        context.close()

