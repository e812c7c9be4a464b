"""The Heads tab: what each attention head is for, measured over the validation set (the head atlas,
assets/heads.json, written by `python -m core.analysis.heads`), and heads switched off live.

The atlas is drawn as one layer-by-head grid per kind of attention for the measure chosen; clicking a cell opens
that head in the Attention tab for the current sentence. Below it, any set of heads can be switched off and the
sentence translated again (core/headmask.py): the new translation beside the original, the changed tokens
marked, both sets of token probabilities, and the changed model's attention maps with the heads that were off
shown in grey.
"""
import difflib
import html
import json
import time
from dataclasses import dataclass
from functools import lru_cache

import gradio as gr

from core.analysis.heads import MEASURES, PIECES, findings
from core.headmask import KINDS
from core.words import write

from ..common import clamp, empty_figure, kind_choices, kind_name, md_literal, token_strip
from ..i18n import LANGS, L, fields, table, text, written
from ..shared import MODEL_LOCK, get_translator, model_dir
from ..views import View, open_tab, opener, refresh, tab_views
from . import attention
from .translate import token_legend

KIND_CHOICES = kind_choices()
CELL_W, CELL_H = 44, 28
OFF_SCALE = [[0, "#f4f4f4"], [1, "#6b6b6b"]]  # a switched-off head's map, in grey


@dataclass(eq=False)  # compared by identity in the page record (app/views.py)
class Switched:
    """A translation made again with heads switched off, beside the one it repeats."""
    original: object  # the Inspection of the session's translation
    changed: object   # the Inspection with the heads off
    ms: float         # server time of the re-translation


# ---- the atlas ---------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def load_atlas():
    """The shipped atlas (a dict), or None when it has not been computed for this model."""
    path = model_dir() / "heads.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def measure_key(name):
    """The key of a measure's label in the menu (ui.heads.measure.<name>): its name and what it measures."""
    return f"ui.heads.measure.{name.replace('_', '-')}"


def _pieces(key):
    """The pieces a label names, by its fields (kept out of the tables: Markdown would read a tag)."""
    return {f: PIECES[f] for f in fields(table("en")[key])}


def measure_text(name, lang="en"):
    """A measure's label in `lang`, the pieces it names put in."""
    return text(lang, measure_key(name), **_pieces(measure_key(name)))


def measure_choices():
    """The measures as a menu's choices: their labels in each language, the pieces they name put in."""
    return [(L(measure_key(n), **_pieces(measure_key(n))), n) for n in MEASURES]


def _color(value, lo, hi, diverging=False):
    """A cell's colour: white to blue over lo..hi; diverging: red below 0, blue above, white at 0."""
    if diverging:
        t = max(-1.0, min(1.0, value / (max(abs(lo), abs(hi)) or 1)))
        base = (214, 39, 40) if t < 0 else (31, 119, 180)
        t = abs(t)
    else:
        t = 0.0 if hi <= lo else max(0.0, min(1.0, (value - lo) / (hi - lo)))
        base = (31, 84, 160)
    r, g, b = (int(255 - (255 - c) * t) for c in base)
    return f"rgb({r},{g},{b})", "#fff" if t > 0.55 else "#111"


def _cell_text(value, name):
    unit = MEASURES[name]
    if unit == "share":
        return f"{100 * value:.0f}%"
    return f"{value:+.1f}" if name == "delta_bleu" else f"{value:+.3f}" if name == "delta_loss" else f"{value:.2f}"


def grid_svg(grid, kind, name, lo, hi, lang="en"):
    """One kind's layer-by-head grid of one measure as SVG; each cell names its head for a click."""
    L, H = len(grid), len(grid[0])
    left, top = 64, 22
    w, h = left + H * CELL_W + 2, top + L * CELL_H + 2
    short = kind_name(kind, lang)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'font-family="sans-serif" font-size="11" role="img" '
           f'aria-label="{html.escape(short)}: {html.escape(name)}">']
    out += [f'<text x="{left + (j + 0.5) * CELL_W}" y="{top - 7}" text-anchor="middle">'
            f'{html.escape(text(lang, "heads.head", head=j))}</text>' for j in range(H)]
    for i, row in enumerate(grid):
        y = top + i * CELL_H
        out.append(f'<text x="{left - 6}" y="{y + CELL_H * 0.65}" text-anchor="end">'
                   f'{html.escape(text(lang, "heads.layer", layer=i))}</text>')
        for j, v in enumerate(row):
            fill, ink = _color(v, lo, hi, diverging=name == "delta_bleu")
            x = left + j * CELL_W
            tip = text(lang, "heads.atlas.cell", kind=short, layer=i, head=j, value=_cell_text(v, name))
            out.append(f'<g class="hcell" data-kind="{kind}" data-layer="{i}" data-head="{j}" style="cursor:pointer">'
                       f'<title>{html.escape(tip)}</title>'
                       f'<rect x="{x}" y="{y}" width="{CELL_W - 2}" height="{CELL_H - 2}" rx="3" fill="{fill}"/>'
                       f'<text x="{x + CELL_W / 2 - 1}" y="{y + CELL_H * 0.62}" text-anchor="middle" fill="{ink}">'
                       f'{html.escape(_cell_text(v, name))}</text></g>')
    out.append("</svg>")
    return "".join(out)


