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
# over at once.
_REQUIRE_INLINE = """<script>%(jquery)s</script>
<script>%(d3)s</script>
<script>
window.require = {config: function () {}};
window.requirejs = function (deps, callback) {
  callback.apply(null, deps.map(function (d) { return d === "jquery" ? window.jQuery : window.d3; }));
};
</script>"""

# A button above the view that saves its SVG (bertviz draws each view into one <svg> under #vis).
_SAVE_SVG = """<button id="save-svg" type="button" style="font-size:12px;margin-bottom:4px">%(save)s</button>
<script>
document.getElementById("save-svg").addEventListener("click", function () {
  var svg = document.querySelector("#vis svg");
  if (!svg) return;
  svg.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  var text = new XMLSerializer().serializeToString(svg);
  var a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], {type: "image/svg+xml"}));
  a.download = "%(name)s.svg";
  document.body.appendChild(a); a.click(); a.remove();
});
</script>"""


def _inline(path):
    """A library's source for an inline <script>: it must hold nothing that ends the script."""
    text = Path(path).read_text(encoding="utf-8")
    if "</script" in text.lower() or "<!--" in text:
        raise RuntimeError(f"{path} cannot be inlined in a <script>")
    return text


def _offline(page):
    """Swap bertviz's CDN loader for the libraries themselves and make the embedded JSON unable to end its
    <script>."""
    shim = _REQUIRE_INLINE % {"jquery": _inline(JQUERY_JS), "d3": _inline(D3_JS)}
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


def _page(body, name, title="bertviz", save=None):
    """bertviz's view in a page of its own, below the Save SVG button (its label in the event's language)."""
    save = html.escape(text("attention.bertviz.save") if save is None else save)
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            "<style>body{margin:6px;background:#fff;color:#111;font-family:sans-serif}</style></head>"
            f"<body>{_SAVE_SVG % {'name': name, 'save': save}}{body}</body></html>")


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
# take one character (JSON's "0.012," takes six); the frame reads them back exactly (FRAME_JS's `weights`).
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

# In the frame, before bertviz's code: its call of RequireJS keeps the drawing function (called again for each
# translation); jQuery and d3 load from this server; the page around is told once they have. A message is read
# only from the page around, and only in the shape `view_data` writes (anything else is dropped): bertviz's
# parameters are built here from its tokens (strings), its counts and its weights, bertviz's box is put back as
# bertviz wrote it, this app's words written into it (as text), and bertviz draws. The page around is told the
# frame's height whenever it changes.
FRAME_JS = r"""(function () {
  var VIEW = "%(view)s", ROOT = "%(root)s", ALPHABET = "%(alphabet)s", ONE = %(one)d, WORDS = %(words)s;
  var draw = null, box = null, markup = null, index = new Array(128).fill(-1);
  for (var i = 0; i < ALPHABET.length; i++) index[ALPHABET.charCodeAt(i)] = i;
  window.require = {config: function () {}};
  window.requirejs = function (deps, callback) { draw = callback; };
  function load(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve; s.onerror = function () { reject(src); };
      document.head.appendChild(s);
    });
  }
  function strings(a) {
    return Array.isArray(a) && a.length > 0 && a.every(function (t) { return typeof t === "string"; });
  }
  function count(n) { return Number.isInteger(n) && n > 0 && n <= 64; }
  function range(n) { return Array.from({length: n}, function (_, i) { return i; }); }
  // the weights of `code` as layers x heads x q x k nested arrays, or null if it does not hold exactly that many
  function weights(code, layers, heads, q, k) {
    if (typeof code !== "string") return null;
    var flat = new Array(layers * heads * q * k), j = 0;
    for (var i = 0; i < flat.length; i++) {
      var n = index[code.charCodeAt(j++)];
      if (!(n >= 0)) return null;
      if (n >= ONE) {
        var m = index[code.charCodeAt(j++)];
        if (!(m >= 0)) return null;
        n = ONE + (n - ONE) * 64 + m;
      }
      flat[i] = n / 1000;
    }
    if (j !== code.length) return null;
    var at = 0;
    return range(layers).map(function () { return range(heads).map(function () { return range(q).map(function () {
      var row = flat.slice(at, at + k); at += k; return row; }); }); });
  }
  function params(m) {
    if (!m || m.bertviz !== "draw" || !count(m.layers) || !count(m.heads)) return null;
    if (!strings(m.src) || !strings(m.tgt) || !Array.isArray(m.attn) || m.attn.length !== 3) return null;
    if (!m.words || !WORDS.every(function (w) { return typeof m.words[w] === "string"; })) return null;
    var parts = [["Encoder", m.src, m.src], ["Decoder", m.tgt, m.tgt], ["Cross", m.tgt, m.src]], attention = [];
    for (var p = 0; p < 3; p++) {
      var attn = weights(m.attn[p], m.layers, m.heads, parts[p][1].length, parts[p][2].length);
      if (!attn) return null;
      attention.push({name: parts[p][0], attn: attn, left_text: parts[p][1].slice(), right_text: parts[p][2].slice()});
    }
    var out = {attention: attention, default_filter: "0", root_div_id: ROOT, include_layers: range(m.layers)};
    if (VIEW === "head") { out.layer = null; out.heads = null; }
    else { out.display_mode = "light"; out.include_heads = range(m.heads); out.total_heads = m.heads; }
    return out;
  }
  function reset() {
    box.innerHTML = markup;
  }
  function words(w) {
    document.querySelectorAll("[data-word]").forEach(function (e) { e.textContent = w[e.dataset.word]; });
    window.bertvizWords = {heads: w.heads, layers: w.layers};
  }
  addEventListener("message", function (e) {
    if (e.source !== window.parent || !draw || !window.jQuery || !window.d3) return;
    if (e.data && e.data.bertviz === "clear") { reset(); return; }
    var p = params(e.data);
    if (!p) return;
    reset();
    words(e.data.words);
    window.bertvizParams = p;
    var t0 = performance.now();
    draw(window.jQuery, window.d3);
    window.bertvizDrawMs = performance.now() - t0;  // bertviz's own drawing, for the benchmark
    wide();
  });
  // a drawing wider than the frame (the model view's heads on a phone) scrolls sideways in it: a line above says so
  function wide() {
    var hint = document.getElementById("swipe"), page = document.documentElement;
    if (hint) hint.hidden = !(page.scrollWidth > page.clientWidth + 2);
  }
  addEventListener("resize", wide);
  var height = 0;
  new ResizeObserver(function () {
    var h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (h !== height) { height = h; window.parent.postMessage({bertviz: "height", height: h}, "*"); }
  }).observe(document.documentElement);
  document.addEventListener("DOMContentLoaded", function () {
    box = document.getElementById(ROOT);
    markup = box.innerHTML;
    Promise.all([load("%(jquery)s"), load("%(d3)s")]).then(function () {
      window.parent.postMessage({bertviz: "ready"}, "*");
    }, function (src) { document.body.insertAdjacentText("beforeend", "Could not load " + src); });
  });
})();"""


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
    return code


