"""The Inside-the-model tab: the shipped model's modules and weights, and what its layers do to the sentence of
the last translation (LayerNorm, the 1/sqrt(d_k) scale, the residual stream, the feed-forward units, the logit
lens).

The views of the sentence read one teacher-forced pass of the float32 model over the Inspection's source and
decoder inputs, recorded by forward hooks (core/analysis/inside.py) the first time a view needs it and kept per
Inspection: moving a control redraws from that recording and never runs the model.
"""
import inspect
import math
from functools import lru_cache
from html import escape

import gradio as gr
import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn.functional as F

from core.analysis import inside as core
from core.model import LayerNorm, attention

from ..cache import PerTranslation
from ..common import KIND_LABELS, clamp, code_panel, kind_choices, label, md_literal, panel_grid, token_axis
from ..i18n import DEFAULT, L, table, text
from ..shared import MODEL_LOCK, get_translator
from ..views import View, opener, refresh, tab_views

WAIT = L("ui.inside.wait")  # shown, in the page's language, until there is a translation
MAX_CELLS = (64, 128)  # a weight heatmap's largest size sent to the browser (rows, columns)
BINS = 80  # of a weight histogram, computed here
FIRST_MODULE = "encoder.layers.0.feed_forward.w_1"
BLUE, ORANGE, GREY = "#2f6db5", "#e4572e", "#9aa3ad"


# ---- the recording, kept per Inspection -------------------------------------------------------------

_RECORDINGS = PerTranslation(4)  # a recording of a 15-piece sentence is about 1.5 MB
_DERIVED = PerTranslation(4 * 2)  # what is computed from them: the logit lens and the other LayerNorm's effect


def recorded(ins):
    """The Recording of `ins` (one pass of the float32 model, run the first time and kept)."""
    def record():
        with MODEL_LOCK:  # the hooks sit on the shared model: one model call at a time
            return core.record_inspection(get_translator(), ins)
    return _RECORDINGS.get(ins, "recording", record)


def derived(ins, name, fn):
    """fn(model, recording), computed once per Inspection."""
    rec = recorded(ins)

    def compute():
        with MODEL_LOCK:
            return fn(get_translator().model, rec)
    return _DERIVED.get(ins, name, compute)


def small(x, decimals=4):
    """A tensor as a float32 array rounded for the browser (plotly sends numpy arrays as typed arrays)."""
    return np.round(torch.as_tensor(x).detach().float().cpu().numpy(), decimals)


def grid(panels, cols, title="", height=500, gap=(0.08, 0.14), **layout):
    """The tab's panel grid (app.common.panel_grid): panels of (traces, title, x-axis dict, y-axis dict)."""
    return panel_grid(panels, cols, title, height, gap, title_font=dict(size=13), **layout)


# ---- the modules ------------------------------------------------------------------------------------

def tree_html(nodes, total):
    """The module tree as nested <details> (the top two levels open), each module with its class, its
    parameters counted once and its share; clicking a module's name selects it."""
    children = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)

    def item(n):
        name = escape(n.name.rpartition(".")[2] or "model")
        share = n.params / total
        tied = [f'{escape(p)} tied to {escape(t)}' for p, _, _, t in n.own if t]
        shapes = ", ".join(f"{p} {'×'.join(map(str, s))}" for p, s, _, _ in n.own)
        head = (f'<span class="mod" data-path="{escape(n.name)}">{name}</span> <i>{escape(n.cls)}</i> '
                f'<span class="mod-n">{n.params:,} ({share:.1%})</span>'
                f'<span class="mod-bar"><span style="width:{100 * share:.1f}%"></span></span>'
                + (f' <span class="mod-shape">{escape(shapes)}</span>' if shapes else "")
                + (f' <span class="mod-tied">{"; ".join(tied)}</span>' if tied else ""))
        kids = children.get(n.name, [])
        if not kids:
            return f'<div class="mod-leaf">{head}</div>'
        return (f'<details{" open" if n.depth < 2 else ""}><summary>{head}</summary>'
                f'{"".join(item(k) for k in kids)}</details>')

    return f'<div class="mod-tree">{item(children[None][0])}</div>'


# Clicking a module's name selects it (its path goes to the server as the select event's value).
TREE_JS = """
element.addEventListener('click', (event) => {
  const mod = event.target.closest('.mod[data-path]');
  if (!mod) return;
  event.preventDefault();
  trigger('select', {index: 0, value: mod.dataset.path, selected: true});
});
"""


