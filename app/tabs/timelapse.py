"""The Time-lapse tab: the shipped model at the points of its own training run, from the initialisation to the
last epoch. One scrubber moves through them (Play moves it for you); the run's curves mark where it stands; the
sentence on the page (or a probe sentence) is translated by that point's weights, the tokens that changed since
the previous point outlined, with its cross-attention; a heads x time map shows how each head of the atlas
settled.

The point's Inspection is made once per (point, sentence) and kept (`_inspected`): moving the layer or the head
redraws from it. Each point is a model of its own, held by app.models.MODELS within the server's memory bound (the
one used least recently going first); going to one not held loads it.
"""
import re
import threading
from collections import OrderedDict

import gradio as gr

from core.instrument import KINDS

from .. import page as page_js
from ..cache import per_language
from ..common import clamp, empty_figure, fitted_plot, kind_choices
from ..figures.heads import measure_key, pieces
from ..figures.timelapse import (
    MEASURES,
    cross_figure,
    curves_figure,
    heads_time_figure,
    point_fractions,
    point_name,
    run_log,
    run_points,
    sentence_label,
    steps_per_epoch,
    translation_html,
    where_now,
)
from ..figures.training import probe_sentences
from ..i18n import L, texts
from ..models import MODELS
from ..shared import get_translator, model_dir, release_free_memory
from ..translating import MAX_CHARS
from ..views import Tab, View

_t = texts("timelapse")
KEPT_INSPECTIONS = 48  # (point, sentence) Inspections kept for the whole server: a few kB each
PLAY_SECONDS = 1.2     # Play's pace: a point every tick


def points():
    return run_points(model_dir())


def _index(i):
    return clamp(i, 0, max(0, len(points()) - 1))


# ---- the point's translation, made once per (point, sentence) ------------------------------------------------

_kept = OrderedDict()
_lock = threading.Lock()  # around _kept (the model calls run outside it, any number at once)


def _inspected(label, text):
    """The Inspection of `text` by point `label`, kept for the next time: greedy and in float32, as the probe
    translations were recorded and the measures made (no float16 twin is built for a point). The point is a model of
    its own, held by app.models.MODELS ("<model>@<label>") within the server's memory bound."""
    key = (label, text)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    held = MODELS.held()
    ins = MODELS.get(f"{MODELS.default}@{label}").inspect(text, method="greedy")
    if MODELS.held() != held:
        # a point loaded (and perhaps another let go): the heap that loading used, and the weights let go,
        # go back to the system rather than stay in the process's resident memory (tools.bench --timelapse)
        release_free_memory()
    with _lock:
        _kept[key] = ins
        while len(_kept) > KEPT_INSPECTIONS:
            _kept.popitem(last=False)
    return ins


def sentence_of(ins, sentence):
    """The German sentence a choice of the menu names: the page's, or one of the probe sentences."""
    probes = probe_sentences()
    if isinstance(sentence, str) and sentence.startswith("probe-"):
        k = clamp(sentence[len("probe-"):], 0, len(probes) - 1)
        return probes[k]
    return ((ins.source if ins is not None else "") or probes[0])[:MAX_CHARS]


# ---- views ------------------------------------------------------------------------------------------------

def _missing():
    return empty_figure(_t("missing"), width=40)


@per_language(maxsize=4)
def curves_view():
    """The run's curves, drawn once per language: the chosen point's line is the page's own (app/page/timelapse-now.js)."""
    pts = points()
    return curves_figure(pts, run_log(model_dir())[1]) if pts else _missing()


def where_view(snap):
    """The chosen point in words: its name, step and scores."""
    pts = points()
    return where_now(pts, _index(snap), steps_per_epoch(model_dir())) if pts else _t("missing")


@per_language(maxsize=64)
def _heads_time(kind, measure):
    pts = points()
    fig = heads_time_figure(pts, kind, measure) if pts else None
    return fig if fig is not None else empty_figure(_t("heads.missing"), width=40)


