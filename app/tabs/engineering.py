"""The Engineering tab: how the shipped model was built, how well it translates and how fast it runs, read
from the files beside its weights, and the code of the decoding loops."""
import html
import json

import gradio as gr

from core import decode as core_decode
from core import model as core_model
from core.bench import table_rows

from ..common import code_panel
from ..i18n import DEFAULT, LANGS, L, table, text, written
from ..shared import get_translator, model_dir
from .training import shipped_log


def _speed_section(b, lang="en"):
    """The figures of `python -m core.bench` (bench.json) as a Markdown table (key, values), row by row as the
    benchmark declares them (core.bench.ROWS), their words in `lang` (bench.row.*, bench.ref.*, the command
    line's too); rows whose figures the file lacks (an older benchmark) are left out. None when no row is left."""
    rows = [f"| {text(lang, f'bench.row.{row}')} | {ours} | {ref} | {text(lang, f'bench.ref.{row}')} | {ratio} |"
            for row, ours, ref, ratio in table_rows(b)]
    if not rows:
        return None
    values = dict(rows="\n".join(rows))
    skipped = b.get("bf16_training_skipped")  # True; an older file: the reason, in English
    if skipped is True or isinstance(skipped, str):  # why: from the measured slowdown, in `lang`
        slow = b.get("bf16_matmul_slowdown")
        reason = (text(lang, "bench.bf16-slow", x=slow) if isinstance(slow, (int, float))
                  else html.escape(str(skipped)))
        return "ui.engineering.speed.table-skipped", dict(values, reason=reason)
    return "ui.engineering.speed.table", values


def speed_table(b, lang="en"):
    """The speed table of bench.json `b` in Markdown, in `lang` ("" when the file holds no row)."""
    section = _speed_section(b, lang)
    if section is None:
        return ""
    key, values = section
    return text(lang, key, **values)


def _model_md(tr):
    cfg = tr.config
    n_params = sum(p.numel() for p in tr.model.parameters())
    values = dict(layers=cfg["N"], d_model=cfg["d_model"], heads=cfg["h"], d_k=cfg["d_model"] // cfg["h"],
                  d_ff=cfg["d_ff"], dropout=cfg["dropout"], vocab=cfg["src_vocab"], params=f"{n_params / 1e6:.2f}")
    kept = cfg.get("averaged_checkpoints")
    if kept:
        return "ui.engineering.model-averaged", dict(values, checkpoints=len(kept), names=", ".join(kept))
    return "ui.engineering.model", values


def _named(lang, kind, name):
    """A name read from the shipped files (a split, a device) in `lang`, where the tables have it; else as it is."""
    key = f"engineering.{kind}.{name}"
    return text(lang, key) if key in table(DEFAULT) else name


def _training_md(lang="en"):
    config, steps, epochs = shipped_log()
    if not (config and epochs):
        return None
    a = config["args"]
    best = max(epochs, key=lambda e: e.get("val_bleu", 0))
    processes = ".processes" if config["world_size"] > 1 else ""  # "1 process", "2 processes"
    autocast = ".bf16" if a.get("bf16") else ""
    return f"ui.engineering.training{processes}{autocast}", dict(epochs=len(epochs), steps=len(steps), minutes=f"{epochs[-1]['minutes']:.0f}",
                     device=_named(lang, "device", config["device"]), processes=config["world_size"], max_tokens=a["max_tokens"],
                     accum=a["accum_iter"], factor=a["factor"], warmup=a["warmup"], smoothing=a["smoothing"],
                     bleu=f"{best['val_bleu']:.1f}", epoch=best["epoch"])


def _decoding(beam, lang):
    return text(lang, "engineering.greedy") if beam == 1 else text(lang, "engineering.beam", k=beam)


def _quality_md(lang="en"):
    path = model_dir() / "eval.json"
    if not path.exists():
        return None
    rows = [f"| {_named(lang, 'split', r['split'])} | {_decoding(r['beam'], lang)} | {r['bleu']:.2f} | {r['chrf']:.2f} |"
            for r in json.loads(path.read_text())]
    return "ui.engineering.quality", dict(rows="\n".join(rows))


def _speed_md(lang="en"):
    """The speed title and table (two sections), or no section where bench.json is missing, unreadable or holds
    no row."""
    path = model_dir() / "bench.json"
    try:
        table = _speed_section(json.loads(path.read_text()), lang) if path.exists() else None
    except (OSError, ValueError):  # an unreadable file leaves the table out; the app still starts
        table = None
    return [("ui.engineering.speed", {}), table] if table else []


def sections(lang="en"):
    """The tab's text as (key, values) pairs, one Markdown each: how the shipped model was built and how well it
    does, from the files beside it (the tables' words in `lang`)."""
    parts = [_model_md(get_translator()), _training_md(lang), _quality_md(lang), *_speed_md(lang),
             ("ui.engineering.decoding", {})]
    return [p for p in parts if p]


def engineering_md(lang="en"):
    """The tab's text in `lang`, as one Markdown."""
    return "\n\n".join(text(lang, key, **values) for key, values in sections(lang))


def build():
    """Lay out the tab (it has no events; its text is read from the files beside the model at start)."""
    with gr.Tab(L("ui.tab.engineering"), id="engineering"):
        # each section written in both languages (its tables' words differ by language, not only its numbers)
        by_lang = {lang: sections(lang) for lang in LANGS}
        for i, (key, _) in enumerate(by_lang[DEFAULT]):
            gr.Markdown(written(key, {lang: text(lang, key, **by_lang[lang][i][1]) for lang in LANGS}))
        code_panel(L("ui.engineering.code.decoding"), core_decode.greedy_decode, core_decode.IncrementalDecoder,
                   core_decode.beam_search)
        code_panel(L("ui.engineering.code.half"), core_decode.CastLinear, core_decode.HalfPrecisionDecoder)
        code_panel(L("ui.engineering.code.dropout"), core_model.Dropout)