@functools.lru_cache(maxsize=None)
def frame_page(view):
    """The page of a view's frame: the same for every translation and language (the words come with the data)."""
    js = FRAME_JS % {"view": view, "root": ROOT_ID, "alphabet": ALPHABET, "one": ONE, "words": json.dumps(WORDS),
                     "jquery": static_url(JQUERY_JS), "d3": static_url(D3_JS)}
    hint = ('<p id="swipe" data-word="swipe" hidden style="position:sticky;left:0;width:max-content;margin:4px 0;'
            'font-size:12px;color:#667"></p>')
    body = f"<script>{js}</script>{hint}{_markup(view)}<script>{_drawing(view)}</script>"
    return _page(body, f"bertviz-{view}-view", save="Save SVG").replace(
        '<button id="save-svg" type="button"', '<button id="save-svg" type="button" data-word="save"', 1)


# In the page, once a view's box is on screen (gr.HTML's js_on_load). Both views draw the same data, so what either
# is sent (view_data's JSON) is the page's `current` and is posted to both frames: a view opened after the other
# finds it drawn already. A view's value turned "" (its translation is gone) clears `current` if it showed it, then
# each frame still showing that; a frame is put into its box at its first data. Each frame is posted its data once
# it says it is ready, and only what it does not show already. From a frame, only its own messages are read: that
# it is ready, and its height.
HOST_JS = r"""const box = element.querySelector('.bertviz-box');
const page = (window.bertvizViews ??= {hosts: [], current: null, read: {}});
const read = (value) => page.read.value === value ? page.read.data : (page.read = {value, data: JSON.parse(value)}).data;
let frame = null, ready = false, want = null, posted = null;
const post = () => {
  if (!ready || want === posted) return;
  posted = want;
  frame.contentWindow.postMessage(want ? read(want) : {bertviz: 'clear'}, '*');
};
const host = {draw(value) {
  want = value;
  if (value && !frame) {
    frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts allow-downloads');
    frame.setAttribute('referrerpolicy', 'no-referrer');
    frame.style.cssText = 'width:100%;border:1px solid #ddd;border-radius:8px;background:#fff';
    frame.style.height = read(value).height[VIEW] + 'px';
    frame.srcdoc = PAGE;
    box.appendChild(frame);
  }
  if (value && frame) frame.title = read(value).words[VIEW];
  if (frame) post();
}, get shows() { return want; }};
page.hosts.push(host);
const show = () => {
  const value = props.value || null;
  if (value) {
    page.current = value;
    page.hosts.forEach((h) => h.draw(value));
  } else if (want !== null && want === page.current) {
    const gone = page.current;
    page.current = null;
    page.hosts.forEach((h) => { if (h.shows === gone) h.draw(null); });
  } else host.draw(page.current);
};
window.addEventListener('message', (e) => {
  if (!frame || e.source !== frame.contentWindow || !e.data) return;
  if (e.data.bertviz === 'ready') { ready = true; post(); }
  if (e.data.bertviz === 'height' && Number.isFinite(e.data.height))
    frame.style.height = Math.min(Math.max(e.data.height + 2, 60), 50000) + 'px';
});
watch('value', show);
show();"""


def host_js(view):
    """The js_on_load of a view's gr.HTML: HOST_JS with its view and its frame's page, as JavaScript strings."""
    page = json.dumps(frame_page(view)).replace("</", "<\\/").replace("<!--", "<\\!--")
    return f"const VIEW = {json.dumps(view)}, PAGE = {page};\n{HOST_JS}"


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
