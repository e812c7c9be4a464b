"""The app as a reader meets it: timings and bytes in headless Chromium, each beside two floors.

    python -m tools.bench --browser [--clicks 5] [--save FILE]

Starts `python app.py` (tools.serve.AppProcess), opens it in Debian's chromium driven by Playwright and, for three
sentences of our own (short, the app's first example, long), reports the median over `clicks` measured clicks of:
1. click on Translate -> the English shown (#out holds the expected translation);
2. click on Translate -> every view of the Translate tab redrawn for the new sentence and settled;
3. click on the Attention tab -> its open view ("One head", encoder layer 0 head 0) drawn with the sentence's
   source tokens and settled; then opening each bertviz sub-tab -> its frame drawn for the sentence (its svg, and
   the sentence's tokens in bertviz's parameters there); the very first opening of each, when its frame loads
   jQuery and d3, reported apart;
4. the bytes the page received for each of these, from Chromium's Network events (a CDP session of the page).
Beside them, measured in the same run: the model's own time for the sentence (Translator.inspect in this process)
and a trivial Gradio event (an echo on a one-textbox page served from this process), whose first click is reported
apart. The bytes counter is checked on that page against an output of known size.

Every measured click changes what is shown: before each, the same cycle runs on another sentence. What to expect is
computed here (app.tabs.translate.translate, the model and decoding the page uses), and times are taken inside the
page: performance.now() at the click, then each condition checked on every animation frame until it first holds.
Every wait ends after TIMEOUT_S with what the page was showing.
"""
import collections
import json
import os
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]
TIMEOUT_S = 60  # the longest any one condition may take; a bound, never a pause
LONG = ("Auf einer belebten Straße in der Altstadt schiebt ein alter Mann mit grauem Bart einen Karren voller Äpfel "
        "an einem Café vorbei, während zwei Kinder in gelben Jacken einem Straßenmusiker zuhören.")
SHORT = "Zwei Hunde spielen im Schnee."
# run between measured clicks; each starts with a number, so its step-1 candidates differ from the measured ones'
ALTERNATES = ["Drei Kinder bauen am Strand eine Sandburg.", "Vier Frauen tanzen auf einer großen Bühne.",
              "Eine alte Frau füttert Tauben im Park."]
TRANSLATE_IDS = ["out", "status", "token-probs", "step", "step-info", "step-mask", "step-cands"]
BERTVIZ = [("bertviz_head", "bertviz head view", "bertviz-head", True),  # (key, sub-tab, element id, tokens in svg)
           ("bertviz_model", "bertviz model view", "bertviz-model", False)]
TIMES = [("english", "click → English shown"), ("views", "click → every Translate view redrawn"),
         ("attention", "Attention tab → One head drawn"), ("bertviz_head", "bertviz head view → drawn"),
         ("bertviz_model", "bertviz model view → drawn")]
BYTES = [("translation", "received per translation"), ("attention", "received per Attention tab opening"),
         ("bertviz_head", "received per bertviz head view opening"),
         ("bertviz_model", "received per bertviz model view opening")]
PAYLOAD = 300_000  # the echo page's known output, in bytes, to check the counter


# ---- what the page should show -----------------------------------------------------------------------

def norm(token):
    """A token as the page may show it: no SentencePiece "▁", no surrounding space ("" for a bare "▁")."""
    return token.replace("▁", " ").strip()


def words(tokens):
    return [w for w in map(norm, tokens) if w]


def expected(text):
    """What the page shows for `text` with its default settings (greedy decoding), computed in this process."""
    from app.tabs.translate import translate
    english, _, ins = translate(text, "greedy")
    src = words(ins.src_tokens)
    return SimpleNamespace(text=text, english=english.strip(), pieces=len(ins.src_tokens), src=src,
                           out=words(ins.out_tokens), cands=words(t for t, _ in ins.topk[0]))


