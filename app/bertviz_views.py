"""bertviz's head view and model view, made to work offline inside a sandboxed iframe.

bertviz writes a page that loads RequireJS, then jQuery and d3, from a CDN. Here the CDN script tag is
replaced by a few lines that stand in for RequireJS and load jQuery (package xstatic-jquery) and d3 v5
(shipped inside the mpld3 package) from this server. The page goes into an iframe's `srcdoc`, sandboxed
to scripts (and downloads, for its "Save SVG" button), so nothing it contains can reach the app around it.

`standalone_html` writes the same view as one self-contained file: jQuery and d3 inlined, nothing to fetch.
"""
import html
import json
import re
from pathlib import Path

import mpld3
import xstatic.pkg.jquery as xjquery
from bertviz import head_view, model_view

from .gradio_adapter import static_url
from .i18n import spoken, text

D3_JS = Path(mpld3.__file__).parent / "js" / "d3.v5.min.js"
JQUERY_JS = Path(xjquery.BASE_DIR) / "jquery.min.js"
STATIC_FILES = [str(D3_JS), str(JQUERY_JS)]

_CDN_REQUIRE = re.compile(r'<script src="https://cdnjs\.cloudflare\.com/[^"]*require[^"]*"></script>')
_CDN_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.DOTALL)  # CDN paths for jQuery and d3

# Stands in for RequireJS: load the named modules from this server, all at once (the sandboxed page shares no
# cache or connection with the app, so each load is a fresh request), then hand the globals they define
# (jQuery, d3) to the callback. bertviz's require.config call, with its CDN paths, is removed.
_REQUIRE_SHIM = """<script>
(function () {
  var local = {jquery: "%(jquery)s", d3: "%(d3)s"};
  var globals = {jquery: function () { return window.jQuery; }, d3: function () { return window.d3; }};
  window.require = {config: function () {}};
  window.requirejs = function (deps, callback) {
    var waiting = deps.length;
    deps.forEach(function (name) {
      var s = document.createElement("script");
      s.src = local[name];
      s.onload = function () {
        if (--waiting === 0) callback.apply(null, deps.map(function (d) { return globals[d](); }));
      };
      s.onerror = function () { document.body.insertAdjacentText("beforeend", "Could not load " + s.src); };
      document.head.appendChild(s);
    });
  };
})();
</script>"""


# The same, for a file that must open anywhere: jQuery and d3 written into the page, handed over at once.
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


def _offline(page, standalone=False):
    """Swap the CDN loader for the local shim (or, standalone, for the libraries themselves) and make the
    embedded JSON unable to end its <script>."""
    shim = (_REQUIRE_INLINE % {"jquery": _inline(JQUERY_JS), "d3": _inline(D3_JS)} if standalone else
            _REQUIRE_SHIM % {"jquery": static_url(JQUERY_JS), "d3": static_url(D3_JS)})
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


def _page(body, name, title="bertviz"):
    """bertviz's view in a page of its own, below the Save SVG button (its label in the event's language)."""
    save = html.escape(text("attention.bertviz.save"))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            "<style>body{margin:6px;background:#fff;color:#111;font-family:sans-serif}</style></head>"
            f"<body>{_SAVE_SVG % {'name': name, 'save': save}}{body}</body></html>")


def _iframe(page, height, title):
    return (f'<iframe title="{html.escape(title)}" sandbox="allow-scripts allow-downloads" '
            'referrerpolicy="no-referrer" '
            f'style="width:100%;height:{height + 30}px;border:1px solid #ddd;border-radius:8px;background:#fff" '
            f'srcdoc="{html.escape(page, quote=True)}"></iframe>')


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


def head_view_html(ins):
    """bertviz head view (encoder, decoder and cross attention) for an Inspection, as an iframe; this app's
    words around it (the frame's title, the Save SVG button) and bertviz's menus in the event's language."""
    rows = max(len(ins.src_tokens), len(ins.tgt_tokens))
    return _iframe(_page(_offline(in_words(_head_view(ins))), "bertviz-head-view"), 120 + int(rows * 22.5),
                   text("attention.bertviz.head"))


def model_view_html(ins):
    """bertviz model view (every layer and head as thumbnails) for an Inspection, as an iframe; this app's words
    around it in the event's language."""
    layers = ins.encoder.size(0)
    return _iframe(_page(_offline(in_words(_model_view(ins))), "bertviz-model-view"), 140 + layers * 120,
                   text("attention.bertviz.model"))


def standalone_html(ins, view):
    """The bertviz `view` ("head" or "model") of an Inspection as one self-contained HTML page, for a file (its
    Save SVG button in the event's language)."""
    name = f"bertviz-{view}-view"
    return _page(_offline(VIEWS[view](ins), standalone=True), name,
                 f"bertviz {view} view: {ins.translation[:80]}")
