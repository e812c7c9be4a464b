"""The Heads tab's callbacks: the atlas grids and their reading, choosing heads (limits kept on the server),
translating again with heads off, the comparison and the maps with the heads that were off, and a click on the
atlas opening that head in the Attention tab."""
import copy
import re

import gradio as gr
import pytest

from app import i18n
from app.common import kind_choices, kind_name
from app.figures import heads as figures
from app.figures import heads as figures_heads
from app.i18n import speaking
from app.tabs import heads
from app.views import ROOT, page_state
from core.analysis.heads import MEASURES, findings
from core.instrument import KINDS
from core.words import say
from tests.conftest import needs_shipped
from tests.events import by_id, selected
from tests.test_heads import synthetic_atlas

pytestmark = needs_shipped  # the tab reads the shipped model's shape


def full_atlas():
    """A synthetic atlas the shape of the shipped model's (3 layers, 8 heads), with data like the real one's."""
    atlas = synthetic_atlas(L=3, H=8)
    atlas["data"] = {"split": "val", "sentences": 1014, "bleu_sentences": 512}
    return atlas


def test_atlas_grids_name_every_head_and_say_what_is_not_defined(english):
    atlas = full_atlas()
    out = figures.atlas_html(atlas, "previous")
    cells = re.findall(r'data-kind="(\w+)" data-layer="(\d)" data-head="(\d)"', out)
    assert len(cells) == 48 and {c[0] for c in cells} == {"encoder", "decoder"}  # cross has no previous position
    assert "not defined for cross-attention" in out
    assert "encoder self-attention, layer 1, head 2: 90%" in out.lower()
    assert "greedy BLEU over the first 512" in out
    assert len(re.findall(r"data-head=", figures.atlas_html(atlas, "delta_bleu"))) == 72
    # anything else from the browser falls back to a measure that exists
    assert len(re.findall(r"data-head=", figures.atlas_html(atlas, "<img src=x>"))) == 72
    assert "python -m core.analysis.heads" in figures.atlas_html(None, "previous")


def test_reading_is_the_findings_of_the_numbers():
    md = heads.reading_md(full_atlas(), "en")
    assert md.startswith("**What the numbers say**") and "validation loss 1.500" in md
    assert md.count("\n- ") >= 3 and "1\\.2 \\(90%\\)" in md


def test_the_reading_says_the_same_in_both_languages():
    """In English the sentences are those the command line prints (core.words.say of core.analysis.heads'
    findings); in Chinese the same sentences, with the same numbers; on the page one label holds both."""
    atlases = [full_atlas(), synthetic_atlas()] + [heads.load_atlas()] * (heads.load_atlas() is not None)
    for atlas in atlases:
        assert heads.findings_in("en", atlas) == [say(f) for f in findings(atlas)]
        en, zh = heads.findings_in("en", atlas), heads.findings_in("zh-CN", atlas)
        assert len(zh) == len(en) and zh != en
        for e, z in zip(en, zh):
            assert sorted(re.findall(r"[-+]?\d+(?:\.\d+)?%?", e)) == sorted(re.findall(r"[-+]?\d+(?:\.\d+)?%?", z))
            assert not re.search(r"\b(heads?|the|of|loss)\b", z), z
    md = heads.reading_md(full_atlas(), "zh-CN")
    assert md.startswith("**数字告诉我们什么**") and md.count("\n- ") == heads.reading_md(full_atlas(), "en").count("\n- ")
    assert heads.reading_md(None, "en") == ""


