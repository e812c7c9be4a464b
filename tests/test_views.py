"""A view is computed when it is shown (app/views.py): a translation draws the views on screen and clears the
others, opening a tab draws its views from the kept Inspection, a control redraws the views that read it, and
nothing is drawn twice for the same translation and controls. The figure builders are counted."""
import collections
import html
import json

import gradio as gr
import pytest

from app import tabs, views
from app.figures import overview as overview_figures
from app.figures.attention import positions
from app.shared import examples
from app.tabs import attention, masks, translate
from app.ui import build_demo
from tests.conftest import needs_shipped, ships_history
from tests.events import by_id, call, dependency, outputs_of

pytestmark = needs_shipped

BUILDERS = {translate: ("token_probs_html", "step_slider", "mask_svg", "step_candidates"),
            overview_figures: ("architecture_svg",),
            attention: ("attention_heatmap", "head_grid", "layer_head_overview", "view_data")}
SKIP = gr.skip()


def translation_callback(demo):
    """The callback a page runs after each translation (app/ui.py): it takes the page, the Inspection, the
    language and the controls of every tab that shows a translation by name, and returns {component: value} of
    their views."""
    return next(d for d in demo.fns.values() if getattr(d.fn, "__name__", None) == "show_translation")


def up_to_attention(kind="encoder", layer=0, head=0, lang="en"):
    """The controls the translation callback takes, by name, that these tests set: the page's language and the
    Attention tab's kind, layer and head (every other control as the page starts)."""
    return {"lang": lang, "attention/kind": kind, "attention/layer": layer, "attention/head": head}


def tab_named(demo, name):
    """The Tab (app/views.py) whose first tab id is `name`."""
    return next(t for t in demo.tab_views if t.where[0] == name)


@pytest.fixture(scope="module")
def demo():
    return build_demo()


@pytest.fixture(scope="module")
def show_translation(demo):
    dep = translation_callback(demo)
    return lambda page, ins, **given: call(dep, page=page, ins=ins, **given)


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


def opened(tab, page, where, ins=None, lang="en", **controls):
    """What the select event of the tab at path `where` sends ({elem_id: value}; {} when it sends nothing)."""
    out = tab.opener(where)(page, lang, ins, **controls)
    return {} if out == SKIP else by_id(out)


def shown(tab, page, ins=None, lang="en", **controls):
    """What a tab's show sends for the page as it is ({elem_id: value})."""
    out = tab.show(page, lang, ins, **controls)
    return {} if out == SKIP else by_id(out)


HEAD = dict(kind="encoder", layer=0, head=0)


def tokens_on_y(fig):
    return list(fig.layout.yaxis.ticktext)


def escaped(tokens):
    return [html.escape(t, quote=False) for t in tokens]


def test_a_translation_draws_the_open_tab_and_opening_another_draws_it(demo, two, calls, show_translation):
    ins, _ = two
    attn, tr_tab, ov = (tab_named(demo, name) for name in ("attention", "translate", "overview"))
    page = new_page("translate")
    out = show_translation(page, ins, **up_to_attention())
    # the token strip, the status line and the step replay (slider, input so far, mask, candidates); nothing of
    # the closed tabs (the Learn path, the Overview's diagram, the Attention tab ...) is drawn or sent
    assert set(out) == set(outputs_of(tr_tab))
    assert dict(calls) == {"token_probs_html": 1, "step_slider": 1, "mask_svg": 1, "step_candidates": 1}
    # opening the Attention tab draws its open sub-tab's view only, for the same sentence
    out = opened(attn, page, ("attention",), ins, **HEAD)
    # (and the tab's file list, hidden: the last sentence's files are gone)
    assert set(out) == {"heatmap", "attention-numbers-files"} and calls["attention_heatmap"] == 1
    assert out["attention-numbers-files"]["visible"] is False
    assert tokens_on_y(out["heatmap"]) == escaped(ins.src_tokens)
    assert calls["head_grid"] == calls["layer_head_overview"] == calls["view_data"] == 0
    # opened again, nothing changed: nothing is drawn or sent
    assert opened(attn, page, ("attention",), ins, **HEAD) == {} and opened(tr_tab, page, ("translate",), ins) == {}
    assert calls["attention_heatmap"] == 1 and calls["step_candidates"] == 1
    # the bertviz head view when its sub-tab opens; the model view stays unbuilt
    out = opened(attn, page, ("attention", "bertviz-head"), ins, **HEAD)
    assert json.loads(out["bertviz-head"])["bertviz"] == "draw" and calls["view_data"] == 1
    assert list(out) == ["bertviz-head"]
    # the Overview's diagram when its tab opens, with this sentence's shapes
    svg = opened(ov, page, ("overview",), ins)["diagram"]
    assert calls["architecture_svg"] == 1 and f"memory 1 × {len(ins.src_tokens)} ×" in svg


