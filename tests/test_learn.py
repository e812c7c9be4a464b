"""The Learn tab (app/tabs/learn.py) and the page's two languages (app/i18n.py, app/locale/*.json): every key in
both languages, every step drawn for two sentences in both, each step's answer against its own computation."""
import html
import json
import math
import re

import plotly.graph_objects as go
import pytest
import torch

from app import i18n
from app.tabs import learn
from tests.conftest import needs_shipped

SENTENCES = ("Ein kleiner Junge spielt mit einem roten Ball im Garten.", "Zwei Frauen.")


def test_both_languages_have_the_same_keys_and_fields():
    en, zh = i18n.table("en"), i18n.table("zh-CN")
    assert set(en) == set(zh)
    for key in en:
        assert i18n.fields(en[key]) == i18n.fields(zh[key]), key
        assert zh[key].strip(), key


def test_every_step_has_all_its_strings():
    en = i18n.table("en")
    for step in learn.STEPS:
        for part in ("title", "body", "action", "fact", "q", "a"):
            assert f"learn.{step.key}.{part}" in en, (step.key, part)
        for value in step.control.choices:
            assert f"learn.{step.key}.choice.{value}" in en, (step.key, value)
        assert f"learn.tab.{step.tab}" in en
    assert len(learn.STEPS) >= 14 and len(set(learn.KEYS)) == len(learn.STEPS)


def test_the_chinese_uses_d2l_terms():
    zh = " ".join(i18n.table("zh-CN").values())
    for term in ("词元", "掩蔽", "束搜索", "层规范化", "暂退法", "多头注意力", "位置编码", "标签平滑", "预热"):
        assert term in zh, term


def test_a_language_from_outside_is_read_as_a_known_one():
    assert i18n.read_lang("zh") == i18n.read_lang("zh-Hans-CN") == i18n.read_lang("ZH-tw") == "zh-CN"
    for bad in (None, "", "fr", "<script>", "en-US", 3):
        assert i18n.read_lang(bad) == "en"
    assert i18n.text("xx", "learn.step", k=1, n=2) == "Step 1 of 2"
    assert i18n.text("zh-CN", "learn.step", k=1, n=2) == "第 1 步，共 2 步"


@pytest.fixture(scope="module")
def inspections():
    from app.shared import get_translator
    tr = get_translator()
    return [tr.inspect(s, method="greedy") for s in SENTENCES]


def _action_values(step, ins):
    c = step.control
    if c.kind == "radio":
        return list(c.choices)
    return [learn._value(c.lo, ins), learn._value(c.hi, ins)]


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_every_step_renders_for_two_sentences(inspections, lang):
    for ins in inspections:
        for k, step in enumerate(learn.STEPS):
            progress = {"step": k, "done": []}
            out = learn.render(ins, progress, lang)
            assert len(out) == learn.VIEWS[0].outputs
            path, head, body, slider, choice, fig, fact, question, answer, open_btn, where = out
            assert isinstance(fig, go.Figure) and fig.layout.title.text
            assert i18n.text(lang, f"learn.{step.key}.title") in head
            assert json.loads(where) == {"step": k + 1, "tab": step.tab}
            assert not re.search(r"\{[a-z_]+\}", fact), fact
            assert len(question["choices"]) >= 2 and question["value"] is None
            for value in _action_values(step, ins):
                progress, marks, fig, fact = learn.act(ins, progress, value, lang)
                assert isinstance(fig, go.Figure) and step.key in progress["done"]
                assert "✓" in marks
            choices, right, _ = step.quiz(learn.context(ins, lang))
            assert 0 <= right < len(choices) and len(set(choices)) == len(choices)
            assert learn.check(ins, progress, choices[right], lang).startswith("✓")
            wrong = choices[(right + 1) % len(choices)]
            assert learn.check(ins, progress, wrong, lang).startswith("✗")
            assert learn.check(ins, progress, None, lang) == i18n.text(lang, "learn.pick")


