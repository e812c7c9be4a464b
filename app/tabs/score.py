"""The Score tab: your own parallel set, pasted (German and English lines, or one TSV) or uploaded (two files or
one TSV), translated in batches and scored with sacreBLEU: corpus BLEU, chrF and TER with their signatures, and each
sentence's own chrF in a table, worst first; a click on a row opens that pair in every tab, its reference beside
the translation.

One implementation with the command line (core/evaluate.py): the same reading and checks (`read_pairs`, its
`BadPairs` said in the page's language), the same length-sorted batches (`translated_batches`) and the same figures
(`report`). The set is translated by a generator that yields after each batch: the status line counts the pairs
translated (Gradio shows only the seconds beside it: its progress overlay would cover the count), the Cancel button
stops it there and says so on a line of its own, and other events run beside it (one set at a time on the server, concurrency_id
"score", outside the model's line of one: translations go on meanwhile). A bad input is one message and nothing
is run. How many pairs at a time: app/hosting.py (fewer on a public Space).
"""
import functools
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.decode import DECODING_LIMITS
from core.evaluate import BadPairs, read_pairs, report, text_of, translated_batches
from core.words import Said, said, write

from .. import page as page_js
from ..common import MAX_CHARS, clamp, md_literal
from ..exports import FILES_HIDDEN, download, scored_files, shown_files
from ..figures.score import summary_markdown, table_headers, table_rows
from ..hosting import ON_SPACE, score_pairs_max
from ..i18n import L, in_language, speaking, text, texts
from ..shared import chosen
from ..views import Tab, View

_t = texts("score")
BATCH = 64  # pairs a batch: core.evaluate's default, so that the page and the command line decode alike


@dataclass(frozen=True, eq=False)
class Scored:
    """A scored set: the pairs, each translation (text and ids), each sentence's chrF and the report. Known by
    identity (eq=False): its state's change is a trigger of the tab's listener, and Gradio hashes a watched state's
    value after each event (a hash of its lists would raise)."""
    srcs: list
    refs: list
    hyps: list
    ids: list
    chrf: list
    result: dict
    model: str = ""  # the name of the model that translated them (app.models.MODELS)


# ---- reading the input ----------------------------------------------------------------------------------

def _texts_of(german, english, files, most):
    """(source text, reference text or None for a TSV) from the boxes or the uploaded files (which win); BadPairs
    for a file that is not text, a file too large for `most` pairs, or another number of files than one or two."""
    paths = [Path(f if isinstance(f, str) else getattr(f, "name", f)) for f in (files or [])]
    if not paths:
        german, english = german or "", english or ""
        tsv = not english.strip() and "\t" in german
        return german, None if tsv else english
    if len(paths) > 2:
        raise BadPairs(_said("files", n=len(paths)))
    biggest = 4 * 2 * MAX_CHARS * most  # UTF-8 of `most` pairs of the longest sentences: more is no set we take
    for p in paths:
        if p.stat().st_size > biggest:
            raise BadPairs(_said("size", name=p.name, mb=f"{p.stat().st_size / 1e6:.1f}", most=most))
    if len(paths) == 2 and paths[0].name.lower().split(".")[-1:] == ["en"]:
        paths.reverse()  # named *.de and *.en: German first whatever the order they came in
    texts_ = [text_of(p.read_bytes(), name=p.name) for p in paths]
    return (texts_[0], None) if len(texts_) == 1 else tuple(texts_)


def _said(key, **fields):
    return said(f"score.bad.{key}", **fields)


def escaped(what):
    """What core says, its words that came from the reader (a file's name) made literal for Markdown."""
    if isinstance(what, Said):
        return Said(what.key, {k: escaped(v) for k, v in what.fields.items()})
    return md_literal(what) if isinstance(what, str) else what


def check(german, english, files):
    """The pairs to score, or BadPairs: the boxes or files read and every line checked (core.evaluate.read_pairs,
    at most score_pairs_max() pairs, MAX_CHARS characters a sentence)."""
    most = score_pairs_max()
    src, ref = _texts_of(german, english, files, most)
    return read_pairs(src, ref, most=most, longest=MAX_CHARS)


# ---- scoring (the button's generator) ---------------------------------------------------------------------

