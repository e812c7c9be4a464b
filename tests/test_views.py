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
from tests.events import by_id, call, dependency, open_in, outputs_of, selected

pytestmark = needs_shipped

BUILDERS = {translate: ("token_probs_html", "step_slider", "mask_svg", "step_candidates"),
            overview_figures: ("architecture_svg",),
            attention: ("attention_heatmap", "head_grid", "layer_head_overview", "view_data")}
SKIP = gr.skip()


def up_to_attention(kind="encoder", layer=0, head=0, lang="en"):
    """The controls that `show_translation` takes, by name, that these tests set: the page's language and the
    Attention tab's kind, layer and head (every other control as the page starts)."""
    return {"lang": lang, "attention/kind": kind, "attention/layer": layer, "attention/head": head}


def listener(demo, tab):
    """The one event listener of `tab` (app/views.py Tab.wire): the dependency that runs its `show`."""
    found = [d for d in demo.fns.values() if d.fn == tab.show]
    assert len(found) == 1, (tab.where, len(found))
    return found[0]


def tab_named(demo, name):
    """The Tab (app/views.py) whose first tab id is `name`."""
    return next(t for t in demo.tab_views if t.where[0] == name)


@pytest.fixture(scope="module")
def demo():
    return build_demo()


@pytest.fixture(scope="module")
def show_translation(demo):
    """What a new translation sends: each tab whose views read the page's state runs its listener (the state's
    change is among its triggers), with the controls as the page starts but those given ("<tab id>/<name>")."""
    state = tab_named(demo, "translate").state
    listening = [t for t in demo.tab_views if t.state is state]

    def send(page, ins, lang="en", **given):
        out = {}
        for t in listening:
            controls = {n: given.get(f"{'/'.join(t.where)}/{n}", c.value) for n, c in t.controls.items()}
            drawn = call(listener(demo, t), page=page, ins=ins, lang=lang, tabs=selected(page), **controls)
            out.update(drawn if drawn != SKIP else {})
        return out
    return send


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
    """What the opening of the tab at path `where` sends ({elem_id: value}; {} when it sends nothing): recorded as
    open (its select event's first listener), then the tab's listener."""
    open_in(page, where)
    out = tab.show(page, lang, ins, tabs=selected(page), **controls)
    return {} if out == SKIP else by_id(out)


def shown(tab, page, ins=None, lang="en", **controls):
    """What a tab's show sends for the page as it is ({elem_id: value})."""
    out = tab.show(page, lang, ins, tabs=selected(page), **controls)
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
        assert tab.show(page, "en", tabs=selected(page), **controls) == SKIP
        open_in(page, tab.where)
        assert set(tab.show(page, "en", tabs=selected(page), **controls)) == set(tab.outputs.values())
        assert tab.show(page, "en", tabs=selected(page), **controls) == SKIP
        if name == "training":  # a control moved in the open tab redraws the views that read it: the Noam figure
            drawn = tab.show(page, "en", tabs=selected(page), **dict(controls, warmup=8000))
            assert set(drawn) == {tab.outputs["noam"]}
    tab, controls = tab_named(demo, "positional"), first["positional"]
    drawn = tab.show(page, "en", tabs=selected(page), **dict(controls, k=6))  # a control redraws the views that read it, alone
    assert set(drawn) == {tab.outputs[n] for n in ("curves", "heat", "sim", "rel", "note")}
    assert set(tab.show(page, "zh-CN", tabs=selected(page), **dict(controls, k=6))) == set(tab.outputs.values())  # a new language: all


def test_the_open_tabs_are_what_the_page_says_it_shows():
    """A tab's listener is told, as the drawing is sent, the ids of the tabs the page shows selected in each tab bar
    (app/page/open-tabs.js): which of its views are on screen follows from that alone."""
    subs = ("one-head", "all-heads", "bertviz-head")
    opened = views.open_tabs(("attention",), subs, json.dumps(["attention", "bertviz-head", "modules"]))
    assert views.shown(opened, ("attention", "bertviz-head")) and not views.shown(opened, ("attention", "one-head"))
    assert views.shown(opened, ()) and views.shown(opened, ("attention",))
    # the Attention tab opened for the first time: the page has not drawn its sub-tabs' bar yet, so its first
    opened = views.open_tabs(("attention",), subs, ["attention"])
    assert views.shown(opened, ("attention", "one-head")) and not views.shown(opened, ("attention", "all-heads"))
    # another tab on screen: none of the Attention tab's views, whatever its sub-tabs' bar still shows
    opened = views.open_tabs(("attention",), subs, ["masks", "all-heads"])
    assert not views.shown(opened, ("attention",)) and not views.shown(opened, ("attention", "all-heads"))
    # a tab without sub-tabs
    assert views.shown(views.open_tabs(("masks",), (), ["masks", "all-heads"]), ("masks",))
    # what a page could not have sent reads as no tab open: nothing is drawn for it
    for forged in ("", "{", "null", '{"attention": 1}', "[1, 2]", json.dumps(["attention"] * 2000), 7, None,
                   ["attention", 3]):
        assert not views.shown(views.open_tabs(("attention",), subs, forged), ("attention",)), forged


