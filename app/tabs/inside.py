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
from core.instrument import KINDS, run_with_cache
from core.model import LayerNorm, attention

from ..cache import PerTranslation
from ..common import clamp, code_panel, kind_choices, kind_name, label, md_literal, panel_grid, token_axis, wrap_title
from ..i18n import DEFAULT, LANGS, L, read_lang, table, text, texts
from ..shared import MODEL_LOCK, get_translator
from ..views import View, control_changes, opener, refresh, tab_views

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


say = texts("inside")  # the tab's words drawn at run time (inside.<key>) in a language


def root_name(lang):
    """The model itself, in the tree and the figures: "model" in the page's language."""
    return text(lang, "ui.inside.root")


def param_word(name, lang):
    """A parameter's name in the page's language where it is a word (weight, bias), else as in the code (a_2)."""
    key = f"inside.param.{name}"
    return text(lang, key) if key in table(DEFAULT) else name


def grid(panels, cols, title="", height=500, gap=(0.08, 0.14), **layout):
    """The tab's panel grid (app.common.panel_grid): panels of (traces, title, x-axis dict, y-axis dict)."""
    return panel_grid(panels, cols, title, height, gap, title_font=dict(size=13), **layout)


# ---- the modules ------------------------------------------------------------------------------------

def tree_html(nodes, total, lang="en"):
    """The module tree as nested <details> (the top two levels open), each module with its class, its
    parameters counted once and its share; clicking a module's name selects it. Names from the code stay as
    they are; the words (the root's name, weight and bias, "tied to") are in `lang`."""
    children = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)

    def item(n):
        name = escape(n.name.rpartition(".")[2] or root_name(lang))
        share = n.params / total
        tied = [escape(say(lang, "tree.tied", param=param_word(p, lang), target=t)) for p, _, _, t in n.own if t]
        shapes = ", ".join(f"{param_word(p, lang)} {'×'.join(map(str, s))}" for p, s, _, _ in n.own)
        head = (f'<span class="mod" data-path="{escape(n.name)}">{name}</span> <i>{escape(n.cls)}</i> '
                f'<span class="mod-n">{n.params:,} ({share:.1%})</span>'
                f'<span class="mod-bar"><span style="width:{100 * share:.1f}%"></span></span>'
                + (f' <span class="mod-shape">{escape(shapes)}</span>' if shapes else "")
                + (f' <span class="mod-tied">{say(lang, "sep").join(tied)}</span>' if tied else ""))
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


