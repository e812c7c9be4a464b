"""Inside the model (core/analysis/inside.py and the Inside-the-model tab): the module tree against the parameters, the
recorded pass against the model's own outputs and attention, LayerNorm against F.layer_norm, the softmax
statistics against autograd, the logit lens against greedy decoding."""
import math

import gradio as gr
import pytest
import torch
import torch.nn.functional as F

from app import views
from app.common import wrap_title
from app.figures import inside as figures
from app.i18n import speaking
from app.recording import recorded
from app.shared import get_translator
from app.tabs import inside as tab
from core.analysis import inside
from core.model import LayerNorm, make_model, subsequent_mask
from core.translate import Translator
from tests.conftest import needs_shipped
from tests.events import open_in


def unwrapped(title):
    """A title as one line again: wrap_title's breaks (at a space it drops) read as spaces."""
    return title.replace("<br>", " ")


SENTENCES = ["Zwei Hunde spielen im Schnee.", "Eine Frau mit einem roten Hut liest ein Buch im Park."]


@pytest.fixture(scope="module")
def tr():
    return get_translator()


@pytest.fixture(scope="module")
def ins(tr):
    return tr.inspect(SENTENCES[0], method="greedy")


@pytest.fixture(scope="module")
def rec(ins):
    return recorded(ins)


def show(page, ins, lang="en", **controls):
    """What the tab's views send for the page as it is ({output name: value}; the controls not given at their
    first values; `page["open"]`, the tab selected in each bar)."""
    return views.draw_views(page["open"], page, ins, tab.VIEWS, {**tab.DEFAULTS, **controls}, lang)


def traces(fig):
    """A figure's traces by name, as float64 tensors of their y values."""
    return {t.name: torch.tensor(t.y, dtype=torch.float64) for t in fig.data if t.y is not None}


# ---- the module tree ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tie", [True, False])
def test_tree_counts_add_up_and_tying_saves_two_tables(tie):
    model = make_model(50, 50, N=2, d_model=16, d_ff=32, h=4, tie_weights=tie)
    nodes = {n.name: n for n in inside.module_tree(model)}
    total = sum(p.numel() for p in model.parameters())
    assert nodes[""].params == total
    assert sum(n for node in nodes.values() for _, _, n, tied in node.own if tied is None) == total
    for name, node in nodes.items():  # each module: its own parameters plus its children's
        kids = [n for n in nodes.values() if n.parent == name]
        assert node.params == sum(n for _, _, n, t in node.own if t is None) + sum(k.params for k in kids)
    groups, saved = inside.tying(model)
    table = model.src_embed[0].lut.weight.numel()
    assert saved == (2 * table if tie else 0)
    assert len(groups) == (1 if tie else 0)
    if tie:
        assert sorted(groups[0][0]) == ["generator.proj.weight", "src_embed.0.lut.weight", "tgt_embed.0.lut.weight"]
        assert [t for _, _, _, t in nodes["generator.proj"].own] == ["src_embed.0.lut.weight", None]


@needs_shipped
def test_shipped_tree_and_views(tr, english):
    nodes = tab.tree_nodes()
    total = sum(p.numel() for p in tr.model.parameters())
    assert nodes[""].params == total and inside.tying(tr.model)[1] == 2 * tr.model.tgt_embed[0].lut.weight.numel()
    html, treemap, summary = tab.modules_view().values()
    assert html.count("data-path=") == len(nodes)
    assert treemap.data[0].values[0] == total and f"{total:,} parameters" in summary
    text, source, weights, dist = tab.module_view("decoder.layers.0.src_attn").values()
    assert "class MultiHeadedAttention" in source and "no weights of its own" in weights.layout.title.text
    text, source, weights, dist = tab.module_view("generator.proj").values()
    # PyTorch's own layer: its forward, named, without the page of docstring (":math:") its class carries
    assert "torch.nn.modules.linear.Linear" in source and "def forward" in source and ":math:" not in source
    assert "tied to `src_embed.0.lut.weight`" in text
    z = torch.tensor(weights.data[0].z)
    assert z.shape[0] <= figures.MAX_CELLS[0] and z.shape[1] <= figures.MAX_CELLS[1]
    assert sum(dist.data[1].y) == 8000  # the bias's histogram counts every value once
    assert tab.module_view("<script>") == tab.module_view(tab.FIRST_MODULE)  # an unknown path: the first


