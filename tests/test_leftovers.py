"""Leftovers of the page read as a reader reads it: the Learn path's masks and teacher-forcing steps on a phone for any
length of sentence, the Inside tab's LayerNorm menu of the model of the translation it draws, the Engineering tab
saying whose figures it shows, and the Lab's view during a run when the reader chooses another configuration."""
import contextlib
import os
import signal
import time
import warnings
from pathlib import Path

import pytest

from app import learn_path
from app.figures import learn as learn_figures
from app.i18n import LANGS, in_language
from tests.conftest import needs_shipped
from tests.test_learn import COLUMN_PX, LABEL_ROW_PX, SCREEN_PX

LONG55 = ("Eine junge Frau mit einem roten Regenschirm und ein älterer Mann mit einer blauen Mütze gehen langsam "
          "über die nasse Brücke, während hinter ihnen zwei kleine Hunde im Regen mit einem gelben Ball spielen "
          "und laut bellen, weil sie heute glücklich sind.")


def said(fn, *args, lang, **kwargs):
    """fn(*args) as an event of the page in `lang` runs it (app.i18n.in_language)."""
    return in_language(fn)(*args, lang=lang, **kwargs)


def _rows_shown(fig, layout, n):
    """The rows of a step's map a reader sees at first (the first window's where it has windows), after checking
    that each window has its button, showing its rows; and the plot's height per row shown."""
    windows = learn_figures.row_windows(n)
    (a, b), menus = windows[0], layout.get("updatemenus") or []
    if len(windows) > 1:
        assert list(fig.layout.yaxis.range) == [b + 0.5, a - 0.5]
        assert [m["args"][0]["yaxis.range"] for m in menus[0]["buttons"]] == [[y + 0.5, x - 0.5] for x, y in windows]
    else:
        assert not menus and fig.layout.yaxis.autorange == "reversed"
    margin = layout["margin"]
    return b - a + 1, (layout["height"] - margin["t"] - margin["b"]) / (b - a + 1)


@needs_shipped
@pytest.mark.parametrize("lang", LANGS)
def test_step_5s_maps_fit_a_phone_for_any_length_of_sentence(lang):
    """Step 5's three figures (the German's padding table, the subsequent mask, both masks) for 13 pieces, 55 and
    128 (a 1,000-character input, cut), drawn as the page draws them (margins fitted): at most a screen tall, each
    row of a window given a label's height and labelled, the long ones in windows of rows as step 4's map; the
    decoder's maps give every column a turned label's width at 390 px; before Check, each window with padding rows
    says that they wait for it. Drawn whole, the 128-piece table was 1,478 px tall, the 55-piece one 1,280 and
    that sentence's maps 686 (now 456, 522 and 416)."""
    from app.common import BOX_EXTRA
    from app.figures.margins import fit
    from app.shared import examples, get_translator
    tr = get_translator()
    for typed in (examples()[0], LONG55, ("Der Hund läuft. " * 70)[:1000]):
        ins = tr.inspect(typed, method="greedy")
        for which in ("padding", "subsequent", "both"):
            c = learn_path.context(ins)
            batch = learn_figures.mask_batch(c)
            fig, _ = said(learn_figures.draw_masks, c, which, lang=lang)
            layout = fit(fig.to_plotly_json())["layout"]
            n = batch.src.size(1) if which == "padding" else batch.tgt.size(1)
            where = (len(ins.src_tokens), which, n)
            assert layout["height"] + BOX_EXTRA <= SCREEN_PX + BOX_EXTRA, (where, layout["height"])
            shown, per_row = _rows_shown(fig, layout, n)
            assert per_row >= LABEL_ROW_PX, (where, per_row)
            if which == "padding":
                assert fig.layout.yaxis.dtick == 1, where  # every row of a window labelled
                for menu in layout.get("updatemenus") or []:  # the buttons above the column names, not over them
                    assert menu["pad"]["b"] >= learn_figures.TOP_LABELS_PX, (where, menu["pad"])
                continue
            assert list(fig.layout.yaxis.tickvals) == list(range(n)) == list(fig.layout.xaxis.tickvals)
            width = (fig.layout.meta or {}).get("phone_width") or learn_figures.LEARN_FITS
            assert (width - layout["margin"]["l"] - layout["margin"]["r"]) / n >= COLUMN_PX, (where, width)
            notes = [a.y for a in fig.layout.annotations if a.yref == "y"]
            if which == "both":  # before Check: the padding rows blank, a note among them in every window that has some
                _, _, real = learn_figures.pad_query_reach(batch)
                for a, b in learn_figures.row_windows(n):
                    assert (b >= real) == any(max(a, real) <= y <= b for y in notes), (where, (a, b), real, notes)
            else:
                assert notes == [], where


