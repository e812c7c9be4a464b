"""The Training tab: the shipped run's log, the Noam schedule and label smoothing.

"We used the Adam optimizer ... and varied the learning rate over the course of training" (the Noam
schedule), and "during training, we employed label smoothing of value eps_ls = 0.1. This hurts perplexity,
as the model learns to be more unsure, but improves accuracy and BLEU score."
"""
import html
import json
from functools import lru_cache
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.data import ASSETS, nonblank_lines
from core.train import LabelSmoothing, rate

from ..common import clamp, code_panel, empty_figure, wrap_title
from ..i18n import L, texts
from ..shared import model_dir
from ..views import View, control_changes, opener, refresh, tab_views

ANNOTATED_CONFIGS = ((512, 1.0, 4000), (512, 1.0, 8000), (256, 1.0, 4000))
ABLATION = {"ε = 0": ASSETS / "ablation_eps0.jsonl", "ε = 0.1": ASSETS / "ablation_eps0.1.jsonl"}


_t = texts("training")  # the tab's words drawn at run time (training.<key>) in a language


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
    """The log of the run that made the shipped model (beside its weights)."""
    return read_log(model_dir() / "train_log.jsonl")


def _smooth(values, window=25):
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def replay_figure(steps, epochs, step, lang="en"):
    """Learning rate, training loss, and validation metrics of the run up to optimizer step `step`."""
    step = max(1, min(step, len(steps)))
    shown = steps[:step]
    xs = [r["step"] for r in shown]
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.16, horizontal_spacing=0.1, subplot_titles=tuple(
        _t(lang, f"replay.{k}") for k in ("lr", "loss", "ppl", "bleu")))
    all_x = [r["step"] for r in steps]
    fig.add_trace(go.Scatter(x=all_x, y=[r["lr"] for r in steps], mode="lines", line=dict(color="#ccc"),
                             name=_t(lang, "replay.whole"), showlegend=False, hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=xs, y=[r["lr"] for r in shown], mode="lines", line=dict(color="#2f6db5"),
                             name="lr", showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=[xs[-1]], y=[shown[-1]["lr"]], mode="markers", name=_t(lang, "replay.now"),
                             marker=dict(size=12, color="#e4572e"), showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=xs, y=[r["loss"] for r in shown], mode="lines", line=dict(color="#bbb", width=1),
                             name=_t(lang, "replay.raw"), showlegend=False), row=1, col=2)
    fig.add_trace(go.Scatter(x=xs, y=_smooth([r["loss"] for r in shown]), mode="lines", line=dict(color="#2f6db5"),
                             name=_t(lang, "replay.mean", n=25), showlegend=False), row=1, col=2)
    done = [e for e in epochs if e["step"] <= step]
    if done:
        ex = [e["step"] for e in done]
        fig.add_trace(go.Scatter(x=ex, y=[e["val_ppl"] for e in done], mode="lines+markers", showlegend=False,
                                 name=_t(lang, "replay.val_ppl"), line=dict(color="#7a3e9d")), row=2, col=1)
        with_bleu = [e for e in done if "val_bleu" in e]
        fig.add_trace(go.Scatter(x=[e["step"] for e in with_bleu], y=[e["val_bleu"] for e in with_bleu],
                                 mode="lines+markers", name=_t(lang, "replay.val_bleu"), showlegend=False,
                                 line=dict(color="#2e9c57")), row=2, col=2)
    last = all_x[-1]
    for r, c in ((1, 1), (1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(range=[0, last * 1.02], row=r, col=c)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_yaxes(ticklabelstandoff=6)  # each axis's 0 clear of the step axis's 0 at the corner
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=50, b=10),
                      title=_t(lang, "replay.title", step=step, n=len(steps), epoch=shown[-1]["epoch"] + 1))
    return fig


@lru_cache(maxsize=1)
def probe_sentences():
    """The German probe sentences the training run translated after each epoch (assets/probes.txt)."""
    return tuple(nonblank_lines((ASSETS / "probes.txt").read_text(encoding="utf-8")))


def probes_html(epochs, step, probes_de, lang="en"):
    """The probe sentences' translations at the last evaluation at or before `step` (escaped); the words around
    them in `lang`."""
    done = [e for e in epochs if e["step"] <= step and e.get("probes")]
    if not done:
        return f"<p><i>{html.escape(_t(lang, 'probes.none'))}</i></p>"
    e = done[-1]
    rows = "".join(f"<tr><td>{html.escape(de)}</td><td>{html.escape(en)}</td></tr>"
                   for de, en in zip(probes_de, e["probes"]))
    head, where = (html.escape(_t(lang, f"probes.{k}", epoch=e["epoch"], step=e["step"],
                                  bleu=f"{e.get('val_bleu', float('nan')):.1f}")) for k in ("title", "where"))
    german, output = (html.escape(_t(lang, f"probes.{k}")) for k in ("german", "output"))
    return (f"<p><b>{head}</b>{where}</p>"
            f'<table class="probes"><tr><th>{german}</th><th>{output}</th></tr>{rows}</table>')


