"""Another model beside the shipped one, in the same run: `python -m tools.bench --model DIR`.

Each model is measured in a process of its own (EXPLORER_MODEL_DIR set, the page built as `python app.py` builds
it), so that its memory is its own:

- loading: the Translator, and the page built on it (seconds);
- a translation as the Translate tab makes it (every attention map kept), greedy and beam, median ms;
- each tab's first opening on the server: every view of the tab drawn once for a new translation, with its
  controls' first values (the Learn tab: all its steps, reported per step), median over the sentences, ms;
- the head atlas as the Heads tab measures a model that has none, on demand (core.analysis.heads.measure: its
  first SAMPLE validation pairs where Multi30k is at hand, else the project's examples), in seconds, and its
  longest stage (the longest a translation waits for it);
- the process's peak resident memory after all of it (MB).

A model with random weights never ends a sentence: its outputs run to the length limit (1.5 times the source plus
ten pieces), two to three times as long as a trained model's, and every view that reads the output grows with them.
So the other model is measured twice: as it decodes, and with each output cut to the length of the shipped model's
output for the same sentence ("same lengths"), which is the work a trained model of that shape does. The table puts
the models side by side with their ratios and the output lengths; the JSON line holds all of it.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SENTENCES = ["Ein Mann in einem roten Hemd fährt mit dem Fahrrad durch die Stadt.",
             "Zwei Kinder spielen am Strand mit einem Ball.",
             "Eine Frau sitzt auf einer Bank und liest eine Zeitung."]


def _tab_ms(tab, ins):
    """ms to draw every view of `tab` once for `ins` (the Learn tab: per step), in English."""
    from tools.i18n_report import view_values
    t0 = time.perf_counter()
    values = view_values(tab, ins, "en")
    ms = (time.perf_counter() - t0) * 1e3
    return ms / len(values) * len(tab.outputs) if tab.where == ("learn",) and values else ms


def measure_here(repeat=3, lengths=None):
    """The figures of the model named by $EXPLORER_MODEL_DIR, measured in this process; `lengths`: each sentence's
    output cut to that many pieces (else the model's own limit)."""
    torch_threads()
    t0 = time.perf_counter()
    from app.shared import get_translator
    tr = get_translator()
    r = {"load_s": time.perf_counter() - t0, "parameters": sum(p.numel() for p in tr.model.parameters())}
    t0 = time.perf_counter()
    from app.ui import build_demo
    demo = build_demo()
    r["page_build_s"] = time.perf_counter() - t0
    from app.translating import translate
    cap = dict(zip(SENTENCES, lengths or [None] * len(SENTENCES)))
    translate(SENTENCES[0], "greedy", max_len=cap[SENTENCES[0]])  # warm-up
    for method in ("greedy", "beam"):
        times = []
        for _ in range(repeat):
            for s in SENTENCES:
                t0 = time.perf_counter()
                ins = translate(s, method, max_len=cap[s])[2]
                times.append(time.perf_counter() - t0)
                r.setdefault(f"{method}_pieces", {})[s] = len(ins.out_tokens)
        r[f"{method}_ms"] = statistics.median(times) * 1e3
    r["greedy_pieces"] = [r["greedy_pieces"][s] for s in SENTENCES]
    r["beam_pieces"] = [r["beam_pieces"][s] for s in SENTENCES]
    tabs = {}
    for s in SENTENCES:
        ins = translate(s, "greedy", max_len=cap[s])[2]
        for tab in demo.tab_views:
            try:
                tabs.setdefault(tab.where[0], []).append(_tab_ms(tab, ins))
            except Exception as e:  # reported, not hidden: a tab that cannot draw this model
                tabs[tab.where[0]] = f"error: {type(e).__name__}: {e}"[:200]
    r["tabs_ms"] = {k: v if isinstance(v, str) else statistics.median(v) for k, v in tabs.items()}
    if lengths is None:  # the atlas decodes to its own limits: measured on the model as it is
        from core.analysis.heads import SAMPLE
        from core.analysis.heads import measure as measure_atlas
        t0 = time.perf_counter()
        atlas = measure_atlas(tr, SAMPLE)
        r["atlas_s"] = time.perf_counter() - t0
        r["atlas_stage_s"] = max(atlas["stage_seconds"].values())
        r["atlas_pairs"] = f"{atlas['data']['sentences']} {atlas['data']['split']}"
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return r


def torch_threads():
    import torch
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))


def measure(directory, repeat=3, lengths=None):
    """measure_here in a fresh process on the model in `directory`."""
    env = dict(os.environ, EXPLORER_MODEL_DIR=str(Path(directory).resolve()), GRADIO_ANALYTICS_ENABLED="False")
    cut = [",".join(map(str, lengths))] if lengths else []
    out = subprocess.run([sys.executable, "-m", "tools.bench_model", "--here", str(repeat), *cut], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(v):
    return v if isinstance(v, str) else f"{v:.1f}"


def _value(r, key):
    if isinstance(key, tuple):
        return r[key[0]].get(key[1], "absent")
    v = r.get(key, "-")
    return "/".join(map(str, v)) if isinstance(v, list) else v


def _ratio(a, b):
    return f"{a / b:6.2f}x" if not isinstance(a, str) and not isinstance(b, str) and b else ""


def report(shipped, other, same, name):
    """The table: the other model as it decodes, at the shipped model's output lengths, and the shipped model."""
    print(f"{'measure':38s} {name[:14]:>14s} {'ratio':>7s} {'same lengths':>13s} {'ratio':>7s} {'shipped':>9s}")
    rows = [("load the Translator (s)", "load_s"), ("build the page (s)", "page_build_s"),
            ("output pieces, greedy", "greedy_pieces"), ("output pieces, beam 4", "beam_pieces"),
            ("translation, greedy, every map (ms)", "greedy_ms"), ("translation, beam 4, every map (ms)", "beam_ms"),
            ("head atlas on demand (s)", "atlas_s"), ("  its longest stage (s)", "atlas_stage_s"),
            ("  pairs measured", "atlas_pairs"), ("peak resident memory (MB)", "peak_rss_mb")]
    rows += [(f"tab '{k}' first opening (ms)", ("tabs_ms", k)) for k in shipped["tabs_ms"]]
    for label, key in rows:
        a, c, b = _value(other, key), _value(same, key), _value(shipped, key)
        print(f"{label:38s} {_cell(a):>14s} {_ratio(a, b):>7s} {_cell(c):>13s} {_ratio(c, b):>7s} {_cell(b):>9s}")


def run(directory, repeat=3, save=None):
    from core.data import ASSETS
    shipped = measure(ASSETS, repeat)
    other = measure(directory, repeat)
    same = measure(directory, repeat, lengths=shipped["greedy_pieces"])
    report(shipped, other, same, Path(directory).name)
    record = {"model": Path(directory).name, "other": other, "same_lengths": same, "shipped": shipped}
    print(json.dumps(record))
    if save:
        Path(save).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--here"]:
        cut = [int(n) for n in sys.argv[3].split(",")] if sys.argv[3:] else None
        print(json.dumps(measure_here(int(sys.argv[2]), cut)))
