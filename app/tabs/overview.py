"""The Overview tab: the architecture of Figure 1 of the paper as an SVG, with the tensor shapes of the last
translation; clicking a block opens the tab that explores it. The drawing is app/figures/overview.py's."""
import gradio as gr

from .. import page as page_js
from ..figures.overview import diagram_html
from ..i18n import L, text
from ..shared import chosen, model_of, trained_here
from ..views import Tab, View


def sizes(cfg):
    """The model's sizes, as the line above the diagram says them."""
    return dict(layers=cfg["N"], d_model=cfg["d_model"], heads=cfg["h"], d_ff=cfg["d_ff"], vocab=cfg["src_vocab"])


def overview_svg(ins, model=None):
    """The architecture diagram of the model that made the last translation, with its shapes (before the first,
    of the header's `model`, with S and T for the lengths)."""
    tr = chosen(model) if ins is None else model_of(ins)
    lengths = (None, None) if ins is None else (len(ins.src_tokens), len(ins.tgt_tokens))
    return diagram_html(tr.config, *lengths, start=tr.tokenizer.id_to_piece(tr.start_id),  # <s>, or Marian's <pad>
                        trained=trained_here(tr))


def overview_view(ins, model=None):
    """The diagram (overview_svg) and the line of its model's sizes above it."""
    tr = chosen(model) if ins is None else model_of(ins)
    return dict(diagram=overview_svg(ins, model), sizes=text("ui.overview.model", **sizes(tr.config)))


def placeholder(model=None):
    """The diagram before a translation (S and T for the lengths), in the page's language."""
    return overview_view(None, model)


# the tab's one view: the diagram with the translation's shapes; before a translation, and when it is hidden and a
# new translation comes, with S and T (drawn in the page's language when the tab is shown)
WHERE = ("overview",)
VIEWS = [View("overview/diagram", WHERE, overview_view, outputs=("diagram", "sizes"), uses=("model",),
              blank=placeholder)]


def build(cfg, page, state, lang, model=None):
    """Lay out the tab and wire its opening; returns its Tab (app/views.py): the diagram, which a new translation
    draws when the tab is on screen (see app/ui.py), of the model the header chose (`model`, the menu)."""
    with gr.Tab(L("ui.tab.overview"), id="overview") as tab:
        sized = gr.Markdown(L("ui.overview.model", **sizes(cfg)), elem_id="overview-model")
        diagram = gr.HTML(js_on_load=page_js.on_load("overview-diagram"), elem_id="diagram")  # a block opens its tab
        model = gr.State(None) if model is None else model
    return Tab(WHERE, VIEWS, dict(model=model), dict(diagram=diagram, sizes=sized), page, lang, state).wire(tab)