def test_without_a_translation_a_step_asks_for_one():
    out = learn.render(None, learn.new_progress(), "zh-CN")
    assert out[6] == i18n.text("zh-CN", "learn.wait") and out[5] is None
    assert learn.check(None, learn.new_progress(), "x", "en") == ""


def test_back_and_next_stay_on_the_path():
    p = learn.new_progress()
    assert learn.back(None, p, "en")[0]["step"] == 0
    p = {"step": len(learn.STEPS) - 1, "done": ["generator"]}
    moved = learn.forward(None, p, "en")[0]
    assert moved["step"] == len(learn.STEPS) - 1 and moved["done"] == ["generator"]
    assert learn.go_to(None, p, "7", "en")[0]["step"] == 7
    assert learn.go_to(None, p, "<b>", "en")[0]["step"] == 0
    assert learn.step_of({"step": 10 ** 9}) == len(learn.STEPS) - 1


def _quiz(key, ins, lang="en"):
    step = learn.STEPS[learn.KEYS.index(key)]
    choices, right, values = step.quiz(learn.context(ins, lang))
    return choices[right], values


# ---- each answer against its own computation -------------------------------------------------------------

@needs_shipped
def test_answers_about_the_model_are_its_own_numbers(inspections):
    from app.shared import get_translator
    model = get_translator().model
    ins = inspections[0]
    assert _quiz("generator", ins)[0] == str(model.generator.proj.weight.size(0))
    pe = model.src_embed[1].pe
    assert all(p is not pe for p in model.parameters()) and _quiz("buffer", ins)[0] == "no, a buffer"
    assert model.src_embed[0].lut.weight.data_ptr() == model.generator.proj.weight.data_ptr()
    assert _quiz("embeddings", ins)[0] == "one, shared"
    d, d_ff = model.src_embed[0].d_model, model.encoder.layers[0].feed_forward.w_1.out_features
    assert _quiz("init", ins)[0] == f"±{math.sqrt(6 / (d + d_ff)):.4f}"


def test_the_clones_answer_counts_what_the_optimizer_sees():
    from core.lab import build_model
    plain = build_model(("plain_list",))
    optimizer = torch.optim.Adam(plain.parameters())
    seen = sum(p.numel() for g in optimizer.param_groups for p in g["params"])
    assert learn.clone_counts("plain")["registered"] == seen < learn.clone_counts("plain")["held"]
    assert learn.clone_counts("repeat")["objects"] == 1 and learn.clone_counts("clones")["objects"] == 2


@needs_shipped
def test_layernorm_with_gain_sigma_and_bias_mu_gives_the_input_back(inspections):
    for ins in inspections:
        c = learn.context(ins, "en")
        v, _ = learn.layernorm_vectors(c, 1.0)
        assert torch.allclose(v["moved"], v["input"], atol=1e-4)
        v0, _ = learn.layernorm_vectors(c, 0.0)
        assert torch.allclose(v0["moved"], v0["output"], atol=1e-6)
        assert _quiz("layernorm", ins)[0] == f"γ = {float(v['sigma']):.3f}"
        # the variance, the answer a reader may expect, is offered and is not the one that gives the input back
        choices, _, values = learn.STEPS[learn.KEYS.index("layernorm")].quiz(c)
        var = float(v["sigma"]) ** 2
        assert f"γ = {var:.3f}" in choices and values["var"] == f"{var:.3f}"
        assert not torch.allclose(v["normalised"] * var + v["mean"], v["input"], atol=1e-3)


@needs_shipped
def test_the_scale_answer_is_the_undivided_softmax(inspections):
    for ins in inspections:
        c = learn.context(ins, "en")
        raw, dk = learn.scale_weights(c, False)
        scaled, _ = learn.scale_weights(c, True)
        assert torch.allclose(raw.sum(-1), torch.ones(raw.size(0)), atol=1e-5)
        assert float(raw.max(-1).values.mean()) >= float(scaled.max(-1).values.mean())  # sharper without the scale
        assert _quiz("scale", ins)[0] == f"{float(raw.max(-1).values.mean()):.2f}"


