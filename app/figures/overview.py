"""The architecture of Figure 1 of the paper as SVG, with the tensor shapes of a sentence: a wide drawing for a
desktop and a one-column one for a phone; each block names the tab that explores it. Pure builders: the model's
configuration and the sentence's lengths in, escaped SVG out, its words in the event's language (app.i18n)."""
from html import escape

from ..i18n import texts

_t = texts("overview")

# the tabs the diagram's blocks open, by their ids (the paths of app/links.py)
TAB_ATTENTION, TAB_MASKS, TAB_PE, TAB_TRAIN, TAB_TRANSLATE = ("attention", "masks", "positional", "training",
                                                              "translate")


def _box(x, y, w, h, title, lines, tab, fill):
    out = [f'<g class="blk" data-tab="{escape(tab)}" style="cursor:pointer">',
           f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="10" fill="{fill}" stroke="#333" stroke-width="1.2"/>',
           f'<text x="{x + w / 2}" y="{y + 20}" text-anchor="middle" font-weight="bold" font-size="14">{escape(title)}</text>']
    for i, line in enumerate(lines):
        out.append(f'<text x="{x + w / 2}" y="{y + 40 + 17 * i}" text-anchor="middle" font-size="12.5">{escape(line)}</text>')
    out.append(f'<text x="{x + w - 8}" y="{y + h - 7}" text-anchor="end" font-size="11" fill="#1f5fa8">'
               f'{escape(_t(f"explore.{tab}"))}</text></g>')
    return "".join(out)


def _arrow(x1, y1, x2, y2, label="", dx=8, marker="arrow"):
    lab = (f'<text x="{(x1 + x2) / 2 + dx}" y="{(y1 + y2) / 2 + 4}" font-size="12" fill="#a33" '
           f'font-family="monospace">{escape(label)}</text>') if label else ""
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#333" stroke-width="1.5" '
            f'marker-end="url(#{marker})"/>{lab}')


def architecture_svg(config, src_len=None, tgt_len=None, start="<s>", trained=False):
    """SVG of the encoder-decoder; shapes use the current sentence's lengths (S, T) when
    given."""
    N, D, H, F, V = config["N"], config["d_model"], config["h"], config["d_ff"], config["tgt_vocab"]
    S = src_len if src_len else "S"
    T = tgt_len if tgt_len else "T"
    dk = D // H

    t, box = _t, _box
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
    p.append(box(520, 560, 340, 60, t("decoder-input"), [t("decoder-input-line", bos=start, T=T)], TAB_MASKS, "#fff"))
    p.append(_arrow(690, 560, 690, 522, f"1 × {T}"))
    p.append(box(520, 440, 340, 80, t("embedding"), [t("embedding-table", V=V, D=D), t("embedding-positions")], TAB_PE,
                 "#fdf1d6"))
    p.append(_arrow(690, 440, 690, 372, f"1 × {T} × {D}"))
    p.append(box(470, 160, 390, 210, t("decoder", N=N),
                 [t("decoder-attention", H=H, T=T), t("decoder-mask", T=T), t("cross", H=H, T=T, S=S), t("cross-qkv"),
                  t("ffn", D=D, F=F), t("residual"), t("cache")], TAB_ATTENTION, "#e3f1df"))
    p.append(_arrow(665, 160, 665, 122, f"1 × {T} × {D}"))
    p.append(box(470, 70, 390, 50, t("generator"), [], TAB_TRAIN, "#f3e1f3"))
    p.append(_arrow(665, 70, 665, 32, f"1 × {T} × {V}"))
    p.append(f'<text x="665" y="22" text-anchor="middle" font-size="13" fill="#444">{escape(t("next-token"))}</text>')
    if trained:  # how this project trained it (the shipped model, its run, a model with core.train's log)
        p.append(f'<text x="40" y="30" font-size="12" fill="#666">{escape(t("trained"))}</text>')
    p.append("</svg>")
    return "".join(p)


