"""The Score tab's words and table: a scored set's corpus figures with sacreBLEU's signatures, and its pairs, worst
first by their own chrF. Pure builders: a Scored in, Markdown or table rows out, in the event's language."""
from ..common import md_literal
from ..i18n import text, texts
from ..models import MODELS
from .compare import model_name

_t = texts("score")


def summary_markdown(scored):
    """BLEU, chrF and TER of the set, what produced them, and sacreBLEU's signature of each (Markdown; a signature
    is sacreBLEU's own text, in a code span)."""
    r = scored.result
    method = _t("beam", beam=r["beam"], alpha=f"{r['alpha']:g}") if r["beam"] > 1 else _t("greedy")
    lines = [_t("summary", bleu=f"{r['bleu']:.2f}", chrf=f"{r['chrf']:.2f}", ter=f"{r['ter']:.2f}",
                n=f"{r['sentences']:,}", method=method, seconds=f"{r['seconds']:.1f}",
                rate=f"{r['sentences_per_second']:.1f}"),
             _t("signatures"),
             *(f"- {name} `{r[f'{key}_signature']}`" for key, name in
               (("bleu", "BLEU"), ("chrf", "chrF"), ("ter", "TER")))]
    name = getattr(scored, "model", "")
    if name and name != MODELS.default:  # the model that translated the set, where it is not the page's own
        lines[0] = text("translate.status.model", model=md_literal(model_name(name))) + " · " + lines[0]
    return "\n\n".join(lines[:2]) + "\n" + "\n".join(lines[2:])


def table_headers():
    return ["#", "chrF", _t("col.german"), _t("col.reference"), _t("col.translation")]


def table_rows(scored):
    """One row a pair, worst first (lowest chrF; ties in the set's order): its number in the set (from 1), its chrF,
    the German, the reference and the translation."""
    order = sorted(range(len(scored.srcs)), key=lambda i: (scored.chrf[i], i))
    return [[i + 1, round(scored.chrf[i], 1), scored.srcs[i], scored.refs[i], scored.hyps[i]] for i in order]


def reference_markdown(reference, chrf):
    """The reference beside a translation opened from a scored set, with the pair's chrF (its text escaped)."""
    return _t("reference", chrf=f"{chrf:.1f}", reference=md_literal(reference))
