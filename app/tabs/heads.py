"""The Heads tab: what each attention head is for, measured over the validation set (the head atlas,
assets/heads.json, written by `python -m core.analysis.heads`), and heads switched off live.

The atlas is drawn as one layer-by-head grid per kind of attention for the measure chosen; clicking a cell opens
that head in the Attention tab for the current sentence. Below it, any set of heads can be switched off and the
sentence translated again (core/instrument.py): the new translation beside the original, the changed tokens
marked, both sets of token probabilities, and the changed model's attention maps with the heads that were off
shown in grey. The figures are app/figures/heads.py's and app/figures/attention.py's.
"""
import functools
import html
import json
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

import gradio as gr

from core.analysis.heads import MEASURES, SAMPLE, Measuring, findings
from core.instrument import KINDS
from core.words import write

from .. import page as page_js
from ..common import clamp, empty_figure, fitted_plot, kind_choices, kind_name, md_literal
from ..figures.attention import attention_maps, head_grid
from ..figures.compare import model_name
from ..figures.heads import atlas_html, comparison_html, measure_key, pieces, prompt_html
from ..header import follow
from ..i18n import L, in_language, spoken, text, texts
from ..models import MODELS
from ..shared import chosen as chosen_model
from ..shared import get_translator, is_converted, is_shipped, model_dir, model_of
from ..views import Tab, View, by_component

_t = texts("heads")
KIND_CHOICES = kind_choices()


@dataclass(eq=False)  # compared by identity in the page record (app/views.py)
class Switched:
    """A translation made again with heads switched off, beside the one it repeats."""
    original: object  # the Inspection of the session's translation
    changed: object   # the Inspection with the heads off
    ms: float         # server time of the re-translation


# ---- the atlas ---------------------------------------------------------------------------------------

_MEASURED = {}  # an atlas measured here that could not be written beside its model (a read-only directory)
_RUNNING = {}  # "now": the measurement in flight on this server (core.analysis.heads.Measuring), one at a time
_SLOT = threading.Lock()  # guards _RUNNING's check-and-set
TICK_S = 1.0  # the status line's update while measuring: also how soon a Cancel or a closed page is heard
SAMPLE_MIN, SAMPLE_MAX = 4, 200  # the sentences a reader may ask the atlas be measured on (a Space's CPU: minutes)


@lru_cache(maxsize=1)
def load_atlas():
    """The model's atlas (a dict): its heads.json, else one measured on this server, else None."""
    path = model_dir() / "heads.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else _MEASURED.get("atlas")


def keep_atlas(atlas):
    """Keep a measured atlas: written beside the model (heads.json, as `python -m core.analysis.heads --model DIR`
    writes it), else in memory until the server stops. Returns whether it was written."""
    path = model_dir() / "heads.json"
    try:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(atlas, separators=(",", ":")) + "\n", encoding="utf-8")
        tmp.replace(path)
        written_out = True
    except OSError:
        _MEASURED["atlas"] = atlas
        written_out = False
    load_atlas.cache_clear()
    return written_out


def start_measuring(sample):
    """A measurement of the page's model over `sample` pairs started in a thread of its own at the lowest priority
    (core.analysis.heads.Measuring: a translation meanwhile takes the processors first, and runs in its own queue
    group), or None where one runs on this server already. Its atlas is kept as it ends (`kept` says where)."""
    with _SLOT:
        if _RUNNING.get("now") is not None:
            return None
        m = _RUNNING["now"] = Measuring(get_translator(), sample, on_end=_ended)
    return m.start()


def _ended(m):
    m.kept = keep_atlas(m.result) if m.result is not None else None
    with _SLOT:
        if _RUNNING.get("now") is m:
            _RUNNING["now"] = None