def _column_blocks(config, S, T, t, start="<s>"):
    """The blocks of the diagram from the source up to the output, as (title, lines, tab, fill, the shape on
    the arrow above it), for the phone's one-column drawing."""
    N, D, H, F, V = config["N"], config["d_model"], config["h"], config["d_ff"], config["tgt_vocab"]
    encoder = [(t("source"), [t("source-ids", S=S)], TAB_TRANSLATE, "#fff", f"1 × {S}"),
               (t("embedding"), [t("embedding-table", V=V, D=D), t("embedding-sinusoids")], TAB_PE, "#fdf1d6",
                f"1 × {S} × {D}"),
               (t("encoder", N=N), [t("encoder-attention", H=H, S=S), f"d_k = {D} / {H} = {D // H}",
                                    t("encoder-mask", S=S), t("ffn", D=D, F=F), t("residual")], TAB_ATTENTION,
                "#dbe9f8", None)]
    decoder = [(t("decoder-input"), [t("decoder-input-line", bos=start, T=T)], TAB_MASKS, "#fff", f"1 × {T}"),
               (t("embedding"), [t("embedding-table", V=V, D=D), t("embedding-positions")], TAB_PE, "#fdf1d6",
                f"1 × {T} × {D}"),
               (t("decoder", N=N), [t("decoder-attention", H=H, T=T), t("decoder-mask", T=T), t("cross", H=H, T=T, S=S),
                                    t("cross-qkv"), t("ffn", D=D, F=F), t("residual"), t("cache")], TAB_ATTENTION,
                "#e3f1df", f"1 × {T} × {D}"),
               (t("generator"), [], TAB_TRAIN, "#f3e1f3", f"1 × {T} × {V}")]
    return encoder, decoder


def architecture_column_svg(config, src_len=None, tgt_len=None, start="<s>", trained=False):
    """The same architecture in one column, 360 units wide, for a phone: the encoder from the source down, its
    memory carried on the right into the decoder, then the decoder from its input down to the next-token
    probabilities. Its text keeps 11 px or more on a 390 px screen, where the wide drawing's falls to 4-6."""
    S, T = src_len or "S", tgt_len or "T"

    t = _t
    encoder, decoder = _column_blocks(config, S, T, t, start)
    p, y, x, w = [], 40, 10, 305
    mid = x + w / 2
    tops = {}
    for side, blocks in (("encoder", encoder), ("decoder", decoder)):
        for title, lines, tab, fill, shape in blocks:
            h = max(50, 54 + 17 * len(lines))
            tops[title + side] = (y, h)
            p.append(_box(x, y, w, h, title, lines, tab, fill))
            y += h
            if shape:
                p.append(_arrow(mid, y, mid, y + 34, shape, marker="arrow-column"))
                y += 36
        if side == "encoder":  # the memory leaves the encoder on the right, down to the decoder's cross-attention
            p.append(f'<text x="{mid + 8}" y="{y + 20}" font-size="12" fill="#a33" font-family="monospace">'
                     f'{escape(t("memory", S=S, D=config["d_model"]))} ↘</text>')
            memory_from = y
            y += 40
    dec_top, dec_h = tops[t("decoder", N=config["N"]) + "decoder"]
    p.append(f'<path d="M{x + w},{memory_from - 10} L{x + w + 30},{memory_from - 10} L{x + w + 30},{dec_top + 85} '
             f'L{x + w + 4},{dec_top + 85}" fill="none" stroke="#a33" stroke-width="1.5" '
             'marker-end="url(#arrow-column)"/>')
    p.append(f'<text x="{mid}" y="{y + 16}" text-anchor="middle" font-size="13" fill="#444">{escape(t("next-token"))}'
             '</text>')
    head = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 360 {h}" width="100%" font-family="sans-serif" '
            'role="img" aria-label="{aria}"><defs><marker id="arrow-column" viewBox="0 0 10 10" refX="9" refY="5" '
            'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/>'
            '</marker></defs>').format(h=y + 30, aria=escape(t("aria")))
    said = f'<text x="{x}" y="22" font-size="12" fill="#666">{escape(t("trained"))}</text>' if trained else ""
    return head + said + "".join(p) + "</svg>"


def diagram_html(config, src_len=None, tgt_len=None, start="<s>", trained=False):
    """Both drawings, the shapes those of a sentence of `src_len` source and `tgt_len` target pieces (S and T
    where not given); the page's stylesheet shows the column on a phone and the wide one elsewhere. `trained`:
    whether to say how the model was trained (only where this project trained it: a converted model's training, or
    a model's with no log, is not known here)."""
    return (f'<div class="diagram-wide">{architecture_svg(config, src_len, tgt_len, start, trained)}</div>'
            f'<div class="diagram-column">{architecture_column_svg(config, src_len, tgt_len, start, trained)}</div>')
