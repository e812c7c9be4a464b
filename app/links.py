"""Links to a view: the page's address records the sentence, its decoding settings, the tab on screen and the
attention kind, layer and head; opening such an address restores them.

    http://127.0.0.1:7860/?text=Ein+Hund+läuft.&method=beam&beam=4&tab=attention/all-heads&kind=cross&layer=1

Two halves. In the browser, `LINK_JS` (run once when the page loads) keeps the address up to date: the events
that change a recorded value call `explorerLink.set`, and a click on a tab records the tab's path; when the page
opens with a `tab` parameter it clicks that tab (and sub-tab), which draws its views as a click by hand would.
On the server, `open_link` reads the parameters when the page loads and translates the linked sentence with the
linked settings. Everything read from an address is untrusted: the sentence goes through the same limits as
typed text, names must be one of the known ones, numbers are clamped to their controls' ranges, and the tab is
looked up in the list of the page's own tabs, never used as a selector or as markup.
"""
import json

import gradio as gr

from core.decode import DECODING_LIMITS, DEFAULT_METHOD, METHODS
from core.instrument import KINDS

from .common import clamp
from .gradio_adapter import tab_nesting
from .learn_path import STEPS
from .shared import examples
from .translating import MAX_CHARS, SETTINGS, decoding_settings, translate

HEAD = ("kind", "layer", "head")  # the Attention tab's controls a link records
TEXT_CAP = 4 * MAX_CHARS  # longer than any sentence the app takes: translate() says so; beyond, cut here first


def read_link(params, cfg, default_alpha):
    """The values a link names, each checked: {"text", the six settings, "kind", "layer", "head", "learn"}; a value
    that is missing takes its control's first value, a number is kept to its control's range (DECODING_LIMITS for
    the settings) and an unreadable one takes the lowest."""
    get = params.get
    text = (get("text") or "").strip()[:TEXT_CAP] or examples()[0]
    method = get("method") if get("method") in METHODS else DEFAULT_METHOD
    kind = get("kind") if get("kind") in KINDS else "encoder"
    return {"text": text, "method": method, **decoding_settings({k: get(k) for k in DECODING_LIMITS}, default_alpha),
            "kind": kind, "layer": clamp(get("layer", 0), 0, cfg["N"] - 1), "head": clamp(get("head", 0), 0, cfg["h"] - 1),
            "learn": clamp(get("learn", 1), 1, len(STEPS))}


def link_opener(cfg, default_alpha):
    """The page-load callback: the linked sentence translated with the linked settings. Returns, in order, the
    six settings, the English, the status line, the Inspection, the Attention tab's kind, layer and head, and the
    Learn path's progress at the linked step. A setting, head or step the link does not name is left as the
    reader has it (the page shows its first value already, or the reader's since), and where this session has
    translated already (the reader was quicker than the load: it waits its turn behind that translation) the
    load changes nothing. The German boxes show the linked sentence from the start (LINK_TEXT_JS)."""
    def open_link(previous, progress, request: gr.Request):
        if previous is not None:
            return gr.skip()  # every output (app.gradio_adapter.leave_skipped_alone)
        params = dict(request.query_params) if request is not None else {}
        v = read_link(params, cfg, default_alpha)
        english, status, ins = translate(v["text"], *(v[k] for k in SETTINGS), previous)
        named = {k: v[k] if k in params else gr.skip() for k in (*SETTINGS, *HEAD)}
        step = gr.skip() if "learn" not in params else dict(progress or {"done": []}, step=v["learn"] - 1)
        return (*(named[k] for k in SETTINGS), english, status, ins, *(named[k] for k in HEAD), step)
    return open_link


# The German boxes' sentence when the page loads (a load event's js, run in the page before the reader can type):
# the link's, read as read_link reads it (trimmed, cut to TEXT_CAP characters), else the boxes' own. The server's
# load translates the same sentence; were it to write the boxes when it answers, it would replace what the reader
# typed meanwhile.
LINK_TEXT_JS = """(translate_box, learn_box) => {
  const text = [...(new URLSearchParams(window.location.search).get('text') ?? '').trim()].slice(0, %d).join('');
  return text ? [text, text] : [translate_box, learn_box];
}""" % TEXT_CAP


def tab_paths(demo):
    """{tab id: path of tab ids from the top ("attention/all-heads")} for every tab of the page."""
    return {str(tab.id): "/".join(str(t.id) for t in path if t.id is not None)
            for tab, path in tab_nesting(demo) if tab.id is not None}


