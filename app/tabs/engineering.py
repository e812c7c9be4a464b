"""The Engineering tab: how the shipped model was built, how well it translates and how fast it runs, read
from the files beside its weights, and the code of the decoding loops."""
import html
import json

import gradio as gr

from core import decode as core_decode
from core import model as core_model
from core.bench import table_rows

from ..common import code_panel
from ..i18n import L
from ..shared import get_translator, model_dir
from .training import shipped_log


def speed_table(b):
    """The figures of `python -m core.bench` (bench.json) as a Markdown table, row by row as the benchmark
    declares them (core.bench.ROWS); rows whose figures the file lacks (an older benchmark) are left out."""
    rows = [f"| {label} | {ours} | {ref} | {ref_is} | {ratio} |" for label, ours, ref, ratio, ref_is in table_rows(b)]
    if not rows:
        return ""
    table = "| measure | ours | reference | reference is | ratio |\n|---|---|---|---|---|\n" + "\n".join(rows)
    if isinstance(b.get("bf16_training_skipped"), str):
        table += f"\n\nbf16 training rows left out: {html.escape(b['bf16_training_skipped'])}."
    return table


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
    """Lay out the tab (it has no events; its text is read from the files beside the model at start)."""
    with gr.Tab(L("ui.tab.engineering"), id="engineering"):
        gr.Markdown(engineering_md())
        code_panel("Greedy decoding with the cache, one decoder step written out, and beam search",
                   core_decode.greedy_decode, core_decode.IncrementalDecoder, core_decode.beam_search)
        code_panel("The float16 decoder for one sentence on a CPU", core_decode.CastLinear,
                   core_decode.HalfPrecisionDecoder)
        code_panel("Dropout with a cheaper mask on a CPU (training)", core_model.Dropout)
