"""How much of the page's text is in both languages, and how much stays English:

    python -m tools.i18n_report            # the static text, per tab
    python -m tools.i18n_report --drawn    # and the text the views draw, the page in zh-CN (--list prints it)

Builds the page (app.ui.build_demo) and counts, per top-level tab, the user-visible static strings its components
carry: tab and component labels, placeholders, info lines, button texts, Markdown written at build time
and the labels of choices (numbers and names from the code, such as module paths, are in no language). A
string is translated when it is a gr.I18n key (app.i18n.L).

With --drawn it also translates one of the app's examples and draws every view of every tab for it (every step of
the Learn path), and counts the distinct strings those views show that are English when the page is in zh-CN:
figure titles, axis titles, legends and annotations, the text of Markdown and HTML. The sentence's own pieces,
the model's candidates, names from the code, formulas and the shipped data the page shows (neutral_words) are in no
language and not counted. Every view draws in the page's language, so the count is 0 unless a view forgets to.
"""
import json
import re
from functools import lru_cache
from html.parser import HTMLParser

import gradio as gr

from app.i18n import speaking
from app.tabs import learn

STATIC_VALUES = (gr.Markdown, gr.Button)  # components whose value is text written at build time
CODE = re.compile(r"^[A-Za-z_][\w]*([._][\w]+)+$|^[\W\d_]*$")  # a module path, a number, a symbol: no language
CODE_EXPR = re.compile(r"^(?=.*(\w\(|\[))[\w\s\[\]():,.*+=<>-]+$")  # an expression: [layer] * N, tgt[:, 1:]
CODE_NAMES = {"clones", "deepcopy"}  # the code's functions the Learn path names (clones' choice labels)


def words(s):
    """Whether a string is in some language (not a number, a symbol or a name from the code)."""
    return isinstance(s, gr.i18n.I18nData) or (isinstance(s, str) and bool(s.strip()) and not CODE.match(s.strip()))


def strings(block):
    """The user-visible static strings of one block: its label, placeholder, info, static text and the labels
    of its choices."""
    out = [getattr(block, a, None) for a in ("label", "placeholder", "info")]
    if isinstance(block, STATIC_VALUES):
        out.append(block.value)
    out += [c[0] for c in getattr(block, "choices", None) or () if isinstance(c, tuple)]
    return [s for s in out if words(s)]


def top_tab(block):
    """The id of the top-level tab a block sits in ("page" outside every tab)."""
    tab = None
    while block is not None:
        if isinstance(block, gr.Tab):
            tab = block
        block = block.parent
    return str(tab.id) if tab is not None else "page"


def translated(s):
    """Whether a string is a gr.I18n key (a component keeps a translated value as its serialized key)."""
    return isinstance(s, gr.i18n.I18nData) or s.startswith("__i18n__")


def count(demo):
    """{top-level tab: [translated, English]}."""
    table = {}
    for block in demo.blocks.values():
        for s in strings(block):
            row = table.setdefault(top_tab(block), [0, 0])
            row[0 if translated(s) else 1] += 1
    return table


# ---- text drawn at run time ------------------------------------------------------------------------------

CJK = re.compile(r"[\u3400-\u9fff]")
CODE_SPAN = re.compile(r"`[^`]*`")
# names from the code and formulas: d_model, w_1, LayerNorm, ModuleList, PE(pos + k)
NAME = re.compile(r"\b\w*[_\d]\w*\b|\b[A-Za-z][a-z]+[A-Z]\w*\b|\b\w+\([\w ,+−-]*\)")
WORD = re.compile(r"[A-Za-z]{3,}")
NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?%?")
SKIP_KEYS = {"ticktext", "tickvals", "x", "y", "z", "text", "customdata", "hovertemplate", "texttemplate", "meta",
             "colorscale", "font", "marker", "line"}  # data (the sentence's pieces) and style, not the page's words


class _Text(HTMLParser):
    """The text nodes of an HTML string (scripts and styles left out)."""
    def __init__(self):
        super().__init__()
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")
        self.out += [v for k, v in attrs if k in ("title", "aria-label") and v]

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.out.append(data.strip())


