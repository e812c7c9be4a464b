"""A view is computed when it is shown (app/views.py): a translation draws the views on screen and clears the
others, opening a tab draws its views from the kept Inspection, a control redraws the views that read it, and
nothing is drawn twice for the same translation and controls. The figure builders are counted."""
import collections
import html
import inspect

import gradio as gr
import pytest

from app import tabs, views
from app.shared import examples
from app.tabs import attention, learn, masks, overview, positional, training, translate
from app.ui import build_demo
from tests.conftest import needs_shipped

pytestmark = needs_shipped

BUILDERS = {translate: ("token_probs_html", "step_slider", "mask_svg", "step_candidates"),
            overview: ("architecture_svg",),
            attention: ("attention_heatmap", "head_grid", "layer_head_overview", "head_view_html", "model_view_html")}
SKIP = gr.skip()


def translation_callback(demo):
    """The callback a page runs after each translation (app/ui.py): it takes the page, the Inspection, then the
    controls of every tab that shows a translation, and returns the values of their views, tabs in page order."""
    (fn,) = {d.fn for d in demo.fns.values() if getattr(d.fn, "__name__", None) == "show_translation"}
    return fn


def up_to_attention(kind="encoder", layer=0, head=0, lang="en"):
    """The controls the translation callback takes, in page order, of the tabs up to the Attention tab: the
    Learn tab's progress and language, the Overview's and the Translate tab's language, the Attention tab's kind,
    layer, head and language (the later tabs' take their first values)."""
    return None, lang, lang, lang, kind, layer, head, lang


@pytest.fixture(scope="module")
def demo():
    return build_demo()


@pytest.fixture(scope="module")
def show_translation(demo):
    return translation_callback(demo)


@pytest.fixture(scope="module")
def two():
    """Two translations of different lengths."""
    first = translate.translate("Zwei Hunde spielen im Schnee.", "greedy")[2]
    second = translate.translate(examples()[0], "greedy")[2]
    assert len(first.src_tokens) != len(second.src_tokens)
    return first, second


@pytest.fixture
def calls(monkeypatch):
    """How many times each figure builder ran (the builders still run)."""
    counts = collections.Counter()
    for module, names in BUILDERS.items():
        for name in names:
            def counted(*a, _real=getattr(module, name), _name=name, **k):
                counts[_name] += 1
                return _real(*a, **k)
            monkeypatch.setattr(module, name, counted)
    return counts


def new_page(tab):
    return {"open": {views.ROOT: tab, "attention": "one-head"}, "drawn": {}}


LEARN = learn.VIEWS[0].outputs  # the outputs of the Learn tab, the first of the translation event's


def open_and_show(page, where, show, *inputs):
    return views.opener(where, show)(page, *inputs)


def tokens_on_y(fig):
    return list(fig.layout.yaxis.ticktext)


def escaped(tokens):
    return [html.escape(t, quote=False) for t in tokens]


def test_a_translation_draws_the_open_tab_and_opening_another_draws_it(two, calls, show_translation):
    ins, _ = two
    page = new_page("translate")
    out = show_translation(page, ins, *up_to_attention())
    # the Learn tab comes first: closed here, its view is skipped
    assert out[:LEARN] == (SKIP,) * LEARN
    out = out[LEARN:]
    # the token strip, the status line and the step replay (slider, input so far, mask, candidates); nothing of
    # the closed tabs (the Overview's diagram comes first, the tabs in page order)
    assert all(v != SKIP for v in out[1:7]) and all(v == SKIP for v in (out[0], *out[7:]))
    assert dict(calls) == {"token_probs_html": 1, "step_slider": 1, "mask_svg": 1, "step_candidates": 1}
    # opening the Attention tab draws its open sub-tab's view only, for the same sentence
    heat, *rest = open_and_show(page, ("attention",), attention.show, ins, "encoder", 0, 0)
    assert calls["attention_heatmap"] == 1 and all(v == SKIP for v in rest)
    assert tokens_on_y(heat) == escaped(ins.src_tokens)
    assert calls["head_grid"] == calls["layer_head_overview"] == calls["head_view_html"] == 0
    # opened again, nothing changed: nothing is drawn or sent
    assert all(v == SKIP for v in open_and_show(page, ("attention",), attention.show, ins, "encoder", 0, 0))
    assert all(v == SKIP for v in open_and_show(page, ("translate",), translate.show, ins))
    assert calls["attention_heatmap"] == 1 and calls["step_candidates"] == 1
    # the bertviz head view when its sub-tab opens; the model view stays unbuilt
    out = open_and_show(page, ("attention", "bertviz-head"), attention.show, ins, "encoder", 0, 0)
    assert out[3].startswith("<iframe") and calls["head_view_html"] == 1 and calls["model_view_html"] == 0
    # the Overview's diagram when its tab opens, with this sentence's shapes
    (svg,) = open_and_show(page, ("overview",), overview.show, ins)
    assert calls["architecture_svg"] == 1 and f"memory 1 × {len(ins.src_tokens)} ×" in svg


