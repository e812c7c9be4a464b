"""The page's look: its stylesheet (token strips, the step replay's mask and candidates), its theme, and the
script that adds an SVG button to every figure."""
import gradio as gr

CSS = """
.tok-row {display:flex; flex-wrap:wrap; gap:4px; font-size:1.05em}
.tok {padding:2px 6px; border-radius:5px; border:1px solid #ccd}
.tok sub {font-size:0.65em; margin-left:2px; opacity:0.8}
.tok-legend {font-size:0.8em; color:#666; margin-top:4px}
.step code {font-size:1em} .step code.chosen {background:#fde2da}
.mask-svg {overflow-x:auto} .mask-title, .cands-title {font-size:0.9em; margin:4px 0 6px}
.cand {display:grid; grid-template-columns:9em 1fr 4.5em; gap:8px; align-items:center; font-size:0.95em;
  margin:2px 0} .cand-tok {overflow:hidden; text-overflow:ellipsis; white-space:nowrap; text-align:right}
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
.learn-count {margin-left:6px; font-size:0.85em; color:#556}
#learn-answer {min-height:1.5em}
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
  .learn-mark {min-width:32px; height:32px}
}
.save-svg {position:absolute; bottom:2px; right:4px; z-index:5; font-size:11px; padding:1px 6px; border:1px solid #ccd;
  border-radius:4px; background:#fff; color:#445; cursor:pointer; opacity:0.75} .save-svg:hover {opacity:1}
"""


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])


# Run by the page once it loads (with app/links.py's script): beside the PNG button of each plotly figure's
# toolbar, an "SVG" button that saves the figure as SVG through the page's own plotly (window.Plotly), named after
# the figure's element id. Figures drawn later are found as they appear. Gradio may draw a figure anew in the same
# place (a new plot element in the same parent), so the button belongs to the place: one per parent, which saves
# whatever figure is there when clicked. Its words are the page's (data-word: app/i18n.py HEAD_JS keeps them in
# the page's language).
EXPORT_JS = """() => {
  const add = (gd) => {
    const place = gd.parentElement;
    if (!place || !window.Plotly || place.querySelector(':scope > .save-svg')) return;
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'save-svg';
    b.dataset.word = 'svg'; b.dataset.wordTitle = 'svg_title';
    b.textContent = window.explorerLang?.word('svg') ?? 'SVG';
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
  const scan = () => document.querySelectorAll('.js-plotly-plot').forEach(add);
  new MutationObserver(scan).observe(document.body, {childList: true, subtree: true});
  scan();
}"""
