"""app/figures/margins.py: a figure's margins widened to hold its labels, so that plotly draws it once.

The estimate is checked against plotly itself: the same figures drawn by the front end's own plotly.js in headless
Chromium at a desktop and a phone width, where plotly's auto-margins must find nothing to widen and the
fitted margins may not leave much more room than plotly would have taken.
"""
import json
import os

import plotly.graph_objects as go
import pytest
import torch

import app.common  # noqa: F401 (the app's plotly template)
from app.common import label
from app.figures import margins

LONG = "Straßenbahnhaltestelle"


def _heatmap(rows, cols):
    """Token axes as the app writes them (numbers with the pieces as tick labels, escaped: app.common.label)."""
    return go.Figure(go.Heatmap(z=torch.rand(len(rows), len(cols)).tolist(), x=list(range(len(cols))),
                                y=list(range(len(rows))), colorbar=dict(title=dict(text="weight", side="right"))),
                     layout=dict(xaxis=dict(tickvals=list(range(len(cols))), ticktext=[label(c) for c in cols]),
                                 yaxis=dict(tickvals=list(range(len(rows))), ticktext=[label(r) for r in rows],
                                            autorange="reversed"),
                                 height=400, margin=dict(l=10, r=10, t=50, b=10)))


def _lines():
    fig = go.Figure([go.Scatter(x=list(range(1, 2001)), y=[i ** -0.5 for i in range(1, 2001)], name="rate"),
                     go.Scatter(x=list(range(1, 2001)), y=[0.002] * 2000, name="floor")])
    fig.update_layout(xaxis_title="step", yaxis_title="learning rate", height=360, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=1.1, x=0))
    return fig


