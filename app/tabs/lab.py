"""The Lab tab: train a small Transformer on a toy task, with any of the code's choices broken, and watch.

Each run is `python -m core.lab` in a process of its own, on one thread, capped in steps and seconds, so the
server stays responsive while it trains; runs go one at a time (their own queue), and each configuration is
trained once: the intact model and every single break come precomputed from assets/lab.json, and a run made
here is kept for whoever asks for the same configuration again.
"""
import html
import json
import os
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core import lab as core_lab
from core.data import BOS, PAD, UNK
from core.lab import (
    ACCUM_CHOICES,
    ASSET,
    BREAKS,
    BUDGET,
    DEEP,
    DEEP_RUNS,
    EXTRA,
    FIRST,
    SIZE,
    TASKS,
    Config,
    row_name,
    run_name,
)
from core.model import make_model
from core.words import write

from .. import hosting
from ..common import clamp, code_panel, empty_figure, panel_grid, token_axis, wrap_title
from ..i18n import LANGS, L, choices, text, texts, written
from ..views import View, control_changes, opener, refresh, tab_views

_t = texts("lab")  # the tab's words drawn at run time (lab.<key>) in a language


# One reading per break (and per combination and deep run the Lab ships): what the shipped runs
# (assets/lab.json) show, written from their measured results, in the tables under lab.reading.<row name>
# (core.lab.row_name). Differences of a few points are noise: where a run stops matters that much (the intact
# copy model's exact match moves between 96 % and 99.8 % over its last 100 steps).
READING_ROWS = (*BREAKS, *("+".join(b) for b in EXTRA), *(row_name(b, DEEP) for b in DEEP_RUNS))
READINGS = {name: text("en", f"lab.reading.{name}") for name in READING_ROWS}  # English (tools.lab_table)


def reading(name, lang="en"):
    """What the shipped runs of the row `name` show, in `lang`; None for a row without a reading."""
    return _t(lang, f"reading.{name}") if name in READINGS else None


ROOT = Path(__file__).resolve().parents[2]
START_MARGIN_S = 90   # beyond a run's seconds: starting Python and torch, then the held-out evaluation
CACHE_SIZE = 200      # runs made here and kept (a few kB each)
RUNS = OrderedDict()  # configuration key -> result record: runs made on this server, newest last
RUNS_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def shipped():
    """The precomputed runs (assets/lab.json): name ("copy/intact", "copy/no_scale", ...) -> result."""
    return json.loads(Path(ASSET).read_text())["runs"]


def config_key(cfg):
    """What makes two runs the same: task, breaks, depth, smoothing, accumulation and the step budget."""
    return f"{run_name(cfg)}|eps={cfg.smoothing:g}|accum={cfg.accum}|steps={cfg.steps}"


def cached(cfg):
    """The result of this configuration if it was trained already (shipped or here), else None."""
    with RUNS_LOCK:
        if config_key(cfg) in RUNS:
            RUNS.move_to_end(config_key(cfg))
            return RUNS[config_key(cfg)]
    if cfg.smoothing == 0 and cfg.accum == 1:  # shipped: trained with the task's full budget
        return shipped().get(run_name(cfg))
    return None


def intact_of(cfg):
    """The shipped intact model at the depth of `cfg`: what a run is drawn beside (the same budget)."""
    return shipped()[run_name(Config(cfg.task, layers=cfg.layers))]


def keep(cfg, record):
    with RUNS_LOCK:
        RUNS[config_key(cfg)] = record
        while len(RUNS) > CACHE_SIZE:
            RUNS.popitem(last=False)


LAYER_CHOICES = (SIZE["N"], DEEP)  # the depths the tab offers: the Lab's, and one where post-norm's trouble shows