def noam_figure(d_model, factor, warmup, run=None, steps=20000, lang="en"):
    """The user's schedule, the Annotated Transformer's three example schedules, and the shipped run."""
    xs = list(range(1, steps + 1, 20))
    fig = go.Figure()
    for d, f, w in ANNOTATED_CONFIGS:
        fig.add_trace(go.Scatter(x=xs, y=[rate(s, d, f, w) for s in xs], mode="lines", name=f"{d}:{w}",
                                 line=dict(dash="dot")))
    fig.add_trace(go.Scatter(x=xs, y=[rate(s, d_model, factor, warmup) for s in xs], mode="lines",
                             name=_t(lang, "noam.yours", d=d_model, warmup=warmup, factor=f"{factor:g}"),
                             line=dict(width=3, color="#e4572e")))
    if run:
        args, run_steps = run
        fig.add_trace(go.Scatter(x=[r["step"] for r in run_steps], y=[r["lr"] for r in run_steps], mode="lines",
                                 name=_t(lang, "noam.shipped", d=args["d_model"], warmup=args["warmup"],
                                         factor=f"{args['factor']:g}"), line=dict(width=3, color="#2e9c57")))
    fig.update_layout(title=wrap_title(_t(lang, "noam.title")),
                      xaxis_title=_t(lang, "noam.step"), yaxis_title=_t(lang, "noam.rate"), height=400,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def smoothing_figure(eps, targets=(2, 1, 0, 3, 3), vocab=5, lang="en"):
    """The smoothed target distribution for a few target tokens over a small vocabulary (0 is padding)."""
    crit = LabelSmoothing(vocab, 0, eps)
    crit(torch.zeros(len(targets), vocab), torch.tensor(targets))
    td = crit.true_dist
    hover = _t(lang, "smoothing.hover", target="%{y}", token="%{x}", value="%{z:.3f}") + "<extra></extra>"
    fig = go.Figure(go.Heatmap(z=td.numpy(), zmin=0, zmax=1, colorscale="Blues",
                               text=[[f"{v:.3f}" for v in row] for row in td.tolist()], texttemplate="%{text}",
                               hovertemplate=hover))
    fig.update_layout(title=wrap_title(_t(lang, "smoothing.title", eps=f"{eps:g}")),
                      xaxis=dict(title=_t(lang, "smoothing.token"), tickmode="array", tickvals=list(range(vocab))),
                      yaxis=dict(title=_t(lang, "smoothing.example"), tickmode="array",
                                 tickvals=list(range(len(targets))), autorange="reversed",
                                 ticktext=[_t(lang, "smoothing.target", t=t) for t in targets]),
                      height=330, margin=dict(l=10, r=10, t=50, b=10))
    return fig, td


def penalization_figure(epsilons=(0.0, 0.1, 0.2, 0.4), vocab=5, lang="en"):
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
    fig.update_layout(title=wrap_title(_t(lang, "penalization.title")), xaxis_title=_t(lang, "penalization.p"),
                      yaxis_title=_t(lang, "penalization.loss"), yaxis_range=[0, 4], height=380,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def ablation_runs():
    """{label: (config, steps, epochs)} of the label-smoothing ablation logs shipped in assets/."""
    return {label: read_log(p) for label, p in ABLATION.items() if p.exists()}


def ablation_figure(runs, lang="en"):
    fig = make_subplots(rows=1, cols=3, subplot_titles=tuple(
        wrap_title(_t(lang, k), 18) for k in ("replay.ppl", "replay.bleu", "ablation.confidence")))
    colors = {"ε = 0": "#e4572e", "ε = 0.1": "#2f6db5"}
    for label, (_, _, epochs) in runs.items():
        ep = [e["epoch"] for e in epochs]
        for c, key in enumerate(("val_ppl", "val_bleu", "val_confidence"), 1):
            fig.add_trace(go.Scatter(x=ep, y=[e.get(key) for e in epochs], mode="lines+markers", name=label,
                                     legendgroup=label, showlegend=c == 1,
                                     line=dict(color=colors.get(label))), row=1, col=c)
    fig.update_xaxes(title_text=_t(lang, "ablation.epoch"))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=70, b=10))
    return fig


# ---- callbacks -------------------------------------------------------------------------------------

def replay_length():
    return len(shipped_log()[1])


def replay_view(step, lang="en"):
    _, steps, epochs = shipped_log()
    step = clamp(step, 1, len(steps))
    return replay_figure(steps, epochs, step, lang), probes_html(epochs, step, probe_sentences(), lang)