def _duration(seconds):
    seconds = max(1, round(seconds))
    return _t("measure.minutes", m=seconds // 60, s=seconds % 60) if seconds >= 60 else _t("measure.seconds", s=seconds)


def progress_line(m):
    """Where a measurement is, in the page's language: its stage and an estimate of the time left."""
    left = m.seconds_left()
    if left is None:
        return _t("measure.first", sentences=m.limit)
    return _t("measure.progress", sentences=m.limit, done=m.done, total=m.total, left=_duration(left))


def measure_heads(version, sample, progress=gr.Progress()):
    """The Measure button of a model with no atlas: every head switched off in turn over `sample` sentences (kept
    within SAMPLE_MIN..SAMPLE_MAX), one measurement at a time on the server. A generator: it yields {name: value}
    (the status line, the atlas' version: a new one redraws it, the Measure and Cancel buttons) once a TICK_S with
    the stage and the time left. Cancel, or the page closed, ends it at a yield, and the measurement with it."""
    keep, hidden = gr.skip(), gr.update(visible=False)
    if load_atlas() is not None:
        yield dict(status="", version=version + 1, button=keep, row=hidden, cancel=hidden)
        return
    m = start_measuring(clamp(sample, SAMPLE_MIN, SAMPLE_MAX))
    if m is None:
        yield dict(status=_t("measure.busy"), version=keep, button=keep, row=keep, cancel=hidden)
        return
    try:
        yield dict(status=progress_line(m), version=keep, button=gr.update(interactive=False), row=keep,
                   cancel=gr.update(visible=True))
        while not m.finished.wait(TICK_S):
            line = progress_line(m)
            if m.total:
                progress(m.done / m.total, desc=line)
            yield dict(status=line, version=keep, button=keep, row=keep, cancel=keep)
    finally:
        m.stop()  # Cancel or a closed page: Gradio closes the generator at its yield; a finished one: nothing
    yield _measured(m, version)


def _measured(m, version):
    """The last step of a measurement: what it found and where it is kept, or why it failed."""
    if m.result is None:
        error = m.error or RuntimeError(_t("measure.cancelled"))
        return dict(status=_t("measure.failed", error=md_literal(str(error) or type(error).__name__)),
                    version=gr.skip(), button=gr.update(interactive=True), row=gr.skip(), cancel=gr.update(visible=False))
    said = _t("measure.done", sentences=m.result["data"]["sentences"],
              seconds=f"{time.perf_counter() - m.started:.0f}")
    where = _t("measure.kept" if m.kept else "measure.memory", file="heads.json")
    return dict(status=f"{said} {where}", version=version + 1, button=gr.skip(), row=gr.update(visible=False),
                cancel=gr.update(visible=False))


def cancelled():
    """The Cancel button's own answer (the measurement's event is cancelled beside it, which stops it)."""
    if load_atlas() is not None:  # it ended before the click arrived
        return gr.skip(), gr.skip(), gr.update(visible=False)
    return _t("measure.cancelled"), gr.update(interactive=True), gr.update(visible=False)


def by_component_steps(fn, outputs):
    """A generator callback `fn` that yields {output name: value}, as Gradio takes it: {component: value}."""
    @functools.wraps(fn)
    def named(*args, **kwargs):
        for step in fn(*args, **kwargs):
            yield {outputs[name]: value for name, value in step.items()}
    return named


def measure_choices():
    """The measures as a menu's choices: their labels in each language, the pieces they name put in."""
    return [(L(measure_key(n), **pieces(measure_key(n))), n) for n in MEASURES]


# what the numbers say: the findings core.analysis.heads chooses from the atlas (keys and numbers), written in
# the page's language from the tables (the command line writes them in English from the same ones)

def findings_in(lang, atlas):
    """The clearest patterns of an atlas as sentences in `lang`."""
    return [write(finding, lambda key: text(lang, key)) for finding in findings(atlas)]


def reading_md(atlas, lang):
    """The clearest patterns of the atlas in `lang`, written from its numbers, as Markdown."""
    if atlas is None:
        return ""
    base = atlas["baseline"]
    # the shipped atlas is over the validation set; another model's, over the sentences it names (data)
    key = "ui.heads.reading.title" if atlas["data"].get("split", "val") == "val" and is_shipped() \
        else "ui.heads.reading.title-sample"
    head = text(lang, key, loss=f"{base['loss']:.3f}", bleu=f"{base['bleu']:.2f}",
                sentences=atlas["data"]["sentences"])
    return head + "\n\n" + "\n".join(f"- {md_literal(line)}" for line in findings_in(lang, atlas))


# ---- heads switched off -------------------------------------------------------------------------------

def head_choices(layers, heads):
    """(label, value) of every head, for the list of heads to switch off ("Cross-attention · layer 1 · head 3",
    in each language)."""
    return [(L(f"ui.heads.off.{k}", layer=lay, head=h), f"{k} {lay} {h}")
            for k in KINDS for lay in range(layers) for h in range(heads)]


def _triple(value, layers, heads):
    """A value of the list ("cross 1 3") as (kind, layer, head), or None where it is not a head of the model."""
    parts = str(value).split()
    if len(parts) != 3 or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]) \
            or int(parts[1]) >= layers or int(parts[2]) >= heads:
        return None
    return parts[0], int(parts[1]), int(parts[2])