def config_from(task, breaks, smoothing, accum, layers=None, steps=None):
    """A checked Config from the controls' values (anything the browser sends is clamped or dropped), within the
    server's budget: the task's (its seconds scaled with the depth), lowered by `steps` or by the environment's
    EXPLORER_LAB_MAX_STEPS if given."""
    task = task if isinstance(task, str) and task in TASKS else "copy"
    breaks = tuple(b for b in (breaks if isinstance(breaks, list) else []) if isinstance(b, str) and b in BREAKS)
    accum = clamp(accum, 1, max(ACCUM_CHOICES))
    accum = max(a for a in ACCUM_CHOICES if a <= accum)
    budget = BUDGET[task][0]
    steps = min(budget, steps or budget, clamp(os.environ.get("EXPLORER_LAB_MAX_STEPS", budget), 1, budget))
    layers = clamp(layers, min(LAYER_CHOICES), max(LAYER_CHOICES))
    layers = max(n for n in LAYER_CHOICES if n <= layers)
    return Config(task, breaks, clamp(smoothing, 0.0, 0.3, float), accum, steps, layers=layers).checked()


# ---- figures and text --------------------------------------------------------------------------------

def _thin(xs, ys, points=300):
    k = max(1, len(xs) // points)
    return xs[::k], ys[::k]


def curve_figure(curve, intact, title, lang="en"):
    """Training loss (log scale) and learning rate per optimizer step, the run beside the intact model's."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                        subplot_titles=(_t(lang, "curve.loss"), _t(lang, "curve.lr")))
    for run, name, style in ((intact, _t(lang, "intact"), dict(color="#9aa3ad", dash="dot")),
                             (curve, _t(lang, "this"), dict(color="#e4572e"))):
        if run is None or not run["step"]:
            continue
        for col, field in ((1, "loss"), (2, "lr")):
            x, y = _thin(run["step"], run[field])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line=style, showlegend=col == 1,
                                     legendgroup=name), row=1, col=col)
    fig.update_yaxes(type="log", exponentformat="e", row=1, col=1)
    fig.update_yaxes(exponentformat="e", row=1, col=2)
    fig.update_xaxes(title_text=_t(lang, "curve.step"))
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(x=0.6, xanchor="right", y=0.98, yanchor="top"))
    return fig


def attention_figure(att, kind, lang="en"):
    """One example's attention, a panel per head, two across (each layer's heads in order, then the next
    layer's): cross-attention (decoder inputs x source) or the decoder's self-attention (decoder inputs x
    decoder inputs), in percent. Two columns read on a phone and on a desktop alike."""
    maps = att[kind]
    rows = ["<s>"] + [token_text(t) for t in att["output"]]
    cols = [str(t) for t in att["input"]] if kind == "cross" else rows
    axis = dict(tickfont=dict(size=9))
    panels = [([dict(type="heatmap", z=head, zmin=0, zmax=100, colorscale="Blues", showscale=False,
                     hovertemplate="%{z}%<extra></extra>")], _t(lang, "attention.panel", layer=i + 1, head=j + 1),
               token_axis(cols, **axis), token_axis(rows, autorange="reversed", **axis))
              for i, layer in enumerate(maps) for j, head in enumerate(layer)]
    what = _t(lang, f"attention.{'cross' if kind == 'cross' else 'decoder'}")
    rows = (len(panels) + 1) // 2
    return panel_grid(panels, 2, wrap_title(what), 130 + 200 * rows, gap=(0.12, 0.3 / rows), title_font=dict(size=16),
                      margin=dict(l=10, r=10, t=120, b=10))


TOKEN_STYLE = "display:inline-block; min-width:1.3em; text-align:center; margin:1px; border-radius:3px; "
WRONG_STYLE = "background:#fde2da; color:#b3261e; font-weight:bold; text-decoration:underline"


SPECIAL = {PAD - FIRST: "<blank>", UNK - FIRST: "<unk>", BOS - FIRST: "<s>"}  # outputs that are not digits


def token_text(t):
    return SPECIAL.get(t, str(t))


def examples_html(examples, lang="en"):
    """Inputs, expected answers and the model's outputs; a wrong, missing or extra token is marked (the words in
    `lang`)."""
    rows = []
    for ex in examples:
        target, output = ex["target"], ex["output"]
        cells = []
        for i in range(max(len(target), len(output))):
            got = token_text(output[i]) if i < len(output) else "·"
            ok = i < len(output) and i < len(target) and output[i] == target[i]
            want = str(target[i]) if i < len(target) else _t(lang, "examples.end")
            tip = "" if ok else f' title="{html.escape(_t(lang, "examples.tip", token=want))}"'
            cells.append(f'<span style="{TOKEN_STYLE}{"" if ok else WRONG_STYLE}"{tip}>{html.escape(got)}</span>')
        mark = "✓" if output == target else "✗"
        rows.append(f'<tr><td>{html.escape(" ".join(map(str, ex["input"])))}</td>'
                    f'<td>{html.escape(" ".join(map(str, target)))}</td><td>{"".join(cells)} {mark}</td></tr>')
    head = "".join(f"<th>{html.escape(_t(lang, f'examples.{k}'))}</th>" for k in ("input", "expected", "model"))
    return (f'<table class="lab-ex" style="font-family:ui-monospace, monospace"><tr>{head}</tr>'
            + "".join(rows) + "</table>")


def result_markdown(run, intact, cfg, lang="en"):
    """Exact match, losses and parameter counts beside the intact model's, and what the break shows."""
    def pct(r):
        return f"{r['exact_match']:.1%}"

    def row(key, a, b):
        return f"| {_t(lang, f'result.{key}')} | {a} | {b} |"
    cpu = _t(lang, "result.cpu", s=f"{run['cpu_seconds']:.1f}") if "cpu_seconds" in run else ""
    lines = [_t(lang, "result.head", name=html.escape(run_name(cfg)), layers=cfg.layers, eps=f"{cfg.smoothing:g}",
                accum=cfg.accum, steps=run["steps"], seconds=f"{run['seconds']:.1f}", cpu=cpu),
             "", f"| | {_t(lang, 'this')} | {_t(lang, 'result.intact', layers=cfg.layers)} |", "|---|---|---|",
             row("exact", pct(run), pct(intact)),
             row("train", f"{run['train_loss']:.4f}", f"{intact['train_loss']:.4f}"),
             row("held", f"{run['held_out_loss']:.3f}", f"{intact['held_out_loss']:.3f}"),
             row("registered", f"{run['params_registered']:,}", f"{intact['params_registered']:,}"),
             row("params_held", f"{run['params_held']:,}", f"{intact['params_held']:,}")]
    shows = reading(row_name(cfg.breaks, cfg.layers), lang)
    if shows and cfg.smoothing == 0 and cfg.accum == 1:
        lines += ["", f"*{_t(lang, 'result.shows')}* {shows}"]
    check = run.get("gradient_check")
    if check:
        lines += ["", _t(lang, "result.check", accum=check["accum"], micro=check["micro_batch"], batch=check["batch"],
                         diff=f"{check['max_abs_diff']:.1e}", rel=f"{check['max_rel_diff']:.1e}",
                         acc=f"{check['activation_bytes_accumulated'] / 1e6:.2f}",
                         one=f"{check['activation_bytes_one_batch'] / 1e6:.2f}")]
    return "\n".join(lines)


