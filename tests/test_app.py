"""The Translate, Attention, Overview and Engineering tabs' figure builders and callbacks, and the page's
events, called without a browser, on the shipped model."""
import html
import json
import math
import re
from html.parser import HTMLParser

import gradio as gr
import numpy as np
import pytest
import torch

from app.bertviz_views import D3_JS, JQUERY_JS, decode, frame_page, host_js, standalone_html, view_data
from app.common import md_literal
from app.figures import attention as attention_figures
from app.figures import decoding
from app.i18n import speaking, text
from app.shared import examples, get_translator
from app.tabs import attention, engineering, overview, translate
from app.translating import input_problem
from app.ui import QUEUE_SIZE, build_demo
from core.bench import ROWS
from core.instrument import KINDS
from core.translate import Inspection
from tests.conftest import ASSETS, needs_shipped, ships_history
from tests.events import open_in, selected
from tools import loadtest
from tools.i18n_report import english, sentence_pieces, value_strings

pytestmark = needs_shipped

SENTENCE = "Zwei Hunde spielen im Schnee."


@pytest.fixture(scope="module")
def ins():
    out, status, ins = translate.translate(SENTENCE, "greedy", 4, 0.6, 1.0, 10, 100, None)
    assert out and ins is not None
    return ins


def fake_inspection(tokens_src, tokens_tgt, L=2, H=2):
    S, T = len(tokens_src), len(tokens_tgt)
    rnd = lambda *s: torch.rand(*s).softmax(-1)
    return Inspection(translation="y", src_tokens=tokens_src, tgt_tokens=tokens_tgt,
                      out_tokens=tokens_tgt[1:] + ["</s>"], encoder=rnd(L, H, S, S), decoder=rnd(L, H, T, T),
                      cross=rnd(L, H, T, S), token_probs=[0.5] * T, topk=[[("a", 0.5), ("b", 0.2)]] * T)


def test_translate_returns_text_status_and_consistent_maps(ins):
    cfg = get_translator().config
    S, T = len(ins.src_tokens), len(ins.tgt_tokens)
    assert ins.src_tokens[0] == "<s>" and ins.src_tokens[-1] == "</s>" and ins.tgt_tokens[0] == "<s>"
    assert ins.encoder.shape == (cfg["N"], cfg["h"], S, S)
    assert ins.decoder.shape == (cfg["N"], cfg["h"], T, T)
    assert ins.cross.shape == (cfg["N"], cfg["h"], T, S)
    for maps in (ins.encoder, ins.decoder, ins.cross):
        torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]), atol=1e-4, rtol=1e-4)
    # decoder self-attention never looks ahead
    assert torch.all(torch.triu(ins.decoder, diagonal=1) == 0)
    # the chosen tokens are the greedy ones: each is the top candidate of its step
    assert all(step[0][0] == tok for step, tok in zip(ins.topk, ins.out_tokens))


def test_translation_matches_the_plain_translator(ins):
    assert ins.translation == get_translator().translate(SENTENCE)


def test_a_cut_sentence_is_told_one_count_of_its_pieces():
    """A sentence of about 1,000 characters, cut to the model's length: its status line, the notice that it was
    cut and the one that it is longer than the training sentences name one count of its pieces (as the model reads
    them), on the page in both languages as in the API's English."""
    from app.common import MAX_CHARS
    sentence = ("Ein Mann mit einem roten Hut fährt mit dem Fahrrad eine steile Straße hinunter, "
                * 20)[:MAX_CHARS].strip()
    assert len(sentence) >= 990
    _, status, new = translate.translate(sentence)
    assert new.truncated and "cut to the" in status
    counts = {"en": re.findall(r"(\d+) (?:source )?pieces", status)}
    for lang in ("en", "zh-CN"):
        with speaking(lang):
            page = translate.status_view(new)
        counts[lang + " page"] = re.findall(r"(\d+) (?:个源词元|个词元|(?:source )?pieces)", page)
    assert all(len(c) >= 3 for c in counts.values()), counts  # the line, the cut, the length
    assert {n for c in counts.values() for n in c} == {str(len(new.src_tokens))}, counts


def test_bad_input_gives_messages_not_errors(ins):
    out, status, state = translate.translate("   ", previous=ins)
    assert out == "" and "Type a German sentence" in status and state is ins
    out, status, state = translate.translate("Hund " * 400, previous=ins)
    assert out == "" and "characters" in status and state is ins
    out, status, new = translate.translate("Ein Hund " * 100)  # under the character limit, over the token limit
    assert "cut to the" in status and new.truncated
    # settings the browser should never send fall back to allowed values (core.decode.DECODING_LIMITS): the
    # default method (greedy), the shortest output the slider allows, which the model would follow with more
    # (the status says the output was cut)
    from core.decode import DECODING_LIMITS, DEFAULT_METHOD
    lo = DECODING_LIMITS["max_len"].lo
    out, status, new = translate.translate(SENTENCE, method="nonsense", beam="x", max_len=-5)
    assert new.decoding["method"] == DEFAULT_METHOD == "greedy" and new.decoding["max_len"] == lo
    assert out == get_translator().translate(SENTENCE, method="greedy", max_len=lo)
    assert len(new.out_tokens) == lo + 1 and len(out.split()) == lo and "maximum length" in status  # + </s> shown
    # within the limits: no notice
    assert "maximum length" not in translate.translate(SENTENCE, method="beam", beam="99", max_len="300")[1]
    assert translate.translate(SENTENCE, method="beam", beam="99")[2].decoding["beam"] == 8


