"""The page's look: its stylesheet (app/page/style.css, with the phone's rules written here in both languages), its
theme, and the scripts that add an SVG button to every figure, mark the boxes a phone scrolls sideways and fit a
menu's value to a phone; and what launch() gives the page (`page_arguments`)."""
import gradio as gr

from . import page as page_js
from .gradio_adapter import idle_js
from .i18n import LANGS, head_script, tab_labels, text
from .links import page_script

CSS = page_js.css("style")  # then the phone's rules written from the words of both languages, below


# figures of panels side by side: on a phone drawn 640 px wide, as on a desktop, in a block that a finger scrolls
# sideways (at 390 px their tick labels and panel titles would run into each other), with a line above that says so
# (Attention's layers x heads has a phone's own layout instead: app/figures/attention.py _phone_overview)
WIDE_FIGURES = ("why-target", "in-ln-params", "in-scale", "in-sweep", "in-residual", "in-ffn",
                "m-masks", "m-scores", "pe-rel", "pe-scale", "r-fig", "t-ablation", "lab-curve", "whatif-tree",
                "m-batching")


def wide_figures_css():
    """The phone's rules for WIDE_FIGURES, the hint in each language: `:lang()` reads the page's <html lang>, which
    Gradio sets (a selector naming <html> would not match: Gradio puts its container's selector before each rule)."""
    fixed = ", ".join(f"#{i}" for i in WIDE_FIGURES)
    blocks = f"{fixed}, .wide-sentence"  # and a long sentence's figure (app/page/phone-width.js)
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
# screen shows: SWIPE_JS (app/page/swipe.js) marks each such box (data-swipe) and the page's style writes a line
# above it that says so, in the page's language, held at the box's left edge as it scrolls (as WIDE_FIGURES' line
# is).
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

SWIPE_JS = page_js.function("swipe", SWIPE_BOXES)


# On a phone, a menu's chosen value that is wider than its box is drawn smaller until it fits, down to MENU_MIN_PX
# (app/page/menu-fit.js), for the menus MENUS.
MENU_MIN_PX = 11
MENUS = "input:is([role=listbox], [role=combobox])"

MENU_FIT_JS = page_js.function("menu-fit", {"min": MENU_MIN_PX, "menus": MENUS})


def theme():
    # system fonts only: the page loads nothing from outside the server
    return gr.themes.Default(primary_hue="blue", font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "Consolas", "monospace"])


# Run by the page once it loads (with app/links.py's script): a "Save SVG" button beside each plotly figure's
# toolbar (app/page/svg-button.js).
EXPORT_JS = page_js.function("svg-button")

# On a phone the top tab bar (app/ui.py's #top-tabs) and the sub-tabs of a tab are each one line that scrolls
# sideways: the open tab is kept in its bar's view (app/page/tab-bar.js).
TAB_STRIPS = ":is(#top-tabs, #top-tabs .tabs) > .tab-wrapper > .tab-container"
TAB_BAR_JS = page_js.function("tab-bar", TAB_STRIPS)


def page_arguments(demo):
    """What launch() gives the page: its stylesheet, its head (app/page/head.js) and the functions it runs once it
    has loaded (the link's, then this module's and the idle work's)."""
    return dict(css=CSS, head=head_script(tab_labels(demo)),
                js=page_script(demo, EXPORT_JS, SWIPE_JS, MENU_FIT_JS, TAB_BAR_JS, idle_js()))
