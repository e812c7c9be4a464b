"""The Learn tab's path and figures as a phone shows them (app/tabs/learn.py): the circles that open their steps,
figures whose words are escaped once and laid out where nothing collides, the German side of step 5, the buffer's
shape in step 6, one counting origin in the teacher-forcing step; and the notice for a sentence that does not look like German
(app/tabs/translate.py german_hint), measured on our own sentences. The same things in the browser:
tests/test_browser.py's Learn walks."""
import html
import re
from html.parser import HTMLParser

import gradio as gr
import plotly.graph_objects as go
import pytest
import torch

from app import i18n, learn_path
from app.common import label, md_literal
from app.figures import learn as learn_figures
from app.i18n import in_language
from app.tabs import learn
from app.tabs.translate import status_view
from app.translating import german_hint
from core.data import ASSETS, PAD
from tests.conftest import needs_shipped


def said(fn, *args, lang, **kwargs):
    """fn(*args) as an event of the page in `lang` runs it (app.i18n.in_language)."""
    return in_language(fn)(*args, lang=lang, **kwargs)

SENTENCE = "Ein kleiner Junge spielt mit einem roten Ball im Garten."


@pytest.fixture(scope="module")
def ins():
    from app.shared import get_translator
    return get_translator().inspect(SENTENCE, method="greedy")


class Buttons(HTMLParser):
    """The <button> elements of a piece of HTML: their attributes (unescaped, as a browser reads them) and text."""
    def __init__(self):
        super().__init__()
        self.found, self.inside = [], False

    def handle_starttag(self, tag, attrs):
        if tag == "button":
            self.found.append({**dict(attrs), "text": ""})
            self.inside = True

    def handle_endtag(self, tag):
        self.inside = self.inside and tag != "button"

    def handle_data(self, data):
        if self.inside:
            self.found[-1]["text"] += data


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_circles_are_buttons_named_by_their_steps(lang):
    progress = {"step": 4, "done": ["generator", "scale"], "right": ["scale"]}
    parser = Buttons()
    parser.feed(said(learn.progress_html, progress, lang=lang))
    marks = parser.found
    assert [int(b["data-step"]) for b in marks] == list(range(1, len(learn_path.STEPS) + 1))
    for k, (b, step) in enumerate(zip(marks, learn_path.STEPS), start=1):
        name = f"{i18n.text(lang, 'learn.step', k=k, n=len(learn_path.STEPS))} · {i18n.text(lang, f'learn.{step.key}.title')}"
        assert b["aria-label"].startswith(name) and b["title"] == b["aria-label"], b  # read back whole: escaped right
        assert b["type"] == "button"
        assert b["text"] == str(k)  # done or not, a step keeps its number
        assert ("done" in b["class"].split()) == (step.key in progress["done"])
        assert ("right" in b["class"].split()) == (step.key == "scale")
        assert ("missed" in b["class"].split()) == (step.key == "generator")
        assert ("aria-current" in b) == (k == 5)
    assert [b["data-step"] for b in marks if i18n.text(lang, "learn.mark.done") in b["aria-label"]] == ["1"]
    assert [b["data-step"] for b in marks if i18n.text(lang, "learn.mark.right") in b["aria-label"]] == ["4"]


def test_a_title_with_markup_stays_text_in_its_circle(monkeypatch):
    real = learn.text
    monkeypatch.setattr(learn, "text", lambda key, **kw: '"><img src=x onerror=alert(1)>'
                        if key.endswith(".title") else real(key, **kw))
    out = said(learn.progress_html, learn_path.new_progress(), lang="en")
    assert "<img" not in out
    parser = Buttons()
    parser.feed(out)
    assert parser.found[0]["aria-label"].endswith('"><img src=x onerror=alert(1)>')


def test_a_circle_opens_its_step_and_anything_else_stays_on_the_path():
    p = {"step": 0, "done": ["generator"]}
    event = lambda data: gr.EventData(None, data)  # what the browser's trigger('click', data) becomes
    assert said(learn.pick, None, p, lang="en", evt=event({"step": 12}))["progress"] == {"step": 11, "done": ["generator"]}
    for bad, k in (({"step": "<b>"}, 0), ({"step": 99}, len(learn_path.STEPS) - 1), (None, 0), ("12", 0), ({}, 0)):
        assert said(learn.pick, None, p, lang="en", evt=event(bad))["progress"]["step"] == k, bad


