"""The Learn tab: a guided path through The Annotated Transformer, one idea a step, in the order of the study
note this project serves, each step on the shipped model and the learner's own sentence.

A step is a few sentences (locale/<lang>.json, `learn.<key>.*`), a question to answer before its answer is
shown (the answer computed from the model and the sentence), one action (a slider or a choice) that redraws the
step's live figure, and a button that opens the full tab at the same place. Predict, then see: until the learner
checks the answer, the figure and its fact line show the mechanism but keep back what would give the answer away
(a number, an axis's scale, a hover, the pieces asked about); a wrong first pick gets one more try, and the
second check, or a right first one, shows it and finishes the step. The session's progress remembers which steps
were checked and which were right at the first try, and the path shows the two apart.
Nothing here runs the model for a step but what the step itself needs: the translation's Inspection, the
Inside tab's recorded pass (kept per translation), or a tiny model from the Lab. The steps and their questions
are app/learn_path.py's, their figures app/figures/learn.py's; this module shows them and wires the tab.
"""
import html
import json
from types import SimpleNamespace

import gradio as gr

from .. import page as page_js
from ..common import clamp, fitted_plot, label
from ..i18n import L, in_language, text
from ..learn_path import (
    STEPS,
    _value,
    figure_and_fact,
    first_try,
    missed,
    new_progress,
    question_mark,
    quiz_state,
    revealed_first,
    step_of,
    try_again,
    verdict,
)
from ..shared import examples
from ..translating import notice_lines, refused, translation_notices
from ..translating import translate as translate_fn
from ..views import Tab, View, by_component

WHERE = ("learn",)
# what the tab shows for the step on screen, by name
OUTPUTS = ("path", "head", "body", "slider", "choice", "figure", "fact", "question", "answer", "open", "next", "where",
           "fill")
# the steps that ask for a piece of the translation (the decoder's target): the English under the sentence box
# would answer them
VEILS_ENGLISH = ("teacher",)


def progress_html(progress, veil=False):
    """The path as a row of numbered buttons, each opening its step and keeping its number: done ones (their
    answer shown) filled, those answered right at the first try apart from those answered after a miss, the current
    one outlined (and marked as the current step for a screen reader), each named by its step's title and how it
    went; then the count of steps done and of those right at the first try. `veil`: the step on screen asks for a
    word of the translation and its answer is not shown, so the English under the sentence box is veiled
    (app/page/style.css) while the path says so."""
    done, k = set((progress or {}).get("done", ())), step_of(progress)
    right = {s.key for s in STEPS if s.key in done and first_try(progress, s.key)}
    marks = []
    for i, s in enumerate(STEPS):
        how = "" if s.key not in done else " done right" if s.key in right else " done missed"
        cls = "learn-mark" + how + (" current" if i == k else "")
        name = f"{text('learn.step', k=i + 1, n=len(STEPS))} · {text(f'learn.{s.key}.title')}"
        if s.key in done:
            name = f"{name} ({text('learn.mark.right' if s.key in right else 'learn.mark.done')})"
        name = html.escape(name, quote=True)  # an attribute: its quotes escaped too
        current = ' aria-current="step"' if i == k else ""
        marks.append(f'<button type="button" class="{cls}" data-step="{i + 1}" title="{name}" aria-label="{name}"'
                     f'{current}>{i + 1}</button>')
    count = text("learn.progress", done=len(done), n=len(STEPS), right=len(right))
    nav = html.escape(text("learn.mark.nav"), quote=True)
    veil = ' data-veil="english"' if veil else ""
    return (f'<nav class="learn-path" data-step="{k + 1}"{veil} aria-label="{nav}">{"".join(marks)}'
            f'<span class="learn-count">{label(count)}</span></nav>')


