"""What several tabs use: the figures' compact plotly template, values from the browser kept in range, user
text made literal for Markdown, token axes, the empty-figure placeholder, and the code panel.

Token axes are numeric with the pieces as tick labels: a categorical axis would merge repeated tokens.
"""
import hashlib
import html
import inspect
import re
import tempfile
import time
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
import plotly.io as pio

MASK_SCALE = [[0, "#f2f2f2"], [1, "#2f6db5"]]  # 0 = masked (grey), 1 = may attend (blue)


def compact_template():
    """Plotly's default look, keeping only what this app's figures use (2-D axes, heatmaps, bars, lines,
    histograms). Every figure carries its template to the browser: plotly's full one is 6.5 KB, this 2.3."""
    full = pio.templates["plotly"]
    layout = ("autotypenumbers", "colorway", "font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor",
              "colorscale", "xaxis", "yaxis", "annotationdefaults", "shapedefaults", "title")
    return go.layout.Template(layout={k: full.layout[k] for k in layout},
                              data={k: full.data[k] for k in ("heatmap", "bar", "scatter", "histogram")})


pio.templates["explorer"] = compact_template()
pio.templates.default = "explorer"  # for every figure the app builds: each tab module imports this one


def clamp(x, lo, hi, cast=int):
    """x as a number within lo..hi; lo for anything unreadable (the browser can send any value)."""
    try:
        return max(lo, min(hi, cast(x)))
    except (TypeError, ValueError):
        return lo


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~:])")


def md_literal(text):
    """Text for a Markdown output shown as typed: HTML escaped, and Markdown's punctuation backslashed, so that
    no user text becomes a link, an image, emphasis or markup."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(str(text), quote=False))


def label(token):
    """A token as plotly text: plotly reads a subset of HTML in labels, so "<s>" would strike through."""
    return html.escape(str(token), quote=False)


def token_axis(tokens, **kw):
    """A plotly axis with one tick per token, labelled with the token."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[label(t) for t in tokens], **kw)


def empty_figure(message):
    """A blank figure that says why there is nothing to show."""
    fig = go.Figure()
    fig.add_annotation(text=label(message), showarrow=False, font=dict(size=15, color="#777"))
    fig.update_layout(height=220, xaxis=dict(visible=False), yaxis=dict(visible=False),
                      margin=dict(l=10, r=10, t=10, b=10))
    return fig


def code_panel(title, *objects):
    """The source of the pieces a tab explores, shown beside their pictures (closed at first)."""
    with gr.Accordion(title, open=False):
        gr.Code("\n\n".join(inspect.getsource(o) for o in objects), language="python")


EXPORTS = Path(tempfile.gettempdir()) / "transformer-explorer-exports"
EXPORT_AGE_S = 3600  # an export file is kept this long (Gradio serves its own copy of it)


def export_file(text, stem, suffix):
    """`text` written to a file for download, named by its stem and content (the same content is written
    once), in a directory from which files older than an hour are removed. Returns the path."""
    EXPORTS.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in EXPORTS.iterdir():
        if now - old.stat().st_mtime > EXPORT_AGE_S:
            old.unlink(missing_ok=True)
    path = EXPORTS / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}{suffix}"
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    return str(path)
