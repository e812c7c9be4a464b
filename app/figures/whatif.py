"""The beam search behind a translation as a tree, and a translation beside another, both scored by the model.
Pure builders: the recorded search (core.analysis.searchtree) or the scores in, a figure (or escaped HTML) out,
its words in the event's language (app.i18n)."""
import html
import math

import plotly.graph_objects as go

from ..common import label, token_strip, wrap_title
from ..i18n import texts

_t = texts("whatif")
COLORS = {"kept": "#4a7dc9", "pruned": "#c9ced6", "finished": "#55a868", "returned": "#e4572e", "root": "#333"}


def tree_layout(tree):
    """(x, y) of every node: y its step, x its place at that step, the nodes beam search went on with (kept,
    finished, returned) first by log P, then the pruned ones by log P, drawn closer together. Steps go down the
    figure, so a long search grows in height and fits a phone's width; only the first places carry labels."""
    by_step = {}
    for n in tree.nodes:
        by_step.setdefault(n.step, []).append(n)
    pos = {}
    for step, nodes in by_step.items():
        going_on = sorted((n for n in nodes if n.status != "pruned"), key=lambda n: -n.score)
        pruned = sorted((n for n in nodes if n.status == "pruned"), key=lambda n: -n.score)
        for place, n in enumerate(going_on):
            pos[n.id] = (place, step)
        for place, n in enumerate(pruned):
            pos[n.id] = (len(going_on) + PRUNED_GAP * place, step)
    return pos


PRUNED_GAP = 0.35  # the pruned nodes' spacing, in places: dots without labels need less room than words


def tree_figure(tree, piece, beam):
    """The search as a tree: a node per candidate (y: step, x: its place at that step, see _layout), edges to
    its parent; pruned ones faded and unlabelled, finished ones green, the returned translation red. A node's
    hover (a mouse) and the saved tree give the whole hypothesis, the token's log-probability, log P and
    (finished) log P / lp."""
    pos = tree_layout(tree)
    fig = go.Figure()
    for faded in (True, False):  # pruned edges first, underneath
        xs, ys = [], []
        for n in tree.nodes[1:]:
            if (n.status == "pruned") == faded:
                (x0, y0), (x1, y1) = pos[n.parent], pos[n.id]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                 line=dict(color="#dde1e7" if faded else "#8aa6d1", width=1 if faded else 1.6)))
    for status in ("pruned", "kept", "finished", "returned", "root"):
        nodes = [n for n in tree.nodes if n.status == status]
        if not nodes:
            continue
        name = label(_t(f"status.{status}"))
        hover = [label(f"{' '.join(piece(t) for t in tree.path(n.id)) or '<s>'}") + "<br>" +
                 label(_t("hover", logp=f"{n.logp:.3f}", score=f"{n.score:.3f}")) +
                 (f" · log P / lp {n.norm:.3f}" if n.norm is not None else "") for n in nodes]
        fig.add_trace(go.Scatter(
            x=[pos[n.id][0] for n in nodes], y=[pos[n.id][1] for n in nodes],
            mode="markers" if status == "pruned" else "markers+text",
            text=None if status == "pruned" else [label(piece(n.token)) for n in nodes], textposition="middle right",
            textfont=dict(size=11, color="#222"),
            marker=dict(size=12 if status == "returned" else 8, color=COLORS[status],
                        opacity=0.5 if status == "pruned" else 1),
            name=name, hovertext=hover, hovertemplate="%{hovertext}<extra>" + name + "</extra>"))
    steps = max(n.step for n in tree.nodes)
    fig.update_yaxes(autorange="reversed", title=label(_t("step", bos="<s>")), dtick=1)
    fig.update_xaxes(title=label(_t("rank")), showticklabels=False, zeroline=False, side="top")
    fig.update_layout(height=220 + 30 * (steps + 1), margin=dict(l=50, r=10, t=110, b=70), hovermode="closest",
                      title=dict(text=wrap_title(label(_t("title", beam=beam,
                                                           candidates=len(tree.nodes) - 1, steps=steps))),
                                 font=dict(size=14), yref="container", y=1, yanchor="top", pad=dict(t=20)),
                      legend=dict(orientation="h", y=0, x=0, yanchor="top"))  # below: the title is above
    return fig


def _tokens_html(title, scored):
    """A translation as pieces, each on its probability's colour, with its total log-probability."""
    strip = token_strip([piece for piece, _ in scored[1]], [math.exp(lp) for _, lp in scored[1]],
                        hovers=[f"log p = {lp:.3f}" for _, lp in scored[1]])
    return (f'<div class="whatif-row"><div class="whatif-title">{html.escape(title)} · log P = {scored[0]:.2f}'
            f'</div>{strip}</div>')


def comparison_html(ours, title, other):
    """The model's own translation (`ours`: its log P and its (piece, log p) pairs, as Translator.score gives
    them) beside another one named `title`, and which of the two the model prefers, by how much."""
    diff = other[0] - ours[0]
    verdict = _t(f"verdict.{'other' if diff > 0 else 'own'}", factor=f"{math.exp(abs(diff)):.3g}",
                 delta=f"{abs(diff):.2f}")
    return (_tokens_html(_t("ours"), ours) + _tokens_html(title, other) +
            f'<div class="whatif-verdict">{html.escape(verdict)}</div>')