def outputs_for(run, cfg, lang="en"):
    """The tab's five outputs for a finished run: curves, result, examples, the two attention figures."""
    intact = intact_of(cfg)
    title = _t(lang, "title.done", name=run_name(cfg), run=f"{run['exact_match']:.1%}",
               intact=f"{intact['exact_match']:.1%}")
    return (curve_figure(run["curve"], intact["curve"], title, lang), result_markdown(run, intact, cfg, lang),
            examples_html(run["examples"], lang), attention_figure(run["attention"], "cross", lang),
            attention_figure(run["attention"], "decoder", lang))


# ---- callbacks -----------------------------------------------------------------------------------------

def lab_view(task, breaks, smoothing, accum, layers=None, lang="en"):
    """The chosen configuration's result when it was trained already, else the intact model's curve (at the
    same depth) and what to do; the tab's five outputs, their words in `lang`."""
    cfg = config_from(task, breaks, smoothing, accum, layers)
    run = cached(cfg)
    if run is not None:
        return outputs_for(run, cfg, lang)
    intact = intact_of(cfg)
    note = _t(lang, "untrained", name=html.escape(run_name(cfg)), eps=f"{cfg.smoothing:g}", accum=cfg.accum,
              steps=cfg.steps, seconds=f"{cfg.seconds:g}", layers=cfg.layers)
    blank = empty_figure(_t(lang, "blank"))
    title = _t(lang, "title.intact", name=run_name(Config(cfg.task, layers=cfg.layers)))
    return curve_figure(None, intact["curve"], title, lang), note, "", blank, blank


