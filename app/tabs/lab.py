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
    FIRST,
    SIZE,
    TASKS,
    Config,
    row_name,
    run_name,
)
from core.model import make_model

from ..common import clamp, code_panel, empty_figure, panel_grid, token_axis
from ..i18n import L, choices
from ..views import View, opener, refresh, tab_views

# One sentence per break: what the shipped runs (assets/lab.json) show, written from their measured results.
# Differences of a few points are noise: where a run stops matters that much (the intact copy model's exact
# match moves between 96 % and 99.8 % over its last 100 steps).
READINGS = {
    "shared_layers": "Harmless here: one layer's weights used at both depths (half the parameters) still learn "
                     "every task, so `[layer] * N` costs capacity these small tasks do not need, which is how the "
                     "bug goes unnoticed.",
    "plain_list": "Only the embeddings, the final norms and the output bias (590 of 43,342 parameters) are trained: "
                  "the layers keep their random weights, unseen by `parameters()`, the optimizer and "
                  "`state_dict()`, so copy and reverse fail and sort gets what trained embeddings around frozen "
                  "random layers can give.",
    "no_subsequent_mask": "Each position can read the token it must predict one place ahead, so the loss under "
                          "teacher forcing is even lower than the intact model's, but greedy decoding, where that "
                          "token does not exist yet, fails: at most a fifth of the copies, none of the reversals "
                          "or sorts.",
    "no_padding_mask": "Harmless here: padding is one token, always at the end of the source, which the model can "
                       "treat as one more learnt symbol, and on the target side the subsequent mask already hides "
                       "it (padding comes after the words); the mask matters once results must not depend on how "
                       "much padding a batch happens to have.",
    "no_positional_encoding": "Copy and reverse fail, because the encoder's output is then a bag of digits that "
                              "do not know their places, while sort, whose answer does not depend on the input's "
                              "order, is still mostly learnt.",
    "no_scale": "Nearly harmless at d_k = 8, where the scores grow only √8 ≈ 2.8 times; at the paper's d_k = 64 "
                "they would grow 8 times, enough to push the softmax towards one-hot weights and vanishing "
                "gradients.",
    "no_warmup": "A constant rate at the schedule's peak still learns these tasks, slightly worse or noisier: a "
                 "model this small and shallow does not need warm-up's gentle first steps, and without the decay "
                 "the last steps stay large.",
    "high_lr": "Ten times the rate wrecks copy and reverse (the loss stalls near 1) and costs sort a sixth of "
               "its sequences.",
    "post_norm": "Harmless at N = 2 (a few points either way: slightly worse on copy and sort, better on "
                 "reverse): with two layers few normalised sums stand between the loss and the first layer; "
                 "post-norm's trouble needs depth (the @6 rows).",
    "default_init": "PyTorch's defaults train badly (copy and reverse fail, sort loses a fifth): nn.Embedding "
                    "draws N(0, 1), which the √d_model scale makes about 5.7 a coordinate, and the output layer "
                    "tied to it starts with huge logits; Xavier's small tied matrix is what lets the scale and the "
                    "tying work together.",
    "no_embedding_scale": "Harmless here, better on copy and reverse: the small Xavier embeddings (about 1.2 "
                          "long) are then dominated by the positional encoding (about 4), and those two tasks are "
                          "about positions (sort, about the digits, gains nothing); the scale is there so that "
                          "words are not drowned by positions.",
    "untied": "Nearly harmless: three matrices in place of one add 896 parameters, each trained by only its "
              "own use of the vocabulary.",
    "no_warmup+post_norm": "Post-norm without warm-up ends a few points below pre-norm without warm-up on copy "
                           "and reverse: at N = 2, a mild trace of the instability warm-up was brought in for "
                           "(at N = 6 it does not train at all: the last row).",
    # the deep runs, N = 6 layers in each stack (128,846 parameters), each with the same budget as intact@6
    "intact@6": "The model as the code writes it, six layers in each stack, with the same steps: it learns every "
                "task, though at this depth the last steps swing more than at N = 2, so compare rows by their gap, "
                "not by a point or two.",
    "post_norm@6": "With warm-up, post-norm at N = 6 still learns, but more slowly and less steadily than "
                   "pre-norm, so where it stops matters: evaluated every 10 steps over the last 100, copy stays "
                   "between 53 % and 84 % (pre-norm: 78 % to 99 %), reverse holds 93 % to 98 % from step 650 to "
                   "690 before its very last update throws it down (held-out loss from 0.04 to 1.2), and sort is "
                   "only slightly behind (78 % to 99 % against 79 % to 99.8 %); with every residual sum normalised "
                   "there is no identity path from the loss to the lower layers, and the top layers' gradients "
                   "start large (Xiong et al., 2020), which the rate must stay small for.",
    "no_warmup@6": "Pre-norm needs no warm-up even at N = 6: a constant rate at the schedule's peak learns every "
                   "task as well as the intact schedule does (within its swings).",
    "no_warmup+post_norm@6": "Post-norm without warm-up barely trains at N = 6: its loss creeps down and not one "
                             "held-out sequence of any task comes out right, where pre-norm without warm-up "
                             "learns them all. This is what warm-up was brought in for, and why the code's "
                             "pre-norm can do without it.",
}


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


