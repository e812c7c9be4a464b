"""The What if tab: the beam search behind the last translation as a tree, and the model made to
continue from another word, from an English prefix, or to score a translation written by the user.

The tree needs one beam search that records its candidates (core.analysis.searchtree.search), run when the tab is shown
and kept per translation and beam size. Each what-if is one decoding or one teacher-forced pass, run when its
button is pressed; all of them use the translation's own settings and the shared model, one at a time.
"""
import html
import math

import gradio as gr
import plotly.graph_objects as go

from core.analysis import searchtree
from core.decode import DECODING_LIMITS

from ..cache import PerTranslation
from ..common import clamp, empty_figure, export_file, label, token_strip, within
from ..i18n import L, text
from ..shared import MODEL_LOCK, get_translator
from ..views import View, opener, refresh, shown, tab_views
from .translate import MAX_CHARS


def not_yet(lang="en"):
    """What the tab says before a translation."""
    return text(lang, "whatif.not-yet")


NOT_YET = not_yet()
BEAM = DECODING_LIMITS["beam"]  # the tree's beam size: the same range as the Translate tab's
COLORS = {"kept": "#4a7dc9", "pruned": "#c9ced6", "finished": "#55a868", "returned": "#e4572e", "root": "#333"}

_KEPT = PerTranslation(16)  # search trees, per translation and beam size


def search_tree(ins, beam):
    """The beam search of the translation's source, recorded, once per (translation, beam size)."""
    def compute():
        decoding = ins.decoding or {}
        with MODEL_LOCK:
            return searchtree.search(get_translator(), source_text(ins), beam=beam, alpha=decoding.get("alpha"),
                                     max_len=decoding.get("max_len"))
    return _KEPT.get(ins, beam, compute)


def source_text(ins):
    """The German sentence as given (or, for an Inspection without it, from its pieces)."""
    if ins.source:
        return ins.source
    tok = get_translator().tokenizer
    return tok.decode([tok.piece_to_id(p) for p in ins.src_tokens[1:-1]])


# ---- the tree ------------------------------------------------------------------------------------------

def _layout(tree):
    """(x, y) of every node: its step, and its rank by score among the nodes of that step."""
    by_step = {}
    for n in tree.nodes:
        by_step.setdefault(n.step, []).append(n)
    pos = {}
    for step, nodes in by_step.items():
        for rank, n in enumerate(sorted(nodes, key=lambda n: -n.score)):
            pos[n.id] = (step, rank)
    return pos


