"""Two models on one sentence, and two sentences on one model, as figures. Pure builders: a Comparison or a PatchGrid
(core/analysis/compare.py, core/analysis/patching.py) and the controls in, a figure or HTML out, in the event's
language (app.i18n)."""
import html
import math

import numpy as np
import plotly.graph_objects as go

from ..common import kind_name, label, panel_grid, phone_width, title_room, wrap_title
from ..i18n import text, texts
from .attention import SCALE, hover, positions, rounded
from .margins import text_lines, text_width

_t = texts("compare")

DIVERGING = "RdBu_r"  # A - B: red where A attends more, blue where B does, white at 0
RECOVERED = "RdBu_r"  # patching: red where restoring a state gives the original's log-probability back
A_COLOUR, B_COLOUR = "#2f6db5", "#d9822b"


SCALE_PX = 180  # px across a colour bar: on a phone's first screen beside the rows' labels, its labels included


def left_scale(**bar):
    """A horizontal colour bar of SCALE_PX px from the plot's left edge (the maps' and the grid's left column):
    where a phone's figure is wider than the screen and scrolls sideways, the whole scale, its 0 labelled, is on
    the first screen (a bar across most of the figure's width, centred, showed a phone its left end alone)."""
    return dict(orientation="h", thickness=10, xref="paper", x=0, xanchor="left", lenmode="pixels", len=SCALE_PX,
                **bar)


def model_name(name):
    """A model's name in words, in the event's language: the page's own shipped model and the points of its run
    ("shipped@epoch-1": the shipped model, after epoch 1), a directory's name as it is."""
    base, _, point = name.partition("@")
    kind, _, n = point.partition("-")
    if not point and base != "shipped" or point and kind not in ("epoch", "step", "init"):
        return name
    return text(f"ui.compare.name.{kind or 'model'}", n=n,
                model=text("ui.compare.name.shipped") if base == "shipped" else base)


def model_title(names, who):
    """'A (the shipped model, after epoch 1)': a side of the comparison and the model it is."""
    return _t("side", side=who.upper(), name=model_name(names["ab".index(who)]))


# ---- two models ------------------------------------------------------------------------------------------

def translations_html(c):
    """Both translations, each with its log-probability under A and under B, and where they part: a block per
    translation (a table's columns would scroll sideways on a phone)."""
    blocks = []
    for s in c.scored:
        who = model_title(c.names, s.by)
        scores = _t("logp-both", a=f"{s.total_a:.2f}", b=f"{s.total_b:.2f}")
        blocks.append(f'<div class="cmp-translation"><b>{html.escape(who)}</b><div class="cmp-text">'
                      f'{html.escape(s.translation)}</div><div class="cmp-scores">{html.escape(scores)}</div></div>')
    if c.first_difference is None:
        parted = _t("same")
    else:
        units = c.scored[0].units
        at = units[c.first_difference] if c.first_difference < len(units) else "</s>"
        parted = _t("part", n=c.first_difference + 1, unit=at)
    level = _t("by-words") if c.by_words else _t("by-pieces")
    return f'{"".join(blocks)}<p class="cmp-note">{html.escape(parted)} {html.escape(level)}</p>'


