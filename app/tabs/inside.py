"""The Inside-the-model tab: the shipped model's modules and weights, and what its layers do to the sentence of
the last translation (LayerNorm, the 1/sqrt(d_k) scale, the residual stream, the feed-forward units, the logit
lens).

The views of the sentence read one teacher-forced pass of the float32 model over the Inspection's source and
decoder inputs (app/recording.py), recorded the first time a view needs it and kept per Inspection: moving a
control redraws from that recording and never runs the model. Its figures are app/figures/inside.py's.
"""
import inspect
import json
import math
import textwrap
from functools import lru_cache

import gradio as gr
import torch

from core.analysis import inside as core
from core.checkpoint import model_from_config
from core.instrument import KINDS, run_with_cache
from core.model import LayerNorm, attention

from .. import page as page_js
from ..cache import per_language
from ..common import clamp, code_panel, fitted_plot, kind_choices, kind_name, label, md_literal
from ..figures.inside import (
    distribution_figure,
    ffn_figures,
    forms_figure,
    is_post_norm,
    layernorm_figure,
    lens_figure,
    ln_params_figure,
    ln_vectors,
    model_summary,
    norm_label,
    norm_place,
    norm_side,
    residual_figure,
    root_name,
    say,
    scale_data,
    scale_figure,
    stage_label,
    sweep_figure,
    tree_html,
    treemap_figure,
    weight_figure,
)
from ..header import follow
from ..i18n import DEFAULT, L, in_language, table, text
from ..models import MODELS
from ..recording import derived, recorded
from ..shared import chosen, get_translator, model_of
from ..views import Tab, View

WAIT = L("ui.inside.wait")  # shown, in the page's language, until there is a translation
FIRST_MODULE = "encoder.layers.0.feed_forward.w_1"


# ---- the modules ------------------------------------------------------------------------------------

@lru_cache(maxsize=8)
def tree_nodes(model=None):
    """The module tree (core.analysis.inside.module_tree), by path, of the model the header chose (`model`: its name;
    the page's own by default)."""
    return {n.name: n for n in core.module_tree(chosen(model).model)}


@per_language()
def modules_view(model=None):
    """The tree, the treemap, and the model's configuration with what tying saves (drawn once per language and
    model: the header's `model`)."""
    tr = chosen(model)
    nodes = list(tree_nodes(model).values())
    return dict(tree=tree_html(nodes, nodes[0].params), treemap=treemap_figure(nodes, nodes[0].params),
                summary=model_summary(tr.model, tr.config, nodes))


def module_view(module, model=None):
    """The selected module of the header's `model`: what it is, its source (read from its class now), its weights
    and their spread."""
    return _module_view(module if module in tree_nodes(model) else FIRST_MODULE, model)


@per_language(maxsize=64)
def _module_view(path, name=None):
    model = chosen(name).model
    module = dict(model.named_modules(remove_duplicate=False))[path]
    node = tree_nodes(name)[path]
    total = sum(p.numel() for p in model.parameters())
    own = say("sep").join(f"`{p}` {tuple(s)} = {n:,}" + (say("module.tied", target=t) if t else "")
                          for p, s, n, t in node.own) or say("module.none")
    about = say("module.about", path=path or root_name(), cls=node.cls, params=f"{node.params:,}",
                share=f"{node.params / total:.2%}", total=f"{total:,}", own=own)
    cls = type(module)
    try:
        if cls.__module__.split(".")[0] == "core":
            source = inspect.getsource(cls)
        else:  # PyTorch's own layer: its forward, which says what it computes, without a page of its docstring
            source = (f"# {say('module.torch', cls=f'{cls.__module__}.{cls.__qualname__}')}\n"
                      + textwrap.dedent(inspect.getsource(cls.forward)))
    except (OSError, TypeError):
        source = "# " + say("module.no_source", cls=cls.__qualname__)
    return dict(detail=about, source=source, weights=weight_figure(path, module),
                dist=distribution_figure(path, module))


# ---- LayerNorm -------------------------------------------------------------------------------------

def norm_choices(model):
    """The LayerNorm menu: each LayerNorm's place in both languages, by path."""
    post = is_post_norm(model)
    return [(L(key, **values), p) for p in core.layer_norms(model) for key, values in (norm_place(p, post),)]


