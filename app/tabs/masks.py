"""The Masks tab: a small batch of sentence pairs, its padded ids, its masks, and a mask at work.

"We also modify the self-attention sub-layer in the decoder stack to prevent positions from attending to
subsequent positions": the padding mask and the subsequent mask, combined with `&`.
"""
import html
import json
import math

import gradio as gr
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.data import PAD, Batch, encode_pairs, nonblank_lines, pad_to, padding_stats
from core.model import subsequent_mask

from ..common import MASK_SCALE, clamp, code_panel, empty_figure, kind_name, md_literal, token_axis, wrap_title
from ..i18n import L, choices, texts
from ..shared import MODEL_LOCK, get_translator, model_dir
from ..views import View, control_changes, opener, refresh, tab_views

DEFAULT_DE = "Ein Hund läuft.\nZwei Kinder spielen im Garten mit einem Ball.\nEine Frau liest."
DEFAULT_EN = "A dog runs.\nTwo children play with a ball in the garden.\nA woman reads."


_t = texts("masks")  # the tab's words drawn at run time (masks.<key>) in a language


def parse_pairs(german, english, min_pairs=2, max_pairs=4, max_chars=300, lang="en"):
    """Sentence pairs from two texts, one sentence a line; raises ValueError with a readable message (in `lang`)."""
    german, english = str(german or ""), str(english or "")
    limits = dict(lo=min_pairs, hi=max_pairs, chars=max_chars)
    if max(len(german), len(english)) > max_pairs * (max_chars + 1):
        raise ValueError(_t(lang, "error.long", n=f"{max(len(german), len(english)):,}", **limits))
    de, en = nonblank_lines(german), nonblank_lines(english)
    if len(de) != len(en):
        raise ValueError(_t(lang, "error.lines", de=len(de), en=len(en)))
    if not min_pairs <= len(de) <= max_pairs:
        raise ValueError(_t(lang, "error.count", n=len(de), **limits))
    if any(len(s) > max_chars for s in de + en):
        raise ValueError(_t(lang, "error.chars", chars=max_chars))
    return list(zip(de, en))


def make_batch(tokenizer, pairs, max_len=64):
    """The Batch the trainer would build for these pairs, and their id lists."""
    examples = encode_pairs(tokenizer, pairs, max_len)
    src = pad_to([e[0] for e in examples])
    tgt = pad_to([e[1] for e in examples])
    return Batch(src, tgt, PAD), examples


def _cell(piece, tid):
    cls = "pad" if tid == PAD else ""
    return f'<td class="{cls}" title="id {tid}">{html.escape(piece)}<br><small>{tid}</small></td>'


def ids_table_html(tokenizer, ids, title):
    """A padded id matrix as an HTML table: each cell the piece and its id, padding greyed (escaped)."""
    rows = []
    for i, row in enumerate(ids.tolist()):
        cells = "".join(_cell(tokenizer.id_to_piece(t), t) for t in row)
        rows.append(f"<tr><th>{i}</th>{cells}</tr>")
    return (f'<div class="mtable"><b>{html.escape(title)}</b> ({ids.size(0)} × {ids.size(1)})'
            f'<table>{"".join(rows)}</table></div>')


def shift_table_html(tokenizer, batch, i, lang="en"):
    """Teacher forcing for sentence i: the decoder input tgt[:, :-1] above the target tgt[:, 1:]."""
    inp = batch.tgt[i].tolist()
    out = batch.tgt_y[i].tolist()
    head = "".join(f"<th>{t}</th>" for t in range(len(inp)))
    row_in = "".join(_cell(tokenizer.id_to_piece(t), t) for t in inp)
    row_out = "".join(_cell(tokenizer.id_to_piece(t), t) for t in out)
    words = {k: html.escape(_t(lang, f"shift.{k}", i=i)) for k in ("title", "note", "input", "target")}
    return (f'<div class="mtable"><b>{words["title"]}</b>{words["note"]}<table><tr><th>t</th>{head}</tr>'
            f'<tr><th>{words["input"]} tgt[:, :-1]</th>{row_in}</tr>'
            f'<tr><th>{words["target"]} tgt[:, 1:]</th>{row_out}</tr></table></div>')


