"""The head atlas and a translation made with heads switched off, as HTML: one layer-by-head grid per kind of
attention for one measure (SVG), and both translations' token strips with the changed tokens marked. Pure
builders: the atlas (a dict) or Inspections in, escaped markup out, its words in the event's language
(app.i18n). The changed model's maps are app/figures/attention.py's head_grid, its heads switched off in grey."""
import difflib
import html

from core.analysis.heads import MEASURES, PIECES
from core.instrument import KINDS

from ..common import kind_name, text_on, token_strip
from ..figures.decoding import token_legend
from ..i18n import fields, table, text, texts
from ..shared import get_translator

_t = texts("heads")
CELL_W, CELL_H = 44, 28


def measure_key(name):
    """The key of a measure's name in the menu (ui.heads.measure.<name>): a few words, which a phone's menu shows
    whole; what it measures is measure_definition_key's."""
    return f"ui.heads.measure.{name.replace('_', '-')}"


def measure_definition_key(name):
    """The key of what a measure measures (ui.heads.measure-def.<name>); "first" for a model that puts no <s>
    before a source (a converted Marian model) names the source's first piece."""
    if name == "first" and get_translator().bos_id is None:
        return "ui.heads.measure-def.first-piece"
    return f"ui.heads.measure-def.{name.replace('_', '-')}"


def pieces(key):
    """The pieces a label names, by its fields."""
    return {f: PIECES[f] for f in fields(table("en")[key])}


def measure_definition(name):
    """What a measure measures, in the event's language, the pieces it names put in."""
    key = measure_definition_key(name)
    return text(key, **pieces(key))


def measure_text(name):
    """A measure's name and what it measures ("diagonal: share of rows ..."), in the event's language."""
    return text("ui.heads.measure-join", name=text(measure_key(name)), definition=measure_definition(name))


def _color(value, lo, hi, diverging=False):
    """A cell's colour: white to blue over lo..hi; diverging: red below 0, blue above, white at 0."""
    if diverging:
        t = max(-1.0, min(1.0, value / (max(abs(lo), abs(hi)) or 1)))
        base = (214, 39, 40) if t < 0 else (31, 119, 180)
        t = abs(t)
    else:
        t = 0.0 if hi <= lo else max(0.0, min(1.0, (value - lo) / (hi - lo)))
        base = (31, 84, 160)
    rgb = tuple(int(255 - (255 - c) * t) for c in base)
    return "rgb({},{},{})".format(*rgb), text_on(rgb)


def _cell_text(value, name):
    """A cell's number as the atlas writes it: a change signed, and one that rounds to nothing written as 0 (never
    "-0.000")."""
    unit = MEASURES[name]
    if unit == "share":
        return f"{100 * value:.0f}%"
    if name in ("delta_bleu", "delta_loss"):
        digits = 1 if name == "delta_bleu" else 3
        return f"{0:.{digits}f}" if round(value, digits) == 0 else f"{value:+.{digits}f}"
    return f"{value:.2f}"