def test_downsampled_is_block_means():
    w = torch.arange(130 * 300, dtype=torch.float32).reshape(130, 300)
    pooled, (br, bc) = figures.downsampled(w)
    assert (br, bc) == (3, 3) and pooled.shape == (44, 100)
    torch.testing.assert_close(pooled[1, 2], w[3:6, 6:9].mean())
    torch.testing.assert_close(pooled[-1, -1], w[129:, 297:].mean())  # an edge block: the mean of its own cells


# ---- LayerNorm ----------------------------------------------------------------------------------------

def test_both_forms_of_layer_norm_against_float64():
    x = torch.randn(5, 256, dtype=torch.float64) * 3 + 1
    g, b = torch.rand(256, dtype=torch.float64) + 0.5, torch.randn(256, dtype=torch.float64)
    torch.testing.assert_close(inside.layer_norm_standard(x, g, b), F.layer_norm(x, (256,), g, b, 1e-6))
    mean = x.mean(-1, keepdim=True)
    std = ((x - mean).pow(2).sum(-1, keepdim=True) / 255).sqrt()  # unbiased, by hand
    torch.testing.assert_close(inside.layer_norm_annotated(x, g, b), g * (x - mean) / (std + 1e-6) + b)
    # the two normalised vectors differ by the factor sqrt(n / (n - 1)) (up to the placement of eps)
    ratio = inside.layer_norm_standard(x, 1, 0) / inside.layer_norm_annotated(x, 1, 0)
    torch.testing.assert_close(ratio, torch.full_like(ratio, math.sqrt(256 / 255)), rtol=1e-6, atol=0)


@needs_shipped
@pytest.mark.parametrize("path,token", [("encoder.layers.0.sublayer.0.norm", 2), ("decoder.layers.2.sublayer.1.norm", 4),
                                        ("decoder.norm", 0), ("encoder.norm", 99)])
def test_layernorm_view_is_f_layer_norm_and_the_sliders_undo_it(ins, rec, tr, path, token, english):
    ln = dict(tr.model.named_modules())[path]
    fig, forms, note = tab.layernorm_view(ins, path, token, 0.0, 0.0).values()
    shown = traces(fig)
    x = shown["input x"]
    expected = F.layer_norm(x, (x.numel(),), ln.a_2.double(), ln.b_2.double(), ln.eps)
    torch.testing.assert_close(shown["output a₂ · x̂ + b₂ (the model's own)"], expected, atol=2e-4, rtol=0)
    pos = min(token, (len(ins.src_tokens) if path.startswith("encoder") else len(ins.tgt_tokens)) - 1)
    torch.testing.assert_close(shown["output a₂ · x̂ + b₂ (the model's own)"], rec.norms[path][1][pos].double(),
                               atol=2e-4, rtol=0)  # the model's own LayerNorm output for that token
    assert f"position {pos}" in note
    undone = traces(tab.layernorm_view(ins, path, token, 1.0, 1.0)["ln"])
    torch.testing.assert_close(undone["output with the sliders' gain and bias"], x, atol=2e-4, rtol=0)
    v = tab.ln_vectors(rec.norms[path][0][pos], ln.a_2.detach(), ln.b_2.detach(), ln.eps, 1.0, 1.0)
    torch.testing.assert_close(v["moved"], rec.norms[path][0][pos], atol=1e-5, rtol=1e-5)


