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

from core import lab as core_lab
from core.lab import ACCUM_CHOICES, ASSET, BREAKS, BUDGET, DEEP, SIZE, TASKS, Config, run_name
from core.model import make_model
from core.words import write

from .. import hosting
from ..common import clamp, code_panel, empty_figure, fitted_plot, md_literal
from ..figures.lab import attention_figure, curve_figure, examples_html, result_markdown
from ..i18n import LANGS, L, choices, in_language, spoken, text, texts, written
from ..shared import is_shipped, model_dir
from ..views import Tab, View

_t = texts("lab")  # the tab's words drawn at run time (lab.<key>) in the event's language


ROOT = Path(__file__).resolve().parents[2]
START_MARGIN_S = 90   # beyond a run's seconds: starting Python and torch, then the held-out evaluation
CACHE_SIZE = 200      # runs made here and kept (a few kB each)
RUNS = OrderedDict()  # configuration key -> result record: runs made on this server, newest last
RUNS_LOCK = threading.Lock()
DRAWN_SIZE = 64       # views drawn and kept, shared by every session (12 to 74 kB each as JSON)
DRAWN = OrderedDict()  # (configuration key, language) -> (the run it shows or None, the view's outputs)


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


# ---- callbacks -----------------------------------------------------------------------------------------

def outputs_for(run, cfg):
    """The view's outputs for a finished run, by name: its curves, result, examples and two attention figures."""
    intact = intact_of(cfg)
    title = _t("title.done", name=run_name(cfg), run=f"{run['exact_match']:.1%}",
               intact=f"{intact['exact_match']:.1%}")
    return dict(curve=curve_figure(run["curve"], intact["curve"], title), result=result_markdown(run, intact, cfg, ahead=run is shipped().get(run_name(cfg))),
                examples=examples_html(run["examples"]), cross=attention_figure(run["attention"], "cross"),
                decoder=attention_figure(run["attention"], "decoder"))


def lab_view(task, breaks, smoothing, accum, layers=None):
    """The chosen configuration's result when it was trained already, else the intact model's curve (at the
    same depth) and what to do; the view's outputs by name. Drawn once per process for a configuration, a
    language and the run it shows (a run trained here since is drawn anew): it reads no session."""
    cfg = config_from(task, breaks, smoothing, accum, layers)
    run, key = cached(cfg), (config_key(cfg), spoken())
    with RUNS_LOCK:
        hit = DRAWN.get(key)
        if hit is not None and hit[0] is run:
            DRAWN.move_to_end(key)
            return dict(hit[1])
    out = outputs_for(run, cfg) if run is not None else untrained(cfg)
    with RUNS_LOCK:
        DRAWN[key] = (run, out)
        while len(DRAWN) > DRAWN_SIZE:
            DRAWN.popitem(last=False)
    return dict(out)


def untrained(cfg):
    """The view of a configuration not trained yet: the intact model's curve at its depth, and what to do."""
    intact = intact_of(cfg)
    note = _t("untrained", name=html.escape(run_name(cfg)), eps=f"{cfg.smoothing:g}", accum=cfg.accum,
              steps=cfg.steps, seconds=f"{cfg.seconds:g}", layers=cfg.layers)
    blank = empty_figure(_t("blank"))
    title = _t("title.intact", name=run_name(Config(cfg.task, layers=cfg.layers)))
    return dict(curve=curve_figure(None, intact["curve"], title), result=note, examples="", cross=blank,
                decoder=blank)


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

    def line(self):
        """The run so far: steps done of all, seconds since the click, steps to go and their seconds."""
        steps, seconds = self.left()
        return _t("progress.running", name=html.escape(self.name), where=_t(f"progress.{self.where}"),
                  done=self.done, steps=self.cfg.steps, elapsed=self.elapsed(), left=steps, eta=f"{seconds:.0f}")

    def finished(self, record):
        """The finished run: its steps (of the budget, when its seconds cap ended it) and the seconds in all."""
        words = dict(name=html.escape(self.name), where=_t(f"progress.{self.where}"), elapsed=self.elapsed())
        if record["steps"] < self.cfg.steps:
            return _t("progress.capped", done=record["steps"], steps=self.cfg.steps,
                      seconds=f"{self.cfg.seconds:g}", **words)
        return _t("progress.done", steps=record["steps"], **words)

    def stopped(self):
        return _t("progress.stopped", name=html.escape(self.name), done=self.done, steps=self.cfg.steps,
                  elapsed=self.elapsed())


