"""The Learn path's figures, one a step: each drawn for the learner's sentence (`c`, app/learn_path.py context)
and the step's action, short enough for a phone, its words in the event's language (app.i18n, learn.<key>.*).
Until the learner checks the step's answer, a figure keeps back what would give it away (`c.revealed`). Where a
step shows a figure of another tab (the relative-position map, the Noam schedule, label smoothing), it asks that
tab's builder for it in its own words; the data helpers here (a batch, a recorded vector) are the answers' too."""
import functools
import math
import re
from functools import lru_cache
from types import SimpleNamespace

import plotly.graph_objects as go
import torch
import torch.nn as nn

from core import lab
from core.analysis import inside as core_inside
from core.analysis.patching import patch_grid
from core.model import subsequent_mask
from core.train import LabelSmoothing, rate

from ..cache import per_language
from ..common import PIECE_PX, clamp, label, md_literal, phone_width, token_axis
from ..common import wrap_title as common_wrap_title
from ..edits import edited_any, edited_default
from ..i18n import texts
from ..recording import recorded
from ..shared import get_translator, model_of
from . import positional
from .inside import ln_vectors, small
from .margins import fit
from .masks import make_batch
from .timelapse import curves_figure, log_points, point_name, run_points
from .training import bleu_summary, learn_log, noam_figure, probe_sentences, shipped_schedule, smoothing_figure

BLUE, ORANGE, GREY, GREEN = "#2f6db5", "#e4572e", "#9aa3ad", "#2a9d4b"
FIGURE_HEIGHT = 340  # fits a phone's screen beside the step's text


def context(ins, revealed=False):
    """What a step's functions read: the translation, the shipped model, its text (in the event's language), and
    whether the learner has checked the step's answer (until then its figure and fact line keep the answer to
    themselves)."""
    tr = get_translator() if ins is None else model_of(ins)  # the model that made the translation
    return SimpleNamespace(ins=ins, model=tr.model, cfg=tr.config, tokenizer=tr.tokenizer, revealed=revealed,
                           t=texts("learn"), translator=tr, pad=tr.pad_id)


def sentence_free(draw):
    """A step's figure that reads neither the sentence nor the session, only the model, the action's value and
    whether the answer is revealed: drawn once per process for each value, reveal and language (app/cache.py)."""
    @per_language(maxsize=64)
    def kept(value, revealed):
        return draw(context(None, revealed), value)

    @functools.wraps(draw)
    def drawn(c, value):
        return kept(value, c.revealed)
    drawn.cache_clear = kept.cache_clear
    return drawn


def _piece(t):
    return t.replace("▁", " ").strip() or t


TITLE_WIDTH = 40  # a title line's width, in Latin letters (a Chinese character counts two): a phone's figure


def wrap_title(title, width=TITLE_WIDTH):
    """A step's figure title, escaped, in lines a phone's figure shows (app/common.py wrap_title)."""
    return common_wrap_title(label(title), width)


TITLE_PAD = 18  # px above the title: plotly places a title's first line by its baseline, the rest below it
LEGEND_LINE, LEGEND_WIDTH = 19, 330  # a legend line's height, and the width it is packed into: a phone's figure
LEGEND_NAME = 30  # a legend entry's line width, in Latin letters: plotly cuts a longer one at the figure's edge


def text_width(s, size=12):
    """About how wide `s` is drawn, in px, at font `size` (a Chinese character counts about twice a letter)."""
    return sum(size if re.match(r"[\u3000-\u9fff\uff00-\uffef]", ch) else 0.6 * size for ch in s)


def legend_entries(fig):
    return [t for t in fig.data if t.type != "heatmap" and t.showlegend is not False]


def legend_height(fig):
    """The px a horizontal legend of `fig` takes at a phone's width, its names in lines as they are (0 without a
    legend). Plotly puts its entries in one row if they fit, else one under another."""
    shown = legend_entries(fig)
    if fig.layout.showlegend is False or (len(shown) < 2 and not any(t.showlegend for t in shown)):
        return 0  # plotly draws a legend for two traces or more, or one that asks for it
    lines = [(t.name or "").count("<br>") + 1 for t in shown]
    if sum(40 + max(text_width(x) for x in t.name.split("<br>")) for t in shown) <= LEGEND_WIDTH:
        return LEGEND_LINE * max(lines) + 4
    return sum(LEGEND_LINE * n + 2 for n in lines)


def _compact(fig, title, height=FIGURE_HEIGHT):
    """A step's figure: short, its title the step's own (in lines a phone shows), its legend above the plot
    (where no tick label or axis title reaches it), and still on a phone (a touch scrolls the page)."""
    text = wrap_title(title)
    for t in legend_entries(fig):
        t.name = wrap_title(t.name or "", width=LEGEND_NAME)  # the names are plain text: escaped here, once
    legend = legend_height(fig)
    # the title at the top (plotly would centre it in the top margin, over the legend), the legend under it
    fig.update_layout(title=dict(text=text, font=dict(size=14), x=0.02, xanchor="left", y=1, yref="container",
                                 yanchor="top", pad=dict(t=TITLE_PAD)),
                      height=height + legend, dragmode=False, font=dict(size=12),
                      margin=dict(l=10, r=10, t=TITLE_PAD + 16 + 20 * (text.count("<br>") + 1) + legend, b=10),
                      legend=dict(orientation="h", x=0, xanchor="left", y=1, yref="paper", yanchor="bottom",
                                  font=dict(size=12)))
    fig.update_xaxes(fixedrange=True)
    fig.update_yaxes(fixedrange=True)
    return fig


# ---- 1. encoder-decoder and the generator ------------------------------------------------------------