def control_updates(step, ins, c):
    """The slider and the choice of `step`: the one it uses shown with its label, range and first value."""
    ctl, name = step.control, c.t(f"{step.key}.action")
    if ctl.kind == "slider":
        lo, hi = _value(ctl.lo, ins), _value(ctl.hi, ins)
        hi = max(hi, lo + ctl.step)  # a one-piece sentence still gets a slider that moves
        return (gr.update(visible=True, label=name, minimum=lo, maximum=hi, step=ctl.step,
                          value=clamp(_value(ctl.default, ins), lo, hi, type(lo))), gr.update(visible=False))
    choices = [(c.t(f"{step.key}.choice.{v}"), v) for v in ctl.choices]
    return gr.update(visible=False), gr.update(visible=True, label=name, choices=choices, value=ctl.default)


def render(ins, progress):
    """Everything the tab shows for the step on screen, by output name (OUTPUTS), in the event's language."""
    k = step_of(progress)
    step = STEPS[k]
    shown = dict(path=progress_html(progress), body=text(f"learn.{step.key}.body"),
                 head=f"### {text('learn.step', k=k + 1, n=len(STEPS))} · {text(f'learn.{step.key}.title')}",
                 open=gr.update(value=text("learn.open", tab=text(f"learn.tab.{step.opens}"))),
                 next=gr.update(interactive=k < len(STEPS) - 1),  # the last step has no next one
                 where=json.dumps({"step": k + 1, "tab": step.opens}))
    if ins is None:
        wait = text("learn.wait")
        return dict(shown, slider=gr.update(visible=False), choice=gr.update(visible=False), figure=None, fact=wait,
                    question=gr.update(choices=[], value=None, label=wait), answer="", fill="")
    c, (choices, right, values), pick = quiz_state(step, ins, progress)
    shown["path"] = progress_html(progress, veil=step.key in VEILS_ENGLISH and pick is None)
    # the tab's own boxes as the step drew them, for its button to fill (kept apart from `where`, whose change
    # brings the step's heading to the top of the screen: a new sentence must not)
    shown["fill"] = json.dumps(step.fill(c)) if step.fill is not None else ""
    slider, choice = control_updates(step, ins, c)
    fig, fact = figure_and_fact(step, c, _value(step.control.default, ins))
    # the question's fields are its answer's: a premise it states (never the answer itself)
    question = gr.update(choices=list(choices), value=None if pick is None else choices[pick],
                         label=c.t(f"{step.key}.q", **values))
    mark = question_mark(right, values)
    if pick is not None:
        answer = verdict(c, step.key, choices, right, values, pick, first=revealed_first(progress, step.key))
    else:  # a wrong first pick of this question: said, its one more try still to come
        first = missed(progress, step.key, mark)
        answer = "" if first is None or not 0 <= first < len(choices) else try_again(c, choices, first)
    return dict(shown, slider=slider, choice=choice, figure=fig, fact=fact, question=question, answer=answer)


def act(ins, progress, value):
    """The step's action: its figure redrawn for `value` (the step is done once its answer is shown)."""
    progress = dict(progress or new_progress())
    step = STEPS[step_of(progress)]
    if ins is None:
        return dict(progress=progress, path=progress_html(progress), figure=gr.skip(), fact=gr.skip())
    c, _, _ = quiz_state(step, ins, progress)
    fig, fact = figure_and_fact(step, c, value)
    veil = step.key in VEILS_ENGLISH and not c.revealed
    return dict(progress=progress, path=progress_html(progress, veil=veil), figure=fig, fact=fact)


