"""The What if tab's callbacks (app/tabs/whatif.py) on the shipped model."""
import html
import re

import pytest

from app.common import MAX_CHARS
from app.figures.whatif import COLORS
from app.i18n import speaking
from app.shared import get_translator
from app.tabs import translate, whatif
from app.views import page_state
from tests.conftest import needs_shipped
from tests.events import selected

pytestmark = needs_shipped
TEXT = "Ein Mann mit einem roten Hut sitzt auf einer Bank."


@pytest.fixture(scope="module")
def ins():
    return translate.translate(TEXT, "beam", 4)[2]


def log_ps(result):
    return [float(x) for x in re.findall(r"log P = (-?[\d.]+)", result)]


def rows(result):
    """The tokens of each row of a comparison, as shown."""
    return [[html.unescape(t) for t in re.findall(r'<span class="tok"[^>]*>(.*?)<sub>', row)]
            for row in result.split('<div class="whatif-row">')[1:]]


def continued(ins, prefix):
    """The translation's own beam search, continued after `prefix`, and the model's log P of the result."""
    tr = get_translator()
    english = tr.translate(TEXT, method="beam", beam=4, alpha=ins.decoding["alpha"], prefix=prefix)
    return english, tr.score(TEXT, english)[0]


def test_the_tree_is_the_search_that_chose_the_translation(ins, monkeypatch, english):
    fig = whatif.tree_view(ins, 4)
    by_name = {t.name: t for t in fig.data if t.name}
    assert len(by_name["returned"].x) == 1
    tree = whatif.search_tree(ins, 4)
    tok = get_translator().tokenizer
    assert tok.decode(tree.path(tree.returned.id)[:-1]) == ins.translation
    end = tree.returned.step
    assert sum(len(t.x) for t in fig.data if t.name) == sum(n.step <= end for n in tree.nodes)
    monkeypatch.setattr(whatif.searchtree, "search", lambda *a, **k: pytest.fail("searched again"))
    whatif.tree_view(ins, 4)  # kept per translation and beam size


LONG = "Eine Frau mit einem gelben Hut sitzt am Fluss und liest ein dickes Buch."


def _crossings(segments):
    """Pairs of edges (x0, y0, x1, y1) between the same two steps whose ends swap sides."""
    return [(a, b) for i, a in enumerate(segments) for b in segments[i + 1:]
            if a[1] == b[1] and (a[0] - b[0]) * (a[2] - b[2]) < 0]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_tree_ends_where_the_returned_translation_ends(lang):
    """No token is drawn after the step where the returned translation ends (what the search looked at after it
    is counted in the title), the step axis spans the steps drawn and no more, and the edges of the hypotheses
    the search went on with never cross."""
    ins = translate.translate(LONG, "beam", 4)[2]
    tree = whatif.search_tree(ins, 4)
    end, searched = tree.returned.step, max(n.step for n in tree.nodes)
    assert searched > end  # the search looked further than the translation it returned
    with speaking(lang):
        fig = whatif.tree_view(ins, 4)
    ys = [y for t in fig.data if t.name for y in t.y]
    assert max(ys) == end and sorted(fig.layout.yaxis.range) == [-0.5, end + 0.5]
    later = sum(n.step > end for n in tree.nodes)
    assert f"{later}" in fig.layout.title.text and f"{searched}" in fig.layout.title.text
    kept = fig.data[1]  # the edges of the hypotheses that went on
    xs, ys = list(kept.x), list(kept.y)
    segments = [(xs[i], ys[i], xs[i + 1], ys[i + 1]) for i in range(0, len(xs), 3)]
    assert segments and _crossings(segments) == []


def test_another_word_is_taken_and_the_model_goes_on(ins, english):
    """The second candidate at position 2 in place of the chosen token, then the translation's own beam search
    from there: its tokens and log P beside the translation's."""
    position, candidate = 1, ins.topk[1][1][0]
    result = whatif.swap_word(ins, position, candidate)
    english, log_p = continued(ins, f"A{candidate.replace('▁', ' ')}")
    ours, theirs = log_ps(result)
    assert ours == pytest.approx(get_translator().score(TEXT, ins.translation)[0], abs=0.006)
    assert theirs == pytest.approx(log_p, abs=0.006) and theirs < ours  # a less likely word, chosen by hand
    shown, swapped = rows(result)
    assert len(shown) == len(ins.out_tokens) and swapped[:2] == ["A", candidate.strip("▁")]
    assert len(swapped) == len(get_translator().tokenizer.encode(english)) + 1  # and </s>
    assert "Pick one of the candidates" in whatif.swap_word(ins, position, "<script>")
    assert whatif.swap_word(None, 0, "x") == whatif.not_yet() and whatif.not_yet().startswith("Translate")


def test_a_prefix_is_continued_and_user_text_is_escaped(ins, english):
    result = whatif.force_prefix(ins, "A woman")
    english, log_p = continued(ins, "A woman")
    assert english.startswith("A woman ") and log_ps(result)[1] == pytest.approx(log_p, abs=0.006)
    assert rows(result)[1][:2] == ["A", "woman"]
    evil = whatif.force_prefix(ins, "<img src=x onerror=alert(1)>")
    assert "<img" not in evil
    assert "Write the start" in whatif.force_prefix(ins, "  ")
    assert "characters" in whatif.force_prefix(ins, "a" * (MAX_CHARS + 1))