def atlas_html(atlas, name, lang="en"):
    """The three kinds' grids of measure `name` side by side, on one colour scale, with what it measures."""
    if atlas is None:
        return ('<div class="heads-note">' + text(lang, "heads.atlas.missing", file="<code>heads.json</code>",
                                                  command="<code>python -m core.analysis.heads --data DIR</code>")
                + '</div>')
    name = name if name in MEASURES else "delta_loss"
    grids = {k: atlas["heads"][k].get(name) for k in KINDS}
    values = [v for g in grids.values() if g for row in g for v in row]
    unit = MEASURES[name]
    lo, hi = (0.0, 1.0) if unit == "share" else (min(0.0, *values), max(values))
    blocks = []
    for kind, grid in grids.items():
        body = grid_svg(grid, kind, name, lo, hi, lang) if grid else (
            f'<div class="heads-na">{html.escape(text(lang, "heads.atlas.na", kind=kind_name(kind, lang).lower()))}'
            '</div>')
        blocks.append(f'<div class="heads-block"><div class="heads-title">{html.escape(kind_name(kind, lang))}</div>'
                      f'{body}</div>')
    data = atlas["data"]
    bleu = (text(lang, "heads.atlas.caption-bleu", count=f"{data['bleu_sentences']:,}")
            if data.get("bleu_sentences", data["sentences"]) < data["sentences"] else "")
    caption = text(lang, "heads.atlas.caption", measure=measure_text(name, lang), sentences=f"{data['sentences']:,}",
                   bleu=bleu)
    return (f'<div class="heads-caption">{html.escape(caption, quote=False)}</div>'
            f'<div class="heads-atlas" style="display:flex; flex-wrap:wrap; gap:18px">{"".join(blocks)}</div>')


# what the numbers say: the findings core.analysis.heads chooses from the atlas (keys and numbers), written in
# the page's language from the tables (the command line writes them in English from the same ones)

def findings_in(lang, atlas):
    """The clearest patterns of an atlas as sentences in `lang`."""
    return [write(finding, lambda key: text(lang, key)) for finding in findings(atlas)]


def reading_md(atlas, lang="en"):
    """The clearest patterns of the atlas in `lang`, written from its numbers, as Markdown."""
    if atlas is None:
        return ""
    base = atlas["baseline"]
    head = text(lang, "ui.heads.reading.title", loss=f"{base['loss']:.3f}", bleu=f"{base['bleu']:.1f}")
    return head + "\n\n" + "\n".join(f"- {md_literal(line)}" for line in findings_in(lang, atlas))


def reading_label(atlas):
    """reading_md as a static label the browser switches with the page's language: its Markdown in every
    language (app.i18n.written). Its sentences come and go with the numbers, so no one string of a table holds it."""
    if atlas is None:
        return ""
    return written("ui.heads.reading.title", {lang: reading_md(atlas, lang) for lang in LANGS})


# ---- heads switched off -------------------------------------------------------------------------------

def head_choices(layers, heads):
    """(label, value) of every head, for the list of heads to switch off ("Cross-attention · layer 1 · head 3",
    in each language)."""
    return [(L(f"ui.heads.off.{k}", layer=lay, head=h), f"{k} {lay} {h}")
            for k in KINDS for lay in range(layers) for h in range(heads)]


def parse_heads(values, layers, heads, lang="en"):
    """The triples of the list's values ("cross 1 3"); ValueError naming the first that is not a head."""
    out = []
    for v in values or []:
        parts = str(v).split()
        if len(parts) != 3 or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]) \
                or int(parts[1]) >= layers or int(parts[2]) >= heads:
            raise ValueError(text(lang, "heads.not-a-head", value=repr(str(v)[:40])))
        out.append((parts[0], int(parts[1]), int(parts[2])))
    return sorted(set(out), key=lambda t: (KINDS.index(t[0]), t[1], t[2]))


def _values(triples):
    return [f"{k} {lay} {h}" for k, lay, h in triples]


def _chosen(values, cfg):
    """The heads of the list as triples, leaving out anything that is not a head of the model."""
    out = []
    for v in values or []:
        try:
            out += parse_heads([v], cfg["N"], cfg["h"])
        except ValueError:
            continue
    return out