def norm_menus():
    """The LayerNorm menu's choices for each model this server can open ({name: choices}, app.models.MODELS), made
    as the page is built: a label written in both languages reaches the browser only then. A model's LayerNorms
    are read off its modules built from its config.json without weights (torch's meta device), once per config (a
    run's points share their model's); a model whose config cannot be read has none here."""
    made, menus = {}, {}
    for name in MODELS.names():
        config = MODELS.config(name)
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in made:
            try:
                with torch.device("meta"):
                    made[key] = norm_choices(model_from_config(config, init=False))
            except Exception:  # noqa: BLE001 (a config that makes no model: the model's own load says why)
                made[key] = None
        menus[name] = made[key]
    return {name: choices for name, choices in menus.items() if choices}


def following_norms(menus):
    """The event that sets the LayerNorm menu for a new translation, given every model's choices (norm_menus)."""
    def norm_menu(ins, norm):
        """The LayerNorm menu for translation `ins`: the LayerNorms of the model that made it (for a model not among
        `menus`, named in the event's language), the one chosen kept where that model has it."""
        options = menus.get(getattr(ins, "model", "") or MODELS.default)
        if options is None:
            model = model_of(ins).model
            options = [(norm_label(p, is_post_norm(model)), p) for p in core.layer_norms(model)]
        paths = [p for _, p in options]
        return gr.update(choices=options, value=norm if norm in paths else paths[0])
    return norm_menu


def layernorm_view(ins, norm, token, gain, bias):
    """One token's vector through one LayerNorm (chosen by path and position), the sliders' gain and bias,
    and the Annotated Transformer's form on the same vector and through the whole model (the one that made it)."""
    model = model_of(ins).model
    norms = core.layer_norms(model)
    path = norm if norm in norms else next(iter(norms))
    rec, ln = recorded(ins), norms[path]
    tokens = ins.src_tokens if norm_side(path) == "encoder" else ins.tgt_tokens
    pos = clamp(token, 0, len(tokens) - 1)
    g, b = clamp(gain, 0.0, 1.0, float), clamp(bias, 0.0, 1.0, float)
    x = rec.norms[path][0][pos]
    v = ln_vectors(x, ln.a_2.detach().float(), ln.b_2.detach().float(), ln.eps, g, b)
    place = norm_label(path, is_post_norm(model))
    where = say("ln.where", place=place, pos=pos, token=label(tokens[pos]))  # plotly text: the token escaped
    fig = layernorm_figure(v, say("ln.title", where=where, gain=f"{g:.2f}", bias=f"{b:.2f}"))
    delta, changed = derived(ins, "annotated", core.annotated_norm_effect)
    n = x.numel()
    forms = forms_figure(v, say("ln.forms", largest=f"{float((v['annotated'] - v['output']).abs().max()):.2e}"))
    note = (say("ln.note", place=md_literal(place), pos=pos, token=md_literal(tokens[pos]),
                mean=f"{float(v['mean']):.3f}", sigma=f"{float(v['sigma']):.3f}", gain=f"{g:.2f}", bias=f"{b:.2f}",
                gap=f"{float((v['moved'] - x).abs().max()):.2e}") + "\n\n"
            + say("ln.forms_note", factor=f"{math.sqrt(n / (n - 1)):.5f}", n=n, norms=len(norms),
                  delta=f"{delta:.3f}", changed=len(changed), positions=len(ins.tgt_tokens)))
    return dict(ln=fig, ln_forms=forms, ln_note=note)


@per_language()
def ln_params_view(model=None):
    """Every LayerNorm's trained gain and bias, of the header's `model` (no sentence needed; drawn once per language
    and model)."""
    model = chosen(model).model
    return ln_params_figure(core.layer_norms(model), is_post_norm(model))


# ---- why 1/sqrt(d_k) ---------------------------------------------------------------------------------

@per_language()
def sweep_view():
    """The same statistics for random unit-variance queries and keys (16 keys) as d_k grows from 4 to 512."""
    return sweep_figure(core.random_scale_sweep())


