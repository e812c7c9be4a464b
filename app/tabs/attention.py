"""The Attention tab: every head of the last translation, one at a time, a layer at a time, all at once, and
in bertviz's views.

All maps come from the Inspection kept in the session's state: changing kind, layer or head redraws from it
and never runs the model. The figures are app/figures/attention.py's, bertviz's views app/bertviz_views.py's.
"""
import gradio as gr

from core import model as core_model
from core.instrument import KINDS

from ..bertviz_views import frame_box, standalone_html, view_data
from ..common import clamp, code_panel, export_file, fitted_plot, kind_choices, kind_name
from ..exports import FILES_HIDDEN, attention_files, download, shown_files
from ..figures.attention import attention_heatmap, attention_maps, head_grid, layer_head_overview
from ..header import follow
from ..i18n import L, in_language, texts
from ..views import Tab, View

_t = texts("attention")


def _maps(ins, kind, layer=0, head=0):
    """The maps of `kind` with the layer and head kept in range, and the kind's name."""
    kind = kind if kind in KINDS else "encoder"
    maps, q, k = attention_maps(ins, kind)
    return (maps, q, k, clamp(layer, 0, maps.size(0) - 1), clamp(head, 0, maps.size(1) - 1),
            kind_name(kind, long=True))


def one_head(ins, kind, layer, head):
    maps, q, k, layer, head, name = _maps(ins, kind, layer, head)
    return attention_heatmap(maps[layer, head], q, k, _t("one-head", kind=name, layer=layer, head=head))


def all_heads(ins, kind, layer):
    maps, q, k, layer, _, name = _maps(ins, kind, layer)
    return head_grid(maps[layer], q, k, _t("all-heads", kind=name, layer=layer))


def layers_by_heads(ins, kind):
    maps, q, k, _, _, name = _maps(ins, kind)
    return layer_head_overview(maps, q, k, _t("layers-heads", kind=name))


def bertviz_head(ins):
    return view_data(ins)


def bertviz_model(ins):
    return view_data(ins)


# the views of the tab, one a sub-tab; each reads the controls named in `uses`
WHERE = ("attention",)
VIEWS = [View("attention/one-head", (*WHERE, "one-head"), one_head, outputs=("heatmap",),
              uses=("kind", "layer", "head"), blank=dict(heatmap=None)),
         View("attention/all-heads", (*WHERE, "all-heads"), all_heads, outputs=("head_grid",), uses=("kind", "layer"),
              blank=dict(head_grid=None)),
         View("attention/layers-heads", (*WHERE, "layers-heads"), layers_by_heads, outputs=("overview_grid",),
              uses=("kind",), blank=dict(overview_grid=None)),
         View("attention/bertviz-head", (*WHERE, "bertviz-head"), bertviz_head, outputs=("bertviz_head",),
              blank=dict(bertviz_head="")),
         View("attention/bertviz-model", (*WHERE, "bertviz-model"), bertviz_model, outputs=("bertviz_model",),
              blank=dict(bertviz_model="")),
         # a new translation hides the files of the last one: its button writes its own (numbers_files)
         View("attention/numbers", WHERE, lambda ins: FILES_HIDDEN, outputs=("numbers",),
              blank=dict(numbers=FILES_HIDDEN))]


def numbers_files(ins):
    """Every attention map of the translation, each kind, layer and head, as CSV and .npz (app/exports.py)."""
    return shown_files(None if ins is None else attention_files(ins))


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
    """The sub-tabs, one view each; returns their Tabs, the sub-tabs by id, the views' outputs by name and the
    downloads."""
    with gr.Tabs(overflow_behavior="wrap") as tabs:
        with gr.Tab(L("ui.attention.tab.one-head"), id="one-head") as one:
            heat = fitted_plot(elem_id="heatmap")
        with gr.Tab(L("ui.attention.tab.all-heads"), id="all-heads") as all_:
            grid = fitted_plot(elem_id="head-grid")
        with gr.Tab(L("ui.attention.tab.layers-heads"), id="layers-heads") as layers:
            overview = fitted_plot(elem_id="overview-grid")
        with gr.Tab(L("ui.attention.tab.bertviz-head"), id="bertviz-head") as bv_head_tab:
            gr.Markdown(L("ui.attention.bertviz-head"))
            bv_head = gr.HTML(elem_id="bertviz-head", **frame_box("head"))
            saves = [_save_html("head")]
        with gr.Tab(L("ui.attention.tab.bertviz-model"), id="bertviz-model") as bv_model_tab:
            bv_model = gr.HTML(elem_id="bertviz-model", **frame_box("model"))
            saves.append(_save_html("model"))
    subtabs = {"one-head": one, "all-heads": all_, "layers-heads": layers, "bertviz-head": bv_head_tab,
               "bertviz-model": bv_model_tab}
    outputs = dict(heatmap=heat, head_grid=grid, overview_grid=overview, bertviz_head=bv_head, bertviz_model=bv_model)
    return tabs, subtabs, outputs, saves


def _wire_saves(saves, state, lang):
    """Each bertviz sub-tab's download button: the view as a file (its Save SVG button in the page's language)."""
    for button, file, view in saves:
        def bertviz_file_of(ins, view=view):
            return bertviz_file(ins, view)
        button.click(in_language(bertviz_file_of), None, file, inputs_kwargs=dict(ins=state, lang=lang),
                     api_visibility="private")


def build(cfg, page, state, lang, model=None):
    """Lay out the tab and wire its events: opening the tab or one of its sub-tabs, and moving a control, draw
    the view on screen. Returns its Tab (app/views.py), whose views each new translation draws too (see
    app/ui.py); its `tabs` are the sub-tabs' gr.Tabs (the Heads tab opens a head here). The layer and head menus
    follow the header's `model` (the views clamp them to the translation's maps all the same)."""
    with gr.Tab(L("ui.tab.attention"), id="attention") as tab:
        with gr.Row():
            kind = gr.Radio(kind_choices(long=True), value="encoder", label=L("ui.attention.kind"),
                            elem_id="kind")
            layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"), elem_id="layer")
            head = gr.Dropdown(list(range(cfg["h"])), value=0, label=L("ui.head"), elem_id="head")
        tabs, subtabs, outputs, saves = _views()
        numbers_btn, numbers = download("ui.attention.numbers", "attention-numbers")
        code_panel(None, core_model.attention, core_model.MultiHeadedAttention)
    _wire_saves(saves, state, lang)
    follow(model, [layer, head], lambda c: [list(range(c["N"])), list(range(c["h"]))])
    numbers_btn.click(numbers_files, [state], numbers, api_visibility="private")
    outputs = dict(outputs, numbers=numbers)
    controls = dict(kind=kind, layer=layer, head=head)
    # each redraws when the reader moves it: a click in the Heads tab sets all three, and a change event of each
    # would carry the others' values from before (the kind set, the layer and head not yet), which could reach the
    # server last and be drawn over the head clicked; that click draws the view itself
    return Tab(WHERE, VIEWS, controls, outputs, page, lang, state, more=dict(tabs=tabs)).wire(
        tab, subtabs, by_hand=tuple(controls))
