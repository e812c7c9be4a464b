"""Attention maps as figures: one head, a layer's heads, every layer by every head. Pure builders: maps (tensors)
and tokens in, a Plotly figure out, its words in the event's language (app.i18n). The Attention tab draws them
from the Inspection; the Heads tab draws a changed model's maps with some heads shown as switched off, the Why
tab puts one token's cross-attention beside its attributions (rounded, positions)."""
import numpy as np
import plotly.graph_objects as go

from ..common import label, panel_grid, phone_width, title_room, top_colorbar, wrap_title
from ..i18n import text, texts

_t = texts("attention")

SCALE = "Blues"
OFF_SCALE = [[0, "#f4f4f4"], [1, "#6b6b6b"]]  # a switched-off head's map, in grey
DECIMALS = 3  # what a colour scale can show; a hover shows the same three decimals


def attention_maps(ins, kind):
    """(maps (L, H, Tq, Tk), query tokens, key tokens) of one kind of attention of an Inspection."""
    maps = getattr(ins, kind)
    q = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    k = ins.tgt_tokens if kind == "decoder" else ins.src_tokens
    return maps, q, k


def hover():
    """A cell's hover: the query and key positions, the weight, the panel's name."""
    query, key, weight = (_t(w) for w in ("query", "key", "weight"))
    return f"{query} %{{y}} → {key} %{{x}}<br>{weight} %{{z:.3f}}<extra>%{{fullData.name}}</extra>"


def rounded(weights):
    """Attention weights as a float32 array rounded to 3 decimals: plotly sends numpy arrays to the browser as
    typed arrays (4 bytes a weight), and the rounding is all a colour can show."""
    return np.round(weights.detach().float().cpu().numpy(), DECIMALS)


def positions(tokens):
    """One axis category per position, named by position and token ("3 ▁Hunde"): repeated tokens stay apart,
    and a hover names both without a label per cell."""
    return [f"{i} {label(t)}" for i, t in enumerate(tokens)]


def _axis(tokens=None, **kw):
    """A category axis; labelled with the tokens where they are given, else without tick labels."""
    if tokens is None:
        return dict(type="category", showticklabels=False, **kw)
    return dict(type="category", tickmode="array", tickvals=positions(tokens), ticktext=[label(t) for t in tokens],
                automargin=False, **kw)


def _heatmap(weights, q_tokens, k_tokens, name, colorscale=SCALE, **kw):
    """A heatmap trace as a dict: plotly validates a figure built of dicts once, in go.Figure."""
    return dict(type="heatmap", z=rounded(weights), x=positions(k_tokens), y=positions(q_tokens), zmin=0, zmax=1,
                colorscale=colorscale, name=name, hovertemplate=hover(), **kw)


def attention_heatmap(weights, q_tokens, k_tokens, title=""):
    """One head: weights (Tq, Tk), rows are the attending (query) tokens, columns the attended keys."""
    title = wrap_title(title)
    # the colour bar under the title: at the right, it took 80 px of a phone's width and started off-screen on a
    # sentence of 12 pieces
    below = title_room(title)
    height = max(380, below + 160 + 26 * len(q_tokens))
    bar = top_colorbar(below, height, len=0.6, title=dict(text=_t("weight"), side="bottom"))
    fig = go.Figure([_heatmap(weights, q_tokens, k_tokens, "", colorbar=bar)])
    fig.update_layout(title=title, height=height, margin=dict(l=110, r=10, t=below + 68, b=110),
                      xaxis=_axis(k_tokens, tickangle=-90), yaxis=_axis(q_tokens, autorange="reversed"))
    return phone_width(fig, len(k_tokens), room=130)  # the query labels at the left


def small_multiples(maps, q_tokens, k_tokens, names, cols, title, height, gap=(0.03, 0.08), notes=None, grey=()):
    """Heatmaps of maps (n, Tq, Tk) in a grid of `cols` columns sharing one colour scale, each named by `names`
    (in its hover, and above it unless other `notes` label the grid); the panels numbered in `grey` in grey."""
    panels = [([_heatmap(m, q_tokens, k_tokens, name, OFF_SCALE if i in grey else SCALE, showscale=i == 0)], name,
               _axis(), _axis(autorange="reversed")) for i, (m, name) in enumerate(zip(maps, names))]
    return panel_grid(panels, cols, wrap_title(title), height, gap, notes, margin=dict(l=10, r=40, t=90, b=10))