def lab_command(cfg):
    """The command line of a run: core.lab in its own process, printing its curve as it trains."""
    cmd = [sys.executable, "-m", "core.lab", "--task", cfg.task, "--smoothing", str(cfg.smoothing),
           "--accum", str(cfg.accum), "--steps", str(cfg.steps), "--seconds", str(cfg.seconds),
           "--layers", str(cfg.layers), "--progress"]
    for b in cfg.breaks:
        cmd += ["--break", b]
    return cmd


def curves(messages):
    """core.lab's messages (the curve's new points, then the result record) as the curve so far after each
    batch of points, then the record; anything else (a {"device": ...} note) passes through."""
    curve = {"step": [], "loss": [], "lr": []}
    for msg in messages:
        if "progress" in msg:
            for k in curve:
                curve[k] += msg["progress"][k]
            yield curve
        else:
            yield msg


def run_process(cfg):
    """Run core.lab for `cfg` in a process of its own, on one thread, killed past its time: its messages, one
    JSON line each."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(lab_command(cfg), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    timer = threading.Timer(cfg.seconds + START_MARGIN_S, proc.kill)  # the server's cap, whatever the run does
    timer.start()
    try:
        for line in proc.stdout:
            yield json.loads(line)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def run_on_gpu(cfg):
    """On ZeroGPU: the run in hosting.lab_on_gpu (the worker a GPU is attached to); when no GPU is given (the
    visitor's daily quota spent, or any refusal before the first step), a note and the CPU process instead."""
    runs = hosting.lab_on_gpu(cfg)
    try:
        first = next(runs, None)
    except Exception as e:  # spaces raises gr.Error for a quota or a queue it cannot serve
        print(f"Lab: no GPU for {run_name(cfg)} ({e}); training on the CPU", file=sys.stderr)
        yield {"device": "fallback"}
        yield from run_process(cfg)
        return
    if first is not None:
        yield first
        yield from runs


def run_lab(cfg):
    """The run of `cfg` where this server trains: on a GPU on ZeroGPU, else in a CPU process of its own; yields
    the curve so far after each progress line, and at the end the result record (a dict with "exact_match")."""
    yield from curves(run_on_gpu(cfg) if hosting.ZERO_GPU else run_process(cfg))


class RunClock:
    """How far a live run is, for the line beside the Train button: steps done, seconds since the click, and
    what remains: the steps left, and their seconds at the rate measured between the run's progress lines
    (before the second one, at the CPU seconds a step of the shipped intact run at the same depth took), both
    bounded by what is left of the run's seconds cap."""

    def __init__(self, cfg, intact, now=time.monotonic):
        self.cfg, self.name, self.now = cfg, run_name(cfg), now
        self.started = now()
        spent = intact.get("cpu_seconds", intact["seconds"])
        self.rate = spent / max(1, intact["steps"])  # seconds a step, until measured here
        self.first = None   # (time, steps) at the first progress line
        self.done, self.trained = 0, 0.0   # steps done; seconds of training so far (estimated)
        self.where = "gpu" if hosting.ZERO_GPU else "cpu"

    def seen(self, done):
        t = self.now()
        if self.first is None:
            self.first = (t, done)
        elif done > self.first[1]:
            self.rate = (t - self.first[0]) / (done - self.first[1])
        self.done = done
        self.trained = (t - self.first[0]) + self.first[1] * self.rate

    def elapsed(self):
        return f"{self.now() - self.started:.0f}"

    def left(self):
        """(steps, seconds) of training still to come: the budget's steps, unless (once a rate is measured here)
        the seconds cap ends the run first."""
        steps = self.cfg.steps - self.done
        seconds = min(steps * self.rate, max(0.0, self.cfg.seconds - self.trained))
        measured = self.first is not None and self.done > self.first[1]
        return (min(steps, round(seconds / self.rate)) if measured and self.rate else steps), seconds

    def line(self, lang="en"):
        """The run so far: steps done of all, seconds since the click, steps to go and their seconds."""
        steps, seconds = self.left()
        return _t(lang, "progress.running", name=html.escape(self.name), where=_t(lang, f"progress.{self.where}"),
                  done=self.done, steps=self.cfg.steps, elapsed=self.elapsed(), left=steps, eta=f"{seconds:.0f}")

    def finished(self, record, lang="en"):
        """The finished run: its steps (of the budget, when its seconds cap ended it) and the seconds in all."""
        words = dict(name=html.escape(self.name), where=_t(lang, f"progress.{self.where}"), elapsed=self.elapsed())
        if record["steps"] < self.cfg.steps:
            return _t(lang, "progress.capped", done=record["steps"], steps=self.cfg.steps,
                      seconds=f"{self.cfg.seconds:g}", **words)
        return _t(lang, "progress.done", steps=record["steps"], **words)

    def stopped(self, lang="en"):
        return _t(lang, "progress.stopped", name=html.escape(self.name), done=self.done, steps=self.cfg.steps,
                  elapsed=self.elapsed())


def train_run(task, breaks, smoothing, accum, layers=None, steps=None, lang="en"):
    """Press Train: a configuration trained already answers at once; otherwise it trains, its curve redrawn
    beside the intact model's (at the same depth) as it goes, then its results, in `lang`. Each update is the
    tab's five outputs and the progress line beside the button. `steps` (tests) can lower the budget, not
    raise it."""
    cfg = config_from(task, breaks, smoothing, accum, layers, steps)
    run = cached(cfg)
    if run is not None:
        yield (*outputs_for(run, cfg, lang), _t(lang, "progress.cached", name=html.escape(run_name(cfg))))
        return
    intact = intact_of(cfg)
    skip = (gr.skip(),) * 3
    clock, name = RunClock(cfg, intact), run_name(cfg)
    yield (curve_figure(None, intact["curve"], _t(lang, "title.starting", name=name), lang),
           _t(lang, "status.starting", name=html.escape(name), steps=cfg.steps, seconds=f"{cfg.seconds:g}"), *skip,
           clock.line(lang))
    for msg in run_lab(cfg):
        if "device" in msg:
            clock.where = msg["device"]
            continue
        if "exact_match" in msg:
            keep(cfg, msg)
            yield (*outputs_for(msg, cfg, lang), clock.finished(msg, lang))
            return
        clock.seen(msg["step"][-1])
        status = _t(lang, "status.training", name=html.escape(name), step=msg["step"][-1], steps=cfg.steps,
                    loss=f"{msg['loss'][-1]:.4f}", seconds=clock.elapsed())
        yield (curve_figure(msg, intact["curve"], _t(lang, "title.training", name=name), lang), status, *skip,
               clock.line(lang))
    yield (gr.skip(), _t(lang, "status.stopped"), *skip, clock.stopped(lang))


def train_clicked(task, breaks, smoothing, accum, layers, lang="en"):
    """The Train button's event: train_run for the controls' values (the page's language last)."""
    yield from train_run(task, breaks, smoothing, accum, layers, lang=lang)


# the tab's one view: the chosen configuration's result (shipped, or trained here), drawn from the controls
VIEWS = [View("lab", ("lab",), lab_view, outputs=5,
              uses=("task", "breaks", "smoothing", "accum", "layers", "lang"), reads_translation=False)]


def show(page, task, breaks, smoothing, accum, layers, lang="en"):
    """The tab's view for the page as it is (app/views.py): drawn when shown and its controls changed."""
    return refresh(page, None, VIEWS, dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers,
                                           lang=lang))