@needs_shipped
def test_annotated_norm_effect_is_a_pass_with_the_other_form(tr, rec):
    delta, changed = inside.annotated_norm_effect(tr.model, rec)
    original = LayerNorm.forward
    LayerNorm.forward = lambda self, x: inside.layer_norm_annotated(x, self.a_2, self.b_2, self.eps)
    try:
        with torch.no_grad():
            src, tgt = torch.tensor([rec.src_ids]), torch.tensor([rec.tgt_ids])
            mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
            ref = tr.model.generator(tr.model(src, tgt, mask, subsequent_mask(tgt.size(1))))[0]
    finally:
        LayerNorm.forward = original
    with torch.no_grad():
        ours = tr.model.generator(tr.model(src, tgt, mask, subsequent_mask(tgt.size(1))))[0]
    torch.testing.assert_close(inside.output_logp(tr.model, rec), ours)
    assert rec.top.tolist() == ours.argmax(-1).tolist()
    assert 0 < delta == pytest.approx((ref - ours).abs().max().item(), rel=1e-4)
    assert changed == (ref.argmax(-1) != ours.argmax(-1)).nonzero().flatten().tolist()


# ---- the recorded pass ----------------------------------------------------------------------------------

@needs_shipped
def test_the_recording_of_a_translation_with_heads_off_is_that_translations_run(tr):
    off = [("cross", 1, 3), ("encoder", 0, 5)]
    ins = tr.inspect("Zwei Hunde rennen über eine grüne Wiese.", heads_off=off)
    rec = inside.record_inspection(tr, ins)
    for kind in inside.KINDS:
        assert torch.equal(rec.attn[kind], getattr(ins, kind))
    plain = inside.record(tr.model, rec.src_ids, rec.tgt_ids)
    assert not torch.equal(plain.attn["cross"], rec.attn["cross"])  # the heads off changed what came after them
    torch.testing.assert_close(plain.attn["encoder"][0], rec.attn["encoder"][0])  # but not what came before


@needs_shipped
def test_scaled_softmax_is_the_models_attention(tr, ins, rec, english):
    for kind in inside.KINDS:
        for layer in range(rec.q[kind].size(0)):
            for head in range(rec.q[kind].size(1)):
                d = tab.scale_data(rec, kind, layer, head)
                torch.testing.assert_close(d["scaled"][0], rec.attn[kind][layer, head], atol=1e-6, rtol=1e-5)
    # one set of maps a sentence: the Inspection's are this recorded run's, for every kind
    for kind in inside.KINDS:
        assert torch.equal(rec.attn[kind], getattr(ins, kind))
    # and the recorded queries are W^Q applied to the recorded LayerNorm output
    mha = tr.model.decoder.layers[1].src_attn
    x = rec.norms["decoder.layers.1.sublayer.1.norm"][1]
    q = mha.linears[0](x).view(-1, mha.h, mha.d_k).transpose(0, 1)
    torch.testing.assert_close(rec.q["cross"][1], q.detach())
    fig, note = tab.scale_view(ins, "cross", 1, 2).values()
    assert "d_k = 32" in unwrapped(fig.layout.title.text) and "instead of" in note


def test_softmax_stats_against_autograd():
    logits = torch.randn(3, 7, dtype=torch.float64) * 4
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    p, top, entropy, grad = inside.softmax_stats(logits, mask)
    for r in range(3):
        allowed = logits[r][mask[r]]
        jac = torch.autograd.functional.jacobian(lambda z: z.softmax(-1), allowed)
        torch.testing.assert_close(grad[r], jac.norm())
        q = allowed.softmax(-1)
        torch.testing.assert_close(entropy[r], -(q * q.log()).sum())
        torch.testing.assert_close(top[r], q.max())
    assert torch.all(p[1, 5:] == 0)


def test_random_sweep_scale_keeps_unit_variance():
    r = inside.random_scale_sweep()
    for dk, plain, scaled in zip(r["dk"], r["plain_std"], r["scaled_std"]):
        assert abs(scaled - 1) < 0.1 and abs(plain / math.sqrt(dk) - 1) < 0.1
    # unscaled, the softmax saturates as d_k grows: larger top weight, lower entropy, less gradient
    assert r["plain_max"][-1] > 0.9 > r["plain_max"][0] and r["plain_grad"][-1] < 0.5 * r["scaled_grad"][-1]
    assert max(r["scaled_entropy"]) - min(r["scaled_entropy"]) < 0.1


