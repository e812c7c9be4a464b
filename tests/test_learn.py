"""The Learn tab (app/tabs/learn.py) and the page's two languages (app/i18n.py, locale/*.json): every key in
both languages, every step drawn for two sentences in both, each step's answer against its own computation."""
import html
import json
import math
import re

import gradio as gr
import plotly.graph_objects as go
import pytest
import torch

from app import i18n, learn_path
from app.common import md_literal
from app.figures import learn as learn_figures
from app.i18n import in_language
from app.tabs import learn
from core.data import PAD
from tests.conftest import needs_shipped


def said(fn, *args, lang, **kwargs):
    """fn(*args) as an event of the page in `lang` runs it (app.i18n.in_language)."""
    return in_language(fn)(*args, lang=lang, **kwargs)

SENTENCES = ("Ein kleiner Junge spielt mit einem roten Ball im Garten.", "Zwei Frauen.")


def test_both_languages_have_the_same_keys_and_fields():
    en, zh = i18n.table("en"), i18n.table("zh-CN")
    assert set(en) == set(zh)
    for key in en:
        assert i18n.fields(en[key]) == i18n.fields(zh[key]), key
        assert zh[key].strip(), key


def test_every_step_has_all_its_strings():
    en = i18n.table("en")
    for step in learn_path.STEPS:
        for part in ("title", "body", "action", "fact", "q", "a"):
            assert f"learn.{step.key}.{part}" in en, (step.key, part)
        for value in step.control.choices:
            assert f"learn.{step.key}.choice.{value}" in en, (step.key, value)
        assert f"learn.tab.{step.opens}" in en
    assert len(learn_path.STEPS) >= 14 and len(set(learn_path.KEYS)) == len(learn_path.STEPS)


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
    return [learn_path._value(c.lo, ins), learn_path._value(c.hi, ins)]


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_every_step_renders_for_two_sentences(inspections, lang):
    for ins in inspections:
        for k, step in enumerate(learn_path.STEPS):
            progress = {"step": k, "done": []}
            out = said(learn.render, ins, progress, lang=lang)
            assert set(out) == set(learn.OUTPUTS)  # by name: a view's outputs, every one drawn
            fig, fact, question, head, where = (out[k] for k in ("figure", "fact", "question", "head", "where"))
            assert isinstance(fig, go.Figure) and fig.layout.title.text
            assert i18n.text(lang, f"learn.{step.key}.title") in head
            assert json.loads(where) == {"step": k + 1, "tab": step.opens}
            assert not re.search(r"\{[a-z_]+\}", fact), fact
            assert len(question["choices"]) >= 2 and question["value"] is None
            for value in _action_values(step, ins):
                progress, marks, fig, fact = said(learn.act, ins, progress, value, lang=lang).values()
                assert isinstance(fig, go.Figure) and progress["done"] == []  # done once its answer is shown
            choices, right, _ = said(step.quiz, learn_path.context(ins), lang=lang)
            assert 0 <= right < len(choices) and len(set(choices)) == len(choices)
            value = learn_path._value(step.control.default, ins)
            assert said(learn.check, ins, progress, choices[right], value, value, lang=lang)["answer"].startswith("✓")
            wrong = choices[(right + 1) % len(choices)]
            assert said(learn.check, ins, progress, wrong, value, value, lang=lang)["answer"].startswith("✗")
            assert said(learn.check, ins, progress, None, value, value, lang=lang)["answer"] == i18n.text(lang, "learn.pick")


def test_without_a_translation_a_step_asks_for_one():
    out = said(learn.render, None, learn_path.new_progress(), lang="zh-CN")
    assert out["fact"] == i18n.text("zh-CN", "learn.wait") and out["figure"] is None
    assert said(learn.check, None, learn_path.new_progress(), "x", 0, None, lang="en")["answer"] == ""


def test_back_and_next_stay_on_the_path():
    p = learn_path.new_progress()
    assert said(learn.back, None, p, lang="en")["progress"]["step"] == 0
    p = {"step": len(learn_path.STEPS) - 1, "done": ["generator"]}
    moved = said(learn.forward, None, p, lang="en")["progress"]
    assert moved["step"] == len(learn_path.STEPS) - 1 and moved["done"] == ["generator"]
    assert said(learn.go_to, None, p, "7", lang="en")["progress"]["step"] == 7
    assert said(learn.go_to, None, p, "<b>", lang="en")["progress"]["step"] == 0
    assert learn_path.step_of({"step": 10 ** 9}) == len(learn_path.STEPS) - 1


def _quiz(key, ins, lang="en"):
    step = learn_path.STEPS[learn_path.KEYS.index(key)]
    choices, right, values = said(step.quiz, learn_path.context(ins), lang=lang)
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
    assert learn_figures.clone_counts("plain")["registered"] == seen < learn_figures.clone_counts("plain")["held"]
    assert learn_figures.clone_counts("repeat")["objects"] == 1 and learn_figures.clone_counts("clones")["objects"] == 2


@needs_shipped
def test_layernorm_with_gain_sigma_and_bias_mu_gives_the_input_back(inspections, english):
    for ins in inspections:
        c = learn_path.context(ins)
        v, _ = learn_figures.layernorm_vectors(c, 1.0)
        assert torch.allclose(v["moved"], v["input"], atol=1e-4)
        v0, _ = learn_figures.layernorm_vectors(c, 0.0)
        assert torch.allclose(v0["moved"], v0["output"], atol=1e-6)
        assert _quiz("layernorm", ins)[0] == f"γ = {float(v['sigma']):.3f}"
        # the variance, the answer a reader may expect, is offered and is not the one that gives the input back
        choices, _, values = learn_path.STEPS[learn_path.KEYS.index("layernorm")].quiz(c)
        var = float(v["sigma"]) ** 2
        assert f"γ = {var:.3f}" in choices and values["var"] == f"{var:.3f}"
        assert not torch.allclose(v["normalised"] * var + v["mean"], v["input"], atol=1e-3)


@needs_shipped
def test_the_scale_answer_is_the_undivided_softmax(inspections, english):
    for ins in inspections:
        c = learn_path.context(ins)
        raw, dk = learn_figures.scale_weights(c, False)
        scaled, _ = learn_figures.scale_weights(c, True)
        assert torch.allclose(raw.sum(-1), torch.ones(raw.size(0)), atol=1e-5)
        assert float(raw.max(-1).values.mean()) >= float(scaled.max(-1).values.mean())  # sharper without the scale
        assert _quiz("scale", ins)[0] == f"{float(raw.max(-1).values.mean()):.2f}"


def test_a_long_map_shows_its_rows_in_windows_that_cover_each_row_once():
    """app/figures/learn.py row_windows: the whole map up to MAP_ROWS rows; past it, windows in order that hold
    every row once, of one size but the last, at most WINDOWS of them, of WINDOW_ROWS rows at most where that many
    windows do."""
    for n in range(1, 260):
        windows = learn_figures.row_windows(n)
        rows = [r for a, b in windows for r in range(a, b + 1)]
        assert rows == list(range(n)), n
        assert len(windows) == 1 if n <= learn_figures.MAP_ROWS else 1 < len(windows) <= learn_figures.WINDOWS
        sizes = [b - a + 1 for a, b in windows]
        assert len(set(sizes[:-1])) <= 1 and sizes[-1] <= sizes[0]
        if len(windows) > 1:
            assert sizes[0] <= max(learn_figures.WINDOW_ROWS, math.ceil(n / learn_figures.WINDOWS))