def treemap_figure(nodes, total):
    """The modules as a treemap: each rectangle's area is its parameters (tied ones counted once)."""
    ids = [n.name or "model" for n in nodes]
    parents = ["" if n.parent is None else (n.parent or "model") for n in nodes]
    labels = [f"{label(n.name.rpartition('.')[2] or 'model')} ({n.cls})" for n in nodes]
    hover = [f"{label(n.name or 'model')}<br>{n.cls}<br>{n.params:,} parameters ({n.params / total:.1%})"
             for n in nodes]
    fig = go.Figure(go.Treemap(ids=ids, parents=parents, labels=labels, values=[n.params for n in nodes],
                               branchvalues="total", hovertext=hover, hoverinfo="text", maxdepth=3))
    fig.update_layout(title="Parameters by module<br><sup>click a rectangle to zoom in, the bar above to zoom "
                      "out</sup>",
                      height=520, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def model_summary(model, cfg, nodes):
    """The configuration, the parameter count and what tying saves, in Markdown."""
    groups, saved = core.tying(model)
    total = nodes[0].params
    lines = [f"**Configuration:** N = {cfg['N']} layers per stack, d_model = {cfg['d_model']}, d_ff = {cfg['d_ff']}, "
             f"h = {cfg['h']} heads (d_k = {cfg['d_model'] // cfg['h']}), vocabulary {cfg['tgt_vocab']:,} pieces, "
             f"dropout {cfg['dropout']} (off at inference), {len(nodes)} modules, **{total:,} parameters**."]
    for names, n in groups:
        lines.append(f"**Tying:** {', '.join(f'`{p}`' for p in names)} are one {n:,}-number tensor, stored once "
                     f"instead of {len(names)} times: tying saves **{saved:,} parameters** "
                     f"({saved / (total + saved):.0%} of the untied model's {total + saved:,}).")
    return "\n\n".join(lines)


@lru_cache(maxsize=1)
def modules_view():
    """The tree, the treemap, and the model's configuration with what tying saves."""
    tr = get_translator()
    nodes = list(tree_nodes().values())
    return tree_html(nodes, nodes[0].params), treemap_figure(nodes, nodes[0].params), \
        model_summary(tr.model, tr.config, nodes)


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
        note = "" if br == bc == 1 else f"<br><sup>each cell the mean of a {br} × {bc} block</sup>"
        fig = go.Figure(go.Heatmap(z=small(shown), colorscale="RdBu_r", zmid=0, zmin=-lim, zmax=lim,
                                   hovertemplate="row %{y}, col %{x}: %{z:.4f}<extra></extra>"))
        fig.update_layout(title=f"{label(path)}.{name} {tuple(w.shape)}{note}", yaxis_autorange="reversed",
                          xaxis_title="input (column)", yaxis_title="output (row)")
    elif own:
        fig = go.Figure([go.Scatter(y=small(p), mode="lines", name=n) for n, p in own.items()])
        fig.update_layout(title=f"{label(path)}: its parameters by index", xaxis_title="index")
    else:
        kids = [(n, sum(p.numel() for p in m.parameters())) for n, m in module.named_children()]
        fig = go.Figure(go.Bar(x=[label(n) for n, _ in kids], y=[c for _, c in kids], marker_color=BLUE))
        fig.update_layout(title=f"{label(path or 'model')}: no weights of its own; parameters of its children "
                          "(tied ones in each)", yaxis_title="parameters")
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def histogram(tensors):
    """One histogram of BINS bins over several tensors (binned here, so the browser gets BINS numbers): bin
    centres, counts, bin width, and the values' count, mean and standard deviation."""
    vs = [t.detach().float().flatten() for t in tensors]
    lo, hi = min(float(v.min()) for v in vs), max(float(v.max()) for v in vs)
    hi = hi if hi > lo else lo + 1
    counts = sum(torch.histc(v, BINS, lo, hi) for v in vs)
    n = sum(v.numel() for v in vs)
    mean = sum(float(v.double().sum()) for v in vs) / n
    var = max(sum(float(v.double().pow(2).sum()) for v in vs) - n * mean * mean, 0.0) / max(n - 1, 1)
    width = (hi - lo) / BINS
    return lo + width * (torch.arange(BINS) + 0.5), counts, width, (n, mean, math.sqrt(var))


def distribution_figure(path, module):
    """The distribution of a module's parameters (each of its own, else all below it together)."""
    own = dict(module.named_parameters(recurse=False))
    below = list(module.parameters())
    groups = {n: [p] for n, p in own.items()} or ({"all below": below} if below else {})
    if not groups:
        return go.Figure().update_layout(title=f"{label(path)} has no parameters", height=300)
    fig = go.Figure()
    for name, tensors in groups.items():
        x, counts, width, (n, mean, std) = histogram(tensors)
        fig.add_trace(go.Bar(x=small(x, 5), y=counts.int().numpy(), width=width, opacity=0.75,
                             name=f"{name} ({n:,}; mean {mean:.3f}, std {std:.3f})"))
    fig.update_layout(title=f"Distribution of {label(path or 'model')}'s parameters", barmode="overlay", height=420,
                      xaxis_title="value", yaxis_title="count", margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.2))
    return fig