def add_head(current, kind, layer, head):
    """The list with one more head."""
    cfg = get_translator().config
    kind = kind if kind in KINDS else "cross"
    triple = (kind, clamp(layer, 0, cfg["N"] - 1), clamp(head, 0, cfg["h"] - 1))
    return _values(sorted(set(_chosen(current, cfg)) | {triple}, key=lambda t: (KINDS.index(t[0]), t[1], t[2])))


def all_but(current, kind, layer, head):
    """The list with every head of the layer switched off but the one chosen (which is kept on)."""
    cfg = get_translator().config
    kind = kind if kind in KINDS else "cross"
    layer, head = clamp(layer, 0, cfg["N"] - 1), clamp(head, 0, cfg["h"] - 1)
    heads = set(_chosen(current, cfg)) | {(kind, layer, h) for h in range(cfg["h"])}
    heads.discard((kind, layer, head))
    return _values(sorted(heads, key=lambda t: (KINDS.index(t[0]), t[1], t[2])))


def switch_off(ins, values, lang="en"):
    """Translate the session's sentence again, with its own decoding settings, with the chosen heads off.
    Returns (a status line in Markdown, the Switched result to keep, or None)."""
    if ins is None:
        return text(lang, "heads.status.no-translation"), None
    tr = get_translator()
    try:
        heads_off = parse_heads(values, tr.config["N"], tr.config["h"], lang)
    except ValueError as e:
        return md_literal(str(e)), None
    if not heads_off:
        return text(lang, "heads.status.none"), None
    t0 = time.perf_counter()
    with MODEL_LOCK:
        changed = tr.inspect(ins.source, heads_off=heads_off, **ins.decoding)
    ms = (time.perf_counter() - t0) * 1e3
    n = len(heads_off)
    same = text(lang, "heads.status.same" if changed.translation == ins.translation else "heads.status.different")
    return (text(lang, f"heads.status.done.{'many' if n > 1 else 'one'}", count=n, result=same, ms=f"{ms:.0f}"),
            Switched(ins, changed, ms))


def comparison_html(original, changed, lang="en"):
    """Both translations, each with its token probabilities; the tokens that differ outlined in red."""
    a, b = original.out_tokens, changed.out_tokens
    gone, new = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            gone.update(range(i1, i2))
            new.update(range(j1, j2))
    off = text(lang, "heads.compare.sep").join(text(lang, f"heads.compare.kind.{k}", head=f"{lay}.{h}")
                                               for k, lay, h in changed.heads_off)
    rows = [(text(lang, "heads.compare.original"), original, a, gone),
            (text(lang, "heads.compare.changed", heads=off), changed, b, new)]
    legend = html.escape(text(lang, "heads.compare.count", changed=len(new), total=len(b)))
    return "".join(f'<div style="margin:8px 0"><div><b>{html.escape(title)}</b> {html.escape(ins.translation)}'
                   f'</div>{token_strip(toks, ins.token_probs, marks, legend=token_legend(lang))}</div>'
                   for title, ins, toks, marks in rows) + f'<div class="tok-legend">{legend}</div>'


def compare_view(ins, switched, lang="en"):
    if switched is None or switched.original is not ins:
        button = f"<b>{html.escape(text(lang, 'ui.heads.run'))}</b>"
        return f'<div class="heads-note">{text(lang, "heads.compare.prompt", button=button)}</div>'
    return comparison_html(switched.original, switched.changed, lang)


def maps_view(ins, switched, kind, layer, lang="en"):
    """All heads of one layer of the changed model's attention, the switched-off heads in grey."""
    if switched is None or switched.original is not ins:
        return empty_figure(text(lang, "heads.maps.empty"), width=40)
    changed = switched.changed
    kind = kind if kind in KINDS else "cross"
    maps, q, k = attention.attention_maps(changed, kind)
    layer = clamp(layer, 0, maps.size(0) - 1)
    title = text(lang, "heads.maps.title", kind=kind_name(kind, lang, long=True), layer=layer)
    fig = attention.head_grid(maps[layer], q, k, html.escape(title, quote=False), lang=lang)
    off = {h for kd, lay, h in changed.heads_off if kd == kind and lay == layer}
    for h in off:
        fig.data[h].colorscale = OFF_SCALE
        fig.layout.annotations[h].text = html.escape(text(lang, "heads.maps.off", head=h), quote=False)
    return fig


def atlas_view(measure, lang="en"):
    return atlas_html(load_atlas(), measure, lang)


# the views of the tab, in the order of its outputs, each reading the controls named in `uses`
VIEWS = [View("heads/atlas", ("heads",), atlas_view, uses=("measure", "lang"), reads_translation=False),
         View("heads/compare", ("heads",), compare_view, uses=("switched", "lang"), blank=("",)),
         View("heads/maps", ("heads",), maps_view, uses=("switched", "map_kind", "map_layer", "lang"), blank=(None,))]


