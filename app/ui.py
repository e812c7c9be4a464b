"""The page: header, theme, the shared state, and the tabs in order. Each tab is one module of app/tabs/ whose
build() lays the tab out and wires its own events next to its components.

What crosses tabs is passed by hand, here: the state (the Inspection of this session's last translation)
goes to the tabs that read it, and a tab whose components another tab's event must reach returns them. One
such event exists: after each translation, translate.render_translation draws it in the Translate tab, the
Overview diagram and the Attention tab, in one event (the Attention tab is laid out after the Translate
tab, so that event is wired here, once every tab is built).
"""
import gradio as gr

from .bertviz_views import STATIC_FILES
from .shared import get_translator
from .tabs import attention, engineering, masks, overview, positional, training, translate

CSS = """
.tok-row {display:flex; flex-wrap:wrap; gap:4px; font-size:1.05em}
.tok {padding:2px 6px; border-radius:5px; border:1px solid #ccd}
.tok sub {font-size:0.65em; margin-left:2px; opacity:0.8}
.tok-legend {font-size:0.8em; color:#666; margin-top:4px}
.step code {font-size:1em} .step code.chosen {background:#fde2da}
"""

INTRO = """# Transformer Explorer
*The encoder-decoder Transformer of "Attention Is All You Need", written after "The Annotated Transformer",
trained on Multi30k German→English, and opened up.* Translate a sentence, then look inside: every attention
head, the masks, the positional encoding and the training run that made the model."""


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])


def build_demo():
    tr = get_translator()  # loaded once, shared by every session
    gr.set_static_paths(paths=STATIC_FILES)  # jQuery and d3 for bertviz, served from installed packages
    with gr.Blocks(title="Transformer Explorer") as demo:
        state = gr.State(None)  # the Inspection of this session's last translation
        gr.Markdown(INTRO)
        with gr.Tabs():
            with gr.Tab("Overview", id="overview"):
                diagram = overview.build(tr.config)
            with gr.Tab("Translate", id="translate"):
                translation = translate.build(demo, state, tr.alpha)
            with gr.Tab("Attention", id="attention"):
                attn = attention.build(tr.config, state)
            with gr.Tab("Masks", id="masks"):
                masks.build(demo, tr.config)
            with gr.Tab("Positional encoding", id="positional"):
                positional.build(demo, tr.config)
            with gr.Tab("Training replay", id="training"):
                training.build(demo)
            with gr.Tab("Engineering", id="engineering"):
                engineering.build()
        translation.translated.then(translate.render_translation, [state, *attn.controls],
                                    [*translation.outputs, diagram, *attn.outputs], api_visibility="private")
    return demo