@lru_cache(maxsize=1)
def tree_nodes():
    """The shipped model's module tree (core.analysis.inside.module_tree), by path."""
    return {n.name: n for n in core.module_tree(get_translator().model)}


def module_view(path):
    """The selected module: what it is, its source (read from its class now), its weights and their spread."""
    return _module_view(path if path in tree_nodes() else FIRST_MODULE)


@lru_cache(maxsize=32)
def _module_view(path):
    model = get_translator().model
    module = dict(model.named_modules(remove_duplicate=False))[path]
    node = tree_nodes()[path]
    total = sum(p.numel() for p in model.parameters())
    own = "; ".join(f"`{p}` {tuple(s)} = {n:,}" + (f" (tied to `{t}`, counted there)" if t else "")
                    for p, s, n, t in node.own) or "none of its own"
    text = (f"**`{path or 'model'}`**: {node.cls}, {node.params:,} parameters counted here "
            f"({node.params / total:.2%} of {total:,}). Own parameters: {own}.")
    try:
        source = inspect.getsource(type(module))
    except (OSError, TypeError):
        source = f"# the source of {type(module).__qualname__} is not available"
    return text, source, weight_figure(path, module), distribution_figure(path, module)


# ---- LayerNorm -------------------------------------------------------------------------------------

def norm_side(path):
    return "decoder" if path.startswith("decoder") else "encoder"


def norm_place(path):
    """A LayerNorm's place: the key of its words (ui.inside.norm.<side>.<sub-layer> or .final) and their values."""
    side = norm_side(path)
    if path.endswith(f"{side}.norm"):
        return f"ui.inside.norm.{side}.final", {}
    parts = path.split(".")
    subs = ("self-attn", "ffn") if side == "encoder" else ("self-attn", "cross-attn", "ffn")
    return f"ui.inside.norm.{side}.{subs[int(parts[4])]}", {"layer": int(parts[2])}


def norm_label(path):
    """A LayerNorm's place in English words (for figures and notes): "encoder layer 0, before self-attention"."""
    key, values = norm_place(path)
    return text(DEFAULT, key, **values)


def norm_choices(model):
    """The LayerNorm menu: each LayerNorm's place in both languages, by path."""
    return [(L(key, **values), p) for p in core.layer_norms(model) for key, values in (norm_place(p),)]


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
    panels = [([dict(line, y=small(v["input"]), name="input x", line=dict(color=GREY))], "input x", {}, {}),
              ([dict(line, y=small(v["normalised"]), name="normalised (x − μ) / σ", line=dict(color=BLUE))],
               "normalised: mean 0, variance 1", {}, {}),
              ([dict(line, y=small(v["output"]), name="output a₂ · x̂ + b₂ (trained)", line=dict(color=ORANGE)),
                dict(line, y=small(v["moved"]), name="output with the sliders' gain and bias",
                     line=dict(color="#2a9d4b", dash="dot")),
                dict(line, y=small(v["input"]), name="input x (for comparison)",
                     line=dict(color=GREY, width=1))], "output", dict(title="dimension"), {})]
    return grid(panels, 1, title, height=640, gap=(0, 0.09), legend=dict(orientation="h", y=-0.08))


def forms_figure(v, title):
    """The Annotated Transformer's LayerNorm minus ours on the same vector, per dimension."""
    trace = dict(type="scatter", y=small(v["annotated"] - v["output"], 6), mode="lines", name="annotated − ours",
                 line=dict(color="#7b3fa0"))
    return go.Figure([trace], dict(title=title, height=300, xaxis=dict(title="dimension"),
                                   yaxis=dict(title="difference"), margin=dict(l=10, r=10, t=50, b=10)))