def _texts(fig):
    """Every string a figure draws: title, annotations, tick labels, trace names and cell texts."""
    out = [fig.layout.title.text or ""] + [a.text or "" for a in fig.layout.annotations]
    for axis in (fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))):
        out += list(axis.ticktext or []) + [axis.title.text or ""]
    for t in fig.data:
        out.append(t.name or "")
        if getattr(t, "text", None) is not None:
            out += [x for row in t.text for x in (row if isinstance(row, (list, tuple)) else [row])]
    return [str(x) for x in out]


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_no_figure_escapes_twice_and_each_legend_sits_above_its_plot(ins, lang):
    for k, step in enumerate(learn_path.STEPS):
        values = step.control.choices or [learn_path._value(step.control.lo, ins), learn_path._value(step.control.hi, ins)]
        for value in values:
            fig, _ = said(learn_path.figure_and_fact, step, learn_path.context(ins), value, lang=lang)
            for s in _texts(fig):
                assert "&amp;" not in s, (step.key, value, s)  # an entity escaped again shows as "&lt;"
                assert not re.search(r"[<>]", s.replace("<br>", "")), (step.key, value, s)  # and escaped once
            # the legend above the plot, under the title: where no tick label or axis title reaches it
            assert fig.layout.legend.y == 1 and fig.layout.legend.yanchor == "bottom", step.key
            assert fig.layout.title.yanchor == "top" and fig.layout.title.yref == "container", step.key


@needs_shipped
def test_the_masks_step_shows_the_german_side_and_its_pieces_once_escaped(ins, english):
    c = learn_path.context(ins, revealed=True)
    batch = learn_figures.mask_batch(c)
    hidden = learn_figures.draw_masks(learn_path.context(ins), "padding")[0].data[0].text  # before Check: pads unnamed
    assert not any("pad" in x for row in hidden for x in row) and hidden[0][0] == "&lt;s&gt;"
    fig, values = learn_figures.draw_masks(c, "padding")
    cells = fig.data[0].text
    for j, row in enumerate(batch.src):  # one column per German sentence of the batch, its pieces in order
        assert [cells[i][j] for i in range(len(row))] == [label(c.tokenizer.id_to_piece(int(t))) for t in row]
        assert [bool(fig.data[0].z[i][j]) for i in range(len(row))] == [bool(x) for x in batch.src_mask[j, 0]]
    assert values["S"] == batch.src.size(1)
    assert sum(x == "&lt;pad&gt;" for row in cells for x in row) == int((batch.src == PAD).sum())
    fig, values = learn_figures.draw_masks(c, "subsequent")
    assert "&lt;s&gt;" in fig.layout.xaxis.ticktext and not any("&amp;" in t for t in fig.layout.xaxis.ticktext)
    assert str(values["T"]) in learn_path.figure_and_fact(learn_path.STEPS[4], c, "both")[1]


@needs_shipped
def test_the_buffer_step_names_the_axes_of_the_buffers_whole_shape(ins, english):
    c = learn_path.context(ins)
    pe = c.model.src_embed[1].pe
    _, values = learn_figures.draw_buffer(c, 1)
    assert values["shape"] == " × ".join(map(str, pe.shape)) and pe.dim() == 3 and pe.size(0) == 1
    for lang in i18n.LANGS:
        fact = i18n.text(lang, "learn.buffer.fact", **values)
        assert values["shape"] in fact


@needs_shipped
def test_the_teacher_step_counts_positions_from_one_on_slider_and_axis(ins):
    step = learn_path.STEPS[learn_path.KEYS.index("teacher")]
    c = learn_path.context(ins, revealed=True)
    slider, _ = said(learn.control_updates, step, ins, c, lang="zh-CN")
    assert slider["minimum"] == 1 and slider["maximum"] == len(ins.out_tokens)
    for pos in (1, 3, len(ins.out_tokens)):
        fig, values = said(learn_figures.draw_teacher, c, pos, lang="zh-CN")
        ticks = fig.layout.yaxis.ticktext
        marked = [i for i, row in enumerate(fig.data[0].z) if any(row)]
        assert ticks[0] == "1" and marked == [pos - 1] and ticks[marked[0]] == str(values["pos"]) == str(pos)
        assert fig.data[0].text[pos - 1][1] == label(learn_figures._piece(ins.out_tokens[pos - 1]))
        assert fig.data[0].textfont.size >= 12 and fig.layout.height >= 22 * len(ins.out_tokens)


def _sentences(name):
    return [s for s in (ASSETS / name).read_text(encoding="utf-8").splitlines() if s.strip()]