# Run by the page once it loads (launch(js=...)); TABS is filled in by link_script. It writes the address with
# history.replaceState (and tells a parent frame, as a Hugging Face Space expects); `open(path)` clicks the tab
# buttons along a path (found by their tab ids, whatever the language of their labels); on load it opens the
# linked tab once the page has settled.
LINK_JS = """() => {
  const TABS = %s;
  const paths = new Set(Object.values(TABS));
  // Gradio's page has <base href="./">. Where there is one, plotly writes each clip path with the address of the
  // page as it was ("url('http://host/?text=...#clip')"); once replaceState changes the address, that names
  // another document, and the browser fetches the whole page again for each plot it lays out. A base that
  // names the page's own folder changes no address: it is taken away, and plotly writes url(#clip).
  const base = document.querySelector('base[href]');
  if (base && new URL(base.getAttribute('href'), window.location.href).href === new URL('./', window.location.href).href)
    base.remove();
  // a clip path written before that (a plot drawn first) is written again as the page's own
  const ownClips = () => document.querySelectorAll('.js-plotly-plot [clip-path^=url]').forEach((e) => {
    const clip = e.getAttribute('clip-path'), at = clip.lastIndexOf('#');
    if (at > 4 && !clip.startsWith('url(#')) e.setAttribute('clip-path', 'url(' + clip.slice(at).split(/['")]/)[0] + ')');
  });
  const set = (values) => {
    const url = new URL(window.location.href);
    for (const [key, value] of Object.entries(values)) {
      if (value === null || value === undefined || value === '') url.searchParams.delete(key);
      else url.searchParams.set(key, String(value));
    }
    ownClips();
    window.history.replaceState(null, '', url);
    if (window.parent !== window) window.parent.postMessage({queryString: url.search, hash: url.hash}, '*');
  };
  const button = (id) => [...document.querySelectorAll('[role=tab][data-tab-id]')].find(b => b.dataset.tabId === id);
  // click the buttons of a path from the top, each once the one above has shown it; false for an unknown path
  const open = (path, until = Date.now() + 10000) => {
    if (!paths.has(path)) return false;
    const ids = path.split('/');
    const next = () => {
      if (!ids.length || Date.now() > until) return;
      const b = button(ids[0]);
      if (b) { if (b.getAttribute('aria-selected') !== 'true') b.click(); ids.shift(); }
      setTimeout(next, b ? 0 : 50);
    };
    next();
    return true;
  };
  window.explorerLink = {set, open};
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('[role=tab][data-tab-id]');
    const path = b && Object.hasOwn(TABS, b.dataset.tabId) ? TABS[b.dataset.tabId] : null;
    if (path) set({tab: path});
  }, true);
  const wanted = new URLSearchParams(window.location.search).get('tab');
  if (!wanted || !paths.has(wanted)) return;
  // Open it only once the page shows its first translation (drawn on the Learn tab, where the page opens): a
  // click before that can reach the server ahead of the first tab's own opening, which would then be taken as
  // the tab on screen. After 30 s, open it anyway.
  const started = Date.now();
  const ready = () => document.querySelector('#learn-figure .js-plotly-plot') !== null;
  const wait = () => {
    if (ready() || Date.now() - started > 30000) open(wanted);
    else setTimeout(wait, 50);
  };
  wait();
}"""

# after a translation: the sentence and its settings; after a move of the Attention tab's controls: those
RECORD_TRANSLATION = ("(text, method, beam, alpha, temperature, top_k, max_len) => { window.explorerLink?.set("
                      "{text, method, beam, alpha, temperature, top_k, max_len}); }")
RECORD_HEAD = "(kind, layer, head) => { window.explorerLink?.set({kind, layer, head}); }"


def wire(demo, cfg, default_alpha, state, translation, attn, learn):
    """The page-load event that opens a link (returned, for the events that follow a translation), and the
    events that record the sentence, its settings and the attention head in the address."""
    head = [attn.controls[name] for name in HEAD]
    boxes = [translation.form[0], learn.parts.src]
    demo.load(None, boxes, boxes, js=LINK_TEXT_JS)
    linked = demo.load(link_opener(cfg, default_alpha), [state, learn.progress],
                       [*translation.form[1:], *translation.results, state, *head, learn.progress],
                       api_visibility="private", concurrency_id="model", show_progress_on=translation.results[:1])
    for event in (translation.translated, linked):
        event.then(None, translation.form, None, js=RECORD_TRANSLATION)
    gr.on([c.change for c in head], None, head, None, js=RECORD_HEAD)
    return linked


def link_script(demo):
    """The page's link script, with the page's own tabs. json.dumps escapes nothing a label could use to leave
    the script: labels are this app's own, and '<' is written as \\u003c besides."""
    return LINK_JS % json.dumps(tab_paths(demo)).replace("<", "\\u003c")


def page_script(demo, *others):
    """One function for launch(js=...): the link script, then each of `others` (functions as strings)."""
    calls = "".join(f"({f})();\n" for f in (link_script(demo), *others))
    return "() => {\n" + calls + "}"