def layernorm_view(ins, path, token, undo_gain, undo_bias):
    """One token's vector through one LayerNorm (chosen by path and position), the sliders' gain and bias,
    and the Annotated Transformer's form on the same vector and through the whole model."""
    model = get_translator().model
    norms = core.layer_norms(model)
    path = path if path in norms else next(iter(norms))
    rec, ln = recorded(ins), norms[path]
    tokens = ins.src_tokens if norm_side(path) == "encoder" else ins.tgt_tokens
    pos = clamp(token, 0, len(tokens) - 1)
    g, b = clamp(undo_gain, 0.0, 1.0, float), clamp(undo_bias, 0.0, 1.0, float)
    x = rec.norms[path][0][pos]
    v = ln_vectors(x, ln.a_2.detach().float(), ln.b_2.detach().float(), ln.eps, g, b)
    where = f"{norm_label(path)}, position {pos} {label(tokens[pos])}"
    fig = layernorm_figure(v, f"LayerNorm: {where} (sliders: gain {g:.2f}, bias {b:.2f})")
    delta, changed = derived(ins, "annotated", core.annotated_norm_effect)
    n = x.numel()
    forms = forms_figure(v, f"The Annotated Transformer's LayerNorm minus ours, same vector and weights "
                            f"(largest {float((v['annotated'] - v['output']).abs().max()):.2e})")
    note = (f"**{md_literal(norm_label(path))}, position {pos} ({md_literal(tokens[pos])})**: mean μ = "
            f"{float(v['mean']):.3f}, σ = √(var + ε) = {float(v['sigma']):.3f}. Sliders at {g:.2f} (gain) and "
            f"{b:.2f} (bias): largest |output − input| = {float((v['moved'] - x).abs().max()):.2e}; at 1 and 1 "
            "the gain is σ and the bias μ and the input comes back, so normalising takes nothing away that the "
            f"layer cannot learn back.\n\nOurs divides by √(var + ε) with the biased variance (÷ n, as Ba et al. "
            f"and `torch.nn.LayerNorm`); The Annotated Transformer divides by (std + ε) with the unbiased std "
            f"(÷ n − 1): its x̂ is smaller by a factor of about √(n / (n − 1)) = {math.sqrt(n / (n - 1)):.5f} for "
            f"n = {n}. With all {len(norms)} LayerNorms of this model in that form, the output log-probabilities of "
            f"this sentence move by at most {delta:.3f} and the top token changes at "
            f"{len(changed)} of {len(ins.tgt_tokens)} positions (one pass, float32 model).")
    return fig, forms, note


@lru_cache(maxsize=1)
def ln_params_figure():
    """Every LayerNorm's trained gain a_2 and bias b_2, dimension by dimension (no sentence needed)."""
    norms = core.layer_norms(get_translator().model)
    names = [norm_label(p) for p in norms]
    gains = torch.stack([m.a_2.detach().float() for m in norms.values()])
    biases = torch.stack([m.b_2.detach().float() for m in norms.values()])
    ticks = dict(type="category", autorange="reversed")
    panels = []
    for z, name, scale in ((gains, "gain a₂", "Viridis"), (biases, "bias b₂", "RdBu_r")):
        hover = "%{y}, dim %{x}: " + name + " %{z:.3f}<extra></extra>"
        trace = dict(type="heatmap", z=small(z, 3), y=names, colorscale=scale, hovertemplate=hover,
                     colorbar=dict(x=1.0 if name.startswith("bias") else 0.46, len=0.9),
                     **({"zmid": 0} if name.startswith("bias") else {}))
        panels.append(([trace], f"{name}: mean {float(z.mean()):.3f}, range {float(z.min()):.2f} to "
                       f"{float(z.max()):.2f}", dict(title="dimension"), ticks if not panels else
                       dict(ticks, showticklabels=False)))
    return grid(panels, 2, "The trained gains and biases of every LayerNorm", height=520, gap=(0.1, 0),
                margin=dict(l=230, r=40, t=80, b=40))


# ---- why 1/sqrt(d_k) ---------------------------------------------------------------------------------

def scale_data(rec, kind, layer, head):
    """The raw scores of one head, their d_k and mask, and the softmax statistics without and with the scale."""
    raw, dk, mask = core.scores(rec, kind, layer, head)
    return dict(raw=raw, dk=dk, mask=mask, plain=core.softmax_stats(raw, mask),
                scaled=core.softmax_stats(raw / math.sqrt(dk), mask))


def scale_figure(d, q_tokens, title):
    """Scores with and without the scale, and per query: the largest weight, the entropy, the Jacobian norm."""
    mask, s = d["mask"], math.sqrt(d["dk"])
    hist = dict(type="histogram", opacity=0.7, nbinsx=40)
    axis = token_axis(q_tokens, title="query")
    lines = []
    for name, color in (("plain", ORANGE), ("scaled", BLUE)):
        lines.append([dict(type="scatter", mode="lines+markers", y=small(d[name][j]), line=dict(color=color),
                           name="QKᵀ" if name == "plain" else "QKᵀ/√d_k", showlegend=False, legendgroup=name)
                      for j in (1, 2, 3)])
    panels = [([dict(hist, x=small(d["raw"][mask], 3), name="QKᵀ (no scale)", marker_color=ORANGE, legendgroup="plain"),
                dict(hist, x=small(d["raw"][mask] / s, 3), name=f"QKᵀ/√{d['dk']}", marker_color=BLUE,
                     legendgroup="scaled")], "scores of the allowed pairs", dict(title="score"), {})]
    for j, name in enumerate(("largest softmax weight", "entropy (nats)", "‖Jacobian of the softmax‖")):
        panels.append(([lines[0][j], lines[1][j]], name, axis, {}))
    return grid(panels, 2, title, height=620, barmode="overlay", legend=dict(orientation="h", y=1.08, x=0))