def _sorted(triples):
    return sorted(set(triples), key=lambda t: (KINDS.index(t[0]), t[1], t[2]))


def parse_heads(values, layers, heads):
    """The triples of the list's values ("cross 1 3"); ValueError naming (in the event's language) the first
    that is not a head."""
    out = []
    for v in values or []:
        triple = _triple(v, layers, heads)
        if triple is None:
            raise ValueError(_t("not-a-head", value=repr(str(v)[:40])))
        out.append(triple)
    return _sorted(out)


def _values(triples):
    return [f"{k} {lay} {h}" for k, lay, h in triples]


def _chosen(values, cfg):
    """The heads of the list as triples, leaving out anything that is not a head of the model."""
    return [t for t in (_triple(v, cfg["N"], cfg["h"]) for v in values or []) if t is not None]


def add_head(current, kind, layer, head, model=None):
    """The list with one more head (of the header's `model`)."""
    cfg = chosen_model(model).config
    kind = kind if kind in KINDS else "cross"
    triple = (kind, clamp(layer, 0, cfg["N"] - 1), clamp(head, 0, cfg["h"] - 1))
    return _values(_sorted([*_chosen(current, cfg), triple]))


def all_but(current, kind, layer, head, model=None):
    """The list with every head of the layer switched off but the one chosen (which is kept on), of the header's
    `model`."""
    cfg = chosen_model(model).config
    kind = kind if kind in KINDS else "cross"
    layer, head = clamp(layer, 0, cfg["N"] - 1), clamp(head, 0, cfg["h"] - 1)
    heads = set(_chosen(current, cfg)) | {(kind, layer, h) for h in range(cfg["h"])}
    heads.discard((kind, layer, head))
    return _values(_sorted(heads))


def switch_off(ins, values):
    """Translate the session's sentence again, with its own decoding settings, with the chosen heads off.
    Returns {"status": a status line in Markdown, "switched": the Switched result to keep, or None}."""
    if ins is None:
        return dict(status=_t("status.no-translation"), switched=None)
    tr = model_of(ins)  # the translation's own model, with heads off
    try:
        heads_off = parse_heads(values, tr.config["N"], tr.config["h"])
    except ValueError as e:
        return dict(status=md_literal(str(e)), switched=None)
    if not heads_off:
        return dict(status=_t("status.none"), switched=None)
    t0 = time.perf_counter()
    changed = tr.inspect(ins.source, heads_off=heads_off, **ins.decoding)
    ms = (time.perf_counter() - t0) * 1e3
    n = len(heads_off)
    same = _t("status.same" if changed.translation == ins.translation else "status.different")
    return dict(status=_t(f"status.done.{'many' if n > 1 else 'one'}", count=n, result=same, ms=f"{ms:.0f}"),
                switched=Switched(ins, changed, ms))


def compare_view(ins, switched):
    if switched is None or switched.original is not ins:
        return prompt_html(text("ui.heads.run"))
    return comparison_html(switched.original, switched.changed)


def maps_view(ins, switched, map_kind, map_layer):
    """All heads of one layer of the changed model's attention, the switched-off heads in grey."""
    if switched is None or switched.original is not ins:
        return empty_figure(_t("maps.empty"), width=40)
    changed = switched.changed
    kind = map_kind if map_kind in KINDS else "cross"
    maps, q, k = attention_maps(changed, kind)
    layer = clamp(map_layer, 0, maps.size(0) - 1)
    title = _t("maps.title", kind=kind_name(kind, long=True), layer=layer)
    off = {h for kd, lay, h in changed.heads_off if kd == kind and lay == layer}
    return head_grid(maps[layer], q, k, html.escape(title, quote=False), off=off)


