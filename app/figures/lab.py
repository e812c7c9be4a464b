"""The Lab's figures: a run's curves beside the intact model's, its attention, its examples and its result
beside the intact model's, with what the shipped runs of its row show (the readings). Pure builders: a run's
record in (core.lab's, plain values), a figure, HTML or Markdown out, its words in the event's language
(app.i18n)."""
import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.data import BOS, PAD, UNK
from core.lab import BREAKS, DEEP, DEEP_RUNS, EXTRA, FIRST, row_name, run_name

from ..common import log_ticks, panel_grid, token_axis, wrap_title
from ..i18n import text, texts

_t = texts("lab")

# One reading per break (and per combination and deep run the Lab ships): what the shipped runs
# (assets/lab.json) show, written from their measured results, in the tables under lab.reading.<row name>
# (core.lab.row_name). Differences of a few points are noise: where a run stops matters that much (the intact
# copy model's exact match moves between 96 % and 99.8 % over its last 100 steps).
READING_ROWS = (*BREAKS, *("+".join(b) for b in EXTRA), *(row_name(b, DEEP) for b in DEEP_RUNS))
READINGS = {name: text("en", f"lab.reading.{name}") for name in READING_ROWS}  # English (tools.lab_table)


def reading(name):
    """What the shipped runs of the row `name` show, in the event's language; None for a row without one."""
    return _t(f"reading.{name}") if name in READINGS else None