def test_a_users_translation_is_scored_by_the_model(ins, english):
    mine = "A man in a red hat sits on a bench."
    result = whatif.score_mine(ins, mine)
    ours, theirs = log_ps(result)
    tr = get_translator()
    assert theirs == pytest.approx(tr.score(TEXT, mine)[0], abs=0.006)
    assert ours == pytest.approx(tr.score(TEXT, ins.translation)[0], abs=0.006)
    assert "Write your own" in whatif.score_mine(ins, "")


def test_the_tree_saves_as_one_self_contained_page(ins, english):
    update = whatif.tree_file(ins, 4)
    with open(update["value"], encoding="utf-8") as f:
        page = f.read()
    assert update["visible"] is True and "Beam search, beam 4" in page
    assert not re.search(r"<script[^>]*\ssrc=", page)  # plotly.js is inside the page: no script to fetch
    assert whatif.tree_file(None, 4)["visible"] is False


def test_the_tabs_labels_are_in_both_languages():
    """Every static label of the tab goes through gr.I18n, its English the page's own."""
    import gradio as gr

    from app import i18n
    from tools.i18n_report import count
    with gr.Blocks() as demo:
        whatif.build(page_state(), gr.State(), gr.State("en"))
    done, left = count(demo)["whatif"]
    assert left == 0 and done >= 14
    prefix = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "whatif-prefix")
    assert i18n.text("en", prefix.label.key) == "English prefix" and i18n.text("zh-CN", prefix.label.key) == "英语前缀"
    assert i18n.text("en", prefix.placeholder.key) == "A woman"  # an English start in both languages


def test_the_tab_draws_in_the_pages_language(ins):
    """In zh-CN the tree, the comparisons and every message say nothing in English but the sentence's and the
    model's pieces; in English the tree's legend keeps its names."""
    import gradio as gr

    from tools.i18n_report import english, sentence_pieces, value_strings
    zh = "zh-CN"
    with speaking(zh):
        fig = whatif.tree_view(ins, 4)
        results = [whatif.swap_word(ins, 1, ins.topk[1][1][0]), whatif.force_prefix(ins, "A woman"),
                   whatif.score_mine(ins, "A man in a red hat sits on a bench.")]
        messages = [whatif.swap_word(None, 0, "x"), whatif.swap_word(ins, 1, "<script>"),
                    whatif.force_prefix(ins, " "), whatif.score_mine(ins, ""),
                    whatif.force_prefix(ins, "a" * (MAX_CHARS + 1)), whatif.placeholder(4)]
    assert {t.name for t in fig.data if t.name} <= {"保留", "剪掉", "已结束", "最终返回", "根节点"}
    assert "束宽 4" in fig.layout.title.text and "&lt;s&gt;" in fig.layout.yaxis.title.text  # <s> escaped
    assert all("log p(词元)" in h for t in fig.data if t.name for h in t.hovertext)
    pieces = sentence_pieces(ins) | {w for r in results for row in rows(r) for t in row for w in re.findall(r"\w+", t)}
    pieces |= {"log"}  # log p, log P: formulas
    left = [s for v in [fig, *results, *messages] for s in value_strings(v) if english(s, pieces)]
    assert left == [] and "模型" in results[0] and "英语译文的开头" in messages[2]
    with speaking("en"):
        assert log_ps(results[2]) == log_ps(whatif.score_mine(ins, "A man in a red hat sits on a bench."))
        assert {t.name for t in whatif.tree_view(ins, 4).data if t.name} <= set(COLORS)
    with gr.Blocks():
        tab = whatif.build(page_state(), gr.State(), gr.State("en"))
    tree = tab.outputs["tree"]
    page = {"open": {"": "whatif"}, "drawn": {}}
    assert "束搜索" in tab.show(page, zh, ins, tabs=selected(page), beam=4)[tree].layout.title.text
    assert "Beam search" in tab.show(page, "en", ins, tabs=selected(page), beam=4)[tree].layout.title.text  # the language redraws it
    before = tab.show({"drawn": {}}, zh, None, tabs=["whatif"], beam=4)
    assert set(before) == {tree} and "请先翻译" in before[tree].layout.annotations[0].text


def test_the_tabs_events_run_in_the_pages_language():
    """The tab's views are drawn in the event's language (not a control of the tab), and every button's event
    reads the page's language."""
    import gradio as gr
    with gr.Blocks() as demo:
        lang = gr.Radio(["zh-CN", "en"], value="en")
        tab = whatif.build(page_state(), gr.State(), lang)
    assert list(tab.controls) == ["beam"] and tab.lang is lang
    fns = {getattr(d.fn, "__name__", None): d for d in demo.fns.values()}
    listener = next(d for d in demo.fns.values() if d.fn == tab.show)  # opened, the beam size moved, a new sentence
    assert lang in listener.inputs and (lang._id, "change") in listener.targets
    for name in ("swap_word", "force_prefix", "score_mine", "tree_file"):
        assert lang in fns[name].inputs and fns[name].concurrency_id == "model", name
