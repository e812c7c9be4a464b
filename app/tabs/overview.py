"""The Overview tab: the architecture of Figure 1 of the paper as an SVG, with the tensor shapes of the last
translation; clicking a block opens the tab that explores it."""
from html import escape

import gradio as gr

from ..i18n import L, text
from ..shared import get_translator
from ..views import View, opener, refresh, tab_views

# the tabs the diagram's blocks open, by their ids (the paths of app/links.py)
TAB_ATTENTION, TAB_MASKS, TAB_PE, TAB_TRAIN, TAB_TRANSLATE = ("attention", "masks", "positional", "training",
                                                              "translate")


def _box(x, y, w, h, title, lines, tab, fill, lang="en"):
    out = [f'<g class="blk" data-tab="{escape(tab)}" style="cursor:pointer">',
           f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="10" fill="{fill}" stroke="#333" stroke-width="1.2"/>',
           f'<text x="{x + w / 2}" y="{y + 20}" text-anchor="middle" font-weight="bold" font-size="14">{escape(title)}</text>']
    for i, line in enumerate(lines):
        out.append(f'<text x="{x + w / 2}" y="{y + 40 + 17 * i}" text-anchor="middle" font-size="12.5">{escape(line)}</text>')
    out.append(f'<text x="{x + w - 8}" y="{y + h - 7}" text-anchor="end" font-size="11" fill="#1f5fa8">'
               f'{escape(text(lang, f"overview.explore.{tab}"))}</text></g>')
    return "".join(out)


def _arrow(x1, y1, x2, y2, label="", dx=8):
    lab = (f'<text x="{(x1 + x2) / 2 + dx}" y="{(y1 + y2) / 2 + 4}" font-size="12" fill="#a33" '
           f'font-family="monospace">{escape(label)}</text>') if label else ""
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#333" stroke-width="1.5" '
            f'marker-end="url(#arrow)"/>{lab}')


def architecture_svg(config, src_len=None, tgt_len=None, lang="en"):
    """SVG of the encoder-decoder, its words in `lang`; shapes use the current sentence's lengths (S, T) when
    given."""
    N, D, H, F, V = config["N"], config["d_model"], config["h"], config["d_ff"], config["tgt_vocab"]
    S = src_len if src_len else "S"
    T = tgt_len if tgt_len else "T"
    dk = D // H

    def t(key, **values):
        return text(lang, f"overview.{key}", **values)

    def box(x, y, w, h, title, lines, tab, fill):
        return _box(x, y, w, h, title, lines, tab, fill, lang)

    p = ['<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 900 640" width="100%" style="max-width:900px" '
         f'font-family="sans-serif" role="img" aria-label="{escape(t("aria"))}">',
         '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
         'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>']
    # encoder column (left), bottom to top
    p.append(box(40, 560, 320, 60, t("source"), [t("source-ids", S=S)], TAB_TRANSLATE, "#fff"))
    p.append(_arrow(200, 560, 200, 522, f"1 × {S}"))
    p.append(box(40, 440, 320, 80, t("embedding"), [t("embedding-table", V=V, D=D), t("embedding-sinusoids")],
                 TAB_PE, "#fdf1d6"))
    p.append(_arrow(200, 440, 200, 372, f"1 × {S} × {D}"))
    p.append(box(40, 210, 320, 160, t("encoder", N=N),
                 [t("encoder-attention", H=H, S=S), f"d_k = {D} / {H} = {dk}", t("encoder-mask", S=S),
                  t("ffn", D=D, F=F), t("residual")], TAB_ATTENTION, "#dbe9f8"))
    p.append(f'<text x="212" y="186" font-size="12" fill="#a33" font-family="monospace">{escape(t("memory", S=S, D=D))}'
             '</text>')
    p.append('<path d="M200,210 L200,195 L470,195" fill="none" stroke="#333" stroke-width="1.5" '
             'marker-end="url(#arrow)"/>')
    # decoder column (right)
    p.append(box(520, 560, 340, 60, t("decoder-input"), [t("decoder-input-line", bos="<s>", T=T)], TAB_MASKS, "#fff"))
    p.append(_arrow(690, 560, 690, 522, f"1 × {T}"))
    p.append(box(520, 440, 340, 80, t("embedding"), [t("embedding-same"), t("embedding-positions")], TAB_PE,
                 "#fdf1d6"))
    p.append(_arrow(690, 440, 690, 372, f"1 × {T} × {D}"))
    p.append(box(470, 160, 390, 210, t("decoder", N=N),
                 [t("decoder-attention", H=H, T=T), t("decoder-mask", T=T), t("cross", H=H, T=T, S=S), t("cross-qkv"),
                  t("ffn", D=D, F=F), t("residual"), t("cache")], TAB_ATTENTION, "#e3f1df"))
    p.append(_arrow(665, 160, 665, 122, f"1 × {T} × {D}"))
    p.append(box(470, 70, 390, 50, t("generator"), [], TAB_TRAIN, "#f3e1f3"))
    p.append(_arrow(665, 70, 665, 32, f"1 × {T} × {V}"))
    p.append(f'<text x="665" y="22" text-anchor="middle" font-size="13" fill="#444">{escape(t("next-token"))}</text>')
    p.append(f'<text x="40" y="30" font-size="12" fill="#666">{escape(t("trained"))}</text>')
    p.append("</svg>")
    return "".join(p)


# Clicking a block opens the tab whose path is its data-tab attribute (app/links.py's explorerLink.open).
DIAGRAM_JS = """
element.addEventListener('click', (event) => {
  const block = event.target.closest('[data-tab]');
  if (block) window.explorerLink?.open(block.dataset.tab);
});
"""


def overview_svg(ins, lang="en"):
    """The architecture diagram with the shapes of the last translation (S and T before the first), its words
    in `lang`."""
    cfg = get_translator().config
    if ins is None:
        return architecture_svg(cfg, lang=lang)
    return architecture_svg(cfg, len(ins.src_tokens), len(ins.tgt_tokens), lang)


# the tab's one view: the diagram with the translation's shapes, in the page's language; cleared back to S and T
# when it is hidden and a new translation comes (drawn again in the page's language when the tab opens)
VIEWS = [View("overview/diagram", ("overview",), overview_svg, uses=("lang",), blank=lambda lang="en": (overview_svg(None, lang),))]


def show(page, ins, lang="en"):
    """The tab's view for the page as it is (app/views.py)."""
    return refresh(page, ins, VIEWS, dict(lang=lang))


def build(cfg, page, state, lang):
    """Lay out the tab and wire its opening; returns its tab_views (app/views.py): the diagram, which a new
    translation draws when the tab is on screen (see app/ui.py)."""
    with gr.Tab(L("ui.tab.overview"), id="overview") as tab:
        gr.Markdown(L("ui.overview.model", layers=cfg["N"], d_model=cfg["d_model"], heads=cfg["h"],
                      d_ff=cfg["d_ff"], vocab=cfg["src_vocab"]))
        diagram = gr.HTML(overview_svg(None), js_on_load=DIAGRAM_JS, elem_id="diagram")
    inputs = [page, state, lang]
    tab.select(opener(("overview",), show), inputs, diagram, api_visibility="private")
    return tab_views(show, VIEWS, dict(lang=lang), [diagram])