def draw_generator(c, pos):
    """The generator's distribution at one output position: its best candidates, the chosen one in red."""
    t = clamp(pos, 1, len(c.ins.out_tokens)) - 1
    cands = c.ins.topk[t]
    chosen = c.ins.out_tokens[t]
    fig = go.Figure(go.Bar(x=[p for _, p in cands][::-1], y=[label(_piece(w)) for w, _ in cands][::-1],
                           orientation="h", marker_color=[ORANGE if w == chosen else BLUE for w, _ in cands][::-1],
                           hovertemplate="%{y}: p = %{x:.3f}<extra></extra>"))
    fig.update_xaxes(range=[0, 1], title="p")
    prefix = " ".join(_piece(w) for w in c.ins.tgt_tokens[1:t + 1]) or c.ins.tgt_tokens[0]  # the start: <s>, or <pad>
    return (_compact(fig, c.t("generator.fig", pos=t + 1)),
            dict(pos=t + 1, prefix=md_literal(prefix), chosen=md_literal(_piece(chosen)),
                 p=f"{c.ins.token_probs[t]:.3f}", vocab=c.model.generator.proj.out_features))


# ---- 2. clones: deepcopy and nn.ModuleList -------------------------------------------------------------

CLONES = {"clones": (), "repeat": ("shared_layers",), "plain": ("plain_list",)}


@lru_cache(maxsize=None)
def clone_counts(how):
    """Parameters of the Lab's small model built the three ways: what parameters() reports and what the
    layers really hold, which no draw of the weights changes: built unseeded, once per process."""
    model = lab.build_model(CLONES.get(how, ()), seed=None)
    layers = model.encoder.layers
    return dict(registered=lab.count(model.parameters()), held=lab.count(lab.held_parameters(model)),
                objects=len({id(m) for m in layers}), levels=len(layers))


@sentence_free
def draw_clones(c, how):
    """What parameters() reports against what the layers hold, for the chosen way of making them; once the
    answer is checked, for all three ways side by side. Before Check the chosen way alone, its axis unnumbered: two
    ways' bars side by side stand in the ratio of two of the choices (about 2:1 for clones against [layer] * N),
    which would leave the plain list's count, the third, by elimination."""
    how = how if how in CLONES else "clones"
    counts = {h: clone_counts(h) for h in CLONES}
    hide = not c.revealed  # what parameters() reports for a plain list is the question: its bar waits for Check
    ways = list(CLONES) if c.revealed else [how]
    names = [wrap_title(c.t(f"clones.choice.{h}"), width=16) for h in ways]  # level, in lines: no tilted text
    reported = [0 if hide and h == "plain" else counts[h]["registered"] for h in ways]
    fig = go.Figure([go.Bar(name=c.t("clones.registered"), x=names, y=reported,
                            # one mark, narrower than its bar: a phrase would run under the grey bar beside it
                            text=[c.t("clones.hidden") if hide and h == "plain" else "" for h in ways],
                            textposition="outside", textfont=dict(size=18), constraintext="none",
                            cliponaxis=False,  # the hidden bar's label above the plot's top is drawn, not cut
                            hoverinfo="skip" if hide else None,
                            marker_color=[ORANGE if h == how else BLUE for h in ways]),
                     go.Bar(name=c.t("clones.held"), x=names, y=[counts[h]["held"] for h in ways],
                            marker_color=GREY, hoverinfo="skip" if hide else None)])
    # before Check the bars' heights alone: a count, read off an axis or a hover, would be one of the choices
    fig.update_layout(barmode="group", xaxis=dict(tickangle=0), yaxis=dict(showticklabels=not hide))
    n = counts[how]
    return _compact(fig, c.t("clones.fig", how=c.t(f"clones.choice.{how}"))), dict(how=c.t(f"clones.choice.{how}"), registered=f"{n['registered']:,}",
                                                  held=f"{n['held']:,}", objects=n["objects"], levels=n["levels"])


# ---- 3. LayerNorm's gain and bias ---------------------------------------------------------------------

LN_PATH = "encoder.layers.0.sublayer.0.norm"


def layernorm_vectors(c, undo):
    """The first word's vector through the first encoder LayerNorm, gain and bias moved `undo` of the way
    to the values that give the input back (the Inside tab's computation)."""
    norm = core_inside.layer_norms(c.model)[LN_PATH]
    x = recorded(c.ins).norms[LN_PATH][0][min(1, len(c.ins.src_tokens) - 1)]
    undo = clamp(undo, 0.0, 1.0, float)
    return ln_vectors(x, norm.a_2.detach().float(), norm.b_2.detach().float(), norm.eps, undo, undo), undo


def draw_layernorm(c, undo):
    v, undo = layernorm_vectors(c, undo)
    n = min(64, v["input"].numel())  # the first dimensions: enough to see the shapes on a phone
    fig = go.Figure([go.Scatter(y=small(v[k][:n]), name=c.t(f"layernorm.{k}"), mode="lines",
                                line=dict(color=col, dash=dash)) for k, col, dash in
                     (("input", GREY, "solid"), ("normalised", BLUE, "solid"), ("moved", GREEN, "dot"))])
    fig.update_xaxes(title=c.t("layernorm.dimension"))
    word = c.ins.src_tokens[min(1, len(c.ins.src_tokens) - 1)]
    gap = float((v["moved"] - v["input"]).abs().max())
    return (_compact(fig, c.t("layernorm.fig", word=_piece(word), undo=f"{undo:.2f}")),
            dict(word=md_literal(_piece(word)), mean=f"{float(v['mean']):.3f}", sigma=f"{float(v['sigma']):.3f}",
                 undo=f"{undo:.2f}", gap=f"{gap:.1e}"))


# ---- 4. scaled dot-product attention ------------------------------------------------------------------

