"""The Inside-the-model tab's cost per translation, beside the translation itself (`python -m tools.bench --inside`).

For each sentence and run, a fresh Inspection (greedy, as the Translate tab keeps it) is drawn in every view of
the tab that reads the translation, the first of which runs the recording pass; the reference is one ordinary
greedy translation of the same sentence (`Translator.translate`) in the same process. Medians over the runs, with
torch on one thread (on two cores shared with other work, two threads make every small op wait for the other).
"""
import statistics
import time

import torch

from app.i18n import speaking
from app.shared import get_translator
from app.tabs import inside as tab
from core.analysis.inside import record_inspection

SENTENCES = ["Ein Mann in einem roten Hemd fährt mit dem Fahrrad durch die Stadt.",
             "Zwei Kinder spielen am Strand mit einem Ball.",
             "Eine Frau sitzt auf einer Bank und liest eine Zeitung."]

# the views that read the translation, drawn as the tab draws them (app/tabs/inside.py: VIEWS)
VIEWS = {"layernorm": lambda ins: tab.layernorm_view(ins, "decoder.layers.1.sublayer.0.norm", 2, 0.0, 0.0),
         "scale": lambda ins: tab.scale_view(ins, "cross", 1, 3),
         "residual": tab.residual_view,
         "ffn": lambda ins: tab.ffn_view(ins, "encoder/1"),
         "lens": tab.lens_view}


def _ms(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1e3


def measure(runs=5):
    """Median ms: the recording pass alone, each view of a fresh Inspection, all of them, a slider move (a view
    drawn again from the kept recording), and the reference translation."""
    torch.set_num_threads(1)
    with speaking("en"):  # the views draw in the event's language: here English
        return _measure(get_translator(), runs)


def _measure(tr, runs):
    rows = {k: [] for k in ("record", *VIEWS, "all_views", "slider", "translate")}
    for ins in (tr.inspect(s, method="greedy") for s in SENTENCES):  # warm-up
        for view in VIEWS.values():
            view(ins)
    for _ in range(runs):
        for s in SENTENCES:
            rows["translate"].append(_ms(tr.translate, s))
            ins = tr.inspect(s, method="greedy")
            with torch.no_grad():
                rows["record"].append(_ms(record_inspection, tr, ins))
            ins = tr.inspect(s, method="greedy")  # a fresh one: nothing kept yet
            t0 = time.perf_counter()
            for name, view in VIEWS.items():
                rows[name].append(_ms(view, ins))
            rows["all_views"].append((time.perf_counter() - t0) * 1e3)
            rows["slider"].append(_ms(tab.layernorm_view, ins, "decoder.layers.1.sublayer.0.norm", 3, 0.5, 0.5))
    return {f"inside_{k}_ms": statistics.median(v) for k, v in rows.items()}


def report(r):
    ref = r["inside_translate_ms"]
    print(f"{'Inside the model, per translation (ms)':44s} {'tab':>8s} {'reference':>10s}  reference is")
    rows = [("the recording pass (hooks, float32)", "record")] + [(f"view: {v}", v) for v in VIEWS] + [
        ("every view of a new translation", "all_views"), ("a slider moved (LayerNorm view)", "slider")]
    for text, key in rows:
        print(f"{text:44s} {r[f'inside_{key}_ms']:8.1f} {ref:10.1f}  one greedy translation of the sentence")