def in_order(shown, wanted):
    """Every string of `wanted` occurs in `shown`, in that order (as the page's check does)."""
    i = 0
    for w in wanted:
        i = shown.find(w, i)
        if i < 0:
            return False
        i += len(w)
    return True


def distinct(a, b):
    """Whether no view of translation `a` could pass for translation `b`'s or the other way round."""
    return (a.english != b.english and set(a.cands) != set(b.cands)
            and not set(a.src) >= set(b.src) and not set(b.src) >= set(a.src)
            and not in_order(" ".join(a.out), b.out) and not in_order(" ".join(b.out), a.out))


def alternate_for(exp, alternates):
    for alt in alternates:
        if distinct(exp, alt):
            return alt
    raise RuntimeError(f"no alternate sentence differs enough from {exp.text!r}")


# ---- in the page ---------------------------------------------------------------------------------------

# In every frame, before the page's scripts: an iframe (a bertviz view's sandboxed frame) tells the page around it
# the svg text it has drawn and the source tokens of the data it drew (bertviz's parameters), each time they change;
# the page keeps the last report of each iframe, by the iframe's window.
INIT_SCRIPT = r"""(() => {
  if (window === window.top) {
    window.__bench = {frames: new Map()};
    addEventListener('message', e => { if (Array.isArray(e.data?.benchSvgText))
      window.__bench.frames.set(e.source, {t: performance.now(), texts: e.data.benchSvgText,
                                           tokens: e.data.benchTokens}); });
    return;
  }
  let last = null;
  new MutationObserver(() => {
    const texts = [...document.querySelectorAll('svg text')].map(t => t.textContent);
    const tokens = window.bertvizParams?.attention?.[0]?.left_text ?? [];
    const key = JSON.stringify([texts, tokens]);
    if (texts.length && key !== last) { last = key; parent.postMessage({benchSvgText: texts, benchTokens: tokens}, '*'); }
  }).observe(document, {subtree: true, childList: true, characterData: true});
})();"""

# settled(id): no event that writes to component `id` is pending (its status tracker is hidden); busy(): the
# components whose tracker shows on screen. Token labels are compared decoded ("&lt;s&gt;" -> "<s>"), without "▁",
# whole or split at spaces ("3 ▁Hunde" gives "3 Hunde", "3" and "Hunde"), from the figure's data and axes.
HELPERS = r"""const el = s => document.querySelector(s), text = s => el(s)?.innerText ?? '';
const settled = id => el(`#${id} [data-testid=status-tracker]`)?.classList.contains('hide') ?? false;
const busy = () => [...document.querySelectorAll('[data-testid=status-tracker]')]
  .filter(t => !t.classList.contains('hide') && t.getClientRects().length).map(t => t.closest('[id]')?.id || '?');
const tab = name => [...document.querySelectorAll('[role=tab]')].find(t => t.textContent.trim() === name);
const open = name => tab(name)?.getAttribute('aria-selected') === 'true';
const plot = id => el(`#${id} .js-plotly-plot`);
const drawn = id => { const g = plot(id); return !!(g?.data?.length && g.querySelector('svg') && g.offsetHeight); };
const decode = s => { const t = document.createElement('textarea'); t.innerHTML = s; return t.value; };
const labelWords = labels => { const w = new Set();
  for (const l of labels) { const n = decode(String(l)).replaceAll('\u2581', ' ').trim();
    w.add(n); n.split(/\s+/).forEach(p => w.add(p)); }
  return w; };
const hasAll = (labels, wanted) => { const w = labelWords(labels); return wanted.every(x => w.has(x)); };
const figLabels = id => { const g = plot(id), out = [];
  const add = a => { if (!a || typeof a === 'string' || typeof a.length !== 'number') return;
    for (const v of a) { if (typeof v === 'string') out.push(v); else if (Array.isArray(v)) add(v); else break; } };
  for (const lay of [g?.layout, g?._fullLayout]) for (const [k, ax] of Object.entries(lay ?? {}))
    if (/^[xy]axis\d*$/.test(k) && ax) { add(ax.ticktext); add(ax.categoryarray); add(ax._categories); }
  for (const d of g?.data ?? []) { add(d.x); add(d.y); add(d.customdata); }
  return out; };
// the tick labels drawn on the plot's axes, numbers, punctuation and a bare "▁" left out: some, each a word of `wanted`
const ticksShow = (id, wanted) => { const w = new Set(wanted);
  const ticks = [...(plot(id)?.querySelectorAll('.cartesianlayer .xtick text, .cartesianlayer .ytick text') ?? [])]
    .map(t => t.textContent).filter(t => !/^[\d\s.,%+\u2212\u2581-]*$/.test(t));
  return ticks.length > 0 && ticks.every(t => [...labelWords([t])].some(x => w.has(x))); };
// the candidates of the step replay, as the page shows them (HTML rows, one token each)
const candLabels = () => [...document.querySelectorAll('#step-cands .cand-tok')].map(e => e.textContent);
const inOrder = (s, wanted) => { let i = 0;
  for (const x of wanted) { i = s.indexOf(x, i); if (i < 0) return false; i += x.length; } return true; };
const frameShows = (id, inSvg, arg) => { const f = el(`#${id} iframe`);
  if (!f?.offsetHeight) return false;
  const r = window.__bench?.frames.get(f.contentWindow);
  if (!r?.texts.length) return false;
  return hasAll(inSvg ? r.texts : r.tokens, arg.src); };
"""