def score_set(german, english, files, beam, previous, model=None):
    """Translate and score the set with the model the header chose (`model`): yields (the Scored to keep, the status
    line) once the set is read and after each batch, the status saying how far it got; then the result. A bad input: one message, the last
    result kept, nothing run."""
    try:
        pairs = check(german, english, files)
    except BadPairs as e:
        yield previous, write(escaped(e.what), text)
        return
    tr, beam = chosen(model), clamp(beam, 1, int(DECODING_LIMITS["beam"].hi))
    srcs, refs = (list(side) for side in zip(*pairs))
    ids, done, t0 = [None] * len(srcs), 0, time.perf_counter()
    # at once, before the first batch (a minute of work on a busy machine): the set is read and running
    yield previous, _t("running", done="0", n=f"{len(srcs):,}")
    for idx, outs in translated_batches(tr, srcs, beam=beam, batch_size=BATCH):
        for i, out in zip(idx, outs):
            ids[i] = out
        done += len(idx)
        yield previous, _t("running", done=f"{done:,}", n=f"{len(srcs):,}")  # a cancel stops it here
    hyps = [tr.tokenizer.decode(out) for out in ids]
    result = report(tr, hyps, refs, time.perf_counter() - t0, beam=beam)
    yield Scored(srcs, refs, hyps, ids, result.pop("sentence_chrf"), result, tr.name), _t("done", n=f"{len(srcs):,}")


def cancelled():
    return _t("cancelled")


def clearing(steps):
    """`steps` (a generator function of (Scored, status) pairs) with the Cancel's message line: cleared by the
    first step, left alone by the others."""
    @functools.wraps(steps)
    def run(*args, **kwargs):
        for i, step in enumerate(steps(*args, **kwargs)):
            yield (*step, "" if i == 0 else gr.skip())
    return run


# ---- a pair opened in the explorer ------------------------------------------------------------------------

def open_pair(scored, evt: gr.SelectData):
    """A row's pair as the translation every tab shows: its scored output recorded teacher-forced (no new
    decoding: Translator.inspect with `output`), its reference kept beside it; the German box, the English and the
    Translate tab opened. Nothing changes for a click outside the rows."""
    row = evt.row_value if isinstance(evt.row_value, (list, tuple)) and evt.row_value else None
    number = clamp(row[0], 0, len(scored.srcs)) if row is not None and scored is not None else 0
    if not number:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    i, tr = number - 1, chosen(scored.model or None)  # the model that translated the set: its pieces are its ids
    beam, alpha = scored.result["beam"], scored.result["alpha"]
    src_ids = tr.encode_source(scored.srcs[i])[0]
    t0 = time.perf_counter()
    ins = tr.inspect(scored.srcs[i], output=scored.ids[i], method="beam" if beam > 1 else "greedy", beam=beam,
                     alpha=alpha, max_len=tr.default_max_len(len(src_ids)))
    ins.server_ms, ins.reference = (time.perf_counter() - t0) * 1e3, scored.refs[i]
    return ins, scored.srcs[i], ins.translation, gr.Tabs(selected="translate")


# ---- views (drawn from the tab's Scored, never running the model) -----------------------------------------

def result_view(scored):
    if scored is None:
        return dict(summary="", table=gr.update(value=dict(headers=table_headers(), data=[["", "", "", "", ""]]),
                                                visible=False))
    return dict(summary=summary_markdown(scored),
                table=gr.update(value=dict(headers=table_headers(), data=table_rows(scored)), visible=True))


def limits_view():
    """What the tab takes, with this server's number of pairs."""
    where = _t("where.space" if ON_SPACE else "where.local")
    return _t("limits", most=f"{score_pairs_max():,}", chars=f"{MAX_CHARS:,}", where=where)


WHERE = ("score",)
VIEWS = [View("score/limits", WHERE, limits_view, outputs=("limits",), reads_translation=False),
         View("score/result", WHERE, result_view, outputs=("summary", "table"), blank=lambda: result_view(None)),
         View("score/files", WHERE, lambda scored: FILES_HIDDEN, outputs=("files",), blank=dict(files=FILES_HIDDEN))]


def scored_numbers(scored):
    """The scored set as CSV and .npz (app/exports.py); hidden before one."""
    return shown_files(None if scored is None else scored_files(scored))