def test_controls_redraw_only_the_views_that_read_them(demo, two, calls):
    ins, _ = two
    attn = tab_named(demo, "attention")
    page = new_page("attention")
    opened(attn, page, ("attention", "bertviz-head"), ins, **HEAD)
    assert shown(attn, page, ins, kind="decoder", layer=2, head=5) == {}  # bertviz reads no control
    assert calls["view_data"] == 1
    grid = opened(attn, page, ("attention", "all-heads"), ins, kind="decoder", layer=2, head=5)["head-grid"]
    assert grid.layout.title.text.endswith("all heads of layer 2") and calls["head_grid"] == 1
    assert shown(attn, page, ins, kind="decoder", layer=2, head=7) == {}  # the grid does not read the head
    heat = opened(attn, page, ("attention", "one-head"), ins, kind="decoder", layer=2, head=7)["heatmap"]
    assert "layer 2, head 7" in heat.layout.title.text and calls["attention_heatmap"] == 1
    assert tokens_on_y(heat) == escaped(ins.tgt_tokens)
    assert calls["head_grid"] == 1 and calls["layer_head_overview"] == 0


def test_a_new_translation_clears_the_hidden_views_of_the_last_one(demo, two, calls, show_translation):
    first, second = two
    attn, tr_tab = tab_named(demo, "attention"), tab_named(demo, "translate")
    page = new_page("translate")
    show_translation(page, first, **up_to_attention())
    for sub in ("all-heads", "bertviz-model", "one-head"):
        opened(attn, page, ("attention", sub), first, **HEAD)
    out = show_translation(page, second, **up_to_attention())
    # only the Translate and Attention tabs' views: the later tabs are hidden and were never drawn
    assert set(out) <= {*outputs_of(tr_tab), *outputs_of(attn)}
    out = by_id(out)
    # on screen: the one-head view, drawn for the new sentence; the token strip and the status line always
    assert tokens_on_y(out["heatmap"]) == escaped(second.src_tokens) and "tok" in out["token-probs"]
    assert f"{len(second.src_tokens)} source pieces" in out["status"]
    # hidden and drawn for the first sentence: cleared, so no tab shows its figures beside the new tokens
    assert (out["step-info"], out["step-mask"], out["step-cands"]) == ("", "", "")
    assert out["step"]["interactive"] is False and out["step"]["maximum"] == 2
    assert out["head-grid"] is None and out["bertviz-model"] == ""
    # hidden and never drawn: left alone (nothing sent)
    assert not {"diagram", "overview-grid", "bertviz-head"} & set(out)
    # opened again, each draws the new sentence
    grid = opened(attn, page, ("attention", "all-heads"), second, **HEAD)["head-grid"]
    assert list(grid.data[0].y) == positions(second.src_tokens)
    assert "Step 1: next-token" in opened(tr_tab, page, ("translate",), second)["step-cands"]