def scores_figure(c):
    """Per unit of each translation, its probability under A and under B (teacher-forced): two panels of bars,
    the first unit where the translations part marked."""
    panels = []
    for s in c.scored:
        units = [label(u) for u in s.units]
        x = positions(s.units)
        traces = [dict(type="bar", x=x, y=np.round(np.exp(s.logp_a), 4), name=_t("p-under", side="A"),
                       marker=dict(color=A_COLOUR), legendgroup="a", showlegend=s.by == "a",
                       hovertemplate="%{x}<br>P = %{y:.3f}<extra>A</extra>"),
                  dict(type="bar", x=x, y=np.round(np.exp(s.logp_b), 4), name=_t("p-under", side="B"),
                       marker=dict(color=B_COLOUR), legendgroup="b", showlegend=s.by == "a",
                       hovertemplate="%{x}<br>P = %{y:.3f}<extra>B</extra>")]
        xaxis = dict(type="category", tickmode="array", tickvals=x, ticktext=units, tickangle=-90)
        panels.append((traces, _t("scored", side=s.by.upper(), name=model_name(c.names["ab".index(s.by)])), xaxis,
                       dict(range=[0, 1.05], title=dict(text="P"))))
    longest = max(len(s.units) for s in c.scored)
    fig = panel_grid(panels, 1, wrap_title(_t("scores-title")), height=620, gap=(0.0, 0.3), titles_left=True,
                     barmode="group", legend=dict(orientation="h", x=0, y=-0.2, yanchor="top"),
                     margin=dict(l=40, r=10, t=90, b=150))
    fig.update_annotations(align="left")  # each panel's title of two lines flush at its panel's left edge
    if c.first_difference is not None:
        for i, s in enumerate(c.scored):
            if c.first_difference < len(s.units):
                ax = "" if i == 0 else "2"
                fig.add_shape(type="rect", xref=f"x{ax}", yref=f"y{ax} domain", x0=c.first_difference - 0.5,
                              x1=c.first_difference + 0.5, y0=0, y1=1, line=dict(color="#c0392b", width=2),
                              fillcolor="rgba(0,0,0,0)")
    return phone_width(fig, 2 * longest, room=60)


def _clamped(c, layer, head):
    layers, heads = c.shapes["shared"]
    return min(max(int(layer), 0), layers - 1), min(max(int(head), 0), heads - 1)


def _tokens(c, kind):
    q = c.src_units if kind == "encoder" else c.tgt_units
    k = c.tgt_units if kind == "decoder" else c.src_units
    return q, k


PANEL_ROW = 22  # px a query row takes in each of the maps
PANEL_GAP = 14  # px between a panel's tick labels and the next panel's title
DIFF_BAR = 64  # px the diverging colour bar and its labels take above the A - B panel
LEFT = 110  # px left of the maps for the query labels


def _panel(trace, n, title, q, k):
    """One panel of the maps: (trace over queries `q` and keys `k`, its title, its x- and y-axis), its axes
    numbered `n` (0: the first)."""
    ax = "" if n == 0 else str(n + 1)
    # no grid lines: each panel's heatmap covers them, and plotly drew one a tick, 105 of the figure's 604 elements
    axis = dict(type="category", tickmode="array", automargin=False, showgrid=False, zeroline=False)
    x = dict(axis, tickvals=positions(k), ticktext=[label(t) for t in k], tickangle=-90, anchor=f"y{ax}")
    y = dict(axis, tickvals=positions(q), ticktext=[label(t) for t in q], autorange="reversed", anchor=f"x{ax}")
    return dict(trace, x=x["tickvals"], y=y["tickvals"], xaxis=f"x{ax}", yaxis=f"y{ax}"), title, x, y


def _stack(panels, labels, bar_before_last):
    """Lay `panels` (_panel's) out one above another on the plot area, in px: each its title's lines, its rows
    (PANEL_ROW px a query), its key labels (`labels` px; the last panel's go below the plot area), and
    `bar_before_last` px before the last. Returns (data, layout of the axes and panel titles, the plot area's
    height, the px from its top to where the last panel's bar goes)."""
    rows = len(panels[0][3]["tickvals"])
    spans, y, bar_at = [], 0, 0  # each panel's plot, (top, bottom) in px below the plot area's top
    heads = [wrap_title(title, 44) for _, title, _, _ in panels]
    for i, head in enumerate(heads):
        if i == len(panels) - 1:
            bar_at, y = y, y + bar_before_last
        y += 20 * text_lines(head) + 6
        spans.append((y, y + PANEL_ROW * rows))
        y += PANEL_ROW * rows + (labels + PANEL_GAP if i < len(panels) - 1 else 0)
    data, layout = [], dict(annotations=[])
    for (trace, _, x, yax), head, (y0, y1), ax in zip(panels, heads, spans, ("", "2", "3")):
        data.append(trace)
        layout[f"xaxis{ax}"] = dict(x, domain=[0, 1])
        layout[f"yaxis{ax}"] = dict(yax, domain=[1 - y1 / y, 1 - y0 / y])
        # from the figure's left edge, over the query labels: a phone's plot is too narrow for a title
        layout["annotations"].append(dict(text=head, xref="paper", yref="paper", x=0, xshift=8 - LEFT, y=1 - y0 / y,
                                          xanchor="left", yanchor="bottom", showarrow=False, align="left"))
    return data, layout, y, bar_at