# ---- layout and events -----------------------------------------------------------------------------------

def break_choices():
    """The break checkboxes, each labelled "name: what it does" in both languages (lab.break-label, what it does
    as core.lab.BREAKS says it: lab.break.<name>), switched by the browser with the page's language."""
    return [(written(f"ui.lab.break.{b}", {lang: text(lang, "lab.break-label", name=b, what=write(
        what, lambda key: text(lang, key))) for lang in LANGS}), b) for b, what in BREAKS.items()]


def _layout():
    """The controls, then the outputs; returns (outputs in the order of VIEWS, controls by name, Train button,
    the progress line beside it)."""
    gr.Markdown(L("ui.lab.intro", N=SIZE["N"], d_model=SIZE["d_model"], h=SIZE["h"], deep=DEEP))
    with gr.Row():
        task = gr.Radio(choices("ui.lab.task", TASKS), value="copy", label=L("ui.lab.task"), elem_id="lab-task", scale=1)
        smoothing = gr.Slider(0.0, 0.3, value=0.0, step=0.05, label=L("ui.lab.smoothing"), elem_id="lab-eps", scale=1)
        accum = gr.Radio(list(ACCUM_CHOICES), value=1, label=L("ui.lab.accum"),
                         elem_id="lab-accum", scale=1)
        layers = gr.Radio(list(LAYER_CHOICES), value=SIZE["N"], label=L("ui.lab.layers"), elem_id="lab-layers",
                          scale=1)
    breaks = gr.CheckboxGroup(break_choices(), label=L("ui.lab.break"), elem_id="lab-breaks")
    train = gr.Button(L("ui.lab.train"), variant="primary", elem_id="lab-train")
    progress = gr.Markdown(elem_id="lab-progress")  # how far a live run is, right under the button (train_run)
    curve = gr.Plot(elem_id="lab-curve")
    result = gr.Markdown(elem_id="lab-result")
    examples = gr.HTML(elem_id="lab-examples")
    cross = gr.Plot(elem_id="lab-cross")
    self_attn = gr.Plot(elem_id="lab-self")
    code_panel(L("ui.lab.code"), make_model,
               core_lab.build_model, core_lab.masks, core_lab.lr_lambda, core_lab.PostNormSublayerConnection,
               core_lab.QueryScale)
    return ([curve, result, examples, cross, self_attn],
            dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers), train, progress)


def build(page, lang):
    """Lay out the tab and wire its controls and the Train button (its own queue: one run at a time)."""
    with gr.Tab(L("ui.tab.lab"), id="lab") as tab:
        outputs, controls, train, progress = _layout()
    controls = dict(controls, lang=lang)  # the page's language: app/ui.py redraws the tab when it changes
    inputs = [page, *controls.values()]
    tab.select(opener(("lab",), show), inputs, outputs, api_visibility="private")
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private")
    train.click(train_clicked, list(controls.values()), [*outputs, progress], api_visibility="private",
                concurrency_limit=1, concurrency_id="lab", show_progress_on=outputs[0])
    return tab_views(show, VIEWS, controls, outputs)
