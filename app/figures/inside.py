"""The Inside tab's figures: the model's modules and weights, a LayerNorm at work, the 1/sqrt(d_k) scale, the
residual stream, the feed-forward units and the logit lens, from a recorded pass (core/analysis/inside.py). Pure
builders, their words in the event's language (app.i18n); the Learn path draws some of the same things."""
import math
from html import escape

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn.functional as F

from core.analysis import inside as core
from core.model import PostNormSublayerConnection

from ..common import label, panel_grid, phone_width, title_room, token_axis, top_colorbar, wrap_title
from ..i18n import DEFAULT, table, text, texts
from .margins import text_width

MAX_CELLS = (64, 128)  # a weight heatmap's largest size sent to the browser (rows, columns)
BINS = 80  # of a weight histogram, computed here
BLUE, ORANGE, GREY = "#2f6db5", "#e4572e", "#9aa3ad"

say = texts("inside")  # the tab's words drawn at run time (inside.<key>) in the event's language


def small(x, decimals=4):
    """A tensor as a float32 array rounded for the browser (plotly sends numpy arrays as typed arrays)."""
    return np.round(torch.as_tensor(x).detach().float().cpu().numpy(), decimals)


def root_name():
    """The model itself, in the tree and the figures: "model" in the page's language."""
    return text("ui.inside.root")


def param_word(name):
    """A parameter's name in the page's language where it is a word (weight, bias), else as in the code (a_2)."""
    key = f"inside.param.{name}"
    return text(key) if key in table(DEFAULT) else name


def grid(panels, cols, title="", height=500, gap=(0.08, 0.14), **layout):
    """The tab's panel grid (app.common.panel_grid): panels of (traces, title, x-axis dict, y-axis dict)."""
    return panel_grid(panels, cols, title, height, gap, title_font=dict(size=13), **layout)


def tree_html(nodes, total):
    """The module tree as nested <details> (the top two levels open), each module with its class, its
    parameters counted once and its share; clicking a module's name selects it. Names from the code stay as
    they are; the words (the root's name, weight and bias, "tied to") are in the event's language."""
    children = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)

    def item(n):
        name = escape(n.name.rpartition(".")[2] or root_name())
        share = n.params / total
        tied = [escape(say("tree.tied", param=param_word(p), target=t)) for p, _, _, t in n.own if t]
        shapes = ", ".join(f"{param_word(p)} {'×'.join(map(str, s))}" for p, s, _, _ in n.own)
        head = (f'<span class="mod" data-path="{escape(n.name)}">{name}</span> <i>{escape(n.cls)}</i> '
                f'<span class="mod-n">{n.params:,} ({share:.1%})</span>'
                f'<span class="mod-bar"><span style="width:{100 * share:.1f}%"></span></span>'
                + (f' <span class="mod-shape">{escape(shapes)}</span>' if shapes else "")
                + (f' <span class="mod-tied">{say("sep").join(tied)}</span>' if tied else ""))
        kids = children.get(n.name, [])
        if not kids:
            return f'<div class="mod-leaf">{head}</div>'
        return (f'<details{" open" if n.depth < 2 else ""}><summary>{head}</summary>'
                f'{"".join(item(k) for k in kids)}</details>')

    return f'<div class="mod-tree">{item(children[None][0])}</div>'


def treemap_figure(nodes, total):
    """The modules as a treemap: each rectangle's area is its parameters (tied ones counted once)."""
    root = root_name()
    ids = [n.name or "model" for n in nodes]
    parents = ["" if n.parent is None else (n.parent or "model") for n in nodes]
    labels = [f"{label(n.name.rpartition('.')[2] or root)} ({n.cls})" for n in nodes]
    count = say("treemap.hover")  # formatted per module below
    hover = [f"{label(n.name or root)}<br>{n.cls}<br>"
             + label(count.format(count=f"{n.params:,}", share=f"{n.params / total:.1%}")) for n in nodes]
    # each rectangle writes its count and share, so that a phone needs no hover: a tap there zooms, and a hover
    # label would cover the labels it is about (meta.phone_hover, app/gradio_adapter.py PHONE_WIDTH_JS)
    fig = go.Figure(go.Treemap(ids=ids, parents=parents, labels=labels, values=[n.params for n in nodes],
                               branchvalues="total", hovertext=hover, hoverinfo="text", maxdepth=3,
                               textinfo="label+value+percent root"))
    fig.update_layout(title=f"{label(say('treemap.title'))}<br><sup>{label(say('treemap.hint'))}</sup>",
                      height=520, margin=dict(l=10, r=10, t=50, b=10), meta=dict(phone_hover=False),
                      separators=".,")
    return fig


