"""What the page needs from Gradio beyond its public API, in one place (tests/test_gradio_adapter.py runs each
against a real gr.Blocks, so that a Gradio upgrade that changes them fails there first).

- `forget_session`: Gradio has no public call that drops a session's state. It keeps a closed page's state for
  an hour in case the page reconnects, in the app's state holder (`demo.state_holder`: `delete_state`, and its
  `session_data` and `time_last_used` records), which its own hourly expiry empties the same way.
- `tab_nesting`: Gradio has no public list of a page's tabs. The page's blocks (`demo.blocks`, by id) and each
  block's `parent` give every tab and the tabs it sits in, which the page's links name.
- `static_url`: the address under which Gradio serves a file registered with gr.set_static_paths (its file
  route, /gradio_api/file=), which a page inside an iframe must write out itself.
- `LOCALE_JS`: Gradio's front end has no public call that changes the page's language after it loads (its own
  settings panel does it). Its locale store is set by `changeLocale`, exported by the front end's core module
  (assets/core-<hash>.js); the page imports that module again (the same instance) to call it. Tab buttons carry
  their tab's id (`data-tab-id`) and are relabelled by the page, since Gradio redraws a button's label only when
  the button is next drawn.
- The page's language before the first paint (app/i18n.py HEAD_JS): Gradio picks its locale from the browser's
  language (navigator.language) in its i18n setup, before any script of the page runs, then adds the `head` of
  launch() to the document and only then draws the app; its locale store writes <html lang> once a locale is
  loaded; its status tracker writes "processing |" and "queue: i/n |" in English in every locale; its plot
  component loads plotly by setting window.Plotly, and plotly's toolbar buttons carry their tooltip in
  `data-title`. `frontend_facts` names each, for the test that checks them.
- `idle_js`: plotly (4.6 MB of script) is inside the front end's plot chunk
  (assets/PlotlyPlot-<hash>.js), which Gradio imports when the page first shows a figure, and which sets
  window.Plotly as it runs. Parsing and running it took about 2.4 s in headless Chromium on this 2-core machine,
  paid by whichever tab first showed a figure (python -m tools.bench --tabs). The page imports the same chunk (the
  same URL, so the same module instance Gradio gets later) once it has been quiet for a moment. Then it clicks
  the visually hidden button of app.views.wire_ahead, whose event sends the views that read no sentence to tabs
  not yet opened: Gradio keeps a value given to a component that is not mounted and hands it over when its tab
  mounts it (tests/test_browser.py holds the page's events and finds those tabs drawn).
- `leave_skipped_alone`: Gradio answers every update of an output, a gr.skip() included, by making a new component
  from the old one's arguments and keeping it in the session, with its config written again (Blocks.postprocess_data).
  An event that returns a dict of the outputs it changes has every other output filled with gr.skip(), so a
  translation (55 outputs, most of them in tabs not on screen) made about 50 components and spent 48.6 ms of the
  server's time on them, an opened Inside sub-tab 17.8 ms (1.7 and 0.4 ms now), and each session kept the copies. The outputs
  a skip leaves as they are are taken out of the call and their skip put back in its answer, as Gradio writes it
  (with the component the session has, not a new one).
  (app.common.fitted_plot's mark is among a plot's arguments, so that a copy Gradio makes otherwise keeps it.)
- `STATUS_JS`: Gradio's page keeps a loading status for every component that any event so far has written
  (its LoadingStatus class, exported by assets/statustracker-<hash>.js, holds them in `current`), and after each
  status message of any event it applies every one of them again (`update_loading_stati_state` enumerates
  `current` and calls the page tree's `update_state` for each). Each of those looks the component up in the tree
  and takes a snapshot of its data: about 260 ms of a click late in a session, when nothing at all is drawn
  (docs/performance.md). The page imports that module (the same URL as Gradio's import, so the same class) and
  has `current` enumerate, outside the class's own `update`, only the statuses that changed since they were last
  enumerated: a status applied already is not applied again.
- `PLOTLY_LAZY_JS` and `PLOTLY_RESIZE_JS`: Gradio's plot component draws each figure it gets with
  `Plotly.react(div, data, layout, config)` on the plotly it set as window.Plotly, then calls `Plotly.Plots.resize`
  (FRONTEND_FACTS names that call); the page wraps both there (app/i18n.py HEAD_JS).
"""
import copy
import json
import re