def replay_tick(step, playing):
    """One tick of Play: advance about 1/60 of the run; stop at the end."""
    n = replay_length()
    if not playing:
        return gr.Slider(value=step), gr.Timer(active=False), False
    nxt = min(n, int(step or 1) + max(1, n // 60))
    done = nxt >= n
    return gr.Slider(value=nxt), gr.Timer(active=not done), not done


def replay_toggle(playing, step):
    n = replay_length()
    playing = not playing
    start = 1 if playing and int(step or 1) >= n else step  # Play at the end starts over
    return (gr.Button(value=L("ui.training.pause" if playing else "ui.training.play")), gr.Timer(active=playing), playing,
            gr.Slider(value=start))


def noam_view(d_model, factor, warmup, lang="en"):
    config, steps, _ = shipped_log()
    run = (config["args"], steps) if config else None
    return noam_figure(clamp(d_model, 8, 4096), clamp(factor, 0.01, 10.0, float), clamp(warmup, 1, 100000), run,
                       lang=lang)


def smoothing_view(eps, lang="en"):
    fig, _ = smoothing_figure(clamp(eps, 0.0, 0.9, float), lang=lang)
    return fig


def ablation_view(lang="en"):
    """The label-smoothing ablation, and a sentence stating what its logs show (in `lang`)."""
    runs = ablation_runs()
    if len(runs) < 2:
        return empty_figure(_t(lang, "ablation.missing")), ""
    last = {label: r[2][-1] for label, r in runs.items()}
    a, b = last["ε = 0"], last["ε = 0.1"]
    note = _t(lang, "ablation.note", epochs=a["epoch"], ppl0=f"{a['val_ppl']:.2f}",
              bleu0=f"{a.get('val_bleu', float('nan')):.1f}", conf0=f"{a['val_confidence']:.2f}",
              ppl1=f"{b['val_ppl']:.2f}", bleu1=f"{b.get('val_bleu', float('nan')):.1f}",
              conf1=f"{b['val_confidence']:.2f}")
    return ablation_figure(runs, lang), note


# the tab's views, in the order of its outputs, each reading the controls named in `uses`
def penalization_view(lang="en"):
    return penalization_figure(lang=lang)


VIEWS = [View("training/replay", ("training",), replay_view, outputs=2, uses=("step", "lang"),
              reads_translation=False),
         View("training/noam", ("training",), noam_view, uses=("d_model", "factor", "warmup", "lang"),
              reads_translation=False),
         View("training/smoothing", ("training",), smoothing_view, uses=("eps", "lang"), reads_translation=False),
         View("training/penalization", ("training",), penalization_view, uses=("lang",), reads_translation=False),
         View("training/ablation", ("training",), ablation_view, outputs=2, uses=("lang",), reads_translation=False)]


def show(page, step, d_model, factor, warmup, eps, lang="en"):
    """The tab's views for the page as it is (app/views.py): drawn when shown and their controls changed."""
    return refresh(page, None, VIEWS, dict(step=step, d_model=d_model, factor=factor, warmup=warmup, eps=eps,
                                           lang=lang))


# ---- layout and events -----------------------------------------------------------------------------

def _replay():
    """The run replayed: Play/Pause, the optimizer step, the curves up to it and the probe sentences."""
    n_steps = replay_length()
    with gr.Row():
        play = gr.Button(L("ui.training.play"), elem_id="play", scale=0)
        step = gr.Slider(1, n_steps, value=n_steps, step=1, label=L("ui.training.step"), elem_id="r-step")
    playing = gr.State(False)
    timer = gr.Timer(0.6, active=False)
    fig = gr.Plot(elem_id="r-fig")
    probes = gr.HTML(elem_id="r-probes")
    play.click(replay_toggle, [playing, step], [play, timer, playing, step], api_visibility="private")
    timer.tick(replay_tick, [step, playing], [step, timer, playing], api_visibility="private")
    return [fig, probes], step


def _noam():
    gr.Markdown(L("ui.training.noam"))
    with gr.Row():
        d_model = gr.Slider(64, 1024, value=512, step=64, label="d_model")
        warmup = gr.Slider(100, 16000, value=4000, step=100, label=L("ui.training.warmup"), elem_id="n-warm")
        factor = gr.Slider(0.1, 3.0, value=1.0, step=0.1, label=L("ui.training.factor"))
    return gr.Plot(elem_id="n-fig"), dict(d_model=d_model, factor=factor, warmup=warmup)


def _smoothing():
    gr.Markdown(L("ui.training.smoothing"))
    eps = gr.Slider(0.0, 0.8, value=0.1, step=0.05, label=L("ui.training.eps"), elem_id="ls-eps")
    with gr.Row():
        fig = gr.Plot(elem_id="ls-fig")
        penalization = gr.Plot()
    gr.Markdown(L("ui.training.ablation"))
    ablation = gr.Plot(elem_id="t-ablation")
    note = gr.Markdown()
    return [fig, penalization, ablation, note], eps


def build(page, lang):
    """Lay out the tab and wire its controls; its figures are first drawn when the tab is opened."""
    with gr.Tab(L("ui.tab.training"), id="training") as tab:
        replay, step = _replay()
        noam, noam_controls = _noam()
        smoothing, eps = _smoothing()
        code_panel(None, rate, LabelSmoothing)
    # the page's language: app/ui.py redraws the tab when it changes
    outputs, controls = [*replay, noam, *smoothing], dict(step=step, **noam_controls, eps=eps, lang=lang)
    inputs = [page, *controls.values()]
    tab.select(opener(("training",), show), inputs, outputs, api_visibility="private")
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs)