def model_summary(model, cfg, nodes):
    """The configuration, the parameter count and what tying saves, in Markdown."""
    groups, saved = core.tying(model)
    total = nodes[0].params
    lines = [say("summary.config", N=cfg["N"], d_model=cfg["d_model"], d_ff=cfg["d_ff"], h=cfg["h"],
                 d_k=cfg["d_model"] // cfg["h"], vocab=f"{cfg['tgt_vocab']:,}", dropout=cfg["dropout"],
                 modules=len(nodes), total=f"{total:,}")]
    for names, n in groups:
        lines.append(say("summary.tying", names=", ".join(f"`{p}`" for p in names), n=f"{n:,}",
                         copies=len(names), saved=f"{saved:,}", share=f"{saved / (total + saved):.0%}",
                         untied=f"{total + saved:,}"))
    return "\n\n".join(lines)


def downsampled(w):
    """A 2-D weight made at most MAX_CELLS by averaging blocks; returns it and the block size."""
    R, C = w.shape
    br, bc = math.ceil(R / MAX_CELLS[0]), math.ceil(C / MAX_CELLS[1])
    if br == bc == 1:
        return w, (1, 1)
    pooled = F.avg_pool2d(w[None, None], (br, bc), ceil_mode=True)[0, 0]  # edge blocks: their cells' mean
    return pooled, (br, bc)


def weight_figure(path, module):
    """A module's weights: its first 2-D parameter as a (block-averaged) heatmap, else its 1-D parameters as
    lines, else its children's parameter counts."""
    own = dict(module.named_parameters(recurse=False))
    mats = {n: p for n, p in own.items() if p.dim() == 2}
    if mats:
        name, w = next(iter(mats.items()))
        w = w.detach().float()
        shown, (br, bc) = downsampled(w)
        lim = float(shown.abs().max()) or 1.0
        note = "" if br == bc == 1 else f"<br><sup>{label(say('weights.block', rows=br, cols=bc))}</sup>"
        hover = label(say("weights.hover", row="%{y}", col="%{x}", value="%{z:.4f}")) + "<extra></extra>"
        fig = go.Figure(go.Heatmap(z=small(shown), colorscale="RdBu_r", zmid=0, zmin=-lim, zmax=lim,
                                   hovertemplate=hover))
        fig.update_layout(title=wrap_title(f"{label(path)}.{name} {tuple(w.shape)}") + note, yaxis_autorange="reversed",
                          xaxis_title=say("weights.input"), yaxis_title=say("weights.output"))
    elif own:
        fig = go.Figure([go.Scatter(y=small(p), mode="lines", name=n) for n, p in own.items()])
        fig.update_layout(title=wrap_title(label(say("weights.by_index", module=path))),
                          xaxis_title=say("weights.index"))
    else:
        kids = [(n, sum(p.numel() for p in m.parameters())) for n, m in module.named_children()]
        fig = go.Figure(go.Bar(x=[label(n) for n, _ in kids], y=[c for _, c in kids], marker_color=BLUE))
        fig.update_layout(title=label(say("weights.children", module=path or root_name())),
                          yaxis_title=say("weights.parameters"))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def histogram(tensors, bins=BINS):
    """One histogram of `bins` bins over several tensors (binned here, so the browser gets `bins` numbers): bin
    centres, counts, bin width, and the values' count, mean and standard deviation."""
    vs = [t.detach().float().flatten() for t in tensors]
    lo, hi = min(float(v.min()) for v in vs), max(float(v.max()) for v in vs)
    hi = hi if hi > lo else lo + 1
    counts = sum(torch.histc(v, bins, lo, hi) for v in vs)
    n = sum(v.numel() for v in vs)
    mean = sum(float(v.double().sum()) for v in vs) / n
    var = max(sum(float(v.double().pow(2).sum()) for v in vs) - n * mean * mean, 0.0) / max(n - 1, 1)
    width = (hi - lo) / bins
    return lo + width * (torch.arange(bins) + 0.5), counts, width, (n, mean, math.sqrt(var))