# terms the Chinese page writes as *Dive into Deep Learning* does: one of these in English in a Chinese string, with
# its Chinese term nowhere in that string (a gloss such as "decoder（解码器）" has both), is a word left untranslated;
# a name from the code (nn.LayerNorm, `Linear`, `tgt_mask`) is not, but the API's name of a decoding is, whatever
# else the string says (`greedy` where the page says 贪心搜索)
API_WORDS = {"greedy", "beam", "sample"}
D2L_TERMS = {"LayerNorm": "层规范化", "layer norm": "层规范化", "Linear": "线性层", "greedy": "贪心", "beam": "束",
             "sample": "采样", "dropout": "暂退法", "embedding": "嵌入", "attention": "注意力", "mask": "掩蔽", "encoder": "编码器",
             "decoder": "解码器", "warm-up": "预热", "smoothing": "平滑", "feed-forward": "前馈",
             "positional": "位置", "token": "词元", "padding": "填充", "generator": "生成器"}


def untranslated_terms(s):
    """The terms of D2L_TERMS a Chinese string leaves in English (none in a string without Chinese)."""
    if not CJK.search(s):
        return []
    api = [w for w in CODE_SPAN.findall(s) if w.strip("`") in API_WORDS]
    bare = CODE_SPAN.sub(" ", s)
    return api + [t for t, zh in D2L_TERMS.items() if zh not in s
                  and re.search(rf"(?<![\w.(\[]){re.escape(t)}(?![\w.(\]])", bare, re.IGNORECASE)]


def english(s, pieces=frozenset()):
    """Whether text is English: words of three letters or more, no Chinese, once code spans, names from the code
    and the pieces of the sentence (and of the model's candidates) are taken out; or Chinese that leaves one of the
    terms it has a Chinese word for in English (untranslated_terms). A piece with SentencePiece's word mark (▁) is
    the model's, in no language of the page."""
    if CJK.search(s):
        return bool(untranslated_terms(s))
    if "▁" in s or CODE_EXPR.match(s.replace("<br>", " ")):
        return False
    rest = NAME.sub(" ", CODE_SPAN.sub(" ", s))
    return any(w not in pieces for w in WORD.findall(rest))


LABELS = ("ticktext", "x", "y", "text")  # data keys whose strings are labels: tick texts, categories, cell texts


def figure_strings(obj, key=None):
    """The words a plotly figure shows: titles, axis titles, legend names, annotations, and its labels: tick
    texts, a bar's categories and a cell's text (the sentence's pieces among them are in no language; english()
    is told them)."""
    if isinstance(obj, dict):
        return [s for k, v in obj.items() if k not in SKIP_KEYS or k in LABELS for s in figure_strings(v, k)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in figure_strings(v, key)]
    return [obj] if isinstance(obj, str) and key in ("text", "name", "title", *LABELS) else []


def value_strings(value):
    """The words one drawn value shows: a figure's, an HTML or Markdown string's text, an update's label and choices."""
    if value is None:
        return []
    if hasattr(value, "to_plotly_json"):
        return figure_strings(value.to_plotly_json())
    if isinstance(value, dict):  # gr.update(...): a menu's label and choices, or a text's new value
        out = [value.get(k) for k in ("label", "info") if isinstance(value.get(k), str)]
        if "choices" in value:
            out += [c[0] if isinstance(c, (tuple, list)) else c for c in value["choices"] or ()]
        elif isinstance(value.get("value"), str):
            out.append(value["value"])
        return [t for s in out if isinstance(s, str) for t in value_strings(s)]
    if isinstance(value, str):
        if value.startswith('{"bertviz":'):  # a bertviz view's data (app/bertviz_views.py): its words for the frame
            return list(json.loads(value)["words"].values())
        if "<script" in value or value.startswith(("/", "http")) or len(value) > 200_000:
            return []  # a whole page for an iframe (bertviz's own views), or a file
        parser = _Text()
        parser.feed(value)
        return parser.out
    return []


SHOWS_NO_WORDS = (gr.Code, gr.File, gr.JSON)  # source code, files: not the page's words


def sentence_pieces(ins):
    """The words of the translation and of the model's candidates: the sentence's, in no language of the page."""
    pieces = {w.replace("▁", " ").strip() for w in (*ins.src_tokens, *ins.tgt_tokens, *ins.out_tokens,
                                                     *(c for row in ins.topk for c, _ in row))}
    return frozenset(pieces | {w for s in (ins.source, ins.translation) for w in WORD.findall(s or "")})