STATE = r"""({tabs: [...document.querySelectorAll('[role=tab][aria-selected=true]')].map(t => t.textContent.trim()),
  busy: busy(), english: el('#out textarea')?.value, tokens: text('#token-probs').slice(0, 300),
  step_cands: candLabels(), heatmap: figLabels('heatmap').slice(0, 80), echo: el('#e-out textarea')?.value,
  frames: [...document.querySelectorAll('iframe')].map(f => [f.closest('[id]')?.id, f.offsetHeight,
           window.__bench?.frames.get(f.contentWindow)?.texts.slice(0, 30)]),
  toasts: [...document.querySelectorAll('.toast-body')].map(t => t.innerText.slice(0, 300))})"""

# `before` holds what was shown at the click, for conditions that need a change
MEASURE = r"""async (arg) => {
/*HELPERS*/
const before = {tokens: text('#token-probs'), cands: text('#step-cands')};
const conds = {/*CONDS*/};
const holds = f => { try { return !!f(); } catch (e) { return false; } };
const t0 = performance.now();
/*ACTION*/;
return await new Promise(resolve => {
  const times = {}, names = Object.keys(conds);
  const tick = () => {
    const now = performance.now();
    for (const k of names) if (!(k in times) && holds(conds[k])) times[k] = now - t0;
    if (names.every(k => k in times)) resolve({times});
    else if (now - t0 > arg.timeout_ms) resolve({times, timeout: true, state: /*STATE*/});
    else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
});
}"""

ENGLISH = "(el('#out textarea')?.value ?? '').trim() === arg.english"
VIEWS = ("text('#token-probs') !== before.tokens && inOrder(text('#token-probs'), arg.out) "
         "&& text('#step-cands') !== before.cands && hasAll(candLabels(), arg.cands) "
         "&& arg.translate_ids.every(settled) && !busy().length")
HEATMAP = ("open('Attention') && open('One head') && drawn('heatmap') && hasAll(figLabels('heatmap'), arg.src) "
           "&& ticksShow('heatmap', arg.src) && settled('heatmap') && !busy().length")
FRAME = "open(arg.tab) && frameShows(arg.id, arg.in_svg, arg) && settled(arg.id) && !busy().length"
TRANSLATE_OPEN = "open('Translate') && el('#src textarea')?.offsetHeight && !busy().length"
ECHO = "el('#e-out textarea')?.value === arg.text && settled('e-out')"


