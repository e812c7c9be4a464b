"""A translation while the head atlas is measured: `python -m tools.bench_atlas [--model DIR] [--pairs 24]`.

The Heads tab measures a model with no atlas on request, in a queue group of its own, so a translation asked for
meanwhile never waits in Gradio's queue behind it; what it can still wait for is the processors, which the two
share. This runs both in one process as the server does (the measurement in a thread, core.analysis.heads.Measuring;
translations from another, each as the Translate tab makes it, beam 4), for each way of running the measurement:

- `plain`: at the priority of the server's other threads (before issue 55);
- `yielding`: at the lowest scheduling priority, its thread and PyTorch's threads it starts (lower_priority), so a
  translation takes the processors first.

Printed beside the reference measured in the same run: the same translations with nothing else running, before
and after. Also: how long the measurement took to stop when asked (Measuring.stop, as Cancel or a closed page
asks), and the longest stage of the measurement, which is what a translation waited when both shared one queue
group. Times are server-side, ms; medians over the translations made. The last line is JSON.
"""
import argparse
import json
import os
import statistics
import time

SENTENCES = ["Ein Mann in einem roten Hemd fährt mit dem Fahrrad durch die Stadt.",
             "Zwei Kinder spielen am Strand mit einem Ball.",
             "Eine Frau sitzt auf einer Bank und liest eine Zeitung."]


def translation_ms(n):
    """ms of each of `n` translations (the sentences in turn) as the Translate tab makes them, beam 4."""
    from app.translating import translate
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        translate(SENTENCES[i % len(SENTENCES)], "beam", beam=4)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def during(mode, pairs, n, warm_s):
    """Translations while a measurement runs in `mode`, then the measurement stopped: {ms: [...], stop_ms,
    stages_done, longest_stage_s}."""
    from app.shared import get_translator
    from core.analysis.heads import Measuring
    m = Measuring(get_translator(), pairs, yielding=mode == "yielding").start()
    while m.done < 1 and not m.finished.is_set():  # into its stages (past the sample's translations)
        time.sleep(0.05)
    time.sleep(warm_s)
    ms = translation_ms(n)
    finished_early = m.finished.is_set()
    t0 = time.perf_counter()
    m.stop()
    m.finished.wait()
    stop_ms = (time.perf_counter() - t0) * 1e3
    return dict(ms=ms, stop_ms=stop_ms, stages_done=m.done, stages=m.total, finished_early=finished_early,
                stopped=m.stopped)


def longest_stage(pairs):
    """The longest stage of a whole measurement of `pairs` pairs, alone (s): a translation's wait when the two
    shared one queue group."""
    from app.shared import get_translator
    from core.analysis.heads import measure
    atlas = measure(get_translator(), pairs)
    return max(atlas["stage_seconds"].values()), atlas["seconds"]


def run(pairs=24, n=6, warm_s=1.0, whole=True):
    import torch
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    translation_ms(2)  # warm-up
    r = {"alone_before_ms": statistics.median(translation_ms(n))}
    for mode in ("plain", "yielding"):
        d = during(mode, pairs, n, warm_s)
        r[f"{mode}_ms"] = statistics.median(d["ms"])
        r[f"{mode}_max_ms"] = max(d["ms"])
        r[f"{mode}_stop_ms"] = d["stop_ms"]
        r[f"{mode}_stages"] = f"{d['stages_done']}/{d['stages']}"
    r["alone_after_ms"] = statistics.median(translation_ms(n))
    if whole:
        r["longest_stage_s"], r["atlas_s"] = longest_stage(pairs)
    return r


def report(r, name, pairs):
    ref = (r["alone_before_ms"] + r["alone_after_ms"]) / 2
    print(f"model {name}, {pairs} pairs measured; a translation, beam 4, ms (median; worst)")
    print(f"{'':44s} {'ms':>8s} {'worst':>8s} {'x alone':>8s} {'stop (ms)':>10s}")
    print(f"{'alone, before / after (the reference)':44s} {r['alone_before_ms']:8.0f} {r['alone_after_ms']:8.0f}")
    for mode, label in (("plain", "during a measurement, same priority"),
                        ("yielding", "during a measurement, it at the lowest")):
        print(f"{label:44s} {r[mode + '_ms']:8.0f} {r[mode + '_max_ms']:8.0f} {r[mode + '_ms'] / ref:8.2f} "
              f"{r[mode + '_stop_ms']:10.0f}")
    if "longest_stage_s" in r:
        print(f"{'one queue group: waits for a stage, up to (s)':44s} {r['longest_stage_s']:8.1f}   "
              f"(whole measurement alone: {r['atlas_s']:.0f} s)")
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", metavar="DIR", help="the model measured (default: the shipped one)")
    ap.add_argument("--pairs", type=int, default=24, help="pairs the atlas is measured on (the Heads tab's default)")
    ap.add_argument("--translations", type=int, default=6, help="translations timed in each case")
    ap.add_argument("--no-whole", action="store_true", help="skip the whole measurement (its longest stage)")
    args = ap.parse_args(argv)
    if args.model:
        os.environ["EXPLORER_MODEL_DIR"] = args.model
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    r = run(args.pairs, args.translations, whole=not args.no_whole)
    report(r, os.path.basename(os.path.normpath(args.model or "assets")), args.pairs)


if __name__ == "__main__":
    main()
