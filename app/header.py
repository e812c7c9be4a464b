"""The page's header: the menu of models beside the language switch, the line naming the session's model, and the
note that says a link's model is not one this server has.

The model is chosen per session: the menu's value is an input of every event that translates (app/translating.py
`translate`, whose Inspection records the model: `Inspection.model`) and a control of the tabs that describe a
model rather than a translation. `?model=<name>` in the address chooses it as the page loads (app/links.py), and a
choice is written back to the address (app/page/record-model.js).
"""
import gradio as gr

from . import page as page_js
from .common import md_literal
from .i18n import L, in_language, text
from .models import MODELS, model_choices
from .shared import header_line, model_dir, model_line

# px across the header's menu on a desktop: its longest name ("the shipped model, at initialisation", 36 characters)
# whole beside its arrow. Of its own size (scale 0) beside the language switch: at scale 2 it took two thirds of a
# 1400 px page's row (800 px). A phone gives it the row's width (app/page/style.css).
MENU_PX = 340


def menu():
    """The header's menu: every model this server can open (app.models.MODELS), named as a reader reads them, the
    page's own first and chosen."""
    return gr.Dropdown(model_choices(MODELS.names()), value=MODELS.default, label=L("ui.model.menu"),
                       elem_id="model-menu", scale=0, min_width=MENU_PX, interactive=True)


def line():
    """The line naming the page's own model (its words in both languages, as the page loads); `wire` writes it
    for the model chosen."""
    tr = MODELS.get()
    key, values = model_line(tr.config, model_dir())
    return gr.Markdown(L(key, **values), elem_id="model-line")


def unknown_note(wrong):
    """The note under the menu, in the event's language: a link's model this server does not have (`wrong`: the
    name as the link gave it, escaped, and the model the page stayed on); empty where there is none."""
    if not wrong:
        return ""
    from .figures.compare import model_name
    name, stayed = wrong
    return text("ui.model.unknown", name=md_literal(str(name)[:100]), model=md_literal(model_name(stayed)))


def header(model, wrong):
    """The header for the menu's model: its line, and the note on a link's model refused (`wrong`, which the
    link's load sets) while the menu still shows the model the page stayed on. A model chosen since ends the note
    for good: the event clears `wrong` itself, so that the one event writing the note also decides when it goes
    (a second event clearing `wrong` on the menu's input raced this one, whose answer drawn from the old `wrong`
    could follow and leave the note: the pairs p1 and p21)."""
    if wrong and (model or MODELS.default) != wrong[1]:
        return header_line(model), "", None
    return header_line(model), unknown_note(wrong), gr.skip()


def wire(demo, model, model_line, note, lang):
    """The header's events: the line and the note drawn in the page's language for the model chosen (and a link's
    name refused: the state `wrong`, which app/links.py's load sets, and `header` clears once another model is
    chosen), and the choice recorded in the address. Returns `wrong`."""
    wrong = gr.State(None)
    # in the queue: a model chosen the first time is loaded here (a second or so), or by the translation beside it;
    # a trigger while it runs draws the header once more after it, as the page then is
    gr.on([model.change, wrong.change, lang.said.change], in_language(header), None, [model_line, note, wrong],
          inputs_kwargs=dict(model=model, wrong=wrong, lang=lang), api_visibility="private",
          show_progress="hidden", trigger_mode="always_last")
    model.change(None, model, None, js=page_js.function("record-model", MODELS.default))
    return wrong


def _kept(options, value, multi):
    """`value` where `options` (values, or (label, value) pairs) have it, else their first (a multiselect: those of
    its values they have)."""
    values = [o[1] if isinstance(o, (tuple, list)) else o for o in options]
    if multi:
        return [v for v in (value or []) if v in values]
    return value if value in values else (values[0] if values else None)


def follow(model, controls, choices):
    """The controls of a tab whose ranges are a model's (a layer or head menu built from its config) follow the
    header's menu `model`: on a new choice, each of `controls` gets the choices `choices(config)` returns for that
    model's config.json (one list per control), keeping its value where the new choices have it and the first
    otherwise. Drawing stays the tab's listener's (the menu is one of its controls, or its translation follows).
    The choices of every model the server has are made once here, as the page is built: a label written in both
    languages (app.i18n.L with values) reaches the browser only then. Nothing for a page built without the menu."""
    if model is None:
        return
    configs = {name: MODELS.config(name) for name in MODELS.names()}
    made = {name: choices(c) for name, c in configs.items() if {"N", "h"} <= set(c)}

    def follow_model(name, *values):
        options = made.get(name) or choices(MODELS.config(name) or MODELS.config())
        return [gr.update(choices=o, value=_kept(o, value, getattr(c, "multiselect", False)))
                for c, o, value in zip(controls, options, values)]
    model.change(follow_model, [model, *controls], list(controls), api_visibility="private", show_progress="hidden")
