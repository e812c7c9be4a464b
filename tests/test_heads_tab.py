"""The Heads tab's callbacks: the atlas grids and their reading, choosing heads (limits kept on the server),
translating again with heads off, the comparison and the maps with the heads that were off, and a click on the
atlas opening that head in the Attention tab."""
import copy
import re

import gradio as gr
import pytest
from gradio.i18n import I18nData

from app import i18n
from app.common import kind_choices, kind_name
from app.tabs import heads
from app.views import ROOT
from core.analysis.heads import MEASURES, findings
from core.headmask import KINDS
from core.words import say
from tests.conftest import needs_shipped
from tests.test_heads import synthetic_atlas

pytestmark = needs_shipped  # the tab reads the shipped model's shape


def full_atlas():
    """A synthetic atlas the shape of the shipped model's (3 layers, 8 heads), with data like the real one's."""
    atlas = synthetic_atlas(L=3, H=8)
    atlas["data"] = {"split": "val", "sentences": 1014, "bleu_sentences": 512}
    return atlas


def test_atlas_grids_name_every_head_and_say_what_is_not_defined():
    atlas = full_atlas()
    out = heads.atlas_html(atlas, "previous")
    cells = re.findall(r'data-kind="(\w+)" data-layer="(\d)" data-head="(\d)"', out)
    assert len(cells) == 48 and {c[0] for c in cells} == {"encoder", "decoder"}  # cross has no previous position
    assert "not defined for cross-attention" in out
    assert "encoder self-attention, layer 1, head 2: 90%" in out.lower()
    assert "greedy BLEU over the first 512" in out
    assert len(re.findall(r"data-head=", heads.atlas_html(atlas, "delta_bleu"))) == 72
    # anything else from the browser falls back to a measure that exists
    assert len(re.findall(r"data-head=", heads.atlas_html(atlas, "<img src=x>"))) == 72
    assert "python -m core.analysis.heads" in heads.atlas_html(None, "previous")


def test_reading_is_the_findings_of_the_numbers():
    md = heads.reading_md(full_atlas())
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
    assert md.startswith("**数字告诉我们什么**") and md.count("\n- ") == heads.reading_md(full_atlas()).count("\n- ")
    label = heads.reading_label(full_atlas())
    assert isinstance(label, I18nData)
    assert {lang: i18n.i18n().translations[lang][label.key] for lang in i18n.LANGS} == \
        {lang: heads.reading_md(full_atlas(), lang) for lang in i18n.LANGS}
    assert heads.reading_label(None) == ""


def test_menus_are_labelled_in_both_languages():
    """The measures as the atlas's caption names them, and every head of the list to switch off."""
    sent = i18n.i18n().translations
    for (label, name) in heads.measure_choices():
        en, zh = sent["en"][label.key], sent["zh-CN"][label.key]
        assert en.startswith(name.replace("_", " ") + ": ") and zh != en
        assert en == heads.measure_text(name, "en") and zh == heads.measure_text(name, "zh-CN")
    assert "<s>" in sent["zh-CN"][heads.measure_choices()[5][0].key]  # first: the piece put in
    assert [n for _, n in heads.measure_choices()] == list(MEASURES)
    choices = heads.head_choices(3, 8)
    assert len(choices) == 72 and choices[11][1] == "encoder 1 3"
    label = dict((v, k) for k, v in choices)["cross 1 3"]
    shown = {lang: i18n.i18n().translations[lang][label.key] for lang in i18n.LANGS}
    assert shown == {"en": "Cross-attention · layer 1 · head 3", "zh-CN": "交叉注意力 · 层 1 · 头 3"}
    assert all(f"{kind_name(v.split()[0], 'en')} · layer" in i18n.i18n().translations["en"][k.key]
               for k, v in choices)


def test_choosing_heads_keeps_to_the_model():
    assert heads.add_head([], "cross", 1, 3) == ["cross 1 3"]
    assert heads.add_head(["cross 1 3"], "encoder", 99, -5) == ["encoder 2 0", "cross 1 3"]  # clamped, sorted
    chosen = heads.all_but(["decoder 0 1", "cross 2 4"], "cross", 2, 4)
    assert chosen == ["decoder 0 1"] + [f"cross 2 {h}" for h in range(8) if h != 4]
    assert heads.add_head(["bogus", "cross 9 9"], "nonsense", "x", None) == ["cross 0 0"]
    with pytest.raises(ValueError, match="is not a head"):
        heads.parse_heads(["cross 3 0"], 3, 8)


@pytest.fixture(scope="module")
def ins():
    from app.tabs.translate import translate
    return translate("Zwei Hunde spielen im Schnee.", "greedy")[2]


def test_switching_off_translates_again_with_the_same_settings(ins):
    assert heads.switch_off(None, ["cross 1 3"])[1] is None
    status, result = heads.switch_off(ins, ["<b>x</b>"])
    assert result is None and "<b>" not in status and "is not a head" in status
    assert heads.switch_off(ins, [])[0].startswith("Choose at least one head")
    off = heads.all_but([], "cross", 1, 2) + heads.all_but([], "cross", 2, 2)
    status, result = heads.switch_off(ins, off)
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