@lru_cache(maxsize=1)
def sweep_figure():
    """The same statistics for random unit-variance queries and keys (16 keys) as d_k grows from 4 to 512."""
    r = core.random_scale_sweep()
    x = dict(type="log", title="d_k", tickvals=r["dk"], ticktext=[str(d) for d in r["dk"]])
    panels = []
    for key, name in (("std", "std of the scores"), ("max", "mean largest weight"), ("entropy", "mean entropy (nats)"),
                      ("grad", "mean ‖Jacobian‖")):
        panels.append(([dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"plain_{key}"], 4),
                             name="q·k", line=dict(color=ORANGE), legendgroup="p", showlegend=not panels),
                        dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"scaled_{key}"], 4),
                             name="q·k/√d_k", line=dict(color=BLUE), legendgroup="s", showlegend=not panels)],
                       name, x, {}))
    return grid(panels, 2, "Random queries and keys (unit-variance components, 16 keys, 256 queries)", height=560,
                legend=dict(orientation="h", y=1.1, x=0))


def scale_view(ins, kind, layer, head):
    """The 1/sqrt(d_k) scale on the trained model's own queries and keys for this sentence."""
    kind = kind if kind in KIND_LABELS else "encoder"
    rec = recorded(ins)
    layers, heads = rec.q[kind].shape[:2]
    layer, head = clamp(layer, 0, layers - 1), clamp(head, 0, heads - 1)
    d = scale_data(rec, kind, layer, head)
    q_tokens = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    fig = scale_figure(d, q_tokens, f"{KIND_LABELS[kind].long}, layer {layer}, head {head}: d_k = {d['dk']}")
    p, ps = d["plain"], d["scaled"]
    note = (f"Without the scale the scores spread {float(d['raw'][d['mask']].std()):.2f} (std) instead of "
            f"{float(d['raw'][d['mask']].std() / math.sqrt(d['dk'])):.2f}; the softmax's largest weight averages "
            f"{float(p[1].mean()):.2f} instead of {float(ps[1].mean()):.2f}, its entropy {float(p[2].mean()):.2f} "
            f"instead of {float(ps[2].mean()):.2f} nats, and the gradient it passes back (the Jacobian's norm) "
            f"{float(p[3].mean()):.3f} instead of {float(ps[3].mean()):.3f} (the paper's \"extremely small gradients\" "
            "of a saturated softmax). The model was trained with the scale: "
            "its weights with the scale are the attention the Attention tab shows.")
    return fig, note


# ---- residual stream, feed-forward, logit lens ------------------------------------------------------

def residual_figure(rec, ins):
    """Each token's norm after every stage, and each stage's relative change, for both stacks."""
    panels = []
    for what in ("norm", "change"):
        for side, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
            norms, change = core.stream_norms(rec, side)
            stages = rec.stages[side] if what == "norm" else rec.stages[side][1:]
            z = norms if what == "norm" else change
            hover = "%{y}<br>token %{x}: " + ("‖x‖ = %{z:.2f}" if what == "norm" else "‖Δx‖ / ‖x‖ = %{z:.3f}")
            trace = dict(type="heatmap", z=small(z, 3), y=stages, colorscale="Viridis" if what == "norm" else "Magma",
                         hovertemplate=hover + "<extra></extra>", showscale=False)
            name = f"{side}: {'‖x‖ after each stage' if what == 'norm' else 'relative change by each stage'}"
            panels.append(([trace], name, token_axis(tokens, tickangle=-60),
                           dict(autorange="reversed", type="category")))
    return grid(panels, 2, "The residual stream: the norm of each token's vector, and what each sub-layer adds",
                height=820, gap=(0.18, 0.16), margin=dict(l=180, r=10, t=80, b=60))


def residual_view(ins):
    rec = recorded(ins)
    norms, change = core.stream_norms(rec, "decoder")
    big = int(change.mean(-1).argmax())
    note = (f"Each sub-layer adds to the stream: x + Sublayer(LayerNorm(x)). The decoder's largest mean change is "
            f"made by {md_literal(rec.stages['decoder'][big + 1])} ({float(change[big].mean()):.2f} of the vector's "
            f"norm). The last row is the final LayerNorm's output, the vector the output projection reads.")
    return residual_figure(rec, ins), note