def mask_panels(batch, i, src_pieces, tgt_pieces, lang="en"):
    """The four masks of sentence i: source padding, subsequent, target padding, and their & ."""
    T = batch.tgt.size(1)
    tgt_pad = (batch.tgt[i] != PAD).unsqueeze(0).expand(T, T)
    sub = torch.tril(torch.ones(T, T, dtype=torch.bool))
    panels = [(_t(lang, "panel.source"), batch.src_mask[i].float(), [_t(lang, "panel.query")], src_pieces),
              (_t(lang, "panel.subsequent"), sub.float(), tgt_pieces, tgt_pieces),
              (_t(lang, "panel.target"), tgt_pad.float(), tgt_pieces, tgt_pieces),
              (_t(lang, "panel.both"), batch.tgt_mask[i].float(), tgt_pieces, tgt_pieces)]
    hover = _t(lang, "panel.hover", row="%{y}", column="%{x}", value="%{z}") + "<extra></extra>"
    # two by two: four panels side by side give each token under 12 px of width on a phone's figure
    fig = make_subplots(rows=2, cols=2, subplot_titles=[wrap_title(p[0], 36) for p in panels],
                        horizontal_spacing=0.16, vertical_spacing=130 / (2 * 22 * T + 130))  # 130 px: ticks, title
    for k, (_, m, rows, cols) in enumerate(panels):
        r, c = divmod(k, 2)
        fig.add_trace(go.Heatmap(z=m.numpy(), zmin=0, zmax=1, colorscale=MASK_SCALE, showscale=False, xgap=1, ygap=1,
                                 hovertemplate=hover), row=r + 1, col=c + 1)
        fig.update_xaxes(token_axis(cols, tickangle=-90, automargin=False), row=r + 1, col=c + 1)
        fig.update_yaxes(token_axis(rows, autorange="reversed", automargin=False), row=r + 1, col=c + 1)
    fig.update_layout(height=2 * 22 * T + 130 + 160, margin=dict(l=90, r=10, t=70, b=90),
                      title=wrap_title(_t(lang, "panel.title", i=i)))
    return fig


def scores_at_work(model, batch, i, kind, layer, head):
    """Raw scores QK^T/sqrt(d_k), the scores after masking, and the softmax weights of one head, for
    sentence i of the batch, run through the trained model (teacher-forced)."""
    mods = model.encoder.layers if kind == "encoder" else model.decoder.layers
    mha = mods[layer].self_attn
    captured = {}

    def grab(module, args):
        captured.setdefault("args", args)  # (query, key, value, mask)

    handle = mha.register_forward_pre_hook(grab)
    try:
        with torch.no_grad():
            model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
    finally:
        handle.remove()
    query, key, _, mask = captured["args"]
    with torch.no_grad():
        q = mha._split(query[i:i + 1], mha.linears[0])[0, head]  # (Tq, d_k)
        k = mha._split(key[i:i + 1], mha.linears[1])[0, head]  # (Tk, d_k)
        raw = q @ k.T / math.sqrt(mha.d_k)
    m = mask[i].expand(raw.shape)
    masked = raw.masked_fill(m == 0, -1e9)
    return raw, masked, masked.softmax(-1), m


