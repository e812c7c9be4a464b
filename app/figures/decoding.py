"""A translation's decoding as HTML and SVG: its output tokens on their probabilities, and one step of it (what
the decoder has seen, the mask in effect, the candidates for the next token). Pure builders: an Inspection or
tokens in, escaped markup out, its words in the event's language (app.i18n). The Translate tab draws them; the
Heads tab's comparison uses the strip's legend."""
import html
import itertools

from ..common import MASK_SCALE, token_strip
from ..i18n import texts

_t = texts("translate")


def token_legend():
    """The line below a strip of output tokens."""
    return _t("legend")


def token_probs_html(ins):
    """The output tokens, each on a background coloured by the model's probability for it (escaped)."""
    return token_strip(ins.out_tokens, ins.token_probs, legend=token_legend())


def decoder_input_html(ins, step):
    """Decoder input at `step` (what the decoder has seen so far) and the token it produces."""
    seen = " ".join(html.escape(t) for t in ins.tgt_tokens[:step + 1])
    out = html.escape(ins.out_tokens[step])
    words = {k: html.escape(_t(k)) for k in ("decoder-input", "next-token")}
    return (f'<div class="step"><b>{words["decoder-input"]}</b> <code>{seen}</code> &nbsp;→&nbsp; '
            f'<b>{words["next-token"]}</b> <code class="chosen">{out}</code> '
            f'(p = {ins.token_probs[step]:.3f})</div>')


def _mask_rows(m, row_tokens, left, top, c):
    """Each row of the mask: its hover, its token, and its allowed runs as one rectangle each."""
    out = []
    for i, row in enumerate(m):
        hover = _t("mask-row", row=i, token=row_tokens[i], n=sum(row), cols=len(row))
        out.append(f'<g><title>{html.escape(hover)}</title><text x="{left - 6}" y="{top + i * c + c * 0.7}" '
                   f'text-anchor="end">{html.escape(row_tokens[i])}</text>')
        j = 0
        for allowed, run in itertools.groupby(row):
            n = len(list(run))
            if allowed:
                out.append(f'<rect class="allowed" x="{left + j * c}" y="{top + i * c}" width="{n * c}" '
                           f'height="{c}" fill="{MASK_SCALE[1][1]}"/>')
            j += n
        out.append("</g>")
    return out


def mask_svg(mask, row_tokens, col_tokens, title="", highlight_row=None):
    """A boolean mask (rows x cols) as an SVG grid: blue where a row may attend to a column, grey where it is
    masked; the tokens label the rows and columns, `highlight_row` is outlined. Each row's allowed runs are one
    rectangle each (a subsequent mask is one per row), so the drawing grows with its rows, not its cells."""
    m = mask.bool().cpu().tolist()
    R, C = len(row_tokens), len(col_tokens)
    assert len(m) == R and all(len(r) == C for r in m), (len(m), R, C)
    c = max(8, min(26, 300 // max(R, C, 1)))  # cell size in px
    left, top = 100, 90
    w, h = left + C * c + 4, top + R * c + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'font-family="sans-serif" font-size="{min(12, c)}" role="img" aria-label="{html.escape(title)}">',
           f'<rect x="{left}" y="{top}" width="{C * c}" height="{R * c}" fill="{MASK_SCALE[0][1]}"/>',
           *_mask_rows(m, row_tokens, left, top, c)]
    for j, tok in enumerate(col_tokens):
        x = left + j * c + c * 0.7
        out.append(f'<text x="{x}" y="{top - 6}" transform="rotate(-90 {x} {top - 6})">{html.escape(tok)}</text>')
    lines = [f'M{left},{top + i * c}h{C * c}' for i in range(1, R)] + [f'M{left + j * c},{top}v{R * c}'
                                                                       for j in range(1, C)]
    out.append(f'<path d="{"".join(lines)}" stroke="#fff" stroke-width="1"/>')
    if highlight_row is not None:
        out.append(f'<rect x="{left}" y="{top + highlight_row * c}" width="{C * c}" height="{c}" fill="none" '
                   f'stroke="#e4572e" stroke-width="3"/>')
    out.append("</svg>")
    return f'<div class="mask-svg"><div class="mask-title">{html.escape(title)}</div>{"".join(out)}</div>'


def step_candidates(ins, step):
    """The top candidates for the token at decoding step `step` as bars of their probability, best first, the
    chosen one in red (HTML: the page draws it at once, and every token is escaped)."""
    chosen = ins.out_tokens[step]
    rows = []
    for tok, p in ins.topk[step]:
        cls = "cand chosen" if tok == chosen else "cand"
        rows.append(f'<div class="{cls}" title="p = {p:.4f}"><span class="cand-tok">{html.escape(tok)}</span>'
                    f'<span class="cand-bar"><span style="width:{100 * p:.1f}%"></span></span>'
                    f'<span class="cand-p">{p:.1%}</span></div>')
    title = html.escape(_t("candidates", step=step + 1))
    return f'<div class="cands"><div class="cands-title">{title}</div>{"".join(rows)}</div>'


def replay_first():
    """What the step replay says before a translation."""
    return f'<div class="cands-title">{html.escape(_t("replay-first"))}</div>'


def nbest_headers():
    """The n-best table's column headers: rank, translation, score, log P, length."""
    return [_t(f"nbest.col.{name}") for name in ("rank", "translation", "score", "logp", "length")]


def nbest_rows(ins):
    """The n-best table's rows, best first: the hypothesis shown marked ● by its rank, its translation (the
    table shows it as text), the score the search ranked it by, its log P and its length (</s> included); a
    hypothesis that never ended (none did within the length limit) says so after its translation."""
    rows = []
    for h in ins.nbest:
        shown = "● " if h.rank == ins.rank else ""
        translation = h.translation if h.finished else f"{h.translation} ({_t('nbest.unfinished')})"
        rows.append([f"{shown}{h.rank}", translation, f"{h.score:.3f}", f"{h.logp:.3f}", h.length])
    return rows
