"""The Why tab: one output token of the last translation, its cross-attention from every head beside
two attributions of its probability to the input pieces (core/analysis/attribution.py).

Attention is read from the Inspection; the attributions need one backward pass and one batched forward pass of
the float32 model for the chosen token, kept per translation and token so that choosing a token again costs
nothing.
"""

import gradio as gr
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analysis.attribution import attribute

from ..cache import PerTranslation
from ..common import clamp, code_panel, empty_figure, label, md_literal
from ..i18n import L, text, texts
from ..shared import MODEL_LOCK, get_translator
from ..views import View, opener, refresh, shown, tab_views
from .attention import positions, rounded


def not_yet(lang="en"):
    """What the tab's figures say before a translation."""
    return text(lang, "why.not-yet")


NOT_YET = not_yet()
MEASURES = ("attention", "gradient", "occlusion")  # the three readings of a token, as the figure shows them (why.<m>)


_t = texts("why")  # the tab's words drawn at run time (why.<key>) in a language


# ---- the attribution of one token, kept ----------------------------------------------------------------

_KEPT = PerTranslation(64)  # attributions, per translation and token


def attribution(ins, position):
    """The attributions of output `position` of `ins`, computed once per (translation, position)."""
    def compute():
        tr = get_translator()
        src, tgt = ([tr.tokenizer.piece_to_id(p) for p in tokens] for tokens in (ins.src_tokens, ins.tgt_tokens))
        with MODEL_LOCK:  # the model's modules are shared: one caller at a time
            return attribute(tr.model, src, tgt, position)
    return _KEPT.get(ins, position, compute)


def default_position(ins):
    """The first output token that is a word (not a piece that only continues one), else the first."""
    for i, t in enumerate(ins.out_tokens[:-1]):
        if t.startswith("▁") and len(t) > 2:
            return i
    return 0


def token_choices(ins):
    """(label, position) for each output token: what the token menu lists."""
    return [(f"{i + 1} {t}", i) for i, t in enumerate(ins.out_tokens)]


# ---- figures ------------------------------------------------------------------------------------------

def _bars(fig, row, col, values, names, color, hover):
    v = np.round(np.asarray(values, dtype=np.float32), 4)
    colors = np.where(v >= 0, color, "#c44e52")
    fig.add_trace(go.Bar(x=names, y=v, marker_color=colors, hovertemplate=hover, showlegend=False), row=row, col=col)


def _hover(lang, key, decimals):
    """A bar's hover: its piece, then the name of what it measures (why.<key>) and its value."""
    return f"%{{x}}<br>{_t(lang, key)} %{{y:.{decimals}f}}<extra></extra>"


def source_figure(ins, att, position, lang="en"):
    """Over the source pieces: every head's cross-attention for this output position (layers × heads rows),
    their average, then gradient x input and occlusion, on one shared axis; its words in `lang`."""
    src = positions(ins.src_tokens)
    maps = ins.cross[:, :, position]                        # (L, H, S)
    L, H, S = maps.shape
    heads = rounded(maps.reshape(L * H, S))
    titles = (_t(lang, "source.heads"), _t(lang, "source.average"), _t(lang, "gradient"),
              _t(lang, "source.occlusion", unk=label("<unk>")))
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.04, row_heights=[0.4, 0.2, 0.2, 0.2],
                        subplot_titles=titles)
    fig.add_trace(go.Heatmap(z=heads, x=src, y=[f"{lay}.{h}" for lay in range(L) for h in range(H)],
                             colorscale="Blues", zmin=0, zmax=1, showscale=False,
                             hovertemplate=f"{_t(lang, 'hover.layer-head')} %{{y}} → %{{x}}<br>"
                                           f"{_t(lang, 'hover.weight')} %{{z:.3f}}<extra></extra>"), row=1, col=1)
    _bars(fig, 2, 1, maps.mean(dim=(0, 1)), src, "#4a7dc9", _hover(lang, "hover.mean-weight", 3))
    _bars(fig, 3, 1, att.grad_src, src, "#55a868", _hover(lang, "gradient", 4))
    _bars(fig, 4, 1, att.occl_src, src, "#8172b2", _hover(lang, "hover.drop", 4))
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    title = _t(lang, "source.title", token=label(ins.out_tokens[position]), n=position + 1, p=f"{att.probability:.3f}")
    fig.update_layout(height=620, margin=dict(l=50, r=10, t=60, b=60), title=dict(text=title, font=dict(size=14)))
    return fig


