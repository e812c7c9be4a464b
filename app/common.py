"""What several tabs use: the figures' compact plotly template, values from the browser kept in range, user
text made literal for Markdown, token axes, the empty-figure placeholder, and the code panel.

Token axes are numeric with the pieces as tick labels: a categorical axis would merge repeated tokens.
"""
import hashlib
import html
import inspect
import math
import os
import re
import tempfile
import time
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
import plotly.io as pio
from gradio.components.plot import PlotData

from core.instrument import KINDS

from .figures.margins import fitted_json
from .i18n import L, choices, text

MASK_SCALE = [[0, "#f2f2f2"], [1, "#2f6db5"]]  # 0 = masked (grey), 1 = may attend (blue)
MAX_CHARS = 1000  # the longest text the page takes to run the model on (German to translate, English to score)


def compact_template():
    """Plotly's default look, keeping only what this app's figures use (2-D axes, heatmaps, bars, lines,
    histograms). Every figure carries its template to the browser: plotly's full one is 6.5 KB, this 2.3."""
    full = pio.templates["plotly"]
    layout = ("autotypenumbers", "colorway", "font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor",
              "colorscale", "xaxis", "yaxis", "annotationdefaults", "shapedefaults", "title")
    template = go.layout.Template(layout={k: full.layout[k] for k in layout},
                                  data={k: full.data[k] for k in ("heatmap", "bar", "scatter", "histogram")})
    # x tick labels that would run into each other on a narrow screen stand upright (plotly's own choice,
    # 0 or 30 degrees, leaves long tokens overlapping)
    template.layout.xaxis.autotickangles = [0, 90]
    # plotly hides a numeric axis' tick labels that would overflow the figure, measuring each one's box (a forced
    # layout per label, about a fifth of a line chart's drawing); the fitted margins hold them (figures/margins.py)
    template.layout.xaxis.ticklabeloverflow = template.layout.yaxis.ticklabeloverflow = "allow"
    return template


pio.templates["explorer"] = compact_template()
pio.templates.default = "explorer"  # for every figure the app builds: each tab module imports this one


# Gradio's resize after each drawing (answered at once now: app/gradio_adapter.py PLOTLY_RESIZE_JS) used to draw
# every figure again at its box's height, 52 px more than the figure asked for, and the tabs were laid out and
# looked at that way: a figure that gives its height is sent that much taller
BOX_EXTRA = 52


FITTED = "fitted-plot"  # the class of a plot whose figures are sent fitted (fitted_plot)


def fitted_plot(*args, elem_classes=None, **kwargs):
    """A gr.Plot whose plotly figures go to the browser with margins that already hold their labels
    (app/figures/margins.py), so that the browser draws each figure once, not twice; the figure itself is not
    changed. The plot is marked by a class (FITTED), which gr.Plot's postprocess reads (below): Gradio makes a
    new component from a component's arguments for every update of it in a session, a gr.skip() included, and
    uses that one from then on, so the mark has to be among its arguments. (Not a subclass: Gradio writes a .pyi
    file beside the module of any component subclass at every start.)"""
    classes = [elem_classes] if isinstance(elem_classes, str) else list(elem_classes or [])
    return gr.Plot(*args, elem_classes=[*classes, FITTED], **kwargs)


def _fitted_postprocess(plain):
    def postprocess(self, value):
        if isinstance(value, go.Figure) and FITTED in (self.elem_classes or []):
            return PlotData(type="plotly", plot=fitted_json(value, taller=BOX_EXTRA))
        return plain(self, value)
    postprocess.plain = plain
    return postprocess


if not hasattr(gr.Plot.postprocess, "plain"):  # once per process (a module reloaded keeps the first)
    gr.Plot.postprocess = _fitted_postprocess(gr.Plot.postprocess)


def kind_choices(long=False, kinds=KINDS):
    """Kinds of attention (core.instrument.KINDS) as a menu's choices, labelled in both languages: ui.kind.short.<kind>
    (menus, grids) or ui.kind.long.<kind> (the Attention tab's titles)."""
    return choices(f"ui.kind.{'long' if long else 'short'}", kinds)


def kind_name(kind, long=False):
    """A kind of attention's name, for text drawn at run time (the menus' words: ui.kind.*), in the event's
    language (app.i18n.speaking)."""
    return text(f"ui.kind.{'long' if long else 'short'}.{kind}")


def clamp(x, lo, hi, cast=int):
    """x as a number within lo..hi; lo for anything unreadable (the browser can send any value)."""
    try:
        return max(lo, min(hi, cast(x)))
    except (TypeError, ValueError):
        return lo


def within(limit, x):
    """x kept to a setting's Limit (core.decode): a number of its type within its range, as `clamp`."""
    return clamp(x, limit.lo, limit.hi, limit.cast)


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~:])")