def treemap_figure(nodes, total, lang="en"):
    """The modules as a treemap: each rectangle's area is its parameters (tied ones counted once)."""
    root = root_name(lang)
    ids = [n.name or "model" for n in nodes]
    parents = ["" if n.parent is None else (n.parent or "model") for n in nodes]
    labels = [f"{label(n.name.rpartition('.')[2] or root)} ({n.cls})" for n in nodes]
    count = say(lang, "treemap.hover")  # formatted per module below
    hover = [f"{label(n.name or root)}<br>{n.cls}<br>"
             + label(count.format(count=f"{n.params:,}", share=f"{n.params / total:.1%}")) for n in nodes]
    fig = go.Figure(go.Treemap(ids=ids, parents=parents, labels=labels, values=[n.params for n in nodes],
                               branchvalues="total", hovertext=hover, hoverinfo="text", maxdepth=3))
    fig.update_layout(title=f"{label(say(lang, 'treemap.title'))}<br><sup>{label(say(lang, 'treemap.hint'))}</sup>",
                      height=520, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def model_summary(model, cfg, nodes, lang="en"):
    """The configuration, the parameter count and what tying saves, in Markdown."""
    groups, saved = core.tying(model)
    total = nodes[0].params
    lines = [say(lang, "summary.config", N=cfg["N"], d_model=cfg["d_model"], d_ff=cfg["d_ff"], h=cfg["h"],
                 d_k=cfg["d_model"] // cfg["h"], vocab=f"{cfg['tgt_vocab']:,}", dropout=cfg["dropout"],
                 modules=len(nodes), total=f"{total:,}")]
    for names, n in groups:
        lines.append(say(lang, "summary.tying", names=", ".join(f"`{p}`" for p in names), n=f"{n:,}",
                         copies=len(names), saved=f"{saved:,}", share=f"{saved / (total + saved):.0%}",
                         untied=f"{total + saved:,}"))
    return "\n\n".join(lines)


def modules_view(lang="en"):
    """The tree, the treemap, and the model's configuration with what tying saves, in `lang`."""
    return _modules_in(read_lang(lang))


@lru_cache(maxsize=len(LANGS))
def _modules_in(lang):
    tr = get_translator()
    nodes = list(tree_nodes().values())
    return tree_html(nodes, nodes[0].params, lang), treemap_figure(nodes, nodes[0].params, lang), \
        model_summary(tr.model, tr.config, nodes, lang)


def downsampled(w):
    """A 2-D weight made at most MAX_CELLS by averaging blocks; returns it and the block size."""
    R, C = w.shape
    br, bc = math.ceil(R / MAX_CELLS[0]), math.ceil(C / MAX_CELLS[1])
    if br == bc == 1:
        return w, (1, 1)
    pooled = F.avg_pool2d(w[None, None], (br, bc), ceil_mode=True)[0, 0]  # edge blocks: their cells' mean
    return pooled, (br, bc)


def weight_figure(path, module, lang="en"):
    """A module's weights: its first 2-D parameter as a (block-averaged) heatmap, else its 1-D parameters as
    lines, else its children's parameter counts."""
    own = dict(module.named_parameters(recurse=False))
    mats = {n: p for n, p in own.items() if p.dim() == 2}
    if mats:
        name, w = next(iter(mats.items()))
        w = w.detach().float()
        shown, (br, bc) = downsampled(w)
        lim = float(shown.abs().max()) or 1.0
        note = "" if br == bc == 1 else f"<br><sup>{label(say(lang, 'weights.block', rows=br, cols=bc))}</sup>"
        hover = label(say(lang, "weights.hover", row="%{y}", col="%{x}", value="%{z:.4f}")) + "<extra></extra>"
        fig = go.Figure(go.Heatmap(z=small(shown), colorscale="RdBu_r", zmid=0, zmin=-lim, zmax=lim,
                                   hovertemplate=hover))
        fig.update_layout(title=wrap_title(f"{label(path)}.{name} {tuple(w.shape)}") + note, yaxis_autorange="reversed",
                          xaxis_title=say(lang, "weights.input"), yaxis_title=say(lang, "weights.output"))
    elif own:
        fig = go.Figure([go.Scatter(y=small(p), mode="lines", name=n) for n, p in own.items()])
        fig.update_layout(title=wrap_title(label(say(lang, "weights.by_index", module=path))),
                          xaxis_title=say(lang, "weights.index"))
    else:
        kids = [(n, sum(p.numel() for p in m.parameters())) for n, m in module.named_children()]
        fig = go.Figure(go.Bar(x=[label(n) for n, _ in kids], y=[c for _, c in kids], marker_color=BLUE))
        fig.update_layout(title=label(say(lang, "weights.children", module=path or root_name(lang))),
                          yaxis_title=say(lang, "weights.parameters"))
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


def distribution_figure(path, module, lang="en"):
    """The distribution of a module's parameters (each of its own, else all below it together)."""
    own = dict(module.named_parameters(recurse=False))
    below = list(module.parameters())
    groups = {param_word(n, lang): [p] for n, p in own.items()} or ({say(lang, "dist.all"): below} if below else {})
    if not groups:
        return go.Figure().update_layout(title=label(say(lang, "dist.none", module=path)), height=300)
    fig = go.Figure()
    for name, tensors in groups.items():
        x, counts, width, (n, mean, std) = histogram(tensors)
        fig.add_trace(go.Bar(x=small(x, 5), y=counts.int().numpy(), width=width, opacity=0.75,
                             name=label(say(lang, "dist.legend", name=name, count=f"{n:,}", mean=f"{mean:.3f}",
                                            std=f"{std:.3f}"))))
    fig.update_layout(title=wrap_title(label(say(lang, "dist.title", module=path or root_name(lang)))), barmode="overlay",
                      height=420, xaxis_title=say(lang, "dist.value"), yaxis_title=say(lang, "dist.count"),
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.2))
    return fig


@lru_cache(maxsize=1)
def tree_nodes():
    """The shipped model's module tree (core.analysis.inside.module_tree), by path."""
    return {n.name: n for n in core.module_tree(get_translator().model)}


