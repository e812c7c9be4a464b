"""The Time-lapse tab's scrubber in headless Chromium, beside a trivial Gradio event measured in the same run:

    python -m tools.bench --timelapse [--save FILE]

On the shipped model's history where it ships one, else on a synthetic one (tools/synthetic_history.py; said in
the output). The page's sentence is translated by each point in turn, moving the scrubber one point on at a time
(a point not yet loaded: its weights read from disk, its translation and maps made); then back through them all
(each point's translation already made, its weights perhaps gone). Each move is timed from the slider's input to
the frame where the point's line and its translation, token for token, are on screen. The server's resident
memory is read before the tab is first opened and after every point was visited, beside what one point's weights
take and the server's memory bound for the models it holds (app.models, EXPLORER_MODELS_MB).
"""
import json
import os
import statistics
import tempfile
from pathlib import Path

import tools.bench_browser as bb

SENTENCE = "Ein Mann mit einem roten Hut fährt mit dem Fahrrad über eine Brücke."

MOVE = """const r = document.querySelector('#tl-snap input[type=range]'); r.value = String(arg.i);
r.dispatchEvent(new Event('input', {bubbles: true})); r.dispatchEvent(new Event('change', {bubbles: true}));"""
WHERE = "(document.querySelector('#tl-where')?.innerText || '').startsWith(arg.where)"
SAID = ("[...document.querySelectorAll('#tl-said .tok')].map(t => t.firstChild.textContent).join('')"
        ".replace(/\\s+/g, '') === arg.said")


def rss_mb(pid):
    """A process's resident memory, MB (Linux: /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def expected(directory, points):
    """What the page must show at each point: its translation's tokens, spaces left out, as the tab draws them
    (greedy, float32: app/tabs/timelapse.py)."""
    from core.translate import Translator
    out = []
    for p in points:
        ins = Translator.load(directory, snapshot=p["label"], half_rows=0).inspect(SENTENCE, method="greedy")
        out.append("".join(t.replace("▁", " ").strip() or t for t in ins.out_tokens).replace(" ", ""))
    return out


def point_bytes(directory, label):
    """The bytes one point's model holds in memory (its parameters and buffers)."""
    from core.translate import Translator
    m = Translator.load(directory, snapshot=label, half_rows=0).model
    return sum(t.numel() * t.element_size() for t in [*m.parameters(), *m.buffers()])


def counted(points, i):
    """How the tab's line on the chosen point starts for point `i` ("13 / 13 · "), as app.figures.timelapse writes it."""
    from app.figures.timelapse import where_now
    from app.i18n import speaking
    with speaking("en"):
        return where_now(points, i).split(" · ")[0] + " · "


def moves(browser, points, said):
    """Against a server on the model named by $EXPLORER_MODEL_DIR: (ms to each point not yet loaded, ms to each
    point again, server MB before the tab is opened, after every point)."""
    from tools.serve import AppProcess
    n, forward, backward = len(points), [], []
    with AppProcess() as app:
        page, net = bb.new_page(browser, f"{app.url}?lang=en")
        page.get_by_role("tab", name="Translate", exact=True).click()
        page.locator("#src textarea").wait_for()
        page.locator("#src textarea").fill(SENTENCE)
        page.locator("#translate-btn").click()
        # the sentence's own English (not the one the page's load translates first)
        page.wait_for_function("e => document.querySelector('#out textarea')?.value.trim() === e",
                               arg=bb.expected(SENTENCE).english)
        before = rss_mb(app.proc.pid)
        page.get_by_role("tab", name="Time-lapse", exact=True).click()
        page.wait_for_function(f"arg => {WHERE} && {SAID}", arg={"where": counted(points, n - 1), "said": said[-1]},
                               timeout=bb.TIMEOUT_S * 1000)
        for order, out in ((range(n - 1), forward), (reversed(range(n)), backward)):  # the last: drawn on opening
            for i in order:
                t, _ = bb.measure(page, net, MOVE, {"drawn": f"{WHERE} && {SAID}"},
                                  {"i": i, "where": counted(points, i), "said": said[i]}, f"point {points[i]['label']}")
                out.append(t["drawn"])
        after = rss_mb(app.proc.pid)
        page.context.close()
    return forward, backward, before, after


def run(save=None):
    if not os.path.exists(bb.CHROMIUM):
        raise SystemExit(f"{bb.CHROMIUM} not found (scripts/install.sh --dev installs it)")
    from playwright.sync_api import sync_playwright

    from app.figures.timelapse import run_points
    from app.models import MODELS
    from app.shared import model_dir
    directory, tmp = model_dir(), None
    if not run_points(directory):
        from tools.synthetic_history import make_history
        tmp = tempfile.TemporaryDirectory()
        directory = make_history(Path(tmp.name))
    points = run_points(directory)
    said = expected(directory, points)
    one_mb = point_bytes(directory, points[-1]["label"]) / 2 ** 20
    os.environ["EXPLORER_MODEL_DIR"] = str(directory)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=bb.CHROMIUM, args=bb.LAUNCH_ARGS)
            try:
                echo = bb.run_echo(browser, 5)
                forward, backward, before, after = moves(browser, points, said)
            finally:
                browser.close()
    finally:
        os.environ.pop("EXPLORER_MODEL_DIR", None)
        if tmp is not None:
            tmp.cleanup()
    r = {"timelapse_points": len(points), "timelapse_synthetic": tmp is not None,
         "timelapse_new_point_ms": statistics.median(forward), "timelapse_new_point_max_ms": max(forward),
         "timelapse_seen_point_ms": statistics.median(backward), "timelapse_seen_point_max_ms": max(backward),
         "timelapse_echo_ms": echo["echo_ms"], "timelapse_rss_before_mb": round(before, 1),
         "timelapse_rss_after_mb": round(after, 1), "timelapse_point_mb": round(one_mb, 1),
         "timelapse_models_bound_mb": round(MODELS.memory / 2 ** 20)}
    print(table(r))
    print(json.dumps(r))
    if save:
        path = Path(save)
        merged = json.loads(path.read_text()) if path.exists() else {}
        merged.update(r)
        path.write_text(json.dumps(merged, indent=1) + "\n")
    return r


def table(r):
    src = "a synthetic history (tools/synthetic_history.py)" if r["timelapse_synthetic"] else "the shipped history"
    grow = r["timelapse_rss_after_mb"] - r["timelapse_rss_before_mb"]
    return "\n".join([
        f"Time-lapse scrubber, {r['timelapse_points']} points of {src}, ms: median (slowest)",
        f"  to a point not yet loaded          {r['timelapse_new_point_ms']:7.0f} ({r['timelapse_new_point_max_ms']:.0f})",
        f"  to a point already translated      {r['timelapse_seen_point_ms']:7.0f} ({r['timelapse_seen_point_max_ms']:.0f})",
        f"  Gradio echo, same run              {r['timelapse_echo_ms']:7.0f}",
        f"server memory: {r['timelapse_rss_before_mb']:.0f} MB before the tab, {r['timelapse_rss_after_mb']:.0f} MB after "
        f"every point (+{grow:.0f} MB); one point's model {r['timelapse_point_mb']:.0f} MB, the models held "
        f"within {r['timelapse_models_bound_mb']} MB"])
