"""The page in two languages: every key the page carries is in both tables and its Chinese is Chinese, no static
text of any tab stays English (tools/i18n_report.py), labels built from numbers are written in both languages,
and every view draws in the page's language (the report's measure of the text drawn at run time)."""
import ast
import re

import pytest

from app import i18n
from tests.conftest import ROOT, TOP_TABS, needs_shipped
from tools import i18n_report
from tools.i18n_report import english

CJK = re.compile(r"[\u3400-\u9fff]")


def used_keys():
    """Every key passed to L("...") anywhere in app/."""
    keys = set()
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "L" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
    return keys


def test_every_label_key_written_in_the_code_is_in_both_languages():
    keys = used_keys()
    assert len(keys) >= 120  # the keys written as literals; those built from a prefix are checked on the page below
    for lang in i18n.LANGS:
        missing = keys - set(i18n.table(lang))
        assert not missing, (lang, missing)
    assert all(k.startswith(i18n.STATIC) for k in keys)


def test_the_browser_gets_static_labels_and_no_templates():
    for lang in i18n.LANGS:
        sent = i18n.i18n().translations_dict[lang]
        for key, s in i18n.table(lang).items():
            if key.startswith(i18n.STATIC):
                assert (key in sent) == (not i18n.fields(s)), key  # a template is written on the server
        assert all(key in i18n.table(lang) or "#" in key for key in sent)


def test_markdown_in_the_tables_hides_no_piece_as_a_tag():
    """`<s>` and `</s>` outside a code span would be read as HTML by Markdown (a strike-through, or nothing)."""
    for lang in i18n.LANGS:
        for key, s in i18n.table(lang).items():
            bare = re.sub(r"`[^`]*`", "", s)
            assert not re.search(r"</?[a-z]+>", bare), (lang, key)


def test_a_label_built_from_values_is_written_in_both_languages():
    key = next(k for k, s in sorted(i18n.table("en").items()) if k.startswith(i18n.STATIC) and i18n.fields(s))
    names = sorted(i18n.fields(i18n.table("en")[key]))
    one, two = i18n.L(key, **{f: "7" for f in names}), i18n.L(key, **{f: "8" for f in names})
    assert one.key != two.key and one.key.startswith(key + "#")
    for lang in i18n.LANGS:
        sent = i18n.i18n().translations_dict[lang]
        assert sent[one.key] == i18n.text(lang, key, **{f: "7" for f in names}) and "7" in sent[one.key]
        assert "8" in sent[two.key] and "{" not in sent[two.key]
    with pytest.raises(AssertionError):
        i18n.L(key)  # a template needs its values
    with pytest.raises(AssertionError):
        i18n.L("ui.no.such.key")


def test_english_is_told_from_chinese_code_and_pieces():
    assert english("layer 0, head 3") and english("Choose heads above and press")
    assert not english("层 0，头 3") and not english("编码器 layer")  # Chinese with a term of the code in it
    for neutral in ("`d_model`", "d_model = 256", "▁Mann", "PE(pos + k)", "ε = 0.1", "42.05", "LayerNorm"):
        assert not english(neutral), neutral
    assert not english("Hund", frozenset({"Hund"}))  # the sentence's own pieces
    # Chinese that leaves a term of Dive into Deep Learning in English: a label, a diagram's box, an answer line
    for mixed in ("每个子层外加残差连接 + LayerNorm", "Linear（与嵌入共享权重）+ softmax",
                  "这个译文的解码方式是 `greedy`；贪心搜索在每一步都取概率最大的词元。", "第 2 层的 attention 权重"):
        assert english(mixed), mixed
    for chinese in ("线性层 + softmax", "decoder（解码器）", "`nn.LayerNorm` 的输出", "**`w_1`**：`Linear`，这里计入",
                    "masked_fill(mask ==<br>0, -1e9) 之后", "encoder.layers.0.feed_forward.<br>w_1 的参数分布",
                    "注意力汇，attention sink"):
        assert not english(chinese), chinese
    for code in ("[layer] * N", "tgt[:, 1:]", "clones（<br>deepcopy +<br>ModuleList）"):
        assert not english(code, i18n_report.neutral_words()), code


