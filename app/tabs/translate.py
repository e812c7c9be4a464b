"""The Translate tab: a German sentence in, its English translation, each chosen token's probability, and
the decoding replayed one step at a time.

`translate` keeps the Inspection of the translation (every attention map, every step's candidates) in the
session's state; every view draws from it, when it is shown (app/views.py). This tab's views are the token
strip and the status line, drawn with each translation beside the English, and the step replay, drawn when the
tab is on screen; their words are in the page's language, their figures app/figures/decoding.py's. `translate` is
also the public /translate API, whose status line stays English: the status view writes it again in the page's
language.
"""
import gradio as gr
from sacrebleu.metrics import CHRF

from core.decode import DECODING_LIMITS, DEFAULT_METHOD, METHODS
from core.model import subsequent_mask

from .. import page as page_js
from ..common import clamp, export_file, md_literal
from ..exports import FILES_HIDDEN, attention_files, download, probability_files, shown_files
from ..figures.compare import model_name
from ..figures.decoding import (
    decoder_input_html,
    mask_svg,
    nbest_headers,
    nbest_rows,
    replay_first,
    step_candidates,
    token_probs_html,
)
from ..figures.score import reference_markdown
from ..i18n import L, choices, in_language, speaking, text
from ..shared import examples, lengths_of, model_of
from ..translating import first_value, notice_lines, open_hypothesis, refused, status_line, translate
from ..views import Tab, View, by_component, telling_tabs

# ---- callbacks -------------------------------------------------------------------------------------

def export_json(ins):
    """The Inspection of the last translation as a JSON file, which the export button downloads in one click
    (core Inspection.to_json: reload it with Inspection.from_json, or read it with any JSON reader)."""
    return gr.update(value=export_file(ins.to_json(), "translation", ".json"), interactive=True)


def token_probs(ins):
    return token_probs_html(ins)


def status_view(ins, model=None):
    """The status line of the kept translation in the page's language (translate() returns it in English, for
    its API), naming its model where it is not the page's own; where the header's menu has another model chosen
    (`model`: the translation of a new choice was refused, or is on its way), that the views are still this one's."""
    cut = len(ins.src_tokens) if ins.truncated else None  # the count the status line and the length hint say
    line = status_line(ins.decoding, len(ins.src_tokens), len(ins.out_tokens), ins.server_ms, cut,
                       source=ins.source, lengths=lengths_of(ins), rank=ins.rank, of=len(ins.nbest),
                       tokenizer=model_of(ins).tokenizer, model=ins.model)
    if model and ins.model and model != ins.model:
        line += notice_lines([text("translate.status.other-model", made=md_literal(model_name(ins.model)),
                                   chosen=md_literal(model_name(model)))])
    return line


def numbers_files(ins):
    """The translation's numbers as files (app/exports.py): its attention maps and its token probabilities with
    their top-k, each as CSV and as .npz; the list hidden where there is no translation."""
    return shown_files(None if ins is None else [*attention_files(ins), *probability_files(ins)])


def numbers_cleared(ins):
    """A new translation's file list: hidden until its button writes the files (an earlier sentence's go)."""
    return FILES_HIDDEN


def reference_view(ins):
    """The reference beside a translation opened from a scored set (the Score tab), with its sentence chrF; empty
    for any other translation."""
    if ins is None or not ins.reference:
        return ""
    return reference_markdown(ins.reference, CHRF().sentence_score(ins.translation, [ins.reference]).score)


NBEST_HIDDEN = dict(nbest_note="", nbest=gr.update(visible=False))


def nbest_view(ins):
    """A beam search's final hypotheses as a table (rank, translation, score, log P, length), the one shown
    marked; nothing for a translation that kept none (greedy, sampling, a beam of 1)."""
    if ins is None or not ins.nbest:
        return NBEST_HIDDEN
    return dict(nbest_note=text("translate.nbest.note", n=len(ins.nbest)),
                nbest=gr.update(value=dict(headers=nbest_headers(), data=nbest_rows(ins)), visible=True))


def pick_hypothesis(ins, evt: gr.SelectData):
    """A row of the n-best table opens its hypothesis as the translation shown, in every tab: (the English, the
    Inspection to keep); nothing changes for the row already shown or a click outside the rows."""
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if isinstance(evt.row_value, (list, tuple)) and evt.row_value:  # the row's rank: the table may be sorted
        digits = "".join(ch for ch in str(evt.row_value[0]) if ch.isdigit())
        row = int(digits) - 1 if digits else None
    if ins is None or not isinstance(row, int) or not 0 <= row < len(ins.nbest) or ins.nbest[row].rank == ins.rank:
        return gr.skip(), gr.skip()
    chosen = open_hypothesis(ins, row)
    return chosen.translation, chosen