def target_figure(ins, att, position, lang="en"):
    """Over the English pieces before the token: decoder self-attention averaged over heads, gradient x input,
    occlusion (<s> is never replaced); its words in `lang`."""
    tgt = positions(ins.tgt_tokens[:position + 1])
    self_avg = ins.decoder[:, :, position, :position + 1].mean(dim=(0, 1))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06,
                        subplot_titles=(_t(lang, "target.average"), _t(lang, "gradient"), _t(lang, "occlusion")))
    _bars(fig, 1, 1, self_avg, tgt, "#4a7dc9", _hover(lang, "hover.mean-weight", 3))
    _bars(fig, 1, 2, att.grad_tgt, tgt, "#55a868", _hover(lang, "gradient", 4))
    _bars(fig, 1, 3, att.occl_tgt, tgt, "#8172b2", _hover(lang, "hover.drop", 4))
    fig.update_layout(height=300, margin=dict(l=40, r=10, t=50, b=80),
                      title=dict(text=_t(lang, "target.title"), font=dict(size=14)))
    return fig


def reading(ins, att, position, lang="en"):
    """One line per measure: the source piece it ranks first, and whether the three agree, from the numbers; in
    `lang`."""
    src = ins.src_tokens
    avg = ins.cross[:, :, position].mean(dim=(0, 1))
    top = {m: int(np.argmax(np.asarray(v))) for m, v in zip(MEASURES, (avg, att.grad_src, att.occl_src))}
    lines = [f"- **{_t(lang, m)}** " + _t(lang, "ranks", token=f"`{md_literal(src[j])}`", position=j)
             for m, j in top.items()]
    verdict = ("same" if len(set(top.values())) == 1 else
               "disagree" if top["attention"] not in (top["gradient"], top["occlusion"]) else "one")
    return "\n".join(lines) + f"\n\n{_t(lang, 'verdict.' + verdict)}"


# ---- views --------------------------------------------------------------------------------------------

def tokens_view(ins):
    """The token menu for this translation, on its default token."""
    return gr.update(choices=token_choices(ins), value=default_position(ins))


def why_view(ins, position, lang="en"):
    T = len(ins.out_tokens)
    position = default_position(ins) if position is None else clamp(position, 0, T - 1)
    att = attribution(ins, position)
    return (source_figure(ins, att, position, lang), target_figure(ins, att, position, lang),
            reading(ins, att, position, lang))


def _blank_why(position=None, lang="en"):
    return empty_figure(not_yet(lang)), empty_figure(not_yet(lang)), ""


# the token menu (its choices are the output tokens, in no language) and the token's figures and reading, in the
# page's language
VIEWS = [View("why/tokens", ("why",), tokens_view, blank=(gr.update(choices=[], value=None),)),
         View("why/attribution", ("why",), why_view, outputs=3, uses=("position", "lang"), blank=_blank_why)]


def show(page, ins, position=None, lang="en"):
    """The tab's views for the page as it is (app/views.py); before a translation, the figures' placeholders in
    the page's language."""
    out = refresh(page, ins, VIEWS, dict(position=position, lang=lang))
    if ins is None and shown(page, VIEWS[1].where):
        out = (*out[:1], *_blank_why(position, lang))
    return out


# ---- layout and events -----------------------------------------------------------------------------

def build(page, state, lang):
    """Lay out the tab and wire its events; returns its controls and outputs for the translation event (app/ui.py)."""
    with gr.Tab(L("ui.tab.why"), id="why") as tab:
        gr.Markdown(L("ui.why.intro"))
        token = gr.Dropdown(choices=[], value=None, label=L("ui.why.token"), elem_id="why-token")
        src_fig = gr.Plot(empty_figure(NOT_YET), elem_id="why-source")
        tgt_fig = gr.Plot(empty_figure(NOT_YET), elem_id="why-target")
        note = gr.Markdown(elem_id="why-reading")
        gr.Markdown(L("ui.why.reading"))
        code_panel(None, attribute)
    outputs = [token, src_fig, tgt_fig, note]
    inputs = [page, state, token, lang]
    tab.select(opener(("why",), show), inputs, outputs, api_visibility="private", concurrency_id="model")
    token.change(show, inputs, outputs, api_visibility="private", concurrency_id="model")
    return tab_views(show, VIEWS, dict(position=token, lang=lang), outputs)
