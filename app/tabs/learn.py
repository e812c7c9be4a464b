"""The Learn tab: a guided path through The Annotated Transformer, one idea a step, in the order of the study
note this project serves, each step on the shipped model and the learner's own sentence.

A step is a few sentences (locale/<lang>.json, `learn.<key>.*`), a question to answer before its answer is
shown (the answer computed from the model and the sentence), one action (a slider or a choice) that redraws the
step's live figure and completes the step, and a button that opens the full tab at the same place. Predict, then
see: until the learner checks the answer, the figure and its fact line show the mechanism but keep back what
would give the answer away (a number, an axis's scale, a hover, the pieces asked about); Check shows it, and the
session's progress remembers which steps were checked.
Nothing here runs the model for a step but what the step itself needs: the translation's Inspection, the
Inside tab's recorded pass (kept per translation), or a tiny model from the Lab.
"""
import hashlib
import html
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Callable

import gradio as gr
import plotly.graph_objects as go
import torch
import torch.nn as nn

from core import lab
from core.analysis import inside as core_inside
from core.data import PAD
from core.model import subsequent_mask
from core.train import LabelSmoothing, rate

from ..common import clamp, label, md_literal, token_axis
from ..common import wrap_title as common_wrap_title
from ..figures import positional
from ..figures.inside import ln_vectors, small
from ..figures.masks import make_batch
from ..figures.training import noam_figure, smoothing_figure
from ..i18n import L, read_lang, speaking, table, text
from ..recording import recorded
from ..shared import get_translator
from ..views import View, opener, refresh, tab_views
from .translate import german_hint, input_problem
from .translate import translate as translate_fn

BLUE, ORANGE, GREY, GREEN = "#2f6db5", "#e4572e", "#9aa3ad", "#2a9d4b"
FIGURE_HEIGHT = 340  # fits a phone's screen beside the step's text


@dataclass(frozen=True)
class Control:
    """A step's one action: a slider (its range may depend on the translation) or a choice among values."""
    kind: str = "slider"
    lo: object = 0                   # a number, or a function of the Inspection
    hi: object = 1
    step: float = 1
    default: object = 0              # likewise
    choices: tuple = ()              # a choice's values; their labels are learn.<key>.choice.<value>


@dataclass(frozen=True)
class Step:
    """A step of the path: its text's key, the full tab it opens (a links path), its action, its figure
    (`draw(ctx, value)` -> (figure, fields of its fact line)) and its question (`quiz(ctx)` -> (choices,
    index of the right one, fields of its answer))."""
    key: str
    tab: str
    control: Control
    draw: Callable
    quiz: Callable


def _value(x, ins):
    return x(ins) if callable(x) else x


def context(ins, lang, revealed=False):
    """What a step's functions read: the translation, the shipped model, its text in `lang`, and whether the
    learner has checked the step's answer (until then its figure and fact line keep the answer to themselves)."""
    tr = get_translator()
    lang = read_lang(lang)
    return SimpleNamespace(ins=ins, lang=lang, model=tr.model, cfg=tr.config, tokenizer=tr.tokenizer,
                           revealed=revealed, t=lambda key, **kw: text(lang, f"learn.{key}", **kw))


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


def _options(values, right, fmt):
    """Choices from distinct numbers, in ascending order, and the index of `right` among them."""
    values = sorted(set(values))
    return [fmt(v) for v in values], values.index(right)


def _positions(ins):
    return len(ins.out_tokens)


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
    prefix = " ".join(_piece(w) for w in c.ins.tgt_tokens[1:t + 1]) or "<s>"
    return (_compact(fig, c.t("generator.fig", pos=t + 1)),
            dict(pos=t + 1, prefix=md_literal(prefix), chosen=md_literal(_piece(chosen)),
                 p=f"{c.ins.token_probs[t]:.3f}", vocab=c.model.generator.proj.out_features))


def quiz_generator(c):
    vocab = c.model.generator.proj.out_features
    d = c.model.src_embed[0].d_model
    choices, right = _options([d, c.cfg["d_ff"], vocab, len(c.ins.src_tokens)], vocab, str)
    return choices, right, dict(vocab=vocab, d_model=d)


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


def draw_clones(c, how):
    how = how if how in CLONES else "clones"
    counts = {h: clone_counts(h) for h in CLONES}
    names = [wrap_title(c.t(f"clones.choice.{h}"), width=16) for h in CLONES]  # level, in lines: no tilted text
    hide = not c.revealed  # what parameters() reports for a plain list is the question: its bar waits for Check
    reported = [0 if hide and h == "plain" else counts[h]["registered"] for h in CLONES]
    fig = go.Figure([go.Bar(name=c.t("clones.registered"), x=names, y=reported,
                            text=[wrap_title(c.t("clones.hidden"), width=8) if hide and h == "plain" else ""
                                  for h in CLONES],  # in short lines at 11 px: plotly shrinks a wide one to fit
                            textposition="outside", textfont=dict(size=11), constraintext="none",
                            hoverinfo="skip" if hide else None,
                            marker_color=[ORANGE if h == how else BLUE for h in CLONES]),
                     go.Bar(name=c.t("clones.held"), x=names, y=[counts[h]["held"] for h in CLONES],
                            marker_color=GREY)])
    fig.update_layout(barmode="group", xaxis=dict(tickangle=0))
    n = counts[how]
    return _compact(fig, c.t("clones.fig", how=c.t(f"clones.choice.{how}"))), dict(how=c.t(f"clones.choice.{how}"), registered=f"{n['registered']:,}",
                                                  held=f"{n['held']:,}", objects=n["objects"], levels=n["levels"])