def distribution_figure(path, module):
    """The distribution of a module's parameters (each of its own, else all below it together)."""
    own = dict(module.named_parameters(recurse=False))
    below = list(module.parameters())
    groups = {param_word(n): [p] for n, p in own.items()} or ({say("dist.all"): below} if below else {})
    if not groups:
        return go.Figure().update_layout(title=label(say("dist.none", module=path)), height=300)
    fig = go.Figure()
    for name, tensors in groups.items():
        x, counts, width, (n, mean, std) = histogram(tensors)
        fig.add_trace(go.Bar(x=small(x, 5), y=counts.int().numpy(), width=width, opacity=0.75,
                             name=label(say("dist.legend", name=name, count=f"{n:,}", mean=f"{mean:.3f}",
                                            std=f"{std:.3f}"))))
    fig.update_layout(title=wrap_title(label(say("dist.title", module=path or root_name()))), barmode="overlay",
                      height=420, xaxis_title=say("dist.value"), yaxis_title=say("dist.count"),
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.2))
    return fig


def norm_side(path):
    return "decoder" if path.startswith("decoder") else "encoder"


def is_post_norm(model):
    """Whether the model's LayerNorms follow their sublayers' residual sums (the config's norm "post": core.model's
    PostNormSublayerConnection, a class of its own since the paper's classes lost their branches)."""
    return any(isinstance(m, PostNormSublayerConnection) for m in model.modules())


def norm_place(path, post=False):
    """A LayerNorm's place: the key of its words (ui.inside.norm.<side>.<sub-layer>[-post] or .final) and their
    values; `post`: the model is post-norm (is_post_norm)."""
    side = norm_side(path)
    if path.endswith(f"{side}.norm"):
        return f"ui.inside.norm.{side}.final", {}
    parts = path.split(".")
    subs = ("self-attn", "ffn") if side == "encoder" else ("self-attn", "cross-attn", "ffn")
    post = "-post" if post else ""  # a post-norm model's LayerNorm follows its sublayer's residual sum
    return f"ui.inside.norm.{side}.{subs[int(parts[4])]}{post}", {"layer": int(parts[2])}


def norm_label(path, post=False):
    """A LayerNorm's place in words (for figures and notes): "encoder layer 0, before self-attention"."""
    key, values = norm_place(path, post)
    return text(key, **values)


def ln_vectors(x, gain, bias, eps, undo_gain=0.0, undo_bias=0.0):
    """What a LayerNorm does to one vector x (D): x-hat = (x - mean) / sqrt(var + eps), the output
    gain * x-hat + bias, and the output with the gain and bias moved `undo_gain` and `undo_bias` of the way
    to sqrt(var + eps) and the mean (at 1 and 1 the input comes back)."""
    mean = x.mean()
    sigma = torch.sqrt((x - mean).pow(2).mean() + eps)
    xhat = (x - mean) / sigma
    g = (1 - undo_gain) * gain + undo_gain * sigma
    b = (1 - undo_bias) * bias + undo_bias * mean
    return dict(input=x, normalised=xhat, output=core.layer_norm_standard(x, gain, bias, eps), moved=g * xhat + b, mean=mean, sigma=sigma,
                annotated=core.layer_norm_annotated(x, gain, bias, eps))


