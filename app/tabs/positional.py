"""The Positional-encoding tab: the sinusoids, their similarity, the relative-position map M_k, the scale.

"We chose this function because we hypothesized it would allow the model to easily learn to attend by
relative positions, since for any fixed offset k, PE_{pos+k} can be represented as a linear function of
PE_{pos}."
"""
import gradio as gr

from core.model import Embeddings, PositionalEncoding

from ..cache import per_language
from ..common import clamp, code_panel, empty_figure, fitted_plot, md_literal
from ..figures.positional import (
    POSITIONS,
    curves_figure,
    encoding,
    heatmap_figure,
    relative_figure,
    scale_figure,
    similarity_figure,
)
from ..i18n import L, texts
from ..shared import chosen, is_shipped, logged_steps
from ..views import Tab, View

_t = texts("positional")  # the tab's words drawn at run time (positional.<key>) in a language


MAX_DIMS_CHARS = 200  # the dimensions box: a dozen numbers need far less


def parse_dims(typed, d_model, default=(4, 5, 6, 7)):
    """Dimensions to plot from text like "4, 5, 6 7"; raises ValueError with a readable message (in the event's language)."""
    typed = str(typed or "")
    if len(typed) > MAX_DIMS_CHARS:
        raise ValueError(_t("error.long", n=f"{len(typed):,}"))
    parts = typed.replace(",", " ").split()
    if not parts:
        return [d for d in default if d < d_model]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise ValueError(_t("error.number", got=repr(typed)))
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
        raise ValueError(_t("error.range", hi=d_model - 1, bad=shown))
    return dims[:12]


# ---- callbacks -------------------------------------------------------------------------------------

@per_language(maxsize=32)
def positional_view(d_model, positions, dims, k, model=None):
    """The curves of the chosen dimensions, the encoding and its similarities, and M_k for offset k (the note says
    where the header's `model` lays its table out otherwise)."""
    d_model = clamp(d_model, 4, 1024)
    d_model -= d_model % 2
    positions = clamp(positions, 2, 1000)
    k = clamp(k, 1, positions - 1)
    try:
        dims = parse_dims(dims, d_model)
    except ValueError as e:
        msg = str(e)
        return dict(curves=empty_figure(msg), heat=empty_figure(msg), sim=empty_figure(msg), rel=empty_figure(msg),
                    note=f"**{md_literal(msg)}**")
    pe = encoding(d_model, positions)
    rel, res32, res64 = relative_figure(pe, k)
    note = _t("relative.note", k=k, last=positions - 1, res32=f"{res32:.1e}", res64=f"{res64:.1e}")
    if chosen(model).config.get("pe_layout") == "halves":  # the open model's table is not the paper's layout
        note += "\n\n" + _t("halves")
    return dict(curves=curves_figure(pe, dims), heat=heatmap_figure(pe), sim=similarity_figure(pe), rel=rel,
                note=note)


@per_language()
def embedding_scale(model=None):
    """The embedding norms of the model the header chose (`model`) beside the encoding's, in words that say only
    what its files tell: an embedding is called trained where a training log says so (the shipped model, one
    core.train exported; not the first point of a run, its initialisation), the factor's effect is read from the
    numbers, and a model that does not scale its embeddings is said to."""
    tr = chosen(model)
    fig, s = scale_figure(tr.model)
    trained = (is_shipped(tr.directory) or logged_steps(tr.directory) is not None) and tr.snapshot != "init"
    verdict = _t("scale.dominate" if s["pe_norm"] > s["raw_median"] else "scale.no-dominate")
    if not tr.config.get("scale_embedding", True):
        verdict += " " + _t("scale.unscaled")
    note = _t("scale.note" if trained else "scale.note-untrained", raw=f"{s['raw_median']:.2f}",
              scaled=f"{s['scaled_median']:.1f}", pe=f"{s['pe_norm']:.1f}", verdict=verdict)
    return dict(scale=fig, scale_note=note)


# the tab's views: the encoding drawn from the controls (d_model, positions, dimensions, k), and the open
# model's scales, drawn once
WHERE = ("positional",)
VIEWS = [View("positional", WHERE, positional_view, outputs=("curves", "heat", "sim", "rel", "note"),
              uses=("d_model", "positions", "dims", "k", "model"), reads_translation=False),
         View("positional/scale", WHERE, embedding_scale, outputs=("scale", "scale_note"), uses=("model",),
              reads_translation=False)]


# ---- layout and events -----------------------------------------------------------------------------

def _layout(cfg):
    """The controls, then the views; returns (outputs by name, controls by name)."""
    with gr.Row():
        d_model = gr.Slider(4, 512, value=cfg["d_model"], step=2, label="d_model", elem_id="pe-d")
        positions = gr.Slider(10, 500, value=POSITIONS, step=1, label=L("ui.positional.positions"))
        dims = gr.Textbox(value="4, 5, 6, 7", label=L("ui.positional.dims"), elem_id="pe-dims")
        k = gr.Slider(1, 50, value=5, step=1, label=L("ui.positional.offset"))
    curves = fitted_plot(elem_id="pe-curves")
    with gr.Row():
        heat = fitted_plot()
        sim = fitted_plot()
    gr.Markdown(L("ui.positional.relative"))
    rel = fitted_plot(elem_id="pe-rel")
    note = gr.Markdown(elem_id="pe-note")
    gr.Markdown(L("ui.positional.scale"))
    scale = fitted_plot(elem_id="pe-scale")
    scale_note = gr.Markdown()
    code_panel(None, PositionalEncoding, Embeddings)
    outputs = dict(curves=curves, heat=heat, sim=sim, rel=rel, note=note, scale=scale, scale_note=scale_note)
    return outputs, dict(d_model=d_model, positions=positions, dims=dims, k=k)


def build(cfg, page, lang, model=None):
    """Lay out the tab and wire its controls; its views are first drawn when the tab is opened, of the model the
    header's menu (`model`) chose."""
    with gr.Tab(L("ui.tab.positional"), id="positional") as tab:
        outputs, controls = _layout(cfg)
        controls["model"] = gr.State(None) if model is None else model
    return Tab(WHERE, VIEWS, controls, outputs, page, lang).wire(tab)
