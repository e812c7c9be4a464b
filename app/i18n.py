"""The page in two languages: one table of strings per language (app/locale/<lang>.json), read by Gradio's
I18n for every static label and by `text` for what Python builds (the views' figures, HTML and Markdown, the
callbacks' messages, the Learn path's steps, questions and answers).

Gradio translates static labels in the browser, from the browser's language or the page's switch. Text built on
the server is looked up here with the language the page sends: the switch is one of every tab's controls, so a
view reads it like any other control and is drawn again, when on screen, once it changes. A language read from
the browser or from an address is untrusted: anything but a known code reads as English.

Keys: "ui.<tab>.<name>" for static labels (no {fields}, unless written on the server by `L(key, **values)`),
"<tab>.<name>" for what the server builds.
"""
import hashlib
import json
import string
from functools import lru_cache
from pathlib import Path

import gradio as gr

from .gradio_adapter import LOCALE_JS

LOCALES = Path(__file__).resolve().parent / "locale"
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


def text(lang, key, **values):
    """The string `key` in `lang` (English where the table lacks it), with `values` put into its {fields}."""
    s = table(read_lang(lang)).get(key)
    if s is None:
        s = table(DEFAULT)[key]
    return s.format(**values) if values else s


def texts(prefix):
    """The text function of one tab: t(lang, key, **values) is text(lang, f"{prefix}.{key}", **values)."""
    def t(lang, key, **values):
        return text(lang, f"{prefix}.{key}", **values)
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


# Run by the page once it loads (launch(js=...)). `explorerLang.apply(lang)` switches the page's static labels
# (Gradio's own locale store, through the module of Gradio's front end that exports `changeLocale`:
# app/gradio_adapter.py LOCALE_JS) and keeps the choice for the next visit. Gradio writes a tab button's label when the
# button is next drawn, so the buttons are relabelled here at once from TABS ({tab id: {lang: label}}).
SWITCH_JS = """() => {
  const TABS = %s;
  const KNOWN = %s;
  const pick = (v) => { v = String(v || ''); return v.toLowerCase().startsWith('zh') ? 'zh-CN' : (KNOWN.includes(v) ? v : '%s'); };
  %s
  const relabel = (lang) => {
    document.querySelectorAll('[role=tab][data-tab-id]').forEach((b) => {
      const label = TABS[b.dataset.tabId]?.[lang];
      const node = [...b.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
      if (label && node) node.nodeValue = label;
    });
  };
  const apply = async (value) => {
    const lang = pick(value);
    try { window.localStorage.setItem('explorer-lang', lang); } catch (e) { /* private mode */ }
    document.documentElement.lang = lang;
    const core = await gradioCore().catch(() => null);
    if (core && typeof core.changeLocale === 'function') core.changeLocale(lang);
    relabel(lang);
    setTimeout(() => relabel(lang), 100);
    return lang;
  };
  window.explorerLang = {pick, apply};
}"""

# The language the page opens in (the load event's js): ?lang= in the address, else the learner's last choice,
# else the browser's language.
INITIAL_JS = """() => {
  const stored = (() => { try { return window.localStorage.getItem('explorer-lang'); } catch (e) { return null; } })();
  const wanted = new URLSearchParams(window.location.search).get('lang') || stored || navigator.language;
  return String(wanted || '').toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
}"""


def switch_script(tab_labels):
    """SWITCH_JS with the tab labels ({tab id: key}) in every language. json.dumps writes '<' as is: labels are
    this app's own, and it is escaped besides."""
    labels = {tab: {lang: text(lang, key) for lang in LANGS} for tab, key in tab_labels.items()}
    return SWITCH_JS % (json.dumps(labels, ensure_ascii=False).replace("<", "\\u003c"), json.dumps(list(LANGS)),
                        DEFAULT, LOCALE_JS)


def switch(demo):
    """The visible language switch, opened in the browser's (or the learner's last) language; its change
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