def test_menus_are_labelled_in_both_languages():
    """The measures by name, short enough for a phone's menu to show whole, as the atlas's caption names them
    before what they measure; and every head of the list to switch off."""
    sent = i18n.i18n().translations
    for (label, name) in heads.measure_choices():
        en, zh = sent["en"][label.key], sent["zh-CN"][label.key]
        assert en == name.replace("_", " ") and zh != en and len(zh) <= 16
        for lang, said in (("en", en), ("zh-CN", zh)):
            with i18n.speaking(lang):
                caption = figures_heads.measure_text(name)
                assert caption.startswith(said) and figures_heads.measure_definition(name) in caption
                assert len(figures_heads.measure_definition(name)) > len(said)
    with i18n.speaking("zh-CN"):
        assert "<s>" in figures_heads.measure_definition("first")  # the piece put in
    assert [n for _, n in heads.measure_choices()] == list(MEASURES)
    choices = heads.head_choices(3, 8)
    assert len(choices) == 72 and choices[11][1] == "encoder 1 3"
    label = dict((v, k) for k, v in choices)["cross 1 3"]
    shown = {lang: i18n.i18n().translations[lang][label.key] for lang in i18n.LANGS}
    assert shown == {"en": "Cross-attention · layer 1 · head 3", "zh-CN": "交叉注意力 · 层 1 · 头 3"}
    with i18n.speaking("en"):
        assert all(f"{kind_name(v.split()[0])} · layer" in i18n.i18n().translations["en"][k.key]
                   for k, v in choices)


def test_choosing_heads_keeps_to_the_model():
    assert heads.add_head([], "cross", 1, 3) == ["cross 1 3"]
    assert heads.add_head(["cross 1 3"], "encoder", 99, -5) == ["encoder 2 0", "cross 1 3"]  # clamped, sorted
    chosen = heads.all_but(["decoder 0 1", "cross 2 4"], "cross", 2, 4)
    assert chosen == ["decoder 0 1"] + [f"cross 2 {h}" for h in range(8) if h != 4]
    assert heads.add_head(["bogus", "cross 9 9"], "nonsense", "x", None) == ["cross 0 0"]
    with speaking("en"), pytest.raises(ValueError, match="is not a head"):
        heads.parse_heads(["cross 3 0"], 3, 8)
    with speaking("zh-CN"), pytest.raises(ValueError, match="不是这个模型的头"):
        heads.parse_heads(["cross 3 0"], 3, 8)


@pytest.fixture(scope="module")
def ins():
    from app.tabs.translate import translate
    return translate("Zwei Hunde spielen im Schnee.", "greedy")[2]


def switched_off(ins, values, lang="en"):
    """The status line and the result of the Heads tab's button, the page in `lang`."""
    with speaking(lang):
        out = heads.switch_off(ins, values)
    assert set(out) == {"status", "switched"}
    return out["status"], out["switched"]


def test_switching_off_translates_again_with_the_same_settings(ins, english):
    assert switched_off(None, ["cross 1 3"])[1] is None
    status, result = switched_off(ins, ["<b>x</b>"])
    assert result is None and "<b>" not in status and "is not a head" in status
    assert switched_off(ins, [])[0].startswith("Choose at least one head")
    off = heads.all_but([], "cross", 1, 2) + heads.all_but([], "cross", 2, 2)
    status, result = switched_off(ins, off)
    assert "14 heads switched off" in status
    changed = result.changed
    assert result.original is ins and changed.source == ins.source and changed.decoding == ins.decoding
    assert len(changed.heads_off) == 14 and ("cross", 1, 2) not in changed.heads_off
    html = heads.compare_view(ins, result)
    assert ins.translation.split()[0] in html and "switched off" in html and "output tokens changed" in html
    if changed.translation != ins.translation:
        assert "outline:2px solid" in html
    # the comparison belongs to the translation it repeats: a newer one shows the prompt instead
    assert "Choose heads above" in heads.compare_view(copy.copy(ins), result)


def test_maps_show_the_heads_that_were_off_in_grey(ins, english):
    _, result = switched_off(ins, ["decoder 1 2", "decoder 1 5", "cross 0 0"])
    fig = heads.maps_view(ins, result, "decoder", 1)
    notes = [a.text for a in fig.layout.annotations]
    assert notes[2] == "head 2: off" and notes[5] == "head 5: off" and notes[0] == "head 0"
    assert fig.data[2].colorscale != fig.data[0].colorscale and fig.data[5].colorscale == fig.data[2].colorscale
    assert fig.data[1].colorscale == fig.data[0].colorscale and fig.data[2].name == "head 2: off"  # its hover too
    assert "off" not in " ".join(a.text for a in heads.maps_view(ins, result, "encoder", 1).layout.annotations)
    assert heads.maps_view(ins, None, "decoder", 1).layout.annotations[0].text.startswith("The attention maps")


