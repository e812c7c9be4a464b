"""The Masks tab's figures: a small batch of sentence pairs as the trainer builds it, its padded ids, its masks,
teacher forcing, a mask at work and the padding of the training set's batches. Pure builders, their words in the
event's language (app.i18n)."""
import html

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from core.data import PAD, Batch, encode_pairs, pad_to, padding_stats, subsequent_mask

from ..common import MASK_SCALE, phone_width, token_axis, wrap_title
from ..i18n import texts

_t = texts("masks")


def make_batch(tokenizer, pairs, max_len=64, model=None):
    """The Batch the trainer would build for these pairs, and their id lists. `model`: the Translator whose ids
    to use (its <pad>, source head, </s>, decoder start and target pieces: a converted model's differ from
    core.data's), else the shipped model's. The batch keeps its padding id as `pad`."""
    if model is None:
        examples, pad = encode_pairs(tokenizer, pairs, max_len), PAD
    else:
        head, end, pad = [] if model.bos_id is None else [model.bos_id], [model.eos_id], model.pad_id
        examples = [(head + tokenizer.encode(de)[:max_len - 2] + end,
                     [model.start_id] + model.encode_target(en)[:max_len - 2] + end) for de, en in pairs]
    src = pad_to([e[0] for e in examples], pad)
    tgt = pad_to([e[1] for e in examples], pad)
    batch = Batch(src, tgt, pad)
    # the decoder positions the target padding mask keeps: a Marian model's decoder starts from <pad> itself
    # (transformers masks no decoder position but the future), which is a real position, not padding
    batch.pad, batch.tgt_keep = pad, batch.tgt != pad
    if model is not None and model.start_id == pad:
        batch.tgt_keep[:, 0] = True
        batch.tgt_mask = batch.tgt_keep.unsqueeze(-2) & subsequent_mask(batch.tgt.size(-1)).bool()
    return batch, examples


def _cell(piece, tid, pad=PAD):
    cls = "pad" if tid == pad else ""
    return f'<td class="{cls}" title="id {tid}">{html.escape(piece)}<br><small>{tid}</small></td>'


def ids_table_html(tokenizer, ids, title, pad=PAD):
    """A padded id matrix as an HTML table: each cell the piece and its id, padding greyed (escaped)."""
    rows = []
    for i, row in enumerate(ids.tolist()):
        cells = "".join(_cell(tokenizer.id_to_piece(t), t, pad) for t in row)
        rows.append(f"<tr><th>{i}</th>{cells}</tr>")
    return (f'<div class="mtable"><b>{html.escape(title)}</b> ({ids.size(0)} × {ids.size(1)})'
            f'<table>{"".join(rows)}</table></div>')


def shift_table_html(tokenizer, batch, i, pad=PAD):
    """Teacher forcing for sentence i: the decoder input tgt[:, :-1] above the target tgt[:, 1:]."""
    inp = batch.tgt[i].tolist()
    out = batch.tgt_y[i].tolist()
    head = "".join(f"<th>{t}</th>" for t in range(len(inp)))
    row_in = "".join(_cell(tokenizer.id_to_piece(t), t, pad) for t in inp)
    row_out = "".join(_cell(tokenizer.id_to_piece(t), t, pad) for t in out)
    words = {k: html.escape(_t(f"shift.{k}", i=i)) for k in ("title", "note", "input", "target")}
    return (f'<div class="mtable"><b>{words["title"]}</b>{words["note"]}<table><tr><th>t</th>{head}</tr>'
            f'<tr><th>{words["input"]} tgt[:, :-1]</th>{row_in}</tr>'
            f'<tr><th>{words["target"]} tgt[:, 1:]</th>{row_out}</tr></table></div>')


def mask_panels(batch, i, src_pieces, tgt_pieces):
    """The four masks of sentence i: source padding, subsequent, target padding, and their & ."""
    T = batch.tgt.size(1)
    keep = batch.tgt_keep[i] if hasattr(batch, "tgt_keep") else batch.tgt[i] != PAD
    tgt_pad = keep.unsqueeze(0).expand(T, T)
    sub = torch.tril(torch.ones(T, T, dtype=torch.bool))
    panels = [(_t("panel.source"), batch.src_mask[i].float(), [_t("panel.query")], src_pieces),
              (_t("panel.subsequent"), sub.float(), tgt_pieces, tgt_pieces),
              (_t("panel.target"), tgt_pad.float(), tgt_pieces, tgt_pieces),
              (_t("panel.both"), batch.tgt_mask[i].float(), tgt_pieces, tgt_pieces)]
    hover = _t("panel.hover", row="%{y}", column="%{x}", value="%{z}") + "<extra></extra>"
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
                      title=wrap_title(_t("panel.title", i=i)))
    return phone_width(fig, 2 * max(T, len(src_pieces)), room=220)


def scores_figure(raw, masked, weights, mask, q_pieces, k_pieces, title):
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06, subplot_titles=tuple(
        wrap_title(_t(f"scores.{k}"), 20) for k in ("raw", "masked", "softmax")))
    masked_cell = _t("scores.cell")
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
    return phone_width(fig, 3 * len(k_pieces), room=200)


def batching_figure(stats, user_examples):
    """Padding fraction of fixed sentence-count batches vs token-based batches on the training set (shipped
    figures), beside the user's own batch as given and sorted by length."""
    names, pads, tokens, sds = [], [], [], []
    if stats:
        for key, label in (("sentence_count", _t("batching.sentences", n=stats["batch_size"])),
                           ("token_based", _t("batching.tokens", n=stats["max_tokens"]))):
            names.append(f"{_t('batching.training')}<br>{label}")
            pads.append(stats[key]["padding_fraction"])
            tokens.append(stats[key]["tokens_per_batch_mean"])
            sds.append(stats[key]["tokens_per_batch_std"])
    mine = padding_stats(user_examples, [list(range(len(user_examples)))])
    names.append(_t("batching.yours"))
    pads.append(mine["padding_fraction"])
    tokens.append(mine["tokens_per_batch_mean"])
    sds.append(0)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(wrap_title(_t("batching.padding"), 28),
                                                        wrap_title(_t("batching.real"), 28)))
    fig.add_trace(go.Bar(x=names, y=pads, text=[f"{p:.1%}" for p in pads], textposition="auto",
                         marker_color="#4a7dc9", showlegend=False), row=1, col=1)
    fig.add_trace(go.Bar(x=names, y=tokens, error_y=dict(type="data", array=sds), marker_color="#7bb36b",
                         text=[f"{t:.0f}" for t in tokens], textposition="auto", showlegend=False), row=1, col=2)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", row=1, col=1)
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig
