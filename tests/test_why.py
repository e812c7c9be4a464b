"""The Why tab's callbacks (app/tabs/why.py) on the shipped model: what it draws is the Inspection's
attention and core.analysis.attribution's numbers for the chosen token, computed once per translation and token."""
import numpy as np
import pytest

from app.i18n import speaking
from app.tabs import translate, why
from app.views import ROOT, page_state
from core.analysis.attribution import attribute
from tests.conftest import needs_shipped
from tests.events import selected

pytestmark = needs_shipped


@pytest.fixture(scope="module")
def ins():
    return translate.translate("Ein Mädchen liest ein Buch im Garten.", "greedy")[2]


def why_view(ins, position, lang="en"):
    """The token's figures and reading, drawn in `lang`."""
    with speaking(lang):
        out = why.why_view(ins, position)
    assert set(out) == {"source", "target", "reading"}
    return out["source"], out["target"], out["reading"]


def test_the_menu_lists_every_output_token(ins):
    update = why.tokens_view(ins)
    assert [why.chosen(ins, c[1]) for c in update["choices"]] == list(range(len(ins.out_tokens)))
    assert update["choices"][-1][0].endswith("</s>") and why.chosen(ins, update["value"]) == why.default_position(ins)


def test_a_menu_value_of_another_translation_names_the_default_token(ins):
    """The browser sends the menu it shows, which after a new sentence is still the last one's until the new
    one arrives: such a value gives the default token, and the view is known by the token it drew."""
    other = translate.translate("Zwei Hunde spielen im Schnee.", "greedy")[2]
    stale = why.token_choices(other)[-1][1]
    assert why.chosen(ins, stale) == why.default_position(ins)
    assert why.chosen(ins, why.token_choices(ins)[-1][1]) == len(ins.out_tokens) - 1
    assert why.resolve(ins, None) == why.resolve(ins, stale) == {"position": why.default_position(ins)}


def test_the_figures_show_the_attention_and_the_attributions_of_the_token(ins, monkeypatch):
    position = 2
    src_fig, tgt_fig, note = why_view(ins, position)
    heat, avg, grad, occl = src_fig.data
    L, H = ins.cross.shape[:2]
    assert np.asarray(heat.z).shape == (L * H, len(ins.src_tokens))
    np.testing.assert_allclose(np.asarray(heat.z)[L * H - 1], ins.cross[L - 1, H - 1, position].numpy(), atol=5e-4)
    np.testing.assert_allclose(avg.y, ins.cross[:, :, position].mean(dim=(0, 1)).numpy(), atol=5e-4)
    from app.shared import get_translator
    tr = get_translator()
    direct = attribute(tr.model, [tr.tokenizer.piece_to_id(p) for p in ins.src_tokens],
                       [tr.tokenizer.piece_to_id(p) for p in ins.tgt_tokens], position)
    np.testing.assert_allclose(grad.y, direct.grad_src.numpy(), atol=1e-4)
    np.testing.assert_allclose(occl.y, direct.occl_src.numpy(), atol=1e-4)
    assert len(tgt_fig.data[0].y) == position + 1  # only the English before the token
    assert direct.token == tr.tokenizer.piece_to_id(ins.out_tokens[position])
    assert abs(direct.probability - ins.token_probs[position]) < 0.02  # the float32 model beside the decoder's
    assert "ranks" in note and ins.out_tokens[position] in src_fig.layout.title.text


def test_a_token_is_attributed_once(ins, monkeypatch):
    why_view(ins, 1)
    monkeypatch.setattr(why, "attribute", lambda *a, **k: pytest.fail("the model ran again"))
    why_view(ins, 1)


def test_controls_from_the_browser_are_kept_in_range(ins):
    last = len(ins.out_tokens) - 1
    assert why_view(ins, 10_000)[0].layout.title.text == why_view(ins, last)[0].layout.title.text
    assert "output 1," in why_view(ins, "nonsense")[0].layout.title.text


@pytest.fixture(scope="module")
def tab():
    import gradio as gr
    with gr.Blocks():
        return why.build(page_state(), gr.State(), gr.State("en"))


def test_before_any_translation_the_tab_says_what_to_do(tab):
    """Before a translation (and once it shows an earlier one), the figures say what to do, in the page's
    language; the token menu is left (or emptied)."""
    import gradio as gr
    page = {"open": {ROOT: "why"}, "drawn": {}}
    said = {}
    for lang in ("en", "zh-CN"):
        out = tab.show(page, lang, None, tabs=selected(page), position=None)
        assert set(out) == {tab.outputs[n] for n in ("source", "target", "reading")}  # not the token menu
        assert out[tab.outputs["reading"]] == ""
        with speaking(lang):
            said[lang] = why.not_yet()
        assert [out[tab.outputs[f]].layout.annotations[0].text for f in ("source", "target")] == [said[lang]] * 2
    assert said["zh-CN"] != said["en"] and said["en"].startswith("Translate a sentence")
    page["drawn"]["why/attribution"] = (object(), ((None,), "zh-CN"))  # a closed session's figures of a sentence
    fig = tab.show(page, "zh-CN", None, tabs=selected(page), position=None)[tab.outputs["source"]]
    assert said["zh-CN"] in fig.layout.annotations[0].text
    assert tab.show(page, "zh-CN", None, tabs=selected(page), position=None) == gr.skip()  # shown already


def test_the_tab_draws_in_the_pages_language(ins):
    """The figures' titles, subplot titles and hovers and the reading, in Chinese; in English as before."""
    from tools.i18n_report import english, sentence_pieces, value_strings
    position = 2
    src_fig, tgt_fig, note = why_view(ins, position, "zh-CN")
    words = [s for value in (src_fig, tgt_fig, note) for s in value_strings(value)]
    assert len(words) >= 8 and [s for s in words if english(s, sentence_pieces(ins))] == []
    assert "源句位置" in note and src_fig.layout.title.text.startswith("为什么是")
    assert [t.hovertemplate.split("<br>")[1].split(" %")[0] for t in src_fig.data] == ["权重", "平均权重", "梯度 × 输入",
                                                                                   "p 的下降"]
    src_en, _, note_en = why_view(ins, position)
    assert "occlusion: drop in p when replaced by &lt;unk&gt;" in [a.text.replace("<br>", " ") for a in src_en.layout.annotations]
    assert src_en.data[0].hovertemplate == "layer.head %{y} → %{x}<br>weight %{z:.3f}<extra></extra>"
    assert note_en.startswith("- **attention** ranks “") and note_en.splitlines()[-1] in (
        "All three point at the same piece.", "Attention agrees with one attribution but not the other.",
        "They disagree: the piece attention favours is not the one the probability depends on most.")


def test_the_menu_redraws_when_the_reader_moves_it_not_when_the_tab_sets_it():
    """Opening the tab sets the menu's choices and first value and draws that token; the menu's own change would
    send a second event after every opening, so only the reader's choice (the menu's select) redraws."""
    import gradio as gr
    with gr.Blocks() as demo:
        t = why.build(page_state(), gr.State(), gr.State("en"))
    token = t.controls["position"]
    triggers = {(target, name) for d in demo.fns.values() for target, name in d.targets}
    assert (token._id, "select") in triggers and not {(token._id, "change"), (token._id, "input")} & triggers