def test_controls_redraw_only_the_views_that_read_them(two, calls):
    ins, _ = two
    page = new_page("attention")
    open_and_show(page, ("attention", "bertviz-head"), attention.show, ins, "encoder", 0, 0)
    assert attention.show(page, ins, "decoder", 2, 5) == (SKIP,) * 5  # bertviz reads no control
    assert calls["head_view_html"] == 1
    grid = open_and_show(page, ("attention", "all-heads"), attention.show, ins, "decoder", 2, 5)[1]
    assert grid.layout.title.text.endswith("all heads of layer 2") and calls["head_grid"] == 1
    assert attention.show(page, ins, "decoder", 2, 7) == (SKIP,) * 5  # the grid does not read the head
    heat = open_and_show(page, ("attention", "one-head"), attention.show, ins, "decoder", 2, 7)[0]
    assert "layer 2, head 7" in heat.layout.title.text and calls["attention_heatmap"] == 1
    assert tokens_on_y(heat) == escaped(ins.tgt_tokens)
    assert calls["head_grid"] == 1 and calls["layer_head_overview"] == 0


def test_a_new_translation_clears_the_hidden_views_of_the_last_one(two, calls, show_translation):
    first, second = two
    page = new_page("translate")
    show_translation(page, first, *up_to_attention())
    for sub in ("all-heads", "bertviz-model", "one-head"):
        open_and_show(page, ("attention", sub), attention.show, first, "encoder", 0, 0)
    out = show_translation(page, second, *up_to_attention())[LEARN:]
    diagram, probs, status, slider, info, mask, cands, heat, grid, layers, bv_head, bv_model, *later = out
    assert later == [SKIP] * len(later)  # the tabs after Attention: hidden and never drawn
    # on screen: the one-head view, drawn for the new sentence; the token strip and the status line always
    assert tokens_on_y(heat) == escaped(second.src_tokens) and "tok" in probs
    assert f"{len(second.src_tokens)} source pieces" in status
    # hidden and drawn for the first sentence: cleared, so no tab shows its figures beside the new tokens
    assert (info, mask, cands) == ("", "", "") and slider.interactive is False
    assert grid is None and bv_model == ""
    # hidden and never drawn: left alone
    assert diagram == SKIP and layers == SKIP and bv_head == SKIP
    # opened again, each draws the new sentence
    grid = open_and_show(page, ("attention", "all-heads"), attention.show, second, "encoder", 0, 0)[1]
    assert list(grid.data[0].y) == attention.positions(second.src_tokens)
    *_, cands = open_and_show(page, ("translate",), translate.show, second)
    assert "Step 1: next-token" in cands


def test_tabs_without_a_translation_draw_when_first_opened():
    page = new_page("translate")
    tabs = [(("masks",), masks.show, (masks.DEFAULT_DE, masks.DEFAULT_EN, 1, "decoder", 0, 0)),
            (("positional",), positional.show, (256, 100, "4, 5, 6, 7", 5)),
            (("training",), training.show, (10, 512, 1.0, 4000, 0.1))]
    for where, show, controls in tabs:
        # before its tab is opened a view draws nothing, even when asked
        assert all(v == SKIP for v in show(page, *controls))
        first = open_and_show(page, where, show, *controls)
        assert all(v != SKIP for v in first)
        assert all(v == SKIP for v in open_and_show(page, where, show, *controls))
    # a control moved in the open tab redraws the views that read it: here the Noam figure alone
    out = training.show(page, 10, 512, 1.0, 8000, 0.1)
    assert [v != SKIP for v in out] == [False, False, True, False, False, False, False]


def test_shown_follows_the_open_tab_at_every_level():
    page = new_page("overview")
    assert views.shown(page, ()) and views.shown(page, ("overview",)) and not views.shown(page, ("attention",))
    assert not views.shown(page, ("attention", "one-head"))  # its sub-tab is open, but not the Attention tab
    views.open_tab(page, ("attention", "bertviz-head"))
    assert views.shown(page, ("attention", "bertviz-head")) and not views.shown(page, ("attention", "one-head"))
    views.open_tab(page, ("masks",))
    assert not views.shown(page, ("attention", "bertviz-head"))
    views.open_tab(page, ("attention",))  # back to the Attention tab: the sub-tab open before is open again
    assert views.shown(page, ("attention", "bertviz-head"))


