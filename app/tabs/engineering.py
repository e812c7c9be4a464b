"""The Engineering tab: how the page's own model (the shipped one, unless EXPLORER_MODEL_DIR names another) was
built, how well it translates and how fast it runs, read from the files beside its weights, saying whose figures
they are; and the code of the decoding loops."""
import html
import json

import gradio as gr

from core import decode as core_decode
from core import model as core_model
from core.bench import table_rows

from ..common import code_panel, md_literal
from ..figures.compare import model_name
from ..figures.training import bleu_summary, shipped_log
from ..i18n import DEFAULT, LANGS, L, speaking, table, text, written
from ..models import MODELS
from ..shared import get_translator, is_converted, is_shipped, model_dir


def _speed_section(b):
    """The figures of `python -m core.bench` (bench.json) as a Markdown table (key, values), row by row as the
    benchmark declares them (core.bench.ROWS), their words in the event's language (bench.row.*, bench.ref.*, the
    command line's too); rows whose figures the file lacks (an older benchmark) are left out. None when no row is left."""
    rows = [f"| {text(f'bench.row.{row}')} | {ours} | {ref} | {text(f'bench.ref.{row}')} | {ratio} |"
            for row, ours, ref, ratio in table_rows(b)]
    if not rows:
        return None
    values = dict(rows="\n".join(rows))
    skipped = b.get("bf16_training_skipped")  # True; an older file: the reason, in English
    if skipped is True or isinstance(skipped, str):  # why: from the measured slowdown, in the event's language
        slow = b.get("bf16_matmul_slowdown")
        reason = (text("bench.bf16-slow", x=slow) if isinstance(slow, (int, float))
                  else html.escape(str(skipped)))
        return "ui.engineering.speed.table-skipped", dict(values, reason=reason)
    return "ui.engineering.speed.table", values


def speed_table(b):
    """The speed table of bench.json `b` in Markdown, in the event's language ("" when the file holds no row)."""
    section = _speed_section(b)
    if section is None:
        return ""
    key, values = section
    return text(key, **values)


def _model_md(tr):
    cfg = tr.config
    n_params = sum(p.numel() for p in tr.model.parameters())
    values = dict(layers=cfg["N"], d_model=cfg["d_model"], heads=cfg["h"], d_k=cfg["d_model"] // cfg["h"],
                  d_ff=cfg["d_ff"], dropout=cfg["dropout"], vocab=cfg["src_vocab"], params=f"{n_params / 1e6:.2f}")
    if is_converted(cfg):
        return "ui.engineering.model-converted", values
    kept = cfg.get("averaged_checkpoints")
    if kept:
        return "ui.engineering.model-averaged", dict(values, checkpoints=len(kept), names=", ".join(kept))
    return "ui.engineering.model", values


def _named(kind, name):
    """A name read from the shipped files (a split, a device) in the event's language, where the tables have it;
    else as it is."""
    key = f"engineering.{kind}.{name}"
    return text(key) if key in table(DEFAULT) else name


def _training_md():
    config, steps, epochs = shipped_log()
    if not (config and epochs):
        return None
    a = config["args"]
    scores = bleu_summary(epochs) or dict(last_epoch=epochs[-1]["epoch"], last=float("nan"),
                                          best_epoch=epochs[-1]["epoch"], best=float("nan"))
    processes = ".processes" if config["world_size"] > 1 else ""  # "1 process", "2 processes"
    autocast = ".bf16" if a.get("bf16") else ""
    return f"ui.engineering.training{processes}{autocast}", dict(epochs=len(epochs), steps=len(steps), minutes=f"{epochs[-1]['minutes']:.0f}",
                     device=_named("device", config["device"]), processes=config["world_size"], max_tokens=a["max_tokens"],
                     accum=a["accum_iter"], factor=a["factor"], warmup=a["warmup"], smoothing=a["smoothing"],
                     bleu=f"{scores['best']:.2f}", epoch=scores["best_epoch"], final=f"{scores['last']:.2f}",
                     last=scores["last_epoch"])


def _decoding(beam):
    return text("engineering.greedy") if beam == 1 else text("engineering.beam", k=beam)


def _quality_md():
    path = model_dir() / "eval.json"
    if not path.exists():
        return None
    rows = [f"| {_named('split', r['split'])} | {_decoding(r['beam'])} | {r['bleu']:.2f} | {r['chrf']:.2f} |"
            for r in json.loads(path.read_text())]
    return "ui.engineering.quality", dict(rows="\n".join(rows))


def _speed_md():
    """The speed title and table (two sections), or no section where bench.json is missing, unreadable or holds
    no row."""
    path = model_dir() / "bench.json"
    try:
        table = _speed_section(json.loads(path.read_text())) if path.exists() else None
    except (OSError, ValueError):  # an unreadable file leaves the table out; the app still starts
        table = None
    return [("ui.engineering.speed", {}), table] if table else []


def _whose_md():
    """Whose figures the tab shows: the page's own model's (app.models.MODELS.default, by its name in the event's
    language; a directory's name escaped), whatever model a session's menu has chosen (the tab is written once,
    as the page is built)."""
    return "ui.engineering.of", dict(model=md_literal(model_name(MODELS.default)))


def sections():
    """The tab's text as (key, values) pairs, one Markdown each: whose figures they are, how the page's own model
    was built and how well it does, from the files beside it (the tables' words in the event's language)."""
    measured = [_training_md(), _quality_md(), *_speed_md()]
    none = None if is_shipped() or any(measured) else ("ui.engineering.none", {})
    parts = [_whose_md(), _model_md(get_translator()), *measured, none, ("ui.engineering.decoding", {})]
    return [p for p in parts if p]


def engineering_md():
    """The tab's text in the event's language, as one Markdown."""
    return "\n\n".join(text(key, **values) for key, values in sections())


def written_sections():
    """The tab's sections written in every language at once, as the page is built: [(key, {lang: Markdown})].
    Each language's text is drawn in that language (`speaking`): its tables' words differ by language, not only
    its numbers."""
    by_lang = {}
    for lang in LANGS:
        with speaking(lang):
            by_lang[lang] = [(key, text(key, **values)) for key, values in sections()]
    keys = [key for key, _ in by_lang[DEFAULT]]
    assert all([key for key, _ in by_lang[lang]] == keys for lang in LANGS), by_lang  # the same sections in each
    return [(key, {lang: by_lang[lang][i][1] for lang in LANGS}) for i, key in enumerate(keys)]


def build():
    """Lay out the tab (it has no events; its text is read from the files beside the model at start)."""
    with gr.Tab(L("ui.tab.engineering"), id="engineering"):
        for key, markdown in written_sections():  # each section in every language, the browser picks one
            gr.Markdown(written(key, markdown))
        code_panel(L("ui.engineering.code.decoding"), core_decode.greedy_decode, core_decode.IncrementalDecoder,
                   core_decode.beam_search)
        code_panel(L("ui.engineering.code.half"), core_decode.CastLinear, core_decode.HalfPrecisionDecoder)
        code_panel(L("ui.engineering.code.dropout"), core_model.Dropout)