def scale_view(ins, kind, layer, head):
    """The 1/sqrt(d_k) scale on the trained model's own queries and keys for this sentence."""
    kind = kind if kind in KINDS else "encoder"
    rec = recorded(ins)
    layers, heads = rec.q[kind].shape[:2]
    layer, head = clamp(layer, 0, layers - 1), clamp(head, 0, heads - 1)
    d = scale_data(rec, kind, layer, head)
    q_tokens = ins.src_tokens if kind == "encoder" else ins.tgt_tokens
    title = say("scale.title", kind=kind_name(kind, long=True), layer=layer, head=head, dk=d["dk"])
    fig = scale_figure(d, q_tokens, title)
    p, ps = d["plain"], d["scaled"]
    std = d["raw"][d["mask"]].std()
    note = say("scale.note", std=f"{float(std):.2f}", std_scaled=f"{float(std / math.sqrt(d['dk'])):.2f}",
               top=f"{float(p[1].mean()):.2f}", top_scaled=f"{float(ps[1].mean()):.2f}",
               entropy=f"{float(p[2].mean()):.2f}", entropy_scaled=f"{float(ps[2].mean()):.2f}",
               grad=f"{float(p[3].mean()):.3f}", grad_scaled=f"{float(ps[3].mean()):.3f}")
    return dict(scale=fig, scale_note=note)


# ---- residual stream, feed-forward, logit lens ------------------------------------------------------

def residual_view(ins):
    rec = recorded(ins)
    norms, change = core.stream_norms(rec, "decoder")
    big = int(change.mean(-1).argmax())
    note = say("res.note", stage=md_literal(stage_label(rec.stages["decoder"][big + 1])),
               change=f"{float(change[big].mean()):.2f}")
    return dict(residual=residual_figure(rec, ins), res_note=note)


def ffn_choices(n_layers):
    """The feed-forward layer menu: "encoder layer 0", ... in both languages, as "encoder/0", ..."""
    return [(L(f"ui.inside.layer.{side}", layer=i), f"{side}/{i}") for side in ("encoder", "decoder")
            for i in range(n_layers)]


def ffn_view(ins, ffn):
    rec = recorded(ins)
    side, _, layer = str(ffn).partition("/")
    side = side if side in ("encoder", "decoder") else "encoder"
    layer = clamp(layer, 0, rec.ffn[side].size(0) - 1)
    firing, units, fires = ffn_figures(rec, ins, side, layer)
    on = (rec.ffn[side][layer] > 0).float().sum(-1)
    d_ff = rec.ffn[side].size(-1)
    note = say("ffn.note", where=text(f"ui.inside.layer.{side}", layer=layer),
               mean=f"{float(on.mean()):.0f}", d_ff=d_ff, share=f"{float(on.mean()) / d_ff:.0%}",
               all=int((fires == on.numel()).sum()), none=int((fires == 0).sum()))
    return dict(firing=firing, units=units, ffn_note=note)


def lens_view(ins):
    top_i, top_p, p_chosen = derived(ins, "lens", core.logit_lens)
    piece = model_of(ins).tokenizer.id_to_piece
    agree = sum(piece(i) == t for i, t in zip(top_i[-1].tolist(), ins.out_tokens))
    note = say("lens.note", agree=agree, positions=len(ins.out_tokens))
    return dict(lens=lens_figure(top_i, top_p, p_chosen, ins, piece), lens_note=note)


# the views of the tab, each in its sub-tab, reading the controls named in `uses`; those of the sentence are
# cleared to their first values (the note: a wait in the page's language) once they show an earlier translation
def _where(sub):
    return ("inside", sub)


VIEWS = [View("inside/modules", _where("modules"), modules_view, outputs=("tree", "treemap", "summary"),
              uses=("model",), reads_translation=False),
         View("inside/module", _where("modules"), module_view, outputs=("detail", "source", "weights", "dist"),
              uses=("module", "model"), reads_translation=False),
         View("inside/layernorm", _where("layernorm"), layernorm_view, outputs=("ln", "ln_forms", "ln_note"),
              uses=("norm", "token", "gain", "bias"), blank=dict(ln=None, ln_forms=None, ln_note=WAIT)),
         View("inside/ln-params", _where("layernorm"), ln_params_view, outputs=("ln_params",), uses=("model",),
              reads_translation=False),
         View("inside/scale", _where("scale"), scale_view, outputs=("scale", "scale_note"),
              uses=("kind", "layer", "head"), blank=dict(scale=None, scale_note=WAIT)),
         View("inside/sweep", _where("scale"), sweep_view, outputs=("sweep",), reads_translation=False),
         View("inside/residual", _where("residual"), residual_view, outputs=("residual", "res_note"),
              blank=dict(residual=None, res_note=WAIT)),
         View("inside/ffn", _where("ffn"), ffn_view, outputs=("firing", "units", "ffn_note"), uses=("ffn",),
              blank=dict(firing=None, units=None, ffn_note=WAIT)),
         View("inside/lens", _where("lens"), lens_view, outputs=("lens", "lens_note"),
              blank=dict(lens=None, lens_note=WAIT))]