def test_heatmap_shows_the_model_attention(ins, english):
    heat, grid, overview = (attention.one_head(ins, "cross", 1, 3), attention.all_heads(ins, "cross", 1),
                            attention.layers_by_heads(ins, "cross"))
    half = 0.5 * 10 ** -attention_figures.DECIMALS + 1e-6  # rounded to 3 decimals, in float32
    torch.testing.assert_close(torch.tensor(heat.data[0].z), ins.cross[1, 3], atol=half, rtol=0)
    assert list(heat.layout.yaxis.ticktext) == [html.escape(t, quote=False) for t in ins.tgt_tokens]
    assert list(heat.layout.xaxis.ticktext) == [html.escape(t, quote=False) for t in ins.src_tokens]
    # one axis category per position, named by position and token: a hover names both
    assert list(heat.data[0].x) == list(heat.layout.xaxis.tickvals) == attention_figures.positions(ins.src_tokens)
    assert heat.data[0].y[1] == f"1 {html.escape(ins.tgt_tokens[1], quote=False)}"
    H = ins.cross.size(1)
    assert len(grid.data) == H
    for h in range(H):
        torch.testing.assert_close(torch.tensor(grid.data[h].z), ins.cross[1, h], atol=half, rtol=0)
        assert grid.data[h].xaxis == ("x" if h == 0 else f"x{h + 1}") and grid.data[h].name == f"head {h}"
    assert len(overview.data) == ins.cross.size(0) * H
    torch.testing.assert_close(torch.tensor(overview.data[-1].z), ins.cross[-1, -1], atol=half, rtol=0)
    assert overview.data[-1].name == f"layer {ins.cross.size(0) - 1}, head {H - 1}"


def test_rounded_weights_still_sum_to_one(ins, english):
    """Each row of a rounded map sums to 1 within the rounding of its entries, and the figures send them as
    float32 typed arrays."""
    for kind in KINDS:
        maps = getattr(ins, kind)
        r = torch.from_numpy(attention_figures.rounded(maps)).double()
        assert (r - maps.double()).abs().max() <= 0.5e-3 + 1e-6
        torch.testing.assert_close(r.sum(-1), torch.ones(r.shape[:-1], dtype=torch.double),
                                   atol=maps.size(-1) * 0.5e-3 + 1e-6, rtol=0)
    sent = json.loads(attention.one_head(ins, "encoder", 0, 0).to_json())["data"][0]["z"]
    assert sent["dtype"] == "f4" and "bdata" in sent


def test_attention_maps_equal_an_independent_forward_pass(ins):
    """The maps shown come from the model: recompute encoder layer 0 head 0 by hand from its weights."""
    tr = get_translator()
    model = tr.model
    ids = torch.tensor([[tr.tokenizer.piece_to_id(p) for p in ins.src_tokens]])
    with torch.no_grad():
        x = model.src_embed(ids)
        layer = model.encoder.layers[0]
        xn = layer.sublayer[0].norm(x)
        mha = layer.self_attn
        q = mha._split(xn, mha.linears[0])[0, 0].double()
        k = mha._split(xn, mha.linears[1])[0, 0].double()
        w = torch.softmax(q @ k.T / math.sqrt(mha.d_k), -1)
    torch.testing.assert_close(ins.encoder[0, 0].double(), w, atol=1e-5, rtol=1e-4)


def candidates(cands):
    """The rows of the candidates view: (escaped token, probability, chosen), read back from its HTML."""
    rows = re.findall(r'<div class="(cand(?: chosen)?)" title="p = ([\d.]+)"><span class="cand-tok">(.*?)</span>', cands)
    return [(tok, float(p), cls == "cand chosen") for cls, p, tok in rows]


def test_decoding_step_replay(ins, english):
    t = min(3, len(ins.out_tokens))
    step = translate.decoding_step(ins, t)
    info, mask_view, cands = step["step_info"], step["step_mask"], step["step_cands"]
    assert allowed_cells(mask_view) == {(i, j) for i in range(t) for j in range(i + 1)}  # the subsequent mask
    assert html.escape(ins.out_tokens[t - 1]) in info
    rows = candidates(cands)
    assert [tok for tok, _, _ in rows] == [html.escape(tok) for tok, _ in ins.topk[t - 1]]
    probs = [p for _, p, _ in rows]
    assert sum(probs) <= 1 + 1e-3 and probs[0] == pytest.approx(ins.topk[t - 1][0][1], abs=5e-5)
    assert [tok for tok, _, chosen in rows if chosen] == [html.escape(ins.out_tokens[t - 1])]  # marked in red
    slider = translate.step_slider(ins)
    assert slider.maximum == max(len(ins.out_tokens), 2)