def md_literal(text):
    """Text for a Markdown output shown as typed: HTML escaped, and Markdown's punctuation backslashed, so that
    no user text becomes a link, an image, emphasis or markup."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(str(text), quote=False))


def label(token):
    """A token as plotly text: plotly reads a subset of HTML in labels, so "<s>" would strike through."""
    return html.escape(str(token), quote=False)


def _columns(text):
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)


CLOSING = "，：；、）。！？”」"  # punctuation a line may end with, and never begin with


def wrap_title(title, width=34):
    """A figure's title in lines of at most about `width` Latin letters (a Chinese character counts two), broken
    at a space or a dot after a letter (a module's path), after Chinese punctuation where that leaves the line a third full or more, else beside a Chinese
    character: plotly never wraps a title, and one line of it runs off a phone's figure (34 letters of a
    title's 17 px fit 340 px)."""
    lines, line, cut, pause = [], "", None, None
    for ch in title:
        # Chinese closing punctuation never starts a line: it stays with the character before it
        if _columns(line + ch) > width and line and ch not in CLOSING:
            at = pause if pause and _columns(line[:pause]) * 3 >= width else cut or len(line)
            lines.append(line[:at].rstrip())
            line, cut, pause = line[at:].lstrip(), None, None
        line += ch
        if ch == " " or ord(ch) >= 0x2E80 or (ch == "." and line[-2:-1].isalpha()):
            cut = len(line)  # a break may come after this character (a dot of a name, not of a number)
        if ch in "，：；、）。":
            pause = len(line)
    return "<br>".join(lines + [line])


def title_room(title):
    """The px from a figure's top to below its title (`title` in lines, as wrap_title writes it, hung from the top
    at plotly's title size)."""
    return 28 + 23 * (title.count("<br>") + 1)


def top_colorbar(below, height, **bar):
    """A horizontal colour bar across a figure's top, `below` px from its top edge (title_room) in a figure `height`
    px tall: a phone's width stays the plot's. Placed from the figure's edge: placed from the plot's top, plotly
    moved a title of several lines up over the edge."""
    return dict(orientation="h", thickness=10, x=0.5, xanchor="center", yref="container", y=1 - below / height,
                yanchor="top", **bar)


PHONE_FITS = 350  # px: what a 390 px phone's figure holds across
PIECE_PX = 15     # px across a sentence's piece needs on a phone: a turned tick label at 12 px, and a cell to see


def phone_width(fig, columns, per=PIECE_PX, room=170):
    """Asks a phone to draw `fig` at least as wide as `columns` columns of `per` px each and `room` px of labels
    and colour bar need, where that is wider than a phone's figure: the page (app/gradio_adapter.py
    PHONE_WIDTH_JS) then gives the plot that width in a block a finger scrolls sideways, with a line above that
    says so (app/style.py). A desktop draws it as before. Returns `fig`."""
    need = int(columns * per + room)
    if need > PHONE_FITS:
        fig.update_layout(meta=dict(phone_width=need))
    return fig


def log_ticks(values, most=7):
    """Tick values and labels for a log axis over `values` (the positive ones) that a reader can read: plotly's own
    log ticks label a short range with bare mantissas ("2, 100, 5, 2, 10, 5"). The finest of the 1-2-3-5, the
    1-2-5 steps of each decade and the decades alone that puts at most `most` ticks over the values, each labelled
    in full ("20", "0.05"); {} where no value is positive."""
    positive = [float(v) for v in values if v is not None and float(v) > 0]
    if not positive:
        return {}
    lo, hi = min(positive), max(positive)
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    for steps in ((1, 2, 3, 5), (1, 2, 5), (1,)):
        # the ticks over the values, and one beyond each end (plotly's autorange pads the values a little)
        ticks = [m * 10.0 ** e for e in decades for m in steps]
        inside = sum(lo <= t <= hi for t in ticks)
        if inside <= most:
            break
    ticks = [t for t in ticks if lo / 1.6 <= t <= hi * 1.6]
    return dict(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])


