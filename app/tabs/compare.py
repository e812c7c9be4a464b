"""The Compare tab: two models on one sentence, and two sentences on one model.

Two models (A, B): any two of the models this server can open (app/models.py: the page's own, each point of its
training run, the models under EXPLORER_MODELS), or one model against itself with heads switched off in B. Both
translations, each scored under both models, their attention side by side with A - B, and every head ranked by how
much its maps differ (core/analysis/compare.py). Two sentences: an original and an edited copy, and the patching
grid of the encoder (core/analysis/patching.py).

The model runs only on the two buttons (in Gradio's queue, one such event at a time); the result is kept in the
session's state, and every view, the layer, head and token controls included, is drawn from it.
"""
from dataclasses import dataclass

import gradio as gr

from core.analysis.compare import CannotCompare, Comparison, compare
from core.analysis.patching import PatchGrid, patch_grid
from core.instrument import KINDS
from core.words import write

from .. import page as page_js
from ..common import empty_figure, fitted_plot, kind_choices, md_literal
from ..edits import edited_default  # the edited copy the box offers: the Learn path's patching step reads it too
from ..exports import FILES_HIDDEN, download, grid_files, ranking_files, shown_files
from ..figures.compare import (
    RANKED,
    maps_figure,
    model_name,
    patch_figure,
    patch_probs_figure,
    patch_summary,
    ranking_headers,
    ranking_rows,
    scores_figure,
    token_menu,
    translations_html,
)
from ..i18n import L, in_language, text, texts
from ..models import MODELS, model_choices
from ..shared import examples
from ..translating import input_problem
from ..views import Tab, View

_t = texts("compare")


@dataclass(frozen=True, eq=False)
class Pair:
    """The session's results: the last comparison of two models and the last patching grid (None: not yet). Known
    by identity (eq=False): Gradio hashes a state to tell whether an event changed it, and a Comparison has no
    hash; each result is a new Pair."""
    models: Comparison | None = None
    sentences: PatchGrid | None = None


# ---- the model's work (the two buttons) ------------------------------------------------------------------

def parse_heads(typed, layers, heads):
    """Heads typed as "cross 1 3; encoder 0 5" (kind, layer, head; separated by ';' or ','): a list of triples, or
    a ValueError that says what is wrong."""
    out = []
    for part in (typed or "").replace(",", ";").split(";"):
        words = part.split()
        if not words:
            continue
        if len(words) != 3 or words[0] not in KINDS or not all(w.isdigit() for w in words[1:]):
            raise ValueError(_t("off.bad", part=part.strip()[:40]))
        kind, layer, head = words[0], int(words[1]), int(words[2])
        if layer >= layers or head >= heads:
            raise ValueError(_t("off.range", part=part.strip()[:40], layers=layers - 1, heads=heads - 1))
        out.append((kind, layer, head))
    return out


