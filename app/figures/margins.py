"""Margins that already hold a figure's labels, so that plotly draws it once.

Every axis of this app's figures has plotly's `automargin` (the template's), and most figures give margins of 10 px:
plotly then draws the whole figure, measures its tick labels, axis titles, legend and colour bar, widens the
margins to hold them, and draws it all again. That second drawing was about half of what the browser spent on a
figure (dev measurement over every view's figures, in headless Chromium). `fit` widens a figure's margins, before
it goes to the browser, to an estimate of what those labels take: where the estimate holds them, plotly's own
measurement finds nothing to widen and draws once; where it falls short, plotly widens the margins as before (the
figure is never clipped), and where it overshoots, the figure has a little more white around it.

The estimate reads the figure as plotly will: each axis' tick labels (its categories, ticktext, or the numbers of
its range written as plotly writes them), its title, whether it is at the edge of the plot; a colour bar's numbers;
a legend's names. Text widths are from average glyph widths of the sans-serif fonts browsers fall back to (Latin
about 0.6 em, CJK a little over 1 em), on the high side.
"""
import base64
import math
import re

import numpy as np
import plotly.io as pio

FONT = 12  # plotly's default font size (this app's template keeps it)
TITLE_FONT = 14  # an axis title's default size
LINE = 1.3  # a line of text, in font sizes
STANDOFF = 15  # the template's axis title standoff
PAD = 10  # room added to every estimate (fonts differ from one machine to the next)
EDGE = 0.02  # an axis whose counter-axis' domain starts within this of the edge pushes the margin
TITLE_PAD = 24  # a title hung from the top of the figure (fit): its pad, to its first line's baseline, roughly
TITLE_RISE = 15  # how far a title's first line rises above where plotly puts its top at that pad
PLOT_WIDTH = 700  # a guess at the plot's width where it matters (a legend placed beyond x = 1, its rows)
# a colour bar's gap to the plot (x - 1 of the plot's width) guessed for a phone's plot: on a wide screen, where
# the gap is wider, plotly widens the margin by the few px more it needs; a phone's plot is not squeezed for it
BAR_PLOT_WIDTH = 250
MOST = 160  # no side widened beyond this: past it, a phone's plot would be squeezed; plotly widens it if need be
CARTESIAN = {"scatter", "scattergl", "bar", "heatmap", "histogram", "histogram2d", "contour", "box", "violin"}
_TAG = re.compile(r"<[^>]+>")
_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|\w+);")  # one character on screen


def _char_em(c):
    if ord(c) >= 0x2E80:
        return 1.05  # CJK, full width (and a little: their fonts differ)
    if c in "iljtfr.,:;|!'() ":
        return 0.34
    if c.isupper() or c in "mwMW@%&▁—":
        return 0.82
    return 0.62


def text_width(s, size=FONT):
    """The width in px of plotly text `s` (its tags dropped, its widest line) at font size `size`."""
    lines = _ENTITY.sub("&", _TAG.sub("", str(s).replace("<br>", "\n").replace("<br />", "\n"))).split("\n")
    return max(sum(_char_em(c) for c in line) for line in lines) * size


def text_lines(s):
    return str(s).count("<br>") + 1


