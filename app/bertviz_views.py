"""bertviz's head view and model view, offline, each in a sandboxed iframe kept for the page.

bertviz writes a page that loads RequireJS, then jQuery and d3, from a CDN, with every weight written into it. Here
each view is a gr.HTML whose template is an empty box: its script (`host_js`, in the page) puts into it, when the
view is first drawn, an iframe sandboxed to scripts (and downloads, for its "Save SVG" button), so nothing in it can
reach the app around it. The frame's page (`frame_page`: bertviz's own markup and drawing code, with a stand-in for
RequireJS) loads jQuery (package xstatic-jquery) and d3 v5 (shipped inside the mpld3 package) from this server, once
for the page. Each translation then sends the view only its data (`view_data`, JSON: the tokens, the weights to 3
decimals in a compact text, this app's words for bertviz's menus), which the box posts into the frame; the frame
checks its shape, builds bertviz's parameters from it and draws them with bertviz's code (tokens as text: d3's
.text()).

`standalone_html` writes a view as one self-contained file: bertviz's page, jQuery and d3 inlined, nothing to fetch.
"""
import functools
import html
import json
import re
import weakref
from pathlib import Path
from types import SimpleNamespace

import bertviz
import mpld3
import numpy as np
import torch
import xstatic.pkg.jquery as xjquery
from bertviz import head_view, model_view
from bertviz.util import format_special_chars

from . import page as page_js
from .gradio_adapter import static_url
from .i18n import spoken, text

D3_JS = Path(mpld3.__file__).parent / "js" / "d3.v5.min.js"
JQUERY_JS = Path(xjquery.BASE_DIR) / "jquery.min.js"
STATIC_FILES = [str(D3_JS), str(JQUERY_JS)]
BERTVIZ_JS = {"head": Path(bertviz.__file__).parent / "head_view.js",
              "model": Path(bertviz.__file__).parent / "model_view.js"}

_CDN_REQUIRE = re.compile(r'<script src="https://cdnjs\.cloudflare\.com/[^"]*require[^"]*"></script>')
_CDN_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.DOTALL)  # CDN paths for jQuery and d3

# For a file that must open anywhere, in place of bertviz's CDN loader: jQuery and d3 written into the page, handed
# over at once (app/page/bertviz-require.js).
_REQUIRE_INLINE = "<script>%(jquery)s</script>\n<script>%(d3)s</script>\n<script>%(require)s</script>"

# A button above the view that saves its SVG (app/page/bertviz-save.js).
_SAVE_SVG = ('<button id="save-svg" type="button" style="font-size:12px;margin-bottom:4px">%(save)s</button>\n'
             "<script>%(script)s</script>")


def _inline(path):
    """A library's source for an inline <script>: it must hold nothing that ends the script."""
    text = Path(path).read_text(encoding="utf-8")
    if "</script" in text.lower() or "<!--" in text:
        raise RuntimeError(f"{path} cannot be inlined in a <script>")
    return text


def _offline(page):
    """Swap bertviz's CDN loader for the libraries themselves and make the embedded JSON unable to end its
    <script>."""
    shim = _REQUIRE_INLINE % {"jquery": _inline(JQUERY_JS), "d3": _inline(D3_JS),
                              "require": page_js.script("bertviz-require")}
    page, n = _CDN_REQUIRE.subn(lambda _: shim, page)
    if n != 1:
        raise RuntimeError("unexpected bertviz output: RequireJS loader not found")
    page, n = _CDN_CONFIG.subn("", page)
    if n != 1:
        raise RuntimeError("unexpected bertviz output: require.config not found")
    head, sep, script = page.partition('<script type="text/javascript">')
    return head + sep + _escape_script(_compact_params(script))


_PARAMS_AT = "const params = "


def _compact_params(script):
    """bertviz writes its parameters (every weight) twice on one line, once more in a comment after them: keep
    them once, written without spaces. The value is read with a JSON decoder, so no token can end it early."""
    start = script.index(_PARAMS_AT) + len(_PARAMS_AT)
    params, end = json.JSONDecoder().raw_decode(script, start)
    if not script.startswith("; // HACK:", end):
        raise RuntimeError("unexpected bertviz output: no comment after the parameters")
    return script[:start] + json.dumps(params, separators=(",", ":")) + ";" + script[script.index("\n", end):]


