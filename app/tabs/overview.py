"""The Overview tab: the architecture of Figure 1 of the paper as an SVG, with the tensor shapes of the last
translation; clicking a block opens the tab that explores it. The drawing is app/figures/overview.py's."""
import gradio as gr

from .. import page as page_js
from ..figures.overview import diagram_html
from ..i18n import L
from ..shared import get_translator
from ..views import Tab, View


def overview_svg(ins):
    """The architecture diagram with the shapes of the last translation (S and T before the first)."""
    tr = get_translator()
    lengths = (None, None) if ins is None else (len(ins.src_tokens), len(ins.tgt_tokens))
    return diagram_html(tr.config, *lengths, start=tr.tokenizer.id_to_piece(tr.start_id))  # <s>, or Marian's <pad>


def placeholder():
    """The diagram before a translation (S and T for the lengths), in the page's language."""
    return overview_svg(None)


# the tab's one view: the diagram with the translation's shapes; before a translation, and when it is hidden and a
# new translation comes, with S and T (drawn in the page's language when the tab is shown)
WHERE = ("overview",)
VIEWS = [View("overview/diagram", WHERE, overview_svg, outputs=("diagram",), blank=placeholder)]


def build(cfg, page, state, lang):
    """Lay out the tab and wire its opening; returns its Tab (app/views.py): the diagram, which a new translation
    draws when the tab is on screen (see app/ui.py)."""
    with gr.Tab(L("ui.tab.overview"), id="overview") as tab:
        gr.Markdown(L("ui.overview.model", layers=cfg["N"], d_model=cfg["d_model"], heads=cfg["h"],
                      d_ff=cfg["d_ff"], vocab=cfg["src_vocab"]))
        diagram = gr.HTML(js_on_load=page_js.on_load("overview-diagram"), elem_id="diagram")  # a block opens its tab
    return Tab(WHERE, VIEWS, {}, dict(diagram=diagram), page, lang, state).wire(tab)