def _nice_step(span, n=6):
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def number_labels(lo, hi, log=False):
    """Tick labels plotly writes for a linear (or log) axis from lo to hi, roughly."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ["0"]
    if log:
        lo, hi = (lo, hi) if lo > 0 else (1e-3, max(hi, 1e-3))
        exps = range(math.floor(math.log10(max(lo, 1e-30))), math.ceil(math.log10(max(hi, 1e-30))) + 1)
        return [_si(10.0 ** e) for e in exps]
    if hi <= lo:
        return [_si(lo)]
    step = _nice_step(hi - lo)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    if step * 10 ** decimals % 1:
        decimals += 1
    return [_fixed(v, decimals) for v in (lo, hi, math.floor(lo / step) * step, math.ceil(hi / step) * step)]


def _fixed(v, decimals):
    if abs(v) >= 1e4:
        return _si(v)
    text = f"{v:.{decimals}f}"
    return text.replace("-", "−")


def _si(v):
    for value, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= 10 * value:
            return f"{v / value:.0f}{suffix}"
    return f"{v:g}".replace("-", "−")


def _axis_values(data, letter, ref):
    """What the traces on axis `ref` ("x", "x2", ...) put on it: their `letter` values, flattened."""
    out = []
    for trace in data:
        if (trace.get(f"{letter}axis") or letter) != ref:
            continue
        values = trace.get(letter)
        if values is None and trace.get("type") in ("bar", "histogram", None, "scatter") and letter == "x":
            values = range(len(trace.get("y") or []))
        if values is not None:
            out.extend(_flat(values))
    return out


def _flat(values):
    if isinstance(values, dict):  # plotly's typed array ({"dtype", "bdata"})
        if "bdata" not in values:
            return []
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values.get("dtype", "f8")).tolist()
    if isinstance(values, np.ndarray):
        return values.ravel().tolist()
    out = []
    for v in values:
        if isinstance(v, (list, tuple, np.ndarray)):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def _labels(axis, values):
    """The texts an axis shows as tick labels (the widest of them, roughly), and whether they are words (categories
    or ticktext) rather than the numbers of a range."""
    if axis.get("ticktext") is not None:
        return [str(t) for t in axis["ticktext"]] or [""], True
    strings = [v for v in values if isinstance(v, str)]
    if axis.get("type") == "category" or (strings and axis.get("type") not in ("linear", "log")):
        return sorted(set(map(str, values)), key=len)[-3:] or [""], True
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    rng = axis.get("range")
    if rng and len(rng) == 2 and all(isinstance(r, (int, float)) for r in rng):
        lo, hi = sorted(rng)
        if axis.get("type") == "log":
            lo, hi = 10 ** lo, 10 ** hi
    elif numbers:
        lo, hi = min(numbers), max(numbers)
    else:
        return ["0.0"], False  # numbers the estimate cannot see: a short label
    return number_labels(lo, hi, axis.get("type") == "log"), False


def _axis_push(axis, values, letter, font):
    """The px an axis takes beyond the plot area on its side (tick labels, then its title), and beyond each of its
    ends (half its end labels)."""
    size = (axis.get("tickfont") or {}).get("size") or font
    push, ends = 0.0, 0.0
    if axis.get("visible", True) is not False and axis.get("showticklabels", True) is not False:
        labels, words = _labels(axis, values)
        wide = max(text_width(t, size) for t in labels)
        angle = axis.get("tickangle")
        upright = isinstance(angle, (int, float)) and abs(angle) >= 60
        if letter == "y":
            push, ends = wide + 6, LINE * size / 2 + 4
        else:
            push = (wide if upright else LINE * size * max(text_lines(t) for t in labels)) + 4
            # an end label is centred on the axis' end (numbers); a category's sits in the middle of its cell,
            # which plotly widens itself where the cell is narrower than the label
            ends = 0 if upright or words else wide / 2 + 4
    title = axis.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    if title and axis.get("visible", True) is not False:
        tsize = ((axis.get("title") or {}).get("font") or {}).get("size") or TITLE_FONT
        push += STANDOFF + 1.15 * tsize * text_lines(title)
    return push, ends


def _edge(layout, axis, letter):
    """Which margin the axis pushes ("l", "r", "b", "t"), or None for one inside the figure."""
    other = "x" if letter == "y" else "y"
    anchor = axis.get("anchor") or other
    side = axis.get("side") or ("left" if letter == "y" else "bottom")
    if anchor == "free":
        at = axis.get("position", 0)
    else:
        domain = (layout.get(f"{other}axis{anchor[1:]}") or {}).get("domain") or [0, 1]
        at = domain[0] if side in ("left", "bottom") else domain[1]
    if side in ("left", "bottom"):
        return side[0] if at <= EDGE else None
    return side[0] if at >= 1 - EDGE else None


def _ends(axis, letter):
    """The margins an axis' end labels may reach: those its own domain touches."""
    domain = axis.get("domain") or [0, 1]
    low, high = ("l", "r") if letter == "x" else ("b", "t")
    return [end for end, at in ((low, domain[0] <= EDGE), (high, domain[1] >= 1 - EDGE)) if at]