def ffn_choices(n_layers):
    """The feed-forward layer menu: "encoder layer 0", ... in both languages, as "encoder/0", ..."""
    return [(L(f"ui.inside.layer.{side}", layer=i), f"{side}/{i}") for side in ("encoder", "decoder")
            for i in range(n_layers)]


def ffn_figures(rec, ins, side, layer, top=24):
    """How many units fire per token and layer (both stacks), and the most often firing units of one layer."""
    panels = []
    for s, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
        count, _ = core.ffn_firing(rec, s)
        d_ff = rec.ffn[s].size(-1)
        trace = dict(type="heatmap", z=count.numpy(), y=[f"layer {i}" for i in range(count.size(0))], zmin=0,
                     zmax=d_ff, colorscale="Blues", showscale=s == "decoder",
                     hovertemplate="%{y}, token %{x}: %{z} of " + str(d_ff) + " units fire<extra></extra>")
        panels.append(([trace], f"{s}: units firing per token (of {d_ff})", token_axis(tokens, tickangle=-60),
                       dict(autorange="reversed", type="category")))
    firing = grid(panels, 2, "Position-wise FFN: how many ReLU units fire (output > 0)", height=360,
                  margin=dict(l=70, r=10, t=80, b=60))
    tokens = ins.src_tokens if side == "encoder" else ins.tgt_tokens
    act = rec.ffn[side][layer]  # (L, d_ff)
    fires = (act > 0).sum(0)
    order = np.lexsort((-act.mean(0).numpy(), -fires.numpy()))[:top].tolist()  # most tokens, then mean
    trace = dict(type="heatmap", z=small(act[:, order].T, 3), y=[f"unit {u}" for u in order], colorscale="Oranges",
                 hovertemplate="%{y}, token %{x}: %{z:.3f}<extra></extra>")
    units = go.Figure([trace], dict(
        title=f"{side} layer {layer}: the {top} units that fire for the most tokens (ReLU output)",
        height=max(360, 120 + 18 * top), xaxis=token_axis(tokens, tickangle=-60),
        yaxis=dict(autorange="reversed", type="category"), margin=dict(l=80, r=10, t=50, b=60)))
    return firing, units, fires


def ffn_view(ins, which):
    rec = recorded(ins)
    side, _, layer = str(which).partition("/")
    side = side if side in ("encoder", "decoder") else "encoder"
    layer = clamp(layer, 0, rec.ffn[side].size(0) - 1)
    firing, units, fires = ffn_figures(rec, ins, side, layer)
    on = (rec.ffn[side][layer] > 0).float().sum(-1)
    d_ff = rec.ffn[side].size(-1)
    note = (f"**{side} layer {layer}:** {float(on.mean()):.0f} of {d_ff} units fire for a token on average "
            f"({float(on.mean()) / d_ff:.0%}); {int((fires == on.numel()).sum())} fire for every token of the "
            f"sentence and {int((fires == 0).sum())} for none.")
    return firing, units, note


def lens_figure(top_i, top_p, p_chosen, ins, piece):
    """Rows: decoder layers; columns: output positions; each cell the token the output projection would choose
    from that layer's state, coloured by its probability."""
    L, T = top_i.shape
    text = [[label(piece(i)) for i in row] for row in top_i.tolist()]
    hover = [[f"after {label(ins.tgt_tokens[t])}: {text[l][t]} p = {top_p[l, t]:.3f}<br>p(the model's choice "
              f"{label(ins.out_tokens[t])}) = {p_chosen[l, t]:.3f}" for t in range(T)] for l in range(L)]
    trace = dict(type="heatmap", z=small(top_p, 3), text=text, texttemplate="%{text}", hovertext=hover,
                 hoverinfo="text", colorscale="Greens", zmin=0, zmax=1, y=[f"layer {l}" for l in range(L)],
                 colorbar=dict(title="p"))
    return go.Figure([trace], dict(
        title="Logit lens: the token each decoder layer's state would give (final LayerNorm and output "
              "projection applied)", height=180 + 70 * L,
        xaxis=token_axis([f"{t}→" for t in ins.tgt_tokens], tickangle=-60, title="decoder input"),
        yaxis=dict(type="category"), margin=dict(l=70, r=10, t=60, b=80)))


def lens_view(ins):
    top_i, top_p, p_chosen = derived(ins, "lens", core.logit_lens)
    piece = get_translator().tokenizer.id_to_piece
    agree = sum(piece(i) == t for i, t in zip(top_i[-1].tolist(), ins.out_tokens))
    note = (f"At the last layer the lens is the model's own output: its top token is the translation's at {agree} "
            f"of {len(ins.out_tokens)} positions (all of them for greedy decoding by the float32 model; beam search "
            "and sampling need not take the top token, and the app decodes one sentence with a float16 decoder). "
            "Earlier rows show how the answer forms through the stack.")
    return lens_figure(top_i, top_p, p_chosen, ins, piece), note