LONG_ENGLISH = ("A young woman with a red umbrella and an older man with a blue cap walk slowly across the wet bridge, "
                "while behind them two small dogs play in the rain with a yellow ball and bark loudly, because they "
                "are happy today, and a child in a green coat watches them from a window of the old house by the river.")


@needs_shipped
@pytest.mark.parametrize("lang", LANGS)
def test_the_teacher_steps_table_fits_a_phone_for_any_length_of_translation(lang):
    """The teacher-forcing step's table (a row for each position of the translation) for the 55-piece sentence,
    decoded and with a long English recorded as its output: at most a screen tall, its rows in windows as steps 4
    and 5 show theirs where there are many, every row of a window given a label's height and labelled, and the
    window shown the one that holds the slider's position, its button lit. Drawn whole, the 55-piece sentence's
    28-piece translation was 686 px tall (412 now, zh-CN) and a translation grew 22 px a piece."""
    from app.common import BOX_EXTRA
    from app.figures.margins import fit
    from app.shared import get_translator
    tr = get_translator()
    for ins in (tr.inspect(LONG55, method="beam"), tr.inspect(LONG55, output=LONG_ENGLISH)):
        c = learn_path.context(ins)
        n = len(ins.out_tokens)
        windows = learn_figures.row_windows(n)
        for pos in sorted({1, n // 2, n}):
            fig, values = said(learn_figures.draw_teacher, c, pos, lang=lang)
            layout = fit(fig.to_plotly_json())["layout"]
            where = (n, pos)
            assert values["pos"] == pos and layout["height"] + BOX_EXTRA <= SCREEN_PX + BOX_EXTRA, (where, layout["height"])
            k = next(i for i, (a, b) in enumerate(windows) if a <= pos - 1 <= b)
            a, b = windows[k]
            menus = layout.get("updatemenus") or []
            if len(windows) > 1:
                assert list(fig.layout.yaxis.range) == [b + 0.5, a - 0.5] and menus[0]["active"] == k, where
                assert menus[0]["pad"]["b"] >= learn_figures.TOP_LABELS_PX, where  # above the column names
            else:
                assert not menus and fig.layout.yaxis.autorange == "reversed", where
            per_row = (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]) / (b - a + 1)
            assert per_row >= LABEL_ROW_PX, (where, per_row)
            assert list(fig.layout.yaxis.tickvals) == list(range(n)), where  # every row labelled, from 1
        assert n < 24 or len(windows) > 1, n
    assert n > 40, n  # the recorded English: windows of rows


# a Marian model as transformers saves one, small, converted (tests/test_converted_app.py's shape): post-norm, two
# layers a side, no final LayerNorm, where the shipped model is pre-norm with three and a final one each side
SMALL = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
             activation_function="swish")


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory):
    """A folder of models as EXPLORER_MODELS names one, holding a converted Marian model, "tiny-marian"."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")
    from core.convert import convert
    from core.convert.random_opus import made_up_pairs, write_marian
    root = tmp_path_factory.mktemp("leftover-models")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = write_marian(root / "hf", SMALL, dict(num_beams=4, max_length=64), made_up_pairs(300, seed=3), 150,
                              seed=3, scale=3.0)
        convert(source, root / "models" / "tiny-marian")
    return root / "models"


def _menu_words(choices, lang):
    """A menu's choices as the page shows them in `lang`: (words, value)."""
    from app.i18n import i18n
    words = i18n().translations[lang]
    return [(words.get(getattr(label, "key", None), label) if not isinstance(label, str) else label, value)
            for label, value in choices]