@lru_cache(maxsize=1)
def neutral_words():
    """Words that are in no language of the page though they look English: the model's module names and
    classes (the Inside tab's tree), its special pieces (<pad>, <unk>, ...), and the shipped data the
    Training tab shows (its probe sentences and what the model made of them at each epoch)."""
    from app.figures import training
    from app.shared import get_translator
    tr = get_translator()
    code = {part for name, _ in tr.model.named_modules() for part in name.split(".")}
    code |= {type(m).__name__ for m in tr.model.modules()}
    special = {tr.tokenizer.id_to_piece(i) for i in range(tr.tokenizer.get_piece_size())
               if tr.tokenizer.is_control(i) or tr.tokenizer.is_unknown(i)}
    _, _, epochs = training.shipped_log()
    data = [*training.probe_sentences(), *(s for e in epochs for s in e.get("probes") or ())]
    return frozenset(code | CODE_NAMES | {w for s in (*special, *data) for w in WORD.findall(s)})


def view_values(tab, ins, lang):
    """(component, value) for every output of every view of a tab, drawn for `ins` with its controls' first
    values, the page in `lang`; the Learn tab at every step of its path."""
    controls = {name: getattr(c, "value", None) for name, c in tab.controls.items()}
    values = []
    if "results_of" in tab.more:  # a tab whose views read results of its own (Compare): those of this sentence
        ins = tab.results_of(ins)
    with speaking(lang):
        if tab.where == ("learn",):  # every step before its Check and after it: its answer and what it revealed
            return [(tab.outputs[name], v) for k in range(len(learn.STEPS))
                    for out in (learn.render(ins, {"step": k, "done": []}), learn_checked(ins, k))
                    for name, v in out.items() if name in tab.outputs]
        for view in tab.views:
            used = {name: controls[name] for name in view.uses}
            out = view.draw(ins, **used) if view.reads_translation else view.draw(**used)
            named = out if isinstance(out, dict) and set(out) == set(view.outputs) else {view.outputs[0]: out}
            values += [(tab.outputs[name], v) for name, v in named.items()]
    return values


def learn_checked(ins, k):
    """What step `k` of the Learn path shows once its answer is checked (the right choice picked): its answer, its
    fact line and its figure, revealed."""
    step = learn.STEPS[k]
    choices, right, _ = learn.quiz_state(step, ins, None)[1]
    value = learn._value(step.control.default, ins)
    out = learn.check(ins, {"step": k, "done": []}, choices[right], value, value)
    return {name: out[name] for name in ("answer", "fact", "figure")}


def tab_name(tab):
    """A tab's name in the report: its module's."""
    return tab.where[0]


def drawn(demo, ins, lang="zh-CN"):
    """{tab (its module's name): sorted distinct English strings its views draw for `ins`, the page in `lang`}."""
    pieces = sentence_pieces(ins) | neutral_words()
    return {tab_name(tab): sorted(
        {s for c, v in view_values(tab, ins, lang) if not isinstance(c, SHOWS_NO_WORDS) and c.visible is not False
         for s in value_strings(v) if english(s, pieces)}) for tab in demo.tab_views}


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drawn", action="store_true",
                    help="also draw every view for one translation and count the English it draws in zh-CN")
    ap.add_argument("--list", action="store_true", help="with --drawn, print those strings")
    args = ap.parse_args(argv)
    from app.ui import build_demo
    demo = build_demo()
    table = count(demo)
    print(f"{'tab':14s} {'both languages':>15s} {'English only':>13s}")
    for tab, (done, left) in table.items():
        print(f"{tab:14s} {done:15d} {left:13d}")
    done, left = (sum(r[i] for r in table.values()) for i in (0, 1))
    print(f"{'total':14s} {done:15d} {left:13d}")
    if args.drawn:
        from app.shared import examples
        from app.translating import translate
        ins = translate(examples()[0], "beam")[2]
        runtime = drawn(demo, ins)
        shapes = {tab: {NUMBER.sub("#", s) for s in found} for tab, found in runtime.items()}
        print(f"\nDrawn at run time for {examples()[0]!r}, the page in zh-CN: text still English")
        print(f"{'tab':14s} {'strings':>8s} {'templates':>10s}  (a template: the string with its numbers taken out)")
        for tab, found in runtime.items():
            print(f"{tab:14s} {len(found):8d} {len(shapes[tab]):10d}")
            for s in sorted(shapes[tab]) if args.list else ():
                print(f"{'':16s}{s[:110]!r}")
        print(f"{'total':14s} {sum(map(len, runtime.values())):8d} {sum(map(len, shapes.values())):10d}")


if __name__ == "__main__":
    main()