def cell(value):
    """The select event of a click on an atlas cell, as app/page/heads-click.js sends it."""
    return gr.SelectData(None, {"index": [0, 0], "value": value, "selected": True})


@pytest.fixture(scope="module")
def built():
    """The Attention and Heads tabs built in a page of their own: (the page's blocks, its language switch, the
    top-level tabs, the Attention tab's Tab, the Heads tab's Tab)."""
    from app.tabs import attention
    cfg = {"N": 3, "h": 8}
    with gr.Blocks() as demo:
        lang, page, state = gr.Radio(["zh-CN", "en"], value="en"), page_state(), gr.State()
        with gr.Tabs() as top:
            attn = attention.build(cfg, page, state, lang)
            tab = heads.build(cfg, page, state, top, attn, lang)
    return demo, lang, top, attn, tab


def test_a_click_on_the_atlas_opens_that_head_in_the_attention_tab(ins, built):
    """The click sets the Attention tab's controls and tabs, then asks that tab to draw (its nudge): the Attention
    tab's listener, told by the page that the tabs the click selected are open, draws the head, as it draws any."""
    demo, _, top, attn, _ = built
    (dep,) = [d for d in demo.fns.values() if getattr(d.fn, "__name__", "") == "open_head_clicked"]
    assert set(dep.outputs) == {top, attn.tabs, *(attn.controls[n] for n in ("kind", "layer", "head"))}
    (then,) = [d for d in demo.fns.values() if d.trigger_after == dep._id]
    assert list(then.outputs) == [attn.nudge] and then.fn() != then.fn()  # a new value: the nudge's change

    def click(value):
        out = dep.fn(evt=cell(value))
        assert set(out) <= set(dep.outputs)
        return out

    out = click({"kind": "cross", "layer": 1, "head": 3})
    assert out[top].selected == "attention" and out[attn.tabs].selected == "one-head"
    values = {n: out[attn.controls[n]] for n in ("kind", "layer", "head")}
    assert list(values.values()) == ["cross", 1, 3]
    page = {"drawn": {}}
    tabs = [out[top].selected, out[attn.tabs].selected]  # what the page shows once the click's answer is in
    drawn = by_id(attn.show(page, "en", ins, tabs=tabs, **values))  # the Attention tab's listener, on the nudge
    one = drawn["heatmap"]
    assert "Cross-attention" in one.layout.title.text and "layer 1, head 3" in one.layout.title.text
    assert not {"head-grid", "overview-grid", "bertviz-head", "bertviz-model"} & set(drawn)  # hidden ones
    # a forged click is kept in range
    out = click({"kind": "x", "layer": 99, "head": "y"})
    assert [out[attn.controls[n]] for n in ("kind", "layer", "head")] == ["encoder", 2, 0]
    out = click("not a head")
    assert [out[attn.controls[n]] for n in ("kind", "layer", "head")] == ["encoder", 0, 0]


def shows(tab, page, ins, lang, **controls):
    """What the Heads tab's show sends, by output name ({} when nothing)."""
    out = tab.show(page, lang, ins, tabs=selected(page), **dict(dict(measure="delta_loss", map_kind="cross", map_layer=0, switched=None,
                                                version=0),
                                           **controls))
    return {} if out == gr.skip() else {name: out[c] for name, c in tab.outputs.items() if c in out}


def test_views_blank_before_a_translation_and_atlas_draws_without_one(built):
    tab = built[-1]
    page = {"open": {ROOT: "heads"}, "drawn": {}}
    out = shows(tab, page, None, "en")
    assert list(out) == ["atlas", "reading"]  # the comparison and the maps wait for a translation
    with speaking("en"):
        assert out["atlas"] == figures.atlas_html(heads.load_atlas(), "delta_loss")  # the shipped atlas, or how
        assert out["reading"] == heads.reading_md(heads.load_atlas(), "en")
    if heads.load_atlas() is not None:  # to make one
        assert len(re.findall(r"data-head=", out["atlas"])) == 3 * 3 * 8  # every head of the shipped model
    assert [v for _, v in kind_choices()] == list(KINDS)