def quiz_clones(c):
    counts = {h: clone_counts(h)["registered"] for h in CLONES}
    choices, right = _options(counts.values(), counts["plain"], lambda v: f"{v:,}")
    return choices, right, dict(plain=f"{counts['plain']:,}", clones=f"{counts['clones']:,}")


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


def quiz_layernorm(c):
    v, _ = layernorm_vectors(c, 0.0)
    sigma, mean = round(float(v["sigma"]), 3), round(float(v["mean"]), 3)
    var = round(float(v["sigma"]) ** 2, 3)  # the variance: a tempting answer, and a wrong one
    values = [1.0, sigma, var, mean if abs(mean) > 1e-3 else 0.0]
    choices, right = _options(values, sigma, lambda x: f"γ = {x:.3f}")
    word = _piece(c.ins.src_tokens[min(1, len(c.ins.src_tokens) - 1)])  # plain text: the question is a label
    return choices, right, dict(sigma=f"{sigma:.3f}", mean=f"{mean:.3f}", var=f"{var:.3f}", word=word)


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
    fig.update_layout(xaxis=token_axis(tokens, tickangle=-60), yaxis=dict(token_axis(tokens), autorange="reversed"))
    largest = float(w.max(-1).values.mean())
    return (_compact(fig, c.t(f"scale.fig.{'scaled' if scaled else 'raw'}", dk=dk)),
            dict(dk=dk, sqrt=f"{math.sqrt(dk):.1f}", largest=f"{largest:.2f}"))


def quiz_scale(c):
    plain = round(float(scale_weights(c, False)[0].max(-1).values.mean()), 2)
    scaled = round(float(scale_weights(c, True)[0].max(-1).values.mean()), 2)
    values = {scaled, plain, round(1 / len(c.ins.src_tokens), 2)}
    choices, right = _options(values, plain, lambda x: f"{x:.2f}")
    return choices, right, dict(plain=f"{plain:.2f}", scaled=f"{scaled:.2f}")


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
        batch, _ = make_batch(c.tokenizer, [mine, other])
        if (batch.src == PAD).any() and (batch.tgt == PAD).any():
            break
    return batch


def short_row(batch):
    """The row of the batch with the more source padding."""
    return int((batch.src == PAD).sum(1).argmax())


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


def draw_masks(c, which):
    which = which if which in ("padding", "subsequent", "both") else "both"
    batch = mask_batch(c)
    piece = lambda i: c.tokenizer.id_to_piece(int(i))  # raw pieces: the axis escapes them, once
    if which == "padding":  # the German side: each sentence of the batch, its padding greyed (named after Check)
        columns = [[piece(i) if c.revealed or i != PAD else "" for i in row] for row in batch.src]
        fig, rows = cell_table(columns, [c.t("masks.yours"), c.t("masks.ours")],
                               lambda i, j: bool(batch.src_mask[j, 0, i]))
        fig.update_yaxes(title=c.t("masks.position"))
        allowed, cells = int(batch.src_mask.sum()), batch.src.numel()
        fig = _compact(fig, c.t("masks.fig.padding"), height=table_height(rows))
    else:
        row = int((batch.tgt == PAD).sum(1).argmax())  # the row whose English is padded
        T = batch.tgt.size(1)
        m = subsequent_mask(T)[0] if which == "subsequent" else batch.tgt_mask[row]
        pieces = [piece(i) for i in batch.tgt[row]]
        fig = go.Figure(go.Heatmap(z=m.int().tolist(), colorscale=[[0, "#f2f2f2"], [1, BLUE]], zmin=0, zmax=1,
                                   showscale=False, hovertemplate="%{y} → %{x}: %{z}<extra></extra>"))
        fig.update_layout(xaxis=token_axis(pieces, tickangle=-90),
                          yaxis=dict(token_axis(pieces), autorange="reversed"))
        allowed, cells = int(m.sum()), T * T
        fig = _compact(fig, c.t(f"masks.fig.{which}"))
    pads = int((batch.tgt == PAD).sum(1).max())
    shown = c.t("masks.shown.padding" if which == "padding" else "masks.shown.pairs", allowed=allowed, cells=cells)
    return fig, dict(S=batch.src.size(1), T=batch.tgt.size(1), pads=pads, shown=shown)


