// In a bertviz view's frame (app/bertviz_views.py frame_page), before bertviz's code, given the frame's values: the
// view ("head" or "model"), the id of bertviz's box, the weights' alphabet (app/bertviz_views.py encode), the words
// a message brings, and where jQuery and d3 are served. Its call of RequireJS keeps the drawing function (called
// again for each translation); jQuery and d3 load from this server; the page around is told once they have. A
// message is read only from the page around, and only in the shape `view_data` writes (anything else is dropped):
// bertviz's parameters are built here from its tokens (strings), its counts and its weights, bertviz's box is put
// back as bertviz wrote it, this app's words written into it (as text), and bertviz draws (its head view's squares
// sized for a finger where the message says the page is a phone's, `touch`). The page around is told the frame's
// height whenever it changes.
export default function ({view: VIEW, root: ROOT, alphabet: ALPHABET, one: ONE, words: WORDS, jqueryUrl, d3Url}) {
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
    window.bertvizTouch = e.data.touch === true;
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
    Promise.all([load(jqueryUrl), load(d3Url)]).then(function () {
      window.parent.postMessage({bertviz: "ready"}, "*");
    }, function (src) { document.body.insertAdjacentText("beforeend", "Could not load " + src); });
  });
}
