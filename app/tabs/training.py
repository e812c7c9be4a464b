"""The Training tab: the shipped run's log, the Noam schedule and label smoothing.

"We used the Adam optimizer ... and varied the learning rate over the course of training" (the Noam
schedule), and "during training, we employed label smoothing of value eps_ls = 0.1. This hurts perplexity,
as the model learns to be more unsure, but improves accuracy and BLEU score."
"""
import gradio as gr

from core.train import LabelSmoothing, rate

from ..cache import per_language
from ..common import clamp, code_panel, empty_figure, fitted_plot
from ..figures.training import (
    ablation_figure,
    ablation_runs,
    noam_figure,
    penalization_figure,
    probe_sentences,
    probes_html,
    replay_figure,
    shipped_log,
    smoothing_figure,
)
from ..i18n import L, texts
from ..shared import is_shipped
from ..views import Tab, View

_t = texts("training")  # the tab's words drawn at run time (training.<key>) in the event's language


# ---- callbacks -------------------------------------------------------------------------------------

def replay_length():
    """The replay's optimizer steps; 1 where the open model ships no training log."""
    return max(1, len(shipped_log()[1]))


@per_language(maxsize=256)
def _replay(step):
    _, steps, epochs = shipped_log()
    return dict(replay=replay_figure(steps, epochs, step), probes=probes_html(epochs, step, probe_sentences()))


def replay_view(step):
    """The run that made the open model up to `step`, and its probe sentences then (drawn once per step and
    language); where the open model ships no training log (a converted model), a note that says so."""
    if not shipped_log()[1]:
        return dict(replay=empty_figure(_t("replay.none")), probes=f"<p>{_t('replay.none_note')}</p>")
    return _replay(clamp(step, 1, replay_length()))


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


@per_language(maxsize=64)
def _noam(d_model, factor, warmup):
    config, steps, _ = shipped_log()
    return noam_figure(d_model, factor, warmup, (config["args"], steps) if config else None)


def noam_view(d_model, factor, warmup):
    return _noam(clamp(d_model, 8, 4096), clamp(factor, 0.01, 10.0, float), clamp(warmup, 1, 100000))


@per_language(maxsize=64)
def _smoothing(eps):
    return smoothing_figure(eps)[0]


def smoothing_view(eps):
    return _smoothing(clamp(eps, 0.0, 0.9, float))


@per_language()
def penalization_view():
    return penalization_figure()


@per_language()
def ablation_view():
    """The label-smoothing ablation, and a sentence stating what its logs show."""
    runs = ablation_runs()
    if len(runs) < 2:
        return dict(ablation=empty_figure(_t("ablation.missing")), ablation_note="")
    last = {label: r[2][-1] for label, r in runs.items()}
    a, b = last["ε = 0"], last["ε = 0.1"]
    note = _t("ablation.note", epochs=a["epoch"], ppl0=f"{a['val_ppl']:.2f}",
              bleu0=f"{a.get('val_bleu', float('nan')):.1f}", conf0=f"{a['val_confidence']:.2f}",
              ppl1=f"{b['val_ppl']:.2f}", bleu1=f"{b.get('val_bleu', float('nan')):.1f}",
              conf1=f"{b['val_confidence']:.2f}")
    if not is_shipped():
        note += " " + _t("ablation.shipped")
    return dict(ablation=ablation_figure(runs), ablation_note=note)


# the tab's views, each reading the controls named in `uses`; none reads the sentence, and each is drawn once per
# process for its controls and language (app/cache.py)
WHERE = ("training",)
VIEWS = [View("training/replay", WHERE, replay_view, outputs=("replay", "probes"), uses=("step",),
              reads_translation=False),
         View("training/noam", WHERE, noam_view, outputs=("noam",), uses=("d_model", "factor", "warmup"),
              reads_translation=False),
         View("training/smoothing", WHERE, smoothing_view, outputs=("smoothing",), uses=("eps",),
              reads_translation=False),
         View("training/penalization", WHERE, penalization_view, outputs=("penalization",), reads_translation=False),
         View("training/ablation", WHERE, ablation_view, outputs=("ablation", "ablation_note"),
              reads_translation=False)]


# ---- layout and events -----------------------------------------------------------------------------

def _replay_panel():
    """The run replayed: Play/Pause, the optimizer step, the curves up to it and the probe sentences."""
    n_steps = replay_length()
    with gr.Row():
        play = gr.Button(L("ui.training.play"), elem_id="play", scale=0)
        step = gr.Slider(1, max(2, n_steps), value=n_steps, step=1, label=L("ui.training.step"), elem_id="r-step")
    playing = gr.State(False)
    timer = gr.Timer(0.6, active=False)
    fig = fitted_plot(elem_id="r-fig")
    probes = gr.HTML(elem_id="r-probes")
    play.click(replay_toggle, [playing, step], [play, timer, playing, step], api_visibility="private")
    timer.tick(replay_tick, [step, playing], [step, timer, playing], api_visibility="private")
    return dict(replay=fig, probes=probes), step


def _noam_panel():
    gr.Markdown(L("ui.training.noam"))
    with gr.Row():
        d_model = gr.Slider(64, 1024, value=512, step=64, label="d_model")
        warmup = gr.Slider(100, 16000, value=4000, step=100, label=L("ui.training.warmup"), elem_id="n-warm")
        factor = gr.Slider(0.1, 3.0, value=1.0, step=0.1, label=L("ui.training.factor"))
    return dict(noam=fitted_plot(elem_id="n-fig")), dict(d_model=d_model, factor=factor, warmup=warmup)


def _smoothing_panel():
    gr.Markdown(L("ui.training.smoothing"))
    eps = gr.Slider(0.0, 0.8, value=0.1, step=0.05, label=L("ui.training.eps"), elem_id="ls-eps")
    with gr.Row():
        fig = fitted_plot(elem_id="ls-fig")
        penalization = fitted_plot()
    gr.Markdown(L("ui.training.ablation"))
    ablation = fitted_plot(elem_id="t-ablation")
    note = gr.Markdown()
    return dict(smoothing=fig, penalization=penalization, ablation=ablation, ablation_note=note), eps


def build(page, lang):
    """Lay out the tab and wire its controls; its figures are first drawn when the tab is opened."""
    with gr.Tab(L("ui.tab.training"), id="training") as tab:
        replay, step = _replay_panel()
        noam, noam_controls = _noam_panel()
        smoothing, eps = _smoothing_panel()
        code_panel(None, rate, LabelSmoothing)
    outputs, controls = dict(**replay, **noam, **smoothing), dict(step=step, **noam_controls, eps=eps)
    return Tab(WHERE, VIEWS, controls, outputs, page, lang).wire(tab)