def scale_weights(c, scaled):
    """Encoder layer 0, head 0 of the recorded pass: the softmax of the raw scores with or without 1/sqrt(d_k)."""
    raw, dk, mask = core_inside.scores(recorded(c.ins), "encoder", 0, 0)
    s = raw / math.sqrt(dk) if scaled else raw
    return torch.softmax(s.masked_fill(~mask, -1e9), dim=-1), dk


def draw_scale(c, how):
    scaled = how != "raw"
    w, dk = scale_weights(c, scaled)
    tokens = c.ins.src_tokens
    fig = go.Figure(go.Heatmap(z=small(w, 3), colorscale="Blues", zmin=0, zmax=1, showscale=False,
                               # the weights' values wait for Check (the question averages them); colours show
                               hovertemplate="%{y} → %{x}" + (": %{z:.3f}" if c.revealed else "") + "<extra></extra>"))
    fig.update_layout(xaxis=token_axis(tokens, tickangle=-90), yaxis=dict(token_axis(tokens), autorange="reversed"))
    largest = float(w.max(-1).values.mean())
    fig = square_map(fig, len(tokens), c.t(f"scale.fig.{'scaled' if scaled else 'raw'}", dk=dk), c.t("rows"))
    return fig, dict(dk=dk, sqrt=f"{math.sqrt(dk):.1f}", largest=f"{largest:.2f}")


MAP_ROWS = 24      # a square map (a query per row, a key per column) of up to this many rows shows them all
WINDOW_ROWS = 20   # a longer one shows a window of at most this many rows at a time, a button above it for each
WINDOWS = 6        # and at most this many windows (a longer sentence's are longer): their buttons fit a phone's row
BUTTONS_PX = 34    # the height of the row of buttons, above the plot
ROW_PX = 18        # px a row is given at the least: a 12 px label in it, apart from the next
TOP_LABELS_PX = 22  # px of a table's column names, over its plot (cell_table): the buttons go above them
LEARN_FITS = 320   # px: what a 390 px phone's Learn figure holds across (its block, inside the tab's padding)


def row_windows(n, most=MAP_ROWS, rows=WINDOW_ROWS, windows=WINDOWS):
    """The windows of rows a square map of `n` rows shows, as (first, last) rows (0-based, inclusive), in order,
    each row in one: the whole map where it has `most` rows or fewer, else windows of one size (the last may be
    shorter), at most `rows` rows each where that makes `windows` windows or fewer."""
    if n <= most:
        return [(0, n - 1)]
    size = math.ceil(n / min(math.ceil(n / rows), windows))
    return [(a, min(a + size, n) - 1) for a in range(0, n, size)]


def windowed(fig, n, title, rows_word):
    """A step's figure of `n` rows (a map's queries, a table's positions) sized for a phone: its title (`_compact`),
    a row a label's height, and a window of rows at a time where it has many (`row_windows`: buttons above the plot,
    named by their rows counted from 1, after `rows_word`, move it; the first shown), so that it is never taller
    than a screen however long the sentence."""
    windows = row_windows(n)
    first, last = windows[0]
    fig = _compact(fig, title, height=table_height(last - first + 1))
    if len(windows) > 1:
        fig.update_yaxes(autorange=False, range=[last + 0.5, first - 0.5])  # reversed: the first row at the top
        buttons = [dict(label=f"{a + 1}–{b + 1}", method="relayout", args=[{"yaxis.range": [b + 0.5, a - 0.5]}])
                   for a, b in windows]
        over = TOP_LABELS_PX if fig.layout.xaxis.side == "top" else 0  # above a table's column names, not on them
        fig.update_layout(height=fig.layout.height + BUTTONS_PX, margin_t=fig.layout.margin.t + BUTTONS_PX,
                          updatemenus=[dict(type="buttons", direction="right", buttons=buttons, active=0,
                                            showactive=True, x=0, xanchor="left", y=1, yanchor="bottom",
                                            # plotly draws the active button #f4faff, lighter than the others
                                            pad=dict(b=8 + over, l=0, r=0, t=0), font=dict(size=13),
                                            bgcolor="#dde3ec", bordercolor="#9aa3ad")],
                          annotations=[dict(text=label(rows_word), x=0, xref="paper", xanchor="right", y=1,
                                            yref="paper", yanchor="bottom", yshift=14 + over, showarrow=False,
                                            font=dict(size=12, color="#556"))])
    margin = fit(fig.to_plotly_json())["layout"]["margin"]  # as the page gives its labels (app/figures/margins.py)
    need = ROW_PX * (last - first + 1) + margin["t"] + margin["b"]  # a title of three lines, long turned labels
    if fig.layout.height < need:
        fig.update_layout(height=need)
    return fig


def square_map(fig, n, title, rows_word):
    """A step's map of a sentence against itself (`n` pieces a side, a heatmap labelled by token_axis), its rows
    `windowed`, and every column within the plot: on a phone that cannot hold a column per PIECE_PX with its
    labels, the plot is as wide as that (app/common.py phone_width), in a block a finger scrolls sideways."""
    fig = windowed(fig, n, title, rows_word)
    margin = fit(fig.to_plotly_json())["layout"]["margin"]  # as the page gives its labels (app/figures/margins.py)
    need = int(n * PIECE_PX + margin["l"] + margin["r"])
    if need > LEARN_FITS:  # the width app/page/phone-width.js gives the plot on a phone (app/common.py phone_width)
        fig.update_layout(meta=dict(phone_width=need))
    return fig


# ---- 5. padding and subsequent masks -------------------------------------------------------------------

# our own pairs: the learner's sentence is batched with the short one, or with the long one when it is short
SHORT_PAIR = ("Ein Hund.", "A dog.")
LONG_PAIR = ("Eine Frau mit einem gelben Hut sitzt am Fluss und liest ein dickes Buch.",
             "A woman in a yellow hat sits by the river and reads a thick book.")