class NetworkBytes:
    """The bytes a page receives, from Chromium's Network events on a CDP session of the page.

    Network.dataReceived comes for each chunk as it reaches the page, streamed responses included (Gradio sends
    each event's results on a text/event-stream read by fetch, which may end aborted rather than finished, so
    loadingFinished's total is not always there); its dataLength is the body as the page gets it, after any
    decompression. Counted per window (reset .. read), without data: URLs and responses served from the cache;
    `compressed` is the part of the count that came with a Content-Encoding. A sandboxed iframe runs in a process
    of its own, whose requests the page's session does not see: those are counted from Playwright's events, each
    once it has finished (its body, decoded; none if it came from the cache)."""

    def __init__(self, context, page):
        self.frames = []  # requests of the page's iframes (a sandboxed one runs in a process of its own)
        context.on("request", lambda r: self.frames.append(r) if r.frame.parent_frame is not None else None)
        self.cdp = context.new_cdp_session(page)
        self.requests = {}  # requestId -> {"url", "encoding", "cached"}
        self.received = collections.Counter()  # requestId -> bytes in this window
        self.cdp.on("Network.requestWillBeSent", lambda p: self._request(p, p["request"]["url"]))
        self.cdp.on("Network.responseReceived", self._response)
        self.cdp.on("Network.requestServedFromCache", lambda p: self._request(p).update(cached=True))
        self.cdp.on("Network.dataReceived", lambda p: self.received.update({p["requestId"]: p["dataLength"]}))
        self.cdp.send("Network.enable")

    def _request(self, p, url=""):
        return self.requests.setdefault(p["requestId"], {"url": url, "encoding": "", "cached": False})

    def _response(self, p):
        r, resp = self._request(p, p["response"]["url"]), p["response"]
        headers = {k.lower(): v for k, v in resp.get("headers", {}).items()}
        r["encoding"] = headers.get("content-encoding", "")
        r["cached"] = r["cached"] or bool(resp.get("fromDiskCache") or resp.get("fromPrefetchCache"))

    def _sync(self):
        """A round trip on the session: the events it sent before its answer have been handled."""
        self.cdp.send("Runtime.evaluate", {"expression": "0"})

    def reset(self):
        self._sync()
        self.received.clear()
        self.frames.clear()

    def read(self):
        """{"bytes", "compressed", "cached", "by_path"} received since the last reset."""
        self._sync()
        out = {"bytes": 0, "compressed": 0, "cached": 0, "by_path": collections.Counter()}
        for rid, n in self.received.items():
            r = self.requests.get(rid, {"url": "?", "encoding": "", "cached": False})
            if r["url"].startswith(("data:", "blob:")):
                continue
            if r["cached"]:
                out["cached"] += n
                continue
            out["bytes"] += n
            out["compressed"] += n if r["encoding"] else 0
            out["by_path"][r["url"].split("?")[0].split("/gradio_api/")[-1]] += n
        seen = {self.requests[rid]["url"] for rid in self.received if rid in self.requests}
        for r in self.frames:  # what the page's session did not see: an iframe's own requests, as Playwright saw them
            if r.url in seen or r.url.startswith(("data:", "blob:")) or r.response() is None:
                continue
            if not r.sizes()["responseBodySize"]:  # nothing came over the wire: from the cache
                continue
            n = len(r.response().body())  # decoded, as dataLength counts
            out["bytes"] += n
            out["compressed"] += n if r.response().headers.get("content-encoding") else 0
            out["by_path"][r.url.split("?")[0].split("/gradio_api/")[-1]] += n
        return out


