"""The Positional-encoding tab: the sinusoids, their similarity, the relative-position map M_k, the scale.

"We chose this function because we hypothesized it would allow the model to easily learn to attend by
relative positions, since for any fixed offset k, PE_{pos+k} can be represented as a linear function of
PE_{pos}."
"""
import math

import gradio as gr
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.model import Embeddings, PositionalEncoding

from ..common import clamp, code_panel, empty_figure, md_literal, wrap_title
from ..i18n import L, texts
from ..shared import get_translator
from ..views import View, control_changes, opener, refresh, tab_views

_t = texts("positional")  # the tab's words drawn at run time (positional.<key>) in a language


def encoding(d_model, positions):
    """PE (positions, d_model) from the model's own PositionalEncoding module."""
    return PositionalEncoding(d_model, dropout=0.0, max_len=positions).pe[0]


MAX_DIMS_CHARS = 200  # the dimensions box: a dozen numbers need far less


def parse_dims(typed, d_model, default=(4, 5, 6, 7), lang="en"):
    """Dimensions to plot from text like "4, 5, 6 7"; raises ValueError with a readable message (in `lang`)."""
    typed = str(typed or "")
    if len(typed) > MAX_DIMS_CHARS:
        raise ValueError(_t(lang, "error.long", n=f"{len(typed):,}"))
    parts = typed.replace(",", " ").split()
    if not parts:
        return [d for d in default if d < d_model]
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise ValueError(_t(lang, "error.number", got=repr(typed)))
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
        raise ValueError(_t(lang, "error.range", hi=d_model - 1, bad=shown))
    return dims[:12]