@needs_shipped
@pytest.mark.slow  # a Marian model is built, saved, given trained tokenizers and converted; the page is built
def test_the_layernorm_menu_follows_the_model_of_the_translation(marian_folder, monkeypatch):
    """The Inside tab's LayerNorm menu lists the LayerNorms of the model whose translation its view draws: after a
    translation by the converted Marian model, its ten (post-norm: each after its sublayer's residual sum, in both
    languages; no final one), the one chosen kept where it has it and the first otherwise; after one by the
    shipped model, its seventeen again. Before, it kept the shipped model's seventeen, "before" each sublayer, with
    the two final LayerNorms Marian lacks (its view then drew another LayerNorm than the one the menu showed)."""
    from app.shared import model_of
    from app.translating import translate
    from app.ui import build_demo
    from core.analysis.inside import layer_norms
    from tests.events import call, dependency
    monkeypatch.setenv("EXPLORER_MODELS", str(marian_folder))
    event = dependency(build_demo(), "norm_menu")
    (menu,), state = event.outputs, event.inputs[event.input_parameter_names.index("ins")]
    assert menu.elem_id == "in-ln" and (state._id, "change") in [tuple(t) for t in event.targets]
    _, _, marian = translate("Ein Mann läuft auf der Straße.", "greedy", model="tiny-marian")
    _, _, shipped = translate("Ein Mann läuft auf der Straße.", "greedy")
    norms = list(layer_norms(model_of(marian).model))
    assert marian.model == "tiny-marian" and len(norms) == 10 and "encoder.norm" not in norms
    for chosen, kept in (("encoder.layers.1.sublayer.1.norm", True), ("encoder.norm", False)):
        update = call(event, ins=marian, norm=chosen, lang="en")
        assert [v for _, v in update["choices"]] == norms
        assert update["value"] == (chosen if kept else norms[0])
        for lang, after in (("en", "after"), ("zh-CN", "之后")):
            shown = _menu_words(update["choices"], lang)
            assert all(after in words for words, _ in shown), shown
    update = call(event, ins=shipped, norm="encoder.norm", lang="en")
    assert [v for _, v in update["choices"]] == list(layer_norms(model_of(shipped).model))
    assert len(update["choices"]) == 17 and update["value"] == "encoder.norm"
    shown = _menu_words(update["choices"], "en")
    assert all("before" in w for w, v in shown if not v.endswith("coder.norm")), shown


@needs_shipped
@pytest.mark.slow  # the converted model of the test above
def test_the_engineering_tab_says_whose_figures_it_shows(marian_folder, monkeypatch):
    """The Engineering tab opens by naming the model its figures describe, in both languages: the page's own (the
    shipped model; a converted one by its directory's name, escaped), whatever model a session's menu chooses
    (the tab is written once, as the page is built). Before, nothing in it said whose they were."""
    from app.common import md_literal
    from app.tabs.engineering import written_sections
    from tests.conftest import clear_app_caches
    for own, name in ((None, {"en": "the shipped model", "zh-CN": "随附的模型"}),
                      (marian_folder / "tiny-marian", {lang: md_literal("tiny-marian") for lang in LANGS})):
        monkeypatch.delenv("EXPLORER_MODEL_DIR", raising=False)
        if own is not None:
            monkeypatch.setenv("EXPLORER_MODEL_DIR", str(own))
        clear_app_caches()
        try:
            (key, said_in), *rest = written_sections()
        finally:
            monkeypatch.delenv("EXPLORER_MODEL_DIR", raising=False)
            clear_app_caches()
        assert key == "ui.engineering.of" and "ui.engineering.of" not in [k for k, _ in rest]
        assert name["en"] in said_in["en"] and "page's own model" in said_in["en"], said_in
        assert name["zh-CN"] in said_in["zh-CN"] and "本页面自己的模型" in said_in["zh-CN"], said_in