def test_a_view_with_a_placeholder_is_emptied_not_told_to_wait_for_a_translation(demo, two, show_translation):
    """A hidden view whose blank is a placeholder ("translate a sentence first") is cleared with nothing once a new
    sentence comes: its tab's opening draws the new one, and a figure given to a hidden plot would be drawn as the
    tab opens, before the new one replaces it."""
    first, second = two
    why = tab_named(demo, "why")
    page = new_page("translate")
    show_translation(page, first, **up_to_attention())
    assert {"why-source", "why-target"} <= set(opened(why, page, ("why",), first, position=None))
    page["open"][views.ROOT] = "translate"
    out = by_id(show_translation(page, second, **up_to_attention()))
    assert (out["why-source"], out["why-target"], out["why-reading"]) == (None, None, None)
    drawn = opened(why, page, ("why",), second, position=None)
    assert drawn["why-source"].layout.title.text and drawn["why-reading"]


def test_a_view_with_words_shows_its_placeholder_before_a_translation(demo):
    """Before the first translation, opening a tab draws the placeholders of its views in the page's language (a
    blank that is a function of the controls), and sends nothing for views whose blank is their first value."""
    why, whatif, ov, attn = (tab_named(demo, name) for name in ("why", "whatif", "overview", "attention"))
    page = new_page("why")
    for lang, words in (("en", "Translate a sentence"), ("zh-CN", "请先")):
        out = opened(why, page, ("why",), lang=lang, position=None)
        assert set(out) == {"why-source", "why-target", "why-reading"}  # the token menu is left as it is
        assert [out[f].layout.annotations[0].text.startswith(words) for f in ("why-source", "why-target")] == [True] * 2
        assert opened(why, page, ("why",), lang=lang, position=None) == {}  # drawn already, in this language
    assert "whatif-tree" in opened(whatif, page, ("whatif",), beam=4)
    assert "1 × S × " in opened(ov, page, ("overview",), lang="zh-CN")["diagram"]
    assert opened(attn, page, ("attention",), **HEAD) == {}


def test_tabs_without_a_translation_draw_when_first_opened(demo):
    page = new_page("translate")
    first = {"masks": dict(de=masks.DEFAULT_DE, en=masks.DEFAULT_EN, sentence=1, kind="decoder", layer=0, head=0),
             "training": dict(step=10, d_model=512, factor=1.0, warmup=4000, eps=0.1),
             "positional": dict(d_model=256, positions=100, dims="4, 5, 6, 7", k=5)}
    for name, controls in first.items():
        tab = tab_named(demo, name)
        # before its tab is opened a view draws nothing, even when asked
        assert tab.show(page, "en", **controls) == SKIP
        assert set(tab.opened(page, "en", **controls)) == set(tab.outputs.values())
        assert tab.opened(page, "en", **controls) == SKIP
        if name == "training":  # a control moved in the open tab redraws the views that read it: the Noam figure
            drawn = tab.show(page, "en", **dict(controls, warmup=8000))
            assert set(drawn) == {tab.outputs["noam"]}
    tab, controls = tab_named(demo, "positional"), first["positional"]
    drawn = tab.show(page, "en", **dict(controls, k=6))  # a control redraws the views that read it, alone
    assert set(drawn) == {tab.outputs[n] for n in ("curves", "heat", "sim", "rel", "note")}
    assert set(tab.show(page, "zh-CN", **dict(controls, k=6))) == set(tab.outputs.values())  # a new language: all