def _escape_script(script):
    """Inside the script every "</" becomes "<\\/" and "<!--" "<\\!--" (the same strings to JavaScript),
    so no token in the embedded JSON can end the script early; its own closing tag stays."""
    body, end, rest = script.rpartition("</script>")
    body = body.replace("</", "<\\/").replace("<!--", "<\\!--")
    return body + end + rest


# bertviz's own words, in the page it writes: its menus' labels and choices (HTML) and the model view's axis titles
# (strings in its script), each replaced once with this app's words in the page's language (escaped for where it
# goes). A bertviz that no longer writes one of them is told by the test, not here: its English then stays.
_MENU_WORDS = (('Layer: <select id="layer">', "bertviz.layer", '{}<select id="layer">'),
               ('Attention: <select id="filter">', "bertviz.attention", '{}<select id="filter">'),
               ('<option value="0">Encoder</option>', "bertviz.encoder", '<option value="0">{}</option>'),
               ('<option value="1">Decoder</option>', "bertviz.decoder", '<option value="1">{}</option>'),
               ('<option value="2">Cross</option>', "bertviz.cross", '<option value="2">{}</option>'))
_SCRIPT_WORDS = (('.text("Heads")', "bertviz.heads"), ('.text("Layers")', "bertviz.layers"))


def in_words(page):
    """bertviz's page with its menus and axis titles in the event's language (English: as bertviz writes them)."""
    if spoken() == "en":
        return page
    for english, key, html_form in _MENU_WORDS:
        page = page.replace(english, html_form.format(html.escape(text(f"attention.{key}"))), 1)
    for english, key in _SCRIPT_WORDS:
        page = page.replace(english, f".text({json.dumps(text(f'attention.{key}'))})", 1)
    return page


# A view in a frame (or a file) 640 px wide or less, as on a phone: its menus and its Save SVG button 44 px tall, the
# height a finger hits (bertviz's native menus were 21 px, the button 20)
_TOUCH_CSS = ("@media (max-width:640px){#save-svg,select{min-height:44px !important;font-size:16px !important}"
              "#save-svg{padding:0 14px !important}select{min-width:56px;margin:2px 8px 2px 0}}")


def _page(body, name, title="bertviz", save=None):
    """bertviz's view in a page of its own, below the Save SVG button (its label in the event's language)."""
    save = html.escape(text("attention.bertviz.save") if save is None else save)
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            f"<style>body{{margin:6px;background:#fff;color:#111;font-family:sans-serif}}{_TOUCH_CSS}</style></head>"
            f"<body>{_SAVE_SVG % {'save': save, 'script': page_js.script('bertviz-save', name)}}{body}</body></html>")


DECIMALS = 3  # as in the Attention tab's figures: what a colour (here a line's opacity) can show


def _as_layers(maps):
    """(layers, heads, q, k) tensor -> bertviz's tuple of (1, heads, q, k) per layer, each weight rounded to 3
    decimals. In float64, so that bertviz's JSON writes 0.123 and not float32's 0.12300000339746475."""
    return tuple(m.unsqueeze(0) for m in maps.double().round(decimals=DECIMALS))


def _head_view(ins):
    return head_view(encoder_attention=_as_layers(ins.encoder), decoder_attention=_as_layers(ins.decoder),
                     cross_attention=_as_layers(ins.cross), encoder_tokens=list(ins.src_tokens),
                     decoder_tokens=list(ins.tgt_tokens), html_action="return").data


def _model_view(ins):
    return model_view(encoder_attention=_as_layers(ins.encoder), decoder_attention=_as_layers(ins.decoder),
                      cross_attention=_as_layers(ins.cross), encoder_tokens=list(ins.src_tokens),
                      decoder_tokens=list(ins.tgt_tokens), display_mode="light", html_action="return").data


VIEWS = {"head": _head_view, "model": _model_view}