class Unopened(Exception):
    """A model the page could not open: `message` says which and why, in the event's language."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


def opened(name):
    """The Translator of the model `name`, or Unopened: a name this server does not have (a link's, or a directory
    gone since the page was built), or a directory whose files cannot be read (missing, damaged, half copied)."""
    if not isinstance(name, str) or name not in MODELS.names():
        raise Unopened(_t("status.no-model", name=md_literal(str(name)[:100])))
    try:
        return MODELS.get(name)
    except Exception:  # noqa: BLE001 (any file's failure: OSError, a bad config's ValueError, safetensors' own)
        where = MODELS.sources().get(name, (name, None))[0]
        raise Unopened(_t("status.unreadable", name=md_literal(name), where=md_literal(str(where)))) from None


def why(e):
    """What a CannotCompare says, in the event's language (a stray ValueError's own text otherwise)."""
    return md_literal(write(e.said, text) if isinstance(e, CannotCompare) else str(e) or type(e).__name__)


def run_compare(a, b, sentence, off, pair):
    """Compare models `a` and `b` on `sentence` (heads `off` switched off in B). Returns the new Pair, a status
    line, and the layer and head menus over the heads both models have; on bad input the Pair is the old one and
    the status says what is wrong."""
    pair = pair or Pair()
    keep = (pair, gr.update(), gr.update())
    problem = input_problem(sentence)
    if problem:
        return (*keep[:1], problem, *keep[1:])
    try:
        ta, tb = opened(a), opened(b)
        heads_off = parse_heads(off, tb.config["N"], tb.config["h"])
        if a == b and not heads_off:
            return (*keep[:1], _t("status.same-model"), *keep[1:])
        c = compare(ta, tb, sentence.strip(), heads_off_b=heads_off, names=(a, b))
    except Unopened as e:
        return (*keep[:1], e.message, *keep[1:])
    except (ValueError, KeyError, OSError) as e:
        return (*keep[:1], _t("status.failed", error=why(e)), *keep[1:])
    layers, heads = c.shapes["shared"]
    status = _t("status.done", a=md_literal(model_name(a)), b=md_literal(model_name(b)))
    if c.by_words:
        status += " " + _t("status.by-words")
    if c.shapes["a"] != c.shapes["b"]:
        status += " " + _t("status.shapes", layers=layers, heads=heads)
    return (Pair(c, pair.sentences), status, gr.update(choices=list(range(layers))),
            gr.update(choices=list(range(heads))))


# how many of the copies the page made in a session follow_original remembers as its own
COPIES_KEPT = 4


def follow_original(original, edited, made, model):
    """The edited copy follows the original while its box holds a copy the page made (`made`, the last few, newest
    last): the original's own copy (app/edits.py edited_default, cut by `model`'s tokenizer) goes to the box and
    joins `made`. A copy the reader wrote stays; so does everything where the original is not a sentence the page
    takes or the model cannot be opened (the Patch button says why). It runs as the original's box is left and,
    again, as the first step of the Patch button's event, whose patching reads the boxes after it (`.then`). A click
    leaves the box too, so both run at once from the same boxes: the step that comes second may find the new copy
    already made, with the box still holding an older one of the page's, and writes the new copy itself, so the
    patching after it never reads the old sentence's copy."""
    if edited not in made or input_problem(original):
        return gr.skip(), gr.skip()
    try:
        copy = edited_default(original.strip(), opened(model).tokenizer)
    except Unopened:
        return gr.skip(), gr.skip()
    if copy == edited:
        return gr.skip(), gr.skip()
    return copy, (*[m for m in made if m != copy], copy)[-COPIES_KEPT:]


def run_patch(model, original, edited, pair):
    """The patching grid of `original` and `edited` on `model`. Returns the new Pair, a status line and the token
    menu; on bad input the Pair is the old one and the status says what is wrong."""
    pair = pair or Pair()
    problem = input_problem(original) or input_problem(edited)
    if problem:
        return pair, problem, gr.update()
    try:
        grid = patch_grid(opened(model), original.strip(), edited.strip())
    except Unopened as e:
        return pair, e.message, gr.update()
    except (ValueError, KeyError, OSError) as e:
        return pair, _t("status.not-patched", error=why(e)), gr.update()
    if not grid.changed:
        status = _t("patch.status.same")
    else:
        status = _t("patch.status.done", model=md_literal(model))
    return Pair(pair.models, grid), status, gr.update(choices=token_menu(grid), value="all")


# ---- views (drawn from the session's Pair, never running the model) ----------------------------------------

def _models(pair):
    return pair.models if pair is not None else None


def result_view(pair):
    c = _models(pair)
    if c is None:
        return dict(table=_t("none"), scores=empty_figure(_t("none")))
    return dict(table=translations_html(c), scores=scores_figure(c))


def maps_view(pair, kind, layer, head):
    """A's, B's and A - B's map of one head, as one figure (app.figures.compare.maps_figure)."""
    c = _models(pair)
    if c is None:
        return empty_figure(_t("none"))
    return maps_figure(c, kind if kind in KINDS else "cross", layer, head)