def test_each_tab_names_the_controls_its_views_read(demo):
    """What each tab's build() returns: its controls by name, every name a view reads among them, its outputs
    those its views draw; its listener reads them all, by name."""
    built = demo.tab_views
    # every tab but Engineering, which has no views (and the Time-lapse, where the model ships no history)
    assert len(built) == len(tabs.__all__) - 1 - (not ships_history())
    for tab in built:
        assert isinstance(tab, views.Tab), tab
        assert sorted(n for v in tab.views for n in v.outputs) == sorted(tab.outputs), tab.where
        assert all(set(v.uses) <= set(tab.controls) for v in tab.views), tab.where
        assert all(isinstance(v.outputs, tuple) and v.outputs for v in tab.views), tab.where  # named, never counted
        assert set(listener(demo, tab).input_parameter_names) == set(tab.inputs()), tab.where
    state = tab_named(demo, "translate").state
    assert ["/".join(t.where) for t in built if t.state is state] == [
        "learn", "overview", "translate", "attention", "heads", "why", "whatif", "inside",
        *(["timelapse"] if ships_history() else [])]


def test_a_tabs_views_are_drawn_by_its_one_listener_alone(demo):
    """The order of a tab's drawings is Gradio's: one listener per tab draws its views, run once at a time per page
    and once more after what came meanwhile (trigger_mode="always_last"), so that no drawing that began earlier can
    reach the browser after a later one. Its triggers: the openings of the tab and its sub-tabs, its nudge, its
    controls, the state it reads and the page's language (Translate redraws its replay's step itself). The
    page tells it which tabs are open as the drawing is sent (its js), and no other event records an opening: the
    server keeps no record of openings that requests reaching it out of order could leave wrong. No other event
    writes a view's outputs but those named below."""
    said = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang").said
    by_tab = {}
    for tab in demo.tab_views:
        dep = listener(demo, tab)
        assert dep.trigger_mode == "always_last", tab.where
        targets = set(dep.targets)
        selects = {t for t in targets if t[1] == "select" and not isinstance(demo.blocks[t[0]], gr.Dropdown)}
        assert (tab.nudge._id, "change") in targets and len(selects) == 1 + len(tab.subtabs), tab.where
        assert "open-tabs" in {getattr(c, "elem_id", None) for c in dep.inputs} and "aria-selected" in dep.js, tab.where
        assert ((said._id, "change") in targets) == (tab.where[0] != "translate"), tab.where
        if tab.state is not None:
            assert (tab.state._id, "change") in targets, tab.where
        for name, c in tab.controls.items():
            assert {(c._id, "change"), (c._id, "input"), (c._id, "select")} & targets, (tab.where, name)
        assert not [d for d in demo.fns.values() if d is not dep and {t for t in d.targets if t[1] == "select"}
                    & selects and d.fn is not None], tab.where  # nothing else runs on the server as it opens
        by_tab.update({c._id: tab for c in tab.outputs.values()})
    # the other writers, each named: the Learn path's moves and the Translate tab's replay (their own state machines;
    # the replay redraws itself in a new language), a refused sentence's message (no translation came, so no state
    # changed), the buttons that write a result's numbers as files (which the tab's drawing hides for a new
    # sentence) and What if's buttons (each its own result, which no control of the tab draws); the Lab's Train sets
    # its tab's state, whose change draws the run's points
    own = {"learn": {"act", "check", "back", "forward", "pick"},
           "translate": {"decoding_step", "previous_step", "next_step", "relabel", "input_notice", "numbers_files"},
           "attention": {"numbers_files"}, "compare": {"ranking_numbers", "grid_numbers"}, "score": {"scored_numbers"},
           "whatif": {"candidates_update", "swap_word", "force_prefix", "score_mine"}}
    for d in demo.fns.values():
        written = {c._id: by_tab[c._id] for c in d.outputs if c._id in by_tab}
        for tab in written.values():
            if d.fn != tab.show:
                assert d.fn.__name__ in own.get(tab.where[0], ()), (d.fn.__name__, tab.where)


