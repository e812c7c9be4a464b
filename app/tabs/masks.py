"""The Masks tab: a small batch of sentence pairs, its padded ids, its masks, and a mask at work.

"We also modify the self-attention sub-layer in the decoder stack to prevent positions from attending to
subsequent positions": the padding mask and the subsequent mask, combined with `&`.
"""
import math

import gradio as gr

from core.data import Batch, nonblank_lines
from core.instrument import attention_name, run_with_cache
from core.model import subsequent_mask

from ..cache import per_language
from ..common import clamp, code_panel, empty_figure, fitted_plot, kind_name, md_literal
from ..figures.masks import (
    batching_figure,
    ids_table_html,
    make_batch,
    mask_panels,
    scores_figure,
    shift_table_html,
)
from ..header import follow
from ..i18n import DEFAULT, L, choices, speaking, texts
from ..shared import batching_stats, chosen
from ..views import Tab, View

DEFAULT_DE = "Ein Hund läuft.\nZwei Kinder spielen im Garten mit einem Ball.\nEine Frau liest."
DEFAULT_EN = "A dog runs.\nTwo children play with a ball in the garden.\nA woman reads."


_t = texts("masks")  # the tab's words drawn at run time (masks.<key>) in the event's language


def parse_pairs(german, english, min_pairs=2, max_pairs=4, max_chars=300):
    """Sentence pairs from two texts, one sentence a line; raises ValueError with a readable message (in the
    event's language)."""
    german, english = str(german or ""), str(english or "")
    limits = dict(lo=min_pairs, hi=max_pairs, chars=max_chars)
    if max(len(german), len(english)) > max_pairs * (max_chars + 1):
        raise ValueError(_t("error.long", n=f"{max(len(german), len(english)):,}", **limits))
    de, en = nonblank_lines(german), nonblank_lines(english)
    if len(de) != len(en):
        raise ValueError(_t("error.lines", de=len(de), en=len(en)))
    if not min_pairs <= len(de) <= max_pairs:
        raise ValueError(_t("error.count", n=len(de), **limits))
    if any(len(s) > max_chars for s in de + en):
        raise ValueError(_t("error.chars", chars=max_chars))
    return list(zip(de, en))


def scores_at_work(model, batch, i, kind, layer, head):
    """Raw scores QK^T/sqrt(d_k), the scores after masking, and the softmax weights of one head, for
    sentence i of the batch, run through the trained model (teacher-forced)."""
    _, cache = run_with_cache(model, batch.src, batch.tgt, batch.src_mask, batch.tgt_mask, output=False,
                              names=[attention_name(kind, layer, "q"), attention_name(kind, layer, "k")])
    q, k = (cache[attention_name(kind, layer, w)][i, head] for w in ("q", "k"))  # (Tq | Tk, d_k)
    raw = q @ k.T / math.sqrt(q.size(-1))
    mask = batch.src_mask if kind == "encoder" else batch.tgt_mask
    m = mask[i].expand(raw.shape)
    masked = raw.masked_fill(m == 0, -1e9)
    return raw, masked, masked.softmax(-1), m


# ---- callback --------------------------------------------------------------------------------------

OUTPUTS = ("summary", "ids", "panels", "shift", "scores", "batching")