def quiz_masks(c):
    batch = mask_batch(c)
    row = short_row(batch)
    pads = int((batch.src[row] == PAD).sum())
    width = batch.src.size(1)
    choices, right = _options([0, pads, width, max(1, pads // 2)] if pads > 1 else [0, pads, width, pads + 1],
                              pads, str)
    return choices, right, dict(pads=pads, width=width, short=width - pads)


# ---- 6. the positional encoding is a buffer -----------------------------------------------------------

def draw_buffer(c, pos):
    pe = c.model.src_embed[1].pe[0]  # (max_len, d_model), the registered buffer
    pos = clamp(pos, 0, len(c.ins.src_tokens) - 1)
    fig = go.Figure(go.Scatter(y=small(pe[pos], 3), mode="lines", line=dict(color=BLUE)))
    fig.update_xaxes(title=c.t("layernorm.dimension"))
    return (_compact(fig, c.t("buffer.fig", pos=pos, word=_piece(c.ins.src_tokens[pos]))),
            dict(pos=pos, shape=" × ".join(map(str, c.model.src_embed[1].pe.shape)), word=md_literal(_piece(c.ins.src_tokens[pos]))))


def quiz_buffer(c):
    pe = c.model.src_embed[1].pe
    in_params = any(p is pe for p in c.model.parameters())
    buffers = [n for n, b in c.model.named_buffers() if b is pe or n.endswith(".pe")]
    choices = [c.t("buffer.choice.parameter"), c.t("buffer.choice.buffer")]
    return choices, 0 if in_params else 1, dict(names=", ".join(f"`{n}`" for n in buffers), count=pe.numel())


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


def quiz_ffn(c):
    a, _ = ffn_units(c, 1)
    share = round(float((a > 0).float().mean()), 1)
    values = {0.0, share, 1.0, 0.5}
    choices, right = _options(values, share, lambda x: f"≈ {x:.0%}")
    return choices, right, dict(share=f"{float((a > 0).float().mean()):.0%}", d_ff=a.numel(),
                                word=md_literal(_piece(c.ins.src_tokens[min(1, len(c.ins.src_tokens) - 1)])))


# ---- 8. embeddings: tying and sqrt(d_model) --------------------------------------------------------------

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
    fig.update_layout(xaxis=token_axis(c.ins.src_tokens, tickangle=-60))
    return (_compact(fig, c.t(f"embeddings.fig.{'scaled' if scaled else 'raw'}", d=emb.d_model)),
            dict(median=f"{float(norms.median()):.2f}", pe=f"{pe_norm:.1f}", factor=f"{math.sqrt(emb.d_model):.0f}"))


def tied(model):
    """Whether the source and target embeddings and the generator share one tensor."""
    w = (model.src_embed[0].lut.weight, model.tgt_embed[0].lut.weight, model.generator.proj.weight)
    return w[0] is w[1] is w[2]


def quiz_embeddings(c):
    one = tied(c.model)
    emb = c.model.src_embed[0].lut.weight
    choices = [c.t("embeddings.choice.three"), c.t("embeddings.choice.one")]
    return choices, 1 if one else 0, dict(size=f"{emb.numel():,}", saved=f"{2 * emb.numel():,}" if one else "0")


# ---- 9. positional encoding in log space, relative positions -------------------------------------------

def log_space_gap(d_model):
    """Largest difference between 1 / 10000^(2i/d) computed directly and as exp(-2i ln(10000) / d), float32."""
    i = torch.arange(0, d_model, 2, dtype=torch.float32)
    direct = 1.0 / torch.pow(torch.tensor(10000.0), i / d_model)
    logs = torch.exp(i * -(math.log(10000.0) / d_model))
    return float((direct - logs).abs().max())


def draw_relative(c, k):
    d = c.model.src_embed[0].d_model
    k = clamp(k, 1, 20)
    # the Positional tab's figure in the step's words, one panel above the other; the error's size is the
    # question: its shape shows, its scale waits for Check
    fig, res32, res64 = _relative(d, k, c.revealed)
    return (_compact(fig, c.t("relative.fig", k=k), height=560),
            dict(k=k, res32=f"{res32:.1e}", res64=f"{res64:.1e}", gap=f"{log_space_gap(d):.1e}"))


def _relative(d, k, revealed):
    return positional.relative_figure(positional.encoding(d, 64), k, words="learn", stacked=True, scale=revealed)


def quiz_relative(c):
    d = c.model.src_embed[0].d_model
    res = positional.relative_residual(positional.encoding(d, 64), 5).max().item()
    bands = [1e-1, 1e-3, 1e-5, 1e-9]
    right = min(bands, key=lambda b: abs(math.log10(max(res, 1e-12)) - math.log10(b)))
    choices, idx = _options(bands, right, lambda x: f"≈ {x:.0e}")
    return choices[::-1], len(bands) - 1 - idx, dict(res=f"{res:.1e}")


# ---- 10. make_model: Xavier initialisation ------------------------------------------------------------

def xavier_bound(fan_in, fan_out):
    return math.sqrt(6.0 / (fan_in + fan_out))


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


def quiz_init(c):
    d, d_ff = c.model.src_embed[0].d_model, c.cfg["d_ff"]
    b = round(xavier_bound(d, d_ff), 4)
    values = [b, round(1 / math.sqrt(d), 4), round(math.sqrt(6.0 / d), 4), round(1 / d_ff, 4)]
    choices, right = _options(values, b, lambda x: f"±{x:.4f}")
    return choices, right, dict(bound=f"{b:.4f}", d=d, d_ff=d_ff)


# ---- 11. greedy decoding --------------------------------------------------------------------------------

def draw_greedy(c, step):
    t = clamp(step, 1, len(c.ins.out_tokens)) - 1
    asked = greedy_question_step(c.ins) + 1  # the question's piece in tgt_tokens: it and what follows wait for Check
    seen = [label(_piece(w)) if w != "<s>" else "&lt;s&gt;" for w in c.ins.tgt_tokens[:t + 1]]
    seen = [w if c.revealed or j < asked else "?" for j, w in enumerate(seen)]
    m = subsequent_mask(t + 1)[0].int()
    fig = go.Figure(go.Heatmap(z=m.tolist(), colorscale=[[0, "#f2f2f2"], [1, BLUE]], zmin=0, zmax=1, showscale=False,
                               hovertemplate="%{y} → %{x}: %{z}<extra></extra>"))
    fig.update_layout(xaxis=dict(tickmode="array", tickvals=list(range(t + 1)), ticktext=seen, tickangle=-60),
                      yaxis=dict(tickmode="array", tickvals=list(range(t + 1)), ticktext=seen, autorange="reversed"))
    return (_compact(fig, c.t("greedy.fig", step=t + 1)),
            dict(step=t + 1, prefix=md_literal(" ".join(_piece(w) for w in c.ins.tgt_tokens[1:t + 1]) or "<s>"),
                 chosen=md_literal(_piece(c.ins.out_tokens[t]))))


def greedy_question_step(ins):
    """The step the question asks about: the second output piece when there is one (not the sentence's end)."""
    return min(1, len(ins.out_tokens) - 1)


def _method(ins):
    """The decoding that made the translation: greedy, beam or sample (greedy when unknown)."""
    m = (ins.decoding or {}).get("method", "greedy")
    return m if m in ("greedy", "beam", "sample") else "greedy"


def quiz_greedy(c):
    t = greedy_question_step(c.ins)
    cands = [w for w, _ in c.ins.topk[t][:4]]
    chosen = c.ins.out_tokens[t]
    if chosen not in cands:
        cands = cands[:3] + [chosen]
    order = sorted(cands, key=lambda w: _piece(w).lower())
    prefix = " ".join(_piece(w) for w in c.ins.tgt_tokens[1:t + 1]) or "<s>"
    return ([_piece(w) for w in order], order.index(chosen),
            dict(prefix=md_literal(prefix), chosen=md_literal(_piece(chosen)), p=f"{c.ins.token_probs[t]:.3f}",
                 method=_method(c.ins), before=prefix))  # method: the API's name of it; before: the question's


# ---- 12. Batch and teacher forcing ----------------------------------------------------------------------

def draw_teacher(c, pos):
    inputs, targets = c.ins.tgt_tokens, c.ins.out_tokens  # tgt[:, :-1] and tgt[:, 1:] of <s> y ... </s>
    t = clamp(pos, 1, len(targets)) - 1
    fig, rows = cell_table([[_piece(w) for w in inputs], [_piece(w) if c.revealed else "?" for w in targets]],
                           ["tgt[:, :-1]", "tgt[:, 1:]"], lambda i, j: i == t)
    # positions counted from 1, as the slider and the fact line count them
    fig.update_yaxes(tickmode="array", tickvals=list(range(rows)), ticktext=[str(i + 1) for i in range(rows)],
                     title=c.t("teacher.position"))
    return (_compact(fig, c.t("teacher.fig", pos=t + 1), height=table_height(rows)),
            dict(pos=t + 1, input=md_literal(_piece(inputs[t])), target=md_literal(_piece(targets[t])),
                 n=len(targets)))


def quiz_teacher(c):
    t = min(2, len(c.ins.out_tokens) - 1)
    inp, target = c.ins.tgt_tokens[t], c.ins.out_tokens[t]
    pool = [target, inp] + [w for w in c.ins.out_tokens if w not in (target, inp)][:2]
    order = sorted(dict.fromkeys(pool), key=lambda w: _piece(w).lower())
    return ([_piece(w) for w in order], order.index(target),
            dict(pos=t + 1, input=md_literal(_piece(inp)), target=md_literal(_piece(target))))


# ---- 13. run_epoch: gradient accumulation, freeing the loss ----------------------------------------------

ACCUM = (1, 2, 4, 8)


@lru_cache(maxsize=len(ACCUM))
def accum_check(k):
    """core.lab.gradient_check on the copy task for k micro-batches, run once per process (it is seeded, so the
    same every time; the step's figure and its answer both read it)."""
    return lab.gradient_check("copy", k)


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


def quiz_accum(c):
    r = accum_check(4)
    choices = [c.t("accum.choice.times"), c.t("accum.choice.same"), c.t("accum.choice.quarter")]
    return choices, 1 if r["max_rel_diff"] < 1e-4 else 0, dict(diff=f"{r['max_abs_diff']:.1e}")


# ---- 14. the Noam schedule --------------------------------------------------------------------------------

def draw_noam(c, warmup):
    d = c.model.src_embed[0].d_model
    warmup = clamp(warmup, 100, 8000)
    # the Training tab's figure in the step's words; how high the rate climbs is the question: the curves'
    # shapes show, their scale waits for Check
    fig = noam_figure(d, 1.0, warmup, words="learn", scale=c.revealed)
    peak = rate(warmup, d, 1.0, warmup)
    return _compact(fig, c.t("noam.fig", d=d, warmup=warmup)), dict(warmup=warmup, peak=f"{peak:.2e}", d=d)


def quiz_noam(c):
    d, warmup = c.model.src_embed[0].d_model, 4000
    steps = range(1, 3 * warmup)
    peak = max(steps, key=lambda s: rate(s, d, 1.0, warmup))
    top = rate(peak, d, 1.0, warmup)
    # the wrong ones: the paper's base model (d_model 512, or 1024 if this is it), the rate without
    # d_model^-0.5, and the first step's
    other = 1024 if d == 512 else 512
    values = [top, rate(warmup, other, 1.0, warmup), warmup ** -0.5, rate(1, d, 1.0, warmup)]
    choices, right = _options(values, values[0], lambda x: f"{x:.2e}")
    return choices, right, dict(peak=f"{peak:,}", d=d, rate=f"{top:.2e}")


# ---- 15. label smoothing ---------------------------------------------------------------------------------

def smoothed(eps, vocab):
    """The target distribution LabelSmoothing builds for one target (token 2) over `vocab` tokens (0 = padding)."""
    crit = LabelSmoothing(vocab, 0, eps)
    crit(torch.zeros(1, vocab), torch.tensor([2]))
    return crit.true_dist[0]


def draw_smoothing(c, eps):
    eps = clamp(eps, 0.0, 0.4, float)
    # the Training tab's figure in the step's words; the right piece's share is the question: the colours show,
    # the numbers wait for Check
    fig, td = smoothing_figure(eps, words="learn", numbers=c.revealed)
    return _compact(fig, c.t("smoothing.fig", eps=f"{eps:g}")), dict(eps=f"{eps:g}", right=f"{float(td[0, 2]):.3f}",
                                                                      other=f"{float(td[0, 1]):.3f}")


def quiz_smoothing(c):
    vocab = c.model.generator.proj.out_features
    td = smoothed(0.1, vocab)
    right = round(float(td[2]), 3)
    choices, idx = _options([1.0, right, 0.1, round(0.9 / 2, 3)], right, lambda x: f"{x:.3f}")
    return choices, idx, dict(right=f"{right:.3f}", other=f"{float(td[3]):.1e}", vocab=vocab)


# ---- the path ------------------------------------------------------------------------------------------

STEPS = (
    Step("generator", "translate", Control("slider", 1, _positions, 1, 1), draw_generator, quiz_generator),
    Step("clones", "lab", Control("radio", choices=tuple(CLONES), default="clones"), draw_clones, quiz_clones),
    Step("layernorm", "inside/layernorm", Control("slider", 0.0, 1.0, 0.05, 0.0), draw_layernorm, quiz_layernorm),
    Step("scale", "inside/scale", Control("radio", choices=("scaled", "raw"), default="scaled"), draw_scale,
         quiz_scale),
    Step("masks", "masks", Control("radio", choices=("padding", "subsequent", "both"), default="both"),
         draw_masks, quiz_masks),
    Step("buffer", "positional", Control("slider", 0, lambda ins: len(ins.src_tokens) - 1, 1, 1), draw_buffer,
         quiz_buffer),
    Step("ffn", "inside/ffn", Control("slider", 0, lambda ins: len(ins.src_tokens) - 1, 1, 1), draw_ffn, quiz_ffn),
    Step("embeddings", "positional", Control("radio", choices=("scaled", "raw"), default="scaled"),
         draw_embeddings, quiz_embeddings),
    Step("relative", "positional", Control("slider", 1, 20, 1, 1), draw_relative, quiz_relative),
    Step("init", "inside/modules", Control("radio", choices=("xavier", "default"), default="xavier"), draw_init,
         quiz_init),
    Step("greedy", "translate", Control("slider", 1, _positions, 1, 1), draw_greedy, quiz_greedy),
    Step("teacher", "masks", Control("slider", 1, _positions, 1, 1), draw_teacher, quiz_teacher),
    Step("accum", "lab", Control("radio", choices=tuple(str(k) for k in ACCUM), default="4"), draw_accum, quiz_accum),
    Step("noam", "training", Control("slider", 100, 8000, 100, 4000), draw_noam, quiz_noam),
    Step("smoothing", "training", Control("slider", 0.0, 0.4, 0.05, 0.1), draw_smoothing, quiz_smoothing),
)
KEYS = tuple(s.key for s in STEPS)


def new_progress():
    """A session's place on the path: the step on screen (0-based), the steps done, and the steps whose answer
    was checked (key -> the choice picked and the question it answered, see `revealed`)."""
    return {"step": 0, "done": [], "revealed": {}}


def step_of(progress):
    return clamp((progress or {}).get("step", 0), 0, len(STEPS) - 1)


def progress_html(progress, lang):
    """The path as a row of numbered buttons, each opening its step: done ones ticked, the current one outlined
    (and marked as the current step for a screen reader), each named by its step's title."""
    done, k = set((progress or {}).get("done", ())), step_of(progress)
    marks = []
    for i, s in enumerate(STEPS):
        cls = "learn-mark" + (" done" if s.key in done else "") + (" current" if i == k else "")
        name = f"{text(lang, 'learn.step', k=i + 1, n=len(STEPS))} · {text(lang, f'learn.{s.key}.title')}"
        if s.key in done:
            name = f"{name} ({text(lang, 'learn.mark.done')})"
        name = html.escape(name, quote=True)  # an attribute: its quotes escaped too
        current = ' aria-current="step"' if i == k else ""
        marks.append(f'<button type="button" class="{cls}" data-step="{i + 1}" title="{name}" aria-label="{name}"'
                     f'{current}>{"✓" if s.key in done else i + 1}</button>')
    count = text(lang, "learn.progress", done=len(done), n=len(STEPS))
    nav = html.escape(text(lang, "learn.mark.nav"), quote=True)
    return (f'<nav class="learn-path" data-step="{k + 1}" aria-label="{nav}">{"".join(marks)}'
            f'<span class="learn-count">{label(count)}</span></nav>')


def control_updates(step, ins, c):
    """The slider and the choice of `step`: the one it uses shown with its label, range and first value."""
    ctl, name = step.control, c.t(f"{step.key}.action")
    if ctl.kind == "slider":
        lo, hi = _value(ctl.lo, ins), _value(ctl.hi, ins)
        hi = max(hi, lo + ctl.step)  # a one-piece sentence still gets a slider that moves
        return (gr.update(visible=True, label=name, minimum=lo, maximum=hi, step=ctl.step,
                          value=clamp(_value(ctl.default, ins), lo, hi, type(lo))), gr.update(visible=False))
    choices = [(c.t(f"{step.key}.choice.{v}"), v) for v in ctl.choices]
    return gr.update(visible=False), gr.update(visible=True, label=name, choices=choices, value=ctl.default)


def figure_and_fact(step, c, value):
    """The step's figure for `value` and its fact line; once the answer is checked, the line goes on with what
    it kept back (`learn.<key>.seen`, where the step has one)."""
    with speaking(c.lang):
        fig, values = step.draw(c, value)
    fact = c.t(f"{step.key}.fact", **values)
    if c.revealed and f"learn.{step.key}.seen" in table("en"):
        fact += ("" if fact.endswith(("。", "！", "？")) else " ") + c.t(f"{step.key}.seen", **values)  # no space after 。
    return fig, fact


def question_mark(right, values):
    """A question's identity: its right choice and its answer's fields. Another sentence that changes the answer
    makes it another question, which the learner has not answered yet."""
    return hashlib.sha1(json.dumps([right, values], sort_keys=True, default=str).encode()).hexdigest()[:12]


def revealed(progress, key, mark):
    """The index of the choice the learner checked for step `key`, if they checked this very question; else None."""
    seen = ((progress or {}).get("revealed") or {}).get(key)
    if isinstance(seen, dict) and seen.get("quiz") == mark and isinstance(seen.get("pick"), int):
        return seen["pick"]
    return None


def verdict(c, key, choices, right, values, pick):
    """Whether the pick was right, and the answer, computed."""
    word = c.t("right" if pick == right else "wrong", answer=md_literal(choices[right]))
    return f"{word}\n\n{c.t(f'{key}.a', **values)}"


def quiz_state(step, ins, progress, lang):
    """The step's question in `lang` (choices, right, fields), and the context to draw it in: revealed when the
    learner has checked it."""
    c = context(ins, lang)
    choices, right, values = step.quiz(c)
    pick = revealed(progress, step.key, question_mark(right, values))
    c.revealed = pick is not None and 0 <= pick < len(choices)
    return c, (choices, right, values), pick if c.revealed else None


def render(ins, progress, lang):
    """Everything the tab shows for the step on screen, in the order of OUTPUTS."""
    lang = read_lang(lang)
    k = step_of(progress)
    step = STEPS[k]
    head = f"### {text(lang, 'learn.step', k=k + 1, n=len(STEPS))} · {text(lang, f'learn.{step.key}.title')}"
    body = text(lang, f"learn.{step.key}.body")
    tab = text(lang, "learn.open", tab=text(lang, f"learn.tab.{step.tab}"))
    where = json.dumps({"step": k + 1, "tab": step.tab})
    if ins is None:
        wait = text(lang, "learn.wait")
        return (progress_html(progress, lang), head, body, gr.update(visible=False), gr.update(visible=False), None,
                wait, gr.update(choices=[], value=None, label=wait), "", gr.update(value=tab), where)
    c, (choices, right, values), pick = quiz_state(step, ins, progress, lang)
    slider, choice = control_updates(step, ins, c)
    fig, fact = figure_and_fact(step, c, _value(step.control.default, ins))
    # the question's fields are its answer's: a premise it states (never the answer itself)
    question = gr.update(choices=list(choices), value=None if pick is None else choices[pick],
                         label=c.t(f"{step.key}.q", **values))
    answer = "" if pick is None else verdict(c, step.key, choices, right, values, pick)
    return (progress_html(progress, lang), head, body, slider, choice, fig, fact, question, answer,
            gr.update(value=tab), where)


def act(ins, progress, value, lang):
    """The step's action: its figure redrawn for `value`, and the step marked done."""
    progress = dict(progress or new_progress())
    step = STEPS[step_of(progress)]
    if ins is None:
        return progress, progress_html(progress, lang), gr.skip(), gr.skip()
    if step.key not in progress["done"]:
        progress["done"] = [*progress["done"], step.key]
    c, _, _ = quiz_state(step, ins, progress, lang)
    fig, fact = figure_and_fact(step, c, value)
    return progress, progress_html(progress, lang), fig, fact


def check(ins, progress, picked, slider, choice, lang):
    """The answer to the step's question, computed, and whether the learner's pick was it; then the evidence the
    step kept back: its figure (at the action's value, `slider` or `choice`) and fact line, revealed. The step
    stays revealed in the session's progress (Next, Back, the language switch and a redraw keep it)."""
    if ins is None:
        return progress, "", gr.skip(), gr.skip()
    progress = dict(progress or new_progress())
    step = STEPS[step_of(progress)]
    c = context(ins, lang)
    choices, right, values = step.quiz(c)
    if picked is None or picked not in choices:
        return progress, c.t("pick"), gr.skip(), gr.skip()
    pick = choices.index(picked)
    progress["revealed"] = {**(progress.get("revealed") or {}),
                            step.key: {"pick": pick, "quiz": question_mark(right, values)}}
    c.revealed = True
    fig, fact = figure_and_fact(step, c, slider if step.control.kind == "slider" else choice)
    return progress, verdict(c, step.key, choices, right, values, pick), fig, fact


def go_to(ins, progress, k, lang):
    """Step `k` (0-based, kept within the path) on screen."""
    progress = dict(progress or new_progress(), step=clamp(k, 0, len(STEPS) - 1))
    return (progress, *render(ins, progress, lang))


def back(ins, progress, lang):
    return go_to(ins, progress, step_of(progress) - 1, lang)


def forward(ins, progress, lang):
    return go_to(ins, progress, step_of(progress) + 1, lang)


def pick(ins, progress, lang, evt: gr.EventData):
    """The step whose circle was clicked (its number, 1-based, as the browser sent it: kept within the path)."""
    try:  # EventData's attributes are the data trigger() sent; with none at all, it raises TypeError
        step = getattr(evt, "step", None)
    except TypeError:
        step = None
    k = clamp(step, 1, len(STEPS))
    return go_to(ins, progress, k - 1, lang)


# the tab's view: the step on screen, drawn for the translation when the tab is shown
VIEWS = [View("learn", ("learn",), render, outputs=11, uses=("progress", "lang"))]


def show(page, ins, progress=None, lang="en"):
    return refresh(page, ins, VIEWS, {"progress": progress, "lang": lang})


# ---- layout and events -----------------------------------------------------------------------------------

# the step on screen, kept in the address (?learn=K) as a link would open it; its button opens the full tab
OPEN_JS = "(w) => { const o = JSON.parse(w || '{}'); window.explorerLink?.open(o.tab || 'learn'); }"

# Run when the step on screen changes (Next, Back, a circle, the page's first step): the address records it, and
# once the new step is drawn (the path and heading show it, no event is pending on its heading or figure) its
# heading is brought to the top of the screen. The page above it may still move as it settles (labels switched
# to the page's language, fonts), so the heading is held there for a moment, until the reader scrolls or touches.
WHERE_JS = """(w) => {
  const o = JSON.parse(w || '{}');
  if (!o.step) return;
  window.explorerLink?.set({learn: o.step});
  const el = s => document.querySelector(s);
  const settled = id => el(`#${id} [data-testid=status-tracker]`)?.classList.contains('hide') ?? true;
  const head = el('#learn-head');
  const drawn = () => +el('#learn-path .learn-path')?.dataset.step === o.step && settled('learn-head')
    && settled('learn-figure') && head.offsetParent !== null;
  // one placing at a time: a newer step change takes over, the reader's own scroll or touch ends it
  const me = window.learnPlacing = (window.learnPlacing || 0) + 1;
  // the reader's own move: a touch, a click, a key, the wheel, or a scroll to anywhere but where this put the page
  let moved = false, placed = null;
  const stop = (e) => { if (e.type !== 'scroll' || (placed !== null && Math.abs(window.scrollY - placed) > 2)) moved = true; };
  const inputs = ['wheel', 'touchstart', 'pointerdown', 'keydown', 'scroll'];
  inputs.forEach(e => window.addEventListener(e, stop, {passive: true}));
  const done = () => inputs.forEach(e => window.removeEventListener(e, stop));
  const start = Date.now();
  let shown = 0;
  const place = () => {
    if (moved || me !== window.learnPlacing || Date.now() - start > 60000) { done(); return; }
    if (!drawn()) { setTimeout(place, 40); return; }
    const top = head.getBoundingClientRect().top;
    if (Math.abs(top - 8) > 2) window.scrollTo({top: window.scrollY + top - 8, behavior: 'instant'});
    placed = window.scrollY;
    shown = shown || Date.now();
    if (Date.now() - shown < 1200) requestAnimationFrame(place);
    else done();
  };
  place();
}"""

# the path's circles: a click on one asks for its step (its number, from the button's own data); the current
# step's own circle has nothing to draw, and brings its heading back to the top of the screen
PICK_JS = """element.addEventListener('click', (e) => {
  const b = e.target.closest && e.target.closest('button[data-step]');
  if (!b) return;
  if (!b.hasAttribute('aria-current')) { trigger('click', {step: Number(b.dataset.step)}); return; }
  const top = document.querySelector('#learn-head').getBoundingClientRect().top;
  window.scrollTo({top: window.scrollY + top - 8, behavior: 'instant'});
});"""


def _layout():
    gr.Markdown(L("ui.learn.intro"), elem_id="learn-intro")
    with gr.Row(equal_height=True, elem_id="learn-sentence"):
        src = gr.Textbox(label=L("ui.learn.sentence"), lines=1, max_lines=3, scale=4, elem_id="learn-src")
        go_btn = gr.Button(L("ui.learn.translate"), variant="secondary", scale=1, min_width=88, elem_id="learn-go")
    notice = gr.Markdown(elem_id="learn-notice")  # what is wrong with the sentence typed, if anything
    path = gr.HTML(elem_id="learn-path", js_on_load=PICK_JS)
    head = gr.Markdown(elem_id="learn-head")
    body = gr.Markdown(elem_id="learn-body")
    # predict, then see: the question and its check before the evidence (the action, the figure, the fact line),
    # which keeps the answer back until the check
    question = gr.Radio([], label=" ", elem_id="learn-question")
    check_btn = gr.Button(L("ui.learn.check"), size="sm", elem_id="learn-check")
    answer = gr.Markdown(elem_id="learn-answer")
    slider = gr.Slider(0, 1, value=0, label=" ", visible=False, elem_id="learn-slider")
    choice = gr.Radio([], label=" ", visible=False, elem_id="learn-choice")
    figure = gr.Plot(elem_id="learn-figure", show_label=False)
    fact = gr.Markdown(elem_id="learn-fact")
    with gr.Row(elem_id="learn-nav"):
        back_btn = gr.Button(L("ui.learn.back"), elem_id="learn-back", min_width=88)
        open_btn = gr.Button(" ", elem_id="learn-open", min_width=88)
        next_btn = gr.Button(L("ui.learn.next"), variant="primary", elem_id="learn-next", min_width=88)
    where = gr.Textbox(visible=False, elem_id="learn-where")
    with gr.Accordion(L("ui.learn.glossary.title"), open=False, elem_id="learn-glossary"):
        gr.Markdown(L("ui.learn.glossary"))
    outputs = [path, head, body, slider, choice, figure, fact, question, answer, open_btn, where]
    parts = SimpleNamespace(src=src, go=go_btn, slider=slider, choice=choice, question=question, answer=answer,
                            check=check_btn, back=back_btn, open=open_btn, next=next_btn, fact=fact, figure=figure,
                            path=path, where=where, notice=notice)
    return outputs, parts


def build(page, state, lang):
    """Lay out the tab and wire its events. Returns the progress state, the controls its view reads and the
    outputs of `show` (the sentence box is wired by `translates`, once the Translate tab exists)."""
    with gr.Tab(L("ui.tab.learn"), id="learn") as tab, gr.Column(elem_id="learn"):
        progress = gr.State(new_progress())  # inside the tab: a child of gr.Tabs that is not a tab upsets them
        outputs, p = _layout()
    tab.select(opener(("learn",), show), [page, state, progress, lang], outputs, api_visibility="private")
    for control in (p.slider, p.choice):
        control.input(act, [state, progress, control, lang], [progress, p.path, p.figure, p.fact],
                      trigger_mode="always_last", api_visibility="private")
    p.check.click(check, [state, progress, p.question, p.slider, p.choice, lang],
                  [progress, p.answer, p.figure, p.fact], api_visibility="private")
    for button, move in ((p.back, back), (p.next, forward), (p.path, pick)):
        button.click(move, [state, progress, lang], [progress, *outputs], api_visibility="private")
    p.where.change(None, p.where, None, js=WHERE_JS)
    p.open.click(None, p.where, None, js=OPEN_JS)
    # the step, then the notice under the sentence box, in the new language
    lang.change(render, [state, progress, lang], outputs, api_visibility="private").then(
        sentence_notice, [p.src, lang], p.notice, api_visibility="private")
    return tab_views(show, VIEWS, {"progress": progress, "lang": lang}, outputs, progress=progress, parts=p)


def translates(learn, translation, state, lang, linked=None):
    """The tab's sentence box translated as the Translate tab translates (its settings, its results), its text
    copied into that tab's box; and the box following the page's sentence, whichever tab (or link, `linked`)
    translated it, so that it always shows the sentence its steps are drawn from. Returns the event, which the
    page follows with the new translation's views."""
    p = learn.parts
    event = gr.on([p.go.click, p.src.submit], translate_fn, [p.src, *translation.form[1:], state],
                  [*translation.results, state], api_visibility="private", concurrency_limit=1,
                  concurrency_id="model", show_progress_on=[p.figure])
    event.then(lambda s: s, p.src, translation.form[0], api_visibility="private")
    event.then(sentence_notice, [p.src, lang], p.notice, api_visibility="private")
    for other in (translation.translated, linked):
        if other is not None:
            other.then(follow, [state, lang], [p.src, p.notice], api_visibility="private")
    return event


def sentence_notice(typed, lang="en"):
    """Under the tab's sentence box: what is wrong with the German typed (nothing typed, too long), or that it
    does not look like German (it is translated all the same), in `lang`; else nothing. After a problem the step
    on screen stays with the last good translation."""
    return input_problem(typed, lang) or german_hint(typed, lang) or ""


def follow(ins, lang="en"):
    """The tab's box and its notice for the page's sentence (the Inspection's), once another tab translated it."""
    if ins is None:
        return gr.skip(), gr.skip()
    return ins.source, german_hint(ins.source, lang) or ""