def new_page(browser, url):
    """A page of its own (own browser context) on `url`, with the frame reports and a bytes counter."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(INIT_SCRIPT)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_S * 1000)
    net = NetworkBytes(context, page)
    page.goto(url)
    return page, net


def measure(page, net, action, conds, arg, what, fresh=True):
    """Run the JavaScript `action` in the page and time each condition of `conds` (name -> JavaScript expression
    of `arg`) from just before it to the first animation frame where it holds. Returns ({name: ms}, bytes read by
    `net` meanwhile, or since its last reset if not `fresh`); raises with what the page shows if a condition does
    not hold within TIMEOUT_S."""
    body = ", ".join(f"{k}: () => ({v})" for k, v in conds.items())
    script = (MEASURE.replace("/*HELPERS*/", HELPERS).replace("/*CONDS*/", body).replace("/*ACTION*/", action)
              .replace("/*STATE*/", STATE))
    if fresh:
        net.reset()
    r = page.evaluate(script, {**arg, "timeout_ms": TIMEOUT_S * 1000})
    got = net.read()
    if r.get("timeout"):
        missing = ", ".join(k for k in conds if k not in r["times"])
        raise RuntimeError(f"not within {TIMEOUT_S} s: {what} (never held: {missing})\n"
                           f"page: {json.dumps(r['state'], ensure_ascii=False)[:4000]}")
    return r["times"], got


def arg_of(exp):
    return {"english": exp.english, "out": exp.out, "cands": exp.cands, "src": exp.src,
            "translate_ids": TRANSLATE_IDS}


def cycle(page, net, exp):
    """One measured round on `exp`'s sentence: translate, open the Attention tab, then each bertviz view; then
    back to "One head" and the Translate tab. Returns {name_ms: ..., name_bytes: {...}}."""
    arg, r = arg_of(exp), {}
    page.locator("#src textarea").fill(exp.text)
    # the frame reports start afresh with the click: a report counts only if it came after it
    t, b = measure(page, net, "window.__bench.frames.clear(); el('#translate-btn').click()",
                   {"english": ENGLISH, "views": VIEWS}, arg, f"the translation of {exp.text!r}")
    r.update(english_ms=t["english"], views_ms=t["views"], translation_bytes=b)
    t, b = measure(page, net, "tab('Attention').click()", {"drawn": HEATMAP}, arg,
                   f"the Attention tab's heatmap of {exp.text!r}")
    r.update(attention_ms=t["drawn"], attention_bytes=b)
    for key, name, elem_id, in_svg in BERTVIZ:
        t, b = measure(page, net, f"tab({name!r}).click()", {"drawn": FRAME},
                       {**arg, "tab": name, "id": elem_id, "in_svg": in_svg}, f"the {name} of {exp.text!r}")
        r.update({f"{key}_ms": t["drawn"], f"{key}_bytes": b})
    measure(page, net, "tab('One head').click()", {"back": HEATMAP}, arg, "the One head view again")
    measure(page, net, "tab('Translate').click()", {"back": TRANSLATE_OPEN}, arg, "the Translate tab again")
    return r


# ---- the runs ------------------------------------------------------------------------------------------

LOADED = (f"{ENGLISH} && hasAll(candLabels(), arg.cands) && arg.translate_ids.every(settled) "
          "&& !busy().length")


def run_app(browser, exps, clicks):
    """The app in a page of its own: ({label: [cycle(...) of each measured click]}, the bytes of the first visit:
    the page, the Translate tab and the translation run on load). Each measured cycle follows one on another
    sentence."""
    from tools.serve import AppProcess
    with AppProcess() as app:
        try:
            page, net = new_page(browser, app.url)
            page.get_by_role("tab", name="Translate", exact=True).wait_for()
            _, first = measure(page, net, "tab('Translate').click()", {"shown": LOADED}, arg_of(exps["example"]),
                               "the Translate tab with the translation run on load", fresh=False)
            rows, first_open = {}, None
            for label, exp in exps.items():
                rows[label] = []
                for _ in range(clicks):
                    warm = cycle(page, net, exp.alternate)
                    first_open = first_open or {f"{key}_first_{unit}": warm[f"{key}_{unit}"] for key, *_ in BERTVIZ
                                                for unit in ("ms", "bytes")}
                    rows[label].append(cycle(page, net, exp))
                print(f"  {label}: {clicks} measured clicks done", flush=True)
            page.context.close()
        except Exception as e:
            raise RuntimeError(f"{e}\napp log (end):\n{app.tail(2000)}") from None
    first_open = {k: v["bytes"] if k.endswith("_bytes") else v for k, v in first_open.items()}
    return rows, {"page_load_bytes": first["bytes"], "page_load_compressed_bytes": first["compressed"], **first_open}


def echo_demo():
    """The floor of a Gradio event: a text box, a button and an output box, the function an echo. A second button
    sends an output of PAYLOAD bytes, to check the bytes counter."""
    import gradio as gr
    with gr.Blocks(title="echo", analytics_enabled=False) as demo:
        text = gr.Textbox(label="in", elem_id="e-in")
        echo = gr.Button("Echo", elem_id="e-btn")
        payload = gr.Button(f"{PAYLOAD:,} bytes", elem_id="e-big")
        out = gr.Textbox(label="out", elem_id="e-out")
        echo.click(lambda s: s, text, out)
        payload.click(lambda: "x" * PAYLOAD, None, out)
    return demo


def run_echo(browser, clicks):
    """Click -> output shown on the echo page (the very first click apart), its bytes, and the counter check."""
    from app.style import theme
    demo = echo_demo()
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, theme=theme(), footer_links=[])
    try:
        page, net = new_page(browser, demo.local_url)
        page.locator("#e-btn").wait_for()
        ms, sizes = [], []
        for i in range(clicks + 1):
            text = f"{i}: {SHORT}"  # a new text each click, so the output changes
            page.locator("#e-in textarea").fill(text)
            t, b = measure(page, net, "el('#e-btn').click()", {"shown": ECHO}, {"text": text}, "the echo")
            ms.append(t["shown"])
            sizes.append(b["bytes"])
        _, b = measure(page, net, "el('#e-big').click()",
                       {"shown": f"el('#e-out textarea')?.value.length === {PAYLOAD} && settled('e-out')"}, {},
                       f"the {PAYLOAD:,}-byte output")
        page.context.close()
    finally:
        demo.close()
    if not PAYLOAD <= b["bytes"] <= PAYLOAD + 4096:
        raise RuntimeError(f"the bytes counter is off: an output of {PAYLOAD:,} bytes counted as {b['bytes']:,} "
                           f"({dict(b['by_path'])})")
    return {"echo_first_ms": ms[0], "echo_ms": statistics.median(ms[1:]), "echo_bytes": statistics.median(sizes[1:]),
            "counter_payload_bytes": PAYLOAD, "counter_counted_bytes": b["bytes"]}


def model_floor(text, runs):
    """The model's own time for `text` as the page asks for it (greedy, every attention map kept), median ms."""
    from app.shared import get_translator
    tr = get_translator()
    tr.inspect(text, method="greedy")  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        tr.inspect(text, method="greedy")
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# ---- results -------------------------------------------------------------------------------------------