def module_view(path, lang="en"):
    """The selected module: what it is, its source (read from its class now), its weights and their spread."""
    return _module_view(path if path in tree_nodes() else FIRST_MODULE, read_lang(lang))


@lru_cache(maxsize=32 * len(LANGS))
def _module_view(path, lang):
    model = get_translator().model
    module = dict(model.named_modules(remove_duplicate=False))[path]
    node = tree_nodes()[path]
    total = sum(p.numel() for p in model.parameters())
    own = say(lang, "sep").join(f"`{p}` {tuple(s)} = {n:,}" + (say(lang, "module.tied", target=t) if t else "")
                    for p, s, n, t in node.own) or say(lang, "module.none")
    about = say(lang, "module.about", path=path or root_name(lang), cls=node.cls, params=f"{node.params:,}",
                share=f"{node.params / total:.2%}", total=f"{total:,}", own=own)
    try:
        source = inspect.getsource(type(module))
    except (OSError, TypeError):
        source = "# " + say(lang, "module.no_source", cls=type(module).__qualname__)
    return about, source, weight_figure(path, module, lang), distribution_figure(path, module, lang)


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


def norm_label(path, lang=DEFAULT):
    """A LayerNorm's place in words (for figures and notes): "encoder layer 0, before self-attention"."""
    key, values = norm_place(path)
    return text(lang, key, **values)


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


def layernorm_figure(v, title, lang="en"):
    """Input, normalised, and output (trained, and with the sliders' gain and bias) over the dimensions."""
    line = dict(type="scatter", mode="lines")
    t = {k: say(lang, f"ln.{k}") for k in ("input", "normalised", "normalised_title", "output", "moved", "compare",
                                            "output_title")}
    panels = [([dict(line, y=small(v["input"]), name=t["input"], line=dict(color=GREY))], t["input"], {}, {}),
              ([dict(line, y=small(v["normalised"]), name=t["normalised"], line=dict(color=BLUE))],
               t["normalised_title"], {}, {}),
              ([dict(line, y=small(v["output"]), name=t["output"], line=dict(color=ORANGE)),
                dict(line, y=small(v["moved"]), name=t["moved"], line=dict(color="#2a9d4b", dash="dot")),
                dict(line, y=small(v["input"]), name=t["compare"], line=dict(color=GREY, width=1))],
               t["output_title"], dict(title=say(lang, "dimension")), {})]
    return grid(panels, 1, wrap_title(title), height=660, gap=(0, 0.09), legend=dict(orientation="h", y=-0.08),
                margin=dict(l=10, r=10, t=120, b=10))


def forms_figure(v, title, lang="en"):
    """The Annotated Transformer's LayerNorm minus ours on the same vector, per dimension."""
    trace = dict(type="scatter", y=small(v["annotated"] - v["output"], 6), mode="lines", name=say(lang, "ln.minus"),
                 line=dict(color="#7b3fa0"))
    return go.Figure([trace], dict(title=wrap_title(title), height=300, xaxis=dict(title=say(lang, "dimension")),
                                   yaxis=dict(title=say(lang, "ln.difference")), margin=dict(l=10, r=10, t=50, b=10)))


def layernorm_view(ins, path, token, undo_gain, undo_bias, lang="en"):
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
    place = norm_label(path, lang)
    where = say(lang, "ln.where", place=place, pos=pos, token=label(tokens[pos]))  # plotly text: the token escaped
    fig = layernorm_figure(v, say(lang, "ln.title", where=where, gain=f"{g:.2f}", bias=f"{b:.2f}"), lang)
    delta, changed = derived(ins, "annotated", core.annotated_norm_effect)
    n = x.numel()
    forms = forms_figure(v, say(lang, "ln.forms", largest=f"{float((v['annotated'] - v['output']).abs().max()):.2e}"),
                         lang)
    note = (say(lang, "ln.note", place=md_literal(place), pos=pos, token=md_literal(tokens[pos]),
                mean=f"{float(v['mean']):.3f}", sigma=f"{float(v['sigma']):.3f}", gain=f"{g:.2f}", bias=f"{b:.2f}",
                gap=f"{float((v['moved'] - x).abs().max()):.2e}") + "\n\n"
            + say(lang, "ln.forms_note", factor=f"{math.sqrt(n / (n - 1)):.5f}", n=n, norms=len(norms),
                  delta=f"{delta:.3f}", changed=len(changed), positions=len(ins.tgt_tokens)))
    return fig, forms, note