def test_views_that_read_no_sentence_are_sent_ahead_to_closed_tabs_and_their_opening_sends_nothing(demo, two):
    """The page's idle event (app/ui.py, app.views.ahead_shower): in the closed tabs, each view that reads no sentence
    and that the tab's opening shows (Inside's open sub-tab, not the others), drawn once for the controls and the
    language; the views that read the sentence are left to the opening."""
    ins, _ = two
    # the idle button's event (a new language runs the same callback after redrawing the views on screen)
    dep = next(d for d in demo.fns.values() if getattr(d.fn, "__name__", None) == "draw_ahead")
    page = dict(new_page("translate"), open={views.ROOT: "translate", "attention": "one-head", "inside": "modules"})
    out = call(dep, page=page, lang="en")
    quiet = [t for t in demo.tab_views if any(not v.reads_translation for v in t.views)]
    expected = {t.outputs[n] for t in quiet for v in t.views if not v.reads_translation
                and views.shown(page, v.where, ahead=True) for n in v.outputs}
    assert set(out) == expected
    inside, heads, masks_tab = (tab_named(demo, n) for n in ("inside", "heads", "masks"))
    assert {inside.outputs[n] for n in ("tree", "summary", "detail")} <= set(out)  # Inside's open sub-tab: modules
    assert not {inside.outputs[n] for n in ("ln_params", "sweep", "ln", "residual")} & set(out)
    assert heads.outputs["atlas"] in out and heads.outputs["maps"] not in out
    assert set(masks_tab.outputs.values()) <= set(out)
    assert call(dep, page=page, lang="en") == {}  # drawn already: nothing again
    # opening a tab sent ahead sends nothing; one whose views read the sentence draws those alone
    controls = {n: c.value for n, c in masks_tab.controls.items()}
    assert masks_tab.opened(page, "en", **controls) == SKIP
    page["open"]["heads"] = "atlas"
    hc = {n: c.value for n, c in heads.controls.items()}
    assert heads.outputs["atlas"] not in heads.opened(page, "en", ins, **hc)
    # in another language, or with another control's value, they are drawn again
    assert set(masks_tab.outputs.values()) <= set(call(dep, page=page, lang="zh-CN"))
    other = call(dep, page=page, lang="zh-CN", **{"masks/layer": 1})
    assert masks_tab.outputs["scores"] in other and heads.outputs["atlas"] not in other


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


def test_each_tab_names_the_controls_its_views_read(demo):
    """What each tab's build() returns: its controls by name, every name a view reads among them, its outputs
    those its views draw; the page's translation event reads them all, by name."""
    built = demo.tab_views
    # every tab but Engineering, which has no views (and the Time-lapse, where the model ships no history)
    assert len(built) == len(tabs.__all__) - 1 - (not ships_history())
    for tab in built:
        assert isinstance(tab, views.Tab), tab
        assert sorted(n for v in tab.views for n in v.outputs) == sorted(tab.outputs), tab.where
        assert all(set(v.uses) <= set(tab.controls) for v in tab.views), tab.where
        assert all(isinstance(v.outputs, tuple) and v.outputs for v in tab.views), tab.where  # named, never counted
    shown = [t for t in built if t.shows_translation and views._tab_id(t) not in ("compare", "score")]  # their own state
    assert [views._tab_id(t) for t in shown] == ["learn", "overview", "translate", "attention", "heads", "why",
                                                  "whatif", "inside", *(["timelapse"] if ships_history() else [])]
    events = [d for d in demo.fns.values() if getattr(d.fn, "__name__", None) == "show_translation"]
    # after a translation, a row of its n-best list, a pair of the Score tab, one from the Learn tab's box, and the page
    # load's linked one
    assert len(events) == 5
    for event in events:
        want = {"page", "ins", "lang", *(f"{views._tab_id(t)}/{n}" for t in shown for n, c in t.controls.items()
                                         if n != "lang")}
        assert set(event.input_parameter_names) == want
        assert len(event.outputs) == sum(len(outputs_of(t)) for t in shown)


def language_callback(demo):
    """The page's language switch's event (app/ui.py)."""
    return dependency(demo, "show_language")