def layernorm_figure(v, title):
    """Input, normalised, and output (trained, and with the sliders' gain and bias) over the dimensions."""
    line = dict(type="scatter", mode="lines")
    t = {k: say(f"ln.{k}") for k in ("input", "normalised", "normalised_title", "output", "moved", "compare",
                                            "output_title")}
    # each panel's corner ticks (the first dimension, the lowest value) stand off their axes, apart
    apart = dict(ticklabelstandoff=4), dict(ticklabelstandoff=6)
    panels = [([dict(line, y=small(v["input"]), name=t["input"], line=dict(color=GREY))], t["input"], *apart),
              ([dict(line, y=small(v["normalised"]), name=t["normalised"], line=dict(color=BLUE))],
               t["normalised_title"], *apart),
              ([dict(line, y=small(v["output"]), name=t["output"], line=dict(color=ORANGE)),
                dict(line, y=small(v["moved"]), name=t["moved"], line=dict(color="#2a9d4b", dash="dot")),
                dict(line, y=small(v["input"]), name=t["compare"], line=dict(color=GREY, width=1))],
               t["output_title"], dict(apart[0], title=say("dimension")), apart[1])]
    return grid(panels, 1, wrap_title(title), height=660, gap=(0, 0.09), legend=dict(orientation="h", y=-0.08),
                margin=dict(l=10, r=10, t=120, b=10))


def forms_figure(v, title):
    """The Annotated Transformer's LayerNorm minus ours on the same vector, per dimension."""
    trace = dict(type="scatter", y=small(v["annotated"] - v["output"], 6), mode="lines", name=say("ln.minus"),
                 line=dict(color="#7b3fa0"))
    return go.Figure([trace], dict(title=wrap_title(title), height=300, xaxis=dict(title=say("dimension")),
                                   yaxis=dict(title=say("ln.difference")), margin=dict(l=10, r=10, t=50, b=10)))


def ln_params_figure(norms, post=False):
    """Every LayerNorm's trained gain a_2 and bias b_2 ({path: LayerNorm}), dimension by dimension (`post`: the
    model's norms follow their sublayers, Marian's post-norm)."""
    names = [norm_label(p, post) for p in norms]
    gains = torch.stack([m.a_2.detach().float() for m in norms.values()])
    biases = torch.stack([m.b_2.detach().float() for m in norms.values()])
    ticks = dict(type="category", autorange="reversed")
    panels = []
    for z, what, scale in ((gains, "gain", "Viridis"), (biases, "bias", "RdBu_r")):
        name = say(f"ln.{what}")
        hover = say("ln.hover", norm="%{y}", dim="%{x}", what=name, value="%{z:.3f}") + "<extra></extra>"
        trace = dict(type="heatmap", z=small(z, 3), y=names, colorscale=scale, hovertemplate=hover,
                     colorbar=dict(x=1.0 if what == "bias" else 0.46, len=0.9),
                     **({"zmid": 0} if what == "bias" else {}))
        panels.append(([trace], say("ln.params", name=name, mean=f"{float(z.mean()):.3f}",
                                    lo=f"{float(z.min()):.2f}", hi=f"{float(z.max()):.2f}"),
                       dict(title=say("dimension")), ticks if not panels else dict(ticks, showticklabels=False)))
    return grid(panels, 2, say("ln.params_title"), height=520, gap=(0.1, 0), titles_left=True,
                margin=dict(l=230, r=40, t=80, b=40))


def scale_data(rec, kind, layer, head):
    """The raw scores of one head, their d_k and mask, and the softmax statistics without and with the scale."""
    raw, dk, mask = core.scores(rec, kind, layer, head)
    return dict(raw=raw, dk=dk, mask=mask, plain=core.softmax_stats(raw, mask),
                scaled=core.softmax_stats(raw / math.sqrt(dk), mask))