def ln_params_figure(lang="en"):
    """Every LayerNorm's trained gain a_2 and bias b_2, dimension by dimension (no sentence needed)."""
    return _ln_params_in(read_lang(lang))


@lru_cache(maxsize=len(LANGS))
def _ln_params_in(lang):
    norms = core.layer_norms(get_translator().model)
    names = [norm_label(p, lang) for p in norms]
    gains = torch.stack([m.a_2.detach().float() for m in norms.values()])
    biases = torch.stack([m.b_2.detach().float() for m in norms.values()])
    ticks = dict(type="category", autorange="reversed")
    panels = []
    for z, what, scale in ((gains, "gain", "Viridis"), (biases, "bias", "RdBu_r")):
        name = say(lang, f"ln.{what}")
        hover = say(lang, "ln.hover", norm="%{y}", dim="%{x}", what=name, value="%{z:.3f}") + "<extra></extra>"
        trace = dict(type="heatmap", z=small(z, 3), y=names, colorscale=scale, hovertemplate=hover,
                     colorbar=dict(x=1.0 if what == "bias" else 0.46, len=0.9),
                     **({"zmid": 0} if what == "bias" else {}))
        panels.append(([trace], say(lang, "ln.params", name=name, mean=f"{float(z.mean()):.3f}",
                                    lo=f"{float(z.min()):.2f}", hi=f"{float(z.max()):.2f}"),
                       dict(title=say(lang, "dimension")), ticks if not panels else dict(ticks, showticklabels=False)))
    return grid(panels, 2, say(lang, "ln.params_title"), height=520, gap=(0.1, 0),
                margin=dict(l=230, r=40, t=80, b=40))


# ---- why 1/sqrt(d_k) ---------------------------------------------------------------------------------

def scale_data(rec, kind, layer, head):
    """The raw scores of one head, their d_k and mask, and the softmax statistics without and with the scale."""
    raw, dk, mask = core.scores(rec, kind, layer, head)
    return dict(raw=raw, dk=dk, mask=mask, plain=core.softmax_stats(raw, mask),
                scaled=core.softmax_stats(raw / math.sqrt(dk), mask))


def scale_figure(d, q_tokens, title, lang="en"):
    """Scores with and without the scale, and per query: the largest weight, the entropy, the Jacobian norm."""
    mask, s = d["mask"], math.sqrt(d["dk"])
    hist = dict(type="histogram", opacity=0.7, nbinsx=40)
    axis = token_axis(q_tokens, title=say(lang, "scale.query"))
    lines = []
    for name, color in (("plain", ORANGE), ("scaled", BLUE)):
        lines.append([dict(type="scatter", mode="lines+markers", y=small(d[name][j]), line=dict(color=color),
                           name="QKᵀ" if name == "plain" else "QKᵀ/√d_k", showlegend=False, legendgroup=name)
                      for j in (1, 2, 3)])
    # (the histogram's ticks stand off its axes: the corner's two, the first score and the count's 0, apart)
    panels = [([dict(hist, x=small(d["raw"][mask], 3), name=say(lang, "scale.no_scale"), marker_color=ORANGE,
                     legendgroup="plain"),
                dict(hist, x=small(d["raw"][mask] / s, 3), name=f"QKᵀ/√{d['dk']}", marker_color=BLUE,
                     legendgroup="scaled")], say(lang, "scale.scores"),
               dict(title=say(lang, "scale.score"), ticklabelstandoff=4), dict(ticklabelstandoff=6))]
    for j, name in enumerate(("largest", "entropy", "jacobian")):
        panels.append(([lines[0][j], lines[1][j]], say(lang, f"scale.{name}"), axis, {}))
    # the legend under the panels and room between the rows: the top row's turned token ticks and the titles
    # of the row below stay apart
    return grid(panels, 2, title, height=720, gap=(0.1, 0.3), barmode="overlay",
                legend=dict(orientation="h", y=-0.12, x=0, yanchor="top"), margin=dict(l=10, r=10, t=80, b=60))


def sweep_figure(lang="en"):
    """The same statistics for random unit-variance queries and keys (16 keys) as d_k grows from 4 to 512."""
    return _sweep_in(read_lang(lang))


