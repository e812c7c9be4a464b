"""The page in two languages: one table of strings per language (app/locale/<lang>.json), read by Gradio's
I18n for every static label and by `text` for what Python builds (the views' figures, HTML and Markdown, the
callbacks' messages, the Learn path's steps, questions and answers).

Gradio translates static labels in the browser, in the language the page's head script picks before the first
paint (the address's, the learner's last choice or the browser's: app/page/head.js) or the page's switch. Text
built on the server is looked up here with the language the page sends: the switch is one of every tab's controls, so a
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

from . import page as page_js
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


HOLD_SAFETY_MS = 60000  # a page that never reaches its language is shown after this all the same (head.js)

WORDS = ("svg", "svg_title", "processing", "queue")  # page.<word>: what the browser itself writes


def plotly_locales():
    """{lang: {plotly's English string: ours}} for the strings of plotly's toolbar (keys "plotly.*", whose English
    is plotly's own string, the key of its locale dictionaries)."""
    en = {k: v for k, v in table(DEFAULT).items() if k.startswith("plotly.")}
    return {lang: {v: text(lang, k) for k, v in en.items()} for lang in LANGS if lang != DEFAULT}


def head_script(tab_labels):
    """The page's head for launch(head=...): app/page/head.js run with the tab labels ({tab id: key}), the browser's
    words in every language and the scripts it installs (app/gradio_adapter.py). Every value is this app's own,
    and written so that nothing in it can end the script."""
    tabs = {tab: {lang: text(lang, key) for lang in LANGS} for tab, key in tab_labels.items()}
    words = {lang: {w: text(lang, f"page.{w}") for w in WORDS} for lang in LANGS}
    values = dict(TABS=tabs, WORDS=words, PLOTLY=plotly_locales(), DEFAULT=DEFAULT, STATUS_CHUNK=status_chunk(),
                  SAFETY_MS=HOLD_SAFETY_MS)
    scripts = dict(gradioCore=LOCALE_JS, sameSizeResize=PLOTLY_RESIZE_JS, drawWhenNear=PLOTLY_LAZY_JS,
                   phoneWidth=PHONE_WIDTH_JS, quietStatuses=STATUS_JS)
    return f"<script>\n{page_js.script('head', values, {k: page_js.Code(v) for k, v in scripts.items()})}\n</script>"


def switch(demo):
    """The visible language switch, set when the page loads to the language the head picked; its change
    relabels the page in the browser, then sets the radio's `said`, a gr.State whose change each tab's listener
    takes as a trigger (app/views.py): a state's change starts its listeners side by side, where the radio's own
    change would start them one after another. Returns the radio, whose value the server reads for text it
    builds."""
    lang = gr.Radio(choices("ui.lang", LANGS), value=DEFAULT, label=L("ui.lang"), elem_id="lang",
                    container=False)
    demo.load(None, None, lang, js=page_js.function("lang-initial", DEFAULT))
    lang.change(None, lang, None, js=page_js.function("lang-apply"))
    lang.said = gr.State(DEFAULT)
    # queued: the page starts a state's change listeners only after a queued event
    lang.change(lambda value: value, lang, lang.said, api_visibility="private", show_progress="hidden")
    return lang


def tab_labels(demo):
    """{tab id: key of its label} for every tab of the page labelled through L()."""
    return {str(b.id): b.label.key for b in demo.blocks.values()
            if isinstance(b, gr.Tab) and b.id is not None and isinstance(b.label, gr.i18n.I18nData)}