@needs_shipped
def test_residual_stream_ends_at_the_models_output(tr, rec, ins, english):
    src, tgt = torch.tensor([rec.src_ids]), torch.tensor([rec.tgt_ids])
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    with torch.no_grad():
        memory = tr.model.encode(src, mask)
        out = tr.model.decode(memory, mask, tgt, subsequent_mask(tgt.size(1)))
    norms, change = inside.stream_norms(rec, "decoder")
    torch.testing.assert_close(norms[-1], out[0].norm(dim=-1))
    torch.testing.assert_close(inside.stream_norms(rec, "encoder")[0][-1], memory[0].norm(dim=-1))
    assert norms.shape == (len(rec.stages["decoder"]), len(ins.tgt_tokens)) and change.shape[0] == norms.shape[0] - 1
    # the stream after the first sub-layer is the embedding plus that sub-layer's output
    emb = rec.stream["encoder"][0]
    layer = tr.model.encoder.layers[0]
    with torch.no_grad():
        after = emb + layer.self_attn(*(layer.sublayer[0].norm(emb[None]),) * 3, mask)[0]
    torch.testing.assert_close(rec.stream["encoder"][1], after, atol=1e-5, rtol=1e-5)
    fig, note = tab.residual_view(ins).values()
    assert len(fig.data) == 4


@needs_shipped
def test_ffn_firing_counts_the_relu_units(tr, rec):
    layer = tr.model.decoder.layers[2]
    x = rec.norms["decoder.layers.2.sublayer.2.norm"][1]
    with torch.no_grad():
        h = layer.feed_forward.w_1(x).relu()
    count, per_unit = inside.ffn_firing(rec, "decoder")
    assert torch.equal(count[2], (h > 0).sum(-1)) and torch.equal(per_unit[2], (h > 0).sum(0))