def head_grid(maps, q_tokens, k_tokens, title="", cols=4, off=()):
    """All heads of one layer: maps (H, Tq, Tk) as small heatmaps sharing one colour scale; the heads in `off`
    (switched off in the model that made the maps) in grey and named so."""
    rows = (maps.size(0) + cols - 1) // cols
    names = [label(text("heads.maps.off", head=h)) if h in off else _t("head", head=h) for h in range(maps.size(0))]
    fig = small_multiples(maps, q_tokens, k_tokens, names, cols, title, height=70 + 230 * rows, grey=set(off))
    return phone_width(fig, cols * len(k_tokens), per=4, room=60)  # unlabelled cells: 4 px each, a panel apart


def layer_head_overview(maps, q_tokens, k_tokens, title=""):
    """Every layer (rows) by every head (columns) as small multiples: maps (L, H, Tq, Tk)."""
    L, H = maps.shape[:2]
    names = [_t("layer-head", layer=l, head=h) for l in range(L) for h in range(H)]
    notes = ([dict(text=_t("head", head=h), x=(h + 0.5) / H, y=1, yanchor="bottom") for h in range(H)] +
             # the rows' names at their left: a phone, which scrolls this figure sideways, shows its left first
             [dict(text=_t("layer", layer=l), x=0, y=1 - (l + 0.5) / L, xanchor="right", xshift=-4, textangle=-90)
              for l in range(L)])
    fig = small_multiples(maps.flatten(0, 1), q_tokens, k_tokens, names, H, title, height=60 + 120 * L,
                          gap=(0.01, 0.03), notes=notes)
    # one colour axis for the panels, which a phone's layout moves under the title (a trace's own colour bar it
    # could not reach)
    fig.update_traces(coloraxis="coloraxis", colorscale=None, zmin=None, zmax=None, showscale=None)
    fig.update_layout(margin=dict(l=34), coloraxis=dict(colorscale=SCALE, cmin=0, cmax=1))
    # (the scale as plotly.py wrote it: a name in `meta`, which plotly.py does not read, plotly.js reads otherwise)
    phone = _phone_overview(L, H, title_room(fig.layout.title.text), fig.layout.coloraxis.colorscale)
    return fig.update_layout(meta=dict(phone_layout=phone))


PHONE_COLS = 4  # a phone's overview: each layer's heads in rows of this many
PHONE_PANEL_PX, PHONE_LABEL_PX, PHONE_LAYER_GAP_PX = 64, 18, 14  # a panel's height, a head's name above it, a gap


def _phone_overview(L, H, below, scale):
    """The overview's layout on a phone (app/page/phone-width.js lays it over the figure's own on a screen of 640
    px or less): each layer's heads wrap into rows of PHONE_COLS, each head named above its panel and each layer
    at the left of its rows, in a figure as tall as that takes. Eight heads across a 390 px phone left a finger
    swiping to the last four (a 640 px figure) or 3 px a cell (the phone's width). The colour bar under the title
    (`below` px from the top; its colours `scale`): at the right it took a fifth of the width."""
    cols = min(PHONE_COLS, H)
    per_layer = -(-H // cols)
    rows = L * per_layer
    row_px = PHONE_LABEL_PX + PHONE_PANEL_PX
    plot = rows * row_px + (L - 1) * PHONE_LAYER_GAP_PX
    gap = 0.04
    w = (1 - gap * (cols - 1)) / cols
    layout, notes = {}, []
    for layer in range(L):
        for h in range(H):
            r, c, i = layer * per_layer + h // cols, h % cols, layer * H + h
            top = 1 - (r * row_px + layer * PHONE_LAYER_GAP_PX + PHONE_LABEL_PX) / plot
            x0, ax = c * (w + gap), "" if i == 0 else str(i + 1)
            layout[f"xaxis{ax}"] = dict(domain=[x0, min(1.0, x0 + w)])
            layout[f"yaxis{ax}"] = dict(domain=[max(0.0, top - PHONE_PANEL_PX / plot), top])
            notes.append(dict(text=_t("head", head=h), x=x0 + w / 2, y=top, yanchor="bottom", font=dict(size=11)))
        middle = 1 - (layer * (per_layer * row_px + PHONE_LAYER_GAP_PX) + per_layer * row_px / 2) / plot
        notes.append(dict(text=_t("layer", layer=layer), x=0, y=middle, xanchor="right", xshift=-4, textangle=-90))
    margin = dict(l=34, r=10, t=below + 60, b=10)
    height = plot + margin["t"] + margin["b"]
    bar = top_colorbar(below, height, len=0.6, title=dict(text=_t("weight"), side="bottom"))
    return dict(layout, annotations=[dict(xref="paper", yref="paper", showarrow=False, **n) for n in notes],
                height=height, margin=margin, coloraxis=dict(colorscale=scale, cmin=0, cmax=1, colorbar=bar))
