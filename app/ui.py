"""The page: header, theme, the shared state, and the tabs in order. Each tab is one module of app/tabs/ whose
build() lays the tab out and wires its own events next to its components.

What crosses tabs is passed by hand, here: the state (the Inspection of this session's last translation) and
the page record (which tab is open, what each view shows: app/views.py) go to the tabs that read them, and a
tab whose components another tab's event must reach returns them (the Heads tab opens a head in the Attention
tab). After each translation, `show_translation` draws it in the views on screen and clears the others, in the
Translate, Overview, Attention and Heads tabs (wired here, once every tab is built).
"""
import gradio as gr

from .bertviz_views import STATIC_FILES
from .shared import get_translator
from .tabs import attention, engineering, heads, masks, overview, positional, training, translate
from .views import ROOT, page_state

CSS = """
.tok-row {display:flex; flex-wrap:wrap; gap:4px; font-size:1.05em}
.tok {padding:2px 6px; border-radius:5px; border:1px solid #ccd}
.tok sub {font-size:0.65em; margin-left:2px; opacity:0.8}
.tok-legend {font-size:0.8em; color:#666; margin-top:4px}
.step code {font-size:1em} .step code.chosen {background:#fde2da}
.mask-svg {overflow-x:auto} .mask-title, .cands-title {font-size:0.9em; margin:4px 0 6px}
.cand {display:grid; grid-template-columns:9em 1fr 4.5em; gap:8px; align-items:center; font-size:0.95em;
  margin:2px 0} .cand-tok {overflow:hidden; text-overflow:ellipsis; white-space:nowrap; text-align:right}
.cand-bar {background:#eef1f6; height:14px; border-radius:3px; overflow:hidden}
.cand-bar span {display:block; height:100%; background:#4a7dc9}
.cand.chosen .cand-bar span {background:#e4572e} .cand.chosen .cand-tok {font-weight:bold}
.cand-p {text-align:right; font-variant-numeric:tabular-nums}
"""

INTRO = """# Transformer Explorer
*The encoder-decoder Transformer of "Attention Is All You Need", written after "The Annotated Transformer",
trained on Multi30k German→English, and opened up.* Translate a sentence, then look inside: every attention
head, the masks, the positional encoding and the training run that made the model."""


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])


def show_translation(page, ins, kind, layer, head, *heads_controls):
    """A new translation drawn in every view that shows one: those on screen drawn, the others cleared."""
    return (*translate.show(page, ins), *overview.show(page, ins), *attention.show(page, ins, kind, layer, head),
            *heads.show(page, ins, *heads_controls))


# A public Space is shared: events wait in one queue of at most QUEUE_SIZE, beyond which a request is told the
# queue is full and to try again; two events run at once (the machine has 2 cores), and of those that run the
# model (translations, the Masks tab's batch) one at a time.
QUEUE_SIZE = 64
CONCURRENCY = 2


def build_demo():
    tr = get_translator()  # loaded once, shared by every session
    gr.set_static_paths(paths=STATIC_FILES)  # jQuery and d3 for bertviz, served from installed packages
    with gr.Blocks(title="Transformer Explorer") as demo:
        state = gr.State(None)  # the Inspection of this session's last translation
        page = page_state({ROOT: "overview", "attention": "one-head"})  # the tabs open at first (app/views.py)
        gr.Markdown(INTRO)
        with gr.Tabs() as tabs:
            diagram = overview.build(tr.config, page, state)
            translation = translate.build(demo, page, state, tr.alpha)
            attn = attention.build(tr.config, page, state)
            head_tab = heads.build(tr.config, page, state, tabs, attn)
            masks.build(tr.config, page)
            positional.build(tr.config, page)
            training.build(page)
            engineering.build()
        # its progress shows on the token strip alone: a loading overlay on every view it may draw costs the
        # browser more than the drawing (app.bench --browser)
        translation.translated.then(show_translation, [page, state, *attn.controls, *head_tab.controls],
                                    [*translation.outputs, diagram, *attn.outputs, *head_tab.outputs],
                                    api_visibility="private", show_progress_on=translation.outputs[0])
    return demo.queue(max_size=QUEUE_SIZE, default_concurrency_limit=CONCURRENCY)
