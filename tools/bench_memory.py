"""Several models in one process: the resident memory of a server's process as app.models opens them, beside the
bytes `Models.held()` counts, and the time of comparing two of them.

    python -m tools.bench_memory [--opus DIR] [--compare] [--threads 2]

In one process, the steps a server with four models open goes through, the process's resident memory (VmRSS of
/proc/self/status) read after each:

1. startup: torch and core (app.models), then the app's modules and Gradio (app.ui), malloc's arenas capped as
   app.py caps them;
2. the page's own model (the shipped one, with its float16 decoder), through `Models.get()`;
3. two points of its run (shipped@epoch-1, shipped@epoch-28), float32 alone;
4. a converted model of opus-mt-de-en's shape with random weights (`python -m core.convert --random-opus-mt-de-en`,
   built into a temporary folder in a process of its own unless --opus names one), opened by name from a
   `Models(folder=...)`;
5. one greedy translation of SENTENCE by each of the four.

With --compare, `core.analysis.compare.compare` of the shipped model against shipped@epoch-1 and against the
opus-shaped model on SENTENCE (one untimed call, then the median of --repeat), and the patching grid
(`core.analysis.patching.patch_grid`) on the opus-shaped model with its translation cut to the shipped model's
length for the sentence (a model with random weights never ends a sentence: its outputs run to the length limit;
`python -m core.analysis.patching ... --model DIR` times the grid as it decodes).
"""
import argparse
import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

M_ARENA_MAX = -8
SENTENCE = "Ein Mann fährt mit seinem roten Fahrrad schnell die Straße entlang."  # 15 pieces for the shipped model
EDITED = "Ein Hund fährt mit seinem roten Fahrrad schnell die Straße entlang."
POINTS = ("epoch-1", "epoch-28")
OPUS = "random-opus-mt-de-en"


def rss_mb():
    """This process's resident memory, MB (Linux: /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def line(what, models=None):
    held = sum(b for _, b in models.held()) / 2 ** 20 if models is not None else 0.0
    print(f"{what:<58} {rss_mb():8.0f} MB resident   {held:7.1f} MB held by Models", flush=True)


def build_opus(folder):
    """A random opus-mt-de-en-shaped model converted into folder/OPUS, in a process of its own."""
    out = Path(folder) / OPUS
    print(f"building {out} (python -m core.convert --random-opus-mt-de-en; about half a minute) ...", flush=True)
    subprocess.run([sys.executable, "-m", "core.convert", "--random-opus-mt-de-en", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def open_all(opus_dir):
    """Steps 2-5 of the module's docstring; the Models and its translators by name."""
    from app.models import Models
    models = Models(folder=opus_dir.parent)
    shipped = models.get()
    line(f"+ the page's own model ({models.default})", models)
    trs = {models.default: shipped}
    for point in POINTS:
        name = f"{models.default}@{point}"
        trs[name] = models.get(name)
        line(f"+ {name}", models)
    trs[opus_dir.name] = models.get(opus_dir.name)
    line(f"+ {opus_dir.name} (a converted model, through folder=)", models)
    for tr in trs.values():
        tr.translate(SENTENCE)
    line("+ one greedy translation by each of the four", models)
    print("held: " + ", ".join(f"{name} {b / 2 ** 20:.1f} MB" for name, b in models.held())
          + f"; bound {models.memory / 2 ** 20:.0f} MB")
    return models, trs


def timed(fn, repeat):
    fn()  # untimed: the first call warms the kernels
    seconds = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        seconds.append(time.perf_counter() - t0)
    return out, statistics.median(seconds), min(seconds)


def compare_times(trs, opus_name, repeat):
    """--compare: compare() of the shipped model against a point and against the opus shape; the patching grid on
    the opus shape at the shipped model's output length."""
    from core.analysis.compare import compare
    from core.analysis.patching import patch_grid
    names = list(trs)
    own = trs[names[0]]
    for other in (f"{names[0]}@{POINTS[0]}", opus_name):
        c, median, best = timed(lambda o=other: compare(own, trs[o], SENTENCE), repeat)
        lengths = " / ".join(str(len(s.units)) for s in c.scored)
        print(f"compare({names[0]}, {other}): {median * 1000:.0f} ms median, {best * 1000:.0f} ms best of {repeat} "
              f"({c.level}; translations of {lengths} units)", flush=True)
    length = len(own.translate_ids([SENTENCE])[0]) + 1  # the shipped model's output tokens, </s> included
    g, median, best = timed(lambda: patch_grid(trs[opus_name], SENTENCE, EDITED, max_len=length), repeat)
    print(f"patch_grid({opus_name}), its translation cut to the shipped model's {len(g.out_tokens)} tokens: "
          f"{median:.2f} s median, {best:.2f} s best of {repeat} ({len(g.src_tokens)} source pieces, "
          f"{g.logp_patched.size(0)} layers)", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opus", metavar="DIR", help=f"a converted opus-mt-de-en-shaped model (default: a fresh {OPUS})")
    ap.add_argument("--compare", action="store_true", help="then time compare() and the opus shape's patching grid")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--repeat", type=int, default=3, help="with --compare: timed calls after one untimed")
    args = ap.parse_args(argv)
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 2)  # as app.py does (app.shared.limit_malloc_arenas)
    except (OSError, AttributeError):
        pass
    line("startup (Python)")
    import torch

    import app.models  # noqa: F401  torch and core
    torch.set_num_threads(args.threads)
    line("+ imports: torch and core (app.models)")
    import app.ui  # noqa: F401  the page's modules and Gradio
    line("+ imports: the app's modules and Gradio (app.ui)")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        opus_dir = Path(args.opus) if args.opus else build_opus(tmp)
        _, trs = open_all(opus_dir)
        if args.compare:
            compare_times(trs, opus_dir.name, args.repeat)
    print(f"{torch.get_num_threads()} torch threads")


if __name__ == "__main__":
    main()