def maps_figure(c, kind, layer, head):
    """One head's map for A, for B, and A - B, in one figure, one above another (on a phone as on a desktop): one
    figure to draw where three took three times the browser's work. A and B share the weight's colour bar at the
    top; A - B has a diverging scale centred on 0 (white), its ends labelled with the side that attends more."""
    layer, head = _clamped(c, layer, head)
    a, b, diff = c.maps(kind, layer, head)
    q, k = _tokens(c, kind)
    name = kind_name(kind, long=True)
    title = wrap_title(_t("maps-title", kind=name, layer=layer, head=head))
    if c.by_words:  # said beside the maps, whose rows and columns are then words, not only above the translations
        title += "<br>" + wrap_title(_t("maps-words"))
    below = title_room(title)
    top, labels = below + 68, int(max([text_width(label(t)) for t in k] + [20])) + 12
    weight = dict(zmin=0, zmax=1, colorscale=SCALE, hovertemplate=hover())
    panels = [_panel(dict(type="heatmap", z=rounded(a), name="A", showscale=True, **weight), 0,
                     model_title(c.names, "a"), q, k),
              _panel(dict(type="heatmap", z=rounded(b), name="B", showscale=False, **weight), 1,
                     model_title(c.names, "b"), q, k),
              _panel(dict(type="heatmap", z=rounded(diff), name="A − B", zmin=-1, zmax=1, zmid=0,
                          colorscale=DIVERGING,
                          hovertemplate=f"{_t('query')} %{{y}} → {_t('key')} %{{x}}<br>A − B %{{z:.3f}}<extra></extra>"),
                     2, _t("diff-panel"), q, k)]
    data, layout, paper, bar_at = _stack(panels, labels, DIFF_BAR)
    height = top + paper + labels
    data[0]["colorbar"] = left_scale(yref="container", y=1 - below / height, yanchor="top",
                                     title=dict(text=text("attention.weight"), side="bottom"))
    # placed on the plot area (paper): placed from the figure's edge, plotly widened the margin below by the
    # whole distance from the bar to the bottom, and the panels shrank by it
    data[2]["colorbar"] = left_scale(yref="paper", y=1 - bar_at / paper, yanchor="top", tickvals=[-1, 0, 1],
                                     ticktext=[_t("b-more"), "0", _t("a-more")], title=dict(text="A − B", side="bottom"))
    # one go.Figure of the whole: update_layout's path-by-path update took twice as long as the figure
    fig = go.Figure(dict(data=data, layout=dict(layout, title=title, height=height,
                                                margin=dict(l=LEFT, r=10, t=top, b=labels))))
    return phone_width(fig, len(k), room=130)


RANKED = 12  # heads listed in the ranking


def ranking_rows(c, most=RANKED):
    """The heads whose maps differ most, as rows for a table: [rank, kind's name, layer, head, mean TV]."""
    return [[i + 1, kind_name(kind), layer, head, round(value, 3)]
            for i, (kind, layer, head, value) in enumerate(c.ranking[:most])]


def ranking_headers():
    return ["#", _t("col.kind"), _t("col.layer"), _t("col.head"), _t("col.tv")]


# ---- two sentences ---------------------------------------------------------------------------------------

def _token_choice(grid, token):
    """The output position a menu value names (None: all of them, summed)."""
    if token in (None, "", "all"):
        return None
    t = int(token)
    return t if 0 <= t < len(grid.out_tokens) else None


