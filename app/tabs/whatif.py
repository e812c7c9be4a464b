"""The What if tab: the beam search behind the last translation as a tree, and the model made to
continue from another word, from an English prefix, or to score a translation written by the user.

The tree needs one beam search that records its candidates (core.analysis.searchtree.search), run when the tab is shown
and kept per translation and beam size. Each what-if is one decoding or one teacher-forced pass, run when its
button is pressed; all of them use the translation's own settings and the shared model, one at a time.
"""
import gradio as gr

from core.analysis import searchtree
from core.decode import DECODING_LIMITS

from ..cache import PerTranslation
from ..common import MAX_CHARS, clamp, empty_figure, export_file, fitted_plot, within
from ..figures.whatif import comparison_html, tree_figure
from ..i18n import L, in_language, texts
from ..shared import model_of
from ..views import Tab, View

_t = texts("whatif")


def not_yet():
    """What the tab says before a translation."""
    return _t("not-yet")


BEAM = DECODING_LIMITS["beam"]  # the tree's beam size: the same range as the Translate tab's
_KEPT = PerTranslation(16)  # search trees, per translation and beam size


def search_tree(ins, beam):
    """The beam search of the translation's source, recorded, once per (translation, beam size)."""
    def compute():
        decoding = ins.decoding or {}
        return searchtree.search(model_of(ins), source_text(ins), beam=beam, alpha=decoding.get("alpha"),
                                 max_len=decoding.get("max_len"))
    return _KEPT.get(ins, beam, compute)


def source_text(ins):
    """The German sentence as given (or, for an Inspection without it, from its pieces)."""
    if ins.source:
        return ins.source
    tr = model_of(ins)
    head = 0 if tr.bos_id is None else 1  # a converted (Marian) model puts nothing before the source
    return tr.tokenizer.decode([tr.tokenizer.piece_to_id(p) for p in ins.src_tokens[head:-1]])


# ---- what-if -------------------------------------------------------------------------------------------

def compare(ins, title, english):
    """The model's translation beside `english`, both scored by the model (teacher-forced, float32)."""
    tr = model_of(ins)
    ours, other = tr.score([source_text(ins)] * 2, [ins.translation, english])
    return comparison_html(ours, title, other)


def _continue(ins, prefix):
    """The translation's own decoding continued after the English `prefix`."""
    tr = model_of(ins)
    d = ins.decoding or {}
    method = d.get("method") if d.get("method") in ("greedy", "beam") else "greedy"
    return tr.translate(source_text(ins), method=method, beam=d.get("beam", 4), alpha=d.get("alpha"),
                        prefix=prefix)


def swap_word(ins, position, candidate):
    """Replace the output token at `position` by another of the candidates the model scored there, and let the
    model continue; the result beside the original."""
    if ins is None:
        return not_yet()
    T = len(ins.out_tokens)
    position = clamp(position, 0, T - 1)
    choices = [p for p, _ in ins.topk[position]]
    if candidate not in choices:
        return _t("pick")
    tok = model_of(ins).tokenizer
    prefix = tok.decode([tok.piece_to_id(p) for p in ins.tgt_tokens[1:position + 1] + [candidate]])
    english = _continue(ins, prefix)
    return compare(ins, _t("swapped", candidate=candidate, position=position + 1), english)


def _typed(ins, typed, what):
    """What is wrong with English the user typed (`what`: "prefix" or "translation"), or None when it can be
    used: a line that asks for it when it is empty, or says it is too long."""
    if ins is None:
        return not_yet()
    if not typed:
        return _t(f"ask.{what}")
    if len(typed) > MAX_CHARS:
        return _t(f"too-long.{what}", count=f"{len(typed):,}", most=f"{MAX_CHARS:,}")
    return None


def force_prefix(ins, prefix):
    """The model continues after an English prefix the user wrote."""
    prefix = (prefix or "").strip()
    wrong = _typed(ins, prefix, "prefix")
    return wrong or compare(ins, _t("after-prefix"), _continue(ins, prefix))


def score_mine(ins, english):
    """The model's probability of a whole English translation the user wrote, token by token."""
    english = (english or "").strip()
    wrong = _typed(ins, english, "translation")
    return wrong or compare(ins, _t("yours"), english)


# ---- views ---------------------------------------------------------------------------------------------

def tree_view(ins, beam):
    beam = within(BEAM, beam)
    tok = model_of(ins).tokenizer
    return tree_figure(search_tree(ins, beam), tok.id_to_piece, beam)


def tree_file(ins, beam):
    """The search tree of the translation as one self-contained HTML file (plotly.js inside it) to download."""
    if ins is None:
        return gr.update(value=None, visible=False)
    page = tree_view(ins, beam).to_html(include_plotlyjs=True, full_html=True)
    return gr.update(value=export_file(page, "beam-search", ".html"), visible=True)


RESULTS = ("swapped", "prefixed", "scored")  # each what-if's own result, under its own controls


def positions_view(ins):
    """The position menu for this translation, the candidates of its first position, and each what-if's result
    emptied (it read the last sentence)."""
    return dict(position=gr.update(choices=[(f"{i + 1} {t}", i) for i, t in enumerate(ins.out_tokens)], value=0),
                candidate=candidates_update(ins, 0), **dict.fromkeys(RESULTS, ""))