@lru_cache(maxsize=len(LANGS))
def _sweep_in(lang):
    r = core.random_scale_sweep()
    x = dict(type="log", title="d_k", tickvals=r["dk"], ticktext=[str(d) for d in r["dk"]])
    panels = []
    for key in ("std", "max", "entropy", "grad"):
        name = say(lang, f"sweep.{key}")
        panels.append(([dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"plain_{key}"], 4),
                             name="q·k", line=dict(color=ORANGE), legendgroup="p", showlegend=not panels),
                        dict(type="scatter", mode="lines+markers", x=r["dk"], y=np.round(r[f"scaled_{key}"], 4),
                             name="q·k/√d_k", line=dict(color=BLUE), legendgroup="s", showlegend=not panels)],
                       name, x, {}))
    # as the scale figure: the legend under the panels, the rows apart (the top row's axis titles, the titles below)
    return grid(panels, 2, wrap_title(say(lang, "sweep.title")), height=640, gap=(0.1, 0.28),
                legend=dict(orientation="h", y=-0.12, x=0, yanchor="top"), margin=dict(l=10, r=10, t=90, b=60))


def scale_view(ins, kind, layer, head, lang="en"):
    """The 1/sqrt(d_k) scale on the trained model's own queries and keys for this sentence."""
    kind = kind if kind in KINDS else "encoder"
    rec = recorded(ins)
    layers, heads = rec.q[kind].shape[:2]
    layer, head = clamp(layer, 0, layers - 1), clamp(head, 0, heads - 1)
    d = scale_data(rec, kind, layer, head)
    q_tokens = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    title = say(lang, "scale.title", kind=kind_name(kind, lang, long=True), layer=layer, head=head, dk=d["dk"])
    fig = scale_figure(d, q_tokens, title, lang)
    p, ps = d["plain"], d["scaled"]
    std = d["raw"][d["mask"]].std()
    note = say(lang, "scale.note", std=f"{float(std):.2f}", std_scaled=f"{float(std / math.sqrt(d['dk'])):.2f}",
               top=f"{float(p[1].mean()):.2f}", top_scaled=f"{float(ps[1].mean()):.2f}",
               entropy=f"{float(p[2].mean()):.2f}", entropy_scaled=f"{float(ps[2].mean()):.2f}",
               grad=f"{float(p[3].mean()):.3f}", grad_scaled=f"{float(ps[3].mean()):.3f}")
    return fig, note


# ---- residual stream, feed-forward, logit lens ------------------------------------------------------

def stage_label(stage, lang):
    """A stage of the residual stream (core.analysis.inside.stage_names: (layer, part)) in words: "layer 0
    self-attention", "embedding + PE", ..."""
    layer, part = stage
    words = say(lang, f"stage.{part}")
    return words if layer is None else say(lang, "stage.layer", layer=layer, sub=words)


def residual_figure(rec, ins, lang="en"):
    """Each token's norm after every stage, and each stage's relative change, for both stacks."""
    panels = []
    for what in ("norm", "change"):
        for side, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
            norms, change = core.stream_norms(rec, side)
            stages = rec.stages[side] if what == "norm" else rec.stages[side][1:]
            z = norms if what == "norm" else change
            hover = "%{y}<br>" + say(lang, "res.hover", token="%{x}",
                                     value="‖x‖ = %{z:.2f}" if what == "norm" else "‖Δx‖ / ‖x‖ = %{z:.3f}")
            trace = dict(type="heatmap", z=small(z, 3), y=[stage_label(s, lang) for s in stages],
                         colorscale="Viridis" if what == "norm" else "Magma",
                         hovertemplate=hover + "<extra></extra>", showscale=False)
            panels.append(([trace], say(lang, f"res.{what}", side=say(lang, f"side.{side}")),
                           token_axis(tokens, tickangle=-60), dict(autorange="reversed", type="category")))
    return grid(panels, 2, wrap_title(say(lang, "res.title")), height=850, gap=(0.18, 0.16),
                margin=dict(l=180, r=10, t=110, b=60))


def residual_view(ins, lang="en"):
    rec = recorded(ins)
    norms, change = core.stream_norms(rec, "decoder")
    big = int(change.mean(-1).argmax())
    note = say(lang, "res.note", stage=md_literal(stage_label(rec.stages["decoder"][big + 1], lang)),
               change=f"{float(change[big].mean()):.2f}")
    return residual_figure(rec, ins, lang), note