def step_slider(ins):
    n = len(ins.out_tokens) if ins is not None else 1
    return gr.Slider(minimum=1, maximum=max(n, 2), value=1, step=1, interactive=ins is not None,
                     label=L("ui.translate.step"))  # its range shows the steps


def decoding_step(ins, step):
    """What the decoder saw and chose at step `step` (1-based): input so far, mask in effect, candidates."""
    if ins is None:
        return dict(step_info="", step_mask="", step_cands=replay_first())
    t = clamp(step, 1, len(ins.out_tokens)) - 1
    seen = ins.tgt_tokens[:t + 1]
    mask = subsequent_mask(len(seen))[0]
    return dict(step_info=decoder_input_html(ins, t),
                step_mask=mask_svg(mask, seen, seen, title=text("translate.mask-title", n=t + 1), highlight_row=t),
                step_cands=step_candidates(ins, t))


def _step_by(ins, step, delta):
    """The replay moved one step back or forward, kept within 1..n: the slider's value and that step's views."""
    if ins is None:
        return dict(step=1, **decoding_step(None, 1))
    k = clamp(clamp(step, 1, len(ins.out_tokens)) + delta, 1, len(ins.out_tokens))
    return dict(step=k, **decoding_step(ins, k))


def previous_step(ins, step):
    return _step_by(ins, step, -1)


def next_step(ins, step):
    return _step_by(ins, step, +1)


def replay_start(ins):
    """The step replay of a new translation, at step 1: the slider's range, then the step's views."""
    return dict(step=step_slider(ins), **decoding_step(ins, 1))


WHERE = ("translate",)
STEP_VIEWS = ("step_info", "step_mask", "step_cands")  # one step's views: input so far, mask, candidates
REPLAY = ("step", *STEP_VIEWS)
# a replay cleared: the slider back to its first range, out of use, and the step's views empty
CLEARED = dict(step=gr.update(minimum=1, maximum=2, value=1, interactive=False), step_info="", step_mask="",
               step_cands="")

# the views of the tab: the token strip and the status line are drawn with every translation (they sit beside the
# English), the step replay when the tab is on screen; all in the page's language
VIEWS = [View("translate/tokens", (), token_probs, outputs=("probs",), blank=dict(probs="")),
         View("translate/status", (), status_view, outputs=("status",), uses=("model",), blank=dict(status="")),
         View("translate/reference", (), reference_view, outputs=("reference",), blank=dict(reference="")),
         View("translate/replay", WHERE, replay_start, outputs=REPLAY, blank=CLEARED),
         View("translate/nbest", WHERE, nbest_view, outputs=("nbest_note", "nbest"), blank=NBEST_HIDDEN),
         # the export button's file, written when the tab shows the translation (its click only downloads it)
         View("translate/export", WHERE, export_json, outputs=("export",),
              blank=dict(export=gr.update(value=None, interactive=False))),
         View("translate/numbers", WHERE, numbers_cleared, outputs=("numbers",), blank=dict(numbers=FILES_HIDDEN))]


def relabel(tab, page, lang, ins, step, model=None, tabs=()):
    """The tab's views once the page's language changes: as its `show` draws them (`model`: the header's menu, a
    control of the status view; `tabs`, the tabs the page shows), but a replay of this translation drawn again stays at its step (`replay_start`
    would take it back to step 1)."""
    last = page["drawn"].get(VIEWS[-1].name)
    out = tab.show(page, lang, ins, tabs=tabs, model=model)
    if ins is not None and last is not None and last[0] is ins and tab.outputs["step_info"] in out:
        del out[tab.outputs["step"]]  # the slider keeps its range and value
        with speaking(lang):
            out.update({tab.outputs[name]: value for name, value in decoding_step(ins, step).items()})
    return out


def input_notice(typed, ins=None):
    """After a press of Translate: the status line's message about the German typed, in the page's language,
    where there is one (app/translating.py refused: translate() wrote it in English); else nothing sent (the
    status view writes the translation's line and its notices)."""
    problem = refused(typed, ins)
    return gr.skip() if problem is None else problem


# the sliders each decoding method reads (the length, every method's); the others are out of use under it
USED_BY = {"greedy": (), "beam": ("beam", "alpha"), "sample": ("temperature", "top_k")}
METHOD_SLIDERS = ("beam", "alpha", "temperature", "top_k")