def test_each_tab_names_the_controls_its_views_read(monkeypatch):
    """What each tab's build() returns (app/views.py tab_views): its controls by name, in the order its show()
    takes them, every name a view reads among them, one output a drawn value; the page's translation event
    reads them all."""
    built = []

    def recorded(*args, **kw):
        built.append(views.tab_views(*args, **kw))
        return built[-1]

    for name in tabs.__all__:
        if hasattr(getattr(tabs, name), "tab_views"):
            monkeypatch.setattr(getattr(tabs, name), "tab_views", recorded)
    demo = build_demo()
    assert len(built) == len(tabs.__all__) - 1  # every tab but Engineering, which has no views
    for tab in built:
        takes = list(inspect.signature(tab.show).parameters)[1 + tab.shows_translation:]
        names = list(tabs.inside.DEFAULTS) if tab.show is tabs.inside.show else takes
        assert list(tab.controls) == names, tab.show.__module__
        assert all(set(v.uses) <= set(tab.controls) for v in tab.views), tab.show.__module__
        assert len(tab.outputs) == sum(v.outputs for v in tab.views), tab.show.__module__
    shown = [t for t in built if t.shows_translation]
    assert [t.show.__module__.rpartition(".")[2] for t in shown] == ["learn", "overview", "translate", "attention",
                                                                    "heads", "why", "whatif", "inside"]
    events = [d for d in demo.fns.values() if d.fn is translation_callback(demo)]
    assert len(events) == 3  # after a translation, one from the Learn tab's box, and the page load's linked one
    for event in events:
        assert len(event.inputs) == 2 + sum(len(t.controls) for t in shown)
        assert len(event.outputs) == sum(len(t.outputs) for t in shown)


def language_callback(demo):
    """The callback of the page's language switch (app/ui.py) and its event."""
    (event,) = [d for d in demo.fns.values() if getattr(d.fn, "__name__", None) == "show_language"]
    return event.fn, event


def test_one_event_redraws_every_tab_in_a_new_language(demo, two):
    """A change of language is one event for every tab but Learn and Translate (which redraw themselves): it
    reaches every other tab's outputs, draws what is on screen in the new language, and sends nothing else."""
    lang = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang")
    fn, event = language_callback(demo)
    assert (lang._id, "change") in event.targets and event.concurrency_id == "model"
    others = [t for t in demo.tab_views if t.show.__module__.rpartition(".")[2] not in ("learn", "translate")]
    assert len(others) == 10 and len(event.outputs) == sum(len(t.outputs) for t in others)
    assert [c for c in event.inputs[2:]] == [c for t in others for c in t.controls.values()]
    # no tab wires a change of language of its own but the two
    own = {d.fn.__name__ for d in demo.fns.values() if (lang._id, "change") in d.targets and d.fn is not None}
    assert own == {"show_language", "render", "relabel"}, own
    ins, _ = two
    page = new_page("attention")
    values = [c.value for t in others for c in t.controls.values()]
    lang_at = [i for i, c in enumerate(event.inputs[2:]) if c is lang]
    first = fn(page, ins, *values)  # the Attention tab's one-head view drawn in English
    for i in lang_at:
        values[i] = "zh-CN"
    second = fn(page, ins, *values)
    drawn = [i for i, v in enumerate(second) if v is not SKIP and v != SKIP]
    assert len(drawn) == 1 and "层" in second[drawn[0]].layout.title.text  # only what is on screen, in Chinese
    assert "layer" in first[drawn[0]].layout.title.text
    assert all(v == SKIP for v in fn(page, ins, *values))  # drawn in that language already


def test_the_language_switch_redraws_the_views_of_the_overview_translate_attention_and_why_tabs(demo, two):
    """Each of these tabs reads the page's language as a control: its change redraws the views on screen (in the
    Translate tab the replay stays at its step), and a view drawn in one language is drawn again in the other."""
    lang = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang")
    redrawn = {getattr(c, "elem_id", None) for d in demo.fns.values() if (lang._id, "change") in d.targets
               for c in d.outputs}
    assert {"diagram", "token-probs", "status", "step", "step-info", "step-mask", "step-cands", "heatmap", "head-grid",
            "overview-grid", "bertviz-head", "bertviz-model", "why-source", "why-target", "why-reading"} <= redrawn
    ins, _ = two
    page = new_page("translate")
    probs, status, slider, info, mask, cands = open_and_show(page, ("translate",), translate.show, ins)
    assert "Step 1: next-token" in cands
    again = translate.relabel(page, ins, 3, "zh-CN")  # moved to step 3, then the language switched
    assert again[2] == SKIP and "第 3 步" in again[-1] and "源词元" in again[1] and "词元" in again[0]
    assert translate.show(page, ins, "zh-CN") == (SKIP,) * 6  # drawn in that language already
    (svg,) = open_and_show(page, ("overview",), overview.show, ins, "zh-CN")
    assert "编码器" in svg and overview.show(page, ins, "en")[0].count("explore in") == 2 * 7  # two drawings