SCREEN_PX = 620  # the most a step's map may be tall: a 390 x 844 phone's screen, less the browser's bars
LABEL_ROW_PX = 18  # a row's px at the least: a 12 px label in it, apart from the next
COLUMN_PX = 12  # a column's px at the least: a turned 12 px label, apart from the next (tests/test_browser_phone.py)


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_step_4s_map_fits_a_phone_for_any_length_of_sentence(lang):
    """Step 4's map of a sentence against itself, for 13 pieces (the page's first example), 55 and 128 (a
    1,000-character input, cut), drawn as the page draws it (margins fitted, app/figures/margins.py): at most a
    screen tall, every row of a window labelled and given a label's height, each window's button showing its rows;
    at 390 px every column is within the plot area and given a turned label's width, in the plot's phone width
    where it has one, else in the Learn figure's own width, which the 13 pieces fit without scrolling."""
    from app.common import BOX_EXTRA
    from app.figures.margins import fit
    from app.shared import examples, get_translator
    long55 = ("Eine junge Frau mit einem roten Regenschirm und ein älterer Mann mit einer blauen Mütze gehen langsam "
              "über die nasse Brücke, während hinter ihnen zwei kleine Hunde im Regen mit einem gelben Ball spielen "
              "und laut bellen, weil sie heute glücklich sind.")
    tr = get_translator()
    for typed, n in ((examples()[0], 13), (long55, 55), (("Der Hund läuft. " * 70)[:1000], tr.max_src_tokens)):
        ins = tr.inspect(typed, method="greedy")
        assert len(ins.src_tokens) == n
        for how in ("scaled", "raw"):
            fig, _ = said(learn_figures.draw_scale, learn_path.context(ins), how, lang=lang)
            layout = fit(fig.to_plotly_json())["layout"]
            margin, height = layout["margin"], layout["height"] + BOX_EXTRA
            assert height <= SCREEN_PX + BOX_EXTRA, (n, height)
            windows = learn_figures.row_windows(n)
            (a, b), menus = windows[0], layout.get("updatemenus") or []
            shown = b - a + 1
            assert (height - margin["t"] - margin["b"]) / shown >= LABEL_ROW_PX, (n, height, margin)
            assert list(fig.layout.yaxis.tickvals) == list(range(n)) == list(fig.layout.xaxis.tickvals)
            if len(windows) > 1:  # the first window on screen, a button for each, each showing its own rows
                assert list(fig.layout.yaxis.range) == [b + 0.5, a - 0.5]
                assert [m["args"][0]["yaxis.range"] for m in menus[0]["buttons"]] == \
                    [[y + 0.5, x - 0.5] for x, y in windows]
                assert [m["label"] for m in menus[0]["buttons"]] == [f"{x + 1}–{y + 1}" for x, y in windows]
            else:
                assert not menus and fig.layout.yaxis.autorange == "reversed"
            assert fig.layout.xaxis.range is None  # every column on the axis
            width = (fig.layout.meta or {}).get("phone_width") or learn_figures.LEARN_FITS
            assert (width - margin["l"] - margin["r"]) / n >= COLUMN_PX, (n, width, margin)
            assert (n == 13) == (fig.layout.meta is None or "phone_width" not in fig.layout.meta)

@needs_shipped
def test_the_masks_answer_is_what_the_decoders_mask_lets_a_padding_query_see(inspections, english):
    """The question's answer is read off the batch's own decoder mask: built as the Annotated Transformer builds it
    (target padding & subsequent), the first padding position's query sees the sentence's real pieces, each of them
    and no other; a mask built otherwise gives another answer. Before Check the step's figure leaves the padding
    positions' rows blank, and after it draws them."""
    for ins in inspections:
        c = learn_path.context(ins)
        batch = learn_figures.mask_batch(c)
        reach, row, real = learn_figures.pad_query_reach(batch)
        keep = batch.tgt[row] != PAD
        assert 0 < real == int(keep.sum()) < batch.tgt.size(1) and bool(keep[:real].all())
        hand = [k for k in range(batch.tgt.size(1)) if k <= real and batch.tgt[row, k] != PAD]
        assert batch.tgt_mask[row, real].nonzero().flatten().tolist() == hand == list(range(real))
        assert reach == "real" and _quiz("masks", ins)[0] == "every real piece of its sentence"
        batch.tgt_mask = batch.tgt_mask & keep.view(1, -1, 1)  # the padding queries' rows masked as well
        assert learn_figures.pad_query_reach(batch)[0] == "none"
        batch.tgt_mask[row, real] = torch.arange(batch.tgt.size(1)) <= real  # padding keys let through
        assert learn_figures.pad_query_reach(batch)[0] == "upto"
        fig, _ = learn_figures.draw_masks(c, "both")
        z = fig.data[0].z
        assert all(v is None for r in z[real:] for v in r) and all(v is not None for r in z[:real] for v in r)
        c.revealed = True
        z = learn_figures.draw_masks(c, "both")[0].data[0].z
        assert [list(r) for r in z] == learn_figures.mask_batch(c).tgt_mask[row].int().tolist()


@needs_shipped
def test_answers_about_the_sentence_follow_the_translation(inspections, english):
    for ins in inspections:
        t = min(2, len(ins.out_tokens) - 1)
        assert _quiz("teacher", ins)[0] == (ins.out_tokens[t].replace("▁", " ").strip() or ins.out_tokens[t])
        c = learn_path.context(ins)
        a, _ = learn_figures.ffn_units(c, 1)
        assert _quiz("ffn", ins)[1]["share"] == f"{float((a > 0).float().mean()):.0%}"


@needs_shipped
def test_the_greedy_answer_counts_the_scores_the_uncached_loop_computes(inspections, english):
    """The greedy step's answer against the Annotated Transformer's loop run on the sentence: the scores one head of the
    first decoder layer's self-attention computes over all steps, counted as it runs (queries × keys at each
    call), for the translation's own pieces; with the cache, one query a step."""
    from app.shared import get_translator
    from core.decode import greedy_decode_uncached
    tr = get_translator()
    for ins in inspections:
        counted = []
        hook = tr.model.decoder.layers[0].self_attn.register_forward_pre_hook(
            lambda module, args: counted.append(args[0].size(1) * args[1].size(1)))
        try:
            ids, _ = tr.encode_source(ins.source)
            src = torch.tensor([ids])
            out = greedy_decode_uncached(tr.model, src, tr.source_mask(src), tr.default_max_len(len(ids)),
                                         bos=tr.start_id, eos=tr.eos_id)[0]
        finally:
            hook.remove()
        assert len(out) + 1 == len(ins.out_tokens) == len(counted)  # the pieces and </s>: one decoder call each
        choice, values = _quiz("greedy", ins)
        assert choice == f"{sum(counted):,}" == values["total"]
        assert values["cached"] == f"{sum(range(1, len(counted) + 1)):,}"


def test_the_training_answers_are_computed(english):
    from core.train import rate
    c = learn_path.context(None)
    choices, right, values = learn_path.quiz_noam(c)
    best = choices[right]
    args = _logged_args()
    d, factor, warmup = args["d_model"], args["factor"], args["warmup"]
    assert values["peak"] == f"{warmup:,}"
    assert rate(warmup, d, factor, warmup) > max(rate(warmup - 1, d, factor, warmup), rate(warmup + 1, d, factor, warmup))
    assert best == f"{factor * (d * warmup) ** -0.5:.2e}"  # factor * d_model^-0.5 * warmup^-0.5, where the terms meet
    assert learn_path.quiz_smoothing(c)[0][learn_path.quiz_smoothing(c)[1]] == "0.900"
    td = learn_figures.smoothed(0.1, 10)
    assert abs(float(td.sum()) - 1.0) < 1e-6 and td[0] == 0 and abs(float(td[2]) - 0.9) < 1e-6  # not on padding
    assert torch.allclose(td[[1, 3, 4]], torch.full((3,), 0.1 / 8))
    assert learn_path.quiz_accum(c)[1] == 1  # the same gradient, up to rounding
    res = float(learn_path.quiz_relative(c)[2]["res"])
    assert res < 1e-4


def _logged_args():
    """The shipped run's arguments as its training log records them (the one source of its schedule)."""
    from app.shared import model_dir
    with open(model_dir() / "train_log.jsonl") as f:
        return next(json.loads(line) for line in f if '"config"' in line)["args"]


