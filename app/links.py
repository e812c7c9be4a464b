"""Links to a view: the page's address records the sentence, its decoding settings, the tab on screen and the
attention kind, layer and head; opening such an address restores them.

    http://127.0.0.1:7860/?text=Ein+Hund+läuft.&method=beam&beam=4&tab=attention/all-heads&kind=cross&layer=1
    http://127.0.0.1:7860/?model=shipped@epoch-1&text=Ein+Hund+läuft.

`model` chooses the session's model (the header's menu, app/header.py): a name of app.models.MODELS, else the
page says so and stays on the model it has.

Two halves. In the browser, app/page/link.js (run once when the page loads) keeps the address up to date: the events
that change a recorded value call `explorerLink.set`, and a click on a tab records the tab's path; when the page
opens with a `tab` parameter it clicks that tab (and sub-tab), which draws its views as a click by hand would.
On the server, `open_link` reads the parameters when the page loads and translates the linked sentence with the
linked settings. Everything read from an address is untrusted: the sentence goes through the same limits as
typed text, names must be one of the known ones, numbers are clamped to their controls' ranges, and the tab is
looked up in the list of the page's own tabs, never used as a selector or as markup.
"""
import gradio as gr

from core.decode import DECODING_LIMITS, DEFAULT_METHOD, METHODS
from core.instrument import KINDS

from . import page as page_js
from .common import clamp
from .gradio_adapter import tab_nesting
from .learn_path import STEPS
from .models import MODELS
from .shared import chosen, examples
from .translating import MAX_CHARS, SETTINGS, decoding_settings, translate

HEAD = ("kind", "layer", "head")  # the Attention tab's controls a link records
TEXT_CAP = 4 * MAX_CHARS  # longer than any sentence the app takes: translate() says so; beyond, cut here first


def read_link(params, cfg, default_alpha):
    """The values a link names, each checked: {"text", the six settings, "kind", "layer", "head", "learn"}; a value
    that is missing takes its control's first value, a number is kept to its control's range (DECODING_LIMITS for
    the settings) and an unreadable one takes the lowest."""
    get = params.get
    text = (get("text") or "").strip()[:TEXT_CAP] or examples()[0]
    method = get("method") if get("method") in METHODS else DEFAULT_METHOD
    kind = get("kind") if get("kind") in KINDS else "encoder"
    return {"text": text, "method": method, **decoding_settings({k: get(k) for k in DECODING_LIMITS}, default_alpha),
            "kind": kind, "layer": clamp(get("layer", 0), 0, cfg["N"] - 1), "head": clamp(get("head", 0), 0, cfg["h"] - 1),
            "learn": clamp(get("learn", 1), 1, len(STEPS))}


def link_opener():
    """The page-load callback: the linked sentence translated with the linked settings. Returns, in order, the
    six settings, the English, the status line, the Inspection, the Attention tab's kind, layer and head, and the
    Learn path's progress at the linked step. A setting, head or step the link does not name is left as the
    reader has it (the page shows its first value already, or the reader's since), and where this session has
    translated already (the reader was quicker than the load: it waits its turn behind that translation) the
    load changes nothing. The German boxes show the linked sentence from the start (app/page/link-text.js). Then
    the model: the link's, set in the header's menu, where this server has it (the sentence is translated on it);
    else the name refused with the model kept, the menu's (`model`), for the header's note (app/header.py)."""
    def open_link(previous, progress, model, request: gr.Request):
        if previous is not None:
            return gr.skip()  # every output (app.gradio_adapter.leave_skipped_alone)
        params = dict(request.query_params) if request is not None else {}
        linked = params.get("model")
        known = linked is not None and linked in MODELS.names()
        tr = chosen(linked if known else model)  # its layers, heads and length penalty bound the link's values
        v = read_link(params, tr.config, tr.alpha)
        english, status, ins = translate(v["text"], *(v[k] for k in SETTINGS), previous, tr.name)
        named = {k: v[k] if k in params else gr.skip() for k in (*SETTINGS, *HEAD)}
        step = gr.skip() if "learn" not in params else dict(progress or {"done": []}, step=v["learn"] - 1)
        menu = (linked, None) if known else (gr.skip(), (linked[:TEXT_CAP], tr.name) if linked is not None else gr.skip())
        return (*(named[k] for k in SETTINGS), english, status, ins, *(named[k] for k in HEAD), step, *menu)
    return open_link


def tab_paths(demo):
    """{tab id: path of tab ids from the top ("attention/all-heads")} for every tab of the page."""
    return {str(tab.id): "/".join(str(t.id) for t in path if t.id is not None)
            for tab, path in tab_nesting(demo) if tab.id is not None}


def wire(demo, state, translation, attn, learn, wrong):
    """The page-load event that opens a link (returned, for the events that follow a translation), and the
    events that record the sentence, its settings and the attention head in the address (the model: app/header.py,
    whose state `wrong` holds a link's model that this server does not have)."""
    head = [attn.controls[name] for name in HEAD]
    boxes = [translation.form[0], learn.parts.src]
    demo.load(None, None, boxes, js=page_js.function("link-text", TEXT_CAP))
    linked = demo.load(link_opener(), [state, learn.progress, translation.model],
                       [*translation.form[1:], *translation.results, state, *head, learn.progress,
                        translation.model, wrong],
                       api_visibility="private", concurrency_id="model", show_progress_on=translation.results[:1])
    for event in (translation.translated, linked):
        event.then(None, translation.form, None, js=page_js.function("record-translation"))
    gr.on([c.change for c in head], None, head, None, js=page_js.function("record-head"))
    return linked


def link_script(demo):
    """The page's link script (app/page/link.js), with the page's own tabs."""
    return page_js.function("link", tab_paths(demo))


def page_script(demo, *others):
    """One function for launch(js=...): the link script, then each of `others` (functions as strings)."""
    calls = "".join(f"({f})();\n" for f in (link_script(demo), *others))
    return "() => {\n" + calls + "}"
