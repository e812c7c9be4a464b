"""The page's look: its stylesheet (token strips, the step replay's mask and candidates), its theme, and the
scripts that add an SVG button to every figure and mark the boxes a phone scrolls sideways."""
import json

import gradio as gr

from .i18n import LANGS, text

CSS = """
.tok-row {display:flex; flex-wrap:wrap; gap:4px; font-size:1.05em}
.tok {padding:2px 6px; border-radius:5px; border:1px solid #ccd}
.tok sub {font-size:0.65em; margin-left:2px; opacity:0.8}
.tok-legend {font-size:0.8em; color:#666; margin-top:4px}
.step code {font-size:1em} .step code.chosen {background:#fde2da}
.mask-svg {overflow-x:auto} .mask-title, .cands-title {font-size:0.9em; margin:4px 0 6px}
/* a candidate's token column shrinks before its percentage does: in a half-width column of a phone the
   percentage stays whole and the bar takes what is left */
.cand {display:grid; grid-template-columns:minmax(2.5em, 9em) minmax(1.5em, 1fr) max-content; gap:8px;
  align-items:center; font-size:0.95em; margin:2px 0} .cand-tok {overflow:hidden; text-overflow:ellipsis; white-space:nowrap; text-align:right}
.cand-bar {background:#eef1f6; height:14px; border-radius:3px; overflow:hidden}
.cand-bar span {display:block; height:100%; background:#4a7dc9}
.cand.chosen .cand-bar span {background:#e4572e} .cand.chosen .cand-tok {font-weight:bold}
.cand-p {text-align:right; font-variant-numeric:tabular-nums}
.whatif-row {margin:8px 0} .whatif-title {font-size:0.9em; color:#445; margin-bottom:3px}
.whatif-verdict {margin-top:6px; font-size:0.95em}
.learn-path {display:flex; flex-wrap:wrap; gap:6px; align-items:center; margin:4px 0}
.learn-mark {display:inline-flex; align-items:center; justify-content:center; min-width:28px; height:28px;
  border-radius:14px; border:1px solid #ccd; font-size:0.85em; color:#445; background:#fff}
.learn-mark.done {background:#2a9d4b; border-color:#2a9d4b; color:#fff}
.learn-mark.current {outline:3px solid #2f6db5; outline-offset:1px; font-weight:bold}
button.learn-mark {font:inherit; font-size:0.85em; padding:0 4px; cursor:pointer}  /* the path's circles */
button.learn-mark:focus-visible {outline:3px solid #e4572e; outline-offset:1px}
.learn-count {margin-left:6px; font-size:0.85em; color:#556}
#learn-answer {min-height:1.5em}
.learn-english {margin:2px 0; overflow-wrap:anywhere}  /* the English under the sentence box */
.learn-english span {color:#556; margin-right:4px}
.learn-english .learn-veiled {display:none; color:#556}
/* a step that asks for a word of the translation: its English waits for Check (app/tabs/learn.py) */
#learn:has(.learn-path[data-veil=english]) .learn-english b {display:none}
#learn:has(.learn-path[data-veil=english]) .learn-english .learn-veiled {display:inline}
/* a phone: nothing wider than the screen, controls a finger can hit, figures that let a touch scroll the page
   (Gradio puts its own container's selector before each of these) */
@media (max-width: 640px) {
  button, input[type=number], select {min-height:44px !important}
  label:has(input[type=radio]), label:has(input[type=checkbox]) {min-height:44px !important;
    display:inline-flex !important; align-items:center}
  input[type=range] {height:44px !important}
  [role=tab] {min-height:44px !important; padding:0 10px !important}
  .js-plotly-plot .draglayer, .js-plotly-plot .nsewdrag {pointer-events:none !important}
  .js-plotly-plot, .js-plotly-plot .main-svg {touch-action:pan-y}
  .tok-row, .mask-svg, table {max-width:100%; overflow-x:auto}
  .learn-mark {min-width:44px; min-height:44px; border-radius:22px}  /* room for a finger */
  /* a slider in a row of several takes the row's width: beside its number box and reset button, a label in a
     third of the row wrapped one character a line ("预热步数", "标签平滑 ε") */
  .row > .form:has(input[type=range]) {flex-wrap:wrap !important}
  :is(.row, .row > .form) > .block:has(input[type=range]) {flex:1 1 100% !important; min-width:100% !important}
  /* a menu in a row takes the row's width: its value is all a reader sees of the choice, and a share of the row cut
     What if's candidate ("▁Man (4.8%)"), Inside's module name and Time-lapse's measure */
  :is(.row, .row > .form) > .block:has(input:is([role=listbox], [role=combobox])) {flex:1 1 100% !important;
    min-width:100% !important}
  /* the probe sentences' table: both columns wrap within the screen rather than cut the model's output */
  table.probes {table-layout:fixed; width:100%}
  table.probes :is(td, th) {white-space:normal !important; overflow-wrap:anywhere}
  /* the Lab's examples: a sequence on one line (wrapped, "0 1 / 5 6 / 5 7" could not be compared with the model's
     output), small enough that most fit; a longer one scrolls, and says so (SWIPE_JS) */
  table.lab-ex {font-size:12px}
  table.lab-ex :is(td, th) {padding:4px !important}
  table.lab-ex td {white-space:nowrap !important; word-spacing:-0.35em}
  table.lab-ex th {white-space:normal !important}  /* the headings wrap */
  table.lab-ex td span {min-width:1em !important; margin:0 !important}
  /* the button that opens the full tab has a long name: a row of its own under Back and Next */
  #learn-nav {flex-wrap:wrap !important}
  #learn-nav > #learn-open {order:3; flex:1 1 100% !important}
  /* a slider's number box and reset button: its row grows to their 44 px instead of cutting them */
  .tab-like-container {height:auto !important; overflow:visible !important}
  .tab-like-container input[type=number] {min-width:4.5em}
  /* plotly's toolbar: zoom and pan are off on a phone (the touch scrolls the page), and its buttons would
     cover titles; the SVG button, below the figure, saves it */
  .js-plotly-plot .modebar-container {display:none !important}
  :is(.js-plotly-plot, .plot-waiting) {padding-bottom:46px !important}
  .diagram-wide {display:none}
  /* an accordion's button is 44 px tall here: its label and arrow at its middle, the arrow not stretched to the
     button's height (Gradio turns it a quarter to show it closed: a stretched one stuck out of the box) */
  button.label-wrap {align-items:center}
}
@media (min-width: 641px) {.diagram-column {display:none}}
/* Gradio's "Plot" label over a figure's corner says nothing the figure does not, and covers its title */
.block:has(.js-plotly-plot, .plot-waiting) > label[data-testid=block-label] {display:none}
/* plotly's toolbar in a strip of its own above the figure, and the SVG button in one below it: neither covers a
   title or a tick (a plot still waiting to be drawn, app/gradio_adapter.py drawWhenNear, has the strips already) */
:is(.js-plotly-plot, .plot-waiting) {padding-bottom:24px}
@media (min-width: 641px) {
  :is(.js-plotly-plot, .plot-waiting) {padding-top:28px}
  .js-plotly-plot .modebar-container {top:-28px !important}
}
/* a table's numbers stay on one line (its first column, the rows' names, wraps); a table wider than its column
   scrolls inside it */
.prose table {display:block; width:max-content; max-width:100%; overflow-x:auto}
.prose td:not(:first-child), .prose th:not(:first-child) {white-space:nowrap}
.prose td:first-child {min-width:8em}
.mtable {max-width:100%; overflow-x:auto}
/* a menu's chosen value stops short of its arrow, which Gradio lays over the box's right end (tests/readability.py
   cut_menus) */
.secondary-wrap:has(> .icon-wrap) > input:is([role=listbox], [role=combobox]) {padding-right:28px !important; text-overflow:ellipsis}
.save-svg {position:absolute; bottom:0; right:4px; z-index:5; font-size:11px; padding:1px 6px; border:1px solid #ccd;
  border-radius:4px; background:#fff; color:#445; cursor:pointer; opacity:0.75} .save-svg:hover {opacity:1}
"""