def ranking_view(pair):
    c = _models(pair)
    rows = [] if c is None else ranking_rows(c)
    return gr.update(value=dict(headers=ranking_headers(), data=rows or [["", "", "", "", ""]]))


def patch_view(pair):
    g = pair.sentences if pair is not None else None
    if g is None:
        return dict(patch_summary=_t("patch.none"), patch_probs=empty_figure(_t("patch.none")))
    return dict(patch_summary=md_literal(patch_summary(g)), patch_probs=patch_probs_figure(g))


def grid_view(pair, token):
    g = pair.sentences if pair is not None else None
    return empty_figure(_t("patch.none")) if g is None else patch_figure(g, token)


def ranking_numbers(pair):
    """The head ranking (every shared head) as CSV and .npz (app/exports.py); hidden before a comparison."""
    c = _models(pair)
    return shown_files(None if c is None else ranking_files(c))


def grid_numbers(pair):
    """The patching grid as CSV and .npz (app/exports.py); hidden before a grid."""
    g = pair.sentences if pair is not None else None
    return shown_files(None if g is None else grid_files(g))


def files_cleared(pair):
    """A new result's file list: hidden until its button writes the files (an earlier result's go)."""
    return FILES_HIDDEN


WHERE = ("compare",)
VIEWS = [View("compare/result", (*WHERE, "models"), result_view, outputs=("table", "scores"),
              blank=lambda: result_view(None)),
         View("compare/maps", (*WHERE, "models"), maps_view, outputs=("maps",),
              uses=("kind", "layer", "head"), blank=lambda kind, layer, head: maps_view(None, kind, layer, head)),
         View("compare/ranking", (*WHERE, "models"), ranking_view, outputs=("ranking",),
              blank=lambda: ranking_view(None)),
         View("compare/patch", (*WHERE, "sentences"), patch_view, outputs=("patch_summary", "patch_probs"),
              blank=lambda: patch_view(None)),
         View("compare/grid", (*WHERE, "sentences"), grid_view, outputs=("patch_grid",), uses=("token",),
              blank=lambda token: grid_view(None, token)),
         View("compare/ranking-files", (*WHERE, "models"), files_cleared, outputs=("ranking_files",),
              blank=dict(ranking_files=FILES_HIDDEN)),
         View("compare/grid-files", (*WHERE, "sentences"), files_cleared, outputs=("grid_files",),
              blank=dict(grid_files=FILES_HIDDEN))]


def results_of(ins):
    """The tab's results for a translation's sentence, as its buttons would make them (for tools.i18n_report, which
    draws every view): the page's own model against its run's first epoch, and the sentence beside its edited copy."""
    tr, sentence = MODELS.get(), ins.source
    pair = Pair()
    lesson = _lesson_pair()
    if lesson is not None:
        pair = Pair(compare(MODELS.get(lesson[0]), tr, sentence, names=lesson))
    edited = edited_default(sentence, tr.tokenizer)
    return Pair(pair.models, patch_grid(tr, sentence, edited) if edited != sentence else None)


def linked_models(request: gr.Request):
    """The page-load callback: the models a link names (?a=...&b=..., the Compare tab's A and B), each one this
    server can open; a name it cannot is said in the status line and its menu left as it is."""
    params = dict(request.query_params) if request is not None else {}
    out, wrong = [], []
    for side in ("a", "b"):
        name = params.get(side)
        if name is None:
            out.append(gr.skip())
            continue
        try:
            out.append(MODELS.check(name))
        except ValueError as e:
            out.append(gr.skip())
            wrong.append(md_literal(str(e)))
    return (*out, " ".join(wrong) if wrong else gr.skip())


def open_head_of(pair, evt: gr.SelectData):
    """A row of the ranking opens its head in the maps above: (kind, layer, head), or no change."""
    c = _models(pair)
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if c is None or not isinstance(row, int) or not 0 <= row < min(len(c.ranking), RANKED):
        return gr.update(), gr.update(), gr.update()
    kind, layer, head, _ = c.ranking[row]
    return kind, layer, head


# ---- layout and events -----------------------------------------------------------------------------------