def candidates_update(ins, position):
    if ins is None:
        return gr.update(choices=[], value=None)
    position = clamp(position, 0, len(ins.out_tokens) - 1)
    choices = [(f"{p}  ({q:.1%})", p) for p, q in ins.topk[position]]
    return gr.update(choices=choices, value=choices[1][1] if len(choices) > 1 else None)


def placeholder(beam):
    """The tree before a translation: what to do, in the page's language."""
    return empty_figure(not_yet())


# the tree (searched when the tab is shown, per beam size) and the what-if menus of this translation
WHERE = ("whatif",)
VIEWS = [View("whatif/tree", WHERE, tree_view, outputs=("tree",), uses=("beam",), blank=placeholder),
         View("whatif/positions", WHERE, positions_view, outputs=("position", "candidate", *RESULTS),
              blank=dict(position=gr.update(choices=[], value=None), candidate=gr.update(choices=[], value=None),
                         **dict.fromkeys(RESULTS, "")))]


# ---- layout and events -----------------------------------------------------------------------------

def _layout():
    """The beam slider and the tree with its download; the what-if controls and their result. Returns the
    controls, the views' outputs and the what-ifs' components, by name."""
    gr.Markdown(L("ui.whatif.tree-intro"))
    beam = gr.Slider(BEAM.lo, BEAM.hi, value=BEAM.default, step=BEAM.step, label=L("ui.whatif.beam"),
                     elem_id="whatif-beam")
    tree = fitted_plot(elem_id="whatif-tree")
    with gr.Row():
        save_tree = gr.Button(L("ui.whatif.save"), size="sm", elem_id="whatif-save")
        tree_html = gr.File(visible=False, interactive=False, label=L("ui.whatif.file"), elem_id="whatif-file")
    gr.Markdown(L("ui.whatif.intro"))
    with gr.Row():
        position = gr.Dropdown(choices=[], label=L("ui.whatif.position"), elem_id="whatif-position")
        candidate = gr.Dropdown(choices=[], label=L("ui.whatif.candidate"), elem_id="whatif-candidate")
        swap = gr.Button(L("ui.whatif.swap"), elem_id="whatif-swap")
    swapped = gr.HTML(elem_id="whatif-swapped")
    with gr.Row():
        prefix = gr.Textbox(label=L("ui.whatif.prefix"), placeholder=L("ui.whatif.prefix-example"), max_lines=1,
                             elem_id="whatif-prefix")
        go_prefix = gr.Button(L("ui.whatif.go-prefix"), elem_id="whatif-go-prefix")
    prefixed = gr.HTML(elem_id="whatif-prefixed")
    with gr.Row():
        mine = gr.Textbox(label=L("ui.whatif.mine"), max_lines=2, elem_id="whatif-mine")
        go_mine = gr.Button(L("ui.whatif.go-mine"), elem_id="whatif-go-mine")
    scored = gr.HTML(elem_id="whatif-scored")
    parts = dict(save_tree=save_tree, tree_html=tree_html, swap=swap, prefix=prefix, go_prefix=go_prefix, mine=mine,
                 go_mine=go_mine)
    return dict(beam=beam), dict(tree=tree, position=position, candidate=candidate, swapped=swapped,
                                 prefixed=prefixed, scored=scored), parts


def _wire_whatifs(tab, p, lang):
    """The tree's download and the three what-ifs: each runs the model once, in the page's language, and writes
    its own result (one what-if leaves the others' results as they are)."""
    o, state, model = tab.outputs, tab.state, dict(api_visibility="private", concurrency_id="model")
    p["save_tree"].click(in_language(tree_file), None, p["tree_html"],
                         inputs_kwargs=dict(ins=state, beam=tab.controls["beam"], lang=lang), **model)
    o["position"].input(candidates_update, [state, o["position"]], o["candidate"], api_visibility="private")
    p["swap"].click(in_language(swap_word), None, o["swapped"],
                    inputs_kwargs=dict(ins=state, position=o["position"], candidate=o["candidate"], lang=lang), **model)
    gr.on([p["go_prefix"].click, p["prefix"].submit], in_language(force_prefix), None, o["prefixed"],
          inputs_kwargs=dict(ins=state, prefix=p["prefix"], lang=lang), **model)
    gr.on([p["go_mine"].click, p["mine"].submit], in_language(score_mine), None, o["scored"],
          inputs_kwargs=dict(ins=state, english=p["mine"], lang=lang), **model)


def build(page, state, lang):
    """Lay out the tab and wire its events; returns its Tab (app/views.py), whose views each new translation draws
    (app/ui.py). Its opening and its beam size may search: they wait for the model."""
    with gr.Tab(L("ui.tab.whatif"), id="whatif") as tab:
        controls, outputs, parts = _layout()
    view = Tab(WHERE, VIEWS, controls, outputs, page, lang, state).wire(
        tab, concurrency_id="model")
    _wire_whatifs(view, parts, lang)
    return view