@pytest.fixture(scope="module")
def demo():
    from app.ui import build_demo
    return build_demo()


def page_keys(demo):
    """Every I18n key the built page carries, with the block it is on."""
    return {(s.key, type(b).__name__) for b in demo.blocks.values() for s in i18n_report.strings(b)
            if isinstance(s, i18n_report.gr.i18n.I18nData)}


@needs_shipped
def test_every_key_on_the_page_is_sent_in_both_languages_and_its_chinese_is_chinese(demo):
    keys = page_keys(demo)
    assert len(keys) >= 220
    for key, where in keys:
        en, zh = (i18n.i18n().translations_dict[lang].get(key) for lang in ("en", "zh-CN"))
        assert en and zh, (key, where)
        if english(en) and not key.startswith("ui.lang."):  # a language's own name is the same on every page
            assert CJK.search(zh), (key, where, zh)


@needs_shipped
def test_no_static_text_of_any_tab_stays_english(demo):
    table = i18n_report.count(demo)
    left = {tab: row[1] for tab, row in table.items() if row[1]}
    assert left == {}, left
    assert set(i18n.tab_labels(demo)) >= set(TOP_TABS)


@needs_shipped
@pytest.mark.slow
def test_every_view_draws_in_the_pages_language(demo):
    """Every view of every tab (every step of the Learn path) drawn for one translation: in zh-CN not one English
    string; in English the same measure finds English in every tab, so it is not blind."""
    from app.shared import examples
    from app.tabs.translate import translate
    ins = translate(examples()[0], "beam")[2]
    found = i18n_report.drawn(demo, ins, "zh-CN")
    assert len(found) == len(TOP_TABS) - 1 and {t: f for t, f in found.items() if f} == {}
    english_page = i18n_report.drawn(demo, ins, "en")
    assert all(english_page[tab] for tab in found), {t: len(f) for t, f in english_page.items()}
    assert any(s.startswith("Encoder self-attention") for s in english_page["attention"])


def blank_values(view, lang):
    """The values of a view's blank (a function of the controls it reads, given none of them), the page in `lang`."""
    if isinstance(view.outputs, int):  # a tab not yet moved to names: the language is a control it reads
        return view.blank(*(lang if u == "lang" else None for u in view.uses))
    with i18n.speaking(lang):
        out = view.blank(**{u: None for u in view.uses})
    return list(out.values()) if isinstance(out, dict) and set(out) == set(view.outputs) else [out]


@needs_shipped
def test_every_views_blank_is_in_the_pages_language():
    """What a view shows once it is cleared (its blank, given the controls it reads) is in the page's language: on a
    zh-CN page no blank shows English, and a blank that writes words writes others in English."""
    from app import tabs
    blanks = [v for name in tabs.__all__ for v in getattr(getattr(tabs, name), "VIEWS", ()) if callable(v.blank)]
    assert {v.name for v in blanks} >= {"why/attribution", "whatif/tree", "overview/diagram"}
    for v in blanks:
        drawn = {lang: [s for value in blank_values(v, lang) for s in i18n_report.value_strings(value)]
                 for lang in i18n.LANGS}
        assert [s for s in drawn["zh-CN"] if english(s)] == [], v.name
        if drawn["en"] and any(english(s) for s in drawn["en"]):
            assert drawn["en"] != drawn["zh-CN"], v.name


def test_an_event_in_its_language_takes_lang_by_name():
    """in_language's callback takes `lang` by keyword beside its own inputs (Gradio checks an event's inputs_kwargs
    against its signature: without `lang` in it, wiring the event raises), every step of a generator in it."""
    import inspect

    import gradio as gr

    from app.i18n import in_language, text

    @in_language
    def steps(n, extra=0):
        for _ in range(n):
            yield text("lab.blank")

    assert list(inspect.signature(steps).parameters) == ["n", "extra", "lang"]
    with gr.Blocks():
        n, lang, out = gr.Number(), gr.Textbox(), gr.Textbox()
        gr.Button().click(steps, None, out, inputs_kwargs=dict(n=n, lang=lang))  # accepted, by name
    assert list(steps(2, lang="zh-CN")) == [text("zh-CN", "lab.blank")] * 2