def scores_figure(raw, masked, weights, mask, q_pieces, k_pieces, title, lang="en"):
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06, subplot_titles=tuple(
        wrap_title(_t(lang, f"scores.{k}"), 20) for k in ("raw", "masked", "softmax")))
    masked_cell = _t(lang, "scores.cell")
    shown = masked.clone().masked_fill(mask == 0, float("nan"))  # -1e9 drawn as empty cells
    for c, (z, scale, label) in enumerate(((raw, "RdBu_r", "score"), (shown, "RdBu_r", "score"),
                                           (weights, "Blues", "weight")), 1):
        text = [[(masked_cell if (c == 2 and not mask[r, col]) else f"{z[r, col].item():.3f}")
                 for col in range(z.size(1))] for r in range(z.size(0))]
        fig.add_trace(go.Heatmap(z=z.numpy(), colorscale=scale, showscale=False, text=text,
                                 zmid=0 if c < 3 else None, zmin=0 if c == 3 else None, zmax=1 if c == 3 else None,
                                 hovertemplate="%{y} → %{x}: %{text}<extra></extra>", xgap=1, ygap=1), row=1, col=c)
        fig.update_xaxes(token_axis(k_pieces, tickangle=-90, automargin=False), row=1, col=c)
        fig.update_yaxes(token_axis(q_pieces, autorange="reversed", showticklabels=c == 1, automargin=False), row=1, col=c)
    # the title hangs from the top, above the panels' titles (two lines each where they wrap)
    fig.update_layout(title=dict(text=wrap_title(title), yref="container", y=1, yanchor="top", pad=dict(t=20)),
                      height=max(390, 200 + 22 * len(q_pieces)), margin=dict(l=90, r=10, t=130, b=90))
    return fig


def load_batching_stats():
    """Padding statistics of the training set, written by the training run beside the shipped model."""
    path = model_dir() / "batching.json"
    return json.loads(path.read_text()) if path.exists() else None


def batching_figure(stats, user_examples, lang="en"):
    """Padding fraction of fixed sentence-count batches vs token-based batches on the training set (shipped
    figures), beside the user's own batch as given and sorted by length."""
    names, pads, tokens, sds = [], [], [], []
    if stats:
        for key, label in (("sentence_count", _t(lang, "batching.sentences", n=stats["batch_size"])),
                           ("token_based", _t(lang, "batching.tokens", n=stats["max_tokens"]))):
            names.append(f"{_t(lang, 'batching.training')}<br>{label}")
            pads.append(stats[key]["padding_fraction"])
            tokens.append(stats[key]["tokens_per_batch_mean"])
            sds.append(stats[key]["tokens_per_batch_std"])
    mine = padding_stats(user_examples, [list(range(len(user_examples)))])
    names.append(_t(lang, "batching.yours"))
    pads.append(mine["padding_fraction"])
    tokens.append(mine["tokens_per_batch_mean"])
    sds.append(0)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(wrap_title(_t(lang, "batching.padding"), 28),
                                                        wrap_title(_t(lang, "batching.real"), 28)))
    fig.add_trace(go.Bar(x=names, y=pads, text=[f"{p:.1%}" for p in pads], textposition="auto",
                         marker_color="#4a7dc9", showlegend=False), row=1, col=1)
    fig.add_trace(go.Bar(x=names, y=tokens, error_y=dict(type="data", array=sds), marker_color="#7bb36b",
                         text=[f"{t:.0f}" for t in tokens], textposition="auto", showlegend=False), row=1, col=2)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", row=1, col=1)
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig


# ---- callback --------------------------------------------------------------------------------------