def _colorbar_push(trace_or_axis, zs):
    bar = trace_or_axis.get("colorbar") or {}
    if bar.get("orientation") == "h":  # below the plot, unless the figure places it from its own edge itself
        return "b", 0 if bar.get("yref") == "container" else 80
    lo, hi = (min(zs), max(zs)) if zs else (0.0, 1.0)
    if bar.get("tickvals") is not None and bar.get("ticktext") is not None:
        labels = [str(t) for t in bar["ticktext"]]
    else:
        labels = number_labels(lo, hi)
    wide = max(text_width(t) for t in labels)
    title = (bar.get("title") or {}).get("text") if isinstance(bar.get("title"), dict) else bar.get("title")
    titled = LINE * FONT + 4 if title and (bar.get("title") or {}).get("side") == "right" else 0  # written upright
    x = bar.get("x", 1.02)
    return "r", max(0.0, x - 1) * BAR_PLOT_WIDTH + bar.get("thickness", 30) + 2 * bar.get("xpad", 10) + wide + titled


def _numbers(values):
    """The finite numbers of `values` (a list, nested lists or an array): their smallest and largest, as a list."""
    try:
        arr = np.asarray(values if not isinstance(values, dict) else _flat(values), dtype=float).ravel()
    except (TypeError, ValueError):
        arr = np.asarray([v for v in _flat(values) if isinstance(v, (int, float)) and not isinstance(v, bool)],
                         dtype=float)
    arr = arr[np.isfinite(arr)]
    return [float(arr.min()), float(arr.max())] if arr.size else []


def _legend_push(layout, data):
    """The margin a legend takes: (side, px, whether it adds to the axes' labels there), or None; and the legend
    as it is to be drawn. A horizontal legend below the plot (plotly's default place for one) is set at the bottom
    of the figure, under the axes' labels and titles, where plotly places it at a fraction of the plot's height
    that can fall on them."""
    shown = [t for t in data if t.get("showlegend", True) is not False and t.get("name")
             and t.get("type", "scatter") not in ("heatmap", "treemap", "sunburst", "table")]
    legend = layout.get("legend") or {}
    if layout.get("showlegend") is False or not shown or (len(shown) < 2 and layout.get("showlegend") is not True):
        return None, legend
    names = [t["name"] for t in shown]
    size = (legend.get("font") or {}).get("size") or FONT
    if legend.get("orientation") == "h":
        y = legend.get("y")
        rows = 1 + sum(text_width(n, size) + 45 for n in names) // PLOT_WIDTH
        height = rows * (LINE * size + 6) + 10
        if legend.get("yref", "paper") == "paper" and (y is None or y <= 0):
            legend = {**legend, "yref": "container", "y": 0, "yanchor": "bottom"}
            return ("b", height, True), legend
        if legend.get("yref", "paper") == "paper" and y > 1:
            return ("t", height, False), legend
        return None, legend
    x = legend.get("x", 1.02)
    if x < 1:
        return None, legend
    return ("r", (x - 1) * PLOT_WIDTH + max(text_width(n, size) for n in names) + 50, False), legend


def _hung_title(title, font):
    """A figure title of several lines that plotly would place itself, hung from the top of the figure instead,
    and the px it then takes from the top; None for any other title. Plotly puts the first line's baseline at the
    middle of the top margin and the other lines below it, into the plot; hung from the top, the lines grow down
    into a margin made to hold them."""
    if isinstance(title, str):
        title = {"text": title}
    if not isinstance(title, dict) or text_lines(title.get("text") or "") < 2:
        return None
    if any(title.get(k) not in (None, "auto") for k in ("y", "yanchor", "yref")):
        return None  # placed by the figure itself
    size = (title.get("font") or {}).get("size") or 1.4 * font  # plotly's title font: 1.4 times the figure's
    hung = {**title, "yref": "container", "y": 1, "yanchor": "top", "pad": {**(title.get("pad") or {}), "t": TITLE_PAD}}
    return hung, TITLE_PAD - TITLE_RISE + LINE * size * text_lines(title["text"]) + 8


