"""UI callbacks of the Translate, Overview and Attention tabs: plain functions a test can call."""
import html
import time

import gradio as gr
import plotly.graph_objects as go

from core.model import subsequent_mask

from . import figures
from .bertviz_views import head_view_html, model_view_html
from .diagram import architecture_svg
from .model import MODEL_LOCK, get_translator

MAX_CHARS = 1000
METHODS = ("greedy", "beam", "sample")


def _clamp(x, lo, hi, cast=int):
    try:
        return max(lo, min(hi, cast(x)))
    except (TypeError, ValueError):
        return lo


def empty_figure(message):
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, font=dict(size=15, color="#777"))
    fig.update_layout(height=220, xaxis=dict(visible=False), yaxis=dict(visible=False),
                      margin=dict(l=10, r=10, t=10, b=10))
    return fig


def translate(text, method="beam", beam=4, alpha=None, temperature=1.0, top_k=10, max_len=100, previous=None):
    """Translate one German sentence and keep everything the other tabs show (returned as state).

    Returns (English translation, a status line in Markdown, the Inspection to keep)."""
    text = (text or "").strip()
    if not text:
        return "", "Type a German sentence (or pick an example) and press Translate.", previous
    if len(text) > MAX_CHARS:
        return "", (f"That input has {len(text):,} characters; this demo takes up to {MAX_CHARS:,}. "
                    "Try a single sentence."), previous
    method = method if method in METHODS else "beam"
    tr = get_translator()
    alpha = tr.alpha if alpha is None else _clamp(alpha, 0.0, 2.0, float)
    settings = dict(method=method, beam=_clamp(beam, 1, 8), alpha=alpha, max_len=_clamp(max_len, 1, 200))
    if method == "sample":
        settings.update(temperature=_clamp(temperature, 0.05, 5.0, float), top_k=_clamp(top_k, 0, 1000))
    t0 = time.perf_counter()
    with MODEL_LOCK:
        ins = tr.inspect(text, **settings)
    ms = (time.perf_counter() - t0) * 1e3
    label = {"greedy": "greedy", "beam": f"beam search (k = {settings['beam']}, α = {settings['alpha']:g})",
             "sample": f"sampling (T = {settings.get('temperature', 1):g}, top-k = {settings.get('top_k', 0)})"}[method]
    status = (f"{label} · {len(ins.src_tokens)} source pieces → {len(ins.out_tokens)} output pieces · "
              f"{ms:.0f} ms on the server, attention maps included")
    if ins.truncated:
        status += (f"\n\n**Notice:** the input was longer than the model's limit and was cut to its first "
                   f"{tr.max_src_tokens - 2} pieces.")
    if len(ins.out_tokens) >= settings["max_len"] and ins.out_tokens[-1] != "</s>":
        status += "\n\n**Notice:** the output reached the maximum length before the end-of-sentence token."
    return ins.translation, status, ins


def overview_svg(ins):
    """The architecture diagram with the shapes of the last translation."""
    cfg = get_translator().config
    if ins is None:
        return architecture_svg(cfg)
    return architecture_svg(cfg, len(ins.src_tokens), len(ins.tgt_tokens))


def token_probs(ins):
    return figures.token_probs_html(ins) if ins is not None else ""


def step_slider(ins):
    n = len(ins.out_tokens) if ins is not None else 1
    return gr.Slider(minimum=1, maximum=max(n, 2), value=1, step=1, interactive=ins is not None,
                     label=f"decoding step (1 to {n})")


def decoding_step(ins, step):
    """What the decoder saw and chose at step `step` (1-based): input so far, mask in effect, candidates."""
    if ins is None:
        msg = "Translate a sentence to replay its decoding."
        return "", empty_figure(msg), empty_figure(msg)
    t = _clamp(step, 1, len(ins.out_tokens)) - 1
    seen = ins.tgt_tokens[:t + 1]
    mask = subsequent_mask(len(seen))[0]
    mask_fig = figures.mask_matrix(mask, seen, seen, title=f"Subsequent mask in effect ({t + 1} × {t + 1}); "
                                   "the last row is this step's query", highlight_row=t)
    return figures.decoder_input_html(ins, t), mask_fig, figures.step_candidates(ins, t)


def _step_by(ins, step, delta):
    """The replay moved one step back or forward, kept within 1..n: the slider's value and that step's views."""
    if ins is None:
        return 1, *decoding_step(None, 1)
    k = _clamp(_clamp(step, 1, len(ins.out_tokens)) + delta, 1, len(ins.out_tokens))
    return k, *decoding_step(ins, k)