@per_language(maxsize=32)
def masks_view(de, en, sentence, kind, layer, head, model=None):
    """Tokenization, padded ids, the masks of one sentence, teacher forcing, and a mask at work, by output name,
    by the model the header chose (`model`)."""
    tr = chosen(model)
    try:
        pairs = parse_pairs(de, en)
    except ValueError as e:
        msg = str(e)
        return dict(summary=f"**{md_literal(msg)}**", ids="", panels=empty_figure(msg), shift="",
                    scores=empty_figure(msg), batching=empty_figure(msg))
    batch, examples = make_batch(tr.tokenizer, pairs, model=tr)
    i = clamp(sentence, 0, len(pairs) - 1)
    piece = tr.tokenizer.id_to_piece
    src_p = [piece(t) for t in batch.src[i].tolist()]
    tgt_p = [piece(t) for t in batch.tgt[i].tolist()]
    ids = (ids_table_html(tr.tokenizer, batch.src, _t("ids.source"), tr.pad_id) +
           ids_table_html(tr.tokenizer, batch.tgt, _t("ids.target"), tr.pad_id))
    kind = kind if kind in ("encoder", "decoder") else "decoder"
    layer = clamp(layer, 0, tr.config["N"] - 1)
    head = clamp(head, 0, tr.config["h"] - 1)
    raw, masked, weights, m = scores_at_work(tr.model, batch, i, kind, layer, head)
    q = src_p if kind == "encoder" else tgt_p
    title = _t("scores.title", kind=kind_name(kind), layer=layer, head=head, i=i)
    n_pad = int((batch.src == tr.pad_id).sum() + (batch.tgt == tr.pad_id).sum())
    summary = _t("summary", n=len(pairs), src=tuple(batch.src.shape), tgt=tuple(batch.tgt.shape), pads=n_pad, i=i)
    return dict(summary=summary, ids=ids, panels=mask_panels(batch, i, src_p, tgt_p),
                shift=shift_table_html(tr.tokenizer, batch, i, tr.pad_id), scores=scores_figure(raw, masked, weights, m, q, q, title),
                batching=batching_figure(batching_stats(tr.directory), examples))


# ---- layout and events -----------------------------------------------------------------------------

# the tab's one view (every output together), drawn from its controls alone
WHERE = ("masks",)
VIEWS = [View("masks", WHERE, masks_view, outputs=OUTPUTS, uses=("de", "en", "sentence", "kind", "layer", "head", "model"),
              reads_translation=False)]


def sentence_range(de, en, i):
    """The sentence slider's range for the batch typed: one position per pair (kept within it); nothing while the
    text is not a batch (the view says why)."""
    try:
        with speaking(DEFAULT):  # the event has no language, and a refusal's words are not shown here
            n = len(parse_pairs(de, en))
    except ValueError:
        return gr.skip()
    return gr.update(maximum=n - 1, value=clamp(i, 0, n - 1))


def _layout(cfg):
    """The batch's text boxes and controls, then the views; returns (outputs, controls by name)."""
    gr.Markdown(L("ui.masks.intro"))
    with gr.Row():
        de = gr.Textbox(label=L("ui.masks.german"), lines=4, value=DEFAULT_DE, elem_id="m-de")
        en = gr.Textbox(label=L("ui.masks.english"), lines=4, value=DEFAULT_EN, elem_id="m-en")
    with gr.Row():
        sentence = gr.Slider(0, len(parse_pairs(DEFAULT_DE, DEFAULT_EN)) - 1, value=1, step=1,
                             label=L("ui.masks.sentence"), elem_id="m-sent")
        kind = gr.Radio(choices("ui.masks.kind", ("decoder", "encoder")), value="decoder",
                        label=L("ui.masks.kind"))
        layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"))
        head = gr.Dropdown(list(range(cfg["h"])), value=0, label=L("ui.head"))
    summary = gr.Markdown(elem_id="m-summary")
    ids = gr.HTML()
    panels = fitted_plot(elem_id="m-masks")
    shift = gr.HTML()
    gr.Markdown(L("ui.masks.at-work"))
    scores = fitted_plot(elem_id="m-scores")
    gr.Markdown(L("ui.masks.batching"))
    batching = fitted_plot(elem_id="m-batching")
    code_panel(None, subsequent_mask, Batch)
    gr.on([de.change, en.change], sentence_range, [de, en, sentence], sentence, api_visibility="private")
    outputs = dict(summary=summary, ids=ids, panels=panels, shift=shift, scores=scores, batching=batching)
    return outputs, dict(de=de, en=en, sentence=sentence, kind=kind, layer=layer, head=head)


def build(cfg, page, lang, model=None):
    """Lay out the tab and wire its controls; the view is first drawn when the tab is opened, by the model the
    header's menu (`model`) chose, whose layers and heads the layer and head menus follow."""
    with gr.Tab(L("ui.tab.masks"), id="masks") as tab:
        outputs, controls = _layout(cfg)
        controls["model"] = gr.State(None) if model is None else model
    follow(model, [controls["layer"], controls["head"]], lambda c: [list(range(c["N"])), list(range(c["h"]))])
    # the batch runs the model: these events queue with the translations (app/ui.py)
    return Tab(WHERE, VIEWS, controls, outputs, page, lang).wire(tab, concurrency_limit=1, concurrency_id="model")