def _noam_traces(fig):
    """A figure's curves by their legend names, as written before the legend cut them into lines."""
    return {html.unescape(t.name.replace("<br>", "")).replace(" ", ""): (list(t.x), list(t.y), t) for t in fig.data}


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_noam_step_draws_this_models_schedule_from_its_log(lang, monkeypatch):
    """The Noam step: this model's curve peaks where its logged arguments say (factor · d_model^-0.5 · warmup^-0.5, at
    step warmup), its legend names them, the slider starts there, and the paper's 4,000 warm-up steps is a curve
    of its own beside it, not drawn over it; a log with other arguments moves the curve with it."""
    from app.figures import training
    args = _logged_args()

    def peak_of(fig, model_name):
        x, y, trace = _noam_traces(fig)[model_name]
        return x[y.index(max(y))], max(y), trace

    def check(d, factor, warmup):
        learn_figures.draw_noam.cache_clear()
        step = learn_path.STEPS[learn_path.KEYS.index("noam")]
        default = learn_path._value(step.control.default, None)
        assert default == warmup
        fig, _ = said(learn_figures.draw_noam, learn_path.context(None), default, lang=lang)
        name = i18n.text(lang, "learn.noam.model", d=d, factor=f"{factor:g}", warmup=warmup).replace(" ", "")
        at, top, model = peak_of(fig, name)
        assert at == warmup and top == pytest.approx(factor * d ** -0.5 * warmup ** -0.5, rel=1e-9)
        assert model.visible in (None, True)
        traces = _noam_traces(fig)
        paper = [k for k, (x, y, _) in traces.items() if k != name and x[y.index(max(y))] == 4000]
        assert paper, traces.keys()  # the paper's 4,000 as a comparison
        for k in paper:
            assert traces[k][2].visible in (None, True) and max(traces[k][1]) != pytest.approx(top, rel=1e-3)
        slider = [t for t in fig.data if t.line.dash == "dash"]  # the slider's curve over the model's, dashed
        assert len(slider) == 1 and max(slider[0].y) == pytest.approx(top)

    check(args["d_model"], float(args["factor"]), int(args["warmup"]))
    config, steps, epochs = training.shipped_log()
    other = dict(config, args=dict(config["args"], warmup=2000, factor=1.3))
    monkeypatch.setattr(training, "shipped_log", lambda: (other, steps, epochs))
    try:
        check(args["d_model"], 1.3, 2000)
        _, right, values = said(learn_path.quiz_noam, learn_path.context(None), lang=lang)
        assert values["rate"] == f"{1.3 * (args['d_model'] * 2000) ** -0.5:.2e}" and values["peak"] == "2,000"
    finally:
        learn_figures.draw_noam.cache_clear()


def test_a_figure_title_is_cut_into_lines_a_phone_shows():
    zh = "输出位置 1 上的生成器：概率最高的几个词元（红色为选中的词元）"
    en = "First encoder LayerNorm on “<s>”, slider at 0.00 (first 64 dimensions)"
    for title in (zh, en):
        lines = learn_figures.wrap_title(title).split("<br>")
        width = [sum(2 if "\u3000" <= ch <= "\uffef" else 1 for ch in html.unescape(x)) for x in lines]
        assert len(lines) == 2 and max(width) <= learn_figures.TITLE_WIDTH, (lines, width)
        assert "".join(html.unescape(x) for x in lines).replace(" ", "") == title.replace(" ", "")  # nothing lost
    assert "&lt;s&gt;" in learn_figures.wrap_title(en) and "<s>" not in learn_figures.wrap_title(en)  # still escaped for plotly
    assert learn_figures.wrap_title("short") == "short"


def test_a_sentence_the_tab_cannot_take_is_told_in_the_pages_language():
    assert said(learn.sentence_notice, "   ", lang="zh-CN") == i18n.text("zh-CN", "translate.status.empty")
    assert "Type a German sentence" in said(learn.sentence_notice, "", lang="en")
    from app.common import MAX_CHARS
    assert f"{MAX_CHARS + 1:,} characters" in said(learn.sentence_notice, "x" * (MAX_CHARS + 1), lang="en")
    assert f"{MAX_CHARS:,}" in said(learn.sentence_notice, "x" * (MAX_CHARS + 1), lang="zh-CN")
    assert said(learn.sentence_notice, "Ein Hund läuft.", lang="zh-CN") == ""


# ---- predict, then see: nothing before Check gives the answer away -------------------------------------------

# what kind of answer each step asks for: a number (the default), a piece of the translation, or words; and where
# the right choice is words or a rounded band, the answer's fields that prove it (the evidence a page could leak).
# A right choice that is a piece of the translation is read as one whatever the step (the greedy step once asked for
# the piece after the first, which the English under the sentence box had shown since step 1)
PIECES = {"teacher"}
EVIDENCE = {"buffer": ("names",), "embeddings": ("saved",), "accum": ("diff",), "ffn": ("share",),
            "relative": ("res",), "history": ("share",), "patching": ("share",)}
# words that say a step's answer without a number: the encoding called never learned or trained (a buffer), the
# three matrices called one (tied embeddings: the Overview's diagram once said the generator's Linear shares the
# embedding's weights), a padding query said to read the real pieces (the decoder's mask), the model said to change
# most at first (where it reached half its BLEU)
SAYS = {"buffer": {"en": ("never learned", "not learned", "fixed signal", "never trained"),
                   "zh-CN": ("从不学习", "不学习", "固定信号", "从不训练")},
        "embeddings": {"en": ("serve all three", "one matrix could", "are tied", "is tied", "tied to", "same table",
                              "shares weights", "share weights"),
                       "zh-CN": ("充当这三者", "一个矩阵就可以", "共用一个矩阵", "共享权重", "同一张嵌入表", "共享的")},
        "masks": {"en": ("real pieces", "real piece"), "zh-CN": ("真实词元",)},
        "history": {"en": ("changes the most", "most of the learning", "learns most"),
                    "zh-CN": ("变化最大", "大部分学习")},
        "patching": {"en": ("leave its own position", "leaves its own position", "spread over the sentence",
                            "after the first encoder layer", "as soon as a layer"),
                     "zh-CN": ("离开自己的位置", "分散到整个句子", "第一个编码器层之后", "经过一次注意力")}}
# words a step's title must not hold: the path names every step by its title, on every step (the embeddings step's
# once named weight tying, its own answer)
TITLE_SAYS = {"embeddings": {"en": ("tying", "tied", "shared", "one matrix"), "zh-CN": ("绑定", "共享", "共用")},
              "patching": {"en": ("spread", "travel", "first layer"), "zh-CN": ("分散", "扩散", "第一层")}}
# steps whose question asks the reader to reason from the translation, which the English under the box and step 1
# show (the target is the piece after the input): those carried-over lines are its evidence, not its answer
READS_THE_TRANSLATION = {"teacher"}
# steps whose choices are all numbers the step could show: none may be read before Check, nor two of them told
# apart by the ratio of two bars (the clones step's bars and fact line once gave the other two counts, then its
# bars stood 2:1 as clones against [layer] * N, leaving the plain list's by elimination)
ELIMINATION = {"clones"}
# what the step's figure must not show as it opens: another mask than the one the question asks about (the masks
# question asks about the decoder's combined mask of the padded English)
OPENS_ON = {"masks": ("learn.masks.fig.padding", "learn.masks.fig.subsequent")}


def patching_cells(ins, fig):
    """The patching grid's cells a figure draws that say the answer by their colour alone, hover or not: any cell of a
    position other than the changed word's, and any of the changed word's past the embedding (how much of the loss
    its own position still returns there tells how much went elsewhere)."""
    grid = learn_figures.patch_run(learn_path.context(ins))[0]
    return [f"cell ({j}, {k}) drawn" for j, row in enumerate(fig.data[0].z) for k, v in enumerate(row)
            if v is not None and (j not in grid.changed or k > 0)]


