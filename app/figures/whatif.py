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


def drawn_steps(tree):
    """(the last step drawn, the last step searched): the tree is drawn up to the step where the returned
    translation ends; the search may go on past it, to fill its pool of finished hypotheses, without beating it."""
    searched = max(n.step for n in tree.nodes)
    returned = tree.returned
    return (returned.step if returned else searched), searched


def tree_layout(tree, end=None):
    """(x, y) of every node up to step `end`: y its step, x its place at that step. A step's nodes that beam
    search went on with (kept, finished, returned) come first, in their parents' order and then by log P, so that
    no two of their edges cross; then the pruned ones, likewise, drawn closer together. Steps go down the figure,
    so a long search grows in height and fits a phone's width; only the first places carry labels."""
    end = drawn_steps(tree)[0] if end is None else end
    by_step = {}
    for n in tree.nodes:
        if n.step <= end:
            by_step.setdefault(n.step, []).append(n)
    pos = {}
    for step in sorted(by_step):
        nodes = by_step[step]
        order = lambda n: (pos[n.parent][0] if n.parent is not None else 0, -n.score)
        going_on = sorted((n for n in nodes if n.status != "pruned"), key=order)
        pruned = sorted((n for n in nodes if n.status == "pruned"), key=order)
        for place, n in enumerate(going_on):
            pos[n.id] = (place, step)
        for place, n in enumerate(pruned):
            pos[n.id] = (len(going_on) + PRUNED_GAP * place, step)
    return pos


PRUNED_GAP = 0.35  # the pruned nodes' spacing, in places: dots without labels need less room than words


def _edges(tree, pos, faded):
    xs, ys = [], []
    for n in tree.nodes[1:]:
        if n.id in pos and (n.status == "pruned") == faded:
            (x0, y0), (x1, y1) = pos[n.parent], pos[n.id]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
    return go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                      line=dict(color="#dde1e7" if faded else "#8aa6d1", width=1 if faded else 1.6))


def tree_figure(tree, piece, beam):
    """The search as a tree, up to the step where the returned translation ends (drawn_steps): a node per
    candidate (y: step, x: its place at that step, see tree_layout), edges to its parent; pruned ones faded and
    unlabelled, finished ones green, the returned translation red. A node's hover (a mouse) and the saved tree
    give the whole hypothesis, the token's log-probability, log P and (finished) log P / lp. What the search
    looked at after that step is counted in the title."""
    end, searched = drawn_steps(tree)
    pos = tree_layout(tree, end)
    fig = go.Figure([_edges(tree, pos, True), _edges(tree, pos, False)])  # pruned edges first, underneath
    for status in ("pruned", "kept", "finished", "returned", "root"):
        nodes = [n for n in tree.nodes if n.status == status and n.id in pos]
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
    title = _t("title", beam=beam, candidates=len(pos) - 1, steps=end)
    later = sum(n.step > end for n in tree.nodes)
    if later:
        title += ("" if "\u3000" <= title[-1] <= "\u9fff" else " ") + _t("after", later=later, searched=searched)
    fig.update_yaxes(autorange=False, range=[end + 0.5, -0.5], title=label(_t("step", bos="<s>")), dtick=1)
    fig.update_xaxes(showticklabels=False, zeroline=False, side="top")
    # what the columns are, over the plot from its left (a phone scrolls this figure sideways and shows its left
    # first: an axis title, centred, started off-screen)
    fig.add_annotation(text=label(_t("rank")), xref="paper", yref="paper", x=0, y=1, xanchor="left",
                       yanchor="bottom", yshift=6, showarrow=False, font=dict(size=13))
    lines = wrap_title(label(title)).count("<br>") + 1
    fig.update_layout(height=200 + 20 * lines + 30 * (end + 1), margin=dict(l=50, r=10, t=70 + 20 * lines, b=70),
                      hovermode="closest",
                      title=dict(text=wrap_title(label(title)), font=dict(size=14), yref="container", y=1,
                                 yanchor="top", pad=dict(t=20)),
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