def test_a_new_language_redraws_what_each_tab_shows(demo, two):
    """A change of language sets the radio's `said` state, whose change each tab's listener takes (but Translate's,
    which redraws its replay's step itself): it draws what is on screen in the new language, and sends
    nothing else."""
    ins, _ = two
    attn = tab_named(demo, "attention")
    page = new_page("attention")
    controls = {n: c.value for n, c in attn.controls.items()}
    first = call(listener(demo, attn), page=page, ins=ins, tabs=selected(page), lang="en", **controls)
    second = call(listener(demo, attn), page=page, ins=ins, tabs=selected(page), lang="zh-CN", **controls)
    # only what is on screen: the one-head view, and the tab's file list (hidden: its button writes the files anew)
    assert list(first) == list(second) and len(second) == 2
    heat, files = (v for c, v in second.items() if c.elem_id in ("heatmap", "attention-numbers-files"))
    assert files["visible"] is False
    assert "层" in heat.layout.title.text and "layer" in first[next(iter(first))].layout.title.text
    assert call(listener(demo, attn), page=page, ins=ins, tabs=selected(page), lang="zh-CN", **controls) == {}  # drawn already
    for name in ("overview", "masks", "training"):  # a hidden tab sends nothing: its opening draws it
        tab = tab_named(demo, name)
        assert tab.show(page, "zh-CN", tabs=selected(page), **({"ins": ins} if tab.shows_translation else {}),
                        **{n: c.value for n, c in tab.controls.items()}) == SKIP


def test_the_language_switch_redraws_the_views_of_the_overview_translate_attention_and_why_tabs(demo, two):
    """Each of these tabs reads the page's language as a control: its change redraws the views on screen (in the
    Translate tab the replay stays at its step), and a view drawn in one language is drawn again in the other."""
    lang = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lang")
    redrawn = {getattr(c, "elem_id", None) for d in demo.fns.values()
               if {(lang._id, "change"), (lang.said._id, "change")} & set(d.targets) for c in d.outputs}
    assert {"diagram", "token-probs", "status", "step", "step-info", "step-mask", "step-cands", "heatmap", "head-grid",
            "overview-grid", "bertviz-head", "bertviz-model", "why-source", "why-target", "why-reading"} <= redrawn
    ins, _ = two
    tr_tab, ov = tab_named(demo, "translate"), tab_named(demo, "overview")
    page = new_page("translate")
    assert "Step 1: next-token" in opened(tr_tab, page, ("translate",), ins)["step-cands"]
    relabel = dependency(demo, "relabel")
    again = by_id(call(relabel, page=page, ins=ins, step=3, lang="zh-CN", tabs=selected(page)))  # moved to step 3, then the language
    assert "step" not in again and "第 3 步" in again["step-cands"] and "源词元" in again["status"]  # switched
    assert "词元" in again["token-probs"]
    assert call(relabel, page=page, ins=ins, step=3, lang="zh-CN", tabs=selected(page)) == {}  # drawn in that language already
    svg = opened(ov, page, ("overview",), ins, "zh-CN")["diagram"]
    assert "编码器" in svg and shown(ov, page, ins, "en")["diagram"].count("explore in") == 2 * 7  # two drawings


def test_a_view_is_known_by_the_values_it_resolves_its_controls_to():
    """A view whose drawing sets its own control (a menu's first value) is drawn once: the control's change that
    follows in the browser, carrying that value, finds it drawn; another value draws it again."""
    drawn = []
    first = lambda ins: len(ins)  # noqa: E731 (the menu's first value for this "translation")
    view = views.View("t/v", ("t",), lambda ins, pick: drawn.append(pick) or pick, outputs=("fig",), uses=("pick",),
                      resolve=lambda ins, pick: {"pick": first(ins) if pick is None else pick})
    opened, page, ins = {views.ROOT: "t"}, {"drawn": {}}, "abc"
    assert views.draw_views(opened, page, ins, [view], {"pick": None}, "en") == {"fig": 3}  # opened: the menu empty
    assert views.draw_views(opened, page, ins, [view], {"pick": 3}, "en") == {}  # the menu's change, to its first
    assert views.draw_views(opened, page, ins, [view], {"pick": 1}, "en") == {"fig": 1}
    assert drawn == [3, 1]




def test_every_event_that_sets_a_watched_state_goes_through_the_queue(demo):
    """The page starts a state's change listeners after a queued event alone (Gradio's front end reads the states an
    event changed from the queue's message): an event off the queue that set a tab's nudge, the language's `said` or
    a translation would leave the tabs undrawn."""
    watched = {block_id for d in demo.fns.values() for block_id, event in d.targets if event == "change"
               and isinstance(demo.blocks.get(block_id), gr.State)}
    setters = [d for d in demo.fns.values() if any(c._id in watched for c in d.outputs)]
    assert len(setters) > 10
    assert [d.name for d in setters if not d.queue] == []