@needs_shipped
@pytest.mark.parametrize("sentence", SENTENCES)
def test_logit_lens_last_layer_is_greedy_decoding(sentence):
    f32 = Translator.load(half_rows=0)  # greedy decoding by the float32 model, the one the lens reads
    ins = f32.inspect(sentence, method="greedy")
    rec = inside.record_inspection(f32, ins)
    top_i, top_p, p_chosen = inside.logit_lens(f32.model, rec)
    assert [f32.tokenizer.id_to_piece(i) for i in top_i[-1].tolist()] == ins.out_tokens
    torch.testing.assert_close(top_p[-1], torch.tensor(ins.token_probs), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(p_chosen[-1], top_p[-1])
    assert top_i.shape == (f32.model.decoder.layers.__len__(), len(ins.out_tokens))


# ---- the tab's behaviour ------------------------------------------------------------------------------------

@needs_shipped
def test_the_pass_runs_once_per_inspection(tr, monkeypatch, english):
    ins = tr.inspect(SENTENCES[1], method="greedy")
    calls = []
    real = inside.record_inspection
    monkeypatch.setattr(inside, "record_inspection", lambda *a: calls.append(1) or real(*a))
    first = tab.layernorm_view(ins, "encoder.norm", 1, 0, 0)
    for token in range(4):  # controls moved: drawn again from the recording
        tab.layernorm_view(ins, "decoder.norm", token, 0.5, 0.25)
    tab.scale_view(ins, "decoder", 2, 7), tab.ffn_view(ins, "decoder/1"), tab.lens_view(ins), tab.residual_view(ins)
    assert calls == [1] and first["ln_note"]


@needs_shipped
def test_before_a_translation_and_bad_controls(ins, english):
    page = {"open": {"": "inside", "inside": "lens"}, "drawn": {}}
    assert show(page, None) == {}  # nothing to draw: the views keep WAIT
    open_in(page, ("inside", "modules"))
    drawn = show(page, None, module="nonsense", norm="x", token=-3, gain=7, bias="?", kind="bogus", layer=99,
                 head=-1, ffn="side/9")
    assert "data-path" in drawn["tree"] and "Linear" in drawn["source"]  # the modules need no translation
    # out-of-range or unreadable controls are clamped, not errors
    assert "position 0" in tab.layernorm_view(ins, "x", -3, 7, "?")["ln_note"]
    assert "Encoder self-attention, layer 2, head 0" in unwrapped(
        tab.scale_view(ins, "bogus", 99, -1)["scale"].layout.title.text)
    assert "encoder layer 2" in tab.ffn_view(ins, "side/9")["ffn_note"]
    assert "&lt;s&gt;→" in tab.lens_view(ins)["lens"].layout.yaxis.ticktext

@needs_shipped
def test_a_new_translation_redraws_only_what_reads_it(tr, ins):
    page = {"open": {"": "inside", "inside": "modules"}, "drawn": {}}
    first = show(page, ins)
    assert "data-path" in first["tree"]
    other = tr.inspect(SENTENCES[1], method="greedy")
    again = show(page, other)
    assert not {"tree", "treemap", "summary", "detail", "source", "weights", "dist"} & set(again)  # left as they are
    open_in(page, ("inside", "lens"))
    lens = show(page, other)["lens"]
    assert "Frau" not in str(lens.to_dict()) and "woman" in str(lens.to_dict())

def test_menus_are_labelled_in_both_languages():
    from app.i18n import i18n
    words = i18n().translations
    model = make_model(50, 50, N=3, d_model=16, d_ff=32, h=4)
    norms = tab.norm_choices(model)
    with speaking("en"):
        assert [words["en"][lbl.key] for lbl, _ in norms] == [figures.norm_label(p) for _, p in norms]
    english = dict((p, words["en"][lbl.key]) for lbl, p in norms)
    assert english["encoder.layers.0.sublayer.0.norm"] == "encoder layer 0, before self-attention"
    assert english["encoder.layers.1.sublayer.1.norm"] == "encoder layer 1, before FFN"
    assert english["decoder.layers.2.sublayer.1.norm"] == "decoder layer 2, before cross-attention"
    assert english["decoder.norm"] == "decoder: the final LayerNorm" and len(english) == 3 * 2 + 3 * 3 + 2
    chinese = dict((p, words["zh-CN"][lbl.key]) for lbl, p in norms)
    assert chinese["decoder.layers.2.sublayer.1.norm"] == "解码器第 2 层，交叉注意力之前"
    ffn = tab.ffn_choices(3)
    assert [(words["en"][lbl.key], v) for lbl, v in ffn] == [
        (f"{side} layer {i}", f"{side}/{i}") for side in ("encoder", "decoder") for i in range(3)]
    assert words["zh-CN"][ffn[4][0].key] == "解码器第 1 层"


@needs_shipped
def test_a_hidden_view_is_cleared_to_the_translated_wait_note(tr, ins):
    page = {"open": {"": "inside", "inside": "layernorm"}, "drawn": {}}
    assert "position 0" in show(page, ins, norm="encoder.norm", token=0)["ln_note"]  # the LayerNorm note, drawn
    open_in(page, ("inside", "modules"))
    note = show(page, tr.inspect(SENTENCES[1], method="greedy"), norm="encoder.norm", token=0)["ln_note"]
    assert isinstance(note, gr.i18n.I18nData) and note.key == "ui.inside.wait"
    assert gr.Markdown().postprocess(note) == str(note)  # sent as the key, which the browser translates

@needs_shipped
def test_bench_inside_times_every_view_beside_a_translation(monkeypatch, capsys):
    from tools import bench_inside
    monkeypatch.setattr(bench_inside, "SENTENCES", SENTENCES[:1])
    r = bench_inside.measure(runs=1)
    keys = {"record", *bench_inside.VIEWS, "all_views", "slider", "translate"}
    assert set(r) == {f"inside_{k}_ms" for k in keys} and all(v > 0 for v in r.values())
    assert r["inside_all_views_ms"] >= max(r[f"inside_{v}_ms"] for v in bench_inside.VIEWS)
    bench_inside.report(r)
    assert capsys.readouterr().out.count("one greedy translation of the sentence") == len(keys) - 1


# ---- the page's language ------------------------------------------------------------------------------------

def drawn_strings(ins, lang, **controls):
    """The words every view of the tab draws for `ins` with the page in `lang` (its source code left out), and the
    names from the code that the module tree and treemap show as they are (module names, class names)."""
    from tools.i18n_report import value_strings
    values = {**tab.DEFAULTS, **controls}
    out = []
    with speaking(lang):
        for v in tab.VIEWS:
            used = {name: values[name] for name in v.uses}
            drawn = views._named(v, v.draw(ins, **used) if v.reads_translation else v.draw(**used))
            out += [s for name, d in drawn.items() if name != "source" for s in value_strings(d)]
    names = {n.name.rpartition(".")[2] for n in tab.tree_nodes().values()} | {n.cls for n in tab.tree_nodes().values()}
    return out, names


@needs_shipped
@pytest.mark.parametrize("controls", [{}, dict(module="generator.proj", norm="decoder.layers.2.sublayer.1.norm",
                                               token=3, gain=1.0, bias=0.5, kind="cross", layer=1, head=2,
                                               ffn="decoder/1"),
                                      dict(module="", norm="decoder.norm", kind="decoder", ffn="encoder/2"),
                                      dict(module="encoder.norm"), dict(module="decoder.layers.0.src_attn")])
def test_every_view_draws_its_words_in_chinese(ins, controls):
    from tools.i18n_report import english, sentence_pieces
    strings, names = drawn_strings(ins, "zh-CN", **controls)
    left = {s for s in strings if english(s, sentence_pieces(ins)) and s not in names}
    assert strings and not left, left
    english_strings, _ = drawn_strings(ins, "en", **controls)
    assert {s for s in english_strings if english(s, sentence_pieces(ins)) and s not in names}  # the measure sees English


@needs_shipped
def test_the_words_of_hovers_and_menus_follow_the_language(ins):
    with speaking("zh-CN"):
        fig, note = tab.scale_view(ins, "cross", 1, 2).values()
        assert fig.layout.title.text == wrap_title("交叉注意力（解码器 → 编码器），第 1 层，第 2 个头：d_k = 32") and "而不是" in note
        firing, units, note = tab.ffn_view(ins, "decoder/1").values()
        assert firing.data[0].y[0] == "第 0 层" and "词元 %{x}" in firing.data[0].hovertemplate
        assert note.startswith("**解码器第 1 层**：")
        res = tab.residual_view(ins)["residual"]
        assert res.data[0].y[0] == "嵌入 + 位置编码" and "第 0 层自注意力" in res.data[2].y
        lens = tab.lens_view(ins)["lens"]
        assert "在 &lt;s&gt; 之后" in lens.data[0].hovertext[0][0] and "&lt;s&gt;→" in lens.layout.yaxis.ticktext
        weights = tab.module_view("generator.proj")["weights"]
        assert "第 %{y} 行，第 %{x} 列：%{z:.4f}" in weights.data[0].hovertemplate
        assert "权重 8000×256, 偏置 8000" in tab.modules_view()["tree"]
    with speaking("en"):
        assert list(tab.residual_view(ins)["residual"].data[0].y)[:3] == ["embedding + PE", "layer 0 self-attention",
                                                                          "layer 0 FFN"]
        assert "weight 8000×256, bias 8000" in tab.modules_view()["tree"]
        english = tab.module_view("generator.proj")
    with speaking("xx"):
        assert tab.module_view("generator.proj") == english  # unknown: English


@needs_shipped
def test_switching_the_language_redraws_the_views_on_screen(ins):
    assert all(v.uses == () or set(v.uses) <= set(tab.DEFAULTS) for v in tab.VIEWS)  # the language is no control
    page = {"open": {"": "inside", "inside": "ffn"}, "drawn": {}}
    english_out = show(page, ins)
    assert set(english_out) == {"firing", "units", "ffn_note"}
    assert show(page, ins) == {}  # nothing moved: nothing sent
    chinese = show(page, ins, "zh-CN")
    assert set(chinese) == set(english_out) and "平均每个词元" in chinese["ffn_note"]  # drawn again in Chinese


def test_core_names_the_stages_by_keys_whose_words_are_in_both_tables():
    from app.i18n import LANGS, table
    stages = inside.stage_names(3)
    assert len(stages["encoder"]) == 2 + 3 * 2 and len(stages["decoder"]) == 2 + 3 * 3
    for side in stages.values():
        assert side[0] == (None, "embedding") and side[-1] == (None, "final")
        for layer, part in side:
            assert layer is None or isinstance(layer, int)
            for lang in LANGS:
                assert f"inside.stage.{part}" in table(lang), (lang, part)
