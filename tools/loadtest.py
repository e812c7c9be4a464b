"""Load on the running app through gradio_client, beside a trivial Gradio endpoint under the same load.

    python -m tools.loadtest [--url URL --pid PID] [--clients 32] [--requests 10] [--burst 200]

Without --url it starts `python app.py` itself (tools.serve.AppProcess). Each client is a gradio_client session
of its own that sends `requests` translations of the app's example sentences one after another, all clients at
once. Before that, one client translates each sentence once: those answers are what every later answer to the
same sentence must be (greedy decoding is deterministic), so an answer that belongs to another input shows as
cross-talk. Printed: successes, failures, cross-talk, p50/p95 latency, throughput, the server's resident memory
before and after (from /proc, given the server's pid), and the throughput of an echo endpoint served from this
process under the same clients and requests, the ceiling Gradio and the client set on this machine.

--burst N then submits N translations at the same moment: each must come back as a translation or as the
queue's "full, try again" message, and the server must answer a request after it.

--pages N instead sends N translations through the server as pages do (tools/pageclient.py: the events a browser
tab sends, private ones included): after each translation the page opens every tab and sub-tab in turn, so each
translation is drawn in every view. `--clients` pages run at once; each is closed after --per-page translations and
a new one opened, so the server sees pages come and go. Printed: the server's resident memory after a warm-up and
after the N translations, and the time per translation with all its views.

--memory N instead measures this process over N translations drawn in every view of every tab (no server):
what the app's own code keeps, apart from Gradio's per-session state.
"""
import argparse
import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from gradio_client import Client

SETTINGS = ("greedy", 4, 0.6, 1.0, 10, 100)  # decoding settings after the text, as /translate takes them
BUSY = "queue is full"  # what Gradio answers when the queue has no room


def resident_mb(pid):
    """Resident memory of process `pid` in MB (None without a pid or /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return kb / 1024
    except (OSError, StopIteration, TypeError):
        return None


def translate_call(client, text):
    return client.predict(text, *SETTINGS, api_name="/translate")[0]


def echo_call(client, text):
    return client.predict(text, api_name="/echo")


def drive(url, call, sentences, clients, requests, expected=None):
    """`clients` sessions, each making `requests` calls in turn, all at once: a dict of the results."""
    sessions = [Client(url, verbose=False) for _ in range(clients)]
    latencies, failures, crossed = [], [], []
    lock = threading.Lock()

    def one_client(i):
        for r in range(requests):
            text = sentences[(i + r) % len(sentences)]
            t0 = time.perf_counter()
            try:
                answer = call(sessions[i], text)
            except Exception as e:  # a failure is counted and shown, never raised
                with lock:
                    failures.append(f"{type(e).__name__}: {str(e)[:100]}")
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)
                if answer != (expected[text] if expected else text):
                    crossed.append((text, answer))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one_client, range(clients)))
    wall = time.perf_counter() - t0
    for c in sessions:
        c.close()
    ms = sorted(x * 1e3 for x in latencies)
    return {"calls": clients * requests, "ok": len(latencies), "failures": len(failures), "crossed": len(crossed),
            "p50_ms": statistics.median(ms) if ms else None,
            "p95_ms": ms[min(len(ms) - 1, int(0.95 * len(ms)))] if ms else None,
            "per_s": len(latencies) / wall, "first_failures": failures[:3], "first_crossed": crossed[:3]}


def burst(url, text, n, expected):
    """n translations submitted at the same moment: (translations, busy answers, other errors, served after)."""
    client = Client(url, verbose=False, max_workers=n)  # the client's pool would otherwise hold back all but 40
    jobs = [client.submit(text, *SETTINGS, api_name="/translate") for _ in range(n)]
    done, busy, other = 0, 0, []
    for job in jobs:
        try:
            done += job.result(timeout=600)[0] == expected
        except Exception as e:
            if BUSY in str(e).lower():
                busy += 1
            else:
                other.append(f"{type(e).__name__}: {str(e)[:100]}")
    after = translate_call(client, text) == expected
    client.close()
    return {"burst": n, "translated": done, "busy": busy, "other": len(other), "first_other": other[:3],
            "served_after": after}


def memory_growth(n, warmup=20):
    """Resident memory of this process over `n` translations, each drawn in every view of every tab that shows
    one (all five Attention views, bertviz's included, and the Inside-the-model tab's), after `warmup` of them:
    (MB before, MB after)."""
    import os

    from app.shared import examples
    from app.tabs import translate
    from app.ui import build_demo
    from app.views import ROOT, open_tab
    sentences = examples()
    built = {t.where[0]: t for t in build_demo().tab_views}
    where = [("translate",), ("overview",), *(("attention", sub) for sub in ("one-head", "all-heads", "layers-heads",
                                                                              "bertviz-head", "bertviz-model")),
             *(("inside", sub) for sub in ("modules", "layernorm", "scale", "residual", "ffn", "lens"))]
    page = {"open": {ROOT: "translate", "attention": "one-head", "inside": "modules"}, "drawn": {}}
    before = None
    for i in range(warmup + n):
        if i == warmup:
            before = resident_mb(os.getpid())
        ins = translate.translate(sentences[i % len(sentences)], "greedy")[2]
        for tabs in where:
            open_tab(page, tabs)
            for value in drawn_values(built[tabs[0]], page, ins):
                if hasattr(value, "to_json"):
                    value.to_json()  # as Gradio sends a figure
    return before, resident_mb(os.getpid())


def drawn_values(tab, page, ins):
    """What a tab's show sends for `ins`, its controls at their first values, the page in English."""
    controls = {name: getattr(c, "value", None) for name, c in tab.controls.items()}
    out = tab.show(page, "en", ins, **controls)
    return [] if not isinstance(out, dict) or out == {"__type__": "update"} else list(out.values())


