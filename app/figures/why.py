"""One output token's cross-attention beside two attributions of its probability (core.analysis.attribution):
over the source pieces, over the English before it, and a reading of the three in words. Pure builders: the
Inspection, the attributions and the position in, a figure (or Markdown) out, its words in the event's language
(app.i18n)."""
import numpy as np
import plotly.graph_objects as go

from ..common import label, md_literal, wrap_title
from ..figures.attention import positions, rounded
from ..i18n import texts

_t = texts("why")
MEASURES = ("attention", "gradient", "occlusion")  # the three readings of a token, as the figure shows them (why.<m>)


def _bars(values, names, color, hover, axis):
    """A bar trace (a dict: the figure validates once) on the axes numbered `axis` ("" for the first)."""
    v = np.round(np.asarray(values, dtype=np.float32), 4)
    colors = np.where(v >= 0, color, "#c44e52")
    return dict(type="bar", x=names, y=v, marker=dict(color=colors), hovertemplate=hover, showlegend=False,
                xaxis=f"x{axis}", yaxis=f"y{axis}")


def _panels(traces, titles, domains, shared_x):
    """Traces on their own axes, laid out by hand (plotly's make_subplots took about 40 ms a figure here, most of
    each view's time): `domains` ((x0, x1), (y0, y1)) per panel, each panel's title above it as make_subplots
    writes one; with `shared_x`, every panel's x axis follows the first and only the lowest shows its labels."""
    layout, notes = {}, []
    for i, ((x0, x1), (y0, y1)) in enumerate(domains):
        n = "" if i == 0 else str(i + 1)
        xaxis = dict(domain=[x0, x1], anchor=f"y{n}")
        if shared_x and i:
            xaxis["matches"] = "x"
        if shared_x and i < len(domains) - 1:
            xaxis["showticklabels"] = False
        layout[f"xaxis{n}"], layout[f"yaxis{n}"] = xaxis, dict(domain=[y0, y1], anchor=f"x{n}")
        notes.append(dict(text=titles[i], x=(x0 + x1) / 2, y=y1, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=16)))
    return traces, dict(layout, annotations=notes)


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
    heights, gap = (0.4, 0.2, 0.2, 0.2), 0.075  # rows from the top, and the space between them (a title of two lines)
    scale, top, domains = 1 - gap * (len(heights) - 1), 1.0, []
    for h in heights:
        domains.append(((0.0, 1.0), (max(0.0, top - h * scale), top)))
        top -= h * scale + gap
    heat = dict(type="heatmap", z=heads, x=src, y=[f"{lay}.{h}" for lay in range(L) for h in range(H)],
                colorscale="Blues", zmin=0, zmax=1, showscale=False,
                hovertemplate=f"{_t('hover.layer-head')} %{{y}} → %{{x}}<br>"
                              f"{_t('hover.weight')} %{{z:.3f}}<extra></extra>")
    traces, layout = _panels([heat, _bars(maps.mean(dim=(0, 1)), src, "#4a7dc9", _hover("hover.mean-weight", 3), 2),
                              _bars(att.grad_src, src, "#55a868", _hover("gradient", 4), 3),
                              _bars(att.occl_src, src, "#8172b2", _hover("hover.drop", 4), 4)],
                             titles, domains, shared_x=True)
    layout["yaxis"].update(autorange="reversed", type="category")  # "layer.head", never a number
    title = _t("source.title", token=label(ins.out_tokens[position]), n=position + 1, p=f"{att.probability:.3f}")
    return go.Figure(traces, dict(layout, height=620, margin=dict(l=50, r=10, t=60, b=60),
                                  title=dict(text=wrap_title(title, 40), font=dict(size=14))))


def target_figure(ins, att, position):
    """Over the English pieces before the token: decoder self-attention averaged over heads, gradient x input,
    occlusion (<s> is never replaced)."""
    tgt = positions(ins.tgt_tokens[:position + 1])
    self_avg = ins.decoder[:, :, position, :position + 1].mean(dim=(0, 1))
    gap = 0.06
    width = (1 - 2 * gap) / 3
    domains = [((i * (width + gap), min(1.0, i * (width + gap) + width)), (0.0, 1.0)) for i in range(3)]
    traces, layout = _panels([_bars(self_avg, tgt, "#4a7dc9", _hover("hover.mean-weight", 3), ""),
                              _bars(att.grad_tgt, tgt, "#55a868", _hover("gradient", 4), 2),
                              _bars(att.occl_tgt, tgt, "#8172b2", _hover("hover.drop", 4), 3)],
                             (_t("target.average"), _t("gradient"), _t("occlusion")), domains, shared_x=False)
    return go.Figure(traces, dict(layout, height=300, margin=dict(l=40, r=10, t=50, b=80),
                                  title=dict(text=_t("target.title"), font=dict(size=14))))


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