def mask_batch(c):
    """The Batch the trainer would build for the learner's sentence and its translation beside a pair of ours
    of another length, so that one of the two gets padding."""
    mine = (c.ins.source or " ".join(c.ins.src_tokens[1:-1]), c.ins.translation or ".")
    for other in (SHORT_PAIR, LONG_PAIR):
        batch, _ = make_batch(c.tokenizer, [mine, other], model=c.translator)
        if (batch.src == c.pad).any() and (~batch.tgt_keep).any():
            break
    return batch


def short_row(batch):
    """The row of the batch with the more source padding."""
    return int((batch.src == batch.pad).sum(1).argmax())


MASK_REACH = ("none", "itself", "real", "upto")  # what a padding position's query may attend to: the question's choices


def pad_query_reach(batch):
    """In the decoder's mask of the batch's padded English: what the query at its first padding position may attend
    to, as one of MASK_REACH (None if none describes it), with that sentence's row, the position and its count of
    real pieces (those the target padding mask keeps)."""
    row = int((~batch.tgt_keep).sum(1).argmax())
    real = int(batch.tgt_keep[row].sum())
    keys = set(batch.tgt_mask[row, real].nonzero().flatten().tolist())  # position `real`: the first padding one
    reach = {"none": set(), "itself": {real}, "real": set(range(real)), "upto": set(range(real + 1))}
    return next((k for k in MASK_REACH if reach[k] == keys), None), row, real


def cell_table(columns, names, marked):
    """A table drawn as a heatmap, for a phone: one row per position, one column per list of pieces in
    `columns` (named `names`), each piece written in its cell at a readable size, the cells where `marked` holds
    coloured. Pieces down a column, not across: a phone has room for two columns of words, not for twenty."""
    rows = max(len(col) for col in columns)
    z = [[int(marked(i, j)) if i < len(col) else 0 for j, col in enumerate(columns)] for i in range(rows)]
    words = [[label(col[i]) if i < len(col) else "" for col in columns] for i in range(rows)]
    fig = go.Figure(go.Heatmap(z=z, text=words, texttemplate="%{text}", textfont=dict(size=12, color="#1d2733"),
                               colorscale=[[0, "#eef1f6"], [1, "#9cc3ec"]], zmin=0, zmax=1, showscale=False,
                               xgap=2, ygap=2, hoverinfo="skip"))
    fig.update_layout(xaxis=dict(token_axis(names), side="top"),
                      yaxis=dict(autorange="reversed", dtick=1 if rows <= 24 else 2))
    return fig, rows


def table_height(rows):
    """A figure tall enough for `rows` rows of text at 12 px, and never shorter than a step's figure."""
    return max(FIGURE_HEIGHT, 22 * rows + 70)


def _mask_map(c, batch, which, piece):
    """The decoder's mask of the batch's padded English (`which`: "subsequent" alone, or "both" with its padding)
    as a map of its pieces against themselves, its rows `windowed` (square_map); with both before Check, the
    padding positions' rows left blank and said so in each window that has them (plotly shows a note only while
    its row is on screen). Returns the figure, the pairs the mask allows and the cells."""
    _, row, real = pad_query_reach(batch)  # the row whose English is padded, and its real pieces
    T = batch.tgt.size(1)
    m = subsequent_mask(T)[0] if which == "subsequent" else batch.tgt_mask[row]
    pieces = [piece(i) for i in batch.tgt[row]]
    z = m.int().tolist()
    hide = which == "both" and not c.revealed  # what the padding positions' queries reach is the question
    if hide:
        z = [r if i < real else [None] * T for i, r in enumerate(z)]
    fig = go.Figure(go.Heatmap(z=z, colorscale=[[0, "#f2f2f2"], [1, BLUE]], zmin=0, zmax=1, showscale=False,
                               hovertemplate="%{y} → %{x}: %{z}<extra></extra>", hoverongaps=False))
    fig.update_layout(xaxis=token_axis(pieces, tickangle=-90), yaxis=dict(token_axis(pieces), autorange="reversed"))
    fig = square_map(fig, T, c.t(f"masks.fig.{which}"), c.t("rows"))
    for a, b in row_windows(T) if hide else ():
        if b >= real:
            # at the plot's left: a phone shows the plot's start, the rest of a wide map scrolled to
            fig.add_annotation(text=c.t("masks.hidden-rows"), x=0.02, xref="paper", xanchor="left",
                               y=(max(a, real) + b) / 2, yref="y", showarrow=False, font=dict(size=13, color="#556"))
    return fig, int(m.sum()), T * T


def draw_masks(c, which):
    """Step 5's figure: the batch's German as a table with its padding mask, or the decoder's mask of its padded
    English (`_mask_map`); a long sentence's rows in windows, so that it is never taller than a screen."""
    which = which if which in ("padding", "subsequent", "both") else "both"
    batch = mask_batch(c)
    piece = lambda i: c.tokenizer.id_to_piece(int(i))  # raw pieces: the axis escapes them, once
    if which == "padding":  # the German side: each sentence of the batch, its padding greyed (named after Check)
        columns = [[piece(i) if c.revealed or i != c.pad else "" for i in row] for row in batch.src]
        fig, rows = cell_table(columns, [c.t("masks.yours"), c.t("masks.ours")],
                               lambda i, j: bool(batch.src_mask[j, 0, i]))
        fig.update_yaxes(title=c.t("masks.position"), dtick=1)  # each row a label's height: every one labelled
        allowed, cells = int(batch.src_mask.sum()), batch.src.numel()
        fig = windowed(fig, rows, c.t("masks.fig.padding"), c.t("rows"))
    else:
        fig, allowed, cells = _mask_map(c, batch, which, piece)
    pads = int((~batch.tgt_keep).sum(1).max())
    src_pads = int((batch.src == c.pad).sum(1).max())
    shown = (c.t("masks.shown.padding", allowed=allowed, cells=cells) if which == "padding" else
             "" if which == "both" and not c.revealed else  # the figure says its padding rows wait for Check
             c.t("masks.shown.pairs", allowed=allowed, cells=cells))
    return fig, dict(S=batch.src.size(1), T=batch.tgt.size(1), pads=pads, src_pads=src_pads, shown=shown)