import gradio as gr


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


# In the page (app/i18n.py HEAD_JS), once Gradio sets window.Plotly. Gradio's plot component follows every
# Plotly.react with Plotly.Plots.resize, and plotly's resize lays the plot out again 100 ms later whatever its size:
# every figure was drawn twice, the second time after the tab looked open (about 50 ms a figure here). A resize of a
# plot on screen whose container has the size it was drawn at is answered at once; any other (a window that changed
# size, a plot drawn while hidden) goes to plotly's own.
PLOTLY_RESIZE_JS = """const sameSizeResize = (plotly) => {
    const resize = plotly.Plots.resize;
    plotly.Plots.resize = function (gd) {
      const el = typeof gd === 'string' ? document.getElementById(gd) : gd, full = el && el._fullLayout;
      if (el?.__waiting) return Promise.resolve(el);  // not drawn yet (drawWhenNear): nothing to resize
      if (full && el.layout && el.getClientRects().length) {
        const style = window.getComputedStyle(el);
        if (Math.round(parseFloat(style.width)) === full.width
            && (el.layout.height || Math.round(parseFloat(style.height)) === full.height)) return Promise.resolve(el);
      }
      return resize.apply(this, arguments);
    };
  };"""

# In the page (app/i18n.py HEAD_JS), once Gradio sets window.Plotly. Gradio draws every figure of an event's
# outputs at once, those below the fold of a tall tab too (the Training tab's five, a phone's every one), before the
# reader sees the first. A figure for a plot that is not within NEAR_PX of the screen waits, and is drawn when it
# comes near the screen (an IntersectionObserver), with the newest figure it was given. Meanwhile a plot never drawn
# holds a block of the figure's height and has the class `plot-waiting`, which gives it the strips a drawn plot has
# (app/style.py): the page keeps its layout when it is drawn. A plot in a closed tab has no box, and is drawn when
# its tab opens.
NEAR_PX = 300
PLOTLY_LAZY_JS = """const drawWhenNear = (plotly) => {
    const react = plotly.react;
    const near = (el) => { const r = el.getBoundingClientRect();
      return (r.width || r.height) && r.bottom > -__NEAR__ && r.top < innerHeight + __NEAR__; };
    const done = (el) => {
      seen.unobserve(el);
      delete el.__waiting;
      el.classList.remove('plot-waiting');
      el.querySelector(':scope > .plot-hold')?.remove();
    };
    const seen = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const el = e.target, args = el.__waiting;
        if (!e.isIntersecting || !args) continue;
        done(el);
        react.apply(plotly, [el, ...args]);
      }
    }, {rootMargin: '__NEAR__px 0px'});
    plotly.react = function (gd, ...args) {
      const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
      if (!(el instanceof HTMLElement) || near(el)) {
        if (el?.__waiting) done(el);
        return react.call(this, gd, ...args);
      }
      el.__waiting = args;
      if (!el._fullLayout) {  // never drawn: it holds the figure's height (a drawn one keeps its drawing meanwhile)
        const height = args[1]?.height, hold = el.querySelector(':scope > .plot-hold')
          ?? el.appendChild(Object.assign(document.createElement('div'), {className: 'plot-hold'}));
        hold.style.height = `${typeof height === 'number' ? height : 450}px`;
        el.classList.add('plot-waiting');
      }
      seen.observe(el);
      return Promise.resolve(el);
    };
  };""".replace("__NEAR__", str(NEAR_PX))