# figures of panels side by side: on a phone drawn 640 px wide, as on a desktop, in a block that a finger scrolls
# sideways (at 390 px their tick labels and panel titles would run into each other), with a line above that says so
WIDE_FIGURES = ("overview-grid", "why-target", "in-ln-params", "in-scale", "in-sweep", "in-residual", "in-ffn",
                "m-masks", "m-scores", "pe-rel", "pe-scale", "r-fig", "t-ablation", "lab-curve", "whatif-tree",
                "m-batching")


def wide_figures_css():
    """The phone's rules for WIDE_FIGURES, the hint in each language: `:lang()` reads the page's <html lang>, which
    Gradio sets (a selector naming <html> would not match: Gradio puts its container's selector before each rule)."""
    fixed = ", ".join(f"#{i}" for i in WIDE_FIGURES)
    blocks = f"{fixed}, .wide-sentence"  # and a long sentence's figure (app/gradio_adapter.py PHONE_WIDTH_JS)
    hints = " ".join(f':is({blocks}):lang({lang[:2]})::before {{content:"{text(lang, "page.swipe")}"}}' for lang in LANGS)
    return f"""@media (max-width: 640px) {{
  :is({blocks}) {{overflow-x:auto !important}}
  :is({fixed}) .js-plotly-plot {{min-width:640px}}
  :is({blocks}) :is(.js-plotly-plot, .main-svg) {{touch-action:pan-x pan-y !important}}
  :is({blocks})::before {{display:block; position:sticky; left:0; font-size:12px; color:#667; padding:2px 4px}}
  {hints}
}}
"""