def _bars(words):
    fig = go.Figure(go.Bar(x=words, y=[0.5, -0.25, 0.125][:len(words)]))
    fig.update_layout(yaxis_title="Δ log p", height=300, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def _figures():
    return {"heatmap, short tokens": _heatmap(["▁Zwei", "▁Hunde", "</s>"], ["▁Two", "▁dogs", "</s>"]),
            "heatmap, long tokens": _heatmap([f"▁{LONG}", "▁ein", "</s>"], ["▁a", f"▁{LONG}", "</s>"]),
            "heatmap, Chinese": _heatmap(["▁两只", "▁狗在雪地里", "</s>"], ["▁a", "▁b"]),
            "lines with titles": _lines(), "bars": _bars(["▁Zwei", "▁Hunde", "▁spielen"])}


def test_fit_widens_to_hold_longer_labels_and_never_narrows():
    short, long_ = (margins.fit(f.to_plotly_json())["layout"]["margin"]
                    for f in (_heatmap(["▁a"], ["▁b"]), _heatmap([f"▁{LONG}"], ["▁b"])))
    assert long_["l"] > short["l"] >= 10
    assert long_["l"] - short["l"] >= margins.text_width(LONG) * 0.8
    for fig in _figures().values():
        given, fitted = fig.layout.margin, margins.fit(fig.to_plotly_json())["layout"]["margin"]
        for side in "lrtb":
            assert fitted[side] >= getattr(given, side)
            assert fitted[side] <= max(getattr(given, side), margins.MOST)


def test_fit_leaves_the_figure_as_it_was():
    fig = _heatmap([f"▁{LONG}"], ["▁b"])
    before = fig.to_json()
    fitted = margins.fit(fig.to_plotly_json())
    assert fig.to_json() == before
    assert fitted["layout"]["margin"]["l"] > fig.layout.margin.l


def test_a_margin_is_capped_where_a_phone_would_lose_its_plot():
    fig = _heatmap(["▁" + LONG * 4], ["▁b"])
    assert margins.fit(fig.to_plotly_json())["layout"]["margin"]["l"] == margins.MOST


def test_text_width_counts_chinese_as_wider_and_reads_the_widest_line():
    assert margins.text_width("狗狗狗") > margins.text_width("dog")
    assert margins.text_width("ab<br>abcdef") == margins.text_width("abcdef")
    assert margins.text_width("<b>abc</b>") == margins.text_width("abc")
    assert margins.text_width("&lt;/s&gt;") == margins.text_width("&/s&")


def test_number_labels_follow_the_range():
    assert margins.number_labels(0, 1) and max(map(len, margins.number_labels(0, 1))) <= 4
    assert any("k" in t for t in margins.number_labels(0, 50_000))
    assert margins.number_labels(1, 1000, log=True)[-1] == "1000"


def test_the_app_plot_sends_the_figure_with_its_margins_fitted():
    fig = _heatmap([f"▁{LONG}"], ["▁b"])
    sent = json.loads(app.common.fitted_plot().postprocess(fig).plot)
    plain = json.loads(fig.to_json())
    assert sent["layout"].pop("margin") == margins.fit(fig.to_plotly_json())["layout"]["margin"]
    assert sent["layout"].pop("height") == fig.layout.height + app.common.BOX_EXTRA
    for key in ("margin", "height"):
        plain["layout"].pop(key)
    assert sent == plain


def test_the_sent_json_writes_slashes_plainly_and_reads_back_the_same():
    """plotly writes "/" as \\u002f (six characters for one in 64 of a typed array's base64); the JSON sent writes it
    as itself, keeps < and > escaped (no "</" can end a script it is put in), and reads back as plotly's own."""
    import plotly.io as pio
    texts = ["a/b", "\\u002f", "\\\\u002f", "\\\\\\u002f", "x\\/y", "</script>", "<b>/</b>"]
    z = torch.linspace(-1, 1, 4096).reshape(64, 64).numpy()  # its base64 has many "/"
    fig = go.Figure(go.Heatmap(z=z, x=list(range(64)), text=(texts * 10)[:64]), layout=dict(title="/".join(texts)))
    sent = margins.fitted_json(fig)
    theirs = pio.to_json(margins.fit(fig.to_plotly_json()), validate=False)
    assert json.loads(sent) == json.loads(theirs)
    assert "\\u002f" in theirs and "</" not in sent and "\\u003c" in sent
    plain = sent.replace("\\\\", "")  # (an escaped backslash before u002f is the text's own)
    assert "\\u002f" not in plain and len(sent) < 0.85 * len(theirs)


def test_the_plot_gradio_makes_again_in_a_session_sends_fitted_figures_too():
    """Gradio answers an update of a component with a new component made from its arguments, which the session
    then uses: its figures are fitted as the first one's were; a plain gr.Plot's are sent as plotly writes them."""
    import asyncio

    import gradio as gr
    from gradio.state_holder import SessionState
    fig = _heatmap([f"▁{LONG}"], ["▁b"])
    with gr.Blocks() as demo:
        fitted, plain = app.common.fitted_plot(), gr.Plot()
        button = gr.Button()
        button.click(lambda: None, None, [fitted, plain])
    fn, state = demo.fns[0], SessionState(demo)
    asyncio.run(demo.postprocess_data(fn, [gr.update(visible=True), gr.update(visible=True)], state))
    assert state[fitted._id] is not fitted  # Gradio's copy, from here on
    sent, kept = asyncio.run(demo.postprocess_data(fn, [fig, fig], state))
    assert json.loads(sent["plot"])["layout"]["margin"] == margins.fit(fig.to_plotly_json())["layout"]["margin"]
    assert json.loads(kept["plot"]) == json.loads(fig.to_json())


def _gradio_plotly(page):
    """Open a blank page that has imported the front end's own plot chunk (its plotly, as the app's page has it)."""
    from app.gradio_adapter import plotly_chunk
    from tests.frontend import open_frontend
    open_frontend(page)
    page.evaluate("name => import('/assets/' + name)", plotly_chunk())
    page.wait_for_function("() => !!window.Plotly")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium not installed")
def test_plotly_finds_nothing_to_widen_and_little_to_spare():
    sync_api = pytest.importorskip("playwright.sync_api")
    from tools.bench_browser import CHROMIUM, LAUNCH_ARGS
    draw = """async ([fig, width]) => {
      const d = document.createElement('div');
      d.style.cssText = `width:${width}px`;
      document.body.replaceChildren(d);
      const given = Object.assign({}, fig.layout.margin);
      await Plotly.newPlot(d, fig.data, fig.layout, {responsive: true});
      const full = d._fullLayout, need = {l: 0, r: 0, t: 0, b: 0};
      // what plotly's auto-margins asked for beyond the plot area on each side, all but the figure's own margins
      for (const [id, push] of Object.entries(full._pushmargin)) {
        if (id === 'base') continue;
        for (const side of ['l', 'r', 't', 'b']) {
          const p = push[side];
          if (!p) continue;
          const far = side === 'l' || side === 'b' ? p.val <= 0.01 : p.val >= 0.99;
          const span = side === 'l' || side === 'r' ? full.width : full.height;
          const beyond = side === 'l' || side === 'b' ? -p.val : p.val - 1;
          if (far) need[side] = Math.max(need[side], p.size + Math.max(0, beyond) * span * 0.9);
        }
      }
      return {given, size: {l: full._size.l, r: full._size.r, t: full._size.t, b: full._size.b}, need};
    }"""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            _gradio_plotly(page)
            for width in (1300, 390):
                for name, fig in _figures().items():
                    fitted = json.loads(margins.fitted_json(fig))
                    r = page.evaluate(draw, [fitted, width])
                    # on a phone plotly may turn x tick labels upright where they would overlap, which one figure
                    # sent to every width cannot know: the bottom margin may widen there
                    # a colour bar's gap to the plot (2 % of the plot's width) is guessed for a phone's plot: at
                    # desktop width plotly may widen the right margin by the rest of that gap, no more
                    bar = any(t.get("type") == "heatmap" for t in fitted["data"])
                    for side in "lrtb" if width > 1000 else "lrt":
                        widened = r["size"][side] - r["given"][side]
                        allowed = 0.02 * width if bar and side == "r" and width > 1000 else 0
                        assert 0 <= widened <= allowed, (name, width, side, r)  # nothing (else) widened
                        if r["need"][side] > 0:  # and not much more room than plotly's own labels take
                            assert r["given"][side] - r["need"][side] <= 45, (name, width, side, r)
        finally:
            browser.close()


def test_a_figure_without_axes_keeps_its_margins():
    fig = go.Figure(go.Treemap(labels=["model", "encoder", "decoder"], parents=["", "model", "model"]),
                    layout=dict(margin=dict(l=10, r=10, t=50, b=10)))
    assert margins.fit(fig.to_plotly_json())["layout"]["margin"] == dict(l=10, r=10, t=50, b=10)