def check(ins, progress, picked, slider, choice):
    """The learner's pick checked against the step's answer, computed. A wrong first pick is said wrong and gets
    one more try, the answer and the evidence kept back; a right first pick, or the second try whatever it is,
    shows the answer and the evidence the step kept back: its figure (at the action's value, `slider` or `choice`)
    and fact line, revealed. The step is then done (right at the first try, or not), and stays revealed in the
    session's progress (Next, Back, the language switch and a redraw keep it)."""
    if ins is None:
        return dict(progress=progress, path=gr.skip(), answer="", figure=gr.skip(), fact=gr.skip())
    progress = dict(progress or new_progress())
    step = STEPS[step_of(progress)]
    c, (choices, right, values), shown = quiz_state(step, ins, progress)
    if picked is None or picked not in choices:
        return dict(progress=progress, path=gr.skip(), answer=c.t("pick"), figure=gr.skip(), fact=gr.skip())
    pick, mark = choices.index(picked), question_mark(right, values)
    missed_first = missed(progress, step.key, mark)
    first = shown is None and missed_first is None  # this question's first check
    if first and pick != right:  # one more try: nothing of the answer shown yet
        progress["missed"] = {**(progress.get("missed") or {}), step.key: {"pick": pick, "quiz": mark}}
        return dict(progress=progress, path=progress_html(progress, veil=step.key in VEILS_ENGLISH),
                    answer=try_again(c, choices, pick), figure=gr.skip(), fact=gr.skip())
    got = first and pick == right if shown is None else revealed_first(progress, step.key)
    progress["revealed"] = {**(progress.get("revealed") or {}),
                            step.key: {"pick": pick, "quiz": mark, "first": got}}
    progress["missed"] = {k: v for k, v in (progress.get("missed") or {}).items() if k != step.key}
    if step.key not in progress["done"]:  # a question whose answer is shown is a step done
        progress["done"] = [*progress["done"], step.key]
    right_first = [k for k in progress.get("right") or () if k != step.key]
    progress["right"] = right_first + [step.key] if got else right_first
    c.revealed = True
    fig, fact = figure_and_fact(step, c, slider if step.control.kind == "slider" else choice)
    return dict(progress=progress, path=progress_html(progress),
                answer=verdict(c, step.key, choices, right, values, pick, first=got), figure=fig, fact=fact)


def go_to(ins, progress, k):
    """Step `k` (0-based, kept within the path) on screen: the progress, then what `render` draws."""
    progress = dict(progress or new_progress(), step=clamp(k, 0, len(STEPS) - 1))
    return dict(progress=progress, **render(ins, progress))


def back(ins, progress):
    return go_to(ins, progress, step_of(progress) - 1)


def forward(ins, progress):
    return go_to(ins, progress, step_of(progress) + 1)


def pick(ins, progress, evt: gr.EventData):
    """The step whose circle was clicked (its number, 1-based, as the browser sent it: kept within the path)."""
    try:  # EventData's attributes are the data trigger() sent; with none at all, it raises TypeError
        step = getattr(evt, "step", None)
    except TypeError:
        step = None
    k = clamp(step, 1, len(STEPS))
    return go_to(ins, progress, k - 1)


def sentence_notice(typed, ins=None):
    """Under the tab's sentence box, after a press of its Translate, in the event's language: what is wrong with
    the German typed (nothing typed, too long), saying that the steps stay with the last good translation (`ins`);
    else the notices the Translate tab's status line gives the translation (app/translating.py notices: cut to the
    model's length, longer than nearly every training sentence, not German, characters without a piece); else
    nothing."""
    problem = refused(typed, ins)
    if problem is not None:
        return problem
    return notice_lines(translation_notices(ins)).strip() if ins is not None else ""


def english_line(ins):
    """Under the tab's sentence box: the English the model gave for the page's sentence (escaped: the model's
    words are no markup), so that Translate answers beside the box it was pressed under; nothing before one."""
    if ins is None:
        return ""
    return (f'<p class="learn-english"><span>{html.escape(text("learn.english"))}</span> '
            f'<b lang="en">{html.escape(ins.translation)}</b>'
            f'<i class="learn-veiled">{html.escape(text("learn.english.veiled"))}</i></p>')


