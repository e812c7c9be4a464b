"""The Engineering tab: how the shipped model was built, how well it translates and how fast it runs, read
from the files beside its weights, and the code of the decoding loops."""
import json

import gradio as gr

from core import decode as core_decode
from core import model as core_model

from ..common import code_panel
from ..shared import get_translator, model_dir
from .training import shipped_log


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


def _model_md(tr):
    cfg = tr.config
    n_params = sum(p.numel() for p in tr.model.parameters())
    return (f"### The model\n{cfg['N']} + {cfg['N']} layers, d_model {cfg['d_model']}, {cfg['h']} heads "
            f"(d_k = {cfg['d_model'] // cfg['h']}), d_ff {cfg['d_ff']}, dropout {cfg['dropout']}, shared "
            f"{cfg['src_vocab']}-piece SentencePiece vocabulary, embeddings tied with the output projection: "
            f"**{n_params / 1e6:.2f} M parameters**. Shipped as `config.json` + float16 safetensors"
            + (f", the average of {len(cfg['averaged_checkpoints'])} epoch checkpoints "
               f"({', '.join(cfg['averaged_checkpoints'])})." if cfg.get("averaged_checkpoints") else "."))


def _training_md():
    config, steps, epochs = shipped_log()
    if not (config and epochs):
        return None
    a = config["args"]
    best = max(epochs, key=lambda e: e.get("val_bleu", 0))
    return (f"### Training\n{len(epochs)} epochs, {len(steps)} optimizer steps in {epochs[-1]['minutes']:.0f} minutes "
            f"on {config['device']} ({config['world_size']} process{'es' if config['world_size'] > 1 else ''}"
            f"{', bf16 autocast' if a.get('bf16') else ''}); batches of up to {a['max_tokens']} padded tokens a side, "
            f"gradient accumulation {a['accum_iter']}; Adam (0.9, 0.98, 1e-9) with the Noam schedule (factor "
            f"{a['factor']}, warmup {a['warmup']}); label smoothing ε = {a['smoothing']}. Best validation BLEU "
            f"(greedy) during training: {best['val_bleu']:.1f} after epoch {best['epoch']}.")


def _quality_md():
    path = model_dir() / "eval.json"
    if not path.exists():
        return None
    rows = ["| split | decoding | BLEU | chrF |", "|---|---|---|---|"]
    for r in json.loads(path.read_text()):
        rows.append(f"| {r['split']} | {'greedy' if r['beam'] == 1 else 'beam ' + str(r['beam'])} | "
                    f"{r['bleu']:.2f} | {r['chrf']:.2f} |")
    return "### Quality (sacreBLEU, detokenized, cased)\n" + "\n".join(rows)


def _speed_md():
    path = model_dir() / "bench.json"
    try:
        table = speed_table(json.loads(path.read_text())) if path.exists() else ""
    except (OSError, ValueError):  # an unreadable file leaves the table out; the app still starts
        table = ""
    if not table:
        return None
    return "### Speed on this machine's kind (2 CPU cores), each beside a reference from the same run\n" + table


DECODING_MD = ("### Decoding in this app\nEach translation is decoded with cached keys and values, then run once "
               "more, teacher-forced, to record every attention map; changing layer, head or view redraws from "
               "those maps without running the model. How the decoding is made fast, and what each speed-up "
               "buys, is in `docs/performance.md` in the repository.")


def engineering_md():
    """How the shipped model was built and how well it does, from the files beside it."""
    parts = [_model_md(get_translator()), _training_md(), _quality_md(), _speed_md(), DECODING_MD]
    return "\n\n".join(p for p in parts if p)


def build():
    """Lay out the tab (it has no events)."""
    gr.Markdown(engineering_md())
    code_panel("Greedy decoding with the cache, one decoder step written out, and beam search",
               core_decode.greedy_decode, core_decode.IncrementalDecoder, core_decode.beam_search)
    code_panel("The float16 decoder for one sentence on a CPU", core_model.half_precision_decoder)
    code_panel("Dropout with a cheaper mask on a CPU (training)", core_model.Dropout)
