"""What the page needs from Gradio beyond its public API, in one place (tests/test_gradio_adapter.py runs each
against a real gr.Blocks, so that a Gradio upgrade that changes them fails there first).

- `forget_session`: Gradio has no public call that drops a session's state. It keeps a closed page's state for
  an hour in case the page reconnects, in the app's state holder (`demo.state_holder`: `delete_state`, and its
  `session_data` and `time_last_used` records), which its own hourly expiry empties the same way.
- `tab_nesting`: Gradio has no public list of a page's tabs. The page's blocks (`demo.blocks`, by id) and each
  block's `parent` give every tab and the tabs it sits in, which the page's links name.
- `static_url`: the address under which Gradio serves a file registered with gr.set_static_paths (its file
  route, /gradio_api/file=), which a page inside an iframe must write out itself.
- `LOCALE_JS` (app/page/gradio-core.js): Gradio's front end has no public call that changes the page's language
  after it loads (its own settings panel does it). Its locale store is set by `changeLocale`, exported by the front
  end's core module (assets/core-<hash>.js); the page imports that module again (the same instance) to call it.
  Tab buttons carry their tab's id (`data-tab-id`) and are relabelled by the page, since Gradio redraws a button's
  label only when the button is next drawn.
- The page's language before the first paint (app/page/head.js): Gradio picks its locale from the browser's
  language (navigator.language) in its i18n setup, before any script of the page runs, then adds the `head` of
  launch() to the document and only then draws the app; its locale store writes <html lang> once a locale is
  loaded; its status tracker writes "processing |" and "queue: i/n |" in English in every locale; its plot
  component loads plotly by setting window.Plotly, and plotly's toolbar buttons carry their tooltip in
  `data-title`. FRONTEND_FACTS names each, for the test that checks them.
- `idle_js` (app/page/idle.js): plotly (4.6 MB of script) is inside the front end's plot chunk
  (assets/PlotlyPlot-<hash>.js), which Gradio imports when the page first shows a figure, and which sets
  window.Plotly as it runs. Parsing and running it took about 2.4 s in headless Chromium on this 2-core machine,
  paid by whichever tab first showed a figure (python -m tools.bench --tabs). The page imports the same chunk (the
  same URL, so the same module instance Gradio gets later) once it has been quiet for a moment.
- `leave_skipped_alone`: Gradio answers every update of an output, a gr.skip() included, by making a new component
  from the old one's arguments and keeping it in the session, with its config written again (Blocks.postprocess_data).
  An event that returns a dict of the outputs it changes has every other output filled with gr.skip(), so the
  listeners a translation runs (most of their tabs closed, all skipped) spent 55-75 ms of the server's time on
  copies (7.5 ms now: docs/performance.md), and each session kept them. The outputs
  a skip leaves as they are are taken out of the call and their skip put back in its answer, as Gradio writes it
  (with the component the session has, not a new one).
  (app.common.fitted_plot's mark is among a plot's arguments, so that a copy Gradio makes otherwise keeps it.)
- `STATUS_JS` (app/page/quiet-statuses.js): Gradio's page keeps a loading status for every component that any
  event so far has written (its LoadingStatus class, exported by assets/statustracker-<hash>.js, holds them in
  `current`), and after each status message of any event it applies every one of them again
  (`update_loading_stati_state` enumerates `current` and calls the page tree's `update_state` for each). Each of
  those looks the component up in the tree and takes a snapshot of its data: about 260 ms of a click late in a
  session, when nothing at all is drawn (docs/performance.md). The page imports that module (the same URL as
  Gradio's import, so the same class) and has `current` enumerate, outside the class's own `update`, only the
  statuses that changed since they were last enumerated: a status applied already is not applied again.
- `PLOTLY_LAZY_JS`, `PLOTLY_RESIZE_JS` and `PHONE_WIDTH_JS` (app/page/plotly-lazy.js, plotly-resize.js,
  phone-width.js): Gradio's plot component draws each figure it gets with `Plotly.react(div, data, layout, config)`
  on the plotly it set as window.Plotly, then calls `Plotly.Plots.resize` (FRONTEND_FACTS names that call); the page
  wraps both there (app/page/head.js). The component that draws is mounted anew for every figure the plot is given
  (a `{#key}` block on a count of its values, in assets/Plot-<hash>.js), and the old one draws the new figure first,
  into its element, which the new mounting takes out of the page in a microtask: the page's react draws in a
  microtask, into an element still in the page (each figure drawn once, not twice).

Every script of the page that patches Gradio's front end, or reads what it writes that no public API says, is
named in FRONTEND_FACTS beside what it relies on, as it stands in the installed front end's code;
tests/test_gradio_adapter.py fails, naming the fact and the script, once a Gradio no longer has one.
"""
import copy
import re
from pathlib import Path
from typing import NamedTuple

