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
from dataclasses import dataclass, field
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


# ---- the view: drawn from the controls and the session's Training ------------------------------------------

@dataclass(frozen=True, eq=False)
class Training:
    """The session's last Train click, as far as its run got: the configuration, the curve so far (a copy: None
    before its first points), the seconds since the click at this point, and the result record once it came (or
    `stopped`, when the run ended without one). Each point of the run is a new Training, set in the tab's state,
    whose change draws the tab's view (its listener reads the state and the controls). Known by identity (eq=False):
    Gradio hashes a watched state's value after each step of an event (a hash of its lists would raise)."""
    cfg: Config
    curve: dict = field(default=None, repr=False)
    seconds: float = 0.0
    record: dict = field(default=None, repr=False)
    stopped: bool = False


def outputs_for(run, cfg):
    """The view's outputs for a finished run, by name: its curves, result, examples and two attention figures."""
    intact = intact_of(cfg)
    title = _t("title.done", name=run_name(cfg), run=f"{run['exact_match']:.1%}",
               intact=f"{intact['exact_match']:.1%}")
    return dict(curve=curve_figure(run["curve"], intact["curve"], title), result=result_markdown(run, intact, cfg, ahead=run is shipped().get(run_name(cfg))),
                examples=examples_html(run["examples"]), cross=attention_figure(run["attention"], "cross"),
                decoder=attention_figure(run["attention"], "decoder"))


def drawn(cfg, run):
    """The outputs of `cfg`'s view with `run` (a result record, or None: not trained), in the event's language:
    drawn once per process for a configuration, a language and the run it shows (a run trained here since is
    drawn anew). It reads no session."""
    key = (config_key(cfg), spoken())
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


def lab_view(task, breaks, smoothing, accum, layers=None, training=None):
    """The view's outputs by name for the controls' configuration: the live run of the session's last Train click
    (`training`) where it is that configuration's and has no result yet, else its result when it was trained
    (here, or shipped), else the intact model's curve (at the same depth) and what to do."""
    cfg = config_from(task, breaks, smoothing, accum, layers)
    if training is None or training.cfg is None or config_key(training.cfg) != config_key(cfg):
        return drawn(cfg, cached(cfg))
    if training.record is not None:
        return drawn(cfg, training.record)
    return dict(drawn(cfg, None), **live(training))


def live(training):
    """The curve and the line above it of a run still training (or stopped without a result), in the event's
    language: the curve so far beside the intact model's (at the same depth)."""
    cfg, name, curve = training.cfg, run_name(training.cfg), training.curve
    title = _t("title.starting" if curve is None else "title.training", name=name)
    figure = curve_figure(curve, intact_of(cfg)["curve"], title)
    if training.stopped:
        return dict(curve=figure, result=_t("status.stopped"))
    if curve is None:
        return dict(curve=figure, result=_t("status.starting", name=html.escape(name), steps=cfg.steps,
                                            seconds=f"{cfg.seconds:g}"))
    return dict(curve=figure, result=_t("status.training", name=html.escape(name), step=curve["step"][-1],
                                         steps=cfg.steps, loss=f"{curve['loss'][-1]:.4f}",
                                         seconds=f"{training.seconds:.0f}"))


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
    """Press Train, in the event's language: yields, at each point of the run, {"training": the Training so far,
    "progress": the line beside the button}. A configuration trained already answers at once with its result;
    otherwise it trains, a Training after each batch of the curve's points, then one with the result (or stopped).
    `steps` (tests) can lower the budget, not raise it."""
    cfg = config_from(task, breaks, smoothing, accum, layers, steps)
    run = cached(cfg)
    if run is not None:
        yield dict(training=Training(cfg, run["curve"], record=run),
                   progress=_t("progress.cached", name=html.escape(run_name(cfg))))
        return
    clock, curve = RunClock(cfg, intact_of(cfg)), None
    yield dict(training=Training(cfg), progress=clock.line())
    for msg in run_lab(cfg):
        if "device" in msg:
            clock.where = msg["device"]
            continue
        if "exact_match" in msg:
            keep(cfg, msg)
            yield dict(training=Training(cfg, msg["curve"], clock.now() - clock.started, msg),
                       progress=clock.finished(msg))
            return
        clock.seen(msg["step"][-1])
        curve = {k: list(v) for k, v in msg.items()}  # a copy: curves() goes on adding to its own
        yield dict(training=Training(cfg, curve, clock.now() - clock.started), progress=clock.line())
    yield dict(training=Training(cfg, curve, clock.now() - clock.started, stopped=True), progress=clock.stopped())


