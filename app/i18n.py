"""The page in two languages: one table of strings per language (app/locale/<lang>.json), read by Gradio's
I18n for every static label and by `text` for what Python builds (the views' figures, HTML and Markdown, the
callbacks' messages, the Learn path's steps, questions and answers).

Gradio translates static labels in the browser, in the language the page's head script picks before the first
paint (the address's, the learner's last choice or the browser's: HEAD_JS) or the page's switch. Text built on
the server is looked up here with the language the page sends: the switch is one of every tab's controls, so a
view reads it like any other control and is drawn again, when on screen, once it changes. A language read from
the browser or from an address is untrusted: anything but a known code reads as English.

Keys: "ui.<tab>.<name>" for static labels (no {fields}, unless written on the server by `L(key, **values)`),
"<tab>.<name>" for what the server builds.
"""
import contextvars
import functools
import hashlib
import inspect
import json
import string
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import gradio as gr

from .gradio_adapter import LOCALE_JS, PHONE_WIDTH_JS, PLOTLY_LAZY_JS, PLOTLY_RESIZE_JS, STATUS_JS, status_chunk

LOCALES = Path(__file__).resolve().parents[1] / "locale"  # the project's tables, which core/words.py reads too
LANGS = ("zh-CN", "en")  # the switch's order
DEFAULT = "en"


@lru_cache(maxsize=None)
def table(lang):
    """{key: string} of one language (app/locale/<lang>.json)."""
    return json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8"))


def read_lang(value):
    """A language code from the page or an address, checked: "zh", "zh-CN", "zh-Hans-CN" read as zh-CN, any
    other known code as itself, anything else as English."""
    value = str(value or "").strip()
    if value.lower().startswith("zh"):
        return "zh-CN"
    return value if value in LANGS else DEFAULT


_SPOKEN = contextvars.ContextVar("page_language")  # the language of the event being handled


@contextmanager
def speaking(lang):
    """Handle an event in `lang` (checked: read_lang): within it, `text(key)` writes in that language. Set once
    per event, where the event reads the page's language (app/views.py sets it around every view it draws)."""
    token = _SPOKEN.set(read_lang(lang))
    try:
        yield
    finally:
        _SPOKEN.reset(token)


def spoken():
    """The language of the event being handled. Outside an event's `speaking` it raises: nothing is drawn in a
    language no one chose."""
    try:
        return _SPOKEN.get()
    except LookupError:
        raise LookupError("no language set for this event: draw inside app.i18n.speaking(lang)") from None


def in_language(fn):
    """An event callback that takes the page's language as its keyword `lang` and runs in it (`speaking`); a
    generator's every step runs in it (Gradio may run each step in another thread). Its signature is `fn`'s with
    `lang` added, keyword-only: Gradio checks an event's inputs_kwargs against it."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def run_steps(*args, lang, **kwargs):
            steps = fn(*args, **kwargs)
            try:
                while True:
                    with speaking(lang):
                        try:
                            value = next(steps)
                        except StopIteration:
                            return
                    yield value
            finally:
                steps.close()  # a run abandoned (the page closed, the event cancelled) ends now, not when collected
        return _taking_lang(run_steps, fn)

    @functools.wraps(fn)
    def run(*args, lang, **kwargs):
        with speaking(lang):
            return fn(*args, **kwargs)
    return _taking_lang(run, fn)


def _taking_lang(wrapper, fn):
    """`wrapper` (functools.wraps of `fn`) with `fn`'s signature and a keyword-only `lang`: what it takes."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter("lang", inspect.Parameter.KEYWORD_ONLY))
    wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper


def text(*args, **values):
    """text(key, **values): the string `key` in the event's language (`spoken`; English where the table lacks
    it), with `values` put into its {fields}. text(lang, key, **values) names the language: for what is written
    in every language at once (labels built on the server, the head script, the command-line tools)."""
    lang, key = args if len(args) == 2 else (spoken(), *args)
    s = table(read_lang(lang)).get(key)
    if s is None:
        s = table(DEFAULT)[key]
    return s.format(**values) if values else s