def heads_view(kind, measure):
    """Heads x time over the whole run (it does not follow the scrubber: moving it sends this figure no more)."""
    kind = kind if kind in KINDS else "cross"
    measure = measure if measure in MEASURES[kind] else MEASURES[kind][0]
    return _heads_time(kind, measure)


def sentence_view(ins, snap, sentence, layer, head):
    """The point's translation of the chosen sentence, the changes since the previous point marked, and its
    cross-attention: a layer's heads and one head."""
    pts = points()
    if not pts:
        return dict(said=f"<p>{_t('missing')}</p>", cross=_missing())
    i = _index(snap)
    text = sentence_of(ins, sentence)
    now = _inspected(pts[i]["label"], text)
    before = _inspected(pts[i - 1]["label"], text) if i > 0 else None
    n_layers, n_heads = now.cross.shape[:2]
    layer, head = clamp(layer, 0, n_layers - 1), clamp(head, 0, n_heads - 1)
    name = point_name(pts[i])
    said = translation_html(now, before.out_tokens if before else None, point_name(pts[i - 1]) if i else None)
    return dict(said=said, cross=cross_figure(now, layer, head, name))


def sentence_blank(snap, sentence, layer, head):
    return dict(said=f"<p>{_t('said.wait')}</p>", cross=None)


WHERE = ("timelapse",)
VIEWS = [View("timelapse/curves", WHERE, curves_view, outputs=("curves",), reads_translation=False),
         View("timelapse/where", WHERE, where_view, outputs=("where_now",), uses=("snap",), reads_translation=False),
         View("timelapse/sentence", WHERE, sentence_view, outputs=("said", "cross"),
              uses=("snap", "sentence", "layer", "head"), blank=sentence_blank),
         View("timelapse/heads", WHERE, heads_view, outputs=("heads_time",), uses=("kind", "measure"),
              reads_translation=False)]


def measure_choices(kind):
    return [(L(measure_key(m), **pieces(measure_key(m))), m) for m in MEASURES.get(kind, MEASURES["cross"])]


def measure_menu(kind, measure):
    """The measures a kind of attention has (cross-attention's differ from self-attention's), the one chosen
    kept where the new kind has it."""
    names = MEASURES.get(kind, MEASURES["cross"])
    return gr.Dropdown(choices=measure_choices(kind), value=measure if measure in names else names[0])


# ---- Play ---------------------------------------------------------------------------------------------------

def play_tick(snap, playing):
    """One tick of Play: the next point; stop at the last."""
    last = len(points()) - 1
    if not playing or last < 1:
        return gr.Slider(value=snap), gr.Timer(active=False), False, gr.Button(value=L("ui.timelapse.play"))
    nxt = min(last, _index(snap) + 1)
    going = nxt < last
    return (gr.Slider(value=nxt), gr.Timer(active=going), going,
            gr.Button(value=L("ui.timelapse.pause" if going else "ui.timelapse.play")))


def play_toggle(playing, snap):
    last = len(points()) - 1
    playing = not playing and last >= 1
    start = 0 if playing and _index(snap) >= last else _index(snap)  # Play at the end starts over
    return (gr.Button(value=L("ui.timelapse.pause" if playing else "ui.timelapse.play")), gr.Timer(active=playing),
            playing, gr.Slider(value=start))


# ---- links: ?tab=timelapse&snapshot=<label> --------------------------------------------------------------

def linked_point(request: gr.Request):
    """The page-load callback: the point a link names (?snapshot=epoch-3), else the last one; an unknown label
    is ignored."""
    labels = [p["label"] for p in points()]
    wanted = dict(request.query_params).get("snapshot") if request is not None else None
    return gr.Slider(value=labels.index(wanted) if wanted in labels else max(0, len(labels) - 1))


def record_point_js():
    """The browser's half of a move (app/page/timelapse-record.js), given the points' labels, which are the run's
    own (init, step-25, epoch-3), never anything typed."""
    return page_js.function("timelapse-record", [p["label"] for p in points()])