def atlas_view(measure, version, model=None):
    """The atlas for the measure chosen, and what its numbers say, in the page's language. `version`: how many
    times this session has measured the model (a new value draws the view again). The atlas is the page's own
    model's: where the header has another chosen (`model`), the reading says whose it is."""
    atlas = load_atlas()
    whose = "" if not model or model == MODELS.default else _t(
        "atlas-of", own=md_literal(model_name(MODELS.default)), chosen=md_literal(model_name(model))) + "\n\n"
    return dict(atlas=atlas_html(atlas, measure, is_converted(get_translator().config), SAMPLE),
                reading=whose + reading_md(atlas, spoken()))


# the views of the tab, each reading the controls named in `uses`: the atlas (no translation needed), and the
# translation made with heads off beside the session's, with its maps
WHERE = ("heads",)
VIEWS = [View("heads/atlas", WHERE, atlas_view, outputs=("atlas", "reading"), uses=("measure", "version", "model"),
              reads_translation=False),
         View("heads/compare", WHERE, compare_view, outputs=("compare",), uses=("switched",), blank=dict(compare="")),
         View("heads/maps", WHERE, maps_view, outputs=("maps",), uses=("switched", "map_kind", "map_layer"),
              blank=dict(maps=None))]

ATTENTION_CONTROLS = ("kind", "layer", "head")  # the Attention tab's controls a click sets


def open_head(evt: gr.SelectData, top, attn, model=None):
    """A click on an atlas cell: the Attention tab (`attn`, what its build returned, among the page's top-level
    tabs `top`) opened on that head's one-head view. Returns {component: value}: the tabs
    selected and the Attention tab's kind, layer and head; the event's `.then` asks that tab to draw."""
    cell = evt.value if isinstance(evt.value, dict) else {}
    cfg = chosen_model(model).config  # the Attention tab's menus are the header's model's
    kind = cell.get("kind") if cell.get("kind") in KINDS else "encoder"
    layer, head = clamp(cell.get("layer"), 0, cfg["N"] - 1), clamp(cell.get("head"), 0, cfg["h"] - 1)
    values = dict(kind=kind, layer=layer, head=head)
    return {top: gr.Tabs(selected=attn.where[-1]), attn.tabs: gr.Tabs(selected="one-head"),
            **{attn.controls[name]: values[name] for name in ATTENTION_CONTROLS}}


# ---- layout and events -----------------------------------------------------------------------------

def _switch_panel(cfg):
    """The controls that choose heads to switch off and the button that translates again."""
    gr.Markdown(L("ui.heads.switch-intro"))
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="cross", label=L("ui.heads.kind"), elem_id="off-kind")
        layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"), elem_id="off-layer")
        head = gr.Dropdown(list(range(cfg["h"])), value=0, label=L("ui.head"), elem_id="off-head")
    with gr.Row():
        add = gr.Button(L("ui.heads.add"), size="sm", elem_id="off-add")
        but = gr.Button(L("ui.heads.all-but"), size="sm", elem_id="off-all-but")
        clear = gr.Button(L("ui.heads.clear"), size="sm", elem_id="off-clear")
    chosen = gr.Dropdown(head_choices(cfg["N"], cfg["h"]), value=[], multiselect=True,
                         label=L("ui.heads.chosen"), elem_id="off-list")
    run = gr.Button(L("ui.heads.run"), variant="primary", elem_id="off-run")
    return kind, layer, head, add, but, clear, chosen, run


def _wire_switch(tab, kind, layer, head, add, but, clear, chosen, run, status):
    """The buttons that choose heads, and the one that translates again with them off, then shows the result."""
    for button, fn in ((add, add_head), (but, all_but)):
        button.click(fn, [chosen, kind, layer, head, tab.controls["model"]], chosen, api_visibility="private")
    clear.click(lambda: [], None, chosen, api_visibility="private")
    switched = tab.controls["switched"]
    run.click(by_component(in_language(switch_off), dict(status=status, switched=switched)), None, [status, switched],
              inputs_kwargs=dict(ins=tab.state, values=chosen, lang=tab.lang), concurrency_limit=1,
              concurrency_id="model", api_visibility="private", show_progress_on=[status])  # drawn as `switched` changes