def train_event(state, progress):
    """The Train button's event: train_run for the controls' values, every step in the page's language (its
    keyword `lang`), each setting the tab's state (the Training, whose change draws the view) and the line beside
    the button."""
    @in_language
    def train_clicked(task, breaks, smoothing, accum, layers):
        for update in train_run(task, breaks, smoothing, accum, layers):
            yield {state: update["training"], progress: update["progress"]}
    return train_clicked


# the tab's two views, drawn from the controls and the session's Training (the tab's state), each known by the
# controls and whether their configuration has a result: the curve and the line above it follow a run as it trains;
# the examples and the attention maps change only when a result comes
SUMMARY, MAPS = ("curve", "result"), ("examples", "cross", "decoder")
CONTROLS = ("task", "breaks", "smoothing", "accum", "layers")


def known_by(task, breaks, smoothing, accum, layers=None):
    """What a view's drawing stands for (app.views View.resolve): the controls, and whether their configuration
    has a result (trained here or shipped), which a run's end changes."""
    trained = cached(config_from(task, breaks, smoothing, accum, layers)) is not None
    return dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers, trained=trained)


def summary_view(training, task, breaks, smoothing, accum, layers=None, trained=None):
    """The curve and the line above it (`trained`: known_by's, read from the cache again)."""
    out = lab_view(task, breaks, smoothing, accum, layers, training)
    return {name: out[name] for name in SUMMARY}


def maps_view(task, breaks, smoothing, accum, layers=None, trained=None):
    """The examples and the two attention figures of the configuration's result, blank before one."""
    out = lab_view(task, breaks, smoothing, accum, layers)
    return {name: out[name] for name in MAPS}


NO_TRAINING = Training(None)  # the state's first value: no Train click yet
WHERE = ("lab",)
VIEWS = [View("lab", WHERE, summary_view, outputs=SUMMARY, uses=CONTROLS,
              resolve=lambda training, **used: known_by(**used)),
         View("lab/maps", WHERE, maps_view, outputs=MAPS, uses=CONTROLS, reads_translation=False, resolve=known_by)]


def results_of(ins):
    """A Training of the controls' first values two points into its run (tools.i18n_report draws every view with
    it: the live curve and its line among them)."""
    cfg = config_from("copy", [], 0.0, 1, SIZE["N"])
    return Training(cfg, {"step": [20, 40], "loss": [2.5, 2.0], "lr": [1e-4, 2e-4]}, 3.0)


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
    """Lay out the tab and wire its controls and the Train button (its own queue: one run at a time). The button
    sets the tab's state at each point of the run (a Training), and the tab's one listener draws the views from it
    and the controls; the button writes only the line beside it."""
    with gr.Tab(L("ui.tab.lab"), id="lab") as tab:
        state = gr.State(NO_TRAINING)  # inside the tab: a sibling of the tabs would shift the front end's count of them
        outputs, controls, train, progress = _layout()
    train.click(train_event(state, progress), None, [state, progress], inputs_kwargs=dict(controls, lang=lang),
                api_visibility="private", concurrency_limit=1, concurrency_id="lab", show_progress_on=outputs["curve"])
    # its drawings come from the process's cache or a run's points, never the model: none covers an output (the
    # curve's status is the Train button's)
    return Tab(WHERE, VIEWS, controls, outputs, page, lang, state,
               more=dict(results_of=results_of, progress=progress)).wire(
        tab, show_progress_on=[])