def train_run(task, breaks, smoothing, accum, layers=None, steps=None):
    """Press Train, in the event's language: a configuration trained already answers at once; otherwise it
    trains, its curve redrawn beside the intact model's (at the same depth) as it goes, then its results. Each
    update names what it changes: the view's outputs (curve, result, examples, cross, decoder), and the progress
    line beside the button; what it leaves out stays as it is. `steps` (tests) can lower the budget, not raise
    it."""
    cfg = config_from(task, breaks, smoothing, accum, layers, steps)
    run = cached(cfg)
    if run is not None:
        yield dict(outputs_for(run, cfg), progress=_t("progress.cached", name=html.escape(run_name(cfg))))
        return
    intact = intact_of(cfg)
    clock, name = RunClock(cfg, intact), run_name(cfg)
    yield dict(curve=curve_figure(None, intact["curve"], _t("title.starting", name=name)),
               result=_t("status.starting", name=html.escape(name), steps=cfg.steps, seconds=f"{cfg.seconds:g}"),
               progress=clock.line())
    for msg in run_lab(cfg):
        if "device" in msg:
            clock.where = msg["device"]
            continue
        if "exact_match" in msg:
            keep(cfg, msg)
            yield dict(outputs_for(msg, cfg), progress=clock.finished(msg))
            return
        clock.seen(msg["step"][-1])
        status = _t("status.training", name=html.escape(name), step=msg["step"][-1], steps=cfg.steps,
                    loss=f"{msg['loss'][-1]:.4f}", seconds=clock.elapsed())
        yield dict(curve=curve_figure(msg, intact["curve"], _t("title.training", name=name)), result=status,
                   progress=clock.line())
    yield dict(result=_t("status.stopped"), progress=clock.stopped())


def train_event(outputs):
    """The Train button's event: train_run for the controls' values, every step in the page's language (its
    keyword `lang`), each update sent to the components it names (`outputs`: name -> component)."""
    @in_language
    def train_clicked(task, breaks, smoothing, accum, layers):
        for update in train_run(task, breaks, smoothing, accum, layers):
            yield {outputs[name]: value for name, value in update.items()}
    return train_clicked


# the tab's one view: the chosen configuration's result (shipped, or trained here), drawn from the controls
WHERE = ("lab",)
VIEWS = [View("lab", WHERE, lab_view, outputs=("curve", "result", "examples", "cross", "decoder"),
              uses=("task", "breaks", "smoothing", "accum", "layers"), reads_translation=False)]


# ---- layout and events -----------------------------------------------------------------------------------

def break_choices():
    """The break checkboxes, each labelled "name: what it does" in both languages (lab.break-label, what it does
    as core.lab.BREAKS says it: lab.break.<name>), switched by the browser with the page's language."""
    return [(written(f"ui.lab.break.{b}", {lang: text(lang, "lab.break-label", name=b, what=write(
        what, lambda key: text(lang, key))) for lang in LANGS}), b) for b, what in BREAKS.items()]


def _layout():
    """The controls, then the outputs; returns (the view's outputs by name, controls by name, Train button, the
    progress line beside it)."""
    gr.Markdown(L("ui.lab.intro", N=SIZE["N"], d_model=SIZE["d_model"], h=SIZE["h"], deep=DEEP))
    if not is_shipped():  # another model is open: the toy runs are not it
        gr.Markdown(L("ui.lab.other", name=md_literal(model_dir().resolve().name)), elem_id="lab-other")
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
    outputs = dict(curve=fitted_plot(elem_id="lab-curve"), result=gr.Markdown(elem_id="lab-result"),
                   examples=gr.HTML(elem_id="lab-examples"), cross=fitted_plot(elem_id="lab-cross"),
                   decoder=fitted_plot(elem_id="lab-self"))
    code_panel(L("ui.lab.code"), make_model,
               core_lab.build_model, core_lab.masks, core_lab.lr_lambda, core_lab.PostNormSublayerConnection,
               core_lab.QueryScale)
    return outputs, dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers), train, progress


def build(page, lang):
    """Lay out the tab and wire its controls and the Train button (its own queue: one run at a time)."""
    with gr.Tab(L("ui.tab.lab"), id="lab") as tab:
        outputs, controls, train, progress = _layout()
    train.click(train_event(dict(outputs, progress=progress)), None, [*outputs.values(), progress],
                inputs_kwargs=dict(controls, lang=lang), api_visibility="private", concurrency_limit=1,
                concurrency_id="lab", show_progress_on=outputs["curve"])
    return Tab(WHERE, VIEWS, controls, outputs, page, lang).wire(tab)
