"""The Time-lapse tab's figures: the shipped model at the points of its own training run that ship beside it
(core/checkpoint.py's snapshots, `Translator.snapshots()`), with the measures computed over them once
(core/analysis/timelapse.py, timelapse.json beside the model). Pure builders: the run's points, a translation
made by one of them and the controls in, a figure or escaped markup out, their words in the event's language.

The time axis is the optimizer step on a log scale, where the first few hundred steps (when most of the change
happens) get as much room as the last twenty epochs; the initialisation, step 0, is drawn at step 1.
"""
import difflib
import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analysis.heads import CROSS_MEASURES, SELF_MEASURES
from core.checkpoint import read_snapshot_index

from ..common import kind_name, label, phone_width, title_room, token_strip, top_colorbar, wrap_title
from ..i18n import text, texts
from .attention import SCALE, _axis, _heatmap, attention_maps, rounded
from .heads import measure_definition, measure_key
from .training import _smooth, read_log

_t = texts("timelapse")
MEASURES_FILE = "timelapse.json"  # beside the model: python -m core.analysis.timelapse writes it
MEASURES = {"encoder": SELF_MEASURES, "decoder": SELF_MEASURES, "cross": CROSS_MEASURES}


@lru_cache(maxsize=4)
def _read(directory):
    directory = Path(directory)
    entries = read_snapshot_index(directory)
    measured = {}
    path = directory / MEASURES_FILE
    if path.exists():
        measured = {r["label"]: r for r in json.loads(path.read_text())["snapshots"]}
    points = []
    for e in entries:
        m = measured.get(e["label"], {})
        points.append({"label": e["label"], "step": e["step"], "epoch": e["epoch"], "train_loss": e.get("train_loss"),
                       "val_loss": e["val_loss"], "probes": list(e.get("probes") or []), "bits": e.get("bits"),
                       "bleu": m.get("bleu"), "hidden_source_loss": m.get("hidden_source_loss"),
                       "heads": m.get("heads")})
    log = directory / "train_log.jsonl"
    return tuple(points), (read_log(log) if log.exists() else (None, [], []))


def run_points(directory):
    """The points of the run that ship beside the model in `directory`, oldest first: dicts of label, step,
    epoch, train_loss, val_loss, probes (their greedy translations of the probe sentences) and, where
    timelapse.json measured them, bleu, hidden_source_loss and heads ({kind: {measure: [layer][head]}})."""
    return _read(str(Path(directory).resolve()))[0]


