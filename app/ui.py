"""The whole UI in one place: layout first, then the events, wired plainly."""
import inspect

import gradio as gr

from core import data as core_data
from core import decode as core_decode
from core import model as core_model
from core import train as core_train

from . import callbacks as cb
from . import masks, replay
from .bertviz_views import STATIC_FILES
from .diagram import DIAGRAM_JS
from .model import examples, get_translator

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


def code_accordion(title, *objects):
    """The source of the pieces a tab explores, shown beside their pictures."""
    with gr.Accordion(title, open=False):
        gr.Code("\n\n".join(inspect.getsource(o) for o in objects), language="python")


def build_demo():
    tr = get_translator()  # loaded once, shared by every session
    gr.set_static_paths(paths=STATIC_FILES)  # jQuery and d3 for bertviz, served from installed packages
    cfg = tr.config
    with gr.Blocks(title="Transformer Explorer") as demo:
        state = gr.State(None)  # the Inspection of this session's last translation
        gr.Markdown(INTRO)
        with gr.Tabs() as tabs:
            with gr.Tab("Overview", id="overview"):
                gr.Markdown(f"**The model:** {cfg['N']} encoder and {cfg['N']} decoder layers, d_model = "
                            f"{cfg['d_model']}, {cfg['h']} heads, d_ff = {cfg['d_ff']}, a shared vocabulary of "
                            f"{cfg['src_vocab']} SentencePiece pieces. The shapes on the arrows are those of the "
                            "current sentence. Click a block to explore it.")
                diagram = gr.HTML(cb.overview_svg(None), js_on_load=DIAGRAM_JS, elem_id="diagram")
            with gr.Tab("Translate", id="translate"):
                with gr.Row():
                    with gr.Column(scale=1):
                        src = gr.Textbox(label="German", lines=2, max_lines=6, value=examples()[0],
                                         placeholder="Ein Mann fährt Fahrrad.", elem_id="src")
                        gr.Examples(examples(), inputs=src, label="Examples written for this demo", examples_per_page=12)
                        method = gr.Radio(list(cb.METHODS), value="greedy", label="decoding")
                        with gr.Row():
                            beam = gr.Slider(1, 8, value=4, step=1, label="beam size")
                            alpha = gr.Slider(0.0, 2.0, value=tr.alpha, step=0.1, label="length penalty α")
                        with gr.Row():
                            temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="temperature (sampling)")
                            top_k = gr.Slider(0, 50, value=10, step=1, label="top-k (sampling, 0 = all)")
                        max_len = gr.Slider(5, 200, value=100, step=1, label="maximum output length (pieces)")
                        go_btn = gr.Button("Translate", variant="primary", elem_id="translate-btn")
                    with gr.Column(scale=1):
                        out = gr.Textbox(label="English", interactive=False, elem_id="out")
                        status = gr.Markdown(elem_id="status")
                        probs = gr.HTML(elem_id="token-probs")
                gr.Markdown("### Decoding, one step at a time\nThe decoder is auto-regressive: at each step it "
                            "sees the tokens so far (the subsequent mask hides the rest) and scores every "
                            "piece of the vocabulary for the next position.")
                with gr.Row(equal_height=True):
                    step = gr.Slider(1, 2, value=1, step=1, label="decoding step", interactive=False, elem_id="step",
                                     scale=6)
                    prev_btn = gr.Button("◀ previous step", size="sm", scale=1, min_width=120, elem_id="step-prev")
                    next_btn = gr.Button("next step ▶", size="sm", scale=1, min_width=120, elem_id="step-next")
                step_info = gr.HTML()
                with gr.Row():
                    step_mask = gr.Plot(label="mask")
                    step_cands = gr.Plot(label="candidates")
            with gr.Tab("Attention", id="attention"):
                with gr.Row():
                    kind = gr.Radio([(v[0], k) for k, v in cb.figures.KINDS.items()], value="encoder",
                                    label="attention", elem_id="kind")
                    layer = gr.Dropdown(list(range(cfg["N"])), value=0, label="layer", elem_id="layer")
                    head = gr.Dropdown(list(range(cfg["h"])), value=0, label="head", elem_id="head")
                with gr.Tabs():
                    with gr.Tab("One head"):
                        heat = gr.Plot(elem_id="heatmap")
                    with gr.Tab("All heads of the layer"):
                        grid = gr.Plot(elem_id="head-grid")
                    with gr.Tab("Layers × heads"):
                        overview = gr.Plot(elem_id="overview-grid")
                    with gr.Tab("bertviz head view"):
                        gr.Markdown("Lines link each token to the tokens it attends to; colours are heads. "
                                    "Pick encoder, decoder or cross attention in the view's menu.")
                        bv_head = gr.HTML(elem_id="bertviz-head")
                    with gr.Tab("bertviz model view"):
                        bv_model = gr.HTML(elem_id="bertviz-model")
                code_accordion("The code", core_model.attention, core_model.MultiHeadedAttention)

            with gr.Tab("Masks", id="masks"):
                gr.Markdown("Edit a small batch (one sentence a line, 2 to 4 pairs). The trainer pads it, builds "
                            "the source padding mask, and for the decoder the target padding mask `&` the "
                            "subsequent mask.")
                with gr.Row():
                    m_de = gr.Textbox(label="German (one per line)", lines=4, value=masks.DEFAULT_DE, elem_id="m-de")
                    m_en = gr.Textbox(label="English (one per line)", lines=4, value=masks.DEFAULT_EN, elem_id="m-en")
                with gr.Row():
                    m_sent = gr.Slider(0, 3, value=1, step=1, label="sentence of the batch", elem_id="m-sent")
                    m_kind = gr.Radio([("decoder self-attention", "decoder"), ("encoder self-attention", "encoder")],
                                      value="decoder", label="mask at work in")
                    m_layer = gr.Dropdown(list(range(cfg["N"])), value=0, label="layer")
                    m_head = gr.Dropdown(list(range(cfg["h"])), value=0, label="head")
                m_summary = gr.Markdown(elem_id="m-summary")
                m_ids = gr.HTML()
                m_masks = gr.Plot(elem_id="m-masks")
                m_shift = gr.HTML()
                gr.Markdown("### A mask at work in the trained model")
                m_scores = gr.Plot(elem_id="m-scores")
                gr.Markdown("### Padding and batching\nThe training set batched two ways (figures computed by the "
                            "training pipeline), and your batch as given.")
                m_batching = gr.Plot(elem_id="m-batching")
                code_accordion("The code", core_model.subsequent_mask, core_data.Batch)
            with gr.Tab("Positional encoding", id="positional"):
                with gr.Row():
                    pe_d = gr.Slider(4, 512, value=cfg["d_model"], step=2, label="d_model", elem_id="pe-d")
                    pe_n = gr.Slider(10, 500, value=100, step=1, label="positions")
                    pe_dims = gr.Textbox(value="4, 5, 6, 7", label="dimensions to plot", elem_id="pe-dims")
                    pe_k = gr.Slider(1, 50, value=5, step=1, label="offset k")
                pe_curves = gr.Plot(elem_id="pe-curves")
                with gr.Row():
                    pe_heat = gr.Plot()
                    pe_sim = gr.Plot()
                gr.Markdown("### Relative positions: PE(pos + k) = M_k · PE(pos)")
                pe_rel = gr.Plot(elem_id="pe-rel")
                pe_note = gr.Markdown()
                gr.Markdown("### The scale of words and positions in the trained model")
                pe_scale = gr.Plot()
                pe_scale_note = gr.Markdown()
                code_accordion("The code", core_model.PositionalEncoding, core_model.Embeddings)
            with gr.Tab("Training replay", id="training"):
                n_steps = cb.replay_length()
                with gr.Row():
                    play = gr.Button("Play", elem_id="play", scale=0)
                    r_step = gr.Slider(1, n_steps, value=n_steps, step=1, label="optimizer step", elem_id="r-step")
                playing = gr.State(False)
                timer = gr.Timer(0.6, active=False)
                r_fig = gr.Plot(elem_id="r-fig")
                r_probes = gr.HTML(elem_id="r-probes")
                gr.Markdown("### The Noam schedule")
                with gr.Row():
                    n_d = gr.Slider(64, 1024, value=512, step=64, label="d_model")
                    n_warm = gr.Slider(100, 16000, value=4000, step=100, label="warmup steps", elem_id="n-warm")
                    n_factor = gr.Slider(0.1, 3.0, value=1.0, step=0.1, label="factor")
                n_fig = gr.Plot(elem_id="n-fig")
                gr.Markdown("### Label smoothing")
                ls_eps = gr.Slider(0.0, 0.8, value=0.1, step=0.05, label="ε", elem_id="ls-eps")
                with gr.Row():
                    ls_fig = gr.Plot(elem_id="ls-fig")
                    ls_pen = gr.Plot(value=replay.penalization_figure())
                gr.Markdown("### What it did here: ε = 0 against ε = 0.1, same model, same budget")
                ab_fig = gr.Plot()
                ab_note = gr.Markdown()
                code_accordion("The code", core_train.rate, core_train.LabelSmoothing)

            with gr.Tab("Engineering", id="engineering"):
                gr.Markdown(cb.engineering_md())
                code_accordion("Greedy decoding with the cache, one decoder step written out, and beam search",
                               core_decode.greedy_decode, core_decode.IncrementalDecoder, core_decode.beam_search)
                code_accordion("The float16 decoder for one sentence on a CPU", core_model.half_precision_decoder)
                code_accordion("Dropout with a cheaper mask on a CPU (training)", core_model.Dropout)

        # events
        inputs = [src, method, beam, alpha, temperature, top_k, max_len, state]
        attention_outputs = [heat, grid, overview]
        rendered = [probs, step, step_info, step_mask, step_cands, diagram, bv_head, bv_model, *attention_outputs]
        go_btn.click(cb.translate, inputs, [out, status, state], api_name="translate").then(
            cb.render_translation, [state, kind, layer, head], rendered, api_visibility="private")
        src.submit(cb.translate, inputs, [out, status, state], api_visibility="private").then(
            cb.render_translation, [state, kind, layer, head], rendered, api_visibility="private")
        demo.load(cb.translate, inputs, [out, status, state], api_visibility="private").then(
            cb.render_translation, [state, kind, layer, head], rendered, api_visibility="private")
        # the slider's own event fires on the user's input only: a new translation (the render) and the
        # buttons send the step's views with the slider's new value, so nothing is drawn twice
        step_views = [step_info, step_mask, step_cands]
        step.input(cb.decoding_step, [state, step], step_views, trigger_mode="always_last",
                   api_visibility="private")
        for button, move in ((prev_btn, cb.previous_step), (next_btn, cb.next_step)):
            # a click while the last one runs waits for it, then moves on from the step it reached
            button.click(move, [state, step], [step, *step_views], trigger_mode="always_last",
                         api_visibility="private")
        for control in (kind, layer, head):
            control.change(cb.attention_figures, [state, kind, layer, head], attention_outputs,
                           api_visibility="private")
        mask_inputs = [m_de, m_en, m_sent, m_kind, m_layer, m_head]
        mask_outputs = [m_summary, m_ids, m_masks, m_shift, m_scores, m_batching]
        for control in mask_inputs:
            control.change(cb.masks_view, mask_inputs, mask_outputs, api_visibility="private")
        pe_inputs = [pe_d, pe_n, pe_dims, pe_k]
        pe_outputs = [pe_curves, pe_heat, pe_sim, pe_rel, pe_note]
        for control in pe_inputs:
            control.change(cb.positional_view, pe_inputs, pe_outputs, api_visibility="private")
        r_step.change(cb.replay_view, r_step, [r_fig, r_probes], api_visibility="private")
        play.click(cb.replay_toggle, [playing, r_step], [play, timer, playing, r_step], api_visibility="private")
        timer.tick(cb.replay_tick, [r_step, playing], [r_step, timer, playing], api_visibility="private")
        noam_inputs = [n_d, n_factor, n_warm]
        for control in noam_inputs:
            control.change(cb.noam_view, noam_inputs, n_fig, api_visibility="private")
        ls_eps.change(cb.smoothing_view, ls_eps, ls_fig, api_visibility="private")
        # first paint of the static tabs
        demo.load(cb.masks_view, mask_inputs, mask_outputs, api_visibility="private")
        demo.load(cb.positional_view, pe_inputs, pe_outputs, api_visibility="private")
        demo.load(cb.embedding_scale, None, [pe_scale, pe_scale_note], api_visibility="private")
        demo.load(cb.replay_view, r_step, [r_fig, r_probes], api_visibility="private")
        demo.load(cb.noam_view, noam_inputs, n_fig, api_visibility="private")
        demo.load(cb.smoothing_view, ls_eps, ls_fig, api_visibility="private")
        demo.load(cb.ablation_view, None, [ab_fig, ab_note], api_visibility="private")
    return demo