def sliders_in_use(method):
    """The beam and sampling sliders for decoding `method`: those it reads in use, the others disabled (their
    values still sent, and clamped by translate())."""
    used = USED_BY.get(method, ())
    return [gr.update(interactive=name in used) for name in METHOD_SLIDERS]


# ---- layout and events -----------------------------------------------------------------------------

def _settings(default_alpha):
    """The decoding controls, in the order `translate` takes them after the text (SETTINGS), each slider's range
    and first value from DECODING_LIMITS."""
    def slider(name, label):
        limit = DECODING_LIMITS[name]
        used = name not in METHOD_SLIDERS or name in USED_BY[DEFAULT_METHOD]
        return gr.Slider(limit.lo, limit.hi, value=first_value(name, default_alpha), step=limit.step, label=label,
                         interactive=used, elem_id=f"set-{name.replace('_', '-')}")

    method = gr.Radio(choices("ui.translate.method", METHODS), value=DEFAULT_METHOD, label=L("ui.translate.decoding"),
                      elem_id="set-method")
    with gr.Row():
        beam = slider("beam", L("ui.translate.beam"))
        alpha = slider("alpha", L("ui.translate.alpha"))
    with gr.Row():
        temperature = slider("temperature", L("ui.translate.temperature"))
        top_k = slider("top_k", L("ui.translate.top-k"))
    max_len = slider("max_len", L("ui.translate.max-len"))
    # a method's change (a click, or a link's settings) puts its own sliders in use and the others out
    method.change(sliders_in_use, method, [beam, alpha, temperature, top_k], api_visibility="private",
                  show_progress="hidden")
    return [method, beam, alpha, temperature, top_k, max_len]


def _step_replay():
    """The step slider, its two buttons and the step's views (input so far, mask, candidates)."""
    gr.Markdown(L("ui.translate.replay"))
    with gr.Row(equal_height=True):
        step = gr.Slider(1, 2, value=1, step=1, label=L("ui.translate.step"), interactive=False, elem_id="step", scale=6)
        prev_btn = gr.Button(L("ui.translate.previous"), size="sm", scale=1, min_width=120, elem_id="step-prev")
        next_btn = gr.Button(L("ui.translate.next"), size="sm", scale=1, min_width=120, elem_id="step-next")
    step_info = gr.HTML(elem_id="step-info")
    with gr.Row():
        step_mask = gr.HTML(label=L("ui.translate.mask"), elem_id="step-mask")
        step_cands = gr.HTML(label=L("ui.translate.candidates"), elem_id="step-cands")
    return step, (prev_btn, next_btn), dict(step_info=step_info, step_mask=step_mask, step_cands=step_cands)


def _layout(default_alpha):
    """The text box, the examples, the settings and the button; the English, the status (the page's and the
    API's), the token strip and the export button with its file."""
    with gr.Row():
        with gr.Column(scale=1):
            src = gr.Textbox(label=L("ui.translate.german"), lines=2, max_lines=6, value=examples()[0],
                             placeholder=L("ui.translate.placeholder"), elem_id="src")
            # the button under its box: on a desktop both stay above the fold, beside the result
            go_btn = gr.Button(L("ui.translate.button"), variant="primary", elem_id="translate-btn")
            gr.Examples(examples(), inputs=src, label=L("ui.translate.examples"), examples_per_page=12)
            settings = _settings(default_alpha)
        with gr.Column(scale=1):
            out = gr.Textbox(label=L("ui.translate.english"), interactive=False, elem_id="out")
            reference = gr.Markdown(elem_id="reference")  # a scored pair's reference (the Score tab opens one)
            status = gr.Markdown(elem_id="status")
            # the public API's status line (English), kept out of sight: the page shows its own, in its language
            api_status = gr.Markdown(visible=False)
            probs = gr.HTML(elem_id="token-probs")
            # a beam search's final hypotheses (its view shows them), a row opening its own in every tab
            nbest_note = gr.Markdown(elem_id="nbest-note")
            nbest = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="nbest",
                                 column_widths=["11%", "43%", "17%", "17%", "12%"])
            # one click downloads the translation's file, which its view writes (gr.DownloadButton)
            export = gr.DownloadButton(L("ui.translate.export"), size="sm", interactive=False, elem_id="export-btn")
            # its numbers as CSV and NumPy files, written on a click (app/exports.py)
            numbers = download("ui.translate.numbers", "numbers-btn")
    return (src, settings, go_btn, out, (status, api_status), probs, export,
            dict(nbest_note=nbest_note, nbest=nbest, reference=reference), numbers)