def show(page, ins, measure="delta_loss", map_kind="cross", map_layer=0, switched=None, lang="en"):
    """The tab's views for the page as it is (app/views.py)."""
    return refresh(page, ins, VIEWS, dict(measure=measure, map_kind=map_kind, map_layer=map_layer, switched=switched,
                                          lang=lang))


ATTENTION_CONTROLS = ("kind", "layer", "head")  # the Attention tab's controls a click sets


def open_head(page, ins, evt: gr.SelectData, lang="en", controls=ATTENTION_CONTROLS):
    """A click on an atlas cell: the Attention tab opened on that head (one-head view) for the current sentence.
    Returns the top-level tabs, the Attention tab's sub-tabs, its kind, layer and head, and its views (drawn
    by its show, given its `controls` by name in its order, the page's language among them)."""
    cell = evt.value if isinstance(evt.value, dict) else {}
    cfg = get_translator().config
    kind = cell.get("kind") if cell.get("kind") in KINDS else "encoder"
    layer, head = clamp(cell.get("layer"), 0, cfg["N"] - 1), clamp(cell.get("head"), 0, cfg["h"] - 1)
    open_tab(page, ("attention", "one-head"))
    values = dict(kind=kind, layer=layer, head=head, lang=lang)
    return (gr.Tabs(selected="attention"), gr.Tabs(selected="one-head"), kind, layer, head,
            *attention.show(page, ins, *(values[name] for name in controls)))


# ---- layout and events -----------------------------------------------------------------------------

# Clicking a cell selects its head (the head goes to the server as the select event's value).
CLICK_JS = """
element.addEventListener('click', (event) => {
  const cell = event.target.closest('[data-head]');
  if (!cell) return;
  const value = {kind: cell.dataset.kind, layer: +cell.dataset.layer, head: +cell.dataset.head};
  trigger('select', {index: [value.layer, value.head], value, selected: true});
});
"""


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


def build(cfg, page, state, tabs, attn, lang):
    """Lay out the tab and wire its events. `tabs` are the page's top-level tabs and `attn` what the Attention
    tab's build returned (a click on the atlas opens a head there). Returns the controls and outputs of `show`,
    which each new translation runs (see app/ui.py)."""
    with gr.Tab(L("ui.tab.heads"), id="heads") as tab:
        switched = gr.State(None)  # inside the tab: a child of the Tabs that is no tab would upset their order
        measure = gr.Dropdown(measure_choices(), value="delta_loss", label=L("ui.heads.measure"),
                              elem_id="heads-measure")
        atlas = gr.HTML(elem_id="heads-atlas", js_on_load=CLICK_JS)
        gr.Markdown(reading_label(load_atlas()), elem_id="heads-reading")
        kind, layer, head, add, but, clear, chosen, run = _switch_panel(cfg)
        status = gr.Markdown(elem_id="off-status")
        compare = gr.HTML(elem_id="off-compare")
        with gr.Row():
            map_kind = gr.Radio(KIND_CHOICES, value="cross", label=L("ui.heads.maps-of"), elem_id="off-map-kind")
            map_layer = gr.Dropdown(list(range(cfg["N"])), value=0, label=L("ui.layer"), elem_id="off-map-layer")
        maps = gr.Plot(elem_id="off-maps")
    controls = dict(measure=measure, map_kind=map_kind, map_layer=map_layer, switched=switched, lang=lang)
    outputs = [atlas, compare, maps]
    inputs = [page, state, *controls.values()]
    tab.select(opener(("heads",), show), inputs, outputs, api_visibility="private")
    gr.on([measure.change, map_kind.change, map_layer.change], show, inputs, outputs,
          api_visibility="private")
    for button, fn in ((add, add_head), (but, all_but)):
        button.click(fn, [chosen, kind, layer, head], chosen, api_visibility="private")
    clear.click(lambda: [], None, chosen, api_visibility="private")
    run.click(switch_off, [state, chosen, lang], [status, switched], concurrency_limit=1, concurrency_id="model",
              api_visibility="private", show_progress_on=[status]).then(
        show, inputs, outputs, api_visibility="private")
    order = tuple(attn.controls)  # the Attention tab's show takes its controls' values in this order

    def open_head_clicked(page, ins, evt: gr.SelectData, lang="en"):
        return open_head(page, ins, evt, lang, order)
    atlas.select(open_head_clicked, [page, state, lang],
                 [tabs, attn.tabs, *(attn.controls[n] for n in ATTENTION_CONTROLS), *attn.outputs],
                 api_visibility="private")
    return tab_views(show, VIEWS, controls, outputs)
