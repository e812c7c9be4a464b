"""Another model beside the shipped one, in the same run: `python -m tools.bench --model DIR`.

Each model is measured in a process of its own (EXPLORER_MODEL_DIR set, the page built as `python app.py` builds
it), so that its memory is its own:

- loading: the Translator, and the page built on it (seconds);
- a translation as the Translate tab makes it (every attention map kept), greedy and beam, median ms;
- each tab's first opening on the server: every view of the tab drawn once for a new translation, with its
  controls' first values (the Learn tab: all its steps, reported per step), median over the sentences, ms;
- the process's peak resident memory after all of it (MB).

The table puts the two models side by side with their ratio; the JSON line holds both.
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


def measure_here(repeat=3):
    """The figures of the model named by $EXPLORER_MODEL_DIR, measured in this process."""
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
    translate(SENTENCES[0], "greedy")  # warm-up
    for method in ("greedy", "beam"):
        times = []
        for _ in range(repeat):
            for s in SENTENCES:
                t0 = time.perf_counter()
                translate(s, method)
                times.append(time.perf_counter() - t0)
        r[f"{method}_ms"] = statistics.median(times) * 1e3
    tabs = {}
    for s in SENTENCES:
        ins = translate(s, "greedy")[2]
        for tab in demo.tab_views:
            try:
                tabs.setdefault(tab.where[0], []).append(_tab_ms(tab, ins))
            except Exception as e:  # reported, not hidden: a tab that cannot draw this model
                tabs[tab.where[0]] = f"error: {type(e).__name__}: {e}"[:200]
    r["tabs_ms"] = {k: v if isinstance(v, str) else statistics.median(v) for k, v in tabs.items()}
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return r


def torch_threads():
    import torch
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))


def measure(directory, repeat=3):
    """measure_here in a fresh process on the model in `directory`."""
    env = dict(os.environ, EXPLORER_MODEL_DIR=str(Path(directory).resolve()), GRADIO_ANALYTICS_ENABLED="False")
    out = subprocess.run([sys.executable, "-m", "tools.bench_model", "--here", str(repeat)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(v):
    return v if isinstance(v, str) else f"{v:.1f}"


def report(shipped, other, name):
    print(f"{'measure':40s} {name[:14]:>14s} {'shipped':>10s} {'ratio':>7s}")
    rows = [("load the Translator (s)", "load_s"), ("build the page (s)", "page_build_s"),
            ("translation, greedy, every map (ms)", "greedy_ms"), ("translation, beam 4, every map (ms)", "beam_ms"),
            ("peak resident memory (MB)", "peak_rss_mb")]
    rows += [(f"tab '{k}' first opening (ms)", ("tabs_ms", k)) for k in shipped["tabs_ms"]]
    for label, key in rows:
        a, b = ((other[key[0]].get(key[1], "absent"), shipped[key[0]][key[1]]) if isinstance(key, tuple)
                else (other[key], shipped[key]))
        ratio = f"{a / b:6.2f}x" if not isinstance(a, str) and not isinstance(b, str) and b else ""
        print(f"{label:40s} {_cell(a):>14s} {_cell(b):>10s} {ratio:>7s}")


def run(directory, repeat=3, save=None):
    from core.data import ASSETS
    shipped, other = measure(ASSETS, repeat), measure(directory, repeat)
    report(shipped, other, Path(directory).name)
    record = {"model": Path(directory).name, "other": other, "shipped": shipped}
    print(json.dumps(record))
    if save:
        Path(save).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--here"]:
        print(json.dumps(measure_here(int(sys.argv[2]))))