# the controls' first values, by name
DEFAULTS = {"module": FIRST_MODULE, "norm": "encoder.layers.0.sublayer.0.norm", "token": 1, "gain": 0.0, "bias": 0.0,
            "kind": "encoder", "layer": 0, "head": 0, "ffn": "encoder/0", "model": None}


# ---- layout and events -----------------------------------------------------------------------------

def picked(evt: gr.SelectData):
    """The module clicked in the tree (a path the dropdown lists; else the first one)."""
    return evt.value if isinstance(evt.value, str) else FIRST_MODULE


def module_label(name):
    """A module's name in the menu: its path in the code, the model's five parts glossed in the page's language
    ("encoder（编码器）"), the root named "model"."""
    if not name:
        return L("ui.inside.root")
    return L(f"ui.inside.part.{name}") if f"ui.inside.part.{name}" in table(DEFAULT) else name


def _modules_tab(model):
    with gr.Tab(L("ui.inside.tab.modules"), id="modules") as tab:
        summary = gr.Markdown(elem_id="in-summary")
        with gr.Row():
            with gr.Column(scale=1):
                tree = gr.HTML(js_on_load=page_js.on_load("inside-tree"), css_template=page_js.css("inside-tree"),
                               elem_id="in-tree")
            treemap = fitted_plot(elem_id="in-treemap", scale=1)
        names = [n for n, _ in model.named_modules(remove_duplicate=False)]
        module = gr.Dropdown([(module_label(n), n) for n in names], value=DEFAULTS["module"],
                             label=L("ui.inside.module"), elem_id="in-module")
        detail = gr.Markdown(elem_id="in-detail")
        with gr.Row():
            weights = fitted_plot(elem_id="in-weights")
            dist = fitted_plot(elem_id="in-dist")
        source = gr.Code(language="python", label=L("ui.inside.source"), max_lines=40)
    tree.select(picked, None, module, api_visibility="private")
    return tab, module, dict(tree=tree, treemap=treemap, summary=summary, detail=detail, source=source,
                             weights=weights, dist=dist)


def _layernorm_tab(model):
    with gr.Tab(L("ui.inside.tab.layernorm"), id="layernorm") as tab:
        with gr.Row():
            ln = gr.Dropdown(norm_choices(model), label=L("ui.inside.norm"),
                             value=DEFAULTS["norm"], elem_id="in-ln")
            token = gr.Slider(0, 127, value=DEFAULTS["token"], step=1,
                              label=L("ui.inside.token"), elem_id="in-token")
        with gr.Row():
            gain = gr.Slider(0, 1, value=DEFAULTS["gain"], step=0.05,
                             label=L("ui.inside.gain"), elem_id="in-gain")
            bias = gr.Slider(0, 1, value=DEFAULTS["bias"], step=0.05,
                             label=L("ui.inside.bias"), elem_id="in-bias")
        note = gr.Markdown(WAIT, elem_id="in-ln-note")
        fig = fitted_plot(elem_id="in-ln")
        forms = fitted_plot(elem_id="in-ln-forms")
        params = fitted_plot(elem_id="in-ln-params")
    return tab, dict(norm=ln, token=token, gain=gain, bias=bias), dict(ln=fig, ln_forms=forms, ln_note=note,
                                                                       ln_params=params)


def _scale_tab(cfg):
    with gr.Tab(L("ui.inside.tab.scale"), id="scale") as tab:
        with gr.Row():
            kind = gr.Radio(kind_choices(long=True), value=DEFAULTS["kind"], label=L("ui.inside.attention"),
                            elem_id="in-kind")
            layer = gr.Dropdown(list(range(cfg["N"])), value=DEFAULTS["layer"], label=L("ui.layer"), elem_id="in-layer")
            head = gr.Dropdown(list(range(cfg["h"])), value=DEFAULTS["head"], label=L("ui.head"), elem_id="in-head")
        note = gr.Markdown(WAIT, elem_id="in-scale-note")
        fig = fitted_plot(elem_id="in-scale")
        sweep = fitted_plot(elem_id="in-sweep")
    return tab, dict(kind=kind, layer=layer, head=head), dict(scale=fig, scale_note=note, sweep=sweep)


