"""Figures of one translation: attention heatmaps, head grids, decoding steps. Tensors in, plotly out.

Token axes are numeric with the pieces as tick labels: a categorical axis would merge repeated tokens.
"""
import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

KINDS = {
    "encoder": ("Encoder self-attention", "source", "source"),
    "decoder": ("Decoder self-attention (masked)", "decoder input", "decoder input"),
    "cross": ("Cross-attention (decoder → encoder)", "decoder input", "source"),
}
SCALE = "Blues"


def label(token):
    """A token as plotly text: plotly reads a subset of HTML in labels, so "<s>" would strike through."""
    return html.escape(str(token), quote=False)


def _axis(tokens, **kw):
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[label(t) for t in tokens], **kw)


def _hover(q_tokens, k_tokens):
    return [[f"{label(q)} → {label(k)}" for k in k_tokens] for q in q_tokens]


def attention_heatmap(weights, q_tokens, k_tokens, title=""):
    """One head: weights (Tq, Tk), rows are the attending (query) tokens, columns the attended keys."""
    w = weights.detach().float().cpu().numpy()
    assert w.shape == (len(q_tokens), len(k_tokens)), (w.shape, len(q_tokens), len(k_tokens))
    fig = go.Figure(go.Heatmap(
        z=w, zmin=0, zmax=1, colorscale=SCALE, text=_hover(q_tokens, k_tokens),
        hovertemplate="%{text}<br>weight %{z:.3f}<extra></extra>", colorbar=dict(title="weight")))
    fig.update_layout(title=title, height=max(340, 170 + 26 * len(q_tokens)), margin=dict(l=110, r=10, t=50, b=110),
                      xaxis=_axis(k_tokens, tickangle=-90, automargin=False),
                      yaxis=_axis(q_tokens, autorange="reversed", automargin=False))
    return fig


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


def step_candidates(ins, step):
    """Bar chart of the top candidates for the token at decoding step `step`, the chosen one marked."""
    cands = ins.topk[step]
    chosen = ins.out_tokens[step]
    labels = [c[0] for c in cands][::-1]
    probs = [c[1] for c in cands][::-1]
    colors = ["#e4572e" if c == chosen else "#4a7dc9" for c in labels]
    fig = go.Figure(go.Bar(x=probs, y=list(range(len(labels))), orientation="h", marker_color=colors,
                           text=[f"{p:.1%}" for p in probs], textposition="auto",
                           hovertemplate="%{customdata}: %{x:.3f}<extra></extra>",
                           customdata=[label(c) for c in labels]))
    fig.update_layout(title=f"Step {step + 1}: next-token candidates (chosen in red)", height=300,
                      xaxis=dict(range=[0, 1], title="probability"), yaxis=_axis(labels),
                      margin=dict(l=10, r=10, t=50, b=40))
    return fig


def mask_matrix(mask, row_tokens, col_tokens, title="", highlight_row=None):
    """A boolean mask (rows x cols) as a heatmap: 1 = may attend, 0 = blocked."""
    m = mask.float().cpu().numpy()
    fig = go.Figure(go.Heatmap(z=m, zmin=0, zmax=1, colorscale=[[0, "#f2f2f2"], [1, "#2f6db5"]], showscale=False,
                               text=[[("allowed" if v else "masked") for v in row] for row in m],
                               hovertemplate="row %{y} → col %{x}: %{text}<extra></extra>", xgap=1, ygap=1))
    if highlight_row is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=len(col_tokens) - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line=dict(color="#e4572e", width=3))
    fig.update_layout(title=title, height=max(280, 160 + 26 * len(row_tokens)), margin=dict(l=110, r=10, t=50, b=100),
                      xaxis=_axis(col_tokens, tickangle=-90, automargin=False),
                      yaxis=_axis(row_tokens, autorange="reversed", automargin=False))
    return fig


def _prob_color(p):
    """White (p = 0) to a saturated green (p = 1)."""
    r, g, b = (int(255 - (255 - c) * p) for c in (46, 160, 67))
    return f"rgb({r},{g},{b})"


def token_probs_html(ins):
    """The output tokens, each on a background coloured by the model's probability for it (escaped)."""
    spans = []
    for tok, p in zip(ins.out_tokens, ins.token_probs):
        text = html.escape(tok.replace("▁", " ").strip() or tok)
        spans.append(f'<span class="tok" title="p = {p:.3f}" style="background:{_prob_color(p)};'
                     f'color:{"#fff" if p > 0.6 else "#111"}">{text}<sub>{p:.2f}</sub></span>')
    legend = '<div class="tok-legend">probability of each chosen token given the tokens before it</div>'
    return f'<div class="tok-row">{"".join(spans)}</div>{legend}'


def decoder_input_html(ins, step):
    """Decoder input at `step` (what the decoder has seen so far) and the token it produces."""
    seen = " ".join(html.escape(t) for t in ins.tgt_tokens[:step + 1])
    out = html.escape(ins.out_tokens[step])
    return (f'<div class="step"><b>decoder input</b> <code>{seen}</code> &nbsp;→&nbsp; '
            f'<b>next token</b> <code class="chosen">{out}</code> '
            f'(p = {ins.token_probs[step]:.3f})</div>')
