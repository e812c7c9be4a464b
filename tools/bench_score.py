"""The Score tab's scoring against the command line on the same pairs, in the same run.

    python -m tools.bench_score [--pairs 1000] [--repeat 3] [--beam 1] [--browser URL]

Each round runs `python -m core.evaluate` on the pairs (a process of its own: its translation and scoring time as
it reports it, and its wall time, the model's load included), the page's generator (app.tabs.score.score_set in
this process: reading and checking the pasted text, every batch's step and progress, the scoring) and the command
line's own function in this process (core.evaluate.evaluate, warm as the page's), one after another, and reports
the medians and the page's time over the command line's. With --browser,
the same pairs pasted into a running page's Score tab (headless Chromium), from the click to the table drawn, and
meanwhile a translation asked for in a second page, from its click to its English: the page answers while a set is
scored.
"""
import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.data import default_data_dir


def read_pairs(n):
    """The first `n` pairs of Multi30k's test_2016_flickr (the files core.data finds)."""
    d = default_data_dir()
    de, en = (gzip.open(d / f"test_2016_flickr.{lang}.gz", "rt", encoding="utf-8").read().splitlines()[:n]
              for lang in ("de", "en"))
    return de, en


def run_cli(de_path, en_path, beam):
    """`python -m core.evaluate` on the files: (wall seconds, its own seconds, its figures)."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "core.evaluate", "--src", str(de_path), "--ref", str(en_path),
                          "--beam", str(beam), "--json"], capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    result = json.loads(out.strip().splitlines()[-1])
    return wall, result["seconds"], result


def run_page(de, en, beam):
    """The page's generator on the pasted text: (seconds, the Scored)."""
    from app.i18n import speaking
    from app.tabs import score
    t0 = time.perf_counter()
    with speaking("en"):
        steps = list(score.score_set("\n".join(de), "\n".join(en), None, beam, None))
    return time.perf_counter() - t0, steps[-1][0]


def run_evaluate(de, en, beam):
    """core.evaluate.evaluate, the command line's function, in this process (warm): seconds."""
    from app.shared import get_translator
    from core.evaluate import evaluate
    t0 = time.perf_counter()
    evaluate(get_translator(), de, en, beam=beam)
    return time.perf_counter() - t0


def in_browser(url, de, en, beam, sentence="Ein Hund rennt über die Wiese."):
    """The pairs pasted into the page's Score tab and scored (seconds from the click to the table), and a
    translation in a second page meanwhile (seconds from its click to its English)."""
    from playwright.sync_api import sync_playwright

    from tools.bench_browser import CHROMIUM, LAUNCH_ARGS
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        scorer, other = (browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in range(2))
        for page in (scorer, other):
            page.set_default_timeout(600_000)
        scorer.goto(f"{url}?tab=score")
        other.goto(f"{url}?tab=translate")
        scorer.wait_for_selector("#score-german textarea")
        other.wait_for_selector("#out textarea")
        other.wait_for_function("() => document.querySelector('#out textarea').value.length > 0")
        scorer.fill("#score-german textarea", "\n".join(de))
        scorer.fill("#score-english textarea", "\n".join(en))
        scorer.locator("#score-beam input[type=number]").fill(str(beam))
        scorer.locator("#score-beam input[type=number]").press("Enter")
        t0 = time.perf_counter()
        scorer.click("#score-run")
        scorer.wait_for_function("() => document.querySelector('#score-status').innerText.includes('Translated')")
        other.fill("#src textarea", sentence)
        before = other.locator("#out textarea").input_value()
        t1 = time.perf_counter()
        other.click("#translate-btn")
        other.wait_for_function("(b) => document.querySelector('#out textarea').value !== b", arg=before)
        meanwhile = time.perf_counter() - t1
        still_running = "Translated" in scorer.locator("#score-status").inner_text()
        scorer.wait_for_function("() => document.querySelector('#score-status').innerText.includes('Scored')")
        status = time.perf_counter() - t0
        scorer.wait_for_selector("#score-table [data-testid=cell-0-2]", state="visible")
        scored = time.perf_counter() - t0
        browser.close()
    return scored, status, meanwhile, still_running


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--browser", default=None, help="a running app's address: also score through its page")
    args = ap.parse_args(argv)
    de, en = read_pairs(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        de_path, en_path = Path(tmp) / "set.de", Path(tmp) / "set.en"
        de_path.write_text("\n".join(de) + "\n", encoding="utf-8")
        en_path.write_text("\n".join(en) + "\n", encoding="utf-8")
        run_page(de[:8], en[:8], args.beam)  # the model loaded and warm in this process
        cli, page, warm = [], [], []
        for _ in range(args.repeat):
            cli.append(run_cli(de_path, en_path, args.beam))
            page.append(run_page(de, en, args.beam))
            warm.append(run_evaluate(de, en, args.beam))
    wall, own = statistics.median(c[0] for c in cli), statistics.median(c[1] for c in cli)
    seconds = statistics.median(p[0] for p in page)
    same = all(p[1].result["bleu"] == cli[0][2]["bleu"] and p[1].result["ter"] == cli[0][2]["ter"] for p in page)
    print(f"{len(de)} pairs, beam {args.beam}, {args.repeat} rounds alternated (medians):")
    print(f"  python -m core.evaluate: {own:.2f} s translating and scoring ({wall:.2f} s wall, the model's load "
          f"included); BLEU {cli[0][2]['bleu']:.2f}, TER {cli[0][2]['ter']:.2f}")
    print(f"  the page's scoring (app.tabs.score.score_set): {seconds:.2f} s, {seconds / own:.2f}x the command "
          f"line's own time, {seconds / wall:.2f}x its wall time; the same figures: {same}")
    same_process = statistics.median(warm)
    print(f"  core.evaluate.evaluate in this process (warm, as the page's): {same_process:.2f} s; the page's "
          f"{seconds / same_process:.2f}x it")
    if args.browser:
        scored, status, meanwhile, running = in_browser(args.browser, de, en, args.beam)
        print(f"  through the page in Chromium: {status:.2f} s from the click to the status line's 'Scored' "
              f"({status / own:.2f}x), {scored:.2f} s to the table drawn ({scored / own:.2f}x); a translation "
              f"meanwhile in another page: {meanwhile:.2f} s (the set still scoring then: {running})")


if __name__ == "__main__":
    main()