# ---- 6. the positional encoding is a buffer -----------------------------------------------------------

def draw_buffer(c, pos):
    pe = c.model.src_embed[1].pe[0]  # (max_len, d_model), the registered buffer
    pos = clamp(pos, 0, len(c.ins.src_tokens) - 1)
    # the sine dimensions (even) and the cosine ones (odd) apart, each over its frequency index i: drawn as one line
    # in dimension order, the two alternate at every step and the line fills the plot
    fig = go.Figure([go.Scatter(y=small(pe[pos, k::2], 3), mode="lines+markers", name=c.t(f"buffer.{name}"),
                                line=dict(color=color, width=1.5), marker=dict(size=3))
                     for k, name, color in ((0, "sin", BLUE), (1, "cos", ORANGE))])
    fig.update_xaxes(title=c.t("buffer.pair"))
    return (_compact(fig, c.t("buffer.fig", pos=pos, word=_piece(c.ins.src_tokens[pos]))),
            dict(pos=pos, shape=" × ".join(map(str, c.model.src_embed[1].pe.shape)), word=md_literal(_piece(c.ins.src_tokens[pos]))))


# ---- 7. the position-wise feed-forward network ----------------------------------------------------------

def ffn_units(c, pos):
    act = recorded(c.ins).ffn["encoder"][0]  # (L, d_ff), ReLU outputs of encoder layer 0
    pos = clamp(pos, 0, act.size(0) - 1)
    return act[pos], pos


