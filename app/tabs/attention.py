"""The Attention tab: every head of the last translation, one at a time, a layer at a time, all at once, and
in bertviz's views.

All maps come from the Inspection kept in the session's state: changing kind, layer or head redraws from it
and never runs the model.
"""
import gradio as gr
import numpy as np
import plotly.graph_objects as go

from core import model as core_model
from core.headmask import KINDS

from ..bertviz_views import head_view_html, model_view_html, standalone_html
from ..common import clamp, code_panel, export_file, kind_choices, kind_name, label, panel_grid, wrap_title
from ..i18n import L, text
from ..views import View, control_changes, opener, refresh, tab_views

SCALE = "Blues"
DECIMALS = 3  # what a colour scale can show; a hover shows the same three decimals


def hover(lang="en"):
    """A cell's hover: the query and key positions, the weight, the panel's name; its words in `lang`."""
    query, key, weight = (text(lang, f"attention.{w}") for w in ("query", "key", "weight"))
    return f"{query} %{{y}} → {key} %{{x}}<br>{weight} %{{z:.3f}}<extra>%{{fullData.name}}</extra>"


def rounded(weights):
    """Attention weights as a float32 array rounded to 3 decimals: plotly sends numpy arrays to the browser as
    typed arrays (4 bytes a weight), and the rounding is all a colour can show."""
    return np.round(weights.detach().float().cpu().numpy(), DECIMALS)


def positions(tokens):
    """One axis category per position, named by position and token ("3 ▁Hunde"): repeated tokens stay apart,
    and a hover names both without a label per cell."""
    return [f"{i} {label(t)}" for i, t in enumerate(tokens)]


def _axis(tokens=None, **kw):
    """A category axis; labelled with the tokens where they are given, else without tick labels."""
    if tokens is None:
        return dict(type="category", showticklabels=False, **kw)
    return dict(type="category", tickmode="array", tickvals=positions(tokens), ticktext=[label(t) for t in tokens],
                automargin=False, **kw)


def _heatmap(weights, q_tokens, k_tokens, name, lang="en", **kw):
    """A heatmap trace as a dict: plotly validates a figure built of dicts once, in go.Figure."""
    return dict(type="heatmap", z=rounded(weights), x=positions(k_tokens), y=positions(q_tokens), zmin=0, zmax=1,
                colorscale=SCALE, name=name, hovertemplate=hover(lang), **kw)


def attention_heatmap(weights, q_tokens, k_tokens, title="", lang="en"):
    """One head: weights (Tq, Tk), rows are the attending (query) tokens, columns the attended keys; its words in
    `lang`."""
    fig = go.Figure([_heatmap(weights, q_tokens, k_tokens, "", lang,
                              colorbar=dict(title=dict(text=text(lang, "attention.weight"), side="right")))])
    fig.update_layout(title=wrap_title(title), height=max(340, 170 + 26 * len(q_tokens)), margin=dict(l=110, r=10, t=60, b=110),
                      xaxis=_axis(k_tokens, tickangle=-90), yaxis=_axis(q_tokens, autorange="reversed"))
    return fig


def small_multiples(maps, q_tokens, k_tokens, names, cols, title, height, gap=(0.03, 0.08), notes=None, lang="en"):
    """Heatmaps of maps (n, Tq, Tk) in a grid of `cols` columns sharing one colour scale, each named by `names`
    (in its hover, and above it unless other `notes` label the grid)."""
    panels = [([_heatmap(m, q_tokens, k_tokens, name, lang, showscale=i == 0)], name, _axis(),
               _axis(autorange="reversed")) for i, (m, name) in enumerate(zip(maps, names))]
    return panel_grid(panels, cols, wrap_title(title), height, gap, notes, margin=dict(l=10, r=40, t=90, b=10))


def head_grid(maps, q_tokens, k_tokens, title="", cols=4, lang="en"):
    """All heads of one layer: maps (H, Tq, Tk) as small heatmaps sharing one colour scale, named in `lang`."""
    rows = (maps.size(0) + cols - 1) // cols
    names = [text(lang, "attention.head", head=h) for h in range(maps.size(0))]
    return small_multiples(maps, q_tokens, k_tokens, names, cols, title, height=70 + 230 * rows, lang=lang)


def layer_head_overview(maps, q_tokens, k_tokens, title="", lang="en"):
    """Every layer (rows) by every head (columns) as small multiples: maps (L, H, Tq, Tk), named in `lang`."""
    L, H = maps.shape[:2]
    names = [text(lang, "attention.layer-head", layer=l, head=h) for l in range(L) for h in range(H)]
    notes = ([dict(text=text(lang, "attention.head", head=h), x=(h + 0.5) / H, y=1, yanchor="bottom")
              for h in range(H)] +
             [dict(text=text(lang, "attention.layer", layer=l), x=1, y=1 - (l + 0.5) / L, xanchor="left", textangle=90)
              for l in range(L)])
    return small_multiples(maps.flatten(0, 1), q_tokens, k_tokens, names, H, title, height=60 + 120 * L,
                           gap=(0.01, 0.03), notes=notes, lang=lang)


def attention_maps(ins, kind):
    """(maps (L, H, Tq, Tk), query tokens, key tokens) of one kind of attention of an Inspection."""
    maps = getattr(ins, kind)
    q = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    k = ins.tgt_tokens if kind == "decoder" else ins.src_tokens
    return maps, q, k


# ---- callbacks -------------------------------------------------------------------------------------

def _maps(ins, kind, layer=0, head=0, lang="en"):
    """The maps of `kind` with the layer and head kept in range, and the kind's name in `lang`."""
    kind = kind if kind in KINDS else "encoder"
    maps, q, k = attention_maps(ins, kind)
    return (maps, q, k, clamp(layer, 0, maps.size(0) - 1), clamp(head, 0, maps.size(1) - 1),
            kind_name(kind, lang, long=True))


