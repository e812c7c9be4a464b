"""The Training tab's figures: the shipped run's log replayed, the Noam schedule, label smoothing and its
ablation; and the readers of the logs they draw (assets/). Pure builders, their words in the event's language
(app.i18n); `words` names the table a figure's words come from where the Learn path draws it in its own."""
import html
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.data import ASSETS, nonblank_lines
from core.train import LabelSmoothing, rate

from ..common import log_ticks, wrap_title
from ..i18n import texts
from ..shared import model_dir

ANNOTATED_CONFIGS = ((512, 1.0, 4000), (512, 1.0, 8000), (256, 1.0, 4000))
EXAMPLE_COLORS = ("#4a7dc9", "#9467bd", "#8c8c8c")  # the examples' dotted lines: none red or green like the user's and the model's
ABLATION = {"ε = 0": ASSETS / "ablation_eps0.jsonl", "ε = 0.1": ASSETS / "ablation_eps0.1.jsonl"}

_t = texts("training")


def read_log(path):
    """(config record, step records, epoch records) of a training log in JSON Lines."""
    config, steps, epochs = None, [], []
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        if rec["type"] == "config":
            config = rec
        elif rec["type"] == "step":
            steps.append(rec)
        elif rec["type"] == "epoch":
            epochs.append(rec)
    return config, steps, epochs


@lru_cache(maxsize=1)
def shipped_log():
    """The log of the run that made the open model (beside its weights); (None, [], []) where it has none (a
    converted model)."""
    path = model_dir() / "train_log.jsonl"
    return read_log(path) if path.exists() else (None, [], [])


@lru_cache(maxsize=1)
def assets_log():
    """The log of the run that made the shipped model (assets/), whichever model is open."""
    path = ASSETS / "train_log.jsonl"
    return read_log(path) if path.exists() else (None, [], [])


def learn_log():
    """The log the Learn path's steps on training read: the open model's, else (a converted model, which ships
    none) the shipped model's, which those steps then say they describe."""
    log = shipped_log()
    return log if log[2] else assets_log()


def shipped_schedule():
    """(d_model, factor, warmup) of the Noam schedule the model the Learn path describes was trained with, read
    from its log's arguments (learn_log); None where no log names them."""
    config = learn_log()[0]
    args = (config or {}).get("args") or {}
    if not all(k in args for k in ("d_model", "factor", "warmup")):
        return None
    return int(args["d_model"]), float(args["factor"]), int(args["warmup"])


def bleu_summary(epochs):
    """What a run's log says of its validation BLEU (greedy): after its last epoch, and at its best. Every page
    that states either reads it here."""
    scored = [e for e in epochs if e.get("val_bleu") is not None]
    if not scored:
        return None
    best = max(scored, key=lambda e: e["val_bleu"])
    return dict(last_epoch=scored[-1]["epoch"], last=scored[-1]["val_bleu"], best_epoch=best["epoch"],
                best=best["val_bleu"])


def _smooth(values, window=25):
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


MOST_POINTS = 800  # a line's points sent to the page: more than its pixels' width draws nothing more


def compact(values):
    """Numbers as a numpy array in 32 bits (float32 or int32), which plotly sends as a typed array: 4 bytes a value
    (in base64) where JSON wrote up to 20 characters."""
    a = np.asarray(values)
    return a.astype(np.float32 if a.dtype.kind == "f" else np.int32) if a.dtype.kind in "fiu" else a