def grid_svg(grid, kind, name, lo, hi):
    """One kind's layer-by-head grid of one measure as SVG; each cell names its head for a click."""
    L, H = len(grid), len(grid[0])
    left, top = 64, 22
    w, h = left + H * CELL_W + 2, top + L * CELL_H + 2
    short = kind_name(kind)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'font-family="sans-serif" font-size="11" role="img" '
           f'aria-label="{html.escape(short)}: {html.escape(name)}">']
    out += [f'<text x="{left + (j + 0.5) * CELL_W}" y="{top - 7}" text-anchor="middle">'
            f'{html.escape(_t("head", head=j))}</text>' for j in range(H)]
    for i, row in enumerate(grid):
        y = top + i * CELL_H
        out.append(f'<text x="{left - 6}" y="{y + CELL_H * 0.65}" text-anchor="end">'
                   f'{html.escape(_t("layer", layer=i))}</text>')
        for j, v in enumerate(row):
            fill, ink = _color(v, lo, hi, diverging=name == "delta_bleu")
            x = left + j * CELL_W
            tip = _t("atlas.cell", kind=short, layer=i, head=j, value=_cell_text(v, name))
            out.append(f'<g class="hcell" data-kind="{kind}" data-layer="{i}" data-head="{j}" style="cursor:pointer">'
                       f'<title>{html.escape(tip)}</title>'
                       f'<rect x="{x}" y="{y}" width="{CELL_W - 2}" height="{CELL_H - 2}" rx="3" fill="{fill}"/>'
                       f'<text x="{x + CELL_W / 2 - 1}" y="{y + CELL_H * 0.62}" text-anchor="middle" fill="{ink}">'
                       f'{html.escape(_cell_text(v, name))}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _caption(atlas, name):
    data = atlas["data"]
    bleu = (_t("atlas.caption-bleu", count=f"{data['bleu_sentences']:,}")
            if data.get("bleu_sentences", data["sentences"]) < data["sentences"] else "")
    # a model measured in the app without Multi30k at hand: the project's examples, on its own translations
    key = "atlas.caption-examples" if data.get("split") == "examples" else "atlas.caption"
    return _t(key, measure=measure_text(name), sentences=f"{data['sentences']:,}", bleu=bleu)


def atlas_html(atlas, name, converted=False, sample=100):
    """The three kinds' grids of measure `name` side by side, on one colour scale, with what it measures. With no
    atlas, what measures one: the tab's button (over `sample` sentences) or the command line. `converted`: the
    open model was converted (core.convert): its command names the model's directory."""
    if atlas is None:
        command = "python -m core.analysis.heads --model DIR" if converted else "python -m core.analysis.heads --data DIR"
        return ('<div class="heads-note">' + _t("atlas.missing", file="<code>heads.json</code>", sentences=sample,
                                                command=f"<code>{command}</code>") + '</div>')
    name = name if name in MEASURES else "delta_loss"
    grids = {k: atlas["heads"][k].get(name) for k in KINDS}
    values = [v for g in grids.values() if g for row in g for v in row]
    unit = MEASURES[name]
    lo, hi = (0.0, 1.0) if unit == "share" else (min(0.0, *values), max(values))
    blocks = []
    for kind, grid in grids.items():
        short = kind_name(kind)
        body = grid_svg(grid, kind, name, lo, hi) if grid else (
            f'<div class="heads-na">{html.escape(_t("atlas.na", kind=short.lower()))}</div>')
        # a grid wider than a phone (8 heads: 418 px) scrolls sideways in its block rather than running off the page
        blocks.append(f'<div class="heads-block" style="max-width:100%; overflow-x:auto">'
                      f'<div class="heads-title">{html.escape(short)}</div>{body}</div>')
    return (f'<div class="heads-caption">{html.escape(_caption(atlas, name), quote=False)}</div>'
            f'<div class="heads-atlas" style="display:flex; flex-wrap:wrap; gap:18px">{"".join(blocks)}</div>')


def comparison_html(original, changed):
    """Both translations, each with its token probabilities; the tokens that differ outlined in red."""
    a, b = original.out_tokens, changed.out_tokens
    gone, new = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            gone.update(range(i1, i2))
            new.update(range(j1, j2))
    off = _t("compare.sep").join(_t(f"compare.kind.{k}", head=f"{lay}.{h}") for k, lay, h in changed.heads_off)
    rows = [(_t("compare.original"), original, a, gone), (_t("compare.changed", heads=off), changed, b, new)]
    legend = html.escape(_t("compare.count", changed=len(new), total=len(b)))
    return "".join(f'<div style="margin:8px 0"><div><b>{html.escape(title)}</b> {html.escape(ins.translation)}'
                   f'</div>{token_strip(toks, ins.token_probs, marks, legend=token_legend())}</div>'
                   for title, ins, toks, marks in rows) + f'<div class="tok-legend">{legend}</div>'


def prompt_html(button):
    """What the comparison says before heads are switched off: press `button` (its label)."""
    return f'<div class="heads-note">{_t("compare.prompt", button=f"<b>{html.escape(button)}</b>")}</div>'
