"""The positional encoding's figures: the sinusoids, their similarity, the relative-position map M_k and the
embeddings' scale. Pure builders: tensors in, a figure out, its words in the event's language (app.i18n)."""
import math

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.model import PositionalEncoding

from ..common import wrap_title
from ..i18n import texts
from .inside import histogram, small

_t = texts("positional")


def encoding(d_model, positions):
    """PE (positions, d_model) from the model's own PositionalEncoding module."""
    return PositionalEncoding(d_model, dropout=0.0, max_len=positions).pe[0]


def curves_figure(pe, dims):
    fig = go.Figure()
    for d in dims:
        kind = "sin" if d % 2 == 0 else "cos"
        fig.add_trace(go.Scatter(y=pe[:, d].numpy(), mode="lines", name=_t("curves.dim", d=d, kind=kind,
                                                                             i=d // 2)))
    # the legend below the plot (app/figures/margins.py puts it under the axis' labels): at its right, a phone's
    # plot kept about a quarter of the width
    fig.update_layout(title=_t("curves.title"), xaxis_title=_t("position"),
                      yaxis_title=_t("curves.value"), height=400, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", x=0, yanchor="top"))
    return fig


def heatmap_figure(pe):
    hover = _t("heatmap.hover", pos="%{y}", dim="%{x}", value="%{z:.3f}") + "<extra></extra>"
    fig = go.Figure(go.Heatmap(z=pe.numpy(), colorscale="RdBu", zmin=-1, zmax=1, hovertemplate=hover))
    fig.update_layout(title=_t("heatmap.title"), xaxis_title=_t("dimension"),
                      yaxis_title=_t("position"), yaxis_autorange="reversed", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def similarity_figure(pe):
    sim = pe @ pe.T  # (P, P): depends only on |pos_a - pos_b|
    fig = go.Figure(go.Heatmap(z=sim.numpy(), colorscale="Viridis",
                               hovertemplate="PE(%{y}) · PE(%{x}) = %{z:.2f}<extra></extra>"))
    fig.update_layout(title=_t("similarity.title"), xaxis_title=_t("position"),
                      yaxis_title=_t("position"), yaxis_autorange="reversed", height=420,
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


POSITIONS = 100  # the positions the relative-position figures cover, in the Positional tab and the Learn step alike


def relative_residual(pe, k):
    """max_dim |PE(pos + k) - M_k PE(pos)| for every pos with pos + k in range."""
    M = rotation(pe.size(1), k, pe.dtype)
    pred = pe[:-k] @ M.T if k > 0 else pe
    target = pe[k:]
    return (target - pred).abs().max(dim=1).values


def relative_figure(pe, k, words="positional", stacked=False, scale=True):
    """M_k's first dimensions beside the residual of PE(pos + k) = M_k PE(pos), in float32 and float64; and the
    two residuals' largest values. `words`: the table of its panels' words (positional, or learn); `stacked`:
    one panel above the other, each titled in lines above it (a phone's figure); without `scale`, the residual's
    shape shows but not its size (no ticks, no hover)."""
    w = texts(words)
    M = rotation(pe.size(1), k)
    res32 = relative_residual(pe.float(), k)
    res64 = relative_residual(encoding_f64(pe.size(1), pe.size(0)), k)
    titles = (w("relative.m", k=k), w("relative.residual"))
    if stacked:
        fig = make_subplots(rows=2, cols=1, row_heights=[0.32, 0.36], vertical_spacing=0.24)
        place = [dict(row=1, col=1), dict(row=2, col=1)]
        for (text, y) in zip(titles, (0.92, 0.36)):
            fig.add_annotation(text=wrap_title(text, 46), x=0, xanchor="left", y=y, yanchor="bottom", xref="paper",
                               yref="paper", showarrow=False, font=dict(size=12), align="left")
    else:
        fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6], subplot_titles=(
            wrap_title(titles[0], 24), wrap_title(titles[1], 30)))
        place = [dict(row=1, col=1), dict(row=1, col=2)]
    n = min(16, M.size(0))
    fig.add_trace(go.Heatmap(z=M[:n, :n].numpy(), colorscale="RdBu", zmin=-1, zmax=1, showscale=False,
                             hovertemplate="M[%{y}, %{x}] = %{z:.3f}<extra></extra>"), **place[0])
    fig.update_yaxes(autorange="reversed", **place[0])
    hover = {} if scale else dict(hoverinfo="skip")
    fig.add_trace(go.Scatter(y=res32.numpy(), mode="lines", name=w("relative.float32"), **hover), **place[1])
    fig.add_trace(go.Scatter(y=res64.numpy(), mode="lines", name="float64", **hover), **place[1])
    fig.update_yaxes(type="log", exponentformat="e", showticklabels=scale, **place[1])
    fig.update_xaxes(title_text=w("relative.pos"), **place[1])
    if stacked:
        fig.update_layout(xaxis=dict(domain=[0, 1]), xaxis2=dict(domain=[0, 1]), yaxis=dict(domain=[0.6, 0.92]),
                          yaxis2=dict(domain=[0, 0.36]))
    # the legend under the plots, from their left (WIDE_FIGURES: a phone shows the figure's left part first)
    fig.update_layout(height=410, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", x=0, yanchor="top"))
    return fig, res32.max().item(), res64.max().item()


def encoding_f64(d_model, positions):
    """PE in float64, straight from the paper's formula (the reference)."""
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i / d_model)
    pe = torch.zeros(positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def scale_figure(model):
    """Norms of the trained token embeddings, raw and times sqrt(d_model), beside the PE norm."""
    emb = model.src_embed[0]
    w = emb.lut.weight.detach().float()
    raw = w.norm(dim=1)
    scaled = raw * math.sqrt(emb.d_model)
    pe_norm = math.sqrt(emb.d_model / 2)  # each (sin, cos) pair has unit norm
    fig = go.Figure()
    # binned here: the browser gets 60 counts a histogram, not the 8,000 norms (109 kB of the tab's figures)
    for norms, name in ((raw, _t("scale.raw")), (scaled, _t("scale.scaled", d=emb.d_model))):
        centres, counts, width, _ = histogram([norms], bins=60)
        fig.add_trace(go.Bar(x=small(centres, 3), y=counts.int().numpy(), width=width, name=name, opacity=0.75))
    fig.add_vline(x=pe_norm, line=dict(color="#e4572e", width=3, dash="dash"),
                  annotation_text=f"‖PE(pos)‖ = √(d/2) = {pe_norm:.1f}")
    # the legend under the plot, from its left (WIDE_FIGURES: a phone shows the figure's left part first)
    fig.update_layout(barmode="overlay", title=_t("scale.title", n=w.size(0)), xaxis_title=_t("scale.norm"),
                      yaxis_title=_t("scale.pieces"), height=400, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", x=0, yanchor="top"))
    stats = {"raw_median": raw.median().item(), "scaled_median": scaled.median().item(), "pe_norm": pe_norm}
    return fig, stats