def test_maps_show_the_heads_that_were_off_in_grey(ins):
    _, result = heads.switch_off(ins, ["decoder 1 2", "decoder 1 5", "cross 0 0"])
    fig = heads.maps_view(ins, result, "decoder", 1)
    notes = [a.text for a in fig.layout.annotations]
    assert notes[2] == "head 2: off" and notes[5] == "head 5: off" and notes[0] == "head 0"
    assert fig.data[2].colorscale != fig.data[0].colorscale
    assert "off" not in " ".join(a.text for a in heads.maps_view(ins, result, "encoder", 1).layout.annotations)
    assert heads.maps_view(ins, None, "decoder", 1).layout.annotations[0].text.startswith("The attention maps")


def cell(value):
    """The select event of a click on an atlas cell, as heads.CLICK_JS sends it."""
    return gr.SelectData(None, {"index": [0, 0], "value": value, "selected": True})


def test_a_click_on_the_atlas_opens_that_head_in_the_attention_tab(ins):
    page = {"open": {ROOT: "heads", "attention": "all-heads"}, "drawn": {}}
    out = heads.open_head(page, ins, cell({"kind": "cross", "layer": 1, "head": 3}))
    tabs, subtabs, kind, layer, head, one, *rest = out
    assert isinstance(tabs, gr.Tabs) and (kind, layer, head) == ("cross", 1, 3)
    assert page["open"] == {ROOT: "attention", "attention": "one-head"}
    assert "Cross-attention" in one.layout.title.text and "layer 1, head 3" in one.layout.title.text
    # a forged click is kept in range
    out = heads.open_head(page, ins, cell({"kind": "x", "layer": 99, "head": "y"}))
    assert out[2:5] == ("encoder", 2, 0)
    assert heads.open_head(page, ins, cell("not a head"))[2:5] == ("encoder", 0, 0)


def test_views_blank_before_a_translation_and_atlas_draws_without_one():
    page = {"open": {ROOT: "heads"}, "drawn": {}}
    atlas, compare, maps = heads.show(page, None, "delta_loss", "cross", 0, None)
    assert atlas == heads.atlas_html(heads.load_atlas(), "delta_loss")  # the shipped atlas, or how to make one
    if heads.load_atlas() is not None:
        assert len(re.findall(r"data-head=", atlas)) == 3 * 3 * 8  # every head of the shipped model
    assert all(isinstance(v, type(gr.skip())) for v in (compare, maps))
    assert [v for _, v in kind_choices()] == list(KINDS)


def test_the_tab_draws_in_the_pages_language(ins):
    """In zh-CN the atlas, the comparison, the maps and the status lines say nothing in English but the
    sentence's and the model's pieces, names from the code (delta_loss) and the measures' own names; the page's
    language is one of the views' controls, so that switching it redraws them."""
    from tools.i18n_report import english, sentence_pieces, value_strings
    zh = "zh-CN"
    status, result = heads.switch_off(ins, ["decoder 1 2", "decoder 1 5", "cross 0 0"], zh)
    pieces = sentence_pieces(ins) | sentence_pieces(result.changed)
    drawn = [heads.atlas_html(atlas, m, zh) for atlas in (full_atlas(), heads.load_atlas(), None)
             for m in ("previous", "delta_bleu", "delta_loss")]
    drawn += [heads.compare_view(ins, result, zh), heads.compare_view(ins, None, zh),
              heads.maps_view(ins, result, "decoder", 1, zh), heads.maps_view(ins, None, "cross", 0, zh)]
    lines = [status, heads.switch_off(None, ["cross 1 3"], zh)[0], heads.switch_off(ins, ["<b>x</b>"], zh)[0],
             heads.switch_off(ins, [], zh)[0]]
    code = {"python -m core.analysis.heads --data DIR", "heads.json"}  # how to compute the atlas, in <code>
    left = [s for v in drawn + lines for s in value_strings(v) if english(s, pieces) and s not in code]
    assert left == [] and "个头" in status and "不是这个模型的头" in lines[2]
    assert "头 2：已关掉" in [a.text for a in drawn[-2].layout.annotations]
    assert "交叉注意力 0.0" in drawn[-4] and "关掉部分头" in drawn[-2].layout.title.text
    page = {"open": {ROOT: "heads"}, "drawn": {}}
    atlas, compare, maps = heads.show(page, ins, "previous", "decoder", 1, result, zh)
    assert "头 0" in atlas and "原译文" in compare and maps.layout.annotations[2].text == "头 2：已关掉"
    atlas, compare, maps = heads.show(page, ins, "previous", "decoder", 1, result, "en")
    assert "head 0" in atlas and "As translated" in compare and maps.layout.annotations[2].text == "head 2: off"


def test_the_language_switch_redraws_the_tab_and_reaches_its_callbacks():
    from app.tabs import attention
    cfg = {"N": 3, "h": 8}
    with gr.Blocks() as demo:
        lang, page, state = gr.Radio(["zh-CN", "en"], value="en"), gr.State(), gr.State()
        with gr.Tabs() as top:
            attn = attention.build(cfg, page, state, lang)
            tab = heads.build(cfg, page, state, top, attn, lang)
    assert tab.controls["lang"] is lang and list(tab.controls)[-1] == "lang"
    fns = list(demo.fns.values())
    # the tab's views read the language; the page redraws them when it changes (tests/test_views.py)
    redraws = [d for d in fns if d.fn is heads.show]
    assert redraws and all(lang in d.inputs for d in redraws)
    for name in ("switch_off", "open_head_clicked"):
        events = [d for d in fns if getattr(d.fn, "__name__", "") == name]
        assert events and all(lang in d.inputs for d in events), name