@needs_shipped
def test_the_not_german_notice_is_measured_on_our_own_sentences(english):
    """None of our German examples and probes is flagged; each of their English translations by the shipped
    model is, and so are emoji, numbers and another script; a notice never refuses the sentence."""
    from app.shared import get_translator
    german = _sentences("examples.txt") + _sentences("probes.txt") + [learn_figures.SHORT_PAIR[0], learn_figures.LONG_PAIR[0]]
    assert len(german) >= 18
    assert [s for s in german if german_hint(s) is not None] == []
    tr = get_translator()
    english = [tr.inspect(s, method="greedy").translation for s in german] + [learn_figures.SHORT_PAIR[1], learn_figures.LONG_PAIR[1]]
    missed = [s for s in english if german_hint(s) is None]
    assert missed == [], missed
    for s in ("😀🎉🐕", "12345 67", "!!!"):
        assert german_hint(s) == i18n.text("en", "translate.hint.letters"), s
    assert german_hint("我的狗在公园里跑") == i18n.text("en", "translate.hint.unknown", n=8, total=8)
    for s in ("Paris", "Hallo!", "Ein Hund.", "", "   "):  # nothing to go on, or German: no notice
        assert german_hint(s) is None, s


def test_the_notice_escapes_the_words_it_quotes_in_both_languages():
    for lang in i18n.LANGS:
        hint = said(german_hint, "the <b>a</b> [is](javascript:x)", lang=lang)
        assert hint and "<b>" not in hint and "](" not in hint
        assert "“a”" in hint.replace("\\", "") or "“the”" in hint


@needs_shipped
def test_the_notice_shows_in_the_status_line_and_under_the_learn_box():
    from app.tabs.translate import translate
    _, status, ins = translate("A dog runs on the beach.")
    assert said(german_hint, ins.source, lang="en") in status  # the API's status line, in English
    for lang in i18n.LANGS:
        hint = said(german_hint, ins.source, lang=lang)
        with i18n.speaking(lang):
            assert hint and hint in status_view(ins)
        notice = f"**{i18n.text(lang, 'translate.status.notice')}** {hint}"
        assert said(learn.sentence_notice, ins.source, ins, lang=lang) == notice
        # the Learn box follows the page's sentence, its notice and its English
        assert said(learn.follow, ins, lang=lang)[:2] == (ins.source, notice)
        assert html.escape(ins.translation) in said(learn.follow, ins, lang=lang)[2]
    german = translate(SENTENCE)[2]
    assert said(learn.follow, german, lang="zh-CN")[:2] == (SENTENCE, "")
    with i18n.speaking("en"):
        assert i18n.text("en", "translate.status.notice") not in status_view(german)


# German with a few characters the shipped model has no piece for: an emoji each side, a phrase of Arabic. Fewer
# than half its characters: german_hint says nothing of them
MIXED = ("Ein Hund 🐕 läuft über die Wiese 😀.", "Ein Mann liest ein Buch مرحبا بالعالم im Park.")


def unknown_runs(typed, sp):
    """The runs of characters of `typed` that the tokenizer `sp` reads as <unk>, and how many characters they hold,
    counted one character at a time (the reference unknown_hint is checked against)."""
    runs, run, count = [], "", 0
    for ch in typed + " ":
        if not ch.isspace() and sp.unk_id() in sp.encode(ch):
            run, count = run + ch, count + 1
        else:
            runs, run = runs + [run] * bool(run), ""
    return list(dict.fromkeys(runs)), count


def test_characters_without_a_piece_are_named_and_counted(tiny_spm):
    """On a tokenizer of 64 pieces (tests/conftest.py): a sentence with emoji among its letters gets the notice,
    which counts them and names each run once, escaped; none for a sentence the tokenizer reads whole, nor for one
    german_hint already calls not German (half its characters or more without a piece)."""
    from app.translating import UNKNOWN_SHOWN, unknown_hint
    sp, _ = tiny_spm
    typed = "Der Hund 🐕 läuft im Park 😀*😀 und 🐕."
    runs, count = unknown_runs(typed, sp)
    assert count >= 4 and len(runs) >= 2
    for lang in i18n.LANGS:
        hint = said(unknown_hint, typed, sp, lang=lang)
        listed = " ".join(f"“\u2068{md_literal(r)}\u2069”" for r in runs[:UNKNOWN_SHOWN])  # each run isolated
        total = sum(not ch.isspace() for ch in typed)
        assert hint == i18n.text(lang, "translate.hint.unknown-some", n=count, total=total, chars=listed)
        assert "\\*" in hint  # the reader's characters are no markup
    assert said(unknown_hint, "Der Hund läuft im Park.", sp, lang="en") is None
    assert said(unknown_hint, "😀😀😀 a", sp, lang="en") is None and said(german_hint, "😀😀😀 a", sp, lang="en")
    many = " ".join(f"Der {e} Hund" for e in "😀🐕🎉🌍🚲🍎")
    assert said(unknown_hint, many, sp, lang="en").count("“") == UNKNOWN_SHOWN and " …" in said(
        unknown_hint, many, sp, lang="en")