def ffn_choices(n_layers):
    """The feed-forward layer menu: "encoder layer 0", ... in both languages, as "encoder/0", ..."""
    return [(L(f"ui.inside.layer.{side}", layer=i), f"{side}/{i}") for side in ("encoder", "decoder")
            for i in range(n_layers)]


def ffn_figures(rec, ins, side, layer, top=24, lang="en"):
    """How many units fire per token and layer (both stacks), and the most often firing units of one layer."""
    panels = []
    for s, tokens in (("encoder", ins.src_tokens), ("decoder", ins.tgt_tokens)):
        count, _ = core.ffn_firing(rec, s)
        d_ff = rec.ffn[s].size(-1)
        hover = say(lang, "ffn.hover", at=say(lang, "at_token", what="%{y}", token="%{x}"), count="%{z}", d_ff=d_ff)
        trace = dict(type="heatmap", z=count.numpy(), y=[say(lang, "layer", layer=i) for i in range(count.size(0))],
                     zmin=0, zmax=d_ff, colorscale="Blues", showscale=s == "decoder",
                     hovertemplate=hover + "<extra></extra>")
        panels.append(([trace], say(lang, "ffn.panel", side=say(lang, f"side.{s}"), d_ff=d_ff),
                       token_axis(tokens, tickangle=-60), dict(autorange="reversed", type="category")))
    firing = grid(panels, 2, say(lang, "ffn.title"), height=360, margin=dict(l=70, r=10, t=80, b=60))
    tokens = ins.src_tokens if side == "encoder" else ins.tgt_tokens
    act = rec.ffn[side][layer]  # (L, d_ff)
    fires = (act > 0).sum(0)
    order = np.lexsort((-act.mean(0).numpy(), -fires.numpy()))[:top].tolist()  # most tokens, then mean
    trace = dict(type="heatmap", z=small(act[:, order].T, 3), y=[say(lang, "ffn.unit", unit=u) for u in order],
                 colorscale="Oranges",
                 hovertemplate=say(lang, "ffn.unit_hover", at=say(lang, "at_token", what="%{y}", token="%{x}"),
                                   value="%{z:.3f}") + "<extra></extra>")
    units = go.Figure([trace], dict(
        title=wrap_title(say(lang, "ffn.units", where=text(lang, f"ui.inside.layer.{side}", layer=layer), top=top)),
        height=max(360, 120 + 18 * top), xaxis=token_axis(tokens, tickangle=-60),
        yaxis=dict(autorange="reversed", type="category"), margin=dict(l=80, r=10, t=50, b=60)))
    return firing, units, fires


def ffn_view(ins, which, lang="en"):
    rec = recorded(ins)
    side, _, layer = str(which).partition("/")
    side = side if side in ("encoder", "decoder") else "encoder"
    layer = clamp(layer, 0, rec.ffn[side].size(0) - 1)
    firing, units, fires = ffn_figures(rec, ins, side, layer, lang=lang)
    on = (rec.ffn[side][layer] > 0).float().sum(-1)
    d_ff = rec.ffn[side].size(-1)
    note = say(lang, "ffn.note", where=text(lang, f"ui.inside.layer.{side}", layer=layer),
               mean=f"{float(on.mean()):.0f}", d_ff=d_ff, share=f"{float(on.mean()) / d_ff:.0%}",
               all=int((fires == on.numel()).sum()), none=int((fires == 0).sum()))
    return firing, units, note


def lens_figure(top_i, top_p, p_chosen, ins, piece, lang="en"):
    """Rows: output positions; columns: decoder layers; each cell the token the output projection would choose
    from that layer's state, coloured by its probability. Positions go down, so that a few wide columns hold
    the tokens at a size that reads on a phone too (plotly shrinks a cell's text to fit it)."""
    L, T = top_i.shape
    tops = [[label(piece(top_i[l, t])) for l in range(L)] for t in range(T)]
    after, choice = say(lang, "lens.after"), say(lang, "lens.choice")  # formatted per cell below
    hover = [[after.format(token=label(ins.tgt_tokens[t]), top=tops[t][l], p=f"{top_p[l, t]:.3f}") + "<br>"
              + choice.format(token=label(ins.out_tokens[t]), p=f"{p_chosen[l, t]:.3f}") for l in range(L)]
             for t in range(T)]
    trace = dict(type="heatmap", z=small(top_p.T, 3), text=tops, texttemplate="%{text}", textfont=dict(size=12),
                 hovertext=hover, hoverinfo="text", colorscale="Greens", zmin=0, zmax=1,
                 x=[say(lang, "layer", layer=l) for l in range(L)], colorbar=dict(title="p", thickness=12))
    return go.Figure([trace], dict(
        title=dict(text=wrap_title(say(lang, "lens.title")), yref="container", y=1, yanchor="top", pad=dict(t=20)),
        height=180 + 32 * T,
        yaxis=token_axis([f"{t}→" for t in ins.tgt_tokens], autorange="reversed", title=say(lang, "lens.input")),
        xaxis=dict(type="category"), margin=dict(l=70, r=10, t=160, b=40)))