def now_js():
    """The chosen point's line over the curves, drawn by the page (app/page/timelapse-now.js), given where each
    point stands across the step axis."""
    _, steps, _ = run_log(model_dir())
    return page_js.function("timelapse-now", point_fractions(points(), steps) if points() else [])


def averaged_epochs(config):
    """The epochs whose weights the model was averaged from (core.train's export --average), in order."""
    names = config.get("averaged_checkpoints") or ()
    return sorted(int(m.group(1)) for m in (re.fullmatch(r"epoch_(\d+)\.pt", str(n)) for n in names) if m)


# ---- layout and events -----------------------------------------------------------------------------------

def build(demo, page, state, lang):
    """Lay out the tab and wire its controls; its figures are first drawn when the tab is opened."""
    pts = points()
    last = max(0, len(pts) - 1)
    n_layers, n_heads = get_translator().config["N"], get_translator().config["h"]
    with gr.Tab(L("ui.tab.timelapse"), id="timelapse") as tab:
        gr.Markdown(L("ui.timelapse.intro"))
        averaged = averaged_epochs(get_translator().config)
        if len(averaged) > 1:  # the model translating is not any point of the run: say which epochs it averages
            gr.Markdown(L("ui.timelapse.averaged", n=len(averaged), first=averaged[0], last=averaged[-1]))
        with gr.Row():
            play = gr.Button(L("ui.timelapse.play"), elem_id="tl-play", scale=0, interactive=len(pts) > 1)
            snap = gr.Slider(0, max(1, last), value=last, step=1, label=L("ui.timelapse.point"), elem_id="tl-snap",
                             interactive=len(pts) > 1)
        playing = gr.State(False)
        timer = gr.Timer(PLAY_SECONDS, active=False)
        where = gr.Markdown(elem_id="tl-where")
        curves = fitted_plot(elem_id="tl-curves")
        gr.Markdown(L("ui.timelapse.sentence-intro"))
        choices = [(L("ui.timelapse.page-sentence"), "page")] + [
            (L("ui.timelapse.probe", k=k + 1, sentence=sentence_label(s)), f"probe-{k}")
            for k, s in enumerate(probe_sentences())]
        sentence = gr.Dropdown(choices, value="page", label=L("ui.timelapse.sentence"), elem_id="tl-sentence")
        said = gr.HTML(elem_id="tl-said")
        with gr.Row():
            layer = gr.Slider(0, max(1, n_layers - 1), value=n_layers - 1, step=1, label=L("ui.timelapse.layer"),
                              elem_id="tl-layer")
            head = gr.Slider(0, max(1, n_heads - 1), value=0, step=1, label=L("ui.timelapse.head"), elem_id="tl-head")
        cross = fitted_plot(elem_id="tl-cross")
        gr.Markdown(L("ui.timelapse.heads-intro"))
        with gr.Row():
            kind = gr.Radio(kind_choices(), value="cross", label=L("ui.timelapse.kind"), elem_id="tl-kind")
            measure = gr.Dropdown(measure_choices("cross"), value="diagonal",
                                  label=L("ui.timelapse.measure"), elem_id="tl-measure")
        heads_time = fitted_plot(elem_id="tl-heads")
    play.click(play_toggle, [playing, snap], [play, timer, playing, snap], api_visibility="private")
    timer.tick(play_tick, [snap, playing], [snap, timer, playing, play], api_visibility="private")
    kind.change(measure_menu, [kind, measure], measure, api_visibility="private")
    snap.change(None, snap, None, js=record_point_js())
    demo.load(linked_point, None, snap, api_visibility="private")
    demo.load(None, None, None, js=now_js())
    controls = dict(snap=snap, sentence=sentence, layer=layer, head=head, kind=kind, measure=measure)
    outputs = dict(curves=curves, where_now=where, said=said, cross=cross,
                   heads_time=heads_time)
    return Tab(WHERE, VIEWS, controls, outputs, page, lang, state).wire(tab, concurrency_id="model")