def patch_figure(grid, token=None):
    """The recovered fraction of the original translation's log-probability for every (encoder layer, source
    position) whose state is restored: of one output token, or of all (summed). Rows: the embedding (0) and each
    layer's output; columns: the edited sentence's pieces, the changed ones marked."""
    t = _token_choice(grid, token)
    z = np.asarray(grid.recovered_total if t is None else np.asarray(grid.recovered)[..., t], dtype=float)
    layers = [_t("row.embedding")] + [_t("row.layer", layer=i) for i in range(1, z.shape[0])]
    cols = [f"{'★ ' if i in grid.changed else ''}{i} {label(p)}" for i, p in enumerate(grid.edited_tokens)]
    what = _t("patch.whole") if t is None else _t("patch.token", token=label(grid.out_tokens[t]), n=t + 1)
    title = wrap_title(_t("patch.title", what=what))
    below = title_room(title)
    height = max(360, below + 190 + 34 * len(layers))
    bar = left_scale(yref="container", y=1 - below / height, yanchor="top", tickvals=[-1, 0, 1],
                     ticktext=["−1", _t("patch.zero"), _t("patch.full")], title=dict(text=_t("patch.bar"), side="bottom"))
    trace = dict(type="heatmap", z=np.round(np.clip(z, -1.5, 1.5), 3), x=cols, y=layers, zmin=-1, zmax=1, zmid=0,
                 colorscale=RECOVERED, colorbar=bar,
                 hovertemplate=f"%{{y}} · %{{x}}<br>{_t('patch.bar')} %{{z:.2f}}<extra></extra>")
    fig = go.Figure([trace])
    fig.update_layout(title=title, height=height, margin=dict(l=120, r=10, t=below + 80, b=120),
                      xaxis=dict(type="category", tickangle=-90, automargin=False, showgrid=False),
                      yaxis=dict(type="category", autorange="reversed", automargin=False, showgrid=False))
    return phone_width(fig, len(cols), room=150)


def patch_probs_figure(grid):
    """Each output token of the original translation: its probability given the original sentence and given the
    edited one (teacher-forced)."""
    x = positions(grid.out_tokens)
    ticks = dict(type="category", tickmode="array", tickvals=x, ticktext=[label(t) for t in grid.out_tokens],
                 tickangle=-90)
    traces = [dict(type="bar", x=x, y=np.round(np.exp(np.asarray(grid.logp_original, dtype=float)), 4),
                   name=_t("patch.p-original"), marker=dict(color=A_COLOUR)),
              dict(type="bar", x=x, y=np.round(np.exp(np.asarray(grid.logp_edited, dtype=float)), 4),
                   name=_t("patch.p-edited"), marker=dict(color=B_COLOUR))]
    title = wrap_title(_t("patch.probs-title"))
    fig = go.Figure(traces)
    fig.update_layout(title=title, barmode="group", height=400, xaxis=ticks, yaxis=dict(range=[0, 1.05], title="P"),
                      legend=dict(orientation="h", x=0, y=-0.45, yanchor="top"),
                      margin=dict(l=40, r=10, t=title_room(title) + 30, b=150))
    return phone_width(fig, 2 * len(x), room=60)


def token_menu(grid):
    """The patching grid's token menu: all tokens summed, then each output token by position."""
    return [(_t("patch.all"), "all")] + [(f"{i + 1} {t}", str(i)) for i, t in enumerate(grid.out_tokens)]


def patch_summary(grid):
    """One line: both translations, and which pieces were changed."""
    changed = ", ".join(grid.edited_tokens[i] for i in grid.changed) or "—"
    original, edited = float(np.asarray(grid.logp_original).sum()), float(np.asarray(grid.logp_edited).sum())
    same = math.isclose(original, edited)
    return _t("patch.summary", original=grid.translation, edited=grid.edited_translation, changed=changed,
              drop=f"{original - edited:.2f}") + (
        " " + _t("patch.no-effect") if same else "")