def lens_view(ins, lang="en"):
    top_i, top_p, p_chosen = derived(ins, "lens", core.logit_lens)
    piece = get_translator().tokenizer.id_to_piece
    agree = sum(piece(i) == t for i, t in zip(top_i[-1].tolist(), ins.out_tokens))
    note = say(lang, "lens.note", agree=agree, positions=len(ins.out_tokens))
    return lens_figure(top_i, top_p, p_chosen, ins, piece, lang), note


# the views of the tab, in the order of its outputs, each reading the controls named in `uses`
# (each draws its words in the page's language, "lang", the last control it reads)
VIEWS = [View("inside/modules", ("inside", "modules"), modules_view, outputs=3, uses=("lang",),
              reads_translation=False),
         View("inside/module", ("inside", "modules"), module_view, outputs=4, uses=("module", "lang"),
              reads_translation=False),
         View("inside/layernorm", ("inside", "layernorm"), layernorm_view, outputs=3,
              uses=("norm", "token", "gain", "bias", "lang"), blank=(None, None, WAIT)),
         View("inside/ln-params", ("inside", "layernorm"), ln_params_figure, uses=("lang",), reads_translation=False),
         View("inside/scale", ("inside", "scale"), scale_view, outputs=2, uses=("kind", "layer", "head", "lang"),
              blank=(None, WAIT)),
         View("inside/sweep", ("inside", "scale"), sweep_figure, uses=("lang",), reads_translation=False),
         View("inside/residual", ("inside", "residual"), residual_view, outputs=2, uses=("lang",), blank=(None, WAIT)),
         View("inside/ffn", ("inside", "ffn"), ffn_view, outputs=3, uses=("ffn", "lang"), blank=(None, None, WAIT)),
         View("inside/lens", ("inside", "lens"), lens_view, outputs=2, uses=("lang",), blank=(None, WAIT))]


# the controls' first values, by name, in the order `show` takes them (the page's language last)
DEFAULTS = {"module": FIRST_MODULE, "norm": "encoder.layers.0.sublayer.0.norm", "token": 1, "gain": 0.0, "bias": 0.0,
            "kind": "encoder", "layer": 0, "head": 0, "ffn": "encoder/0", "lang": DEFAULT}


def show(page, ins, *controls):
    """The tab's views for the page as it is (app/views.py): what is on screen drawn, the rest left or cleared.
    A view that does not read the translation is refreshed as if there were none, so that a new translation
    does not draw it again. `controls` are the values of those of DEFAULTS, in order (the page's language
    last); those not given take their first values."""
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


def build(cfg, page, state, lang):
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
        code_panel(L("ui.inside.code"), LayerNorm, attention, run_with_cache, core.logit_lens)
    subtabs.update(modules=modules_tab, layernorm=ln_tab, scale=scale_tab)
    named = dict(module=module, **ln_controls, **scale_controls, ffn=which, lang=lang)
    controls = {name: named[name] for name in DEFAULTS}  # in the order `show` takes them
    outputs = [*mod_out, *ln_out, *scale_out, *stream_out]
    inputs = [page, state, *controls.values()]
    tab.select(opener(("inside",), show), inputs, outputs, api_visibility="private",
               concurrency_limit=1, concurrency_id="model")
    for sub, subtab in subtabs.items():
        subtab.select(opener(("inside", sub), show), inputs, outputs, api_visibility="private",
                      concurrency_limit=1, concurrency_id="model")
    # a control moved: the views on screen that read it are drawn again (a new language: app/ui.py)
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs)