def masks_view(german, english, sentence, kind, layer, head, lang="en"):
    """Tokenization, padded ids, the masks of one sentence, teacher forcing, and a mask at work (words in `lang`)."""
    tr = get_translator()
    try:
        pairs = parse_pairs(german, english, lang=lang)
    except ValueError as e:
        msg = str(e)
        return f"**{md_literal(msg)}**", "", empty_figure(msg), "", empty_figure(msg), empty_figure(msg)
    batch, examples = make_batch(tr.tokenizer, pairs)
    i = clamp(sentence, 0, len(pairs) - 1)
    piece = tr.tokenizer.id_to_piece
    src_p = [piece(t) for t in batch.src[i].tolist()]
    tgt_p = [piece(t) for t in batch.tgt[i].tolist()]
    ids = (ids_table_html(tr.tokenizer, batch.src, _t(lang, "ids.source")) +
           ids_table_html(tr.tokenizer, batch.tgt, _t(lang, "ids.target")))
    kind = kind if kind in ("encoder", "decoder") else "decoder"
    layer = clamp(layer, 0, tr.config["N"] - 1)
    head = clamp(head, 0, tr.config["h"] - 1)
    with MODEL_LOCK:
        raw, masked, weights, m = scores_at_work(tr.model, batch, i, kind, layer, head)
    q = src_p if kind == "encoder" else tgt_p
    title = _t(lang, "scores.title", kind=kind_name(kind, lang), layer=layer, head=head, i=i)
    scores = scores_figure(raw, masked, weights, m, q, q, title, lang)
    n_pad = int((batch.src == 0).sum() + (batch.tgt == 0).sum())
    summary = _t(lang, "summary", n=len(pairs), src=tuple(batch.src.shape), tgt=tuple(batch.tgt.shape), pads=n_pad,
                 i=i)
    return (summary, ids, mask_panels(batch, i, src_p, tgt_p, lang), shift_table_html(tr.tokenizer, batch, i, lang),
            scores, batching_figure(load_batching_stats(), examples, lang))


# ---- layout and events -----------------------------------------------------------------------------

# the tab's one view (every output together), drawn from its controls alone
VIEWS = [View("masks", ("masks",), masks_view, outputs=6,
              uses=("de", "en", "sentence", "kind", "layer", "head", "lang"), reads_translation=False)]


def show(page, de, en, sentence, kind, layer, head, lang="en"):
    """The tab's view for the page as it is (app/views.py): drawn when shown and its controls changed."""
    return refresh(page, None, VIEWS, dict(de=de, en=en, sentence=sentence, kind=kind, layer=layer, head=head,
                                           lang=lang))


def _layout(cfg):
    """The batch's text boxes and controls, then the views; returns (outputs, controls by name)."""
    gr.Markdown(L("ui.masks.intro"))
    with gr.Row():
        de = gr.Textbox(label=L("ui.masks.german"), lines=4, value=DEFAULT_DE, elem_id="m-de")
        en = gr.Textbox(label=L("ui.masks.english"), lines=4, value=DEFAULT_EN, elem_id="m-en")
    with gr.Row():
        sentence = gr.Slider(0, 3, value=1, step=1, label=L("ui.masks.sentence"), elem_id="m-sent")
        kind = gr.Radio(choices("ui.masks.kind", ("decoder", "encoder")), value="decoder",
                        label=L("ui.masks.kind"))
        layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"))
        head = gr.Dropdown(list(range(cfg["h"])), value=0, label=L("ui.head"))
    summary = gr.Markdown(elem_id="m-summary")
    ids = gr.HTML()
    panels = gr.Plot(elem_id="m-masks")
    shift = gr.HTML()
    gr.Markdown(L("ui.masks.at-work"))
    scores = gr.Plot(elem_id="m-scores")
    gr.Markdown(L("ui.masks.batching"))
    batching = gr.Plot(elem_id="m-batching")
    code_panel(None, subsequent_mask, Batch)
    return [summary, ids, panels, shift, scores, batching], dict(de=de, en=en, sentence=sentence, kind=kind,
                                                                 layer=layer, head=head)


def build(cfg, page, lang):
    """Lay out the tab and wire its controls; the view is first drawn when the tab is opened."""
    with gr.Tab(L("ui.tab.masks"), id="masks") as tab:
        outputs, controls = _layout(cfg)
    controls = dict(controls, lang=lang)  # the page's language: app/ui.py redraws the tab when it changes
    inputs = [page, *controls.values()]
    # the batch runs the model: these events queue with the translations (app/ui.py)
    tab.select(opener(("masks",), show), inputs, outputs, api_visibility="private",
               concurrency_limit=1, concurrency_id="model")
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private",
          concurrency_limit=1, concurrency_id="model")
    return tab_views(show, VIEWS, controls, outputs)