def previous_step(ins, step):
    return _step_by(ins, step, -1)


def next_step(ins, step):
    return _step_by(ins, step, +1)


def attention_figures(ins, kind, layer, head):
    """Heatmap of one head, grid of the layer's heads, overview of all layers and heads."""
    if ins is None:
        msg = "Translate a sentence first."
        return empty_figure(msg), empty_figure(msg), empty_figure(msg)
    kind = kind if kind in figures.KINDS else "encoder"
    maps, q, k = figures.attention_maps(ins, kind)
    layer = _clamp(layer, 0, maps.size(0) - 1)
    head = _clamp(head, 0, maps.size(1) - 1)
    name = figures.KINDS[kind][0]
    return (figures.attention_heatmap(maps[layer, head], q, k, f"{name}, layer {layer}, head {head} (rows attend to columns)"),
            figures.head_grid(maps[layer], q, k, f"{name}, all heads of layer {layer}"),
            figures.layer_head_overview(maps, f"{name}: every layer × every head"))


def bertviz_views(ins):
    if ins is None:
        return "", ""
    return head_view_html(ins), model_view_html(ins)


def render_translation(ins, kind, layer, head):
    """Every view of a new translation: token probabilities, the step replay (at step 1), the diagram's
    shapes, bertviz's views and the attention figures."""
    return (token_probs(ins), step_slider(ins), *decoding_step(ins, 1), overview_svg(ins), *bertviz_views(ins),
            *attention_figures(ins, kind, layer, head))


# ---- Masks tab -------------------------------------------------------------------------------------

def masks_view(german, english, sentence, kind, layer, head):
    """Tokenization, padded ids, the masks of one sentence, teacher forcing, and a mask at work."""
    from . import masks
    tr = get_translator()
    try:
        pairs = masks.parse_pairs(german, english)
    except ValueError as e:
        msg = str(e)
        return f"**{html.escape(msg)}**", "", empty_figure(msg), "", empty_figure(msg), empty_figure(msg)
    batch, examples = masks.make_batch(tr.tokenizer, pairs)
    i = _clamp(sentence, 0, len(pairs) - 1)
    piece = tr.tokenizer.id_to_piece
    src_p = [piece(t) for t in batch.src[i].tolist()]
    tgt_p = [piece(t) for t in batch.tgt[i].tolist()]
    ids = (masks.ids_table_html(tr.tokenizer, batch.src, "source ids (German), padded") +
           masks.ids_table_html(tr.tokenizer, batch.tgt, "decoder input ids tgt[:, :-1] (English), padded"))
    kind = kind if kind in ("encoder", "decoder") else "decoder"
    layer = _clamp(layer, 0, tr.config["N"] - 1)
    head = _clamp(head, 0, tr.config["h"] - 1)
    with MODEL_LOCK:
        raw, masked, weights, m = masks.scores_at_work(tr.model, batch, i, kind, layer, head)
    q = src_p if kind == "encoder" else tgt_p
    title = (f"{'Encoder' if kind == 'encoder' else 'Decoder'} self-attention, layer {layer}, head {head}, "
             f"sentence {i}")
    scores = masks.scores_figure(raw, masked, weights, m, q, q, title)
    n_pad = int((batch.src == 0).sum() + (batch.tgt == 0).sum())
    summary = (f"Batch of {len(pairs)} pairs: source {tuple(batch.src.shape)}, decoder input "
               f"{tuple(batch.tgt.shape)}, {n_pad} padding positions. Showing sentence {i}.")
    return (summary, ids, masks.mask_panels(batch, i, src_p, tgt_p), masks.shift_table_html(tr.tokenizer, batch, i),
            scores, masks.batching_figure(masks.load_batching_stats(), examples))


# ---- Positional-encoding tab -----------------------------------------------------------------------

def positional_view(d_model, positions, dims, k):
    from . import positional
    d_model = _clamp(d_model, 4, 1024)
    d_model -= d_model % 2
    positions = _clamp(positions, 2, 1000)
    k = _clamp(k, 1, positions - 1)
    try:
        dims = positional.parse_dims(dims, d_model)
    except ValueError as e:
        msg = str(e)
        return empty_figure(msg), empty_figure(msg), empty_figure(msg), empty_figure(msg), f"**{html.escape(msg)}**"
    pe = positional.encoding(d_model, positions)
    rel, res32, res64 = positional.relative_figure(pe, k)
    note = (f"For k = {k}, M_k reproduces PE(pos + k) from PE(pos) at every position: largest residual "
            f"{res32:.1e} with the model's float32 buffer, {res64:.1e} in float64.")
    return (positional.curves_figure(pe, dims), positional.heatmap_figure(pe), positional.similarity_figure(pe),
            rel, note)


