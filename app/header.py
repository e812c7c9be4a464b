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


def menu():
    """The header's menu: every model this server can open (app.models.MODELS), named as a reader reads them, the
    page's own first and chosen."""
    return gr.Dropdown(model_choices(MODELS.names()), value=MODELS.default, label=L("ui.model.menu"),
                       elem_id="model-menu", scale=3, min_width=220, interactive=True)


def line():
    """The line naming the page's own model (its words in both languages, as the page loads); `wire` writes it
    for the model chosen."""
    tr = MODELS.get()
    key, values = model_line(tr.config, model_dir())
    return gr.Markdown(L(key, **values), elem_id="model-line")


def unknown_note(wrong, model):
    """The note under the menu, in the event's language: a link's model this server does not have (`wrong`, the
    name as the link gave it, escaped), and the model the page stays on; empty where there is none."""
    if not wrong:
        return ""
    from .figures.compare import model_name
    return text("ui.model.unknown", name=md_literal(str(wrong)[:100]), model=md_literal(model_name(model or MODELS.default)),
                names=", ".join(md_literal(n) for n in MODELS.names()))


def wire(demo, model, model_line, note, lang):
    """The header's events: the line and the note drawn in the page's language for the model chosen (and a link's
    name refused: the state `wrong`, which app/links.py's load sets), and the choice recorded in the address.
    Returns `wrong`."""
    wrong = gr.State(None)

    def header(model, wrong):
        return header_line(model), unknown_note(wrong, model)
    # in the queue: a model chosen the first time is loaded here (a second or so), or by the translation beside it
    gr.on([model.change, wrong.change, lang.said.change], in_language(header), None, [model_line, note],
          inputs_kwargs=dict(model=model, wrong=wrong, lang=lang), api_visibility="private",
          show_progress="hidden")
    model.input(lambda: None, None, wrong, api_visibility="private", queue=False, show_progress="hidden")
    model.change(None, model, None, js=page_js.function("record-model", MODELS.default))
    return wrong