# what a step's figure must not draw before Check whatever its text and hover say, where a colour is the answer
COLOURS_SAY = {"patching": patching_cells}
NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,.]*(?:[eE][-+−]?\d+)?%?")
TEXT_KEYS = {"text", "ticktext", "name", "texttemplate", "hovertemplate", "hovertext", "title"}


def numbers(s):
    """Every number written in `s`, each as (value, decimals shown, significant digits, is a percentage), in every
    reading a reformatted number may have: "1,283" as 1283 and as 1.283, "8 000" and "8,000" as 8000."""
    s = re.sub(r"(?<=\d)[\u00a0\u202f ](?=\d{3}(?!\d))", "", str(s)).replace("−", "-")
    out = []
    for m in NUMBER.finditer(s):
        t = m.group().rstrip(".,")
        pct = t.endswith("%")
        mant, _, exp = t.rstrip("%").replace("E", "e").partition("e")
        readings = {mant.replace(",", "")}
        if mant.count(",") == 1 and "." not in mant:
            readings.add(mant.replace(",", "."))
        for r in readings:
            try:
                x = float(r + ("e" + exp if exp else ""))
            except ValueError:
                continue
            shown = len(r.partition(".")[2]) - (int(exp) if exp else 0)
            out.append((x, shown, len(r.replace(".", "").replace("-", "").lstrip("0")), pct))
    return out


def _answer_number(choice):
    """The right choice as a number: its thousands separators dropped (the code writes them), its decimals."""
    x = numbers(choice.replace(",", ""))
    return (x[0][0], x[0][1], x[0][3]) if x else None


def points_to(written, right, others):
    """Whether a number written on the page gives away the right choice `right` (value, decimals, percentage):
    the same number at its precision, or the same rounded to fewer digits (two significant at least); for a band
    of choices ("≈ 1e-05", "≈ 10%") any number nearer to the right band than to every other."""
    x, shown, sig, pct = written
    a, p, a_pct, band = right
    if pct != a_pct or x == 0:
        return False
    if band:
        if not pct and not 0 < x < 0.5:
            return False
        dist = (lambda u, v: abs(u - v)) if pct else (lambda u, v: abs(math.log10(u) - math.log10(v)))
        return all(dist(x, a) <= dist(x, o) + 1e-12 for o in others)
    if abs(x - a) <= 0.5 * 10 ** -p * (1 + 1e-9):
        return True
    return shown < p and sig >= 2 and abs(round(a, shown) - x) < 10 ** -(shown + 3)


def figure_texts(fig):
    """The words a figure shows or hovers: titles, annotations, axis titles, tick labels, trace names, text and
    hover templates."""
    found = []

    def walk(x, key=None):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v, key)
        elif isinstance(x, str) and key in TEXT_KEYS:
            found.append(html.unescape(x))
    walk(json.loads(fig.to_json()))
    return found


def _flat(values):
    """The numbers of a (nested) list, its strings and gaps left out."""
    if isinstance(values, (list, tuple)) or hasattr(values, "tolist"):
        values = values.tolist() if hasattr(values, "tolist") else values
        return [x for v in values for x in _flat(v)]
    return [float(values)] if isinstance(values, (int, float)) and not isinstance(values, bool) else []


def figure_extremes(fig):
    """The smallest and largest number of each trace's x, y and z that a reader can read off the figure (its axis
    has tick labels, or its hover shows it), each as (number as read, whether it reads as a percentage)."""
    shown = []
    for trace in fig.data:
        hover = trace.hoverinfo not in ("skip", "none")
        for letter in "xyz":
            values = getattr(trace, letter, None)
            if values is None:
                continue
            flat = [v for v in _flat(values) if math.isfinite(v)]
            if not flat:
                continue
            axis = fig.layout[f"{letter}axis{(getattr(trace, letter + 'axis', None) or letter)[1:]}"] \
                if letter != "z" else None
            ticks = axis is not None and axis.showticklabels is not False and not axis.ticktext
            hovered = hover and (trace.hovertemplate is None or f"%{{{letter}" in trace.hovertemplate)
            if ticks or hovered:
                fmt = (axis.tickformat or "") if axis is not None else ""
                pct = "%" in fmt or bool(re.search(rf"%{{{letter}:[^}}]*%}}", trace.hovertemplate or ""))
                shown += [(x * 100 if pct else x, pct) for x in (min(flat), max(flat))]
    return shown


def _md_words(s):
    """The bold pieces of a Markdown fact, as written before md_literal escaped them."""
    return [html.unescape(re.sub(r"\\(.)", r"\1", w)) for w in re.findall(r"\*\*(.+?)\*\*", s)]


def screen(step, lang, out):
    """What render() puts on screen for a step, but the path's marks, its place in the address and the question's
    choices (the answer is among them by design): (texts, figure, its shown numbers)."""
    head, body, slider, choice, fig, fact, question, answer, open_btn = (out[k] for k in (
        "head", "body", "slider", "choice", "figure", "fact", "question", "answer", "open"))
    texts = [head.replace(i18n.text(lang, "learn.step", k=learn_path.KEYS.index(step.key) + 1, n=len(learn_path.STEPS)), ""),
             body, fact, question.get("label", ""), answer, open_btn.get("value", "")]
    for update in (slider, choice):
        if update.get("visible"):
            texts += [str(update.get(k, "")) for k in ("label", "minimum", "maximum", "value")]
            texts += [str(c[0] if isinstance(c, tuple) else c) for c in update.get("choices", ())]
    return texts, fig


def _is_piece(ins, choice):
    return choice in {learn_figures._piece(w) for w in ins.out_tokens} and _answer_number(choice) is None


def bar_ratios(fig):
    """The ratios of every two bars a figure draws (heights above 0), which a reader reads without an axis."""
    heights = [v for t in fig.data if t.type == "bar" and t.visible is not False for v in _flat(t.y) if v > 0]
    return [a / b for i, a in enumerate(heights) for j, b in enumerate(heights) if i != j]


def gives_away(step, ins, lang, texts, figs, carried=(), elsewhere=()):
    """The places among `texts` and `figs` that state the step's right answer or its evidence (empty: none);
    `carried`: what the reader has read on the tab before this step (the English under the box, the earlier steps'
    texts and figures' words, checked or not, the path's titles), read for the answer's words, pieces and numbers;
    `elsewhere`: the page's other text the path may send the reader to (the Overview's diagram), read for the
    answer's words."""
    choices, right, values = said(step.quiz, learn_path.context(ins), lang=lang)
    fig_texts = [t for f in figs for t in figure_texts(f)]
    words = [*texts, *fig_texts]
    found = [t for t in [*words, *carried, *elsewhere] for w in SAYS.get(step.key, {}).get(lang, ()) if w in t.lower()]
    titles = [i18n.text(lang, f"learn.{s.key}.title") for s in learn_path.STEPS]
    found += [t for t in titles for w in TITLE_SAYS.get(step.key, {}).get(lang, ()) if w in t.lower()]
    carried = [] if step.key in READS_THE_TRANSLATION else list(carried)
    if step.key in PIECES or _is_piece(ins, choices[right]):
        piece = choices[right]
        items = [t for t in fig_texts if t.strip() == piece]
        if step.key == "teacher":
            # the decoder's input, all of it, is what the question asks the reader to reason from (the target is
            # the next piece): each figure may show the piece as often as the input holds it, and no more
            inputs = [learn_figures._piece(w) for w in ins.tgt_tokens].count(piece)
            items = items[len(figs) * inputs:]
        found += items + [w for t in [*texts, *carried] for w in _md_words(t) if w.strip() == piece]
        if len(piece) >= 3 and piece.isalpha():
            found += [t for t in [*texts, *(fig_texts if step.key != "teacher" else ()), *carried]
                      if re.search(rf"\b{re.escape(piece)}\b", t)]
        return found
    targets = []
    number = _answer_number(choices[right])
    if number is None:
        found += [t for t in [*words, *carried] if choices[right] in t]
    else:
        band = choices[right].lstrip().startswith("≈")
        others = [_answer_number(c)[0] for i, c in enumerate(choices) if i != right]
        targets.append(((*number, band), others))
        if step.key in ELIMINATION:  # every other choice's number, read off the page, leaves the right one
            targets += [((*_answer_number(c), False), []) for i, c in enumerate(choices) if i != right]
            wrong = [_answer_number(c)[0] for i, c in enumerate(choices) if i != right]
            pairs = [x / y for x in wrong for y in wrong if x != y]
            found += [f"bars in the ratio {r:.2f} of two other choices" for f in figs for r in bar_ratios(f)
                      if any(abs(r - q) <= 0.03 * q for q in pairs)]
    for field in EVIDENCE.get(step.key, ()):
        value = str(values[field])
        if _answer_number(value) is None:
            found += [t for t in [*words, *carried] if any(n.strip("` ") in t for n in value.split(", "))]
        else:
            targets.append(((*_answer_number(value), False), []))
    for target, others in targets:
        found += [t for t in words if any(points_to(n, target, others) for n in numbers(t))]
        # what earlier steps state, read for the number itself written as precisely (a band's neighbours, a 1 or
        # a 0.5 there are other measures)
        found += [t for t in carried if not target[3] and any(written_as(n, target) for n in numbers(t))]
        found += [f"figure data {x}" for f in figs for x, pct in figure_extremes(f)
                  if points_to((x, 9, 9, pct), target, others)]
    return found