def thin(*columns, most=MOST_POINTS):
    """Every k-th value of each column, the last kept, so that at most about `most` remain (a long log's line, drawn
    the same at the figure's width for a fraction of the bytes); each as `compact` arrays."""
    n = len(columns[0])
    k = max(1, -(-n // most))
    keep = list(range(0, n, k))
    if keep and keep[-1] != n - 1:
        keep.append(n - 1)
    return [compact([c[i] for i in keep]) for c in columns]


def replay_figure(steps, epochs, step):
    """Learning rate, training loss, and validation metrics of the run up to optimizer step `step`."""
    step = max(1, min(step, len(steps)))
    shown = steps[:step]
    xs = [r["step"] for r in shown]
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.16, horizontal_spacing=0.1, subplot_titles=tuple(
        _t(f"replay.{k}") for k in ("lr", "loss", "ppl", "bleu")))
    all_x, all_lr = thin([r["step"] for r in steps], [r["lr"] for r in steps])
    lr_x, lr_y, raw, mean = thin(xs, [r["lr"] for r in shown], [r["loss"] for r in shown],
                                 _smooth([r["loss"] for r in shown]))
    fig.add_trace(go.Scatter(x=all_x, y=all_lr, mode="lines", line=dict(color="#ccc"),
                             name=_t("replay.whole"), showlegend=False, hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=lr_x, y=lr_y, mode="lines", line=dict(color="#2f6db5"),
                             name="lr", showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=[xs[-1]], y=[shown[-1]["lr"]], mode="markers", name=_t("replay.now"),
                             marker=dict(size=12, color="#e4572e"), showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=lr_x, y=raw, mode="lines", line=dict(color="#bbb", width=1),
                             name=_t("replay.raw"), showlegend=False), row=1, col=2)
    fig.add_trace(go.Scatter(x=lr_x, y=mean, mode="lines", line=dict(color="#2f6db5"),
                             name=_t("replay.mean", n=25), showlegend=False), row=1, col=2)
    done = [e for e in epochs if e["step"] <= step]
    if done:
        ex = [e["step"] for e in done]
        fig.add_trace(go.Scatter(x=ex, y=[e["val_ppl"] for e in done], mode="lines+markers", showlegend=False,
                                 name=_t("replay.val_ppl"), line=dict(color="#7a3e9d")), row=2, col=1)
        with_bleu = [e for e in done if "val_bleu" in e]
        fig.add_trace(go.Scatter(x=[e["step"] for e in with_bleu], y=[e["val_bleu"] for e in with_bleu],
                                 mode="lines+markers", name=_t("replay.val_bleu"), showlegend=False,
                                 line=dict(color="#2e9c57")), row=2, col=2)
    last = all_x[-1]
    for r, c in ((1, 1), (1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(range=[0, last * 1.02], row=r, col=c)
    fig.update_yaxes(type="log", row=2, col=1, **log_ticks([e["val_ppl"] for e in done]))
    fig.update_yaxes(ticklabelstandoff=6)  # each axis's 0 clear of the step axis's 0 at the corner
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=50, b=10),
                      title=_t("replay.title", step=step, n=len(steps), epoch=shown[-1]["epoch"] + 1))
    return fig


@lru_cache(maxsize=1)
def probe_sentences():
    """The German probe sentences the training run translated after each epoch (assets/probes.txt)."""
    return tuple(nonblank_lines((ASSETS / "probes.txt").read_text(encoding="utf-8")))


def probes_html(epochs, step, probes_de):
    """The probe sentences' translations at the last evaluation at or before `step` (escaped); the words around
    them in `lang`."""
    done = [e for e in epochs if e["step"] <= step and e.get("probes")]
    if not done:
        return f"<p><i>{html.escape(_t('probes.none'))}</i></p>"
    e = done[-1]
    rows = "".join(f"<tr><td>{html.escape(de)}</td><td>{html.escape(en)}</td></tr>"
                   for de, en in zip(probes_de, e["probes"]))
    head, where = (html.escape(_t(f"probes.{k}", epoch=e["epoch"], step=e["step"],
                                  bleu=f"{e.get('val_bleu', float('nan')):.1f}")) for k in ("title", "where"))
    german, output = (html.escape(_t(f"probes.{k}")) for k in ("german", "output"))
    return (f"<p><b>{head}</b>{where}</p>"
            f'<table class="probes"><tr><th>{german}</th><th>{output}</th></tr>{rows}</table>')


LEGEND_COLUMNS = 40  # a legend name's line at 12 px beside its swatch within a phone's 350 px (wrap_title's columns)


def noam_figure(d_model, factor, warmup, run=None, steps=20000, words="training", scale=True, model=None,
                examples=ANNOTATED_CONFIGS, legend_columns=LEGEND_COLUMNS):
    """The user's schedule, the Annotated Transformer's example schedules (`examples`: d_model, factor, warmup),
    the shipped run (`run`: its arguments and steps, the rate it logged) and the shipped model's schedule computed
    from its arguments (`model`: d_model, factor, warmup). `words`: the table of its curve's and axes' words
    (training, or learn); without `scale`, the curves' shapes show but not their heights (no rate on the axis or
    in a hover). `legend_columns`: the width its long legend names are wrapped to (None: left whole, for a
    caller that wraps them itself)."""
    w = texts(words)

    def wrap(name):
        return wrap_title(name, legend_columns) if legend_columns else name

    peaks = {wu for _, _, wu in examples} | {warmup} | ({model[2]} if model else set())
    xs = sorted(set(compact(range(1, steps + 1, 50))) | {p for p in peaks if p <= steps})  # every peak drawn at its step
    hover = {} if scale else dict(hovertemplate="%{x}<extra>%{fullData.name}</extra>")
    fig = go.Figure()
    for (d, f, wu), color in zip(examples, EXAMPLE_COLORS):
        fig.add_trace(go.Scatter(x=xs, y=compact([rate(s, d, f, wu) for s in xs]), mode="lines",
                                 name=w("noam.example", d=d, warmup=wu, factor=f"{f:g}"),
                                 line=dict(dash="dot", width=1.5, color=color), **hover))
    if model:
        md, mf, mw = model
        fig.add_trace(go.Scatter(x=xs, y=compact([rate(s, md, mf, mw) for s in xs]), mode="lines",
                                 name=wrap(w("noam.model", d=md, warmup=mw, factor=f"{mf:g}")),
                                 line=dict(width=5, color="#2e9c57"), **hover))
    # the user's curve over the model's (dashed where the model's is drawn: where they are one, both show)
    fig.add_trace(go.Scatter(x=xs, y=compact([rate(s, d_model, factor, warmup) for s in xs]), mode="lines",
                             name=wrap(w("noam.yours", d=d_model, warmup=warmup, factor=f"{factor:g}")),
                             line=dict(width=2.5 if model else 3, color="#e4572e", dash="dash" if model else None),
                             **hover))
    if run:
        args, run_steps = run
        run_x, run_lr = thin([r["step"] for r in run_steps], [r["lr"] for r in run_steps])
        fig.add_trace(go.Scatter(x=run_x, y=run_lr, mode="lines",
                                 name=wrap(_t("noam.shipped", d=args["d_model"], warmup=args["warmup"],
                                              factor=f"{args['factor']:g}")),
                                 line=dict(width=3, color="#2e9c57"), **hover))
    # the legend under the plot, its long names in as many rows as they need: beside it, it took half a phone's
    # width and still cut them
    fig.update_layout(title=wrap_title(_t("noam.title")), xaxis_title=w("noam.step"), yaxis_title=w("noam.rate"),
                      yaxis_showticklabels=scale, height=480, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", x=0, y=-0.18, yanchor="top"))
    return fig


def smoothing_figure(eps, targets=(2, 1, 0, 3, 3), vocab=5, words="training", numbers=True):
    """The smoothed target distribution for a few target tokens over a small vocabulary (0 is padding), and the
    distribution. `words`: the table of its axes' words (training, or learn); without `numbers`, the colours show
    but not the shares (no text, hover or scale)."""
    w = texts(words)
    crit = LabelSmoothing(vocab, 0, eps)
    crit(torch.zeros(len(targets), vocab), torch.tensor(targets))
    td = crit.true_dist
    if numbers:
        hover = _t("smoothing.hover", target="%{y}", token="%{x}", value="%{z:.3f}") + "<extra></extra>"
        # the shares written in each cell (so no colour bar beside them), at a size a phone reads: the cells
        # keep the width their numbers need
        shown = dict(text=[[f"{v:.3f}" for v in row] for row in td.tolist()], texttemplate="%{text}",
                     hovertemplate=hover, textfont=dict(size=11), showscale=False)
    else:
        shown = dict(hoverinfo="skip", showscale=False)
    fig = go.Figure(go.Heatmap(z=td.numpy(), zmin=0, zmax=1, colorscale="Blues", **shown))
    fig.update_layout(title=wrap_title(_t("smoothing.title", eps=f"{eps:g}")),
                      xaxis=dict(title=w("smoothing.token"), tickmode="array", tickvals=list(range(vocab))),
                      yaxis=dict(title=w("smoothing.example"), tickmode="array",
                                 tickvals=list(range(len(targets))), autorange="reversed",
                                 ticktext=[w("smoothing.padding" if t == 0 else "smoothing.target", i=i, t=t)
                                           for i, t in enumerate(targets, 1)]),
                      height=330, margin=dict(l=10, r=10, t=50, b=10))
    return fig, td


def penalization_figure(epsilons=(0.0, 0.1, 0.2, 0.4), vocab=5):
    """Loss against the model's probability for the right token, the rest spread evenly: with smoothing
    the loss rises again as the model becomes over-confident."""
    ps = [i / 200 for i in range(2, 200)] + [0.999, 0.9999]
    fig = go.Figure()
    for eps in epsilons:
        crit = LabelSmoothing(vocab, 0, eps)
        losses = []
        for p in ps:
            rest = (1 - p) / (vocab - 2)
            x = torch.tensor([[1e-12, p] + [rest] * (vocab - 2)]).log()
            losses.append(crit(x, torch.tensor([1])).item())
        fig.add_trace(go.Scatter(x=ps, y=losses, mode="lines", name=f"ε = {eps:g}"))
    fig.update_layout(title=wrap_title(_t("penalization.title")), xaxis_title=_t("penalization.p"),
                      yaxis_title=_t("penalization.loss"), yaxis_range=[0, 4], height=410,
                      margin=dict(l=10, r=10, t=50, b=10),
                      # under the plot: beside it, the legend took a third of a phone's width
                      legend=dict(orientation="h", x=0, yanchor="top"))
    return fig


def ablation_runs():
    """{label: (config, steps, epochs)} of the label-smoothing ablation logs shipped in assets/."""
    return {label: read_log(p) for label, p in ABLATION.items() if p.exists()}


def ablation_figure(runs):
    fig = make_subplots(rows=1, cols=3, subplot_titles=tuple(
        wrap_title(_t(k), 18) for k in ("replay.ppl", "replay.bleu", "ablation.confidence")))
    colors = {"ε = 0": "#e4572e", "ε = 0.1": "#2f6db5"}
    for label, (_, _, epochs) in runs.items():
        ep = [e["epoch"] for e in epochs]
        for c, key in enumerate(("val_ppl", "val_bleu", "val_confidence"), 1):
            fig.add_trace(go.Scatter(x=ep, y=[e.get(key) for e in epochs], mode="lines+markers", name=label,
                                     legendgroup=label, showlegend=c == 1,
                                     line=dict(color=colors.get(label))), row=1, col=c)
    fig.update_xaxes(title_text=_t("ablation.epoch"))
    # the legend under the plots, from their left (WIDE_FIGURES: a phone shows the figure's left part first)
    fig.update_layout(height=410, margin=dict(l=10, r=10, t=70, b=10), legend=dict(orientation="h", x=0, yanchor="top"))
    return fig
