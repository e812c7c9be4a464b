"""App benchmarks, each beside a reference measured in the same run.

    python -m tools.bench [--runs 3]
    python -m tools.bench --browser [--clicks 5] [--save FILE]   (the app in headless Chromium: tools/bench_browser.py)
    python -m tools.bench --inside [--runs 3]   (the Inside-the-model tab per translation: tools/bench_inside.py)
    python -m tools.bench --learn [--clicks 4]  (a Learn step change, click to figure drawn: tools/bench_learn.py)
    python -m tools.bench --timelapse [--save FILE]   (the Time-lapse scrubber and the server's memory:
                                                       tools/bench_timelapse.py)
    python -m tools.bench --compare [--rounds 2]               (the Compare tab beside the Attention tab:
                                                               tools/bench_compare.py)
    python -m tools.bench --tabs [--rounds 2] [--save FILE]   (each tab opened, first visit and after a new sentence:
                                                               tools/bench_tabs.py)
    python -m tools.bench --model DIR [--runs 3] [--save FILE]   (another model beside the shipped one: loading,
                                                  translations, each tab's views, memory: tools/bench_model.py)

1. cold start: from `python app.py` to the first page served, beside the bare `import gradio` time;
2. a translation with every attention map captured (what the Translate tab runs), median server time,
   beside the same translation without capture, for greedy and beam search;
3. the public /translate endpoint called through gradio_client, beside the same call in this process;
4. a translation made again with heads switched off (the Heads tab), beside the same sentence translated as usual.
With --browser, the page as a reader meets it instead (tools/bench_browser.py).
Prints a table, then one JSON line.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from app.shared import get_translator
from app.tabs.translate import translate
from tools.serve import AppProcess

SENTENCES = ["Ein Mann in einem roten Hemd fährt mit dem Fahrrad durch die Stadt.",
             "Zwei Kinder spielen am Strand mit einem Ball.",
             "Eine Frau sitzt auf einer Bank und liest eine Zeitung."]


def cold_start():
    """Seconds from starting `python app.py` to its first page served (AppProcess returns once it is)."""
    t0 = time.perf_counter()
    with AppProcess():
        return time.perf_counter() - t0


def import_gradio():
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import gradio"], check=True)
    return time.perf_counter() - t0


def capture_cost(repeat):
    tr = get_translator()
    out = {}
    for method in ("greedy", "beam"):
        with_maps, plain = [], []
        translate(SENTENCES[0], method)  # warm-up
        for _ in range(repeat):
            for s in SENTENCES:
                t0 = time.perf_counter()
                translate(s, method)
                with_maps.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                tr.translate([s], beam=4 if method == "beam" else 1)
                plain.append(time.perf_counter() - t0)
        out[f"{method}_with_maps_ms"] = statistics.median(with_maps) * 1e3
        out[f"{method}_plain_ms"] = statistics.median(plain) * 1e3
    return out


HEADS_OFF = ["encoder 0 3", "decoder 1 2", "cross 1 3"]  # one head of each kind


def heads_off_cost(repeat):
    """The Heads tab's re-translation with HEADS_OFF switched off, median ms, beside the ordinary translation of
    the same sentence (the Translate tab's callback: greedy, every attention map captured) in the same run."""
    from app.i18n import in_language
    from app.tabs.heads import switch_off
    switch_off = in_language(switch_off)  # as the page's button runs it: in the page's language
    plain, off = [], []
    switch_off(translate(SENTENCES[0], "greedy")[2], HEADS_OFF, lang="en")  # warm-up
    for _ in range(repeat):
        for s in SENTENCES:
            t0 = time.perf_counter()
            ins = translate(s, "greedy")[2]
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            switch_off(ins, HEADS_OFF, lang="en")
            off.append(time.perf_counter() - t0)
    return {"heads_off_ms": statistics.median(off) * 1e3, "heads_on_ms": statistics.median(plain) * 1e3}


def api_round_trip(repeat):
    """The public /translate endpoint through gradio_client against `python app.py`: median ms per call, beside
    the same translations run in this process (the function the endpoint calls)."""
    from gradio_client import Client

    from tools.loadtest import translate_call
    calls, direct = [], []
    with AppProcess() as app:
        client = Client(app.url, verbose=False)
        for i in range(repeat + 1):
            for s in SENTENCES:
                t0 = time.perf_counter()
                translate_call(client, s)
                if i:  # the first round warms up
                    calls.append(time.perf_counter() - t0)
    for _ in range(repeat):
        for s in SENTENCES:
            t0 = time.perf_counter()
            translate(s, "greedy")
            direct.append(time.perf_counter() - t0)
    return {"api_translate_ms": statistics.median(calls) * 1e3, "api_direct_ms": statistics.median(direct) * 1e3}


def other_benchmark(args):
    """Run the benchmark an option asks for instead of the default one; False when none does."""
    if args.browser:
        from tools.bench_browser import run
        run(clicks=args.clicks, save=args.save)
    elif args.model:
        from tools.bench_model import run
        run(args.model, repeat=args.runs, save=args.save)
    elif args.tabs:
        from tools.bench_tabs import run
        run(rounds=args.rounds, save=args.save)
    elif args.timelapse:
        from tools.bench_timelapse import run
        run(save=args.save)
    elif args.compare:
        from tools.bench_compare import run
        run(rounds=args.rounds, save=args.save)
    elif args.learn:
        from tools.bench_learn import run
        run(clicks=max(1, args.clicks // 2))
    elif args.inside:
        from tools.bench_inside import measure, report
        r = measure(args.runs)
        report(r)
        print(json.dumps({k: round(v, 2) for k, v in r.items()}))
    else:
        return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--browser", action="store_true",
                    help="instead: time clicks and count bytes in headless Chromium (tools/bench_browser.py)")
    ap.add_argument("--clicks", type=int, default=5, help="with --browser: measured clicks per sentence (median)")
    ap.add_argument("--inside", action="store_true",
                    help="instead: the Inside-the-model tab's views per translation (tools/bench_inside.py)")
    ap.add_argument("--learn", action="store_true",
                    help="instead: a Learn step change, click to figure drawn, in headless Chromium (tools/bench_learn.py)")
    ap.add_argument("--tabs", action="store_true",
                    help="instead: each top-level tab opened, click to drawn, in headless Chromium (tools/bench_tabs.py)")
    ap.add_argument("--timelapse", action="store_true",
                    help="instead: the Time-lapse scrubber, point to point, and the server's memory (tools/bench_timelapse.py)")
    ap.add_argument("--compare", action="store_true",
                    help="instead: the Compare tab beside the Attention tab, click to drawn, in headless Chromium "
                         "(tools/bench_compare.py)")
    ap.add_argument("--model", metavar="DIR",
                    help="instead: the model in DIR beside the shipped one, each in a process of its own (tools/bench_model.py)")
    ap.add_argument("--rounds", type=int, default=2, help="with --tabs: fresh pages measured (median)")
    ap.add_argument("--save", metavar="FILE",
                    help="with --browser, --tabs or --timelapse: merge the figures into this JSON file (keys browser_...; default: none)")
    args = ap.parse_args(argv)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if other_benchmark(args):
        return
    if args.save:
        ap.error("--save goes with --browser")
    starts = [cold_start() for _ in range(args.runs)]
    imports = [import_gradio() for _ in range(args.runs)]
    r = {"cold_start_s": statistics.median(starts), "import_gradio_s": statistics.median(imports)}
    r.update(capture_cost(args.runs * 5))
    r.update(heads_off_cost(args.runs * 5))
    r.update(api_round_trip(args.runs * 3))
    print(f"{'measure':36s} {'app':>9s} {'reference':>10s}  reference is")
    print(f"{'cold start to first page (s)':36s} {r['cold_start_s']:9.2f} {r['import_gradio_s']:10.2f}  `import gradio` alone")
    for m in ("greedy", "beam"):
        print(f"{m + ' translation with all maps (ms)':36s} {r[m + '_with_maps_ms']:9.1f} "
              f"{r[m + '_plain_ms']:10.1f}  same translation, no capture")
    print(f"{'translation again, 3 heads off (ms)':36s} {r['heads_off_ms']:9.1f} {r['heads_on_ms']:10.1f}  "
          "same sentence translated as usual")
    print(f"{'/translate through gradio_client (ms)':36s} {r['api_translate_ms']:9.1f} {r['api_direct_ms']:10.1f}  "
          "the same call in this process")
    print(json.dumps({k: round(v, 4) for k, v in r.items()}))


if __name__ == "__main__":
    main()