def fit(figure):
    """The figure's plotly JSON ({"data", "layout"}: fig.to_plotly_json()) with its margins widened to hold its
    labels (see the module's docstring). Returns a new dict; the figure is not changed."""
    data, layout = figure.get("data") or [], dict(figure.get("layout") or {})
    template = (layout.get("template") or {}).get("layout") or {}
    font = (layout.get("font") or {}).get("size") or (template.get("font") or {}).get("size") or FONT
    need = {"l": 0.0, "r": 0.0, "t": 0.0, "b": 0.0}
    top_ends = 0.0  # what the axes' labels at the plot's top end reach above it
    refs = {(k[0], k[1:].replace("axis", "")) for k in layout if re.fullmatch(r"[xy]axis\d*", k)}
    refs |= {(letter, (t.get(f"{letter}axis") or letter)[1:]) for t in data for letter in "xy"
             if t.get("type", "scatter") in CARTESIAN}
    for letter, n in refs:
        key = f"{letter}axis{n}"
        axis = {**(template.get(f"{letter}axis") or {}), **(layout.get(key) or {})}
        if axis.get("automargin") is False or axis.get("overlaying"):
            continue
        side = _edge(layout, axis, letter)
        if side is not None:
            push, ends = _axis_push(axis, _axis_values(data, letter, f"{letter}{n}"), letter, font)
            need[side] = max(need[side], push)
            for end in _ends(axis, letter):
                need[end] = max(need[end], ends)
                top_ends = max(top_ends, ends if end == "t" else 0)
    for trace in data:
        if trace.get("type") in ("heatmap", "contour", "histogram2d") and trace.get("showscale", True) is not False \
                and not trace.get("coloraxis"):
            lo, hi = trace.get("zmin"), trace.get("zmax")
            z = trace.get("z")
            side, px = _colorbar_push(trace, [lo, hi] if lo is not None and hi is not None
                                      else _numbers(z if z is not None else []))
            need[side] = max(need[side], px)
    for key, axis in layout.items():
        if re.fullmatch(r"coloraxis\d*", key) and (axis or {}).get("showscale", True) is not False:
            zs = [v for t in data if t.get("coloraxis") == key
                  for v in _numbers(t.get("z") if t.get("z") is not None else [])]
            lo, hi = axis.get("cmin"), axis.get("cmax")
            side, px = _colorbar_push(axis, [lo, hi] if lo is not None and hi is not None else zs)
            need[side] = max(need[side], px)
    title = _hung_title(layout.get("title"), font)
    if title is not None:
        layout["title"], px = title
        need["t"] = max(need["t"], px + top_ends)
    push, legend = _legend_push(layout, data)
    if push:
        side, px, adds = push
        need[side] = need[side] + px if adds else max(need[side], px)
        layout["legend"] = legend
    margin = dict(layout.get("margin") or {})
    default = {"l": 80, "r": 80, "t": 100, "b": 80}
    for side, px in need.items():
        given = margin.get(side, default[side])
        if px > 0:
            margin[side] = max(given, min(math.ceil(px + PAD), MOST))
    layout["margin"] = margin
    return {**figure, "layout": layout}


# plotly's JSON writes "/" as \u002f (with < and > as \u003c and \u003e, for JSON put into HTML): in a typed array's
# base64 that is one character in 64, six characters each, about a third more bytes. Such an escape, not preceded by
# a backslash of its own, is written back as "/"; < and > stay escaped, so no "</" can appear.
_SLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\u002f")


def fitted_json(fig, taller=0):
    """A plotly figure as the JSON Gradio sends (fig.to_json()), its margins fitted, `taller` px added to its
    height where it gives one, and "/" written as itself (_SLASH)."""
    out = fit(fig.to_plotly_json())
    if taller and out["layout"].get("height"):
        out["layout"]["height"] += taller
    return _SLASH.sub(r"\1/", pio.to_json(out, validate=False))