def scale_figure(d, q_tokens, title):
    """Scores with and without the scale, and per query: the largest weight, the entropy, the Jacobian norm."""
    mask, s = d["mask"], math.sqrt(d["dk"])
    hist = dict(type="histogram", opacity=0.7, nbinsx=40)
    axis = token_axis(q_tokens, title=say("scale.query"))
    lines = []
    for name, color in (("plain", ORANGE), ("scaled", BLUE)):
        lines.append([dict(type="scatter", mode="lines+markers", y=small(d[name][j]), line=dict(color=color),
                           name="QKᵀ" if name == "plain" else "QKᵀ/√d_k", showlegend=False, legendgroup=name)
                      for j in (1, 2, 3)])
    # (the histogram's ticks stand off its axes: the corner's two, the first score and the count's 0, apart)
    panels = [([dict(hist, x=small(d["raw"][mask], 3), name=say("scale.no_scale"), marker_color=ORANGE,
                     legendgroup="plain"),
                dict(hist, x=small(d["raw"][mask] / s, 3), name=f"QKᵀ/√{d['dk']}", marker_color=BLUE,
                     legendgroup="scaled")], say("scale.scores"),
               dict(title=say("scale.score"), ticklabelstandoff=4), dict(ticklabelstandoff=6))]
    for j, name in enumerate(("largest", "entropy", "jacobian")):
        panels.append(([lines[0][j], lines[1][j]], say(f"scale.{name}"), axis, {}))
    # the legend under the panels and room between the rows: the top row's turned token ticks and the titles
    # of the row below stay apart
    # the panels' titles in lines of half a phone's panel (a 2 x 2 grid is 390 px wide on a phone)
    fig = grid(panels, 2, wrap_title(title), height=720, gap=(0.1, 0.3), barmode="overlay", title_width=16,
               legend=dict(orientation="h", y=-0.12, x=0, yanchor="top"), margin=dict(l=10, r=10, t=80, b=60))
    return phone_width(fig, 2 * len(q_tokens), room=120)


def sweep_figure(r):
    """The softmax's statistics for random unit-variance queries and keys as d_k grows (core's
    random_scale_sweep `r`), without and with the scale."""
    x = dict(type="log", title="d_k", tickvals=r["dk"], ticktext=[str(d) for d in r["dk"]])
    panels = []
    for key in ("std", "max", "entropy", "grad"):
        name = say(f"sweep.{key}")
        panels.append(([dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"plain_{key}"], 4),
                             name="q·k", line=dict(color=ORANGE), legendgroup="p", showlegend=not panels),
                        dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"scaled_{key}"], 4),
                             name="q·k/√d_k", line=dict(color=BLUE), legendgroup="s", showlegend=not panels)],
                       name, x, {}))
    # as the scale figure: the legend under the panels, the rows apart (the top row's axis titles, the titles below)
    return grid(panels, 2, wrap_title(say("sweep.title")), height=640, gap=(0.1, 0.28),
                legend=dict(orientation="h", y=-0.12, x=0, yanchor="top"), margin=dict(l=10, r=10, t=90, b=60))


def stage_label(stage):
    """A stage of the residual stream (core.analysis.inside.stage_names: (layer, part)) in words: "layer 0
    self-attention", "embedding + PE", ..."""
    layer, part = stage
    words = say(f"stage.{part}")
    return words if layer is None else say("stage.layer", layer=layer, sub=words)


def residual_figure(rec, ins):
    """Each token's norm after every stage, and each stage's relative change, for both stacks."""
    panels = []
    for what in ("norm", "change"):
        for side, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
            norms, change = core.stream_norms(rec, side)
            stages = rec.stages[side] if what == "norm" else rec.stages[side][1:]
            z = norms if what == "norm" else change
            hover = "%{y}<br>" + say("res.hover", token="%{x}",
                                     value="‖x‖ = %{z:.2f}" if what == "norm" else "‖Δx‖ / ‖x‖ = %{z:.3f}")
            trace = dict(type="heatmap", z=small(z, 3), y=[stage_label(s) for s in stages],
                         colorscale="Viridis" if what == "norm" else "Magma",
                         hovertemplate=hover + "<extra></extra>", showscale=False)
            panels.append(([trace], say(f"res.{what}", side=say(f"side.{side}")),
                           token_axis(tokens, tickangle=-90), dict(autorange="reversed", type="category")))
    fig = grid(panels, 2, wrap_title(say("res.title")), height=850, gap=(0.18, 0.16),
               margin=dict(l=180, r=10, t=110, b=60))
    return phone_width(fig, 2 * max(len(ins.src_tokens), len(ins.tgt_tokens)), room=300)