def _stream_tabs(cfg):
    with gr.Tab(L("ui.inside.tab.residual"), id="residual") as residual:
        res_note = gr.Markdown(WAIT, elem_id="in-res-note")
        res = fitted_plot(elem_id="in-residual")
    with gr.Tab(L("ui.inside.tab.ffn"), id="ffn") as ffn:
        which = gr.Dropdown(ffn_choices(cfg["N"]), value=DEFAULTS["ffn"], label=L("ui.layer"), elem_id="in-ffn-layer")
        ffn_note = gr.Markdown(WAIT, elem_id="in-ffn-note")
        firing = fitted_plot(elem_id="in-ffn")
        units = fitted_plot(elem_id="in-units")
    with gr.Tab(L("ui.inside.tab.lens"), id="lens") as lens:
        lens_note = gr.Markdown(WAIT, elem_id="in-lens-note")
        lens_fig = fitted_plot(elem_id="in-lens")
    return {"residual": residual, "ffn": ffn, "lens": lens}, which, \
        dict(residual=res, res_note=res_note, firing=firing, units=units, ffn_note=ffn_note, lens=lens_fig,
             lens_note=lens_note)


def module_menu(model, module):
    """The module menu for the header's new `model`: its modules (a run's points share them; a converted model
    has others), the one chosen kept where it has it."""
    names = [n for n, _ in chosen(model).model.named_modules(remove_duplicate=False)]
    return gr.update(choices=[(module_label(n), n) for n in names], value=module if module in names else FIRST_MODULE)


def build(cfg, page, state, lang, model=None):
    """Lay out the tab and wire its events: opening the tab or a sub-tab, and moving a control, draw the views
    on screen. Returns its Tab (app/views.py), whose views each new translation draws (see app/ui.py). The module
    tree and the LayerNorms' gains are of the model the header chose (`model`, the menu), whose modules, layers and
    heads the menus follow; the LayerNorm menu follows the model of the translation (app.shared.model_of), whose
    pass its view draws."""
    own = get_translator().model
    with gr.Tab(L("ui.tab.inside"), id="inside") as tab:
        gr.Markdown(L("ui.inside.intro"))
        with gr.Tabs(overflow_behavior="wrap"):
            modules_tab, module, mod_out = _modules_tab(own)
            ln_tab, ln_controls, ln_out = _layernorm_tab(own)
            scale_tab, scale_controls, scale_out = _scale_tab(cfg)
            subtabs, which, stream_out = _stream_tabs(cfg)
        code_panel(L("ui.inside.code"), LayerNorm, attention, run_with_cache, core.logit_lens)
        menu = gr.State(None) if model is None else model
    subtabs.update(modules=modules_tab, layernorm=ln_tab, scale=scale_tab)
    follow(model, [scale_controls["layer"], scale_controls["head"], which],
           lambda c: [list(range(c["N"])), list(range(c["h"])), ffn_choices(c["N"])])
    if model is not None:
        model.change(module_menu, [model, module], module, api_visibility="private", show_progress="hidden")
    # the LayerNorm menu follows the translation it draws (a model of other layers, or post-norm: a converted one)
    gr.on([state.change], in_language(following_norms(norm_menus())), None, ln_controls["norm"],
          inputs_kwargs=dict(ins=state, norm=ln_controls["norm"], lang=lang), api_visibility="private",
          show_progress="hidden")
    controls = dict(module=module, **ln_controls, **scale_controls, ffn=which, model=menu)
    outputs = {**mod_out, **ln_out, **scale_out, **stream_out}
    # opening a sub-tab may record the sentence's pass: these events queue with the translations (app/ui.py). The
    # LayerNorm menu redraws when the reader moves it: its view falls back on the model's first LayerNorm as the
    # menu does, so its new choices need no second drawing
    return Tab(("inside",), VIEWS, controls, outputs, page, lang, state).wire(
        tab, subtabs, by_hand=("norm",), concurrency_limit=1, concurrency_id="model")