CSS += wide_figures_css()


# On a phone, a table (or a grid of heads) wider than its box scrolls sideways inside it, which nothing else on the
# screen shows: SWIPE_JS marks each such box (data-swipe) and the page's style writes a line above it that says so,
# in the page's language, held at the box's left edge as it scrolls (as WIDE_FIGURES' line is).
SWIPE_BOXES = "table, .heads-block, .mtable, .tok-row"


def swipe_css():
    hints = " ".join(f'[data-swipe]:lang({lang[:2]})::before {{content:"{text(lang, "page.swipe_table")}"}}'
                     for lang in LANGS)
    return f"""@media (max-width: 640px) {{
  [data-swipe]::before {{display:block; position:sticky; left:0; width:max-content; font-size:12px; color:#667;
    padding:2px 4px; white-space:nowrap}}
  {hints}
}}
"""


CSS += swipe_css()

SWIPE_JS = """() => {
  const phone = window.matchMedia('(max-width: 640px)');
  const mark = (el) => {
    const wide = phone.matches && el.getClientRects().length > 0 && el.scrollWidth > el.clientWidth + 2;
    if (wide !== el.hasAttribute('data-swipe')) el.toggleAttribute('data-swipe', wide);
  };
  let queued = false;  // once a frame at most, before the frame is painted
  const scan = () => { queued = false; document.querySelectorAll(__BOXES__).forEach(mark); };
  const ask = () => { if (!queued) { queued = true; requestAnimationFrame(scan); } };
  // a table drawn, or a tab opened (its boxes get a size): the marks follow (the mark itself is an attribute, which
  // this does not watch)
  new MutationObserver(ask).observe(document.body, {childList: true, subtree: true, characterData: true,
                                                    attributeFilter: ['class', 'style', 'hidden']});
  window.addEventListener('resize', ask);
  scan();
}""".replace("__BOXES__", json.dumps(SWIPE_BOXES))


# On a phone, a menu's chosen value (a Gradio dropdown writes it into an <input>, which never wraps) that is wider
# than its box is drawn smaller until it fits, down to MENU_MIN_PX: Inside's module paths
# ("decoder.layers.2.feed_forward.dropout") are wider than a 390 px phone's menu at the page's size. Gradio sets the
# value from its own code (no event tells the page), so the value's setter is watched, for menus alone.
MENU_MIN_PX = 11
MENUS = "input:is([role=listbox], [role=combobox])"