def _thin(xs, ys, points=300):
    k = max(1, len(xs) // points)
    return xs[::k], ys[::k]


def curve_figure(curve, intact, title):
    """Training loss (log scale) and learning rate per optimizer step, the run beside the intact model's."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                        subplot_titles=(_t("curve.loss"), _t("curve.lr")))
    for run, name, style in ((intact, _t("intact"), dict(color="#9aa3ad", dash="dot")),
                             (curve, _t("this"), dict(color="#e4572e"))):
        if run is None or not run["step"]:
            continue
        for col, field in ((1, "loss"), (2, "lr")):
            x, y = _thin(run["step"], run[field])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line=style, showlegend=col == 1,
                                     legendgroup=name), row=1, col=col)
    losses = [v for run in (intact, curve) if run is not None for v in run["loss"]]
    fig.update_yaxes(type="log", row=1, col=1, **log_ticks(losses))
    fig.update_yaxes(exponentformat="e", row=1, col=2)
    fig.update_xaxes(title_text=_t("curve.step"))
    # the legend under the plots, from their left (WIDE_FIGURES: a phone shows the figure's left part first)
    fig.update_layout(title=title, height=370, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", x=0, yanchor="top"))
    return fig


SPECIAL = {PAD - FIRST: "<blank>", UNK - FIRST: "<unk>", BOS - FIRST: "<s>"}  # outputs that are not digits


def token_text(t):
    return SPECIAL.get(t, str(t))


def attention_figure(att, kind):
    """One example's attention, a panel per head, two across (each layer's heads in order, then the next
    layer's): cross-attention (decoder inputs x source) or the decoder's self-attention (decoder inputs x
    decoder inputs), in percent. Two columns read on a phone and on a desktop alike."""
    maps = att[kind]
    rows = ["<s>"] + [token_text(t) for t in att["output"]]
    cols = [str(t) for t in att["input"]] if kind == "cross" else rows
    axis = dict(tickfont=dict(size=9))
    panels = [([dict(type="heatmap", z=head, zmin=0, zmax=100, colorscale="Blues", showscale=False,
                     hovertemplate="%{z}%<extra></extra>")], _t("attention.panel", layer=i, head=j),
               token_axis(cols, **axis), token_axis(rows, autorange="reversed", **axis))
              for i, layer in enumerate(maps) for j, head in enumerate(layer)]
    what = _t(f"attention.{'cross' if kind == 'cross' else 'decoder'}")
    rows = (len(panels) + 1) // 2
    return panel_grid(panels, 2, wrap_title(what), 130 + 200 * rows, gap=(0.12, 0.3 / rows), title_font=dict(size=16),
                      margin=dict(l=10, r=10, t=120, b=10))


TOKEN_STYLE = "display:inline-block; min-width:1.3em; text-align:center; margin:1px; border-radius:3px; "
WRONG_STYLE = "background:#fde2da; color:#b3261e; font-weight:bold; text-decoration:underline"


def examples_html(examples):
    """Inputs, expected answers and the model's outputs; a wrong, missing or extra token is marked."""
    rows = []
    for ex in examples:
        target, output = ex["target"], ex["output"]
        cells = []
        for i in range(max(len(target), len(output))):
            got = token_text(output[i]) if i < len(output) else "·"
            ok = i < len(output) and i < len(target) and output[i] == target[i]
            want = str(target[i]) if i < len(target) else _t("examples.end")
            tip = "" if ok else f' title="{html.escape(_t("examples.tip", token=want))}"'
            cells.append(f'<span style="{TOKEN_STYLE}{"" if ok else WRONG_STYLE}"{tip}>{html.escape(got)}</span>')
        mark = "✓" if output == target else "✗"
        rows.append(f'<tr><td>{html.escape(" ".join(map(str, ex["input"])))}</td>'
                    f'<td>{html.escape(" ".join(map(str, target)))}</td><td>{"".join(cells)} {mark}</td></tr>')
    head = "".join(f"<th>{html.escape(_t(f'examples.{k}'))}</th>" for k in ("input", "expected", "model"))
    return (f'<table class="lab-ex" style="font-family:ui-monospace, monospace"><tr>{head}</tr>'
            + "".join(rows) + "</table>")


def _pct(r):
    return f"{r['exact_match']:.1%}"


def _row(key, a, b):
    return f"| {_t(f'result.{key}')} | {a} | {b} |"


def result_markdown(run, intact, cfg, ahead=False):
    """Exact match, losses and parameter counts beside the intact model's, and what the break shows. A run
    trained `ahead` (assets/lab.json) says where its time was measured: the precomputation, on a shared machine."""
    head = dict(name=html.escape(run_name(cfg)), layers=cfg.layers, eps=f"{cfg.smoothing:g}", accum=cfg.accum,
                steps=run["steps"], seconds=f"{run['seconds']:.1f}")
    if ahead and "cpu_seconds" in run:
        head = _t("result.ahead", cpu=f"{run['cpu_seconds']:.1f}", **head)
    else:
        head = _t("result.head", cpu=_t("result.cpu", s=f"{run['cpu_seconds']:.1f}") if "cpu_seconds" in run else "",
                  **head)
    lines = [head,
             "", f"| | {_t('this')} | {_t('result.intact', layers=cfg.layers)} |", "|---|---|---|",
             _row("exact", _pct(run), _pct(intact)),
             _row("train", f"{run['train_loss']:.4f}", f"{intact['train_loss']:.4f}"),
             _row("held", f"{run['held_out_loss']:.3f}", f"{intact['held_out_loss']:.3f}"),
             _row("registered", f"{run['params_registered']:,}", f"{intact['params_registered']:,}"),
             _row("params_held", f"{run['params_held']:,}", f"{intact['params_held']:,}")]
    shows = reading(row_name(cfg.breaks, cfg.layers))
    if shows and cfg.smoothing == 0 and cfg.accum == 1:
        lines += ["", f"*{_t('result.shows')}* {shows}"]
    check = run.get("gradient_check")
    if check:
        lines += ["", _t("result.check", accum=check["accum"], micro=check["micro_batch"], batch=check["batch"],
                         diff=f"{check['max_abs_diff']:.1e}", rel=f"{check['max_rel_diff']:.1e}",
                         acc=f"{check['activation_bytes_accumulated'] / 1e6:.2f}",
                         one=f"{check['activation_bytes_one_batch'] / 1e6:.2f}")]
    return "\n".join(lines)