def curves_figure(pe, dims, lang="en"):
    fig = go.Figure()
    for d in dims:
        kind = "sin" if d % 2 == 0 else "cos"
        fig.add_trace(go.Scatter(y=pe[:, d].numpy(), mode="lines", name=_t(lang, "curves.dim", d=d, kind=kind,
                                                                             i=d // 2)))
    fig.update_layout(title=_t(lang, "curves.title"), xaxis_title=_t(lang, "position"),
                      yaxis_title=_t(lang, "curves.value"), height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def heatmap_figure(pe, lang="en"):
    hover = _t(lang, "heatmap.hover", pos="%{y}", dim="%{x}", value="%{z:.3f}") + "<extra></extra>"
    fig = go.Figure(go.Heatmap(z=pe.numpy(), colorscale="RdBu", zmin=-1, zmax=1, hovertemplate=hover))
    fig.update_layout(title=_t(lang, "heatmap.title"), xaxis_title=_t(lang, "dimension"),
                      yaxis_title=_t(lang, "position"), yaxis_autorange="reversed", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def similarity_figure(pe, lang="en"):
    sim = pe @ pe.T  # (P, P): depends only on |pos_a - pos_b|
    fig = go.Figure(go.Heatmap(z=sim.numpy(), colorscale="Viridis",
                               hovertemplate="PE(%{y}) · PE(%{x}) = %{z:.2f}<extra></extra>"))
    fig.update_layout(title=_t(lang, "similarity.title"), xaxis_title=_t(lang, "position"),
                      yaxis_title=_t(lang, "position"), yaxis_autorange="reversed", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def rotation(d_model, k, dtype=torch.float64):
    """M_k, block diagonal: for each frequency w_i = 10000^(-2i/d_model) the 2 × 2 block
    [[cos k w_i, sin k w_i], [-sin k w_i, cos k w_i]] takes (sin pos w_i, cos pos w_i) to
    (sin (pos + k) w_i, cos (pos + k) w_i)."""
    M = torch.zeros(d_model, d_model, dtype=dtype)
    for i in range(d_model // 2):
        w = math.exp(-2 * i * math.log(10000.0) / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = c, s
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -s, c
    return M


def relative_residual(pe, k):
    """max_dim |PE(pos + k) - M_k PE(pos)| for every pos with pos + k in range."""
    M = rotation(pe.size(1), k, pe.dtype)
    pred = pe[:-k] @ M.T if k > 0 else pe
    target = pe[k:]
    return (target - pred).abs().max(dim=1).values


def relative_figure(pe, k, lang="en"):
    M = rotation(pe.size(1), k)
    res32 = relative_residual(pe.float(), k)
    res64 = relative_residual(encoding_f64(pe.size(1), pe.size(0)), k)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6], subplot_titles=(
        wrap_title(_t(lang, "relative.m", k=k), 24), wrap_title(_t(lang, "relative.residual"), 30)))
    n = min(16, M.size(0))
    fig.add_trace(go.Heatmap(z=M[:n, :n].numpy(), colorscale="RdBu", zmin=-1, zmax=1, showscale=False,
                             hovertemplate="M[%{y}, %{x}] = %{z:.3f}<extra></extra>"), row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.add_trace(go.Scatter(y=res32.numpy(), mode="lines", name=_t(lang, "relative.float32")), row=1, col=2)
    fig.add_trace(go.Scatter(y=res64.numpy(), mode="lines", name="float64"), row=1, col=2)
    fig.update_yaxes(type="log", row=1, col=2, exponentformat="e")
    fig.update_xaxes(title_text=_t(lang, "relative.pos"), row=1, col=2)
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(x=0.99, xanchor="right", y=0.5, yanchor="middle"))
    return fig, res32.max().item(), res64.max().item()


def encoding_f64(d_model, positions):
    """PE in float64, straight from the paper's formula (the reference)."""
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i / d_model)
    pe = torch.zeros(positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def scale_figure(model, lang="en"):
    """Norms of the trained token embeddings, raw and times sqrt(d_model), beside the PE norm."""
    emb = model.src_embed[0]
    w = emb.lut.weight.detach().float()
    raw = w.norm(dim=1)
    scaled = raw * math.sqrt(emb.d_model)
    pe_norm = math.sqrt(emb.d_model / 2)  # each (sin, cos) pair has unit norm
    fig = go.Figure()
    fig.add_trace(go.Histogram(x=raw.numpy(), name=_t(lang, "scale.raw"), opacity=0.75, nbinsx=60))
    fig.add_trace(go.Histogram(x=scaled.numpy(), name=_t(lang, "scale.scaled", d=emb.d_model), opacity=0.75,
                               nbinsx=60))
    fig.add_vline(x=pe_norm, line=dict(color="#e4572e", width=3, dash="dash"),
                  annotation_text=f"‖PE(pos)‖ = √(d/2) = {pe_norm:.1f}")
    fig.update_layout(barmode="overlay", title=_t(lang, "scale.title", n=w.size(0)), xaxis_title=_t(lang, "scale.norm"),
                      yaxis_title=_t(lang, "scale.pieces"), height=360, margin=dict(l=10, r=10, t=50, b=10))
    stats = {"raw_median": raw.median().item(), "scaled_median": scaled.median().item(), "pe_norm": pe_norm}
    return fig, stats


# ---- callbacks -------------------------------------------------------------------------------------

def positional_view(d_model, positions, dims, k, lang="en"):
    """The curves of the chosen dimensions, the encoding and its similarities, and M_k for offset k (words in
    `lang`)."""
    d_model = clamp(d_model, 4, 1024)
    d_model -= d_model % 2
    positions = clamp(positions, 2, 1000)
    k = clamp(k, 1, positions - 1)
    try:
        dims = parse_dims(dims, d_model, lang=lang)
    except ValueError as e:
        msg = str(e)
        return empty_figure(msg), empty_figure(msg), empty_figure(msg), empty_figure(msg), f"**{md_literal(msg)}**"
    pe = encoding(d_model, positions)
    rel, res32, res64 = relative_figure(pe, k, lang)
    note = _t(lang, "relative.note", k=k, res32=f"{res32:.1e}", res64=f"{res64:.1e}")
    return curves_figure(pe, dims, lang), heatmap_figure(pe, lang), similarity_figure(pe, lang), rel, note


def embedding_scale(lang="en"):
    fig, s = scale_figure(get_translator().model, lang)
    note = _t(lang, "scale.note", raw=f"{s['raw_median']:.2f}", scaled=f"{s['scaled_median']:.1f}",
              pe=f"{s['pe_norm']:.1f}")
    return fig, note


# the tab's views, in the order of its outputs: the encoding drawn from the controls (d_model, positions,
# dimensions, k), and the trained model's scales, drawn once
VIEWS = [View("positional", ("positional",), positional_view, outputs=5,
              uses=("d_model", "positions", "dims", "k", "lang"), reads_translation=False),
         View("positional/scale", ("positional",), embedding_scale, outputs=2, uses=("lang",),
              reads_translation=False)]


def show(page, d_model, positions, dims, k, lang="en"):
    """The tab's views for the page as it is (app/views.py): drawn when shown and their controls changed."""
    return refresh(page, None, VIEWS, dict(d_model=d_model, positions=positions, dims=dims, k=k, lang=lang))


# ---- layout and events -----------------------------------------------------------------------------

def _layout(cfg):
    """The controls, then the views; returns (outputs in the order of VIEWS, controls by name)."""
    with gr.Row():
        d_model = gr.Slider(4, 512, value=cfg["d_model"], step=2, label="d_model", elem_id="pe-d")
        positions = gr.Slider(10, 500, value=100, step=1, label=L("ui.positional.positions"))
        dims = gr.Textbox(value="4, 5, 6, 7", label=L("ui.positional.dims"), elem_id="pe-dims")
        k = gr.Slider(1, 50, value=5, step=1, label=L("ui.positional.offset"))
    curves = gr.Plot(elem_id="pe-curves")
    with gr.Row():
        heat = gr.Plot()
        sim = gr.Plot()
    gr.Markdown(L("ui.positional.relative"))
    rel = gr.Plot(elem_id="pe-rel")
    note = gr.Markdown(elem_id="pe-note")
    gr.Markdown(L("ui.positional.scale"))
    scale = gr.Plot(elem_id="pe-scale")
    scale_note = gr.Markdown()
    code_panel(None, PositionalEncoding, Embeddings)
    return [curves, heat, sim, rel, note, scale, scale_note], dict(d_model=d_model, positions=positions, dims=dims, k=k)


def build(cfg, page, lang):
    """Lay out the tab and wire its controls; its views are first drawn when the tab is opened."""
    with gr.Tab(L("ui.tab.positional"), id="positional") as tab:
        outputs, controls = _layout(cfg)
    controls = dict(controls, lang=lang)  # the page's language: app/ui.py redraws the tab when it changes
    inputs = [page, *controls.values()]
    tab.select(opener(("positional",), show), inputs, outputs, api_visibility="private")
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs)