def notice_part(status):
    """The notices of a status line: what follows its first paragraph (how it was decoded, its pieces, its time)."""
    return status.partition("\n\n")[2]


@needs_shipped
@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_learn_box_gives_the_notices_the_status_line_gives(lang):
    """A sentence translated under the Learn tab's box gets the notices the Translate tab's status line gives it,
    the same sentences in the same order (app/translating.py notices, one function beneath both): characters the
    model has no piece for (emoji, Arabic among German: said by neither tab before), a 1,000-character sentence cut
    to the model's length and longer than any training sentence, with one count of its pieces, English input; and
    none for plain German. A sentence refused says the steps stay with the last translation, as the status line
    does."""
    from app.tabs.translate import input_notice
    from app.translating import translate, unknown_hint
    cut = ("Der Hund läuft über die Wiese. " * 40)[:1000]
    with i18n.speaking(lang):
        word = f"**{i18n.text(lang, 'translate.status.notice')}**"
        for typed, count in [*((m, 1) for m in MIXED), (cut, 2), ("A dog runs on the beach.", 1), (SENTENCE, 0)]:
            ins = translate(typed)[2]
            status, notice = status_view(ins), learn.sentence_notice(typed, ins)
            assert notice == notice_part(status) and notice.count(word) == count, (typed[:40], notice)
            assert learn.follow(ins)[1] == notice  # and as the box follows the page's sentence
        for typed in MIXED:  # read as <unk>, which german_hint leaves unsaid: the new notice says it
            ins = translate(typed)[2]
            assert "<unk>" in ins.src_tokens and german_hint(typed) is None
            assert learn.sentence_notice(typed, ins) == f"{word} {unknown_hint(typed)}"
        pieces = len(translate(cut)[2].src_tokens)
        assert re.findall(r"\d+", learn.sentence_notice(cut, translate(cut)[2]))[:2] == [str(pieces)] * 2
        last = translate(SENTENCE)[2]
        assert learn.sentence_notice("", last) == input_notice("", last)
        assert i18n.text(lang, "translate.status.still", source=md_literal(SENTENCE)) in learn.sentence_notice("  ", last)

def test_a_figure_legend_is_given_room_for_its_lines():
    one = go.Figure([go.Scatter(y=[1], name="a"), go.Scatter(y=[2], name="b")])
    long = go.Figure([go.Scatter(y=[1], name="本模型：d_model = 256，预热 4000 步，一个很长的名字 <x>"),
                      go.Scatter(y=[2], name="x"), go.Scatter(y=[3], name="y")])
    assert learn_figures.legend_height(go.Figure(go.Heatmap(z=[[1]]))) == 0
    assert learn_figures.legend_height(go.Figure(go.Scatter(y=[1], name="alone"))) == 0
    short = learn_figures._compact(one, "t").layout.height
    tall = learn_figures._compact(long, "t")
    assert "<br>" in tall.data[0].name and "&lt;x&gt;" in tall.data[0].name  # in lines, escaped, not cut
    lines = tall.data[0].name.count("<br>") + 1
    assert learn_figures.legend_height(tall) >= learn_figures.LEGEND_LINE * lines and tall.layout.height > short
    assert learn_figures.legend_height(tall) == learn_figures.legend_height(tall)  # reading it changes nothing


@needs_shipped
def test_the_buffer_step_draws_the_sine_and_cosine_dimensions_apart(ins, english):
    """Step 6: one position's encoding as two curves over the frequency index, the even (sine) dimensions and the
    odd (cosine) ones, not one line through all 256 values, which alternates between the two at every step."""
    c = learn_path.context(ins)
    pe = c.model.src_embed[1].pe[0]
    fig, _ = learn_figures.draw_buffer(c, 3)
    assert [len(t.y) for t in fig.data] == [pe.size(1) // 2] * 2
    for trace, k in zip(fig.data, (0, 1)):
        assert torch.allclose(torch.tensor(trace.y, dtype=torch.float32), pe[3, k::2], atol=1e-3)
        turns = sum((a - b) * (b - c_) < 0 for a, b, c_ in zip(trace.y, trace.y[1:], trace.y[2:]))
        assert turns < len(trace.y) // 4, turns  # a curve, no zig-zag