def token_axis(tokens, **kw):
    """A plotly axis with one tick per token, labelled with the token."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[label(t) for t in tokens], **kw)


def panel_grid(panels, cols, title="", height=500, gap=(0.08, 0.14), notes=None, title_font=None, row_heights=None,
               title_width=None, titles_left=False, **layout):
    """A figure of panels filled row by row in `cols` columns, each panel (traces, title, x-axis dict, y-axis
    dict) on its own pair of axes placed by domain, its title above it (in lines of `title_width` letters) unless
    `notes` (annotations in paper coordinates) label the grid instead; the rows share the height equally, or as
    `row_heights` (one weight a row, from the top) says; `titles_left`: each title at its panel's left edge (a
    figure a phone scrolls sideways shows its left first). Laid out by hand: plotly's make_subplots takes several
    times longer than the figure itself for 24 panels, and about 40 ms for four."""
    rows = (len(panels) + cols - 1) // cols
    weights = list(row_heights or [1] * rows)
    w, room = (1 - gap[0] * (cols - 1)) / cols, 1 - gap[1] * (rows - 1)
    hs = [room * f / sum(weights) for f in weights]
    width = title_width or max(16, 48 // cols)
    data, axes, titles = [], {}, []
    font = {} if title_font is None else {"font": title_font}
    for i, (traces, name, xaxis, yaxis) in enumerate(panels):
        r, c, ax = i // cols, i % cols, "" if i == 0 else str(i + 1)
        x0, y1, h = c * (w + gap[0]), 1 - sum(hs[:r]) - r * gap[1], hs[r]
        data += [dict(t, xaxis=f"x{ax}", yaxis=f"y{ax}") for t in traces]
        axes[f"xaxis{ax}"] = dict(xaxis, domain=[x0, min(1.0, x0 + w)], anchor=f"y{ax}")  # within 0..1 despite
        axes[f"yaxis{ax}"] = dict(yaxis, domain=[max(0.0, y1 - h), y1], anchor=f"x{ax}")  # rounding
        # centred on its panel (plotly's "auto" anchors a title left of a third of the width, right past two)
        titles.append(dict(text=wrap_title(name, width), x=x0 if titles_left else x0 + w / 2, y=y1,
                           xanchor="left" if titles_left else "center", yanchor="bottom", **font))
    annotations = [dict(xref="paper", yref="paper", showarrow=False, **n) for n in (titles if notes is None else notes)]
    layout = {"margin": dict(l=10, r=10, t=80, b=10), **layout}
    # the title hangs from the top, so that its lines when wrapped grow down into the margin, not over the panels
    title = dict(text=title, yref="container", y=1, yanchor="top", pad=dict(t=20)) if isinstance(title, str) else title
    return go.Figure(data, dict(title=title, height=height, annotations=annotations, **axes, **layout))


def prob_rgb(p):
    """White (p = 0) to a saturated green (p = 1), as (r, g, b)."""
    return tuple(int(255 - (255 - c) * p) for c in (46, 160, 67))


def prob_color(p):
    return "rgb({},{},{})".format(*prob_rgb(p))


def _luminance(rgb):
    """WCAG's relative luminance of an (r, g, b) colour of 0..255."""
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    """WCAG's contrast ratio of two (r, g, b) colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# black, not a softer dark: between white and a saturated colour, some tone has under 4.5:1 with both #111 and white
DARK_TEXT, LIGHT_TEXT = (0, 0, 0), (255, 255, 255)


def text_on(rgb):
    """The text colour, black or white, that reads better on a background of colour `rgb` (the larger contrast)."""
    return "#000" if contrast(rgb, DARK_TEXT) >= contrast(rgb, LIGHT_TEXT) else "#fff"


MARK_STYLE = "outline:2px solid #e4572e; outline-offset:1px; "  # a token strip's marked token


def token_strip(tokens, probs, marked=(), hovers=None, legend=""):
    """Tokens (pieces, escaped) on backgrounds coloured by their probability, each with it below; those at the
    positions `marked` outlined in red; `hovers` the text shown over each (else its probability); `legend` a
    line below the strip."""
    hovers = hovers or [f"p = {p:.3f}" for p in probs]
    spans = []
    for i, (tok, p, hover) in enumerate(zip(tokens, probs, hovers)):
        text = html.escape(tok.replace("▁", " ").strip() or tok)
        spans.append(f'<span class="tok" title="{html.escape(hover)}" style="{MARK_STYLE if i in marked else ""}'
                     f'background:{prob_color(p)};color:{text_on(prob_rgb(p))}">'
                     f'{text}<sub>{p:.2f}</sub></span>')
    below = f'<div class="tok-legend">{legend}</div>' if legend else ""
    return f'<div class="tok-row">{"".join(spans)}</div>{below}'


def empty_figure(message, width=None):
    """A blank figure that says why there is nothing to show (in lines of `width` letters, see wrap_title)."""
    fig = go.Figure()
    words = label(message) if width is None else wrap_title(label(message), width)
    fig.add_annotation(text=words, showarrow=False, font=dict(size=15, color="#777"))
    fig.update_layout(height=220, xaxis=dict(visible=False), yaxis=dict(visible=False),
                      margin=dict(l=10, r=10, t=10, b=10))
    return fig


def code_panel(title, *objects):
    """The source of the pieces a tab explores, shown beside their pictures (closed at first); `title` a label
    (app.i18n.L), "The code" in the page's language when None."""
    with gr.Accordion(L("ui.code") if title is None else title, open=False):
        gr.Code("\n\n".join(inspect.getsource(o) for o in objects), language="python")


EXPORTS = Path(tempfile.gettempdir()) / "transformer-explorer-exports"
EXPORT_AGE_S = 3600  # an export file is kept this long (Gradio serves its own copy of it)


def export_file(text, stem, suffix):
    """`text` (a string, written as UTF-8, or bytes) written to a file for download, named by its stem and content
    (the same content is written once), in a directory from which files older than an hour are removed. Returns
    the path. Servers on one machine share the directory: a file another one removes first is passed over, and a
    file is written whole under another name and then renamed, so that no reader sees it half written."""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    EXPORTS.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in EXPORTS.iterdir():
        try:
            if now - old.stat().st_mtime > EXPORT_AGE_S:
                old.unlink(missing_ok=True)
        except FileNotFoundError:
            pass  # removed meanwhile by another server's sweep
    path = EXPORTS / f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        fd, part = tempfile.mkstemp(dir=EXPORTS, prefix=f".{path.name}.", suffix=".part")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(part, path)
    return str(path)