def curve_figure(curve, intact, title):
    """Training loss (log scale) and learning rate per optimizer step, the run beside the intact model's."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                        subplot_titles=("training loss per token", "learning rate"))
    for run, name, style in ((intact, "intact", dict(color="#9aa3ad", dash="dot")),
                             (curve, "this run", dict(color="#e4572e"))):
        if run is None or not run["step"]:
            continue
        for col, field in ((1, "loss"), (2, "lr")):
            x, y = _thin(run["step"], run[field])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line=style, showlegend=col == 1,
                                     legendgroup=name), row=1, col=col)
    fig.update_yaxes(type="log", exponentformat="e", row=1, col=1)
    fig.update_yaxes(exponentformat="e", row=1, col=2)
    fig.update_xaxes(title_text="optimizer step")
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(x=0.6, xanchor="right", y=0.98, yanchor="top"))
    return fig


def attention_figure(att, kind):
    """One example's attention, layers down, heads across: cross-attention (decoder inputs x source) or the
    decoder's self-attention (decoder inputs x decoder inputs), in percent."""
    maps = att[kind]
    rows = ["<s>"] + [token_text(t) for t in att["output"]]
    cols = [str(t) for t in att["input"]] if kind == "cross" else rows
    axis = dict(tickfont=dict(size=9))
    panels = [([dict(type="heatmap", z=head, zmin=0, zmax=100, colorscale="Blues", showscale=False,
                     hovertemplate="%{z}%<extra></extra>")], f"layer {i + 1}, head {j + 1}",
               token_axis(cols, **axis), token_axis(rows, autorange="reversed", **axis))
              for i, layer in enumerate(maps) for j, head in enumerate(layer)]
    what = "cross-attention: decoder inputs (down) over the source (across)" if kind == "cross" else \
        "decoder self-attention: decoder inputs over decoder inputs (above the diagonal: later positions)"
    return panel_grid(panels, len(maps[0]), what, 180 + 190 * len(maps), gap=(0.03, 0.08), title_font=dict(size=16),
                      margin=dict(l=10, r=10, t=70, b=10))


TOKEN_STYLE = "display:inline-block; min-width:1.3em; text-align:center; margin:1px; border-radius:3px; "
WRONG_STYLE = "background:#fde2da; color:#b3261e; font-weight:bold; text-decoration:underline"


SPECIAL = {PAD - FIRST: "<blank>", UNK - FIRST: "<unk>", BOS - FIRST: "<s>"}  # outputs that are not digits


def token_text(t):
    return SPECIAL.get(t, str(t))


def examples_html(examples):
    """Inputs, expected answers and the model's outputs; a wrong, missing or extra token is marked."""
    rows = []
    for ex in examples:
        target, output = ex["target"], ex["output"]
        cells = []
        for i in range(max(len(target), len(output))):
            got = token_text(output[i]) if i < len(output) else "·"
            ok = i < len(output) and i < len(target) and output[i] == target[i]
            tip = "" if ok else f' title="expected {html.escape(str(target[i]) if i < len(target) else "end")}"'
            cells.append(f'<span style="{TOKEN_STYLE}{"" if ok else WRONG_STYLE}"{tip}>{html.escape(got)}</span>')
        mark = "✓" if output == target else "✗"
        rows.append(f'<tr><td>{html.escape(" ".join(map(str, ex["input"])))}</td>'
                    f'<td>{html.escape(" ".join(map(str, target)))}</td><td>{"".join(cells)} {mark}</td></tr>')
    return ('<table class="lab-ex" style="font-family:ui-monospace, monospace"><tr><th>input</th><th>expected</th><th>model (greedy)</th></tr>'
            + "".join(rows) + "</table>")