def _lesson_pair():
    """(A, B) of the lesson on the page's own run: its first epoch against its last point; None without a run."""
    names = MODELS.names()
    points = [n for n in names if n.startswith(f"{MODELS.default}@")]
    first = next((n for n in points if n.endswith("@epoch-1")), points[0] if points else None)
    return (first, points[-1]) if points else None


def _models_tab():
    names, lesson = MODELS.names(), _lesson_pair()
    with gr.Tab(L("ui.compare.tab.models"), id="models") as tab:
        gr.Markdown(L("ui.compare.models.intro"))
        with gr.Row():
            a = gr.Dropdown(model_choices(names), value=lesson[0] if lesson else names[0], label=L("ui.compare.a"), elem_id="cmp-a")
            b = gr.Dropdown(model_choices(names), value=lesson[1] if lesson else names[0], label=L("ui.compare.b"), elem_id="cmp-b")
        off = gr.Textbox(label=L("ui.compare.off"), placeholder=L("ui.compare.off-example"), max_lines=1,
                         elem_id="cmp-off")
        sentence = gr.Textbox(value=examples()[0], label=L("ui.compare.sentence"), max_lines=3, elem_id="cmp-text")
        with gr.Row():
            run = gr.Button(L("ui.compare.run"), variant="primary", elem_id="cmp-run")
            lesson_button = gr.Button(L("ui.compare.lesson"), visible=lesson is not None, elem_id="cmp-lesson")
        status = gr.Markdown(elem_id="cmp-status")
        table = gr.HTML(elem_id="cmp-table")
        scores = fitted_plot(elem_id="cmp-scores")
        with gr.Row():
            kind = gr.Radio(kind_choices(long=True), value="cross", label=L("ui.attention.kind"), elem_id="cmp-kind")
            layer = gr.Dropdown(list(range(MODELS.get().config["N"])), value=0, label=L("ui.layer"), elem_id="cmp-layer")
            head = gr.Dropdown(list(range(MODELS.get().config["h"])), value=0, label=L("ui.head"), elem_id="cmp-head")
        with gr.Row(equal_height=False):  # the ranking beside the maps its rows open; below them on a phone
            maps = fitted_plot(elem_id="cmp-maps", scale=3, min_width=340)
            with gr.Column(scale=2, min_width=340):
                gr.Markdown(L("ui.compare.ranking"))
                ranking = gr.Dataframe(interactive=False, elem_id="cmp-ranking", wrap=True)
                ranking_button, ranking_files = download("ui.compare.ranking-numbers", "cmp-ranking-numbers")
    parts = dict(a=a, b=b, off=off, sentence=sentence, run=run, lesson=lesson_button, status=status,
                 numbers=ranking_button)
    outputs = dict(table=table, scores=scores, maps=maps, ranking=ranking,
                   ranking_files=ranking_files)
    return tab, parts, dict(kind=kind, layer=layer, head=head), outputs, lesson


def _sentences_tab():
    first = examples()[0]
    with gr.Tab(L("ui.compare.tab.sentences"), id="sentences") as tab:
        gr.Markdown(L("ui.compare.sentences.intro"))
        model = gr.Dropdown(model_choices(MODELS.names()), value=MODELS.default, label=L("ui.compare.model"), elem_id="cmp-model")
        original = gr.Textbox(value=first, label=L("ui.compare.original"), max_lines=3, elem_id="cmp-original")
        made = edited_default(first, MODELS.get().tokenizer)
        edited = gr.Textbox(value=made, label=L("ui.compare.edited"), max_lines=3, elem_id="cmp-edited")
        made = gr.State((made,))  # the edited copies the page made, newest last, which follow the original
        run = gr.Button(L("ui.compare.patch"), variant="primary", elem_id="cmp-patch")
        status = gr.Markdown(elem_id="cmp-patch-status")
        summary = gr.Markdown(elem_id="cmp-patch-summary")
        probs = fitted_plot(elem_id="cmp-patch-probs")
        token = gr.Dropdown([(L("ui.compare.all-tokens"), "all")], value="all", label=L("ui.compare.token"),
                            elem_id="cmp-token")
        grid = fitted_plot(elem_id="cmp-grid")
        gr.Markdown(L("ui.compare.grid.read"))
        grid_button, grid_files = download("ui.compare.grid-numbers", "cmp-grid-numbers")
    parts = dict(model=model, original=original, edited=edited, made=made, run=run, status=status,
                 numbers=grid_button)
    return tab, parts, dict(token=token), dict(patch_summary=summary, patch_probs=probs, patch_grid=grid,
                                               grid_files=grid_files)