def pages(url, pid, n, clients, per_page, warmup=20):
    """`n` translations, each drawn in every view, by `clients` pages at once that close after `per_page`
    translations each: a dict of the server's resident memory (after `warmup` translations, and at the end),
    the translations and failures, and seconds per translation with its views."""
    from app.shared import examples
    from tools.pageclient import AppConfig, PageSession
    sentences, app = examples(), AppConfig.read(url)
    failures, lock, sent = [], threading.Lock(), []

    def page_run(first, count):
        with PageSession(app) as page:
            sent.append(page)
            for i in range(first, first + count):
                try:
                    page.translate(sentences[i % len(sentences)])
                    for tab in app.tabs:
                        page.open(tab)
                except Exception as e:  # counted and shown, never raised
                    with lock:
                        failures.append(f"{type(e).__name__}: {str(e)[:100]}")

    def drive_pages(total):
        starts = range(0, total, per_page)
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(lambda s: page_run(s, min(per_page, total - s)), starts))

    drive_pages(warmup)
    before, t0, trend = resident_mb(pid), time.perf_counter(), []
    chunk = max(per_page * clients, n // 10)  # memory is read after each tenth of the run
    for done in range(0, n, chunk):
        drive_pages(min(chunk, n - done))
        trend.append((min(done + chunk, n), resident_mb(pid)))
    seconds = time.perf_counter() - t0
    events = sum(p.sent for p in sent) / (n + warmup)  # every event a page sent, per translation
    time.sleep(2)  # the server frees closed pages' state in its own time (its expiry task runs every second)
    return {"translations": n, "pages": -(-n // per_page), "warmup": warmup, "clients": clients, "failures": len(failures),
            "first_failures": failures[:3], "rss_before_mb": before, "rss_after_mb": resident_mb(pid),
            "s_per_translation": seconds / n, "events_per_translation": round(events, 1), "trend": trend}


def echo_server():
    """A trivial Gradio endpoint (/echo) served from this process: (url, the Blocks to close)."""
    import gradio as gr
    with gr.Blocks(analytics_enabled=False) as demo:
        text, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda s: s, text, out, api_name="echo")
    demo.queue(default_concurrency_limit=2)
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
    return url, demo


def run(url, pid, clients, requests, burst_n):
    from app.shared import examples
    sentences = examples()
    first = Client(url, verbose=False)
    expected = {s: translate_call(first, s) for s in sentences}  # one answer per sentence, in turn
    first.close()
    r = {"clients": clients, "requests": requests, "rss_before_mb": resident_mb(pid)}
    r["app"] = drive(url, translate_call, sentences, clients, requests, expected)
    r["rss_after_mb"] = resident_mb(pid)
    echo_url, echo = echo_server()
    try:
        r["echo"] = drive(echo_url, echo_call, sentences, clients, requests)
    finally:
        echo.close()
    r["throughput_ratio"] = r["app"]["per_s"] / r["echo"]["per_s"] if r["echo"]["per_s"] else None
    if burst_n:
        r["burst"] = burst(url, sentences[0], burst_n, expected[sentences[0]])
        r["rss_end_mb"] = resident_mb(pid)
    return r


def report(r):
    a, e = r["app"], r["echo"]
    print(f"{r['clients']} clients x {r['requests']} requests")
    print(f"{'':22s} {'ok':>6s} {'failed':>7s} {'crossed':>8s} {'p50 ms':>8s} {'p95 ms':>8s} {'per s':>7s}")
    for name, x in (("/translate", a), ("echo (reference)", e)):
        print(f"{name:22s} {x['ok']:6d} {x['failures']:7d} {x['crossed']:8d} {x['p50_ms'] or 0:8.0f} "
              f"{x['p95_ms'] or 0:8.0f} {x['per_s']:7.1f}")
    print(f"throughput: {r['throughput_ratio']:.2f} of the echo endpoint's")
    if r["rss_before_mb"] is not None:
        print(f"server resident memory: {r['rss_before_mb']:.0f} MB before, {r['rss_after_mb']:.0f} MB after")
    if "burst" in r:
        b = r["burst"]
        print(f"burst of {b['burst']}: {b['translated']} translated, {b['busy']} told the queue is full, "
              f"{b['other']} other errors; serving afterwards: {b['served_after']}")
    print(json.dumps(r, default=str))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running app (default: start `python app.py` here)")
    ap.add_argument("--pid", type=int, help="the server's process id, for its memory (known when started here)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=10, help="translations per client")
    ap.add_argument("--burst", type=int, default=0, help="then this many translations at the same moment")
    ap.add_argument("--pages", type=int, default=0, metavar="N",
                    help="instead: N translations through the server, each drawn in every view, as pages do")
    ap.add_argument("--per-page", type=int, default=10, help="with --pages: translations before a page closes")
    ap.add_argument("--warmup", type=int, default=20, help="with --pages: translations before memory is read")
    ap.add_argument("--memory", type=int, default=0, metavar="N",
                    help="instead: this process's memory over N translations drawn in every view (no server)")
    args = ap.parse_args(argv)
    if args.memory:
        before, after = memory_growth(args.memory)
        print(f"resident memory over {args.memory} translations, every view drawn: {before:.0f} MB before, "
              f"{after:.0f} MB after ({after - before:+.0f} MB)")
        return {"memory_before_mb": before, "memory_after_mb": after}
    with ExitStack() as stack:
        url, pid = args.url, args.pid
        if url is None:
            from tools.serve import AppProcess
            app = stack.enter_context(AppProcess())
            url, pid = app.url, app.proc.pid
        if args.pages:
            r = pages(url, pid, args.pages, args.clients, args.per_page, args.warmup)
            print(f"{r['translations']} translations, each drawn in every view ({r['events_per_translation']} "
                  f"events), by {r['pages']} pages, {r['clients']} at once: {r['failures']} failed, "
                  f"{r['s_per_translation']:.2f} s per translation with its views")
            print(f"server resident memory: {r['rss_before_mb']:.0f} MB after {args.warmup} translations, "
                  f"{r['rss_after_mb']:.0f} MB after {r['translations']} more "
                  f"({r['rss_after_mb'] - r['rss_before_mb']:+.0f} MB)")
            print("on the way: " + ", ".join(f"{mb:.0f} MB after {k}" for k, mb in r["trend"] if mb))
            print(json.dumps(r, default=str))
            return r
        r = run(url, pid, args.clients, args.requests, args.burst)
    report(r)
    return r


if __name__ == "__main__":
    main()