def tree_figure(tree, piece, beam, lang="en"):
    """The search as a tree: a node per candidate (x: step, y: rank by log P at that step), edges to its
    parent; pruned ones faded, finished ones green, the returned translation red. A hover gives the whole
    hypothesis, the token's log-probability, log P and (finished) log P / lp."""
    pos = _layout(tree)
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
        name = label(text(lang, f"whatif.status.{status}"))
        hover = [label(f"{' '.join(piece(t) for t in tree.path(n.id)) or '<s>'}") + "<br>" +
                 label(text(lang, "whatif.hover", logp=f"{n.logp:.3f}", score=f"{n.score:.3f}")) +
                 (f" · log P / lp {n.norm:.3f}" if n.norm is not None else "") for n in nodes]
        fig.add_trace(go.Scatter(
            x=[pos[n.id][0] for n in nodes], y=[pos[n.id][1] for n in nodes], mode="markers+text",
            text=[label(piece(n.token)) for n in nodes], textposition="top center",
            textfont=dict(size=10, color="#999" if status == "pruned" else "#222"),
            marker=dict(size=12 if status == "returned" else 8, color=COLORS[status],
                        opacity=0.5 if status == "pruned" else 1),
            name=name, hovertext=hover, hovertemplate="%{hovertext}<extra>" + name + "</extra>"))
    steps = max(n.step for n in tree.nodes)
    fig.update_yaxes(autorange="reversed", title=label(text(lang, "whatif.rank")), dtick=1)
    fig.update_xaxes(title=label(text(lang, "whatif.step", bos="<s>")), dtick=1)
    fig.update_layout(height=380 + 14 * beam, margin=dict(l=60, r=10, t=50, b=50), hovermode="closest",
                      title=dict(text=label(text(lang, "whatif.title", beam=beam, candidates=len(tree.nodes) - 1,
                                                 steps=steps)), font=dict(size=14)),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


# ---- what-if -------------------------------------------------------------------------------------------

def _tokens_html(title, scored):
    """A translation as pieces, each on its probability's colour, with its total log-probability."""
    strip = token_strip([piece for piece, _ in scored[1]], [math.exp(lp) for _, lp in scored[1]],
                        hovers=[f"log p = {lp:.3f}" for _, lp in scored[1]])
    return (f'<div class="whatif-row"><div class="whatif-title">{html.escape(title)} · log P = {scored[0]:.2f}'
            f'</div>{strip}</div>')


def compare(ins, title, english, lang="en"):
    """The model's translation beside `english`, both scored by the model (teacher-forced, float32)."""
    tr = get_translator()
    with MODEL_LOCK:
        ours, other = tr.score([source_text(ins)] * 2, [ins.translation, english])
    diff = other[0] - ours[0]
    verdict = text(lang, f"whatif.verdict.{'other' if diff > 0 else 'own'}", factor=f"{math.exp(abs(diff)):.3g}",
                   delta=f"{abs(diff):.2f}")
    return (_tokens_html(text(lang, "whatif.ours"), ours) + _tokens_html(title, other) +
            f'<div class="whatif-verdict">{html.escape(verdict)}</div>')


def _continue(ins, prefix):
    """The translation's own decoding continued after the English `prefix`."""
    tr = get_translator()
    d = ins.decoding or {}
    method = d.get("method") if d.get("method") in ("greedy", "beam") else "greedy"
    with MODEL_LOCK:
        return tr.translate(source_text(ins), method=method, beam=d.get("beam", 4), alpha=d.get("alpha"),
                            prefix=prefix)


def swap_word(ins, position, candidate, lang="en"):
    """Replace the output token at `position` by another of the candidates the model scored there, and let the
    model continue; the result beside the original."""
    if ins is None:
        return not_yet(lang)
    T = len(ins.out_tokens)
    position = clamp(position, 0, T - 1)
    choices = [p for p, _ in ins.topk[position]]
    if candidate not in choices:
        return text(lang, "whatif.pick")
    tok = get_translator().tokenizer
    prefix = tok.decode([tok.piece_to_id(p) for p in ins.tgt_tokens[1:position + 1] + [candidate]])
    english = _continue(ins, prefix)
    return compare(ins, text(lang, "whatif.swapped", candidate=candidate, position=position + 1), english, lang)


def _typed(ins, typed, what, lang="en"):
    """What is wrong with English the user typed (`what`: "prefix" or "translation"), or None when it can be
    used: a line in `lang` that asks for it when it is empty, or says it is too long."""
    if ins is None:
        return not_yet(lang)
    if not typed:
        return text(lang, f"whatif.ask.{what}")
    if len(typed) > MAX_CHARS:
        return text(lang, f"whatif.too-long.{what}", count=f"{len(typed):,}", most=f"{MAX_CHARS:,}")
    return None


def force_prefix(ins, prefix, lang="en"):
    """The model continues after an English prefix the user wrote."""
    prefix = (prefix or "").strip()
    wrong = _typed(ins, prefix, "prefix", lang)
    return wrong or compare(ins, text(lang, "whatif.after-prefix"), _continue(ins, prefix), lang)


def score_mine(ins, english, lang="en"):
    """The model's probability of a whole English translation the user wrote, token by token."""
    english = (english or "").strip()
    wrong = _typed(ins, english, "translation", lang)
    return wrong or compare(ins, text(lang, "whatif.yours"), english, lang)


# ---- views ---------------------------------------------------------------------------------------------

def tree_view(ins, beam, lang="en"):
    beam = within(BEAM, beam)
    tok = get_translator().tokenizer
    return tree_figure(search_tree(ins, beam), tok.id_to_piece, beam, lang)


def tree_file(ins, beam, lang="en"):
    """The search tree of the translation as one self-contained HTML file (plotly.js inside it) to download."""
    if ins is None:
        return gr.update(value=None, visible=False)
    page = tree_view(ins, beam, lang).to_html(include_plotlyjs=True, full_html=True)
    return gr.update(value=export_file(page, "beam-search", ".html"), visible=True)


def positions_view(ins):
    """The position menu for this translation, and the candidates of its first position."""
    return (gr.update(choices=[(f"{i + 1} {t}", i) for i, t in enumerate(ins.out_tokens)], value=0),
            candidates_update(ins, 0), "")


def candidates_update(ins, position):
    if ins is None:
        return gr.update(choices=[], value=None)
    position = clamp(position, 0, len(ins.out_tokens) - 1)
    choices = [(f"{p}  ({q:.1%})", p) for p, q in ins.topk[position]]
    return gr.update(choices=choices, value=choices[1][1] if len(choices) > 1 else None)


def _blank(lang="en"):
    return empty_figure(not_yet(lang))


VIEWS = [View("whatif/tree", ("whatif",), tree_view, uses=("beam", "lang"), blank=lambda beam, lang="en": (_blank(lang),)),
         View("whatif/positions", ("whatif",), positions_view, outputs=3,
              blank=(gr.update(choices=[], value=None), gr.update(choices=[], value=None), ""))]


def show(page, ins, beam=BEAM.default, lang="en"):
    """The tab's views for the page as it is (app/views.py); before a translation, the tree's placeholder in the
    page's language."""
    out = refresh(page, ins, VIEWS, dict(beam=beam, lang=lang))
    if ins is None and shown(page, VIEWS[0].where):
        out = (_blank(lang), *out[1:])
    return out


# ---- layout and events -----------------------------------------------------------------------------

def build(page, state, lang):
    """Lay out the tab and wire its events; returns its controls and outputs for the translation event (app/ui.py)."""
    with gr.Tab(L("ui.tab.whatif"), id="whatif") as tab:
        gr.Markdown(L("ui.whatif.tree-intro"))
        beam = gr.Slider(BEAM.lo, BEAM.hi, value=BEAM.default, step=BEAM.step, label=L("ui.whatif.beam"),
                         elem_id="whatif-beam")
        tree = gr.Plot(_blank(), elem_id="whatif-tree")
        with gr.Row():
            save_tree = gr.Button(L("ui.whatif.save"), size="sm", elem_id="whatif-save")
            tree_html = gr.File(visible=False, interactive=False, label=L("ui.whatif.file"), elem_id="whatif-file")
        gr.Markdown(L("ui.whatif.intro"))
        with gr.Row():
            position = gr.Dropdown(choices=[], label=L("ui.whatif.position"), elem_id="whatif-position")
            candidate = gr.Dropdown(choices=[], label=L("ui.whatif.candidate"), elem_id="whatif-candidate")
            swap = gr.Button(L("ui.whatif.swap"), elem_id="whatif-swap")
        with gr.Row():
            prefix = gr.Textbox(label=L("ui.whatif.prefix"), placeholder=L("ui.whatif.prefix-example"), max_lines=1,
                                 elem_id="whatif-prefix")
            go_prefix = gr.Button(L("ui.whatif.go-prefix"), elem_id="whatif-go-prefix")
        with gr.Row():
            mine = gr.Textbox(label=L("ui.whatif.mine"), max_lines=2, elem_id="whatif-mine")
            go_mine = gr.Button(L("ui.whatif.go-mine"), elem_id="whatif-go-mine")
        result = gr.HTML(elem_id="whatif-result")
    outputs = [tree, position, candidate, result]
    model = dict(api_visibility="private", concurrency_id="model")
    tab.select(opener(("whatif",), show), [page, state, beam, lang], outputs, **model)
    beam.change(show, [page, state, beam, lang], outputs, **model)
    save_tree.click(tree_file, [state, beam, lang], tree_html, **model)
    position.input(candidates_update, [state, position], candidate, api_visibility="private")
    swap.click(swap_word, [state, position, candidate, lang], result, **model)
    gr.on([go_prefix.click, prefix.submit], force_prefix, [state, prefix, lang], result, **model)
    gr.on([go_mine.click, mine.submit], score_mine, [state, mine, lang], result, **model)
    return tab_views(show, VIEWS, dict(beam=beam, lang=lang), outputs)