def result_markdown(run, intact, cfg):
    """Exact match, losses and parameter counts beside the intact model's, and what the break shows."""
    def pct(r):
        return f"{r['exact_match']:.1%}"
    cpu = f" ({run['cpu_seconds']:.1f} s of CPU)" if "cpu_seconds" in run else ""
    lines = [f"**{html.escape(run_name(cfg))}**, N = {cfg.layers} layers a stack, ε = {cfg.smoothing:g}, "
             f"{cfg.accum} micro-batch(es) a step: "
             f"{run['steps']} steps in {run['seconds']:.1f} s{cpu}.",
             "", f"| | this run | intact (N = {cfg.layers}) |", "|---|---|---|",
             f"| exact match (500 held-out, greedy) | {pct(run)} | {pct(intact)} |",
             f"| final training loss | {run['train_loss']:.4f} | {intact['train_loss']:.4f} |",
             f"| held-out loss (teacher forcing) | {run['held_out_loss']:.3f} | {intact['held_out_loss']:.3f} |",
             f"| parameters registered (what the optimizer sees) | {run['params_registered']:,} | "
             f"{intact['params_registered']:,} |",
             f"| parameters held (walking the layers) | {run['params_held']:,} | {intact['params_held']:,} |"]
    reading = READINGS.get(row_name(cfg.breaks, cfg.layers))
    if reading and cfg.smoothing == 0 and cfg.accum == 1:
        lines += ["", f"*What it shows:* {reading}"]
    check = run.get("gradient_check")
    if check:
        lines += ["", f"Gradient accumulation: {check['accum']} micro-batches of {check['micro_batch']} against one "
                  f"batch of {check['batch']}: largest gradient difference {check['max_abs_diff']:.1e} "
                  f"({check['max_rel_diff']:.1e} of the largest gradient); activations kept for backward at their "
                  f"peak {check['activation_bytes_accumulated'] / 1e6:.2f} MB against "
                  f"{check['activation_bytes_one_batch'] / 1e6:.2f} MB."]
    return "\n".join(lines)


def outputs_for(run, cfg):
    """The tab's five outputs for a finished run: curves, result, examples, the two attention figures."""
    intact = intact_of(cfg)
    title = f"{run_name(cfg)}: exact match {run['exact_match']:.1%} (intact {intact['exact_match']:.1%})"
    return (curve_figure(run["curve"], intact["curve"], title), result_markdown(run, intact, cfg),
            examples_html(run["examples"]), attention_figure(run["attention"], "cross"),
            attention_figure(run["attention"], "decoder"))


# ---- callbacks -----------------------------------------------------------------------------------------

def lab_view(task, breaks, smoothing, accum, layers=None):
    """The chosen configuration's result when it was trained already, else the intact model's curve (at the
    same depth) and what to do; the tab's five outputs."""
    cfg = config_from(task, breaks, smoothing, accum, layers)
    run = cached(cfg)
    if run is not None:
        return outputs_for(run, cfg)
    intact = intact_of(cfg)
    note = (f"**{html.escape(run_name(cfg))}** (ε = {cfg.smoothing:g}, accumulation {cfg.accum}) has not been "
            f"trained yet: press **Train** (at most {cfg.steps} steps or {cfg.seconds:g} s, then the evaluation). "
            f"The dotted curve is the intact model's at N = {cfg.layers}.")
    blank = empty_figure("Train this configuration to see its attention")
    return (curve_figure(None, intact["curve"], f"{run_name(Config(cfg.task, layers=cfg.layers))}: the intact model"),
            note, "", blank, blank)


def lab_command(cfg):
    """The command line of a run: core.lab in its own process, printing its curve as it trains."""
    cmd = [sys.executable, "-m", "core.lab", "--task", cfg.task, "--smoothing", str(cfg.smoothing),
           "--accum", str(cfg.accum), "--steps", str(cfg.steps), "--seconds", str(cfg.seconds),
           "--layers", str(cfg.layers), "--progress"]
    for b in cfg.breaks:
        cmd += ["--break", b]
    return cmd