def summarize(label, exp, rows, model_ms):
    """The medians over one sentence's measured clicks, as flat keys named after `label`."""
    r = {f"{label}_pieces": exp.pieces, f"{label}_chars": len(exp.text), f"{label}_model_ms": model_ms}
    for key, _ in TIMES:
        r[f"{label}_{key}_ms"] = statistics.median(row[f"{key}_ms"] for row in rows)
    for key, _ in BYTES:
        r[f"{label}_{key}_bytes"] = round(statistics.median(row[f"{key}_bytes"]["bytes"] for row in rows))
    # what came on Gradio's event streams (the events' results), the rest being other requests
    r[f"{label}_translation_stream_bytes"] = round(statistics.median(
        row["translation_bytes"]["by_path"].get("queue/data", 0) for row in rows))
    r[f"{label}_compressed_bytes"] = sum(row[f"{key}_bytes"]["compressed"] for row in rows for key, _ in BYTES)
    return r


def rounded(results, prefix="browser_"):
    return {prefix + k: (round(v, 2) if isinstance(v, float) else v) for k, v in results.items()}


def _row(name, app, model, gradio, fmt):
    cell = lambda v: fmt.format(v) if v is not None else f"{'-':>9s}"  # noqa: E731
    return f"{name:62s} {cell(app)} {cell(model)} {cell(gradio)}"