def ffn_figures(rec, ins, side, layer, top=24):
    """How many units fire per token and layer (both stacks), and the most often firing units of one layer."""
    panels = []
    for s, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
        count, _ = core.ffn_firing(rec, s)
        d_ff = rec.ffn[s].size(-1)
        hover = say("ffn.hover", at=say("at_token", what="%{y}", token="%{x}"), count="%{z}", d_ff=d_ff)
        trace = dict(type="heatmap", z=count.numpy(), y=[say("layer", layer=i) for i in range(count.size(0))],
                     zmin=0, zmax=d_ff, colorscale="Blues", showscale=s == "decoder",
                     hovertemplate=hover + "<extra></extra>")
        panels.append(([trace], say("ffn.panel", side=say(f"side.{s}"), d_ff=d_ff),
                       token_axis(tokens, tickangle=-90), dict(autorange="reversed", type="category")))
    firing = grid(panels, 2, wrap_title(say("ffn.title")), height=400, title_width=16,
                  margin=dict(l=70, r=10, t=130, b=60))
    phone_width(firing, 2 * max(len(ins.src_tokens), len(ins.tgt_tokens)), room=200)
    tokens = ins.src_tokens if side == "encoder" else ins.tgt_tokens
    act = rec.ffn[side][layer]  # (L, d_ff)
    fires = (act > 0).sum(0)
    order = np.lexsort((-act.mean(0).numpy(), -fires.numpy()))[:top].tolist()  # most tokens, then mean
    trace = dict(type="heatmap", z=small(act[:, order].T, 3), y=[say("ffn.unit", unit=u) for u in order],
                 colorscale="Oranges",
                 hovertemplate=say("ffn.unit_hover", at=say("at_token", what="%{y}", token="%{x}"),
                                   value="%{z:.3f}") + "<extra></extra>")
    units = go.Figure([trace], dict(
        title=wrap_title(say("ffn.units", where=text(f"ui.inside.layer.{side}", layer=layer), top=top)),
        height=max(360, 120 + 18 * top), xaxis=token_axis(tokens, tickangle=-90),
        yaxis=dict(autorange="reversed", type="category"), margin=dict(l=80, r=10, t=50, b=60)))
    return firing, phone_width(units, len(tokens), room=170), fires


LENS_FONT = 11  # px of a lens cell's token


def lens_figure(top_i, top_p, p_chosen, ins, piece):
    """Rows: output positions; columns: decoder layers; each cell the token the output projection would choose
    from that layer's state, coloured by its probability. Positions go down and the colour bar lies above the
    columns, so that the columns have a phone's width to themselves; where the longest token of a column still
    does not fit (plotly would write it over its neighbours), a phone draws the figure wider, in a block that
    scrolls sideways."""
    L, T = top_i.shape
    tops = [[label(piece(top_i[l, t])) for l in range(L)] for t in range(T)]
    after, choice = say("lens.after"), say("lens.choice")  # formatted per cell below
    hover = [[after.format(token=label(ins.tgt_tokens[t]), top=tops[t][l], p=f"{top_p[l, t]:.3f}") + "<br>"
              + choice.format(token=label(ins.out_tokens[t]), p=f"{p_chosen[l, t]:.3f}") for l in range(L)]
             for t in range(T)]
    trace = dict(type="heatmap", z=small(top_p.T, 3), text=tops, texttemplate="%{text}",
                 textfont=dict(size=LENS_FONT), hovertext=hover, hoverinfo="text", colorscale="Greens", zmin=0, zmax=1,
                 x=[say("layer", layer=l) for l in range(L)])
    rows = [f"{t}→" for t in ins.tgt_tokens]
    title = wrap_title(say("lens.title"))
    below = title_room(title)
    height = below + 80 + 32 * T
    trace["colorbar"] = top_colorbar(below, height, len=0.8, title=dict(text="p", side="top"))
    fig = go.Figure([trace], dict(
        title=dict(text=title, yref="container", y=1, yanchor="top", pad=dict(t=20)), height=height,
        yaxis=token_axis(rows, autorange="reversed", title=say("lens.input")),
        xaxis=dict(type="category"), margin=dict(l=70, r=10, t=below + 50, b=30)))
    cell = max(text_width(t, LENS_FONT) for row in tops for t in row) + 12
    return phone_width(fig, L, per=cell, room=max(text_width(r) for r in rows) + 50)