def test_step_buttons_move_one_step_within_the_sentence(ins, english):
    n = len(ins.out_tokens)
    moved = translate.next_step(ins, 1)
    assert set(moved) == set(translate.REPLAY)
    assert moved["step"] == 2 and "Step 2: next-token" in moved["step_cands"]
    assert html.escape(ins.out_tokens[1]) in moved["step_info"]
    assert translate.previous_step(ins, 2)["step"] == 1
    assert translate.previous_step(ins, 1)["step"] == 1  # kept within 1..n
    moved = translate.next_step(ins, n)
    assert moved["step"] == n and f"Step {n}: next-token" in moved["step_cands"]
    assert translate.next_step(ins, "not a number")["step"] == 2  # an unreadable value counts as step 1
    moved = translate.next_step(None, 1)
    assert moved["step"] == 1 and moved["step_info"] == ""  # nothing translated yet: the views say so
    assert "Translate a sentence" in moved["step_cands"]


def test_token_html_is_escaped(english):
    evil = fake_inspection(["<s>", "<img src=x onerror=alert(1)>", "</s>"], ["<s>", "</script><b>x"])
    evil.topk[0] = [("<img src=x onerror=alert(1)>", 0.6), ("</script><b>x", 0.3)]
    page = decoding.token_probs_html(evil) + decoding.decoder_input_html(evil, 0) + decoding.step_candidates(evil, 0)
    assert "</script><b>" not in page and "&lt;/script&gt;&lt;b&gt;x" in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_attention_axes_keep_repeated_tokens_apart(english):
    """One category per position: two rows of the same token stay two rows, labelled with the token."""
    fig = attention_figures.attention_heatmap(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), ["a", "a"], ["<s>", "a"])
    assert list(fig.data[0].y) == ["0 a", "1 a"] and list(fig.layout.yaxis.ticktext) == ["a", "a"]
    assert list(fig.layout.xaxis.ticktext) == ["&lt;s&gt;", "a"]  # escaped: plotly reads HTML in labels
    assert fig.layout.yaxis.autorange == "reversed"  # the first token on top, as in the paper's figures
    assert np.array_equal(fig.data[0].z, [[1.0, 0.0], [0.0, 1.0]])