def follow(ins):
    """The tab's box, its notices and its English for the page's sentence (the Inspection's), once another tab
    translated it."""
    if ins is None:
        return gr.skip(), gr.skip(), gr.skip()
    return ins.source, sentence_notice(ins.source, ins), english_line(ins)


def follow_link(ins):
    """The tab's notice and English once the page's load translated a link's sentence; the box shows that sentence
    from the start (app/page/link-text.js), or what the reader has typed since, which stays."""
    return follow(ins)[1:]


# the tab's view: the step on screen, drawn for the translation when the tab is shown
VIEWS = [View("learn", WHERE, render, outputs=OUTPUTS, uses=("progress",))]


# ---- layout and events -----------------------------------------------------------------------------------

def _layout():
    gr.Markdown(L("ui.learn.intro"), elem_id="learn-intro")
    with gr.Row(equal_height=True, elem_id="learn-sentence"):
        # the page's first sentence, as the Translate tab's box (a link's replaces both as the page loads)
        src = gr.Textbox(label=L("ui.learn.sentence"), lines=1, max_lines=3, scale=4, elem_id="learn-src",
                         value=examples()[0])
        go_btn = gr.Button(L("ui.learn.translate"), variant="secondary", scale=1, min_width=88, elem_id="learn-go")
    english = gr.HTML(elem_id="learn-english")  # the English of the sentence the steps are drawn on
    notice = gr.Markdown(elem_id="learn-notice")  # what is wrong with the sentence typed, if anything
    path = gr.HTML(elem_id="learn-path", js_on_load=page_js.on_load("learn-pick"))  # a circle asks for its step
    head = gr.Markdown(elem_id="learn-head")
    body = gr.Markdown(elem_id="learn-body")
    # predict, then see: the question and its check before the evidence (the action, the figure, the fact line),
    # which keeps the answer back until the check
    question = gr.Radio([], label=" ", elem_id="learn-question")
    check_btn = gr.Button(L("ui.learn.check"), size="sm", elem_id="learn-check")
    answer = gr.Markdown(elem_id="learn-answer")
    slider = gr.Slider(0, 1, value=0, label=" ", visible=False, elem_id="learn-slider")
    choice = gr.Radio([], label=" ", visible=False, elem_id="learn-choice")
    figure = fitted_plot(elem_id="learn-figure", show_label=False)
    fact = gr.Markdown(elem_id="learn-fact")
    with gr.Row(elem_id="learn-nav"):
        back_btn = gr.Button(L("ui.learn.back"), elem_id="learn-back", min_width=88)
        open_btn = gr.Button(" ", elem_id="learn-open", min_width=88)
        next_btn = gr.Button(L("ui.learn.next"), variant="primary", elem_id="learn-next", min_width=88)
    where = gr.Textbox(visible=False, elem_id="learn-where")
    fill = gr.Textbox(visible=False, elem_id="learn-fill")  # what the step's button writes in its tab's boxes
    with gr.Accordion(L("ui.learn.glossary.title"), open=False, elem_id="learn-glossary"):
        gr.Markdown(L("ui.learn.glossary"))
    outputs = dict(path=path, head=head, body=body, slider=slider, choice=choice, figure=figure, fact=fact,
                   question=question, answer=answer, open=open_btn, next=next_btn, where=where, fill=fill)
    parts = SimpleNamespace(src=src, go=go_btn, slider=slider, choice=choice, question=question, answer=answer,
                            check=check_btn, back=back_btn, open=open_btn, next=next_btn, fact=fact, figure=figure,
                            path=path, where=where, notice=notice, english=english)
    return outputs, parts


def build(page, state, lang):
    """Lay out the tab and wire its events. Returns its Tab (app/views.py), with the progress state and the
    tab's parts in `more` (the sentence box is wired by `translates`, once the Translate tab exists)."""
    with gr.Tab(L("ui.tab.learn"), id="learn") as tab, gr.Column(elem_id="learn"):
        progress = gr.State(new_progress())  # inside the tab: a child of gr.Tabs that is not a tab upsets them
        outputs, p = _layout()
    view = Tab(WHERE, VIEWS, dict(progress=progress), outputs, page, lang, state,
               more=dict(progress=progress, parts=p)).wire(tab)
    _wire_step(view, p)
    return view