MENU_FIT_JS = """() => {
  const phone = window.matchMedia('(max-width: 640px)'), measure = document.createElement('canvas').getContext('2d');
  // the size a menu's value is drawn at: the page's own (kept as data-menu-px before any change), or smaller where
  // that does not fit; the style is written only when it changes (a write is a change the observer below sees)
  const fit = (input) => {
    let want = '';
    if (phone.matches && input.value && input.getClientRects().length) {
      const s = getComputedStyle(input);
      if (!input.style.fontSize) input.dataset.menuPx = parseFloat(s.fontSize);
      const size = parseFloat(input.dataset.menuPx);
      const room = input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      measure.font = `${s.fontStyle} ${s.fontWeight} ${size}px ${s.fontFamily}`;
      const need = measure.measureText(input.value).width;
      if (need > room) want = `${Math.max(__MIN__, Math.floor(size * room / need * 10) / 10)}px`;
    }
    if (input.style.fontSize !== want) input.style.fontSize = want;
  };
  const pending = new Set();
  let queued = false;  // once a frame at most, before the frame is painted
  const run = () => { queued = false; pending.forEach(fit); pending.clear(); };
  const ask = (inputs) => { inputs.forEach((i) => pending.add(i)); if (!queued) { queued = true; requestAnimationFrame(run); } };
  const all = () => document.querySelectorAll(__MENUS__);
  const value = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
  Object.defineProperty(HTMLInputElement.prototype, 'value', {...value, set(v) {
    value.set.call(this, v);
    if (this.matches(__MENUS__)) ask([this]);
  }});
  // a menu drawn or a tab opened (its menus get a width), the screen turned
  new MutationObserver(() => ask(all())).observe(document.body, {childList: true, subtree: true,
                                                                 attributeFilter: ['class', 'style', 'hidden']});
  window.addEventListener('resize', () => ask(all()));
  document.addEventListener('input', (e) => { if (e.target.matches?.(__MENUS__)) ask([e.target]); }, true);
  ask(all());
}""".replace("__MIN__", str(MENU_MIN_PX)).replace("__MENUS__", json.dumps(MENUS))


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])


# Run by the page once it loads (with app/links.py's script): beside the PNG button of each plotly figure's
# toolbar, a "Save SVG" button that saves the figure as SVG through the page's own plotly (window.Plotly), named after
# the figure's element id. Figures drawn later are found as they appear (looked for once a frame at most). Gradio
# may draw a figure anew in the same place (a new plot element in the same parent), so the button belongs to the
# place: one per parent, which saves whatever figure is there when clicked. Its words are the page's (data-word: app/i18n.py HEAD_JS keeps them in
# the page's language).
EXPORT_JS = """() => {
  const add = (gd) => {
    const place = gd.parentElement;
    if (!place || !window.Plotly || place.querySelector(':scope > .save-svg')) return;
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'save-svg';
    b.dataset.word = 'svg'; b.dataset.wordTitle = 'svg_title';
    b.textContent = window.explorerLang?.word('svg') ?? 'Save SVG';
    b.title = window.explorerLang?.word('svg_title') ?? 'Save this figure as SVG';
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      const plot = place.querySelector(':scope > .js-plotly-plot');
      if (!plot) return;
      const name = (plot.closest('[id]')?.id || 'figure').replace(/[^A-Za-z0-9_-]/g, '');
      window.Plotly.downloadImage(plot, {format: 'svg', filename: name});
    });
    place.style.position = 'relative';
    place.appendChild(b);
  };
  let queued = false;  // a scan is asked for: it runs once a frame at most, before the frame is painted
  const scan = () => { queued = false; document.querySelectorAll('.js-plotly-plot').forEach(add); };
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(scan); } })
    .observe(document.body, {childList: true, subtree: true});
  scan();
}"""