# the views of the tab, in the order of its outputs, each reading the controls named in `uses`
VIEWS = [View("inside/modules", ("inside", "modules"), modules_view, outputs=3, reads_translation=False),
         View("inside/module", ("inside", "modules"), module_view, outputs=4, uses=("module",),
              reads_translation=False),
         View("inside/layernorm", ("inside", "layernorm"), layernorm_view, outputs=3,
              uses=("norm", "token", "gain", "bias"), blank=(None, None, WAIT)),
         View("inside/ln-params", ("inside", "layernorm"), ln_params_figure, reads_translation=False),
         View("inside/scale", ("inside", "scale"), scale_view, outputs=2, uses=("kind", "layer", "head"),
              blank=(None, WAIT)),
         View("inside/sweep", ("inside", "scale"), sweep_figure, reads_translation=False),
         View("inside/residual", ("inside", "residual"), residual_view, outputs=2, blank=(None, WAIT)),
         View("inside/ffn", ("inside", "ffn"), ffn_view, outputs=3, uses=("ffn",), blank=(None, None, WAIT)),
         View("inside/lens", ("inside", "lens"), lens_view, outputs=2, blank=(None, WAIT))]


# the controls' first values, by name, in the order `show` takes them
DEFAULTS = {"module": FIRST_MODULE, "norm": "encoder.layers.0.sublayer.0.norm", "token": 1, "gain": 0.0, "bias": 0.0,
            "kind": "encoder", "layer": 0, "head": 0, "ffn": "encoder/0"}


def show(page, ins, *controls):
    """The tab's views for the page as it is (app/views.py): what is on screen drawn, the rest left or cleared.
    A view that does not read the translation is refreshed as if there were none, so that a new translation
    does not draw it again. `controls` are the values of those of DEFAULTS, in order; those not given take their
    first values."""
    controls = {**DEFAULTS, **dict(zip(DEFAULTS, controls))}
    out = []
    for v in VIEWS:
        out.extend(refresh(page, ins if v.reads_translation else None, [v], controls))
    return tuple(out)


# ---- layout and events -----------------------------------------------------------------------------

def picked(evt: gr.SelectData):
    """The module clicked in the tree (a path the dropdown lists; else the first one)."""
    return evt.value if isinstance(evt.value, str) else FIRST_MODULE


CSS = """
.mod-tree {font-size:0.92em; max-height:520px; overflow:auto} .mod-tree details {margin-left:14px}
.mod-tree .mod-leaf {margin-left:28px} .mod {color:#1f5fa8; cursor:pointer; text-decoration:underline}
.mod-n {font-variant-numeric:tabular-nums; color:#444} .mod-tied {color:#a33; font-size:0.9em}
.mod-shape {color:#666; font-size:0.85em; font-family:ui-monospace, monospace}
.mod-bar {display:inline-block; width:80px; height:8px; background:#eef1f6; margin-left:6px}
.mod-bar span {display:block; height:100%; background:#4a7dc9}
"""


def module_label(name):
    """A module's name in the menu: its path in the code, the model's five parts glossed in the page's language
    ("encoder（编码器）"), the root named "model"."""
    if not name:
        return L("ui.inside.root")
    return L(f"ui.inside.part.{name}") if f"ui.inside.part.{name}" in table(DEFAULT) else name


def _modules_tab(model):
    with gr.Tab(L("ui.inside.tab.modules"), id="modules") as tab:
        summary = gr.Markdown(elem_id="in-summary")
        with gr.Row():
            with gr.Column(scale=1):
                tree = gr.HTML(js_on_load=TREE_JS, css_template=CSS, elem_id="in-tree")
            treemap = gr.Plot(elem_id="in-treemap", scale=1)
        names = [n for n, _ in model.named_modules(remove_duplicate=False)]
        module = gr.Dropdown([(module_label(n), n) for n in names], value=DEFAULTS["module"],
                             label=L("ui.inside.module"), elem_id="in-module")
        detail = gr.Markdown(elem_id="in-detail")
        with gr.Row():
            weights = gr.Plot(elem_id="in-weights")
            dist = gr.Plot(elem_id="in-dist")
        source = gr.Code(language="python", label=L("ui.inside.source"), max_lines=40)
    tree.select(picked, None, module, api_visibility="private")
    return tab, module, [tree, treemap, summary, detail, source, weights, dist]