def build(cfg, page, state, top, attn, lang, model=None):
    """Lay out the tab and wire its events. `top` are the page's top-level tabs and `attn` what the Attention
    tab's build returned (a click on the atlas opens a head there). Returns its Tab (app/views.py), whose views
    each new translation draws (see app/ui.py). `model`: the header's menu, whose model's layers and heads the
    menus of heads follow."""
    with gr.Tab(L("ui.tab.heads"), id="heads") as tab:
        switched = gr.State(None)  # inside the tab: a child of the Tabs that is no tab would upset their order
        measure = gr.Dropdown(measure_choices(), value="delta_loss", label=L("ui.heads.measure"),
                              elem_id="heads-measure")
        version = gr.State(0)  # this session's measurements of a model with no atlas (a new one redraws it)
        atlas = gr.HTML(elem_id="heads-atlas", js_on_load=page_js.on_load("heads-click"))  # a click selects a head
        # a model with no atlas is measured here, on the reader's request (never on the server's start)
        missing = load_atlas() is None
        with gr.Row(visible=missing) as measure_row:
            sample = gr.Slider(SAMPLE_MIN, SAMPLE_MAX, value=SAMPLE, step=1, label=L("ui.heads.sample"),
                               elem_id="heads-sample", min_width=240)
            measure_btn = gr.Button(L("ui.heads.measure-btn"), elem_id="heads-measure-btn", min_width=160)
            cancel_btn = gr.Button(L("ui.heads.cancel"), visible=False, elem_id="heads-measure-cancel", min_width=100)
        measured = gr.Markdown(elem_id="heads-measure-status")
        reading = gr.Markdown(elem_id="heads-reading")
        kind, layer, head, add, but, clear, chosen, run = _switch_panel(cfg)
        status = gr.Markdown(elem_id="off-status")
        compare = gr.HTML(elem_id="off-compare")
        with gr.Row():
            map_kind = gr.Radio(KIND_CHOICES, value="cross", label=L("ui.heads.maps-of"), elem_id="off-map-kind")
            map_layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"), elem_id="off-map-layer")
        maps = fitted_plot(elem_id="off-maps")
    model = gr.State(None) if model is None else model
    follow(model, [layer, head, chosen, map_layer],
           lambda c: [list(range(c["N"])), list(range(c["h"])), head_choices(c["N"], c["h"]), list(range(c["N"]))])
    controls = dict(measure=measure, map_kind=map_kind, map_layer=map_layer, switched=switched, version=version,
                    model=model)
    view = Tab(WHERE, VIEWS, controls, dict(atlas=atlas, reading=reading, compare=compare, maps=maps), page, lang,
               state).wire(tab)
    outs = dict(status=measured, version=version, button=measure_btn, row=measure_row, cancel=cancel_btn)
    measuring = measure_btn.click(
        by_component_steps(in_language(measure_heads), outs), None, list(outs.values()),
        inputs_kwargs=dict(version=version, sample=sample, lang=lang), concurrency_id="measure",
        concurrency_limit=1, api_visibility="private", show_progress_on=[measured])  # drawn as `version` changes
    cancel_btn.click(in_language(cancelled), None, [measured, measure_btn, cancel_btn], inputs_kwargs=dict(lang=lang),
                     cancels=[measuring], api_visibility="private")
    _wire_switch(view, kind, layer, head, add, but, clear, chosen, run, status)

    def open_head_clicked(evt: gr.SelectData, model=None):
        return open_head(evt, top, attn, model)
    # the controls and tabs set, then the Attention tab asked to draw (its listener reads them as they are then)
    atlas.select(open_head_clicked, None, [*(attn.controls[n] for n in ATTENTION_CONTROLS), top, attn.tabs],
                 inputs_kwargs=dict(model=model), api_visibility="private").then(**attn.redraw())
    return view