def written_as(written, right):
    """Whether a number written on the page is the right choice's number at the choice's precision or finer."""
    x, shown, sig, pct = written
    a, p, a_pct, _ = right
    digits = len(f"{a:g}".replace(".", "").replace("-", "").lstrip("0"))  # a 1 or a 0.5 says nothing apart
    return pct == a_pct and digits >= 2 and shown >= p and sig >= 2 and abs(x - a) <= 0.5 * 10 ** -p * (1 + 1e-9)


def _html_text(s):
    """The text of an HTML string, its tags taken out."""
    return html.unescape(re.sub(r"<[^>]+>", " ", s))


_CARRIED = {}


def step_texts(ins, sentence, lang, j):
    """Every text step `j` shows a reader who goes through it: before Check and after it, its action at every
    value, and its figures' words."""
    key = (sentence, lang, j)
    if key not in _CARRIED:
        step = learn_path.STEPS[j]
        progress = {"step": j, "done": []}
        out = said(learn.render, ins, progress, lang=lang)
        texts, fig = screen(step, lang, out)
        texts += figure_texts(fig)
        choices, right, _ = said(step.quiz, learn_path.context(ins), lang=lang)
        value = learn_path._value(step.control.default, ins)
        checked = said(learn.check, ins, progress, choices[right], value, value, lang=lang)
        texts += [checked["answer"], checked["fact"], *figure_texts(checked["figure"])]
        for p in (progress, checked["progress"]):
            for v in _every_value(step, ins):
                acted = said(learn.act, ins, p, v, lang=lang)
                texts += [acted["fact"], *figure_texts(acted["figure"])]
        _CARRIED[key] = texts
    return _CARRIED[key]


def carried_texts(ins, sentence, lang, k):
    """What a reader has read on the tab by step `k`: the English under the sentence box, the glossary, the path's
    step titles, and everything the steps before `k` showed."""
    texts = [_html_text(said(learn.english_line, ins, lang=lang)), i18n.text(lang, "ui.learn.glossary")]
    texts += [i18n.text(lang, f"learn.{s.key}.title") for s in learn_path.STEPS]
    return texts + [t for j in range(k) for t in step_texts(ins, sentence, lang, j)]


def overview_texts(ins, lang):
    """The Overview tab's diagram, both drawings, for the sentence."""
    from app.tabs import overview
    return [_html_text(said(overview.overview_svg, ins, lang=lang))]


def _every_value(step, ins):
    c = step.control
    if c.kind == "radio":
        return list(c.choices)
    lo, hi = learn_path._value(c.lo, ins), learn_path._value(c.hi, ins)
    n = round((hi - lo) / c.step)
    return [round(lo + i * c.step, 6) if isinstance(lo, float) else lo + i * c.step for i in range(n + 1)]


@pytest.mark.slow  # every step, every value of its action, two sentences, two languages: 1-2 minutes
@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
@pytest.mark.parametrize("sentence", range(len(SENTENCES)))
@pytest.mark.parametrize("key", learn_path.KEYS)
def test_nothing_before_check_gives_the_answer_away(inspections, key, sentence, lang):
    """The step on screen, and its action at every value, say nothing that gives away the right choice (or what
    proves it) while that choice is offered: no text, no number (however it is written), no figure text, no axis
    or hover that reads it, no two bars in the ratio of two other choices; nor does anything the reader has read
    before on the tab (the English under the box, the earlier steps checked or not, every step's title on the path)
    or the Overview's diagram."""
    ins, k = inspections[sentence], learn_path.KEYS.index(key)
    step = learn_path.STEPS[k]
    progress = {"step": k, "done": []}
    out = said(learn.render, ins, progress, lang=lang)
    choices, right, _ = said(step.quiz, learn_path.context(ins), lang=lang)
    assert out["question"]["choices"] == choices and choices[right] in out["question"]["choices"]
    texts, fig = screen(step, lang, out)
    found = gives_away(step, ins, lang, texts, [fig], carried=carried_texts(ins, sentence, lang, k),
                       elsewhere=overview_texts(ins, lang))
    flat = [t.replace("<br>", "").replace(" ", "") for t in figure_texts(fig)]
    found += [key for key in OPENS_ON.get(step.key, ())
              if i18n.text(lang, key).replace(" ", "") in flat]
    coloured = COLOURS_SAY.get(step.key, lambda ins, fig: [])
    found += coloured(ins, fig)
    assert found == [], f"render: {found}"
    for value in _every_value(step, ins):
        _, _, fig, fact = said(learn.act, ins, progress, value, lang=lang).values()
        found = gives_away(step, ins, lang, [fact], [fig]) + coloured(ins, fig)
        assert found == [], f"act({value!r}): {found}"


@pytest.mark.slow  # every step, every value of its action, two sentences, two languages: 1-2 minutes
@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
@pytest.mark.parametrize("sentence", range(len(SENTENCES)))
@pytest.mark.parametrize("key", learn_path.KEYS)
def test_after_check_the_evidence_appears_and_stays(inspections, key, sentence, lang):
    """Check reveals what the step kept back (its fact line goes on, the answer's fields show) and the step stays
    revealed through a redraw, the other language, and Next then Back; another sentence that changes the answer
    asks again. A check without a pick reveals nothing."""
    ins, k = inspections[sentence], learn_path.KEYS.index(key)
    step = learn_path.STEPS[k]
    start = {"step": k, "done": []}
    before = said(learn.render, ins, start, lang=lang)
    choices, right, values = said(step.quiz, learn_path.context(ins), lang=lang)
    value = learn_path._value(step.control.default, ins)
    assert said(learn.check, ins, start, None, value, value, lang=lang)["progress"].get("revealed") in (None, {})
    checked = said(learn.check, ins, start, choices[right], value, value, lang=lang)
    progress, answer, fig, fact = (checked[k] for k in ("progress", "answer", "figure", "fact"))
    verdict, explanation = answer.split("\n\n", 1)
    assert verdict.startswith("✓") and gives_away(step, ins, lang, [fact, explanation], [fig])
    if f"learn.{key}.seen" in i18n.table("en"):
        assert fact != before["fact"] and fact.startswith(before["fact"])
    other = next(x for x in i18n.LANGS if x != lang)
    for shown in (lang, other):
        out = said(learn.render, ins, progress, lang=shown)
        assert out["question"]["value"] == said(step.quiz, learn_path.context(ins), lang=shown)[0][right]
        assert out["answer"].startswith("✓")
        texts, fig = screen(step, shown, out)
        assert gives_away(step, ins, shown, texts, [fig])
    assert said(learn.render, ins, progress, lang=lang)["fact"] == fact
    away = said(learn.go_to, ins, progress, k + 1 if k + 1 < len(learn_path.STEPS) else k - 1, lang=lang)["progress"]
    assert said(learn.go_to, ins, away, k, lang=lang)["answer"] == answer  # the answer, back with the step
    # the other sentence: the same question keeps its answer, a new one is asked afresh
    new = inspections[1 - sentence]
    again = said(step.quiz, learn_path.context(new), lang=lang)
    out = said(learn.render, new, progress, lang=lang)
    assert (out["answer"] != "") == (learn_path.question_mark(again[1], again[2]) == learn_path.question_mark(right, values))