def results_of(ins):
    """The tab's result for a translation's sentence, as its button would make it (for tools.i18n_report, which draws
    every view): the sentence scored against its own translation and against a copy of it with a word dropped."""
    words = ins.translation.split()
    refs = [ins.translation, " ".join(words[1:]) or ins.translation]
    with speaking("en"):  # (its status lines, not kept)
        steps = list(score_set(f"{ins.source}\n{ins.source}", "\n".join(refs), None, 1, None))
    return steps[-1][0]


# ---- layout and events ------------------------------------------------------------------------------------

def _layout():
    gr.Markdown(L("ui.score.intro"))
    limits = gr.Markdown(elem_id="score-limits")
    with gr.Row():
        # side by side on a desktop, one above the other on a phone (min_width)
        german = gr.Textbox(label=L("ui.score.german"), lines=6, max_lines=12, elem_id="score-german",
                            placeholder=L("ui.score.german-example"), min_width=300)
        english = gr.Textbox(label=L("ui.score.english"), lines=6, max_lines=12, elem_id="score-english",
                             placeholder=L("ui.score.english-example"), min_width=300)
    files = gr.File(label=L("ui.score.files"), file_count="multiple", type="filepath", elem_id="score-files",
                    file_types=[".txt", ".tsv", ".de", ".en", ".gz"])
    limit = DECODING_LIMITS["beam"]
    beam = gr.Slider(limit.lo, limit.hi, value=1, step=1, label=L("ui.score.beam"), elem_id="score-beam")
    with gr.Row():
        run = gr.Button(L("ui.score.run"), variant="primary", elem_id="score-run")
        stop = gr.Button(L("ui.score.cancel"), elem_id="score-cancel")
    status = gr.Markdown(elem_id="score-status")
    # the Cancel button's message: a line of its own, since a batch that ends as the run is cancelled still writes
    # its progress to the status line, and the two requests reach the server in either order
    stopped = gr.Markdown(elem_id="score-stopped")
    summary = gr.Markdown(elem_id="score-summary")
    table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="score-table", max_height=600,
                         column_widths=["9%", "11%", "27%", "26%", "27%"])
    gr.Markdown(L("ui.score.open"))
    numbers_btn, numbers = download("ui.score.numbers", "score-numbers")
    return (german, english, files, beam), (run, stop, status, stopped, numbers_btn), dict(
        limits=limits, summary=summary, table=table, files=numbers)


def build(translation, top):
    """Lay out the tab and wire its events. `translation` is what the Translate tab's build returned (its page
    record, language and state are the page's), `top` the page's top-level tabs. Its views read the tab's own
    Scored (a gr.State made inside the tab); a click on a row sets the page's translation, the Translate tab's
    German box and English, and opens that tab (the event is the Tab's `pair_opened`); each tab draws the new
    translation as it draws any (app/views.py)."""
    page, state, lang = translation.page, translation.state, translation.lang
    with gr.Tab(L("ui.tab.score"), id="score") as top_tab:
        scored = gr.State(None)  # inside the tab: a sibling of the tabs would shift the front end's count of them
        inputs, (run, stop, status, stopped, numbers_btn), outputs = _layout()
    tab = Tab(WHERE, VIEWS, {}, outputs, page, lang, scored, more=dict(results_of=results_of))
    german, english, files, beam = inputs
    # the run alone clears the Cancel's message, with its first step (a second event clearing it could reach the
    # server after the Cancel and wipe its message); the status line is the run's count, with no tracker over it
    scoring = run.click(in_language(clearing(score_set)), None, [scored, status, stopped],
                        inputs_kwargs=dict(german=german, english=english, files=files, beam=beam, previous=scored,
                                           model=translation.model, lang=lang), concurrency_id="score", concurrency_limit=1,
                        api_visibility="private", show_progress="hidden")
    stop.click(in_language(cancelled), None, stopped, inputs_kwargs=dict(lang=lang), cancels=[scoring],
               api_visibility="private")
    numbers_btn.click(scored_numbers, [scored], outputs["files"], api_visibility="private")
    tab.more["pair_opened"] = opened = outputs["table"].select(
        open_pair, [scored], [state, translation.form[0], translation.results[0], top],
        api_visibility="private", concurrency_limit=1, concurrency_id="model")
    opened.then(None, js=page_js.function("pair-opened"))  # on a phone, the English and its reference in view
    return tab.wire(top_tab)
