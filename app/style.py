"""The page's look: its stylesheet (token strips, the step replay's mask and candidates) and its theme."""
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
"""


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])