def test_a_reformatted_answer_is_still_caught():
    """The leak check's reading of numbers: the answer however it is written is caught, its neighbours are not."""
    sigma = (1.283, 3, False, False)
    for written in ("σ = 1.283", "σ = 1,283", "σ ≈ 1.28", "1.2834", "1.283e+00", "γ=1.283。"):
        assert any(points_to(n, sigma, []) for n in numbers(written)), written
    for written in ("1.647", "1.2", "1", "12.83", "0.1283", "−1e9"):
        assert not any(points_to(n, sigma, []) for n in numbers(written)), written
    vocab = (8000.0, 0, False, False)
    for written in ("8000", "8,000", "8 000", "全部 8000 个"):
        assert any(points_to(n, vocab, []) for n in numbers(written)), written
    assert not any(points_to(n, vocab, []) for n in numbers("80000 or 800"))
    band = (1e-05, 5, False, True)
    others = [1e-01, 1e-03, 1e-09]
    assert any(points_to(n, band, others) for n in numbers("the largest error is 3.3e-06"))
    assert not any(points_to(n, band, others) for n in numbers("6.6e-15, k = 1"))
    share = (10.0, 0, True, True)
    assert any(points_to(n, share, [0.0, 50.0, 100.0]) for n in numbers("56 of 1024 units fire (5%)"))
    assert not any(points_to(n, share, [0.0, 50.0, 100.0]) for n in numbers("56 of 1024 units fire"))


def test_the_init_and_clones_steps_never_seed_the_global_generator(inspections, monkeypatch, english):
    """Two steps draw weights in the server's process: from a generator of their own, or unseeded, so that no
    other event's draws are reset by a learner opening them. The init step's two draws are still the ones it
    describes: Xavier within its bound, PyTorch's default within 1/sqrt(fan_in)."""
    learn_figures.clone_counts.cache_clear()
    c = learn_path.context(inspections[0])
    for name in ("manual_seed", "seed"):
        monkeypatch.setattr(torch, name, lambda *a: pytest.fail("the process's generator was seeded"))
    for how in ("xavier", "default"):
        _, fields = learn_figures.draw_init(c, how)
        d, d_ff = fields["d"], fields["d_ff"]
        bound = learn_figures.xavier_bound(d, d_ff) if how == "xavier" else 1 / math.sqrt(d)
        lo, hi = float(fields["lo"]), float(fields["hi"])  # written to 4 decimals
        assert -bound - 5e-5 <= lo < -0.9 * bound and 0.9 * bound < hi <= bound + 5e-5
    for how in learn_figures.CLONES:
        learn_figures.draw_clones(c, how)


def test_the_english_under_the_learn_box_is_the_translation_escaped(monkeypatch):
    """The Learn tab's Translate answers under its box: the model's English, as text (escaped), in both languages;
    nothing before a translation."""
    from types import SimpleNamespace
    monkeypatch.setattr(learn, "translation_notices", lambda ins: [])  # a stand-in translation has none to give
    ins = SimpleNamespace(translation='Two <b>dogs</b> & "a cat"', source="Zwei Hunde")
    for lang, word in (("en", "English:"), ("zh-CN", "英文：")):
        line = in_language(learn.english_line)(ins=ins, lang=lang)
        assert word in line and html.escape(ins.translation) in line and "<b>dogs" not in line
    assert learn.english_line(None) == ""
    with i18n.speaking("en"):
        assert learn.follow(ins)[2] == learn.english_line(ins)


@needs_shipped
def test_the_ffn_question_offers_the_share_its_answer_states(inspections, english):
    """The share that fires is offered as the answer and the fact line write it (a reader who read 5% is not
    marked wrong for missing "≈ 10%"), beside wrong shares clearly off it."""
    for ins in inspections:
        step = learn_path.STEPS[learn_path.KEYS.index("ffn")]
        c = learn_path.context(ins)
        choices, right, values = step.quiz(c)
        _, drawn = learn_figures.draw_ffn(c, 1)
        assert choices[right] == f"≈ {values['share']}" == f"≈ {drawn['share']}"
        a, _ = learn_figures.ffn_units(c, 1)
        share = float((a > 0).float().mean())
        assert abs(share - float(values["share"].rstrip("%")) / 100) <= 0.005 + 1e-9
        for i, choice in enumerate(choices):
            wrong = float(choice.strip("≈ %")) / 100
            if i != right:  # none firing, where some do, or a share far off
                assert (wrong == 0 and share >= 0.035) or abs(wrong - share) >= 0.14, choices


@needs_shipped
@pytest.mark.parametrize("key", learn.VEILS_ENGLISH)
def test_a_step_that_asks_for_a_word_veils_the_english_until_checked(inspections, key):
    """The greedy and teacher steps ask which piece the model wrote: the English under the box is veiled (the path
    says so, the page's style hides the words) until the answer is checked, and shown again on the other steps."""
    from app.style import CSS
    ins, k = inspections[0], learn_path.KEYS.index(key)
    progress = {"step": k, "done": []}
    assert 'data-veil="english"' in said(learn.render, ins, progress, lang="en")["path"]
    assert 'data-veil="english"' in said(learn.act, ins, progress, 1, lang="en")["path"]
    step = learn_path.STEPS[k]
    choices, right, _ = said(step.quiz, learn_path.context(ins), lang="en")
    wrong = choices[(right + 1) % len(choices)]
    out = said(learn.check, ins, progress, wrong, 1, None, lang="en")  # a miss: one more try, still veiled
    assert 'data-veil="english"' in out["path"] and key not in out["progress"]["done"]
    out = said(learn.check, ins, out["progress"], wrong, 1, None, lang="en")
    assert "data-veil" not in out["path"] and key in out["progress"]["done"]
    assert "data-veil" not in said(learn.render, ins, out["progress"], lang="en")["path"]
    other = {"step": learn_path.KEYS.index("generator"), "done": []}
    assert "data-veil" not in said(learn.render, ins, other, lang="en")["path"]
    assert re.search(r"\.learn-path\[data-veil=english\]\) \.learn-english b \{display:none\}", CSS)
    line = said(learn.english_line, ins, lang="zh-CN")
    assert i18n.text("zh-CN", "learn.english.veiled") in line and html.escape(ins.translation) in line


@needs_shipped
def test_check_counts_a_step_done_and_the_last_step_has_no_next(inspections):
    ins = inspections[0]
    step = learn_path.STEPS[0]
    choices, right, _ = said(step.quiz, learn_path.context(ins), lang="en")
    out = said(learn.check, ins, learn_path.new_progress(), choices[right], 1, None, lang="en")
    assert out["progress"]["done"] == out["progress"]["right"] == [step.key]
    assert i18n.text("en", "learn.progress", done=1, n=len(learn_path.STEPS), right=1) in out["path"]
    last = said(learn.go_to, ins, learn_path.new_progress(), len(learn_path.STEPS) - 1, lang="en")
    assert last["next"]["interactive"] is False
    assert said(learn.go_to, ins, learn_path.new_progress(), 0, lang="en")["next"]["interactive"] is True