def one_head(ins, kind, layer, head, lang="en"):
    maps, q, k, layer, head, name = _maps(ins, kind, layer, head, lang)
    return attention_heatmap(maps[layer, head], q, k,
                             text(lang, "attention.one-head", kind=name, layer=layer, head=head), lang)


def all_heads(ins, kind, layer, lang="en"):
    maps, q, k, layer, _, name = _maps(ins, kind, layer, lang=lang)
    return head_grid(maps[layer], q, k, text(lang, "attention.all-heads", kind=name, layer=layer), lang=lang)


def layers_by_heads(ins, kind, lang="en"):
    maps, q, k, _, _, name = _maps(ins, kind, lang=lang)
    return layer_head_overview(maps, q, k, text(lang, "attention.layers-heads", kind=name), lang)


# the views of the tab, in the order of its outputs; each reads the controls named in `uses` (the language last)
VIEWS = [View("attention/one-head", ("attention", "one-head"), one_head, uses=("kind", "layer", "head", "lang"),
              blank=(None,)),
         View("attention/all-heads", ("attention", "all-heads"), all_heads, uses=("kind", "layer", "lang"),
              blank=(None,)),
         View("attention/layers-heads", ("attention", "layers-heads"), layers_by_heads, uses=("kind", "lang"),
              blank=(None,)),
         View("attention/bertviz-head", ("attention", "bertviz-head"), lambda ins, lang="en": head_view_html(ins, lang),
              uses=("lang",), blank=("",)),
         View("attention/bertviz-model", ("attention", "bertviz-model"),
              lambda ins, lang="en": model_view_html(ins, lang), uses=("lang",), blank=("",))]


def show(page, ins, kind="encoder", layer=0, head=0, lang="en"):
    """The tab's views for the page as it is (app/views.py): what is on screen drawn, the rest left or cleared."""
    return refresh(page, ins, VIEWS, dict(kind=kind, layer=layer, head=head, lang=lang))


# ---- layout and events -----------------------------------------------------------------------------

def bertviz_file(ins, view):
    """A bertviz view of the last translation as a self-contained HTML file to download."""
    if ins is None:
        return gr.update(value=None, visible=False)
    return gr.update(value=export_file(standalone_html(ins, view), f"bertviz-{view}-view", ".html"), visible=True)


def _save_html(view):
    """A bertviz sub-tab's download: its button, its file, and the view it saves."""
    with gr.Row():
        button = gr.Button(L("ui.attention.save"), size="sm", elem_id=f"bertviz-{view}-save")
        file = gr.File(visible=False, interactive=False, elem_id=f"bertviz-{view}-file", label=L("ui.attention.save-file"))
    return button, file, view


def _views():
    """The sub-tabs, one view each; returns their Tabs, the sub-tabs by id and the views' outputs in the order of
    VIEWS."""
    with gr.Tabs(overflow_behavior="wrap") as tabs:
        with gr.Tab(L("ui.attention.tab.one-head"), id="one-head") as one:
            heat = gr.Plot(elem_id="heatmap")
        with gr.Tab(L("ui.attention.tab.all-heads"), id="all-heads") as all_:
            grid = gr.Plot(elem_id="head-grid")
        with gr.Tab(L("ui.attention.tab.layers-heads"), id="layers-heads") as layers:
            overview = gr.Plot(elem_id="overview-grid")
        with gr.Tab(L("ui.attention.tab.bertviz-head"), id="bertviz-head") as bv_head_tab:
            gr.Markdown(L("ui.attention.bertviz-head"))
            bv_head = gr.HTML(elem_id="bertviz-head")
            saves = [_save_html("head")]
        with gr.Tab(L("ui.attention.tab.bertviz-model"), id="bertviz-model") as bv_model_tab:
            bv_model = gr.HTML(elem_id="bertviz-model")
            saves.append(_save_html("model"))
    subtabs = {"one-head": one, "all-heads": all_, "layers-heads": layers, "bertviz-head": bv_head_tab,
               "bertviz-model": bv_model_tab}
    return tabs, subtabs, [heat, grid, overview, bv_head, bv_model], saves


def build(cfg, page, state, lang):
    """Lay out the tab and wire its events: opening the tab or one of its sub-tabs, and moving a control, draw
    the view on screen. Returns the controls and outputs of `show`, which each new translation runs too (see
    app/ui.py), and the sub-tabs (the Heads tab opens a head here)."""
    with gr.Tab(L("ui.tab.attention"), id="attention") as tab:
        with gr.Row():
            kind = gr.Radio(kind_choices(long=True), value="encoder", label=L("ui.attention.kind"),
                            elem_id="kind")
            layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"), elem_id="layer")
            head = gr.Dropdown(list(range(cfg["h"])), value=0, label=L("ui.head"), elem_id="head")
        tabs, subtabs, outputs, saves = _views()
        code_panel(None, core_model.attention, core_model.MultiHeadedAttention)
    controls = dict(kind=kind, layer=layer, head=head, lang=lang)
    inputs = [page, state, *controls.values()]
    tab.select(opener(("attention",), show), inputs, outputs, api_visibility="private")
    for sub, subtab in subtabs.items():
        subtab.select(opener(("attention", sub), show), inputs, outputs, api_visibility="private")
    gr.on(control_changes(controls), show, inputs, outputs, api_visibility="private")
    for button, file, view in saves:
        button.click(lambda ins, view=view: bertviz_file(ins, view), [state], file, api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs, tabs=tabs)