def texts(prefix):
    """The text function of one tab: t(key, **values) is text(f"{prefix}.{key}", **values) (and t(lang, key, ...)
    names the language, as `text` does)."""
    def t(*args, **values):
        return text(*args[:-1], f"{prefix}.{args[-1]}", **values)
    return t


def fields(s):
    """The {field} names a string takes."""
    return {f for _, f, _, _ in string.Formatter().parse(s) if f}


STATIC = "ui."  # keys of the labels the browser translates; the others are looked up here


@lru_cache(maxsize=1)
def i18n():
    """The page's gr.I18n (passed to launch(i18n=...)): every language's static labels, the keys under "ui."
    that take no {fields}. A label that takes fields is written on the server and added here by `L`."""
    return gr.I18n(**{lang: {k: v for k, v in table(lang).items() if k.startswith(STATIC) and not fields(v)}
                      for lang in LANGS})


def L(key, **values):
    """A static label, translated in the browser: gr.Textbox(label=L("ui.translate.german")).

    With `values`, a label built from the model or the shipped files (L("ui.overview.model", layers=3)): its
    string is written here in every language with the values put in, and goes to the browser under a key of its
    own (the key and a digest of the values), so that the browser still switches it with the page's language."""
    assert key.startswith(STATIC) and key in table(DEFAULT), key
    want, have = fields(table(DEFAULT)[key]), set(values)
    assert want == have, (key, want, have)
    if not values:
        return i18n()(key)
    return written(key, {lang: text(lang, key, **values) for lang in LANGS})