def test_one_event_redraws_every_tab_in_a_new_language(demo, two):
    """A change of language is one event for every tab but Learn and Translate (which redraw themselves): it
    reaches every other tab's outputs, draws what is on screen in the new language, and sends nothing else."""
    lang = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang")
    event = language_callback(demo)
    assert (lang._id, "change") in event.targets and event.concurrency_id == "model"
    others = [t for t in demo.tab_views if views._tab_id(t) not in ("learn", "translate")]
    assert len(others) == 12 + ships_history() and len(event.outputs) == sum(len(outputs_of(t)) for t in others)
    # no tab wires a change of language of its own but the two
    own = {d.fn.__name__ for d in demo.fns.values() if (lang._id, "change") in d.targets and d.fn is not None}
    assert own == {"show_language", "render", "relabel"}, own
    ins, _ = two
    page = new_page("attention")
    first = call(event, page=page, ins=ins, lang="en")  # the Attention tab's one-head view drawn in English
    second = call(event, page=page, ins=ins, lang="zh-CN")
    # only what is on screen: the one-head view, and the tab's file list (hidden: its button writes the files anew)
    assert list(first) == list(second) and len(second) == 2
    heat, files = (v for c, v in second.items() if c.elem_id in ("heatmap", "attention-numbers-files"))
    assert files["visible"] is False
    assert "层" in heat.layout.title.text and "layer" in first[next(iter(first))].layout.title.text
    assert call(event, page=page, ins=ins, lang="zh-CN") == {}  # drawn in that language already


def test_the_language_switch_redraws_the_views_of_the_overview_translate_attention_and_why_tabs(demo, two):
    """Each of these tabs reads the page's language as a control: its change redraws the views on screen (in the
    Translate tab the replay stays at its step), and a view drawn in one language is drawn again in the other."""
    lang = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang")
    redrawn = {getattr(c, "elem_id", None) for d in demo.fns.values() if (lang._id, "change") in d.targets
               for c in d.outputs}
    assert {"diagram", "token-probs", "status", "step", "step-info", "step-mask", "step-cands", "heatmap", "head-grid",
            "overview-grid", "bertviz-head", "bertviz-model", "why-source", "why-target", "why-reading"} <= redrawn
    ins, _ = two
    tr_tab, ov = tab_named(demo, "translate"), tab_named(demo, "overview")
    page = new_page("translate")
    assert "Step 1: next-token" in opened(tr_tab, page, ("translate",), ins)["step-cands"]
    relabel = dependency(demo, "relabel")
    again = by_id(call(relabel, page=page, ins=ins, step=3, lang="zh-CN"))  # moved to step 3, then the language
    assert "step" not in again and "第 3 步" in again["step-cands"] and "源词元" in again["status"]  # switched
    assert "词元" in again["token-probs"]
    assert call(relabel, page=page, ins=ins, step=3, lang="zh-CN") == {}  # drawn in that language already
    svg = opened(ov, page, ("overview",), ins, "zh-CN")["diagram"]
    assert "编码器" in svg and shown(ov, page, ins, "en")["diagram"].count("explore in") == 2 * 7  # two drawings


def test_a_view_is_known_by_the_values_it_resolves_its_controls_to():
    """A view whose drawing sets its own control (a menu's first value) is drawn once: the control's change that
    follows in the browser, carrying that value, finds it drawn; another value draws it again."""
    drawn = []
    first = lambda ins: len(ins)  # noqa: E731 (the menu's first value for this "translation")
    view = views.View("t/v", ("t",), lambda ins, pick: drawn.append(pick) or pick, outputs=("fig",), uses=("pick",),
                      resolve=lambda ins, pick: {"pick": first(ins) if pick is None else pick})
    page, ins = {"open": {views.ROOT: "t"}, "drawn": {}}, "abc"
    assert views.draw_views(page, ins, [view], {"pick": None}, "en") == {"fig": 3}  # opened: the menu is empty
    assert views.draw_views(page, ins, [view], {"pick": 3}, "en") == {}  # the menu's change, to its first value
    assert views.draw_views(page, ins, [view], {"pick": 1}, "en") == {"fig": 1}
    assert drawn == [3, 1]