# ---- the weights, as text -----------------------------------------------------------------------------------

# Each weight w is sent as n = round(1000 w), 0 to 1000: one character ALPHABET[n] if n < ONE, else two,
# ALPHABET[ONE + (n - ONE) // 64] then ALPHABET[(n - ONE) % 64]. Most weights of a sentence are small, so most
# take one character (JSON's "0.012," takes six); the frame reads them back exactly (app/page/bertviz-frame.js's
# `weights`).
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ONE = 48
_LETTERS = np.frombuffer(ALPHABET.encode("ascii"), dtype=np.uint8)


def encode(maps):
    """A tensor of weights in [0, 1], rounded to 3 decimals, as the text above (in the tensor's order)."""
    n = (maps.detach().double() * 10 ** DECIMALS).round().clamp(0, 10 ** DECIMALS).flatten().to(torch.int64).numpy()
    small, rest = n < ONE, n - ONE
    pairs = np.stack([np.where(small, n, ONE + rest // 64), rest % 64], axis=1)
    keep = np.stack([np.ones_like(small), ~small], axis=1)
    return _LETTERS[pairs[keep]].tobytes().decode("ascii")


def decode(code):
    """The weights (to 3 decimals) that `encode` wrote, as a list: what the frame reads."""
    index, out, i = {c: k for k, c in enumerate(ALPHABET)}, [], 0
    while i < len(code):
        n = index[code[i]]
        if n >= ONE:
            i += 1
            n = ONE + (n - ONE) * 64 + index[code[i]]
        out.append(n / 10 ** DECIMALS)
        i += 1
    return out


# ---- the frame ---------------------------------------------------------------------------------------------

ROOT_ID = "bertviz"  # the id of bertviz's box in the frame's page
# bertviz's own words in its markup, each put in an element the frame writes this app's words into (data-word)
_FRAME_WORDS = (('Layer: <select id="layer">', '<span data-word="layer">Layer: </span><select id="layer">'),
                ('Attention: <select id="filter">', '<span data-word="attention">Attention: </span><select id="filter">'),
                ('<option value="0">Encoder</option>', '<option value="0" data-word="encoder">Encoder</option>'),
                ('<option value="1">Decoder</option>', '<option value="1" data-word="decoder">Decoder</option>'),
                ('<option value="2">Cross</option>', '<option value="2" data-word="cross">Cross</option>'))
WORDS = ("layer", "attention", "encoder", "decoder", "cross", "heads", "layers", "save", "head", "model", "swipe")

def _markup(view):
    """bertviz's own markup above its drawing (its menus, then the #vis box), as it writes it for `view`, with its
    box's id ROOT_ID and each of its words in an element of its own (data-word)."""
    one = (torch.ones(1, 1, 1, 1),)
    page = VIEWS[view](SimpleNamespace(encoder=one[0], decoder=one[0], cross=one[0], src_tokens=["a"],
                                       tgt_tokens=["a"]))
    markup = page.split("</script>", 1)[1].split('<script type="text/javascript">', 1)[0]
    markup, n = re.subn(r'id="bertviz-[0-9a-f]+"', f'id="{ROOT_ID}"', markup)
    if n != 1:
        raise RuntimeError("unexpected bertviz output: its box's id not found")
    for english, marked in _FRAME_WORDS:
        if english in markup:  # the model view has no layer menu
            markup = markup.replace(english, marked, 1)
    return markup.strip()


def _drawing(view):
    """bertviz's drawing code for `view` (its .js file), reading its parameters and axis titles from the frame's
    globals, without its CDN paths."""
    code, n = _CDN_CONFIG.subn("", BERTVIZ_JS[view].read_text(encoding="utf-8"))
    for old, new in (("params = PYTHON_PARAMS;", "params = window.bertvizParams;"), ('.text("Heads")', ".text(window.bertvizWords.heads)"),
                     ('.text("Layers")', ".text(window.bertvizWords.layers)")):
        code, k = code.replace(old, new), code.count(old)
        if k != (1 if old.startswith("params") or view == "model" else 0):
            raise RuntimeError(f"unexpected bertviz code: {old} written {k} times in {BERTVIZ_JS[view].name}")
    if n != 1 or "</script" in code.lower() or "<!--" in code:
        raise RuntimeError(f"unexpected bertviz code in {BERTVIZ_JS[view]}")
    for old, new in _TOUCH_CODE if view == "head" else ():
        code, k = code.replace(old, new), code.count(old)
        if k != 1:
            raise RuntimeError(f"unexpected bertviz code: {old} written {k} times in {BERTVIZ_JS[view].name}")
    return code


# The head view's squares, one a head, which a click switches on or off: on a phone (the page around says so,
# bertviz-frame.js window.bertvizTouch) 44 px tall and 36 across (8 heads fit a 390 px phone's frame), not 20 x 20,
# and the tokens below them moved down to make room
_TOUCH_CODE = (("const CHECKBOX_SIZE = 20;", "const CHECKBOX_SIZE = window.bertvizTouch ? 36 : 20;"),
               ("const TEXT_TOP = 30;", "const TEXT_TOP = window.bertvizTouch ? 54 : 30;"),
               ('.attr("height", CHECKBOX_SIZE);', '.attr("height", window.bertvizTouch ? 44 : CHECKBOX_SIZE);'))


@functools.lru_cache(maxsize=None)
def frame_page(view):
    """The page of a view's frame: the same for every translation and language (the words come with the data)."""
    js = page_js.script("bertviz-frame", dict(view=view, root=ROOT_ID, alphabet=ALPHABET, one=ONE, words=WORDS,
                                           jqueryUrl=static_url(JQUERY_JS), d3Url=static_url(D3_JS)))
    hint = ('<p id="swipe" data-word="swipe" hidden style="position:sticky;left:0;width:max-content;margin:4px 0;'
            'font-size:12px;color:#667"></p>')
    body = f"<script>{js}</script>{hint}{_markup(view)}<script>{_drawing(view)}</script>"
    return _page(body, f"bertviz-{view}-view", save="Save SVG").replace(
        '<button id="save-svg" type="button"', '<button id="save-svg" type="button" data-word="save"', 1)


def host_js(view):
    """The js_on_load of a view's gr.HTML (app/page/bertviz-host.js), given its view and its frame's page."""
    return page_js.on_load("bertviz-host", {"view": view, "page": frame_page(view)})


def frame_box(view):
    """The arguments of a view's gr.HTML: its box (the same for every value, so it is never redrawn) and script."""
    return dict(value="", html_template="<div class='bertviz-box'></div>", js_on_load=host_js(view))


_last = [None, None, None]  # the last data written: (a weak reference to) its Inspection, its language, the data


def view_data(ins):
    """What a translation sends both views: its tokens (as bertviz shows them), counts and weights, this app's words
    in the event's language, and a first height for each frame; as JSON. (The same for both views: the last is
    kept, so the view opened second costs nothing to write.)"""
    ref, lang, data = _last
    if ref is not None and ref() is ins and lang == spoken():
        return data
    layers, heads = ins.encoder.shape[:2]
    rows = max(len(ins.src_tokens), len(ins.tgt_tokens))
    data = json.dumps({"bertviz": "draw", "layers": layers, "heads": heads,
                       "src": format_special_chars(list(ins.src_tokens)),
                       "tgt": format_special_chars(list(ins.tgt_tokens)),
                       "attn": [encode(ins.encoder), encode(ins.decoder), encode(ins.cross)],
                       "words": {w: text(f"attention.bertviz.{w}") for w in WORDS},
                       "height": {"head": 150 + int(rows * 22.5), "model": 170 + layers * 120}},
                      ensure_ascii=False, separators=(",", ":"))
    _last[:] = weakref.ref(ins), spoken(), data
    return data


def standalone_html(ins, view):
    """The bertviz `view` ("head" or "model") of an Inspection as one self-contained HTML page, for a file (its
    menus and Save SVG button in the event's language)."""
    name = f"bertviz-{view}-view"
    return _page(_offline(in_words(VIEWS[view](ins))), name, f"bertviz {view} view: {ins.translation[:80]}")