# In the page (app/i18n.py HEAD_JS), once Gradio sets window.Plotly, wrapped around drawWhenNear's react so that a
# plot has its width before it is drawn or waits. A figure whose layout asks for a phone width (`meta.phone_width`,
# app/common.py phone_width: a long sentence's heatmap) is given that width as its plot's least width on a screen of
# 640 px or less, and its block the class `wide-sentence`, which scrolls sideways with a line above that says so
# (app/style.py); another figure in the same place, or a wider screen, takes both back. A figure with
# `meta.phone_hover` false (its text says what its hover would) shows no hover label on such a screen.
PHONE_WIDTH_JS = """const phoneWidth = (plotly) => {
    const react = plotly.react;
    plotly.react = function (gd, ...args) {
      const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
      if (el instanceof HTMLElement) {
        const want = args[1]?.meta?.phone_width, phone = window.matchMedia('(max-width: 640px)').matches;
        el.style.minWidth = '';
        const base = parseFloat(getComputedStyle(el).minWidth) || 0;
        const wide = typeof want === 'number' && phone && want > base;
        if (wide) el.style.minWidth = `${want}px`;
        el.closest('.block')?.classList.toggle('wide-sentence', wide);
        // a figure that writes what its hover says (meta.phone_hover false): no hover label on a phone
        if (phone && args[1]?.meta?.phone_hover === false && Array.isArray(args[0]))
          args[0] = args[0].map((t) => ({...t, hoverinfo: 'none'}));
      }
      return react.call(this, gd, ...args);
    };
  };"""

# In the page (app/i18n.py HEAD_JS), given the statustracker module (the module's docstring: STATUS_JS). The class's
# `update` (called once per status message, before the page applies the statuses) sees every status; anything else
# that enumerates `current` (Gradio's update_loading_stati_state alone) sees those whose value changed since the
# last such enumeration, each of them once. Entries are still read, written and deleted as Gradio writes them.
STATUS_JS = """const quietStatuses = (module) => {
    const LoadingStatus = Object.values(module ?? {}).find((v) => v?.LoadingStatus)?.LoadingStatus;
    const proto = LoadingStatus?.prototype, update = proto?.update;
    if (typeof update !== 'function' || update.__quiet) return false;
    const changedOnly = (owner) => {
      const seen = {all: false, sent: new Map()};
      owner.current = new Proxy(owner.current, {ownKeys: (t) => {
        const keys = Reflect.ownKeys(t);
        if (seen.all) return keys;
        return keys.filter((k) => {
          const now = JSON.stringify(t[k]);
          if (seen.sent.get(k) === now) return false;
          seen.sent.set(k, now);
          return true;
        });
      }});
      return seen;
    };
    proto.update = function () {
      const seen = this.__seen ??= changedOnly(this);
      seen.all = true;
      try { return update.apply(this, arguments); } finally { seen.all = false; }
    };
    proto.update.__quiet = true;
    return true;
  };"""


def status_chunk():
    """The file name of the front end's statustracker chunk (STATUS_JS), or None if there is not exactly one."""
    found = [p.name for p in frontend_assets() if re.fullmatch(r"statustracker-[\w-]+\.js", p.name)]
    return found[0] if len(found) == 1 else None


# In the page (app/i18n.py HEAD_JS): `gradioCore()` resolves to Gradio's front-end core module, or null.
LOCALE_JS = """const gradioCore = async () => {
    const url = performance.getEntriesByType('resource').map((e) => e.name)
      .find((n) => /\\/assets\\/core-[\\w-]+\\.js$/.test(n));
    return url ? import(url) : null;
  };"""


def frontend_assets():
    """The installed Gradio front end's JavaScript files (for the test that checks what LOCALE_JS relies on)."""
    from pathlib import Path
    return sorted((Path(gr.__file__).parent / "templates" / "frontend" / "assets").glob("*.js"))


