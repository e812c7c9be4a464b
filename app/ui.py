"""The page: header, the shared state, and the tabs in order. Each tab is one module of app/tabs/ whose
build() lays the tab out, wires its own events next to its components, and returns its Tab (app/views.py): its
views, its controls and its outputs by name.

What crosses tabs is passed by hand, here: the state (the Inspection of this session's last translation) and
the page record (which tab is open, what each view shows: app/views.py) go to the tabs that read them, and a
tab whose components another tab's event must reach returns them (the Heads tab opens a head in the
Attention tab). Each tab draws its own views, through one listener of its own (app/views.py Tab.wire), on a new
translation, a new language and its own openings and controls alike.
"""
import gradio as gr

from . import header, links, tabs
from .bertviz_views import STATIC_FILES
from .common import EXPORT_AGE_S  # delete_cache: Gradio's copies of the files handed out go after it too
from .gradio_adapter import leave_skipped_alone
from .i18n import L, switch
from .shared import free_closed_sessions, get_translator
from .views import page_state

# A public Space is shared: events wait in one queue of at most QUEUE_SIZE, beyond which a request is told the
# queue is full and to try again; two events run at once (the machine has 2 cores), and of those that run the
# model (translations, the Masks tab's batch) one at a time.
QUEUE_SIZE = 64
CONCURRENCY = 2


def build_demo():
    tr = get_translator()  # loaded once, shared by every session
    gr.set_static_paths(paths=STATIC_FILES)  # jQuery and d3 for bertviz, served from installed packages
    leave_skipped_alone()  # an output an event skips is left as it is, with no new component made for it
    with gr.Blocks(title="Transformer Explorer", delete_cache=(600, EXPORT_AGE_S)) as demo:
        state = gr.State(None)  # the Inspection of this session's last translation
        page = page_state()  # what each view last drew, and the tabs the page shows (app/views.py)
        gr.Markdown(L("ui.intro"))
        model_line = header.line()  # the session's model (app/header.py), chosen beside the language
        with gr.Row(equal_height=True, elem_id="page-choices"):
            lang, model = switch(demo), header.menu()
        wrong = header.wire(demo, model, model_line, gr.Markdown(elem_id="model-note"), lang)
        with gr.Tabs(overflow_behavior="wrap", elem_id="top-tabs") as top:  # a phone: one line, scrolled (style.css)
            built = [learn := tabs.learn.build(page, state, lang), tabs.overview.build(tr.config, page, state, lang, model),
                     translation := tabs.translate.build(demo, page, state, tr.alpha, lang, model),
                     attn := tabs.attention.build(tr.config, page, state, lang, model),
                     tabs.heads.build(tr.config, page, state, top, attn, lang, model), tabs.why.build(page, state, lang),
                     tabs.whatif.build(page, state, lang), tabs.compare.build(demo, page, lang),
                     tabs.score.build(translation, top), tabs.inside.build(tr.config, page, state, lang, model),
                     tabs.masks.build(tr.config, page, lang, model), tabs.positional.build(tr.config, page, lang, model),
                     tabs.training.build(page, lang),
                     # only for a model that ships with its run's history (snapshots/ beside it)
                     *([tabs.timelapse.build(demo, page, state, lang)] if tabs.timelapse.points() else []),
                     tabs.lab.build(page, lang)]
            tabs.engineering.build()
        linked = links.wire(demo, state, translation, attn, learn, wrong)  # a link opened
        tabs.learn.translates(learn, translation, state, lang, linked)  # the Learn tab's box translates as Translate's
        demo.tab_views = built  # each tab's views and controls (tools.i18n_report draws them)
        free_closed_sessions(demo)
    return demo.queue(max_size=QUEUE_SIZE, default_concurrency_limit=CONCURRENCY)