def draw_ffn(c, pos):
    a, pos = ffn_units(c, pos)
    ranked = a.sort(descending=True).values
    if not c.revealed:  # the share that fires is the question: before Check, the firing units alone, uncounted
        ranked = ranked[ranked > 0]
    # a filled step line, not 1024 bars: at a phone's width a bar is a third of a pixel and is not drawn; ranked
    # from 1, so that no x tick at 0 meets the y axis's 0
    fig = go.Figure(go.Scatter(x=list(range(1, ranked.numel() + 1)), y=small(ranked, 3), mode="lines",
                               line=dict(color=ORANGE, width=1.5, shape="hv"), fill="tozeroy",
                               hovertemplate="%{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=c.t("ffn.units"), showticklabels=c.revealed)
    on = int((a > 0).sum())
    word = _piece(c.ins.src_tokens[pos])
    return (_compact(fig, c.t("ffn.fig", word=word)),
            dict(word=md_literal(word), on=on, d_ff=a.numel(), share=f"{on / a.numel():.0%}"))


# ---- 8. attention carries a word to other positions, the FFN does not: patching the encoder --------------

# our own sentences, each beside a copy with one word changed, for a sentence of the learner's that app/edits.py
# has no edit for (or one that costs the translation nothing)
OUR_EDITS = (("Ein Mann fährt Fahrrad.", "Ein Junge fährt Fahrrad."),
             ("Zwei Hunde laufen durch den Schnee.", "Drei Hunde laufen durch den Schnee."))
MIN_COST = 0.05  # nats: an edit that costs the translation less tells nothing of where the changed word went
CARRIES = 0.01   # a position carries the changed word where putting its state back returns this share of the cost
PATCHING = ("embedding", "first", "later", "never")  # the question's choices: from which layer on others carry it


def _edits(source, tokenizer):
    """The pairs the step tries, in order: the learner's sentence with the Compare tab's edit, OUR_EDITS; then, for a
    tokenizer that cuts those edits into other pieces, the learner's sentence and ours with any word of
    app/edits.py's that keeps their pieces."""
    pairs = [(source, edited_default(source, tokenizer))] if source else []
    pairs += list(OUR_EDITS)
    pairs += [(original, edited_any(original, tokenizer)) for original in ([source] if source else []) +
              [o for o, _ in OUR_EDITS]]
    return list(dict.fromkeys((o, e) for o, e in pairs if e != o))


@lru_cache(maxsize=16)
def _patch_run(translator, source):
    """The patching grid (core.analysis.patching) of `source` and its edited copy (app/edits.py) on `translator`,
    or, where the sentence has no edit of as many pieces or the edit costs its translation under MIN_COST nats, of
    the first of OUR_EDITS that does (or, where none does, of the pair whose edit costs most): (grid, whether it is
    ours); None where no pair can be patched at all. Kept per sentence: the step's figure, its question and its
    slider all read it."""
    found = []
    for original, copy in _edits(source, translator.tokenizer):
        try:
            grid = patch_grid(translator, original, copy)
        except ValueError:  # another tokenizer cuts the copy into more pieces, or the sentence is too long
            continue
        cost = abs(float(grid.logp_original.sum() - grid.logp_edited.sum()))
        if grid.changed and cost >= grid.min_effect:
            found.append((cost, grid, original != source))
            if cost >= MIN_COST:
                break
    if not found:
        return None
    _, grid, ours = found[-1] if found[-1][0] >= MIN_COST else max(found, key=lambda f: f[0])
    return grid, ours


@lru_cache(maxsize=1)
def _shipped():
    """The shipped model (assets/), for a step the open model cannot draw."""
    from core.data import ASSETS
    from core.translate import Translator
    return Translator.load(ASSETS, half_rows=0, kept=False)


def patch_run(c):
    """The step's grid and how it was found: None on the learner's sentence, "ours" on a sentence of ours (the
    learner's has no edit the step can make), "shipped" on the shipped model (the open model can patch none of
    them: a tokenizer that cuts every edit into other pieces)."""
    source = (c.ins.source or "").strip()
    run = _patch_run(c.translator, source)
    if run is not None:
        return run[0], "ours" if run[1] else None
    run = _patch_run(_shipped(), source)
    return run[0], "shipped"


def patched_tokens(ins):
    """The output tokens the step's slider moves over (0: the whole translation): those of the grid's translation."""
    return len(patch_run(SimpleNamespace(translator=model_of(ins), ins=ins))[0].out_tokens)


def carried(grid):
    """Where the changed word reaches other positions: (the first layer whose state, put back at one position other
    than the changed ones, returns at least CARRIES of the translation's cost, or None where no layer's does; the
    position that returns most there (at the last layer where none does); what it returns; what the changed
    word's own position returns after the last layer). Layer 0 is the embedding."""
    r = grid.recovered_total  # (N + 1, S)
    others = [j for j in range(r.size(1)) if j not in grid.changed]
    best = []
    for layer in range(r.size(0)):
        values = torch.nan_to_num(r[layer, others], nan=-math.inf)
        j = int(values.argmax())
        best.append((others[j], float(values[j])))
        if best[-1][1] >= CARRIES:
            break
    first = len(best) - 1 if best[-1][1] >= CARRIES else None
    own = max(float(torch.nan_to_num(r[-1, j], nan=0.0)) for j in grid.changed)
    return first, best[-1][0], best[-1][1], own


def patch_fields(c, grid, ours):
    """The step's fields, in the question, the fact line and the answer: the changed word, what it became, the
    number of encoder layers, and (for the answer and the revealed fact) where the word was carried."""
    first, pos, share, own = carried(grid)
    changed = grid.changed[0]
    note = "" if not ours else c.t(f"patching.{ours}", sentence=md_literal(grid.original), edited=md_literal(grid.edited))
    note += "" if not note or note.endswith(("。", "！", "？")) else " "  # no space after 。
    return dict(word=_piece(grid.src_tokens[changed]), new=_piece(grid.edited_tokens[changed]),
                layers=grid.logp_patched.size(0) - 1, least=f"{CARRIES:.0%}", note=note,
                layer=first if first is not None else grid.logp_patched.size(0) - 1,
                pos=md_literal(_piece(grid.src_tokens[pos])), share=f"{share:.1%}", own=f"{own:.0%}")


def draw_patching(c, t):
    """The patching grid on its side, for a phone: a row per piece of the sentence (the changed one starred), a
    column per layer after which the original's state is put back (0: the embedding), coloured by the share of the
    cost that returns, of the whole translation (t = 0) or of its t-th token. Before Check, the changed piece's
    cell at the embedding alone: the other cells are the answer."""
    grid, ours = patch_run(c)
    T = len(grid.out_tokens)
    t = clamp(t, 0, T)
    z = (grid.recovered_total if t == 0 else grid.recovered[..., t - 1]).T  # (S, N + 1)
    shown = [[None if not math.isfinite(float(v)) or not (c.revealed or (j in grid.changed and k == 0))
              else round(min(max(float(v), -1.5), 1.5), 3) for k, v in enumerate(row)] for j, row in enumerate(z)]
    pieces = [("★ " if j in grid.changed else "") + _piece(p) for j, p in enumerate(grid.src_tokens)]
    columns = [c.t("patching.embedding")] + [str(k) for k in range(1, z.size(1))]
    fig = go.Figure(go.Heatmap(z=shown, x=columns, y=[label(p) for p in pieces], zmin=-1, zmax=1, zmid=0,
                               colorscale="RdBu_r", showscale=False, xgap=1, ygap=1, hoverongaps=False,
                               hovertemplate="%{y} · %{x}" + (": %{z:.0%}" if c.revealed else "") + "<extra></extra>"))
    fig.update_layout(plot_bgcolor="#eef1f6",
                      xaxis=dict(type="category", title=c.t("patching.layer"), tickangle=0),
                      yaxis=dict(type="category", autorange="reversed"))
    if not c.revealed:
        fig.add_annotation(text=c.t("patching.hidden"), x=0.62, xref="paper", y=0.5, yref="paper", showarrow=False,
                           font=dict(size=13, color="#556"))
    what = c.t("patching.whole") if t == 0 else c.t("patching.token", token=_piece(grid.out_tokens[t - 1]), pos=t)
    fields = patch_fields(c, grid, ours)
    return _compact(fig, c.t("patching.fig", what=what), height=table_height(len(pieces))), dict(fields, what=what)


# ---- 9. embeddings: tying and sqrt(d_model) --------------------------------------------------------------

def draw_embeddings(c, how):
    scaled = how != "raw"
    emb = c.model.src_embed[0]
    ids = [c.tokenizer.piece_to_id(t) for t in c.ins.src_tokens]
    norms = emb.lut.weight[ids].detach().float().norm(dim=1) * (math.sqrt(emb.d_model) if scaled else 1.0)
    pe_norm = math.sqrt(emb.d_model / 2)
    fig = go.Figure([go.Bar(y=small(norms, 3), marker_color=ORANGE if scaled else GREY,
                            name=c.t("embeddings.word")),
                     go.Scatter(y=[pe_norm] * len(ids), mode="lines", line=dict(color=BLUE, dash="dash"),
                                name=c.t("embeddings.position"))])
    fig.update_layout(xaxis=token_axis(c.ins.src_tokens, tickangle=-90))
    return (phone_width(_compact(fig, c.t(f"embeddings.fig.{'scaled' if scaled else 'raw'}", d=emb.d_model)), len(ids),
                        room=80),
            dict(median=f"{float(norms.median()):.2f}", pe=f"{pe_norm:.1f}", factor=f"{math.sqrt(emb.d_model):.0f}"))


def tied(model):
    """Whether the source and target embeddings and the generator share one tensor."""
    w = (model.src_embed[0].lut.weight, model.tgt_embed[0].lut.weight, model.generator.proj.weight)
    return w[0] is w[1] is w[2]


# ---- 10. positional encoding in log space, relative positions -------------------------------------------

def log_space_gap(d_model):
    """Largest difference between 1 / 10000^(2i/d) computed directly and as exp(-2i ln(10000) / d), float32."""
    i = torch.arange(0, d_model, 2, dtype=torch.float32)
    direct = 1.0 / torch.pow(torch.tensor(10000.0), i / d_model)
    logs = torch.exp(i * -(math.log(10000.0) / d_model))
    return float((direct - logs).abs().max())


@sentence_free
def draw_relative(c, k):
    d = c.model.src_embed[0].d_model
    k = clamp(k, 1, 20)
    # the Positional tab's figure in the step's words, one panel above the other; the error's size is the
    # question: its shape shows, its scale waits for Check
    fig, res32, res64 = _relative(d, k, c.revealed)
    return (_compact(fig, c.t("relative.fig", k=k), height=560),
            dict(k=k, res32=f"{res32:.1e}", res64=f"{res64:.1e}", gap=f"{log_space_gap(d):.1e}"))


def _relative(d, k, revealed):
    return positional.relative_figure(positional.encoding(d, positional.POSITIONS), k, words="learn", stacked=True,
                                      scale=revealed)


# ---- 11. make_model: Xavier initialisation ------------------------------------------------------------

def xavier_bound(fan_in, fan_out):
    return math.sqrt(6.0 / (fan_in + fan_out))


@sentence_free
def draw_init(c, how):
    d, d_ff = c.model.src_embed[0].d_model, c.cfg["d_ff"]
    g = torch.Generator().manual_seed(0)  # its own generator: the server's other events draw from the global one
    w = torch.empty(d_ff, d)  # W_1's shape
    if how != "default":
        nn.init.xavier_uniform_(w, generator=g)  # as make_model does for every matrix
    else:
        nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=g)  # nn.Linear's own draw: U(±1/sqrt(fan_in))
    w = w.flatten()
    b = xavier_bound(d, d_ff)
    fig = go.Figure(go.Histogram(x=small(w[::16], 4), nbinsx=60, marker_color=ORANGE if how != "default" else GREY,
                                 hoverinfo=None if c.revealed else "skip"))
    for x in (-b, b):
        fig.add_vline(x=x, line=dict(color=BLUE, dash="dash"))
    # one range for both draws, so that switching compares their widths; the bound's value is the question
    wide = 1.15 * max(b, 1 / math.sqrt(d))
    fig.update_xaxes(range=[-wide, wide], showticklabels=c.revealed)
    return (_compact(fig, c.t(f"init.fig.{'default' if how == 'default' else 'xavier'}", d=d, d_ff=d_ff)),
            dict(bound=f"{b:.4f}", lo=f"{float(w.min()):.4f}", hi=f"{float(w.max()):.4f}", d=d, d_ff=d_ff))


GREEDY_CELLS = 8  # the decoding step's mask is drawn in a grid of at least this many cells a side

# ---- 12. greedy decoding --------------------------------------------------------------------------------

def draw_greedy(c, step):
    t = clamp(step, 1, len(c.ins.out_tokens)) - 1
    seen = [label(_piece(w)) if w != "<s>" else "&lt;s&gt;" for w in c.ins.tgt_tokens[:t + 1]]
    m = subsequent_mask(t + 1)[0].int()
    fig = go.Figure(go.Heatmap(z=m.tolist(), colorscale=[[0, "#f2f2f2"], [1, BLUE]], zmin=0, zmax=1, showscale=False,
                               hovertemplate="%{y} → %{x}: %{z}<extra></extra>"))
    # square cells, the first steps' few of them in a corner of a grid of GREEDY_CELLS rather than one filling the
    # figure; the labels turned upright, one line a piece
    n = max(t + 1, GREEDY_CELLS)
    fig.update_layout(xaxis=dict(tickmode="array", tickvals=list(range(t + 1)), ticktext=seen, tickangle=-90,
                                 range=[-0.5, n - 0.5], showgrid=False, zeroline=False, side="top"),
                      yaxis=dict(tickmode="array", tickvals=list(range(t + 1)), ticktext=seen, range=[n - 0.5, -0.5],
                                 scaleanchor="x", showgrid=False, zeroline=False),
                      plot_bgcolor="white")
    return (phone_width(_compact(fig, c.t("greedy.fig", step=t + 1), height=table_height(n)), n),
            dict(step=t + 1, prefix=md_literal(" ".join(_piece(w) for w in c.ins.tgt_tokens[1:t + 1]) or "<s>"),
                 chosen=md_literal(_piece(c.ins.out_tokens[t])),
                 sofar=f"{sum(k * k for k in range(1, t + 2)):,}", cached=f"{(t + 1) * (t + 2) // 2:,}"))


# ---- 13. Batch and teacher forcing ----------------------------------------------------------------------

def draw_teacher(c, pos):
    inputs, targets = c.ins.tgt_tokens, c.ins.out_tokens  # tgt[:, :-1] and tgt[:, 1:] of <s> y ... </s>
    t = clamp(pos, 1, len(targets)) - 1
    fig, rows = cell_table([[_piece(w) for w in inputs], [_piece(w) if c.revealed else "?" for w in targets]],
                           ["tgt[:, :-1]", "tgt[:, 1:]"], lambda i, j: i == t)
    # positions counted from 1, as the slider and the fact line count them
    fig.update_yaxes(tickmode="array", tickvals=list(range(rows)), ticktext=[str(i + 1) for i in range(rows)],
                     title=c.t("teacher.position"))
    # a long translation's rows in windows, as steps 4 and 5 show theirs, the one holding the position shown
    fig = window_at(windowed(fig, rows, c.t("teacher.fig", pos=t + 1), c.t("rows")), rows, t)
    return (fig, dict(pos=t + 1, input=md_literal(_piece(inputs[t])), target=md_literal(_piece(targets[t])),
                      n=len(targets)))


def window_at(fig, n, row):
    """A `windowed` figure of `n` rows showing the window that holds `row` (0-based), its button the active one."""
    windows = row_windows(n)
    k = next(i for i, (a, b) in enumerate(windows) if a <= row <= b)
    if len(windows) > 1 and k:
        a, b = windows[k]
        fig.update_yaxes(range=[b + 0.5, a - 0.5])
        fig.layout.updatemenus[0].active = k
    return fig


# ---- 14. run_epoch: gradient accumulation, freeing the loss ----------------------------------------------

ACCUM = (1, 2, 4, 8)


@lru_cache(maxsize=len(ACCUM))
def accum_check(k):
    """core.lab.gradient_check on the copy task for k micro-batches, run once per process (it is seeded, so the
    same every time; the step's figure and its answer both read it)."""
    return lab.gradient_check("copy", k)


@sentence_free
def draw_accum(c, k):
    k = int(k) if str(k).isdigit() and int(k) in ACCUM else 4
    r = accum_check(k)
    fig = go.Figure([go.Bar(x=[c.t("accum.one"), c.t("accum.micro", k=k)],
                            y=[r["activation_bytes_one_batch"] / 1e6, r["activation_bytes_accumulated"] / 1e6],
                            marker_color=[GREY, ORANGE], hovertemplate="%{y:.2f} MB<extra></extra>")])
    fig.update_yaxes(title="MB")
    return (_compact(fig, c.t("accum.fig", k=k)),
            dict(k=k, diff=f"{r['max_abs_diff']:.1e}", rel=f"{r['max_rel_diff']:.1e}", micro=r["micro_batch"],
                 batch=r["batch"], one=f"{r['activation_bytes_one_batch'] / 1e6:.2f}",
                 acc=f"{r['activation_bytes_accumulated'] / 1e6:.2f}"))


# ---- 15. the Noam schedule --------------------------------------------------------------------------------

LEARN_EXAMPLES = ((512, 1.0, 4000), (256, 1.0, 4000))  # the paper's warm-up, at its d_model and at this model's


def model_schedule():
    """(d_model, factor, warmup) the shipped model was trained with: its training log's arguments, else the
    model's d_model with the paper's factor and warm-up."""
    return shipped_schedule() or (get_translator().model.src_embed[0].d_model, 1.0, 4000)


@sentence_free
def draw_noam(c, warmup):
    """The slider's warm-up (with the model's d_model and factor) over the shipped model's own schedule, its
    arguments read from the training log (`model`), beside the paper's 4,000 warm-up steps."""
    d, factor, trained = model_schedule()
    warmup = clamp(warmup, 100, 8000)
    # the Training tab's figure in the step's words; how high the rate climbs is the question: the curves'
    # shapes show, their scale waits for Check
    fig = noam_figure(d, factor, warmup, words="learn", scale=c.revealed, model=(d, factor, trained),
                      examples=LEARN_EXAMPLES, steps=12000, legend_columns=None)  # _compact wraps
    peak = rate(warmup, d, factor, warmup)
    return _compact(fig, c.t("noam.fig", d=d, warmup=warmup)), dict(warmup=warmup, peak=f"{peak:.2e}", d=d)


# ---- 16. label smoothing ---------------------------------------------------------------------------------

def smoothed(eps, vocab):
    """The target distribution LabelSmoothing builds for one target (token 2) over `vocab` tokens (0 = padding)."""
    crit = LabelSmoothing(vocab, 0, eps)
    crit(torch.zeros(1, vocab), torch.tensor([2]))
    return crit.true_dist[0]


@sentence_free
def draw_smoothing(c, eps):
    eps = clamp(eps, 0.0, 0.4, float)
    # the Training tab's figure in the step's words; the right piece's share is the question: the colours show,
    # the numbers wait for Check
    fig, td = smoothing_figure(eps, words="learn", numbers=c.revealed)
    return _compact(fig, c.t("smoothing.fig", eps=f"{eps:g}")), dict(eps=f"{eps:g}", right=f"{float(td[0, 2]):.3f}",
                                                                      other=f"{float(td[0, 1]):.3f}")


# ---- 17. how the model learned ---------------------------------------------------------------------------

def history_points():
    """The points of the shipped model's training run the step moves through: the snapshots that ship beside it
    (app/figures/timelapse.py), else the ends of the epochs its log records."""
    from ..shared import model_dir
    points = run_points(model_dir())
    return points if points else log_points(learn_log()[2])


@sentence_free
def draw_history(c, i):
    """The run's val loss over a log-scaled step axis, the chosen point marked; its BLEU once the answer is seen."""
    points = history_points()
    i = clamp(i, 0, len(points) - 1)
    p = points[i]
    fig = curves_figure(points, learn_log()[1], i, lr=False, bleu=c.revealed, note=False)  # the title names it
    probes = p.get("probes") or []
    said = probes[0] if probes else ""
    name = point_name(p)
    return _compact(fig, c.t("history.fig", name=name)), dict(name=name, said=md_literal(said),
                                                            german=md_literal(probe_sentences()[0]),
                                                            loss=f"{p['val_loss']:.2f}")


def half_bleu_epoch(epochs):
    """(the first epoch whose val BLEU reached half of the last one's, that BLEU, the last BLEU, the last epoch)
    from a log's epoch records."""
    scores = bleu_summary(epochs)
    final = scores["last"]
    first = next(e for e in epochs if e.get("val_bleu") is not None and e["val_bleu"] >= final / 2)
    return first["epoch"], first["val_bleu"], final, scores["last_epoch"]