def _wire_replay(tab, step, buttons, lang, model):
    """The replay's slider and buttons, and the language switch, which redraws the tab's views keeping the step
    (and reads the header's `model` menu, as the status view does)."""
    outputs, named = tab.outputs, dict(ins=tab.state, step=step, lang=lang)
    views, moved = ({name: outputs[name] for name in names} for names in (STEP_VIEWS, REPLAY))
    # the slider's own event fires on the user's input only: a new translation and the buttons send the step's
    # views with the slider's new value, so nothing is drawn twice
    step.input(by_component(in_language(decoding_step), views), None, list(views.values()), inputs_kwargs=named,
               trigger_mode="always_last", api_visibility="private")
    for button, move in zip(buttons, (previous_step, next_step)):
        # a click while the last one runs waits for it, then moves on from the step it reached
        button.click(by_component(in_language(move), moved), None, list(moved.values()), inputs_kwargs=named,
                     trigger_mode="always_last", api_visibility="private")

    def relabel_replay(page, lang, ins, step, model, tabs):
        return relabel(tab, page, lang, ins, step, model, tabs)
    relabel_replay.__name__ = "relabel"
    read = dict(named, page=tab.page, model=model, tabs=tab.page.tabs)
    lang.change(relabel_replay, None, list(outputs.values()), inputs_kwargs=read, js=telling_tabs(read),
                api_visibility="private")


def translating(menu):
    """The translate event's function, given the header's menu of models (app/header.py): the sentence in the box
    translated with the settings, by the model chosen (app/translating.py translate). A new choice of model is one
    of its triggers: the page's sentence is translated again on it, so that every view shows the model the menu
    names; where the kept translation is that model's already (a link's, which the page load translated on it), or
    there is none yet (the page load translates), the choice changes nothing."""
    def translate_on(text, method, beam, alpha, temperature, top_k, max_len, previous, model, evt: gr.EventData):
        chose = evt is not None and getattr(evt.target, "_id", None) == menu._id
        if chose and (previous is None or getattr(previous, "model", None) == model):
            return gr.skip(), gr.skip(), gr.skip()
        return translate(text, method, beam, alpha, temperature, top_k, max_len, previous, model)
    translate_on.__name__ = "translate"
    return translate_on


def build(demo, page, state, default_alpha, lang, model=None):
    """Lay out the tab and wire its events. Returns its Tab (app/views.py): its views (which each new translation
    draws, see app/ui.py) and, in `more`, `translated` (the translate event, run by the button, by Enter in the
    text box and by a new choice of the header's `model` menu; the page load translates through app/links.py), its
    `form` (the box and the settings, in the order translate() takes them), its `results` (the English and the API's
    status line), which a link fills in, and `model`, the menu (a page built without one: the page's own model)."""
    with gr.Tab(L("ui.tab.translate"), id="translate") as tab:
        model = gr.State(None) if model is None else model
        src, settings, go_btn, out, (status, api_status), probs, export, nbest, (numbers_btn, numbers) = \
            _layout(default_alpha)
        step, buttons, step_views = _step_replay()
    translated = gr.on([go_btn.click, src.submit, model.change], translating(model), [src, *settings, state, model],
                       [out, api_status, state], api_name="translate", show_progress_on=[out],
                       concurrency_limit=1, concurrency_id="model")
    # where the result is off the screen (a phone, which stacks the columns), the click brings it into view
    go_btn.click(None, js=page_js.function("translate-result"))
    # the public API's status line is English, and goes to a hidden box; on the page, a problem with the input is
    # said in the page's language (a translation's status line is, by its view)
    translated.then(in_language(input_notice), None, status, inputs_kwargs=dict(typed=src, ins=state, lang=lang),
                    api_visibility="private")
    # the token strip first: a translation's progress shows on it (app/ui.py)
    # a row of the n-best table: its hypothesis becomes the translation kept (app/ui.py draws it in every tab)
    picked = nbest["nbest"].select(pick_hypothesis, [state], [out, state], api_visibility="private",
                                   concurrency_limit=1, concurrency_id="model", show_progress_on=[out])
    numbers_btn.click(numbers_files, [state], numbers, api_visibility="private")
    outputs = dict(probs=probs, status=status, step=step, export=export, numbers=numbers, **nbest, **step_views)
    view = Tab(WHERE, VIEWS, dict(model=model), outputs, page, lang, state,
               more=dict(translated=translated, picked=picked, form=[src, *settings], results=[out, api_status],
                         model=model)).wire(tab, relang=False, show_progress_on=[probs])
    _wire_replay(view, step, buttons, lang, model)
    return view