def written(key, texts):
    """A static label written on the server in every language ({lang: text}), sent to the browser under `key` and
    a digest of the texts, so that the browser switches it with the page's language. For text whose parts come
    and go with the numbers (the Heads tab's reading), which no one string of a table holds. Only at build
    time: the browser learns the page's labels when it loads."""
    assert set(texts) == set(LANGS), texts
    digest = hashlib.sha256(json.dumps(texts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
    name = f"{key}#{digest}"
    for lang, s in texts.items():
        i18n().translations[lang][name] = s
    return i18n()(name)


def choices(prefix, values, **fixed):
    """A radio's or dropdown's choices labelled in both languages: [(L(f"{prefix}.{v}"), v), ...]."""
    return [(L(f"{prefix}.{v}", **fixed), v) for v in values]


# A script in the page's head (launch(head=...)). Gradio picks its locale from the browser's language before any
# script of the page runs, and draws the app right after running the head (app/gradio_adapter.py): so the head
# picks the page's language (?lang= in the address, else the learner's last choice, else the browser's), sets
# Gradio's locale to it, and keeps the app out of sight until Gradio's labels and the switch both show it; the first
# paint is in one language. `explorerLang.apply(lang)` (the switch's change) switches everything the browser
# draws: Gradio's labels, the tab buttons (Gradio writes a tab's label once, in the locale of the moment, and again
# whenever it redraws the button: an observer puts this language's label back), Gradio's status lines (English in
# every locale), plotly's toolbar (its locale, from the page's own table) and the page's own buttons
# (data-word="key": WORDS[lang][key] is their text, data-word-title their tooltip).
HEAD_JS = """<script>
(() => {
  const TABS = __TABS__, WORDS = __WORDS__, PLOTLY = __PLOTLY__, DEFAULT = __DEFAULT__, STATUS_CHUNK = __STATUS_CHUNK__;
  const pick = (v) => { v = String(v || ''); return v.toLowerCase().startsWith('zh') ? 'zh-CN' : (Object.hasOwn(WORDS, v) ? v : DEFAULT); };
  const stored = () => { try { return window.localStorage.getItem('explorer-lang'); } catch (e) { return null; } };
  let lang = pick(new URLSearchParams(window.location.search).get('lang') || stored() || navigator.language);
  const word = (key) => WORDS[lang][key];
  __LOCALE_JS__
  const relabelTabs = () => {
    document.querySelectorAll('[role=tab][data-tab-id]').forEach((b) => {
      const label = TABS[b.dataset.tabId]?.[lang];
      const node = [...b.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
      if (label && node && node.nodeValue !== label) node.nodeValue = label;
    });
  };
  const relabel = () => {
    relabelTabs();
    document.querySelectorAll('[data-word]').forEach((e) => {
      if (e.textContent !== word(e.dataset.word)) e.textContent = word(e.dataset.word);
    });
    document.querySelectorAll('[data-word-title]').forEach((e) => {
      if (e.title !== word(e.dataset.wordTitle)) e.title = word(e.dataset.wordTitle);
    });
  };
  const STATUS = [[/^processing \\|$/, () => word('processing')],
                  [/^queue: (\\d+)\\/(\\d*) \\|$/, (m) => word('queue').replace('{position}', m[1]).replace('{size}', m[2])]];
  // the status trackers that a batch of changes touched: a change within one, or one added to the page
  const TRACKER = '[data-testid=status-tracker]';
  const touched = (records) => {
    const found = new Set();
    for (const r of records) {
      const t = (r.target.nodeType === Node.ELEMENT_NODE ? r.target : r.target.parentElement)?.closest(TRACKER);
      if (t) { found.add(t); continue; }
      for (const n of r.addedNodes) {
        if (n.nodeType !== Node.ELEMENT_NODE) continue;
        if (n.matches(TRACKER)) found.add(n);
        else n.querySelectorAll(TRACKER).forEach((e) => found.add(e));
      }
    }
    return found;
  };
  // (a hidden one too: its words may be written before it shows, and showing it changes only its class)
  const restatus = (trackers) => trackers.forEach((t) => {
    const walk = document.createTreeWalker(t, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const [re, say] of STATUS) {
        const m = n.nodeValue.trim().match(re);
        if (m && lang !== 'en') n.nodeValue = say(m);
      }
    }
  });
  // whether a batch of changes drew a tab button or wrote in one (Gradio writes a button's label in the language
  // its config was read in, the browser's, whatever the page's language)
  const TAB = '[role=tab][data-tab-id]';
  const drewTabs = (records) => records.some((r) => {
    const at = r.target.nodeType === Node.ELEMENT_NODE ? r.target : r.target.parentElement;
    return at?.closest(TAB) || [...r.addedNodes].some((n) => n.nodeType === Node.ELEMENT_NODE &&
                                                             (n.matches(TAB) || n.querySelector(TAB)));
  });
  // the status lines and the tab buttons at once: a frame's animation callbacks draw too (Gradio lays out its tab
  // buttons in one), and a label put right in the next frame would be painted once in the wrong language; the
  // other labels once a frame at most, before it is painted (a tab's opening makes dozens of batches of changes
  // to the page, and relabelling looks through all of it)
  let queued = false;
  const fix = () => { queued = false; relabel(); };
  new MutationObserver((records) => {
    if (lang !== 'en') restatus(touched(records));
    if (drewTabs(records)) relabelTabs();
    if (!queued) { queued = true; requestAnimationFrame(fix); }
  })
    .observe(document.documentElement, {childList: true, subtree: true, characterData: true});
  // plotly arrives with the first figure (Gradio sets window.Plotly): it gets the page's locales before it draws
  let plotly = window.Plotly;
  const toolbar = () => {
    if (!plotly) return;
    plotly.setPlotConfig({locale: lang});
    const known = {};  // a title in any language -> its English
    for (const dictionary of Object.values(PLOTLY)) for (const [en, s] of Object.entries(dictionary)) known[s] = en;
    document.querySelectorAll('.modebar-btn[data-title]').forEach((b) => {
      const en = known[b.dataset.title] ?? b.dataset.title;
      b.dataset.title = PLOTLY[lang]?.[en] ?? en;
    });
  };
  const meet = (p) => {
    plotly = p;
    sameSizeResize(p);
    drawWhenNear(p);
    phoneWidth(p);  // around drawWhenNear's react: a plot has its width before it is drawn or waits
    for (const [name, dictionary] of Object.entries(PLOTLY)) p.register({moduleType: 'locale', name, dictionary});
    toolbar();
  };
  if (plotly) meet(plotly);
  else Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true, get: () => plotly,
                                                set: (p) => { try { meet(p); } catch (e) { plotly = p; } }});
  const apply = (value) => {
    lang = pick(value);
    try { window.localStorage.setItem('explorer-lang', lang); } catch (e) { /* private mode */ }
    gradioCore().then((core) => core?.changeLocale?.(lang)).catch(() => null);
    relabel();
    toolbar();
    return lang;
  };
  window.explorerLang = {pick, apply, word, lang: () => lang};
  // a loading status applied already is not applied again (app/gradio_adapter.py STATUS_JS): the very module
  // Gradio's Blocks imports, from the same folder as the page's entry script
  const entry = document.querySelector('script[type=module][src*="/assets/"]');
  if (STATUS_CHUNK && entry) {
    import(new URL(STATUS_CHUNK, entry.src).href).then((m) => { window.__quietStatuses = quietStatuses(m); })
      .catch(() => null);
  }
  // out of sight until Gradio's locale (it sets <html lang> once loaded) and the switch are this language, however
  // long a busy server or a slow phone takes to draw the page (shown after a few seconds, a page still drawing was
  // painted in the browser's language first); only a page that never gets there, one whose script failed, is shown
  // after __SAFETY_MS__ ms all the same, so that what went wrong can be seen
  const hold = document.createElement('style');
  hold.textContent = 'gradio-app {visibility: hidden !important}';
  document.head.appendChild(hold);
  const until = Date.now() + __SAFETY_MS__;
  const ready = () => document.documentElement.lang === lang && document.querySelector('#lang input:checked')?.value === lang;
  const wait = () => { if (ready() || Date.now() > until) { relabel(); hold.remove(); } else setTimeout(wait, 10); };
  gradioCore().then((core) => core?.changeLocale?.(lang)).catch(() => null).finally(wait);
})();
</script>"""

HOLD_SAFETY_MS = 60000  # HEAD_JS: a page that never reaches its language is shown after this all the same

# The switch's value when the page loads (the load event's js): the language the head picked.
INITIAL_JS = "() => window.explorerLang?.lang() ?? '%s'" % DEFAULT

WORDS = ("svg", "svg_title", "processing", "queue")  # page.<word>: what the browser itself writes


def js_json(value):
    """`value` as a JavaScript literal that cannot leave a <script>: json.dumps, with '<' written as \\u003c."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def plotly_locales():
    """{lang: {plotly's English string: ours}} for the strings of plotly's toolbar (keys "plotly.*", whose English
    is plotly's own string, the key of its locale dictionaries)."""
    en = {k: v for k, v in table(DEFAULT).items() if k.startswith("plotly.")}
    return {lang: {v: text(lang, k) for k, v in en.items()} for lang in LANGS if lang != DEFAULT}


def head_script(tab_labels):
    """HEAD_JS for launch(head=...), with the tab labels ({tab id: key}) and the browser's words in every
    language. Every value is this app's own, and written so that nothing in it can end the script."""
    tabs = {tab: {lang: text(lang, key) for lang in LANGS} for tab, key in tab_labels.items()}
    words = {lang: {w: text(lang, f"page.{w}") for w in WORDS} for lang in LANGS}
    out = HEAD_JS
    for name, value in (("TABS", tabs), ("WORDS", words), ("PLOTLY", plotly_locales()), ("DEFAULT", DEFAULT),
                        ("STATUS_CHUNK", status_chunk()), ("SAFETY_MS", HOLD_SAFETY_MS)):
        out = out.replace(f"__{name}__", js_json(value))
    return out.replace("__LOCALE_JS__", "\n  ".join((LOCALE_JS, PLOTLY_RESIZE_JS, PLOTLY_LAZY_JS, PHONE_WIDTH_JS, STATUS_JS)))


def switch(demo):
    """The visible language switch, set when the page loads to the language the head picked; its change
    relabels the page in the browser. Returns the radio, whose value the server reads for text it builds."""
    lang = gr.Radio(choices("ui.lang", LANGS), value=DEFAULT, label=L("ui.lang"), elem_id="lang",
                    container=False)
    demo.load(None, None, lang, js=INITIAL_JS)
    lang.change(None, lang, None, js="(lang) => { window.explorerLang?.apply(lang); }")
    return lang


def tab_labels(demo):
    """{tab id: key of its label} for every tab of the page labelled through L()."""
    return {str(b.id): b.label.key for b in demo.blocks.values()
            if isinstance(b, gr.Tab) and b.id is not None and isinstance(b.label, gr.i18n.I18nData)}