def _layernorm_tab(model):
    with gr.Tab(L("ui.inside.tab.layernorm"), id="layernorm") as tab:
        with gr.Row():
            ln = gr.Dropdown(norm_choices(model), label=L("ui.inside.norm"),
                             value=DEFAULTS["norm"], elem_id="in-ln")
            token = gr.Slider(0, 127, value=DEFAULTS["token"], step=1,
                              label=L("ui.inside.token"), elem_id="in-token")
        with gr.Row():
            gain = gr.Slider(0, 1, value=DEFAULTS["gain"], step=0.05,
                             label=L("ui.inside.gain"), elem_id="in-gain")
            bias = gr.Slider(0, 1, value=DEFAULTS["bias"], step=0.05,
                             label=L("ui.inside.bias"), elem_id="in-bias")
        note = gr.Markdown(WAIT, elem_id="in-ln-note")
        fig = gr.Plot(elem_id="in-ln")
        forms = gr.Plot(elem_id="in-ln-forms")
        params = gr.Plot(elem_id="in-ln-params")
    return tab, dict(norm=ln, token=token, gain=gain, bias=bias), [fig, forms, note, params]


def _scale_tab(cfg):
    with gr.Tab(L("ui.inside.tab.scale"), id="scale") as tab:
        with gr.Row():
            kind = gr.Radio(kind_choices(long=True), value=DEFAULTS["kind"], label=L("ui.inside.attention"),
                            elem_id="in-kind")
            layer = gr.Dropdown(list(range(cfg["N"])), value=DEFAULTS["layer"], label=L("ui.layer"), elem_id="in-layer")
            head = gr.Dropdown(list(range(cfg["h"])), value=DEFAULTS["head"], label=L("ui.head"), elem_id="in-head")
        note = gr.Markdown(WAIT, elem_id="in-scale-note")
        fig = gr.Plot(elem_id="in-scale")
        sweep = gr.Plot(elem_id="in-sweep")
    return tab, dict(kind=kind, layer=layer, head=head), [fig, note, sweep]


def _stream_tabs(cfg):
    with gr.Tab(L("ui.inside.tab.residual"), id="residual") as residual:
        res_note = gr.Markdown(WAIT, elem_id="in-res-note")
        res = gr.Plot(elem_id="in-residual")
    with gr.Tab(L("ui.inside.tab.ffn"), id="ffn") as ffn:
        which = gr.Dropdown(ffn_choices(cfg["N"]), value=DEFAULTS["ffn"], label=L("ui.layer"), elem_id="in-ffn-layer")
        ffn_note = gr.Markdown(WAIT, elem_id="in-ffn-note")
        firing = gr.Plot(elem_id="in-ffn")
        units = gr.Plot(elem_id="in-units")
    with gr.Tab(L("ui.inside.tab.lens"), id="lens") as lens:
        lens_note = gr.Markdown(WAIT, elem_id="in-lens-note")
        lens_fig = gr.Plot(elem_id="in-lens")
    return {"residual": residual, "ffn": ffn, "lens": lens}, which, \
        [res, res_note, firing, units, ffn_note, lens_fig, lens_note]


def build(cfg, page, state, lang=None):
    """Lay out the tab and wire its events: opening the tab or a sub-tab, and moving a control, draw the views
    on screen. Returns the controls and outputs of `show`, which each new translation runs too (app/ui.py)."""
    model = get_translator().model
    with gr.Tab(L("ui.tab.inside"), id="inside") as tab:
        gr.Markdown(L("ui.inside.intro"))
        with gr.Tabs(overflow_behavior="wrap"):
            modules_tab, module, mod_out = _modules_tab(model)
            ln_tab, ln_controls, ln_out = _layernorm_tab(model)
            scale_tab, scale_controls, scale_out = _scale_tab(cfg)
            subtabs, which, stream_out = _stream_tabs(cfg)
        code_panel(L("ui.inside.code"), LayerNorm, attention, core.recording_hooks, core.logit_lens)
    subtabs.update(modules=modules_tab, layernorm=ln_tab, scale=scale_tab)
    named = dict(module=module, **ln_controls, **scale_controls, ffn=which)
    controls = {name: named[name] for name in DEFAULTS}  # in the order `show` takes them
    outputs = [*mod_out, *ln_out, *scale_out, *stream_out]
    inputs = [page, state, *controls.values()]
    tab.select(opener(("inside",), show), inputs, outputs, api_visibility="private",
               concurrency_limit=1, concurrency_id="model")
    for sub, subtab in subtabs.items():
        subtab.select(opener(("inside", sub), show), inputs, outputs, api_visibility="private",
                      concurrency_limit=1, concurrency_id="model")
    gr.on([c.change for c in controls.values()], show, inputs, outputs, api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs)