@needs_shipped
def test_the_masks_answer_counts_the_padding_of_the_batch(inspections):
    for ins in inspections:
        batch = learn.mask_batch(learn.context(ins, "en"))
        row = learn.short_row(batch)
        pads = int((batch.src[row] == learn.masks.PAD).sum())
        assert _quiz("masks", ins)[0] == str(pads) and pads > 0


@needs_shipped
def test_answers_about_the_sentence_follow_the_translation(inspections):
    for ins in inspections:
        assert _quiz("greedy", ins)[0] == ins.out_tokens[1].replace("▁", " ").strip()
        t = min(2, len(ins.out_tokens) - 1)
        assert _quiz("teacher", ins)[0] == (ins.out_tokens[t].replace("▁", " ").strip() or ins.out_tokens[t])
        c = learn.context(ins, "en")
        a, _ = learn.ffn_units(c, 1)
        assert _quiz("ffn", ins)[1]["share"] == f"{float((a > 0).float().mean()):.0%}"


def test_the_training_answers_are_computed():
    from core.train import rate
    c = learn.context(None, "en")
    choices, right, values = learn.quiz_noam(c)
    best = choices[right]
    assert values["peak"] == "4,000"
    d = c.model.src_embed[0].d_model
    assert best == "4,000" and rate(4000, d, 1.0, 4000) > max(rate(3999, d, 1.0, 4000), rate(4001, d, 1.0, 4000))
    assert learn.quiz_smoothing(c)[0][learn.quiz_smoothing(c)[1]] == "0.900"
    td = learn.smoothed(0.1, 10)
    assert abs(float(td.sum()) - 1.0) < 1e-6 and td[0] == 0 and abs(float(td[2]) - 0.9) < 1e-6  # not on padding
    assert torch.allclose(td[[1, 3, 4]], torch.full((3,), 0.1 / 8))
    assert learn.quiz_accum(c)[1] == 1  # the same gradient, up to rounding
    res = float(learn.quiz_relative(c)[2]["res"])
    assert res < 1e-4


def test_a_figure_title_is_cut_into_lines_a_phone_shows():
    zh = "输出位置 1 上的生成器：概率最高的几个词元（红色为选中的词元）"
    en = "First encoder LayerNorm on “<s>”, slider at 0.00 (first 64 dimensions)"
    for title in (zh, en):
        lines = learn.wrap_title(title).split("<br>")
        width = [sum(2 if "\u3000" <= ch <= "\uffef" else 1 for ch in html.unescape(x)) for x in lines]
        assert len(lines) == 2 and max(width) <= learn.TITLE_WIDTH, (lines, width)
        assert "".join(html.unescape(x) for x in lines).replace(" ", "") == title.replace(" ", "")  # nothing lost
    assert "&lt;s&gt;" in learn.wrap_title(en) and "<s>" not in learn.wrap_title(en)  # still escaped for plotly
    assert learn.wrap_title("short") == "short"


def test_a_sentence_the_tab_cannot_take_is_told_in_the_pages_language():
    assert learn.sentence_notice("   ", "zh-CN") == i18n.text("zh-CN", "translate.status.empty")
    assert "Type a German sentence" in learn.sentence_notice("", "en")
    from app.tabs.translate import MAX_CHARS
    assert f"{MAX_CHARS + 1:,} characters" in learn.sentence_notice("x" * (MAX_CHARS + 1), "en")
    assert f"{MAX_CHARS:,}" in learn.sentence_notice("x" * (MAX_CHARS + 1), "zh-CN")
    assert learn.sentence_notice("Ein Hund läuft.", "zh-CN") == ""