import gradio as gr

from . import page as page_js


def forget_session(demo, session_hash):
    """Drop a session's state and Gradio's record of it, now (the demo must be launched or its app created)."""
    holder = demo.state_holder
    holder.delete_state(session_hash)
    holder.session_data.pop(session_hash, None)
    holder.time_last_used.pop(session_hash, None)


def tab_nesting(demo):
    """Every gr.Tab of the page with the tabs it sits in: (tab, [outermost tab, ..., tab])."""
    out = []
    for block in demo.blocks.values():
        if isinstance(block, gr.Tab):
            path, parent = [block], block.parent
            while parent is not None:
                if isinstance(parent, gr.Tab):
                    path.insert(0, parent)
                parent = parent.parent
            out.append((block, path))
    return out


def _skip(value):
    return isinstance(value, dict) and value == gr.skip()


def leave_skipped_alone():
    """Have gr.Blocks.postprocess_data leave an output that an event skips as it is, without making a new
    component for it (see the module's docstring); once per process."""
    from gradio.blocks import Block, Blocks, convert_component_dict_to_list, postprocess_update_dict
    plain = Blocks.postprocess_data
    if getattr(plain, "plain", None) is not None:
        return

    async def postprocess_data(self, block_fn, predictions, state):
        outputs = list(block_fn.outputs)
        if isinstance(predictions, dict) and predictions and all(isinstance(k, Block) for k in predictions):
            predictions = convert_component_dict_to_list(outputs, predictions)
        elif _skip(predictions) and len(outputs) > 1:
            predictions = [gr.skip()] * len(outputs)
        if (block_fn.batch or not block_fn.postprocess or getattr(block_fn, "is_validator_function", False)
                or not isinstance(predictions, (list, tuple))
                or len(predictions) != len(outputs) or len(outputs) < 2):
            return await plain(self, block_fn, predictions, state)
        kept = [i for i, (block, value) in enumerate(zip(outputs, predictions))
                if not (_skip(value) and not block.stateful)]
        if len(kept) == len(outputs):
            return await plain(self, block_fn, predictions, state)
        # a skip as Gradio writes it for its component (a gr.HTML's carries its props), with no component made
        answer = [None if i in kept else postprocess_update_dict(
            block=state.get(block._id, block) if state is not None else block, update_dict=gr.skip())
            for i, block in enumerate(outputs)]
        if kept:
            some = copy.copy(block_fn)
            some.outputs = [outputs[i] for i in kept]
            values = [predictions[i] for i in kept]
            for i, value in zip(kept, await plain(self, some, values if len(kept) > 1 else values[0], state)):
                answer[i] = value
        return answer
    postprocess_data.plain = plain
    Blocks.postprocess_data = postprocess_data


def static_url(path):
    """The URL under which Gradio serves a file registered with gr.set_static_paths."""
    return f"/gradio_api/file={path}"


# The page's scripts that patch what Gradio's front end does (app/page/, each file's comment says what it does and
# why), run by the page's head (app/page/head.js). The Gradio they rely on is FRONTEND_FACTS.
PLOTLY_RESIZE_JS = page_js.function("plotly-resize")  # Plots.resize answered at once for a plot of the same size
NEAR_PX = 300  # a figure waits to be drawn until its plot is this near the screen
PLOTLY_LAZY_JS = page_js.function("plotly-lazy", {"near": NEAR_PX})  # Plotly.react deferred off screen
PHONE_WIDTH_JS = page_js.function("phone-width")  # Plotly.react gives a long sentence's figure its phone width
STATUS_JS = page_js.function("quiet-statuses")  # LoadingStatus lists to Blocks only the statuses that changed


def status_chunk():
    """The file name of the front end's statustracker chunk (STATUS_JS), or None if there is not exactly one."""
    found = [p.name for p in frontend_assets() if re.fullmatch(r"statustracker-[\w-]+\.js", p.name)]
    return found[0] if len(found) == 1 else None


# In the page (app/page/head.js): `gradioCore()` resolves to Gradio's front-end core module, or null.
LOCALE_JS = page_js.function("gradio-core")


FRONTEND = Path(gr.__file__).parent / "templates" / "frontend"


def frontend_assets():
    """The installed Gradio front end's JavaScript files (its assets/*.js)."""
    return sorted((FRONTEND / "assets").glob("*.js"))


class Fact(NamedTuple):
    """What the page relies on in Gradio's front end: `text` is in a file of it named like `file` (its assets/*.js,
    or index.html), for the page's scripts `used_by`."""
    what: str
    file: str
    text: str
    used_by: tuple


_HEAD, _PLOTS, _STATUS = ("app/page/head.js",), ("app/page/plotly-lazy.js", "app/page/plotly-resize.js",
                                                  "app/page/phone-width.js"), ("app/page/quiet-statuses.js",)