def _wire_step(view, p):
    """The step's action, its Check, the moves along the path, the step's buttons, and the language switch, which
    redraws the notice and the English under the sentence box in the new language (the step: the tab's listener)."""
    state, progress, lang, outputs = view.state, view.progress, view.lang, view.outputs
    named = dict(ins=state, progress=progress, lang=lang)

    def sent(fn, *names):
        out = dict(progress=progress, **{name: outputs[name] for name in names})
        return by_component(in_language(fn), out), list(out.values())
    for control in (p.slider, p.choice):
        fn, out = sent(act, "path", "figure", "fact")
        control.input(fn, None, out, inputs_kwargs=dict(named, value=control), trigger_mode="always_last",
                      api_visibility="private")
    fn, out = sent(check, "path", "answer", "figure", "fact")
    p.check.click(fn, None, out, inputs_kwargs=dict(named, picked=p.question, slider=p.slider, choice=p.choice),
                  api_visibility="private")
    for button, move in ((p.back, back), (p.next, forward), (p.path, pick)):
        fn, out = sent(move, *OUTPUTS)
        button.click(fn, None, out, inputs_kwargs=named, api_visibility="private")
    p.where.change(None, p.where, None, js=page_js.function("learn-where"))  # kept in the address (?learn=K)
    p.open.click(None, [p.where, outputs["fill"]], None, js=page_js.function("learn-open"))
    # the step itself is redrawn in a new language by the tab's listener (app/views.py), as every tab's is: a second
    # event drawing it raced the listener, and a page opened in Chinese could get its step drawn before the load's
    # translation came after the listener's drawing with it, the step's figure then gone for good
    lang.change(in_language(sentence_notice), None, p.notice, inputs_kwargs=dict(typed=p.src, ins=state, lang=lang),
                api_visibility="private").then(in_language(english_line), None, p.english,
                                               inputs_kwargs=dict(ins=state, lang=lang), api_visibility="private")


def translates(learn, translation, state, lang, linked=None):
    """The tab's sentence box translated as the Translate tab translates (its settings, its results), its text
    copied into that tab's box; and the box following the page's sentence, whichever tab (or link, `linked`)
    translated it, so that it always shows the sentence its steps are drawn from. Returns the event, which the
    page follows with the new translation's views."""
    p = learn.parts
    event = gr.on([p.go.click, p.src.submit], translate_fn, [p.src, *translation.form[1:], state, translation.model],
                  [*translation.results, state], api_visibility="private", concurrency_limit=1,
                  concurrency_id="model", show_progress_on=[p.figure])
    event.then(lambda s: s, p.src, translation.form[0], api_visibility="private")
    event.then(in_language(sentence_notice), None, p.notice, inputs_kwargs=dict(typed=p.src, ins=state, lang=lang),
               api_visibility="private")
    # the sentence and the settings it was translated with, recorded in the address as the Translate tab's are
    event.then(None, [p.src, *translation.form[1:]], None, js=page_js.function("record-translation"))
    # the English under the box (the last good translation's, after a sentence refused)
    event.then(in_language(english_line), None, p.english, inputs_kwargs=dict(ins=state, lang=lang),
               api_visibility="private")
    translation.translated.then(in_language(follow), None, [p.src, p.notice, p.english],
                                inputs_kwargs=dict(ins=state, lang=lang), api_visibility="private")
    if linked is not None:  # the box shows the linked sentence from the start, or what the reader typed since
        linked.then(in_language(follow_link), None, [p.notice, p.english],
                    inputs_kwargs=dict(ins=state, lang=lang), api_visibility="private")
    return event