def table(r, labels):
    """The figures (keys of `rounded`), each beside its floors: the model's own time, a trivial Gradio event."""
    lines = [f"{'measure (median of %d clicks)' % r['browser_clicks']:62s} {'app':>9s} {'model':>9s} {'Gradio':>9s}"]
    for label in labels:
        k = f"browser_{label}_"
        p = r[k + "pieces"]
        for key, name in TIMES:
            model = r[k + "model_ms"] if key in ("english", "views") else None
            lines.append(_row(f"{p} pieces: {name} (ms)", r[f"{k}{key}_ms"], model, r["browser_echo_ms"], "{:9.0f}"))
        for key, name in BYTES:
            lines.append(_row(f"{p} pieces: {name} (kB)", r[f"{k}{key}_bytes"] / 1e3, None,
                              r["browser_echo_bytes"] / 1e3, "{:9.1f}"))
    compressed = sum(r[f"browser_{label}_compressed_bytes"] for label in labels)
    streams = ", ".join(f"{r[f'browser_{label}_translation_stream_bytes'] / 1e3:,.1f}" for label in labels)
    lines += [
        "model: Translator.inspect(text, method='greedy') in this process, median; Gradio: click -> output shown "
        f"on a one-textbox echo page (its very first click: {r['browser_echo_first_ms']:.0f} ms)",
        "kB: bytes the page received (decoded), from Chromium's Network.dataReceived; compressed (Content-Encoding) "
        f"among those measured: {compressed:,} bytes; first visit (page, Translate tab, translation on load): "
        f"{r['browser_page_load_bytes'] / 1e3:,.0f} kB ({r['browser_page_load_compressed_bytes'] / 1e3:,.0f} kB of "
        f"it compressed on the wire); per translation on Gradio's event streams: {streams} kB",
        "bertviz views, first opened on the page (each frame loads jQuery and d3 then): head "
        f"{r['browser_bertviz_head_first_ms']:.0f} ms, {r['browser_bertviz_head_first_bytes'] / 1e3:,.1f} kB; model "
        f"{r['browser_bertviz_model_first_ms']:.0f} ms, {r['browser_bertviz_model_first_bytes'] / 1e3:,.1f} kB",
        f"counter check: an output of {r['browser_counter_payload_bytes']:,} bytes counted as "
        f"{r['browser_counter_counted_bytes']:,} bytes"]
    return "\n".join(lines)


def merge_json(path, results):
    """Add `results` to the flat JSON object in `path` (created if missing), keeping its other keys."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    data = json.loads(text) if text.strip() else {}
    data.update(results)
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def run(clicks=5, save=None):
    """Measure, print the table and the JSON line; merge the figures into `save` if given. Returns them."""
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} not found (scripts/install.sh --dev installs it)")
    from playwright.sync_api import sync_playwright

    from app.shared import examples
    exps = {"short": expected(SHORT), "example": expected(examples()[0]), "long": expected(LONG)}
    alternates = [expected(s) for s in ALTERNATES]
    for label, exp in exps.items():
        exp.alternate = alternate_for(exp, alternates)
        print(f"{label}: {exp.pieces} pieces, {len(exp.text)} characters: {exp.text!r} -> {exp.english!r}", flush=True)
    model = {label: model_floor(exp.text, max(clicks, 5)) for label, exp in exps.items()}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            results = {"clicks": clicks, **run_echo(browser, clicks)}
            rows, first_visit = run_app(browser, exps, clicks)
            results.update(first_visit)
        finally:
            browser.close()
    for label, exp in exps.items():
        results.update(summarize(label, exp, rows[label], model[label]))
    results = rounded(results)
    print(table(results, list(exps)))
    print(json.dumps(results))
    if save:
        merge_json(save, results)
    return results