def steps_per_epoch(directory):
    """The optimizer steps of one epoch of the run (from its log's batching; None where it does not say)."""
    config = run_log(directory)[0] or {}
    batches = ((config.get("batching") or {}).get("token_based") or {}).get("batches")
    accum = (config.get("args") or {}).get("accum_iter") or 1
    return -(-batches // accum) if batches else None


def run_log(directory):
    """(config, step records, epoch records) of the run's log beside the model."""
    return _read(str(Path(directory).resolve()))[1]


def point_name(p):
    """A point's name on the page: "initialisation", "step 200", "epoch 3"."""
    if p["step"] == 0:
        return _t("init")
    if p["label"].startswith("epoch-"):
        return _t("epoch", epoch=p["epoch"])
    return _t("step", step=p["step"])


def _x(step):
    return max(int(step), 1)


def where_now(points, i, per_epoch=None):
    """One line on the chosen point: its name, its step (and how many epochs that is, given `per_epoch`, the
    optimizer steps of an epoch) and what it scores."""
    p = points[i]
    parts = [f"**{point_name(p)}**", _t("where.step", step=f"{p['step']:,}")]
    if per_epoch:
        epochs = f"{p['step'] / per_epoch:.2f}".rstrip("0").rstrip(".")
        parts[-1] += _t("where.epochs.one" if epochs == "1" else "where.epochs", epochs=epochs)
    parts.append(_t("where.loss", loss=f"{p['val_loss']:.2f}"))
    if p.get("bleu") is not None:
        parts.append(_t("where.bleu", bleu=f"{p['bleu']:.1f}"))
    if p.get("hidden_source_loss") is not None:
        parts.append(_t("where.hidden", loss=f"{p['hidden_source_loss']:.2f}"))
    return f"{i} / {len(points) - 1} · " + " · ".join(parts)  # as the slider counts them: 0 is the initialisation


def log_points(epochs):
    """The points a run's log alone gives, where no snapshot ships: the end of each epoch, with its val loss,
    val BLEU and probe translations as logged."""
    return tuple({"label": f"epoch-{e['epoch']}", "step": e["step"], "epoch": e["epoch"], "val_loss": e["val_loss"],
                  "train_loss": e.get("train_loss"), "bleu": e.get("val_bleu"), "hidden_source_loss": None,
                  "probes": list(e.get("probes") or []), "heads": None} for e in epochs)


LINE_POINTS = 240  # a per-step line's points on the log axis: more than its pixels' width draws nothing more


def log_spaced(n, most=LINE_POINTS):
    """Indices 0..n-1 of about `most` points evenly spaced on a log axis of steps 1..n, the first and last kept."""
    if n <= most:
        return list(range(n))
    return sorted({min(n - 1, round(math.exp(math.log(n) * k / (most - 1))) - 1) for k in range(most)} | {0, n - 1})


def x_range(points, steps):
    """The step axis's range, in powers of ten (plotly's unit for a log axis): from the initialisation (drawn at
    1) to the last step logged or point kept, with a little room on each side."""
    hi = math.log10(_x(max([p["step"] for p in points] + [r["step"] for r in steps[-1:]])))
    pad = 0.03 * max(hi, 1.0)
    return -pad, hi + pad


def point_fractions(points, steps):
    """Where each point stands across the step axis, 0 at its left end and 1 at its right (the page draws the
    chosen point's line there itself, so that moving the scrubber sends no figure: app/tabs/timelapse.py)."""
    lo, hi = x_range(points, steps)
    return [round((math.log10(_x(p["step"])) - lo) / (hi - lo), 5) for p in points]


def curves_figure(points, steps, i=None, lr=True, bleu=True, height=470, note=True):
    """The run over a log-scaled step axis: the training loss (every step, smoothed), each point's val loss and
    loss with the source hidden, its greedy BLEU (right axis; not with bleu=False), the learning rate below (not
    with lr=False); the point `i`, if given, marked by a line through both and named above it (not with
    note=False, where a title names it)."""
    fig = make_subplots(rows=2 if lr else 1, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26] if lr else None,
                        vertical_spacing=0.06, specs=[[{"secondary_y": True}], [{}]] if lr else [[{"secondary_y": True}]])
    if steps:
        keep = log_spaced(len(steps))
        smooth = _smooth([r["loss"] for r in steps])
        xs, loss, rates = ([_x(steps[k]["step"]) for k in keep], [smooth[k] for k in keep],
                           [steps[k]["lr"] for k in keep])
        fig.add_trace(go.Scatter(x=xs, y=loss, name=_t("curves.train"), mode="lines",
                                 line=dict(color="#9bb7d4", width=1.5), hovertemplate="%{y:.2f}"), row=1, col=1)
        if lr:
            fig.add_trace(go.Scatter(x=xs, y=rates, name=_t("curves.lr"), mode="lines", line=dict(color="#8c6bb1"),
                                     hovertemplate="%{y:.2e}", showlegend=False), row=2, col=1)
    xs = [_x(p["step"]) for p in points]
    names = [point_name(p) for p in points]
    fig.add_trace(go.Scatter(x=xs, y=[p["val_loss"] for p in points], name=_t("curves.val"), mode="lines+markers",
                             text=names, line=dict(color="#1f4e8c"), hovertemplate="%{text}: %{y:.3f}"), row=1, col=1)
    if all(p.get("hidden_source_loss") is not None for p in points):
        fig.add_trace(go.Scatter(x=xs, y=[p["hidden_source_loss"] for p in points], name=_t("curves.hidden"),
                                 mode="lines+markers", text=names, line=dict(color="#e4572e", dash="dash"),
                                 hovertemplate="%{text}: %{y:.3f}"), row=1, col=1)
    if bleu and all(p.get("bleu") is not None for p in points):
        fig.add_trace(go.Scatter(x=xs, y=[p["bleu"] for p in points], name=_t("curves.bleu"), mode="lines+markers",
                                 text=names, line=dict(color="#2a9d55"), hovertemplate="%{text}: %{y:.1f}"),
                      row=1, col=1, secondary_y=True)
        fig.update_yaxes(title_text=_t("curves.bleu-axis"), row=1, col=1, secondary_y=True, rangemode="tozero", showgrid=False)
    if i is not None:
        # on a log axis the page's plotly places a shape by its value and a note by the value's exponent
        fig.add_vline(x=xs[i], line=dict(color="#e4572e", width=2))
        if note:
            fig.add_annotation(x=math.log10(xs[i]), y=1, yref="paper", text=names[i], showarrow=False, yanchor="bottom",
                               font=dict(color="#e4572e"), xanchor="left" if i < len(points) / 2 else "right")
    fig.update_xaxes(range=list(x_range(points, steps)))
    fig.update_xaxes(type="log", row=1, col=1, title_text=None if lr else _t("curves.x"))
    fig.update_yaxes(title_text=_t("curves.loss"), row=1, col=1, secondary_y=False)
    if lr:
        fig.update_xaxes(type="log", title_text=_t("curves.x"), row=2, col=1)
        fig.update_yaxes(title_text=_t("curves.lr"), row=2, col=1, exponentformat="e")
    fig.update_layout(title=wrap_title(_t("curves.title")), height=height, margin=dict(l=60, r=50, t=80, b=50),
                      legend=dict(orientation="h", y=-0.22), hovermode="x unified")
    return fig