@needs_shipped
def test_the_relative_step_and_the_positional_tab_state_one_error(inspections, english):
    """The relative-position step's answer and the Positional tab as it opens (k = 5) measure the same positions: one number."""
    from app.tabs import positional as tab
    values = _quiz("relative", inspections[0])[1]
    note = tab.positional_view(tab.chosen(None).config["d_model"], learn_figures.positional.POSITIONS, "0",
                               5)["note"]
    assert f"largest residual {values['res']}" in note and f"0–{values['last']}" in note


def _path_marks(path):
    """The path's circles: (number shown, classes) by step."""
    return re.findall(r'<button type="button" class="([^"]*)" data-step="\d+"[^>]*>([^<]*)</button>', path)


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_a_wrong_pick_gets_one_more_try_before_the_answer(inspections, lang):
    """A wrong first pick is said wrong and nothing more: no answer, no evidence, the step not done; the second
    check shows the answer whatever it picks, and the step is done but not right. Only a right first pick counts
    right, and the path shows the two apart, every circle keeping its number. The action alone does not finish a
    step."""
    ins = inspections[0]
    for key in ("generator", "buffer"):  # a number, and one of two choices
        k = learn_path.KEYS.index(key)
        step = learn_path.STEPS[k]
        choices, right, values = said(step.quiz, learn_path.context(ins), lang=lang)
        wrong = [c for i, c in enumerate(choices) if i != right]
        value = learn_path._value(step.control.default, ins)
        start = {"step": k, "done": []}
        before = said(learn.render, ins, start, lang=lang)
        assert said(learn.act, ins, start, value, lang=lang)["progress"]["done"] == []
        out = said(learn.check, ins, start, wrong[0], value, value, lang=lang)
        explanation = i18n.text(lang, f"learn.{key}.a", **values)
        assert out["answer"].startswith("✗") and explanation not in out["answer"], out["answer"]
        assert choices[right] not in out["answer"].replace(wrong[0], "")
        assert out["figure"] == gr.skip() and out["fact"] == gr.skip()  # the figure keeps the evidence back
        tried = out["progress"]
        assert tried["done"] == [] and not tried.get("right") and not tried.get("revealed")
        # the miss stays said through a redraw, with nothing revealed
        again = said(learn.render, ins, tried, lang=lang)
        assert again["answer"] == out["answer"] and again["fact"] == before["fact"]
        assert again["question"]["value"] is None
        second = said(learn.check, ins, tried, wrong[-1], value, value, lang=lang)
        assert second["answer"].startswith("✗") and explanation in second["answer"]
        assert second["progress"]["done"] == [key] and not second["progress"].get("right")
        marks = _path_marks(second["path"])
        assert [m[1] for m in marks] == [str(i + 1) for i in range(len(learn_path.STEPS))]
        assert "done" in marks[k][0] and "missed" in marks[k][0]
        assert i18n.text(lang, "learn.progress", done=1, n=len(learn_path.STEPS), right=0) in html.unescape(second["path"])
        # right at the second try: shown as right, counted as not
        late = said(learn.check, ins, tried, choices[right], value, value, lang=lang)
        assert late["answer"].startswith(i18n.text(lang, "learn.right.second", answer=md_literal(choices[right])))
        assert late["progress"]["done"] == [key] and not late["progress"].get("right")
        # right at the first try
        first = said(learn.check, ins, start, choices[right], value, value, lang=lang)
        assert first["progress"]["done"] == first["progress"]["right"] == [key]
        mark = _path_marks(first["path"])[k]
        assert "done" in mark[0] and "right" in mark[0] and "missed" not in mark[0] and mark[1] == str(k + 1)
        assert i18n.text(lang, "learn.progress", done=1, n=len(learn_path.STEPS), right=1) in html.unescape(first["path"])


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_relative_step_asks_about_the_case_it_draws(inspections, lang):
    """The relative-position step: one case, one number. The slider starts at the offset the question asks about, and once checked
    the fact line at that offset states the answer's own error, not another offset's."""
    ins, k = inspections[0], learn_path.KEYS.index("relative")
    step = learn_path.STEPS[k]
    choices, right, values = said(step.quiz, learn_path.context(ins), lang=lang)
    start = learn_path._value(step.control.default, ins)
    assert start == values["k"] and f"{values['k']}" in said(learn.render, ins, {"step": k}, lang=lang)["question"]["label"]
    out = said(learn.check, ins, {"step": k, "done": []}, choices[right], start, None, lang=lang)
    stated = re.findall(r"\d\.\de-\d\d", out["fact"])
    assert stated and stated[0] == values["res"], (stated, values)
    assert f"k = {values['k']}" in out["answer"] and values["res"] in out["answer"]


@needs_shipped
def test_the_chinese_path_writes_its_terms_in_chinese_before_and_after_check(inspections):
    """Every step in zh-CN, before its Check and after it (its answer line, its revealed fact line, its figure's
    titles, labels and categories): no English, and no term of Dive into Deep Learning left in English in a Chinese
    line (greedy where the page says 贪心搜索, LayerNorm for 层规范化, Linear for 线性层)."""
    from tools.i18n_report import english, learn_checked, neutral_words, sentence_pieces, value_strings
    for ins in inspections:
        pieces = sentence_pieces(ins) | neutral_words()
        with i18n.speaking("zh-CN"):
            drawn = [v for k in range(len(learn_path.STEPS))
                     for out in (learn.render(ins, {"step": k, "done": []}), learn_checked(ins, k))
                     for name, v in out.items() if name not in ("where", "fill", "slider")]
        words = [s for v in drawn for s in value_strings(v)]
        assert len(words) > 200 and [s for s in words if english(s, pieces)] == []


# ---- the patching step: where a changed word is carried in the encoder ----------------------------------------

def test_the_patching_step_sits_where_the_note_puts_it_and_opens_compare():
    """The note's 3.1 sets attention (across tokens) against the feed-forward network (each position alone): the
    patching step follows the FFN step and comes before the embeddings (3.2), and opens Compare's two sentences."""
    keys = list(learn_path.KEYS)
    assert keys.index("patching") == keys.index("ffn") + 1 == keys.index("embeddings") - 1
    assert learn_path.STEPS[keys.index("patching")].opens == "compare/sentences"


def _grid_of(ins):
    from app.edits import edited_default
    from app.shared import get_translator
    from core.analysis.patching import patch_grid
    tr = get_translator()
    edited = edited_default(ins.source, tr.tokenizer)
    assert edited != ins.source  # the test's sentences each have a word the Compare tab's edit changes
    return patch_grid(tr, ins.source, edited)


@needs_shipped
def test_the_patching_answer_is_the_first_layer_where_another_position_carries_the_word(inspections, english):
    """The patching step's answer against the grid computed here for the sentence and the Compare tab's edited copy: at the
    embedding no other position differs (putting it back returns exactly nothing), and the right choice is the first
    layer after which some other position returns at least 1% of the translation's loss: after the first encoder
    layer, for the shipped model. Its share is the answer's."""
    for ins in inspections:
        grid = _grid_of(ins)
        r = grid.recovered_total
        others = [j for j in range(r.size(1)) if j not in grid.changed]
        assert float(r[0, others].abs().max()) < 1e-6 and float(r[0, grid.changed[0]]) == pytest.approx(1, abs=1e-4)
        first = next(k for k in range(r.size(0)) if float(r[k, others].max()) >= 0.01)
        assert first == 1
        choice, values = _quiz("patching", ins)
        assert choice == i18n.text("en", "learn.patching.choice.first")
        assert values["share"] == f"{float(r[first, others].max()):.1%}" and values["layer"] == first
        assert values["word"] == learn_figures._piece(grid.src_tokens[grid.changed[0]]) != values["new"]