def run_lab(cfg):
    """Run core.lab for `cfg` in a process of its own, on one thread, killed past its time; yields the curve
    so far after each progress line, and at the end the result record (a dict with "exact_match")."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(lab_command(cfg), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    timer = threading.Timer(cfg.seconds + START_MARGIN_S, proc.kill)  # the server's cap, whatever the run does
    timer.start()
    curve = {"step": [], "loss": [], "lr": []}
    try:
        for line in proc.stdout:
            msg = json.loads(line)
            if "progress" in msg:
                for k in curve:
                    curve[k] += msg["progress"][k]
                yield curve
            else:
                yield msg
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def train_run(task, breaks, smoothing, accum, layers=None, steps=None):
    """Press Train: a configuration trained already answers at once; otherwise it trains, its curve redrawn
    beside the intact model's (at the same depth) as it goes, then its results. `steps` (tests) can lower the
    budget, not raise it."""
    cfg = config_from(task, breaks, smoothing, accum, layers, steps)
    run = cached(cfg)
    if run is not None:
        yield outputs_for(run, cfg)
        return
    intact = intact_of(cfg)
    skip = (gr.skip(),) * 3
    started = time.time()
    yield (curve_figure(None, intact["curve"], f"{run_name(cfg)}: starting"),
           f"Starting **{html.escape(run_name(cfg))}** (at most {cfg.steps} steps or {cfg.seconds:g} s) ...", *skip)
    for msg in run_lab(cfg):
        if "exact_match" in msg:
            keep(cfg, msg)
            yield outputs_for(msg, cfg)
            return
        status = f"Training **{html.escape(run_name(cfg))}**: step {msg['step'][-1]} of {cfg.steps}, " \
                 f"loss {msg['loss'][-1]:.4f}, {time.time() - started:.0f} s."
        yield (curve_figure(msg, intact["curve"], f"{run_name(cfg)}: training"), status, *skip)
    yield (gr.skip(), "The run stopped without a result (it was cut off at the server's time limit); "
           "try again when the queue is shorter.", *skip)


# the tab's one view: the chosen configuration's result (shipped, or trained here), drawn from the controls
VIEWS = [View("lab", ("lab",), lab_view, outputs=5, uses=("task", "breaks", "smoothing", "accum", "layers"),
              reads_translation=False)]


def show(page, task, breaks, smoothing, accum, layers):
    """The tab's view for the page as it is (app/views.py): drawn when shown and its controls changed."""
    return refresh(page, None, VIEWS, dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers))


# ---- layout and events -----------------------------------------------------------------------------------

def break_choices():
    """The break checkboxes, each labelled "name: what it does" in both languages (ui.lab.break.<name>, with
    hyphens; its English is core.lab.BREAKS's description)."""
    return [(L(f"ui.lab.break.{b.replace('_', '-')}"), b) for b in BREAKS]


def _layout():
    """The controls, then the outputs; returns (outputs in the order of VIEWS, controls by name, Train button)."""
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
    curve = gr.Plot(elem_id="lab-curve")
    result = gr.Markdown(elem_id="lab-result")
    examples = gr.HTML(elem_id="lab-examples")
    cross = gr.Plot(elem_id="lab-cross")
    self_attn = gr.Plot(elem_id="lab-self")
    code_panel(L("ui.lab.code"), make_model,
               core_lab.build_model, core_lab.masks, core_lab.lr_lambda, core_lab.PostNormSublayerConnection,
               core_lab.QueryScale)
    return ([curve, result, examples, cross, self_attn],
            dict(task=task, breaks=breaks, smoothing=smoothing, accum=accum, layers=layers), train)


def build(page, lang=None):
    """Lay out the tab and wire its controls and the Train button (its own queue: one run at a time)."""
    with gr.Tab(L("ui.tab.lab"), id="lab") as tab:
        outputs, controls, train = _layout()
    inputs = [page, *controls.values()]
    tab.select(opener(("lab",), show), inputs, outputs, api_visibility="private")
    gr.on([c.change for c in controls.values()], show, inputs, outputs, api_visibility="private")
    train.click(train_run, list(controls.values()), outputs, api_visibility="private", concurrency_limit=1,
                concurrency_id="lab")
    return tab_views(show, VIEWS, controls, outputs)