def test_the_tab_draws_in_the_pages_language(ins, built):
    """In zh-CN the atlas, the comparison, the maps and the status lines say nothing in English but the
    sentence's and the model's pieces, names from the code (delta_loss) and the measures' own names; a new
    language redraws them."""
    from tools.i18n_report import english, sentence_pieces, value_strings
    zh = "zh-CN"
    status, result = switched_off(ins, ["decoder 1 2", "decoder 1 5", "cross 0 0"], zh)
    pieces = sentence_pieces(ins) | sentence_pieces(result.changed)
    with speaking(zh):
        drawn = [figures.atlas_html(atlas, m) for atlas in (full_atlas(), heads.load_atlas(), None)
                 for m in ("previous", "delta_bleu", "delta_loss")]
        drawn += [heads.compare_view(ins, result), heads.compare_view(ins, None),
                  heads.maps_view(ins, result, "decoder", 1), heads.maps_view(ins, None, "cross", 0)]
    lines = [status] + [switched_off(i, v, zh)[0] for i, v in ((None, ["cross 1 3"]), (ins, ["<b>x</b>"]), (ins, []))]
    code = {"python -m core.analysis.heads --data DIR", "heads.json"}  # how to compute the atlas, in <code>
    left = [s for v in drawn + lines for s in value_strings(v) if english(s, pieces) and s not in code]
    assert left == [] and "个头" in status and "不是这个模型的头" in lines[2]
    assert "头 2：已关掉" in [a.text for a in drawn[-2].layout.annotations]
    assert "交叉注意力 0.0" in drawn[-4] and "关掉部分头" in drawn[-2].layout.title.text
    tab, page = built[-1], {"open": {ROOT: "heads"}, "drawn": {}}
    out = shows(tab, page, ins, zh, measure="previous", map_kind="decoder", map_layer=1, switched=result)
    assert "头 0" in out["atlas"] and "原译文" in out["compare"] and out["maps"].layout.annotations[2].text == "头 2：已关掉"
    out = shows(tab, page, ins, "en", measure="previous", map_kind="decoder", map_layer=1, switched=result)
    assert "head 0" in out["atlas"] and "As translated" in out["compare"]
    assert out["maps"].layout.annotations[2].text == "head 2: off"
    with pytest.raises(LookupError):  # outside an event nothing is drawn: no language is assumed
        heads.compare_view(ins, result)


def test_the_language_switch_redraws_the_tab_and_reaches_its_callbacks(built):
    demo, lang, _, _, tab = built
    assert "lang" not in tab.controls and tab.lang is lang  # the event's language, not a control
    fns = list(demo.fns.values())
    # the tab's views are drawn in the page's language (the page redraws them when it changes: tests/test_views.py)
    (listener,) = [d for d in fns if tab.outputs["atlas"] in d.outputs]  # the tab's one listener draws them
    # opened, a control moved, heads switched off, the atlas measured, the page's language
    assert lang in listener.inputs and (lang._id, "change") in listener.targets
    assert {(c._id, "change") for c in (tab.controls["switched"], tab.controls["version"])} <= set(listener.targets)
    for name in ("switch_off", "measure_heads"):  # (an atlas cell sets controls; the Attention tab draws)
        events = [d for d in fns if getattr(d.fn, "__name__", "") == name]
        assert events and all(lang in d.inputs for d in events), name


def test_a_change_that_rounds_to_nothing_is_written_without_a_sign():
    """The atlas writes a change signed (+0.004, -0.2), and one that rounds to nothing as 0.000 or 0.0 (it wrote
    "-0.000", which reads as a loss)."""
    from app.figures.heads import _cell_text
    assert [_cell_text(v, "delta_loss") for v in (0.0041, -0.0004, 0.0004, 0.0, -0.002)] == [
        "+0.004", "0.000", "0.000", "0.000", "-0.002"]
    assert [_cell_text(v, "delta_bleu") for v in (1.26, -0.04, -0.2)] == ["+1.3", "0.0", "-0.2"]
