"""One output token's cross-attention beside two attributions of its probability (core.analysis.attribution):
over the source pieces, over the English before it, and a reading of the three in words. Pure builders: the
Inspection, the attributions and the position in, a figure (or Markdown) out, its words in the event's language
(app.i18n)."""
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..common import label, md_literal, wrap_title
from ..figures.attention import positions, rounded
from ..i18n import texts

_t = texts("why")
MEASURES = ("attention", "gradient", "occlusion")  # the three readings of a token, as the figure shows them (why.<m>)


def _bars(fig, row, col, values, names, color, hover):
    v = np.round(np.asarray(values, dtype=np.float32), 4)
    colors = np.where(v >= 0, color, "#c44e52")
    fig.add_trace(go.Bar(x=names, y=v, marker_color=colors, hovertemplate=hover, showlegend=False), row=row, col=col)


def _hover(key, decimals):
    """A bar's hover: its piece, then the name of what it measures (why.<key>) and its value."""
    return f"%{{x}}<br>{_t(key)} %{{y:.{decimals}f}}<extra></extra>"


def source_figure(ins, att, position):
    """Over the source pieces: every head's cross-attention for this output position (layers × heads rows),
    their average, then gradient x input and occlusion, on one shared axis."""
    src = positions(ins.src_tokens)
    maps = ins.cross[:, :, position]                        # (L, H, S)
    L, H, S = maps.shape
    heads = rounded(maps.reshape(L * H, S))
    titles = tuple(wrap_title(t, 36) for t in (_t("source.heads"), _t("source.average"),
                                               _t("gradient"), _t("source.occlusion", unk=label("<unk>"))))
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.04, row_heights=[0.4, 0.2, 0.2, 0.2],
                        subplot_titles=titles)
    fig.add_trace(go.Heatmap(z=heads, x=src, y=[f"{lay}.{h}" for lay in range(L) for h in range(H)],
                             colorscale="Blues", zmin=0, zmax=1, showscale=False,
                             hovertemplate=f"{_t('hover.layer-head')} %{{y}} → %{{x}}<br>"
                                           f"{_t('hover.weight')} %{{z:.3f}}<extra></extra>"), row=1, col=1)
    _bars(fig, 2, 1, maps.mean(dim=(0, 1)), src, "#4a7dc9", _hover("hover.mean-weight", 3))
    _bars(fig, 3, 1, att.grad_src, src, "#55a868", _hover("gradient", 4))
    _bars(fig, 4, 1, att.occl_src, src, "#8172b2", _hover("hover.drop", 4))
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    title = _t("source.title", token=label(ins.out_tokens[position]), n=position + 1, p=f"{att.probability:.3f}")
    fig.update_layout(height=620, margin=dict(l=50, r=10, t=60, b=60), title=dict(text=title, font=dict(size=14)))
    return fig


def target_figure(ins, att, position):
    """Over the English pieces before the token: decoder self-attention averaged over heads, gradient x input,
    occlusion (<s> is never replaced)."""
    tgt = positions(ins.tgt_tokens[:position + 1])
    self_avg = ins.decoder[:, :, position, :position + 1].mean(dim=(0, 1))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06,
                        subplot_titles=(_t("target.average"), _t("gradient"), _t("occlusion")))
    _bars(fig, 1, 1, self_avg, tgt, "#4a7dc9", _hover("hover.mean-weight", 3))
    _bars(fig, 1, 2, att.grad_tgt, tgt, "#55a868", _hover("gradient", 4))
    _bars(fig, 1, 3, att.occl_tgt, tgt, "#8172b2", _hover("hover.drop", 4))
    fig.update_layout(height=300, margin=dict(l=40, r=10, t=50, b=80),
                      title=dict(text=_t("target.title"), font=dict(size=14)))
    return fig


def reading(ins, att, position):
    """One line per measure: the source piece it ranks first, and whether the three agree, from the numbers."""
    src = ins.src_tokens
    avg = ins.cross[:, :, position].mean(dim=(0, 1))
    top = {m: int(np.argmax(np.asarray(v))) for m, v in zip(MEASURES, (avg, att.grad_src, att.occl_src))}
    lines = [f"- **{_t(m)}** " + _t("ranks", token=f"`{md_literal(src[j])}`", position=j)
             for m, j in top.items()]
    verdict = ("same" if len(set(top.values())) == 1 else
               "disagree" if top["attention"] not in (top["gradient"], top["occlusion"]) else "one")
    return "\n".join(lines) + f"\n\n{_t('verdict.' + verdict)}"