# what HEAD_JS relies on, as (what, file name pattern, text that must be in it) for the installed front end
FRONTEND_FACTS = (("the locale read from the browser", r"runtime-[\w-]+\.js", "window.navigator.language"),
                  ("<html lang> set from the locale", r"runtime-[\w-]+\.js", "setAttribute(`lang`"),
                  ("the head added before the app is drawn", r"Index-[\w-]+\.js", ".head),R("),
                  ("the status tracker's English", r"statustracker-[\w-]+\.js", "processing |"),
                  ("the status tracker's queue line", r"statustracker-[\w-]+\.js", "`queue: ${"),
                  ("plotly set on window", r"PlotlyPlot-[\w-]+\.js", "window.Plotly=e"),
                  ("the loading statuses' class, exported", r"statustracker-[\w-]+\.js", "LoadingStatus:()=>"),
                  ("the statuses kept in `current`, updated by `update`", r"statustracker-[\w-]+\.js",
                   "update(e){for(let[t,n]of Object.entries(this.current))"),
                  ("every status applied again after each message", r"Blocks-[\w-]+\.js",
                   "Object.entries(this.loading_stati.current).map(([e,t])=>this.update_state_cb(Number(e),"
                   "{loading_status:t}"),
                  ("the statuses' class as Blocks imports it", r"Blocks-[\w-]+\.js", "from\"./statustracker-"),
                  ("each react followed by a resize", r"PlotlyPlot-[\w-]+\.js", ".react(g,e.data,e.layout,e.config),p.default.Plots.resize(g)"))


def plotly_chunk():
    """The file name of the front end's chunk that holds plotly, or None if there is not exactly one."""
    found = [p.name for p in frontend_assets() if re.fullmatch(r"PlotlyPlot-[\w-]+\.js", p.name)]
    return found[0] if len(found) == 1 else None


# A function for launch(js=...), which runs once the app is drawn. Once the page has been quiet (no status tracker on
# screen) for QUIET_MS and the browser is idle, it imports the plot chunk beside the front end's own modules (the URL
# of its entry script's folder): running it holds the browser for about two seconds here, so not while the page is
# still settling. Once quiet again (AHEAD_QUIET_MS), it clicks the button AHEAD_ID (app/views.py wire_ahead), whose event sends
# the views that read no sentence to their tabs, closed as they are (app/views.py ahead_shower): opening one of
# them then draws what it holds. When that event is done, <html> has data-drawn-ahead.
IDLE_JS = """() => {
  const name = __NAME__, entry = document.querySelector('script[type=module][src*="/assets/"]');
  const busy = () => [...document.querySelectorAll('[data-testid=status-tracker]')]
    .some((t) => !t.classList.contains('hide') && t.getClientRects().length);
  const whenQuiet = (ms, then) => {
    let quietSince = Date.now();
    const wait = () => {
      if (busy()) quietSince = Date.now();
      if (Date.now() - quietSince < ms) { setTimeout(wait, 200); return; }
      (window.requestIdleCallback ?? ((f) => setTimeout(f, 50)))(then, {timeout: 1000});
    };
    wait();
  };
  const ahead = () => whenQuiet(__AHEAD_QUIET_MS__, () => document.getElementById(__AHEAD_ID__)?.click());
  if (window.Plotly || !name || !entry) { ahead(); return; }
  whenQuiet(__QUIET_MS__, () => import(new URL(name, entry.src).href).catch(() => {}).then(ahead));
}"""
QUIET_MS = 1500
AHEAD_QUIET_MS = 500
AHEAD_ID = "draw-ahead"


def idle_js():
    return (IDLE_JS.replace("__NAME__", json.dumps(plotly_chunk())).replace("__QUIET_MS__", str(QUIET_MS))
            .replace("__AHEAD_QUIET_MS__", str(AHEAD_QUIET_MS)).replace("__AHEAD_ID__", json.dumps(AHEAD_ID)))