def changed_positions(before, after):
    """Positions in `after` (a token list) of the tokens that are not in `before` as they stand: inserted or
    replaced, by difflib's alignment of the two."""
    marked = set()
    for op, _, _, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            marked.update(range(j1, j2))
    return marked


def translation_html(ins, previous=None, previous_name=None):
    """The point's translation as a token strip (each token on its probability), the tokens that changed since
    the previous point's translation (`previous`, a token list) outlined."""
    tokens = list(ins.out_tokens)
    marked = changed_positions(list(previous), tokens) if previous is not None else set()
    # none, one or several changed, each said as such ("the 1 tokens" is no English)
    how = {0: "said.changed.none", 1: "said.changed.one"}.get(len(marked), "said.changed")
    legend = (_t(how, name=previous_name, n=len(marked)) if previous is not None else _t("said.first"))
    return token_strip(tokens, ins.token_probs, marked=marked, legend=legend)


MOSAIC_COLS = 4  # a layer's heads, side by side in rows of this many


def cross_figure(ins, layer, head, name):
    """The point's cross-attention for its translation in one figure of two plots: above, layer `layer`'s heads
    as one mosaic (a map per head, rows are the output tokens, columns the German ones; head `head` outlined);
    below, head `head` alone with its tokens. One heatmap each, rather than a plot a head: moving the scrubber
    redraws it, and a browser draws two plots much sooner than nine."""
    maps, q, k = attention_maps(ins, "cross")
    layer_maps = rounded(maps[layer])                         # (H, Tq, Tk)
    n, tq, tk = layer_maps.shape
    cols = min(MOSAIC_COLS, n)
    rows = -(-n // cols)
    z = np.full((rows * (tq + 1) - 1, cols * (tk + 1) - 1), np.nan, dtype=np.float32)  # a blank line between maps
    who = np.full(z.shape, -1, dtype=np.int16)
    for h in range(n):
        r, c = divmod(h, cols)
        z[r * (tq + 1): r * (tq + 1) + tq, c * (tk + 1): c * (tk + 1) + tk] = layer_maps[h]
        who[r * (tq + 1): r * (tq + 1) + tq, c * (tk + 1): c * (tk + 1) + tk] = h
    head_word = _t("cross.hover-head")
    mosaic = dict(type="heatmap", z=z, customdata=who, zmin=0, zmax=1, colorscale=SCALE, showscale=False,
                  hovertemplate=f"{head_word} %{{customdata}}<br>%{{z:.3f}}<extra></extra>", xaxis="x", yaxis="y",
                  hoverongaps=False)
    # the colour bar (both plots' scale) across the top under the title: at the right it took 80 px of a phone's
    # width, and the German's 13 turned labels, in the 130 px left, ran into each other
    title = wrap_title(_t("cross.title", layer=layer, head=head, name=name))
    below, height = title_room(title), 460 + 22 * len(q)
    one = _heatmap(maps[layer, head], q, k, "", xaxis="x2", yaxis="y2",
                   colorbar=top_colorbar(below, height, len=0.6, title=dict(text=_t("cross.weight"), side="bottom")))
    r, c = divmod(head, cols)
    outline = dict(type="rect", xref="x", yref="y", x0=c * (tk + 1) - 0.5, x1=c * (tk + 1) + tk - 0.5,
                   y0=r * (tq + 1) - 0.5, y1=r * (tq + 1) + tq - 0.5, line=dict(color="#e4572e", width=2))
    top = 0.62 if rows > 1 else 0.7  # the mosaic's share of the height, above the chosen head
    layout = dict(
        title=title, height=height, margin=dict(l=90, r=10, t=below + 78, b=90), shapes=[outline],
        xaxis=dict(domain=[0, 1], showticklabels=False, showgrid=False, zeroline=False, anchor="y"),
        yaxis=dict(domain=[top + 0.04, 1], autorange="reversed", showticklabels=False, showgrid=False,
                   zeroline=False, anchor="x"),
        xaxis2=dict(_axis(k, tickangle=-90), domain=[0, 1], anchor="y2"),
        yaxis2=dict(_axis(q, autorange="reversed"), domain=[0, top - 0.1], anchor="x2"),
        annotations=[dict(text=_t("cross.layer", layer=layer, cols=cols), xref="paper", yref="paper", x=0,
                          y=1, yanchor="bottom", xanchor="left", showarrow=False, font=dict(size=12)),
                     dict(text=_t("cross.head", head=head), xref="paper", yref="paper", x=0, y=top - 0.06,
                          yanchor="bottom", xanchor="left", showarrow=False, font=dict(size=12))])
    return phone_width(go.Figure([mosaic, one], layout), len(k), room=100)  # the output's labels at the left


def halfway(values):
    """The first index where `values` has come halfway from its first value to its last (None if flat)."""
    start, end = values[0], values[-1]
    if abs(end - start) < 1e-9:
        return None
    for t, v in enumerate(values):
        if (v - start) / (end - start) >= 0.5:
            return t
    return len(values) - 1


def heads_time_figure(points, kind, measure):
    """Heads x time: one row per head of `kind` (layer by head), one column per point, coloured by `measure`
    of the head atlas at that point; an x where each head came halfway from its value at the first point to
    its value at the last."""
    measured = [p for p in points if p.get("heads")]
    if len(measured) < len(points) or not points:
        return None
    grids = [p["heads"][kind][measure] for p in points]  # [point][layer][head]
    n_layers, n_heads = len(grids[0]), len(grids[0][0])
    rows = [(layer, h) for layer in range(n_layers) for h in range(n_heads)]
    z = [[grids[t][layer][h] for t in range(len(points))] for layer, h in rows]
    names = [point_name(p) for p in points]
    y = [_t("heads.row", layer=layer, head=h) for layer, h in rows]
    fig = go.Figure(go.Heatmap(z=z, x=names, y=y, colorscale="Viridis", colorbar=dict(title=dict(text=""), len=0.8),
                               hovertemplate="%{y} · %{x}<br>%{z:.3f}<extra></extra>"))
    half = [(halfway(row), y[r]) for r, row in enumerate(z)]
    fig.add_trace(go.Scatter(x=[names[t] for t, _ in half if t is not None], y=[name for t, name in half if t is not None],
                             mode="markers", marker=dict(symbol="x", size=9, color="#ffffff",
                                                         line=dict(width=1.5, color="#e4572e")),
                             name=_t("heads.half"), hovertemplate="%{y}: %{x}<extra>" + _t("heads.half") + "</extra>"))
    # the measure's name in the title, and under it, smaller, what it measures (the menu shows the name alone)
    title = wrap_title(_t("heads.title", kind=kind_name(kind), measure=text(measure_key(measure))))
    definition = wrap_title(label(measure_definition(measure)), 52).split("<br>")
    lines = title.count("<br>") + 1
    fig.update_layout(title=dict(text=title + "".join(f"<br><span style='font-size:12px'>{line}</span>"
                                                      for line in definition)),
                      height=140 + 16 * len(rows), margin=dict(l=70, r=10, t=50 + 22 * lines + 16 * len(definition), b=90),
                      xaxis=dict(type="category", tickangle=-60),
                      # every head named (plotly named every other one of the rows, 16 px apart)
                      yaxis=dict(type="category", autorange="reversed", dtick=1, tickfont=dict(size=11)),
                      legend=dict(orientation="h", y=-0.25 if len(rows) > 12 else -0.4, x=0))
    return fig


def probe_translation(points, i, k):
    """The greedy translation of probe `k` that point `i` gave when it was exported (None if not recorded)."""
    probes = points[i].get("probes") or []
    return probes[k] if k < len(probes) else None


def sentence_label(text_):
    """A German sentence as a menu's label, short (a menu shows its labels as text, never as markup)."""
    return text_ if len(text_) <= 60 else text_[:57] + "…"