@needs_shipped
@pytest.mark.slow  # the run's served app (its Lab capped at 40 steps) in Chromium, and a run trained
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium not installed")
def test_a_break_toggled_while_the_lab_trains_shows_the_configuration_chosen(served_app, chromium):
    """The Lab's view is drawn by its tab's listener alone, from the controls and the state each point of a run
    sets: a break unticked while the run trains shows the configuration now chosen until the run ends (the Train
    event once drew its next points over it); ticked again, the run's result. The run's process is held (SIGSTOP)
    as it starts until the reader's change is drawn, so that the run still trains then, however busy the machine
    (20 steps and the evaluation once ended before the drawing came). Its points are not waited for: the listener
    (always_last) draws the newest state once its last drawing is answered, and a toy run's 40 steps can come
    within one drawing (test_lab's tests check a Training is set at each point)."""
    from tests.conftest import browser_page
    from tests.test_browser import TIMEOUT_MS, js, open_tab, wait_until
    with browser_page(chromium, served_app, TIMEOUT_MS) as (page, errors):
        page.goto(served_app.url)
        open_tab(page, "Lab", "#lab-curve")
        wait_until(page, "text('#lab-result').includes('exact match')", what="the shipped result")
        page.locator("#lab-accum label", has_text="4").click()
        page.locator("#lab-layers label", has_text="6").click()
        for name in ("no_warmup", "untied"):
            page.locator("#lab-breaks label", has_text=name).click()
        wait_until(page, "text('#lab-result').includes('copy/no_warmup+untied@6') && "
                   "text('#lab-result').includes('has not been trained yet')", what="the note of the run to train")
        page.locator("#lab-train").click()
        run = lab_run(served_app)
        with held(run):  # as it starts: the reader's change is drawn while the run trains, however busy the machine
            wait_until(page, "text('#lab-result').includes('Starting copy/no_warmup+untied@6') && settled('lab-result')",
                       what="the run starting")
            page.locator("#lab-breaks label", has_text="untied").click()
            running = page.wait_for_function(js(
                "text('#lab-result').includes('copy/no_warmup@6') && text('#lab-result').includes('has not been "
                "trained yet') && !plotText('lab-curve').includes('this run') && text('#lab-progress')"),
                timeout=TIMEOUT_MS)
            assert "steps to go" in running.json_value(), running.json_value()  # drawn while the run trains
            page.evaluate(WATCH_UNTICKED)  # from now until `untied` is ticked again: whatever names the run
        wait_until(page, "text('#lab-progress').startsWith('✓')", what="the run's end")
        page.evaluate("window.__retick = true")
        page.locator("#lab-breaks label", has_text="untied").click()
        wait_until(page, "text('#lab-result').includes('copy/no_warmup+untied@6') && / steps in /.test(text('#lab-result')) "
                   "&& /exact match \\d/.test(plotText('lab-curve')) && el('#lab-examples table')",
                   what="the run's result, its examples with it")
        overwritten = page.evaluate("window.__overwritten")
        assert overwritten == [], overwritten  # the run's points and result drew over the configuration chosen
        assert errors == []


def lab_run(app, within=60.0):
    """The pid of the Lab's run the served app starts (its child `python -m core.lab`), looked for until it is
    there (a run just asked for is a process a moment later; Python and torch take seconds to start in it)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                cmd = (stat.parent / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue  # (a process that ended meanwhile)
            if ppid == app.proc.pid and b"core.lab" in cmd:
                return int(stat.parent.name)
        time.sleep(0.02)  # (a process appearing has no event to wait on)
    raise AssertionError(f"no Lab run under the app (pid {app.proc.pid}) within {within:.0f} s")


@contextlib.contextmanager
def held(pid):
    """The process `pid` stopped (SIGSTOP) while the block runs, then let go."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# the Lab's curve title and the line over it, each time they change, while they name the run trained (`untied`
# unticked: they should name copy/no_warmup@6) and `untied` is not ticked again
WATCH_UNTICKED = """() => { window.__overwritten = [];
  const read = () => [document.querySelector('#lab-result')?.innerText ?? '',
                      document.querySelector('#lab-curve .gtitle')?.textContent ?? ''];
  new MutationObserver(() => { if (window.__retick) return;
    for (const s of read()) if (s.includes('+untied') && !window.__overwritten.includes(s)) window.__overwritten.push(s); })
    .observe(document.querySelector('#lab-result').closest('.gradio-container') ?? document.body,
             {subtree: true, childList: true, characterData: true}); }"""