def test_of_two_events_drawing_one_view_the_later_drawing_is_what_the_page_keeps():
    """A page's events run two at a time and come back as they finish. The event that began drawing a view first,
    with controls since changed, finishes last here: it sends nothing, so the browser keeps the later drawing, the
    one the page record names (else the record would name a figure the page no longer shows, and the next event
    with those controls would find it drawn)."""
    import threading

    started, release = threading.Event(), threading.Event()

    def draw(ins, head):
        if head == 0:  # the first event: held while the second draws the same view with another head
            started.set()
            assert release.wait(10)
        return f"head {head}"

    view = views.View("t/v", ("t",), draw, outputs=("fig",), uses=("head",))
    page, ins, first = {"open": {views.ROOT: "t"}, "drawn": {}}, "ins", {}
    earlier = threading.Thread(target=lambda: first.update(views.draw_views(page, ins, [view], {"head": 0}, "en")))
    earlier.start()
    assert started.wait(10)
    assert views.draw_views(page, ins, [view], {"head": 3}, "en") == {"fig": "head 3"}
    release.set()
    earlier.join(10)
    assert not earlier.is_alive() and first == {}  # the earlier drawing is not sent
    assert views.draw_views(page, ins, [view], {"head": 3}, "en") == {}  # the page shows head 3, as recorded
    assert views.draw_views(page, ins, [view], {"head": 0}, "en") == {"fig": "head 0"}  # drawn again when asked


def test_a_drawing_that_comes_back_before_a_later_one_still_goes_out():
    """Play's ticks under load: each tick's drawing begins before the one before it is back. A drawing that comes
    back first, with no later drawing sent yet, goes out (the figure moves on as the ticks come), and the later one
    follows it; so the page ends on the later drawing, which its record names."""
    import threading

    began = {1: threading.Event(), 2: threading.Event()}
    back = {1: threading.Event(), 2: threading.Event()}

    def draw(ins, step):
        began[step].set()
        assert back[step].wait(10)  # held until the test lets this tick's drawing come back
        return f"step {step}"

    view = views.View("t/v", ("t",), draw, outputs=("fig",), uses=("step",))
    page, ins, sent = {"open": {views.ROOT: "t"}, "drawn": {}}, "ins", {1: {}, 2: {}}
    ticks = {step: threading.Thread(target=lambda step=step: sent[step].update(
        views.draw_views(page, ins, [view], {"step": step}, "en"))) for step in (1, 2)}
    ticks[1].start()
    assert began[1].wait(10)
    ticks[2].start()
    assert began[2].wait(10)  # both drawing: the record names step 2
    back[1].set()  # the earlier tick comes back while the later one still draws
    ticks[1].join(10)
    assert sent[1] == {"fig": "step 1"}  # sent: no later drawing is on screen yet
    back[2].set()
    ticks[2].join(10)
    assert sent[2] == {"fig": "step 2"} and page["drawn"]["t/v"][1][0] == (2,)
    assert views.draw_views(page, ins, [view], {"step": 2}, "en") == {}  # the page shows step 2, as recorded


def test_the_ahead_event_never_redraws_a_view_drawn_already():
    """The page's idle event carries every control's value from the moment it was sent. Under load a control's own
    event (the Lab's breaks ticked) can begin first and draw the view with the newer value; the ahead event, with
    the older one, then draws nothing for that view on screen, so the page keeps the reader's last choice. A view
    never drawn is drawn ahead, as before, and a closed tab's view is drawn again for new values."""
    drawn = []
    view = views.View("t/v", ("t",), lambda breaks: drawn.append(breaks) or f"result {breaks}", outputs=("fig",),
                      uses=("breaks",), reads_translation=False)
    page = {"open": {views.ROOT: "t"}, "drawn": {}}
    assert views.draw_views(page, None, [view], {"breaks": "no_scale"}, "en", ahead=True) == {"fig": "result no_scale"}
    assert views.draw_views(page, None, [view], {"breaks": "no_scale+untied"}, "en") == {"fig": "result no_scale+untied"}
    assert views.draw_views(page, None, [view], {"breaks": "no_scale"}, "en", ahead=True) == {}  # older values
    assert views.draw_views(page, None, [view], {"breaks": "no_scale+untied"}, "en") == {}  # as the page shows it
    assert drawn == ["no_scale", "no_scale+untied"]
    page["open"][views.ROOT] = "other"  # the tab closed: drawn ahead for other values (a new language, say)
    assert views.draw_views(page, None, [view], {"breaks": "no_scale"}, "en", ahead=True) == {"fig": "result no_scale"}