@needs_shipped
def test_with_attention_kept_to_each_position_no_other_position_carries_the_word(inspections, english, monkeypatch):
    """The answer is the model's, not a fact written in: an encoder whose self-attention is kept to each position
    (a diagonal mask) leaves every other position the same in both sentences after every layer, and the step then
    answers that no layer's other positions carry the word."""
    from core.analysis import patching
    states, onward = patching.encoder_states, patching.encode_from

    def diagonal(mask):
        return torch.eye(mask.size(-1), dtype=torch.bool).unsqueeze(0)

    monkeypatch.setattr(patching, "encoder_states", lambda model, src, mask: states(model, src, diagonal(mask)))
    monkeypatch.setattr(patching, "encode_from", lambda model, x, mask, layer: onward(model, x, diagonal(mask), layer))
    learn_figures._patch_run.cache_clear()
    try:
        ins = inspections[0]
        grid = learn_figures.patch_run(learn_path.context(ins))[0]
        others = [j for j in range(len(grid.src_tokens)) if j not in grid.changed]
        assert float(grid.recovered_total[:, others].abs().max()) < 1e-6
        assert _quiz("patching", ins)[0] == i18n.text("en", "learn.patching.choice.never")
    finally:
        learn_figures._patch_run.cache_clear()


@needs_shipped
def test_the_patching_figure_keeps_the_other_cells_until_check(inspections, english):
    """Before Check the grid shows the changed piece's cell at the embedding alone (it returns all of the loss),
    with no value in its hover; after Check every cell the grid defines, the hover reading its share. The slider
    moves over the English words of the translation (0: all of it)."""
    ins = inspections[0]
    c = learn_path.context(ins)
    grid = learn_figures.patch_run(c)[0]
    step = learn_path.STEPS[learn_path.KEYS.index("patching")]
    assert learn_path._value(step.control.hi, ins) == len(grid.out_tokens)
    for t in (0, 1, len(grid.out_tokens)):
        fig, _ = learn_figures.draw_patching(c, t)
        z = fig.data[0].z
        shown = {(j, k) for j, row in enumerate(z) for k, v in enumerate(row) if v is not None}
        assert shown <= {(j, 0) for j in grid.changed} and "%{z" not in fig.data[0].hovertemplate
        if t == 0:
            assert shown and all(z[j][0] == pytest.approx(1, abs=1e-3) for j, _ in shown)
    c.revealed = True
    fig, fields = learn_figures.draw_patching(c, 0)
    cells = sum(v is not None for row in fig.data[0].z for v in row)
    assert cells == int(torch.isfinite(grid.recovered_total).sum()) == grid.recovered_total.numel()
    assert "%{z" in fig.data[0].hovertemplate and [r[0] for r in fig.data[0].y].count("★") == len(grid.changed)


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_a_sentence_the_step_cannot_edit_is_drawn_on_ours_and_says_so(lang):
    """A sentence with no word app/edits.py changes: the step draws the first of its own pairs and says so in its fact
    line, before Check and after it, in the page's language."""
    from app.shared import get_translator
    ins = get_translator().inspect("Das Wetter ist heute schön.", method="greedy")
    k = learn_path.KEYS.index("patching")
    out = said(learn.render, ins, {"step": k, "done": []}, lang=lang)
    original, edited = learn_figures.OUR_EDITS[0]
    note = i18n.text(lang, "learn.patching.ours", sentence=md_literal(original), edited=md_literal(edited))
    assert out["fact"].startswith(note)
    choices, right, _ = said(learn_path.STEPS[k].quiz, learn_path.context(ins), lang=lang)
    checked = said(learn.check, ins, {"step": k, "done": []}, choices[right], 0, None, lang=lang)
    assert checked["answer"].startswith("✓") and checked["fact"].startswith(note)


def test_what_counts_the_steps_says_how_many_there_are():
    """The README, docs/tabs.md and the tab's own introduction (both languages) name the number of steps."""
    from pathlib import Path
    words = {16: ("sixteen", "十六"), 17: ("seventeen", "十七"), 18: ("eighteen", "十八")}
    en, zh = words[len(learn_path.STEPS)]
    root = Path(__file__).resolve().parents[1]
    assert f"{en} steps" in (root / "README.md").read_text(encoding="utf-8")
    assert f"{en} steps" in (root / "docs" / "tabs.md").read_text(encoding="utf-8")
    assert i18n.text("en", "ui.learn.intro").startswith(f"**Learn the Transformer on a live model.** {en.title()} steps")
    assert f"{zh}个步骤" in i18n.text("zh-CN", "ui.learn.intro")


@needs_shipped
def test_the_patching_steps_button_fills_compares_boxes_with_its_sentences(inspections):
    """The step's button opens Compare › Two sentences with the sentence and the edited copy the step drew (and
    presses Patch): the page's hidden `fill` names the boxes and the button; no other step fills anything."""
    from app.edits import edited_default
    from app.shared import get_translator
    ins = inspections[0]
    for k, step in enumerate(learn_path.STEPS):
        fill = said(learn.render, ins, {"step": k, "done": []}, lang="en")["fill"]
        if step.key != "patching":
            assert fill == ""
            continue
        assert json.loads(fill) == {"boxes": {"cmp-original": ins.source,
                                              "cmp-edited": edited_default(ins.source, get_translator().tokenizer)},
                                    "run": "cmp-patch"}
    assert said(learn.render, None, {"step": learn_path.KEYS.index("patching")}, lang="en")["fill"] == ""


def test_any_word_edit_keeps_the_pieces_where_the_compare_edit_finds_none():
    """app/edits.py's last resort for a tokenizer that cuts SWAPS' pairs into other pieces: one word changed for a
    word of SWAPS, the pieces as many; a sentence it cannot change comes back as it is."""
    from app.edits import SWAPS, edited_any, edited_default

    class Letters:  # a tokenizer that cuts a text into its letters: only words of as many letters swap
        def encode(self, text):
            return [ch for ch in text if not ch.isspace()]

    words = {w for pair in SWAPS for w in pair}
    sentence = "Das Wetter ist heute schön."
    assert edited_default(sentence, Letters()) == sentence
    edited = edited_any(sentence, Letters())
    changed = [(a, b) for a, b in zip(sentence.split(), edited.split()) if a != b]
    assert len(changed) == 1 and changed[0][1].strip(".") in words
    assert len(Letters().encode(edited)) == len(Letters().encode(sentence))
    assert edited_any("Xy.", Letters()) == "Xy."


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_a_model_that_can_patch_none_of_the_edits_leaves_the_step_to_the_shipped_one(inspections, monkeypatch, lang):
    """Where the open model can patch none of the step's sentences (its tokenizer cuts every edit into other pieces),
    the step is drawn on the shipped model, and its fact line says so, before Check and after."""
    ins, k = inspections[0], learn_path.KEYS.index("patching")
    real, page = learn_figures.patch_grid, learn_path.context(ins).translator

    def refused(tr, *args, **kwargs):
        if tr is page:
            raise ValueError("the edited sentence is cut into other pieces")
        return real(tr, *args, **kwargs)

    monkeypatch.setattr(learn_figures, "patch_grid", refused)
    learn_figures._patch_run.cache_clear()
    try:
        grid, how = learn_figures.patch_run(learn_path.context(ins))
        assert how == "shipped" and grid.original == ins.source
        note = i18n.text(lang, "learn.patching.shipped", sentence=md_literal(grid.original),
                         edited=md_literal(grid.edited))
        assert said(learn.render, ins, {"step": k, "done": []}, lang=lang)["fact"].startswith(note)
        choices, right, _ = said(learn_path.STEPS[k].quiz, learn_path.context(ins), lang=lang)
        checked = said(learn.check, ins, {"step": k, "done": []}, choices[right], 0, None, lang=lang)
        assert checked["answer"].startswith("✓") and checked["fact"].startswith(note)
    finally:
        learn_figures._patch_run.cache_clear()
