"""One output token's cross-attention beside two attributions of its probability (core.analysis.attribution):
over the source pieces, over the English before it, and a reading of the three in words. Pure builders: the
Inspection, the attributions and the position in, a figure (or Markdown) out, its words in the event's language
(app.i18n)."""
import numpy as np

from ..common import label, md_literal, panel_grid, phone_width, wrap_title
from ..figures.attention import positions, rounded
from ..i18n import texts

_t = texts("why")
MEASURES = ("attention", "gradient", "occlusion")  # the three readings of a token, as the figure shows them (why.<m>)


def _bars(values, names, color, hover):
    """A bar trace, as a dict (app.common.panel_grid puts it on its panel's axes; the figure validates once)."""
    v = np.round(np.asarray(values, dtype=np.float32), 4)
    colors = np.where(v >= 0, color, "#c44e52")
    return dict(type="bar", x=names, y=v, marker=dict(color=colors), hovertemplate=hover, showlegend=False)


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
    titles = (_t("source.heads"), _t("source.average"), _t("gradient"), _t("source.occlusion", unk=label("<unk>")))
    heat = dict(type="heatmap", z=heads, x=src, y=[f"{lay}.{h}" for lay in range(L) for h in range(H)],
                colorscale="Blues", zmin=0, zmax=1, showscale=False,
                hovertemplate=f"{_t('hover.layer-head')} %{{y}} → %{{x}}<br>"
                              f"{_t('hover.weight')} %{{z:.3f}}<extra></extra>")
    traces = [heat, _bars(maps.mean(dim=(0, 1)), src, "#4a7dc9", _hover("hover.mean-weight", 3)),
              _bars(att.grad_src, src, "#55a868", _hover("gradient", 4)),
              _bars(att.occl_src, src, "#8172b2", _hover("hover.drop", 4))]
    # one x axis for the four (the lowest labels it); "layer.head" rows are names, never numbers
    upper = dict(matches="x", showticklabels=False)
    axes = [(dict(showticklabels=False), dict(autorange="reversed", type="category")), (upper, {}), (upper, {}),
            (dict(matches="x"), {})]
    title = _t("source.title", token=label(ins.out_tokens[position]), n=position + 1, p=f"{att.probability:.3f}")
    # the rows apart so that a panel's title of two lines clears the panel above
    fig = panel_grid([([t], name, x, y) for t, name, (x, y) in zip(traces, titles, axes)], 1,
                     dict(text=wrap_title(title, 40), font=dict(size=14)), 620, gap=(0, 0.075),
                     title_font=dict(size=16), row_heights=(2, 1, 1, 1), title_width=36, titles_left=True,
                     margin=dict(l=50, r=10, t=60, b=60))
    return phone_width(fig, S, room=80)


def target_figure(ins, att, position):
    """Over the English pieces before the token: decoder self-attention averaged over heads, gradient x input,
    occlusion (<s> is never replaced)."""
    tgt = positions(ins.tgt_tokens[:position + 1])
    self_avg = ins.decoder[:, :, position, :position + 1].mean(dim=(0, 1))
    panels = [([_bars(self_avg, tgt, "#4a7dc9", _hover("hover.mean-weight", 3))], _t("target.average"), {}, {}),
              ([_bars(att.grad_tgt, tgt, "#55a868", _hover("gradient", 4))], _t("gradient"), {}, {}),
              ([_bars(att.occl_tgt, tgt, "#8172b2", _hover("hover.drop", 4))], _t("occlusion"), {}, {})]
    fig = panel_grid(panels, 3, dict(text=_t("target.title"), font=dict(size=14)), 300, gap=(0.06, 0),
                     title_font=dict(size=16), title_width=36, margin=dict(l=40, r=10, t=50, b=80))
    return phone_width(fig, 3 * len(tgt), room=180)  # three panels side by side, their axes and gaps


def reading(ins, att, position):
    """One line per measure: the source piece it ranks first, and whether the three agree, from the numbers."""
    src = ins.src_tokens
    avg = ins.cross[:, :, position].mean(dim=(0, 1))
    top = {m: int(np.argmax(np.asarray(v))) for m, v in zip(MEASURES, (avg, att.grad_src, att.occl_src))}
    lines = [f"- **{_t(m)}** " + _t("ranks", token=f"“{md_literal(src[j])}”", position=j)
             for m, j in top.items()]
    verdict = ("same" if len(set(top.values())) == 1 else
               "disagree" if top["attention"] not in (top["gradient"], top["occlusion"]) else "one")
    return "\n".join(lines) + f"\n\n{_t('verdict.' + verdict)}"