def embedding_scale():
    from . import positional
    fig, s = positional.scale_figure(get_translator().model)
    note = (f"Median norm of a trained embedding: {s['raw_median']:.2f} as stored, {s['scaled_median']:.1f} after "
            f"× √d_model; every positional encoding has norm {s['pe_norm']:.1f}. Without the factor the position "
            "signal would dominate the word signal.")
    return fig, note


# ---- Training-replay tab ---------------------------------------------------------------------------

def replay_length():
    from . import replay
    return len(replay.shipped_log()[1])


def replay_view(step):
    from . import replay
    _, steps, epochs = replay.shipped_log()
    step = _clamp(step, 1, len(steps))
    return replay.replay_figure(steps, epochs, step), replay.probes_html(epochs, step, replay.probe_sentences())


def replay_tick(step, playing):
    """One tick of Play: advance about 1/60 of the run; stop at the end."""
    n = replay_length()
    if not playing:
        return gr.Slider(value=step), gr.Timer(active=False), False
    nxt = min(n, int(step or 1) + max(1, n // 60))
    done = nxt >= n
    return gr.Slider(value=nxt), gr.Timer(active=not done), not done


def replay_toggle(playing, step):
    n = replay_length()
    playing = not playing
    start = 1 if playing and int(step or 1) >= n else step  # Play at the end starts over
    return (gr.Button(value="Pause" if playing else "Play"), gr.Timer(active=playing), playing,
            gr.Slider(value=start))


def noam_view(d_model, factor, warmup):
    from . import replay
    config, steps, _ = replay.shipped_log()
    run = (config["args"], steps) if config else None
    return replay.noam_figure(_clamp(d_model, 8, 4096), _clamp(factor, 0.01, 10.0, float), _clamp(warmup, 1, 100000),
                              run)


def smoothing_view(eps):
    from . import replay
    fig, _ = replay.smoothing_figure(_clamp(eps, 0.0, 0.9, float))
    return fig


def ablation_view():
    """The label-smoothing ablation, and a sentence stating what its logs show."""
    from . import replay
    runs = replay.ablation_runs()
    if len(runs) < 2:
        return empty_figure("The ablation logs are not in assets/."), ""
    last = {label: r[2][-1] for label, r in runs.items()}
    a, b = last["ε = 0"], last["ε = 0.1"]
    text = (f"After {a['epoch']} epochs each on the same budget: ε = 0 reaches validation perplexity "
            f"{a['val_ppl']:.2f}, BLEU {a.get('val_bleu', float('nan')):.1f}, mean top-token confidence "
            f"{a['val_confidence']:.2f}; ε = 0.1 reaches perplexity {b['val_ppl']:.2f}, BLEU "
            f"{b.get('val_bleu', float('nan')):.1f}, confidence {b['val_confidence']:.2f}.")
    return replay.ablation_figure(runs), text


# ---- Engineering tab -------------------------------------------------------------------------------

def speed_table(b):
    """The figures of `python -m core.bench` (bench.json) as a Markdown table: measure, ours, reference,
    ratio; rows whose figures the file lacks (an older benchmark) are left out."""
    spec = [  # (measure, ours, reference, ratio, decimals)
        ("greedy, one sentence, cached (float16 decoder) vs the uncached loop (ms)", "greedy_cached_half_ms",
         "greedy_uncached_ms", "cache_speedup", 1),
        ("the same with the cache kept by the modules (ms)", "greedy_modules_half_ms", "greedy_uncached_ms",
         "cache_speedup_modules", 1),
        ("the same, both loops in float32 (ms)", "greedy_cached_fp32_ms", "greedy_uncached_fp32_ms",
         "cache_speedup_fp32", 1)]
    for tag in ("fp32", "bf16"):
        spec += [(f"training, target tokens/s vs nn.Transformer ({tag})", f"train_tokens_per_s_ours_{tag}",
                  f"train_tokens_per_s_torch_{tag}", f"train_speed_ratio_{tag}", 0),
                 (f"the same with nn.Dropout in this model ({tag})", f"train_tokens_per_s_stock_dropout_{tag}",
                  f"train_tokens_per_s_torch_{tag}", f"train_speed_ratio_stock_dropout_{tag}", 0)]
    spec += [
        ("dropout forward and backward on one 3,072 × d_ff activation, bf16 (ms): ours vs nn.Dropout",
         "dropout_ours_bfloat16_ms", "dropout_stock_bfloat16_ms", "dropout_speedup_bfloat16", 1),
        ("test set, sentences/s: beam 4 vs greedy", "beam4_sentences_per_s", "greedy_sentences_per_s", None, 1),
        ("one translation with all maps vs without (ms)", "inspect_ms", "translate_ms", "capture_overhead", 1)]
    rows = [f"| {label} | {b[ours]:.{n}f} | {b[ref]:.{n}f} | {'' if ratio is None else f'{b[ratio]:.2f}×'} |"
            for label, ours, ref, ratio, n in spec
            if all(k is None or isinstance(b.get(k), (int, float)) for k in (ours, ref, ratio))]
    return "| measure | ours | reference | ratio |\n|---|---|---|---|\n" + "\n".join(rows) if rows else ""


def engineering_md():
    """How the shipped model was built and how well it does, from the files beside it."""
    import json

    from .model import model_dir
    from .replay import shipped_log
    tr = get_translator()
    cfg = tr.config
    n_params = sum(p.numel() for p in tr.model.parameters())
    lines = [f"### The model\n{cfg['N']} + {cfg['N']} layers, d_model {cfg['d_model']}, {cfg['h']} heads "
             f"(d_k = {cfg['d_model'] // cfg['h']}), d_ff {cfg['d_ff']}, dropout {cfg['dropout']}, shared "
             f"{cfg['src_vocab']}-piece SentencePiece vocabulary, embeddings tied with the output projection: "
             f"**{n_params / 1e6:.2f} M parameters**. Shipped as `config.json` + float16 safetensors"
             + (f", the average of {len(cfg['averaged_checkpoints'])} epoch checkpoints "
                f"({', '.join(cfg['averaged_checkpoints'])})." if cfg.get("averaged_checkpoints") else ".")]
    config, steps, epochs = shipped_log()
    if config and epochs:
        a = config["args"]
        best = max(epochs, key=lambda e: e.get("val_bleu", 0))
        lines.append(
            f"### Training\n{len(epochs)} epochs, {len(steps)} optimizer steps in {epochs[-1]['minutes']:.0f} minutes on "
            f"{config['device']} ({config['world_size']} process{'es' if config['world_size'] > 1 else ''}"
            f"{', bf16 autocast' if a.get('bf16') else ''}); batches of up to {a['max_tokens']} padded tokens a side, "
            f"gradient accumulation {a['accum_iter']}; Adam (0.9, 0.98, 1e-9) with the Noam schedule (factor "
            f"{a['factor']}, warmup {a['warmup']}); label smoothing ε = {a['smoothing']}. Best validation BLEU "
            f"(greedy) during training: {best['val_bleu']:.1f} after epoch {best['epoch']}.")
    path = model_dir() / "eval.json"
    if path.exists():
        rows = ["| split | decoding | BLEU | chrF |", "|---|---|---|---|"]
        for r in json.loads(path.read_text()):
            rows.append(f"| {r['split']} | {'greedy' if r['beam'] == 1 else 'beam ' + str(r['beam'])} | "
                        f"{r['bleu']:.2f} | {r['chrf']:.2f} |")
        lines.append("### Quality (sacreBLEU, detokenized, cased)\n" + "\n".join(rows))
    path = model_dir() / "bench.json"
    try:
        table = speed_table(json.loads(path.read_text())) if path.exists() else ""
    except (OSError, ValueError):  # an unreadable file leaves the table out; the app still starts
        table = ""
    if table:
        lines.append("### Speed on this machine's kind (2 CPU cores), each beside a reference from the same run\n"
                     + table)
    lines.append("### Decoding in this app\nEach translation is decoded one new position per step over cached keys "
                 "and values (`IncrementalDecoder`: the decoder layer's equations written out over the model's own "
                 "weights; for one sentence on a CPU the decoder runs in float16, the encoder and attention in "
                 "float32). The chosen output is then re-run once by the same model, teacher-forced, through the "
                 "modules with every attention layer on its explicit path, so that all maps and every step's "
                 "candidates come from a single forward pass. Attention weights live in the session's state: "
                 "changing layer, head or view never re-runs the model.")
    return "\n\n".join(lines)