def build(demo, page, lang):
    """Lay out the tab and wire its events. Returns its Tab (app/views.py): its views read the session's Pair, not
    the translation, so a new translation leaves them alone (app/ui.py wires its language)."""
    with gr.Tab(L("ui.tab.compare"), id="compare") as top:
        state = gr.State(None)  # inside the tab: a sibling of the tabs would shift the front end's count of them
        gr.Markdown(L("ui.compare.intro"))
        with gr.Tabs() as inner:
            models_tab, m, m_controls, m_outputs, lesson = _models_tab()
            sentences_tab, s, s_controls, s_outputs = _sentences_tab()
    tab = Tab(WHERE, VIEWS, {**m_controls, **s_controls}, {**m_outputs, **s_outputs}, page, lang, state,
              more=dict(tabs=inner, results_of=results_of))
    work = dict(api_visibility="private", concurrency_id="model", concurrency_limit=1)
    comparing = dict(fn=in_language(run_compare), inputs=None,
                     outputs=[state, m["status"], m_controls["layer"], m_controls["head"]],
                     inputs_kwargs=dict(a=m["a"], b=m["b"], sentence=m["sentence"], off=m["off"], pair=state, lang=lang),
                     show_progress_on=[m["status"]], **work)
    m["run"].click(**comparing)  # its views follow the state it sets (app/views.py)
    if lesson is not None:
        m["lesson"].click(lambda: (*lesson, ""), None, [m["a"], m["b"], m["off"]], api_visibility="private").then(
            **comparing)
    # the edited copy follows the original as its box is left, and as the Patch button's first step, whose patching
    # then reads the boxes as that step left them
    following = dict(fn=follow_original, inputs=[s["original"], s["edited"], s["made"], s["model"]],
                     outputs=[s["edited"], s["made"]], api_visibility="private", show_progress="hidden")
    s["original"].blur(**following)
    s["run"].click(**following).then(
        in_language(run_patch), None, [state, s["status"], s_controls["token"]],
        inputs_kwargs=dict(model=s["model"], original=s["original"], edited=s["edited"], pair=state, lang=lang),
        show_progress_on=[s["status"]], **work)
    # each result's numbers as files, written on a click from the session's Pair
    m["numbers"].click(ranking_numbers, [state], m_outputs["ranking_files"], api_visibility="private")
    s["numbers"].click(grid_numbers, [state], s_outputs["grid_files"], api_visibility="private")
    demo.load(linked_models, None, [m["a"], m["b"], m["status"]], api_visibility="private")
    gr.on([m["a"].change, m["b"].change], None, [m["a"], m["b"]], None, js=page_js.function("record-models"))

    # a control the ranking sets redraws on the reader's own moves only (its change events would carry the others'
    # old values); the ranking's click sets all three, then asks the tab to draw. Its views draw from the session's
    # Pair and never wait for the model (the buttons show their progress on the status lines), so no output is
    # covered while they draw: covering its nine outputs (the ranking's table, the other sub-tab's plots) took the
    # page ~150 ms of every head move, each of them re-rendered as its status came and went
    tab.wire(top, {"models": models_tab, "sentences": sentences_tab}, by_hand=("kind", "layer", "head"),
             show_progress_on=[])
    m_outputs["ranking"].select(open_head_of, [state], [m_controls["kind"], m_controls["layer"], m_controls["head"]],
                                api_visibility="private").then(**tab.redraw())
    return tab