_QUIET = ("app/page/idle.js", "app/page/learn-where.js", "app/page/head.js")
FRONTEND_FACTS = (
    Fact("the locale read from the browser", r"runtime-[\w-]+\.js", "window.navigator.language", _HEAD),
    Fact("<html lang> set from the locale", r"runtime-[\w-]+\.js", "setAttribute(`lang`", _HEAD),
    Fact("the head added before the app is drawn", r"Index-[\w-]+\.js", ".head),R(", _HEAD),
    Fact("changeLocale, exported by the core module", r"core-[\w-]+\.js", " as changeLocale",
         ("app/page/gradio-core.js", *_HEAD)),
    Fact("tab buttons that carry their tab's id", r"Index-[\w-]+\.js", "`data-tab-id`", (*_HEAD, "app/page/link.js")),
    Fact("the status tracker's English", r"statustracker-[\w-]+\.js", "processing |", _HEAD),
    Fact("the status tracker's queue line", r"statustracker-[\w-]+\.js", "`queue: ${", _HEAD),
    Fact("the status tracker's element, by its test id", r"statustracker-[\w-]+\.js",
         '<div data-testid="status-tracker">', _QUIET),
    Fact("a status tracker out of sight has the class `hide`", r"statustracker-[\w-]+\.js", "hide:", _QUIET),
    Fact("the page's entry script, a module in assets/", r"index\.html",
         '<script type="module" crossorigin src="./assets/', (*_HEAD, "app/page/idle.js")),
    Fact("plotly set on window", r"PlotlyPlot-[\w-]+\.js", "window.Plotly=e", (*_HEAD, *_PLOTS, "app/page/idle.js")),
    Fact("each react followed by a resize", r"PlotlyPlot-[\w-]+\.js",
         ".react(g,e.data,e.layout,e.config),p.default.Plots.resize(g)", _PLOTS),
    # (plotly-lazy.js draws in a microtask, when the element that the old plot component was given is gone)
    Fact("a new plot component for each new figure: its values counted", r"Plot-[\w-]+\.js",
         "t!==c(T)||n!==c(E))&&p(b,c(b)+1)", _PLOTS),
    Fact("a new plot component for each new figure: a {#key} block on that count", r"Plot-[\w-]+\.js",
         "t(l(i),()=>c(b),", _PLOTS),
    Fact("the loading statuses' class, exported", r"statustracker-[\w-]+\.js", "LoadingStatus:()=>", _STATUS),
    Fact("the statuses kept in `current`, updated by `update`", r"statustracker-[\w-]+\.js",
         "update(e){for(let[t,n]of Object.entries(this.current))", _STATUS),
    Fact("every status applied again after each message", r"Blocks-[\w-]+\.js",
         "Object.entries(this.loading_stati.current).map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t}",
         _STATUS),
    Fact("the statuses' class as Blocks imports it", r"Blocks-[\w-]+\.js", "from\"./statustracker-", _STATUS),
    # how the page's scripts are handed over (app/page/__init__.py): Gradio's public API, as the loader uses it
    Fact("an event's js read as an expression, whose function value is called", r"Blocks-[\w-]+\.js",
         "`return (\\n${", ("app/page/__init__.py",)),
    Fact("js_on_load run as a function of element, trigger, props, server, upload, watch", r"HTML-[\w-]+\.js",
         "Function(`element`,`trigger`,`props`,`server`,`upload`,`watch`,", ("app/page/__init__.py",)),
)


def frontend_files(pattern):
    """The files of the installed front end (its assets/*.js and its pages) whose names match `pattern`."""
    return [p for p in [*frontend_assets(), *sorted(FRONTEND.glob("*.html"))] if re.fullmatch(pattern, p.name)]


def missing_frontend_facts():
    """The FRONTEND_FACTS the installed Gradio no longer has, each said in a line: what, where, and who relies on it."""
    return [f"{f.what}: {f.text!r} is in no file {f.file} of gradio {gr.__version__}'s front end; "
            f"{', '.join(f.used_by)} relies on it" for f in FRONTEND_FACTS
            if not any(f.text in p.read_text(encoding="utf-8", errors="ignore") for p in frontend_files(f.file))]


def plotly_chunk():
    """The file name of the front end's chunk that holds plotly, or None if there is not exactly one."""
    found = [p.name for p in frontend_assets() if re.fullmatch(r"PlotlyPlot-[\w-]+\.js", p.name)]
    return found[0] if len(found) == 1 else None


# A function for launch(js=...), which runs once the app is drawn (app/page/idle.js): once the page is quiet, it
# imports the plot chunk.
QUIET_MS = 1500


def idle_js():
    return page_js.function("idle", {"chunk": plotly_chunk(), "quietMs": QUIET_MS})
