"""The Attention tab: every head of the last translation, one at a time, a layer at a time, all at once, and
in bertviz's views.

All maps come from the Inspection kept in the session's state: changing kind, layer or head redraws from it
and never runs the model.
"""
from types import SimpleNamespace

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core import model as core_model

from ..bertviz_views import head_view_html, model_view_html
from ..common import clamp, code_panel, empty_figure, label, token_heatmap

KINDS = {
    "encoder": ("Encoder self-attention", "source", "source"),
    "decoder": ("Decoder self-attention (masked)", "decoder input", "decoder input"),
    "cross": ("Cross-attention (decoder → encoder)", "decoder input", "source"),
}
SCALE = "Blues"


def _hover(q_tokens, k_tokens):
    return [[f"{label(q)} → {label(k)}" for k in k_tokens] for q in q_tokens]


def attention_heatmap(weights, q_tokens, k_tokens, title=""):
    """One head: weights (Tq, Tk), rows are the attending (query) tokens, columns the attended keys."""
    return token_heatmap(weights.detach().float().cpu().numpy(), q_tokens, k_tokens, title, colorscale=SCALE,
                         text=_hover(q_tokens, k_tokens), colorbar=dict(title="weight"),
                         hovertemplate="%{text}<br>weight %{z:.3f}<extra></extra>")


def head_grid(maps, q_tokens, k_tokens, title="", cols=4):
    """All heads of one layer: maps (H, Tq, Tk) as small heatmaps sharing one colour scale."""
    H = maps.size(0)
    rows = (H + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"head {h}" for h in range(H)],
                        horizontal_spacing=0.03, vertical_spacing=0.08)
    hover = _hover(q_tokens, k_tokens)
    for h in range(H):
        fig.add_trace(go.Heatmap(z=maps[h].float().cpu().numpy(), zmin=0, zmax=1, colorscale=SCALE,
                                 showscale=h == 0, text=hover, name=f"head {h}",
                                 hovertemplate=f"head {h}<br>%{{text}}<br>weight %{{z:.3f}}<extra></extra>"),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    fig.update_layout(title=title, height=70 + 230 * rows, margin=dict(l=10, r=10, t=60, b=10))
    return fig


def layer_head_overview(maps, title=""):
    """Every layer (rows) by every head (columns) as small multiples: maps (L, H, Tq, Tk)."""
    L, H = maps.shape[:2]
    fig = make_subplots(rows=L, cols=H, horizontal_spacing=0.01, vertical_spacing=0.02,
                        row_titles=[f"layer {l}" for l in range(L)], column_titles=[f"head {h}" for h in range(H)])
    for l in range(L):
        for h in range(H):
            fig.add_trace(go.Heatmap(z=maps[l, h].float().cpu().numpy(), zmin=0, zmax=1, colorscale=SCALE,
                                     showscale=False, hovertemplate=f"layer {l}, head {h}<br>query %{{y}}, key %{{x}}"
                                     "<br>weight %{z:.3f}<extra></extra>"), row=l + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    fig.update_layout(title=title, height=60 + 120 * L, margin=dict(l=10, r=40, t=70, b=10))
    return fig


def attention_maps(ins, kind):
    """(maps (L, H, Tq, Tk), query tokens, key tokens) of one kind of attention of an Inspection."""
    maps = getattr(ins, kind)
    q = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    k = ins.tgt_tokens if kind == "decoder" else ins.src_tokens
    return maps, q, k


# ---- callbacks -------------------------------------------------------------------------------------

def attention_figures(ins, kind, layer, head):
    """Heatmap of one head, grid of the layer's heads, overview of all layers and heads."""
    if ins is None:
        msg = "Translate a sentence first."
        return empty_figure(msg), empty_figure(msg), empty_figure(msg)
    kind = kind if kind in KINDS else "encoder"
    maps, q, k = attention_maps(ins, kind)
    layer = clamp(layer, 0, maps.size(0) - 1)
    head = clamp(head, 0, maps.size(1) - 1)
    name = KINDS[kind][0]
    return (attention_heatmap(maps[layer, head], q, k, f"{name}, layer {layer}, head {head} (rows attend to columns)"),
            head_grid(maps[layer], q, k, f"{name}, all heads of layer {layer}"),
            layer_head_overview(maps, f"{name}: every layer × every head"))


def bertviz_views(ins):
    if ins is None:
        return "", ""
    return head_view_html(ins), model_view_html(ins)


def render(ins, kind, layer, head):
    """Every view of this tab for a new translation: bertviz's two views, then the three figures."""
    return (*bertviz_views(ins), *attention_figures(ins, kind, layer, head))


# ---- layout and events -----------------------------------------------------------------------------

def build(cfg, state):
    """Lay out the tab and wire its controls. Returns the controls and outputs of `render`, which each new
    translation runs (see app/ui.py)."""
    with gr.Row():
        kind = gr.Radio([(v[0], k) for k, v in KINDS.items()], value="encoder", label="attention", elem_id="kind")
        layer = gr.Dropdown(list(range(cfg["N"])), value=0, label="layer", elem_id="layer")
        head = gr.Dropdown(list(range(cfg["h"])), value=0, label="head", elem_id="head")
    with gr.Tabs():
        with gr.Tab("One head"):
            heat = gr.Plot(elem_id="heatmap")
        with gr.Tab("All heads of the layer"):
            grid = gr.Plot(elem_id="head-grid")
        with gr.Tab("Layers × heads"):
            overview = gr.Plot(elem_id="overview-grid")
        with gr.Tab("bertviz head view"):
            gr.Markdown("Lines link each token to the tokens it attends to; colours are heads. "
                        "Pick encoder, decoder or cross attention in the view's menu.")
            bv_head = gr.HTML(elem_id="bertviz-head")
        with gr.Tab("bertviz model view"):
            bv_model = gr.HTML(elem_id="bertviz-model")
    code_panel("The code", core_model.attention, core_model.MultiHeadedAttention)
    controls = [kind, layer, head]
    gr.on([c.change for c in controls], attention_figures, [state, *controls], [heat, grid, overview],
          api_visibility="private")
    return SimpleNamespace(controls=controls, outputs=[bv_head, bv_model, heat, grid, overview])