def allowed_cells(svg):
    """The cells an SVG mask draws as allowed, read back from its rectangles: {(row, col)}."""
    size = int(re.search(r'class="allowed" x="\d+" y="\d+" width="\d+" height="(\d+)"', svg).group(1))
    cells = set()
    for x, y, w in re.findall(r'class="allowed" x="(\d+)" y="(\d+)" width="(\d+)"', svg):
        row, col = (int(y) - 90) // size, (int(x) - 100) // size
        cells |= {(row, col + k) for k in range(int(w) // size)}
    return cells


def test_mask_svg_draws_the_mask_and_escapes_tokens(english):
    mask = torch.tensor([[1, 0, 1], [0, 0, 0], [1, 1, 1]], dtype=torch.bool)
    svg = decoding.mask_svg(mask, ["<s>", "<b>x</b>", "c"], ["p", "q", "r"], title="<i>t</i>", highlight_row=2)
    assert allowed_cells(svg) == {(0, 0), (0, 2), (2, 0), (2, 1), (2, 2)}
    assert "<b>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg and "<i>" not in svg
    assert 'stroke="#e4572e"' in svg


class ScriptCollector(HTMLParser):
    """The text of every <script> element, as a browser's parser splits the page."""

    def __init__(self):
        super().__init__()
        self.scripts, self._in = [], False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.scripts[-1] += data

    @classmethod
    def scripts_of(cls, page):
        p = cls()
        p.feed(page)
        return p.scripts


def test_bertviz_views_are_offline_and_cannot_be_broken_out_of(english):
    """A view's frame is sandboxed, its page the same for every translation and fetches nothing from outside; a
    translation's tokens reach it only as JSON strings."""
    assert D3_JS.exists() and JQUERY_JS.exists()
    evil = fake_inspection(["<s>", "</script><script>alert(1)</script>", "<!--", "</s>"],
                           ["<s>", "</ScRiPt>", "a"])
    for view in ("head", "model"):
        host = host_js(view)
        assert "'allow-scripts allow-downloads'" in host and "allow-same-origin" not in host
        assert "</" not in host and "<!--" not in host  # no script or comment of the page ends early
        page = frame_page(view)
        assert 'src="http' not in page and "require.config" not in page  # bertviz's CDN paths gone
        scripts = ScriptCollector.scripts_of(page)
        # the Save SVG button's, the frame's own (reading messages) and bertviz's drawing code
        assert len(scripts) == 3 and "XMLSerializer" in scripts[0] and "postMessage" in scripts[1]
        assert "params = window.bertvizParams;" in scripts[2]
        assert f"/gradio_api/file={D3_JS}" in page and f"/gradio_api/file={JQUERY_JS}" in page
        data = json.loads(view_data(evil))
        assert data["src"] == evil.src_tokens and data["tgt"] == evil.tgt_tokens
    for view in ("head", "model"):  # the file to download: the same view, with both libraries inside it
        page = standalone_html(evil, view)
        scripts = ScriptCollector.scripts_of(page)
        assert len(scripts) == 5 and "/gradio_api/" not in page and "src=" not in page.split("<body>")[0]
        assert scripts[1] == JQUERY_JS.read_text(encoding="utf-8")
        assert scripts[2] == D3_JS.read_text(encoding="utf-8")
        assert "<\\/script><script>alert(1)<\\/script>" in scripts[4]


def test_bertviz_menus_are_in_the_pages_language():
    """On a Chinese page, bertviz's menus (Layer, Attention: Encoder / Decoder / Cross) and the model view's axis
    titles are this app's words; every English form the page replaces is still in bertviz's output (a bertviz that
    changed them fails here), and an English page is left as bertviz writes it. The frames get the words with each
    translation, one for each place their page marks."""
    from app.bertviz_views import _MENU_WORDS, _SCRIPT_WORDS, WORDS, _head_view, _model_view, in_words
    from app.i18n import text
    ins = fake_inspection(["<s>", "ein", "</s>"], ["<s>", "a"])
    for view, words in ((_head_view, _MENU_WORDS), (_model_view, _MENU_WORDS[1:])):
        page = view(ins)
        with speaking("en"):
            assert in_words(page) == page
        with speaking("zh-CN"):
            zh = in_words(page)
        for form, key, *_ in words:
            assert form in page and form not in zh, form
            assert html.escape(text("zh-CN", f"attention.{key}")) in zh
    with speaking("zh-CN"):
        model_zh = in_words(_model_view(ins))
        data = json.loads(view_data(ins))
    for form, key in _SCRIPT_WORDS:
        assert form not in model_zh and json.dumps(text("zh-CN", f"attention.{key}")) in model_zh
    assert data["words"]["encoder"] == "编码器" and data["words"]["model"] == "bertviz 模型视图"
    for view, menus in (("head", 5), ("model", 4)):
        marked = re.findall(r'data-word="(\w+)"', frame_page(view))
        # the menus' words, the Save SVG button and the line that says the drawing scrolls sideways
        assert len(marked) == menus + 2 and set(marked) <= set(WORDS) and {"save", "swipe"} <= set(marked)
    assert ".text(window.bertvizWords.heads)" in frame_page("model")


def test_bertviz_payload_is_rounded_and_small(english):
    """What a translation sends a bertviz view of the app's first example: every weight once, to 3 decimals, in
    a few characters each (under 20 KB; bertviz's page with the weights in JSON was 80 KB, first 466 KB)."""
    from app.bertviz_views import _head_view
    _, _, ins = translate.translate(examples()[0], "greedy")
    assert len(ins.src_tokens) >= 12
    bertviz = json.JSONDecoder().raw_decode(_head_view(ins).split("const params = ", 1)[1])[0]
    for view in ("head", "model"):
        data = view_data(ins)
        assert len(data.encode()) < 20_000, len(data.encode())
        data = json.loads(data)
        assert (data["layers"], data["heads"]) == tuple(ins.encoder.shape[:2])
        for code, maps, entry in zip(data["attn"], (ins.encoder, ins.decoder, ins.cross), bertviz["attention"]):
            assert decode(code) == maps.double().round(decimals=3).flatten().tolist()
        assert bertviz["attention"][2]["left_text"] == data["tgt"] and bertviz["attention"][2]["right_text"] == data["src"]


def test_overview_diagram_has_live_shapes(ins, english):
    svg = overview.overview_svg(ins)
    S, T = len(ins.src_tokens), len(ins.tgt_tokens)
    D, H = get_translator().config["d_model"], get_translator().config["h"]
    assert f"1 × {S} × {D}" in svg and f"{H} heads × {T} × {S}" in svg and f"{H} heads × {S} × {S}" in svg
    for tab in ("attention", "masks", "positional", "training"):  # tab ids, which explorerLink.open takes
        assert f'data-tab="{tab}"' in svg


# ---- the views in the page's language ------------------------------------------------------------------------

def drawn_in(views, ins, lang, **controls):
    """The words every view of a tab draws for `ins`, the page in `lang` (tools.i18n_report's measure)."""
    values = []
    with speaking(lang):
        for v in views:
            out = v.draw(ins, **{name: controls.get(name) for name in v.uses})
            values += list(out.values()) if len(v.outputs) > 1 else [out]
    return [s for value in values for s in value_strings(value)]


def english_in(words, ins):
    return [s for s in words if english(s, sentence_pieces(ins))]


def test_the_translate_tab_draws_in_the_pages_language(ins):
    words = drawn_in(translate.VIEWS, ins, "zh-CN")
    with speaking("zh-CN"):
        drawn = [translate.decoding_step(ins, 3), translate.next_step(ins, 2), translate.decoding_step(None, 1)]
        assert "下一个词元" in decoding.decoder_input_html(ins, 0)
        assert "第 2 步" in decoding.step_candidates(ins, 1)
    words += [s for step in drawn for name in translate.STEP_VIEWS for s in value_strings(step[name])]
    assert len(words) > 10 and english_in(words, ins) == []
    with speaking("en"):
        assert "decoder input" in translate.decoding_step(ins, 1)["step_info"]
        assert "Translate a sentence" in translate.decoding_step(None, 1)["step_cands"]
    with pytest.raises(LookupError):  # outside an event nothing is drawn: no language is assumed
        translate.decoding_step(ins, 1)


def test_the_status_line_is_english_for_the_api_and_in_the_pages_language_on_the_page():
    from core.decode import DECODING_LIMITS
    _, status, new = translate.translate("Ein Hund " * 100, "beam", 3, 0.7, max_len=DECODING_LIMITS["max_len"].lo)
    assert "cut to the" in status and "maximum length" in status and "beam search (k = 3, α = 0.7)" in status
    with speaking("en"):  # the view draws the API's line in English, time included
        assert translate.status_view(new) == status
        # a problem with the input: English from translate(), then in the page's language after the press
        assert translate.translate("  ")[1] == input_problem("") == translate.input_notice("")
    with speaking("zh-CN"):
        zh = translate.status_view(new)
        notices = [translate.input_notice(typed) for typed in ("", "Hund " * 400)]
        assert translate.input_notice("Ein Hund.") == gr.skip()  # translated: the status view writes its line
    # cut, at the maximum length, and longer than any training sentence
    assert zh.count("**注意：**") == 3 and "束搜索" in zh and english_in([zh], new) == []
    assert english_in(notices, new) == [] and "1,999" in notices[1]


def test_a_sentence_longer_than_the_training_sentences_is_flagged():
    """Past the 99th percentile of the training sources' lengths the status line says so, past the longest it says
    the model never read one so long, each with the figures; a model without them (a converted one) flags
    nothing."""
    from app.translating import length_hint, status_line
    lengths = {"sentences": 10, "median": 10, "p99": 20, "max": 30}
    for lang in ("en", "zh-CN"):
        with speaking(lang):
            assert length_hint(20, lengths) is None and length_hint(50, None) is None
            assert length_hint(21, lengths) == text(lang, "translate.hint.long", n=21, median=10, p99=20, longest=30)
            assert length_hint(31, lengths) == text(lang, "translate.hint.longest", n=31, median=10, p99=20, longest=30)
            assert "20" in length_hint(21, lengths) and "30" in length_hint(31, lengths)
            line = status_line({"method": "greedy", "max_len": 99}, 31, 5, lengths=lengths)
            assert line.count(text(lang, "translate.status.notice")) == 1 and length_hint(31, lengths) in line
            assert text(lang, "translate.status.notice") not in status_line({"method": "greedy"}, 20, 5, lengths=lengths)


@needs_shipped
def test_the_shipped_model_has_its_training_lengths():
    from app.shared import training_lengths
    shipped = training_lengths()
    assert shipped["median"] < shipped["p99"] < shipped["max"] <= get_translator().max_src_tokens
    # docs/tabs.md states them, as the shipped file has them
    doc = " ".join((ASSETS.parent / "docs" / "tabs.md").read_text(encoding="utf-8").split())
    assert f"more than {shipped['p99']} pieces" in doc and f"than all of them ({shipped['max']})" in doc


def test_a_model_without_length_figures_flags_no_long_sentence(tmp_path, monkeypatch):
    from app import shared
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(tmp_path))
    shared.training_lengths.cache_clear()
    try:
        assert shared.training_lengths() is None
        (tmp_path / "batching.json").write_text("{not json")
        shared.training_lengths.cache_clear()
        assert shared.training_lengths() is None
    finally:
        monkeypatch.delenv("EXPLORER_MODEL_DIR")
        shared.training_lengths.cache_clear()


def test_a_sentence_refused_says_the_views_below_are_still_the_last_ones():
    """After an empty or too long input the views keep the last good translation: the notice says so, naming that
    sentence (escaped: it is the reader's text)."""
    from types import SimpleNamespace
    last = SimpleNamespace(source="Ein <b>Hund</b> *läuft*.")
    for lang in ("en", "zh-CN"):
        with speaking(lang):
            notice = translate.input_notice("", last)
            assert notice.startswith(input_problem("")) and "<b>" not in notice
            assert text(lang, "translate.status.still", source=md_literal(last.source)) in notice
            assert translate.input_notice("   ") == input_problem("")  # nothing translated before
            assert translate.input_notice("Ein Hund.", last) == gr.skip()


def test_the_attention_tab_draws_in_the_pages_language(ins):
    for kind in KINDS:
        words = drawn_in(attention.VIEWS, ins, "zh-CN", kind=kind, layer=1, head=2)
        assert len(words) > 20 and english_in(words, ins) == [], kind
    with speaking("zh-CN"):
        heat = attention.one_head(ins, "cross", 1, 2)
        words = json.loads(view_data(ins))["words"]
    assert heat.layout.title.text.startswith("交叉注意力") and "查询 %{y} → 键 %{x}" in heat.data[0].hovertemplate
    # the words around bertviz's views are this app's: the frame's title and the Save SVG button
    assert words["model"] == "bertviz 模型视图" and words["save"] == "保存 SVG"
    with speaking("en"):
        assert attention.one_head(ins, "cross", 1, 2).data[0].hovertemplate == (
            "query %{y} → key %{x}<br>weight %{z:.3f}<extra>%{fullData.name}</extra>")
        words = json.loads(view_data(ins))["words"]
    assert words["head"] == "bertviz head view" and words["save"] == "Save SVG"


def test_the_overview_diagram_draws_in_the_pages_language(ins):
    with speaking("zh-CN"):
        svg = overview.overview_svg(ins)
    words = value_strings(svg)
    assert len(words) > 25 and english_in(words, ins) == []
    assert 'aria-label="Transformer 架构"' in svg and "到「注意力」页探索 →" in svg
    S, T = len(ins.src_tokens), len(ins.tgt_tokens)
    assert f"记忆 1 × {S} ×" in svg and f"&lt;s&gt; y1 …（右移一位），1 × {T}" in svg
    wide, column = svg.split('<div class="diagram-column">')  # the desktop's drawing, then the phone's
    blocks = [re.findall(r'data-tab="(\w+)"', d) for d in (wide, column)]
    assert sorted(blocks[0]) == sorted(blocks[1]) and len(blocks[0]) == 7  # the same blocks in both
    with speaking("en"):
        assert overview.overview_svg(ins).count("data-tab=") == 14


def test_translate_api_is_named_translate():
    demo = build_demo()
    names = [d.api_name for d in demo.fns.values() if getattr(d, "api_name", None)]
    assert "translate" in names
    # the only public endpoint: one event that the button, Enter in the German box and a new choice of the header's
    # model menu run (the page load translates the linked sentence through app/links.py, privately)
    public = [d for d in demo.fns.values() if d.api_visibility == "public"]
    assert [d.api_name for d in public] == ["translate"]
    assert sorted(event for _, event in public[0].targets) == ["change", "click", "submit"]
    assert len(public[0].inputs) == 9  # the text, six decoding settings, the state, the model
    assert public[0].inputs[-1].elem_id == "model-menu"
    # after it, each tab that shows the translation draws it, through its own listener on the state's change (it
    # draws those on screen and clears the others: tests/test_views.py)
    state = public[0].inputs[-2]
    renders = [d for d in demo.fns.values() if (state._id, "change") in d.targets]
    drawn = {getattr(c, "elem_id", None) for d in renders for c in d.outputs}
    assert {"token-probs", "step", "diagram", "heatmap", "head-grid", "overview-grid", "bertviz-head",
            "bertviz-model"} <= drawn
    page = {"open": {"": "translate"}, "drawn": {}}
    translate_tab = next(t for t in demo.tab_views if t.where == ("translate",))
    assert translate_tab.show(page, "en", None, tabs=selected(page)) == gr.skip()  # no translation yet: nothing to draw
    # a shared Space: one bounded queue; the events that run the model (translations, the Masks tab's batch, the
    # Heads tab's translation with heads off) one at a time, together
    assert demo._queue.max_size == QUEUE_SIZE
    assert (public[0].concurrency_id, public[0].concurrency_limit) == ("model", 1)
    # and the listeners of the tabs whose drawing may run the model: the first drawing of a sentence in Why, What if
    # and Inside (Inside records a pass), the Masks tab's batch, a Time-lapse point's translation
    in_line = {d.name for d in demo.fns.values() if d.concurrency_id == "model"}
    assert in_line == {"translate", "open_link", "swap_word", "force_prefix", "score_mine", "tree_file", "switch_off",
                       "run_compare", "run_patch", "pick_hypothesis", "open_pair", "show"}
    assert sorted("/".join(t.where) for t in demo.tab_views if listener_of(demo, t).concurrency_id == "model") == \
        sorted(["why", "whatif", "inside", "masks", *(["timelapse"] if ships_history() else [])])


def listener_of(demo, tab):
    return next(d for d in demo.fns.values() if d.fn == tab.show)


def test_switching_views_never_runs_the_model(ins, monkeypatch):
    """Layer, head, kind, step and bertviz views are drawn from the kept Inspection alone."""
    tr = get_translator()
    demo = build_demo()
    attn = next(t for t in demo.tab_views if getattr(t, "where", None) == ("attention",))

    def forbidden(*a, **k):
        raise AssertionError("the model ran")

    for model in {id(m): m for m in (tr.model, tr.decoding_model(1))}.values():
        monkeypatch.setattr(model, "forward", forbidden)
        monkeypatch.setattr(model, "encode", forbidden)
        monkeypatch.setattr(model, "decode", forbidden)
    with speaking("en"):
        for kind in ("encoder", "decoder", "cross"):
            attention.one_head(ins, kind, 2, 5), attention.all_heads(ins, kind, 2), attention.layers_by_heads(ins, kind)
        translate.decoding_step(ins, 2)
        translate.next_step(ins, 2)
        translate.previous_step(ins, 2)
        view_data(ins)
    page = {"open": {"": "attention", "attention": "one-head"}, "drawn": {}}
    attn.show(page, "en", ins, tabs=selected(page), kind="cross", layer=0, head=1)
    for sub in ("all-heads", "layers-heads", "bertviz-head", "bertviz-model"):
        open_in(page, ("attention", sub))
        out = attn.show(page, "en", ins, tabs=selected(page), kind="decoder", layer=1, head=2)
        assert out != gr.skip() and all(v is not None for v in out.values())


def test_the_engineering_tables_are_in_the_pages_language():
    """Every row the benchmark declares has its words in both tables, and the tab's Chinese tables name no row or
    decoding in English; outside an event nothing is written."""
    from app.i18n import LANGS, speaking, table
    from tools.i18n_report import english
    for row in ROWS:
        assert all(f"bench.{kind}.{row.ours}" in table(lang) for kind in ("row", "ref") for lang in LANGS)
        assert table("zh-CN")[f"bench.row.{row.ours}"] != table("en")[f"bench.row.{row.ours}"]
    full = {"greedy_cached_half_ms": 15.04, "greedy_uncached_ms": 48.0, "cache_speedup": 3.19}
    with speaking("zh-CN"):
        (row,) = engineering.speed_table(full).splitlines()[2:]
        zh = engineering.engineering_md()
    assert row == "| 贪心搜索，一个句子，带缓存（float16 解码器）对比不带缓存（ms） | 15.0 | 48.0 | 不带缓存的循环 | 3.19× |"
    start = zh.index("|---|---|---|---|")
    rows = zh[start:zh.index("###", start)].strip().splitlines()[1:]  # split, decoding, BLEU, chrF
    decodings = [row.split("|")[2].strip() for row in rows]
    assert len(rows) == 4 and "束搜索（束宽 4）" in decodings and not any(english(d) for d in decodings)
    # the page is built with every section written in each language, each in its own (the browser picks one)
    written = engineering.written_sections()
    assert all(set(by_lang) == set(LANGS) for _, by_lang in written)
    assert "\n\n".join(by_lang["zh-CN"] for _, by_lang in written) == zh
    with speaking("en"):
        assert "\n\n".join(by_lang["en"] for _, by_lang in written) == engineering.engineering_md()
    with pytest.raises(LookupError):  # no language was chosen outside an event, so none is assumed
        engineering.speed_table(full)


@pytest.mark.usefixtures("english")  # the page in English: the tab's words are drawn in the event's language
def test_speed_table_shows_the_benchmark_and_leaves_out_what_a_file_lacks():
    from app.i18n import speaking, text
    full = {"greedy_cached_half_ms": 15.04, "greedy_uncached_ms": 48.0, "cache_speedup": 3.19,
            "train_tokens_per_s_ours_bf16": 2175.4, "train_tokens_per_s_torch_bf16": 2106.3,
            "train_speed_ratio_bf16": 1.0328}
    rows = engineering.speed_table(full).splitlines()[2:]
    assert rows == ["| greedy, one sentence, cached (float16 decoder) vs uncached (ms) | 15.0 | 48.0 | uncached loop "
                    "| 3.19× |",
                    "| training bf16 autocast, target tokens/s | 2175 | 2106 | nn.Transformer | 1.03× |"]
    # an older or damaged file: rows with a missing or non-numeric figure are left out, nothing raises
    assert len(engineering.speed_table(dict(full, train_speed_ratio_bf16="n/a")).splitlines()) == 3
    assert engineering.speed_table({"threads": 2}) == ""
    # where an older benchmark left the bf16 rows out, the table says its reason (escaped: it is shown as Markdown)
    note = engineering.speed_table(dict(full, bf16_training_skipped="<b>emulated</b>")).splitlines()[-1]
    assert note == "bf16 training rows left out: &lt;b&gt;emulated&lt;/b&gt;."
    # the reason the benchmark measured, in the page's language, from its number
    measured = dict(full, bf16_training_skipped=True, bf16_matmul_slowdown=60.1)
    with speaking("zh-CN"):
        zh = engineering.speed_table(measured).splitlines()[-1]
    assert zh == "未列出 bf16 训练的几行，原因：在这台 CPU 上，bfloat16 矩阵乘法比 float32 慢 60 倍。"
    assert engineering.speed_table(measured).splitlines()[-1] == (
        "bf16 training rows left out: bfloat16 matrix products run 60x slower than float32 on this CPU.")
    # the tab shows the shipped bench.json: a row for each declared row whose figures the file holds, in order
    shipped = json.loads((ASSETS / "bench.json").read_text(encoding="utf-8"))
    table = engineering.speed_table(shipped)
    assert "Speed on this machine" in engineering.engineering_md() and table in engineering.engineering_md()
    held = [text("en", f"bench.row.{row.ours}") for row in ROWS
            if all(k is None or isinstance(shipped.get(k), (int, float)) for k in (row.ours, row.reference, row.ratio))]
    assert [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()[2:2 + len(held)]] == held


@pytest.mark.parametrize("typed", ["[click me](javascript:alert(1))", "![x](http://example.com/x.png)",
                                   "<img src=x onerror=alert(1)>", "**bold** _it_ `code` # head", "a\\b <b>c</b>"])
def test_markdown_shows_user_text_as_typed(typed):
    """What md_literal makes of user text renders (CommonMark, as Gradio's Markdown) to that text alone."""
    from markdown_it import MarkdownIt
    rendered = MarkdownIt("commonmark").render(md_literal(typed))
    assert rendered.startswith("<p>") and rendered.count("<") == 2  # <p> and </p>: no link, image, tag
    assert html.unescape(rendered[3:-5]) == typed


@pytest.mark.slow
def test_load_of_eight_clients_without_failure_or_cross_talk(served_app):
    """`python -m tools.loadtest` in small: 8 gradio_client sessions x 3 translations against `python app.py` (the
    run's, tests/conftest.py served_app), all at once; every answer is its own input's (checked against one answer
    per sentence made in turn)."""
    r = loadtest.main(["--url", served_app.url, "--pid", str(served_app.proc.pid), "--clients", "8", "--requests", "3"])
    assert r["app"]["ok"] == 24 and r["app"]["failures"] == 0 and r["app"]["crossed"] == 0, r["app"]
    assert r["echo"]["ok"] == 24 and r["throughput_ratio"] > 0
    assert r["rss_after_mb"] is None or r["rss_after_mb"] - r["rss_before_mb"] < 50


def test_a_long_title_is_wrapped_at_its_spaces_and_beside_chinese_characters():
    from app.common import wrap_title
    from app.i18n import text
    for lang in ("en", "zh-CN"):
        title = text(lang, "lab.attention.decoder")
        lines = wrap_title(title, 30).split("<br>")
        assert len(lines) >= 2 and all(sum(2 if ord(c) >= 0x2E80 else 1 for c in line) <= 30 for line in lines)
        assert "".join(lines).replace(" ", "") == title.replace(" ", "")  # nothing lost, nothing added
    assert [len(w) for w in wrap_title("a few words here", 9).split("<br>")] == [5, 5, 4]  # at the spaces
    assert wrap_title("&lt;s&gt; fits", 42) == "&lt;s&gt; fits"


def test_a_kind_of_attention_is_named_in_the_events_language():
    """The shared helper reads the event's language, and takes none of its own."""
    from app.common import kind_name
    from app.i18n import speaking, text
    with speaking("zh-CN"):
        assert kind_name("cross") == text("zh-CN", "ui.kind.short.cross") != text("en", "ui.kind.short.cross")
        assert kind_name("cross", long=True) == text("zh-CN", "ui.kind.long.cross")
    with speaking("en"):
        assert kind_name("cross") == text("en", "ui.kind.short.cross")
    with pytest.raises(LookupError):  # outside an event no language was chosen, so none is assumed
        kind_name("cross")


def test_text_on_a_coloured_cell_is_the_colour_that_reads_best():
    """A token chip's and a Heads cell's words take, of dark and white, the colour of larger contrast with their
    background (WCAG's ratio), and that contrast is at least 4.5 everywhere on the scales; white on a light green
    chip ("bike 0.60") read at about 2:1."""
    from app.common import DARK_TEXT, LIGHT_TEXT, contrast, prob_rgb, token_strip
    from app.figures.heads import _color

    def rgb(css):
        return tuple(int(v) for v in re.findall(r"\d+", css))

    def ink(css):
        return DARK_TEXT if css == "#000" else LIGHT_TEXT

    for k in range(101):
        p = k / 100
        chip = token_strip(["▁bike"], [p])
        color = re.search(r"color:(#\w+)", chip).group(1)
        back = prob_rgb(p)
        assert contrast(back, ink(color)) == max(contrast(back, DARK_TEXT), contrast(back, LIGHT_TEXT))
        assert contrast(back, ink(color)) >= 4.5, (p, color)
        for value, diverging in ((p, False), (2 * p - 1, True)):
            cell, words = _color(value, -1 if diverging else 0, 1, diverging)
            assert contrast(rgb(cell), ink(words)) >= 4.5, (value, diverging, cell, words)
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21)
