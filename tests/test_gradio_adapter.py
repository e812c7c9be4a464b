"""What the page takes from Gradio beyond its public API (app/gradio_adapter.py), each run against a real small
gr.Blocks: a Gradio upgrade that changes them fails here, by name, before the page breaks in a browser."""
import os

import gradio as gr
import pytest
from fastapi.testclient import TestClient
from gradio.routes import App

from app.bertviz_views import STATIC_FILES
from app.gradio_adapter import forget_session, leave_skipped_alone, static_url, tab_nesting


def small_page():
    with gr.Blocks() as demo:
        state = gr.State(None)
        with gr.Tabs():
            with gr.Tab("Outer", id="outer"):
                with gr.Tabs():
                    with gr.Tab("Inner", id="inner"):
                        with gr.Row():
                            with gr.Tabs():
                                with gr.Tab("Deep", id="deep"):
                                    gr.Markdown("deep")
            with gr.Tab("Other", id="other"):
                gr.Markdown("other")
    return demo, state


def test_tab_nesting_names_every_tab_with_the_tabs_it_sits_in():
    demo, _ = small_page()
    nesting = {tab.label: [t.id for t in path] for tab, path in tab_nesting(demo)}
    assert nesting == {"Outer": ["outer"], "Inner": ["outer", "inner"], "Deep": ["outer", "inner", "deep"],
                       "Other": ["other"]}


def test_forget_session_drops_its_state_and_gradios_record_of_it():
    demo, state = small_page()
    App.create_app(demo)  # as launch() does: the app's state holder
    holder = demo.state_holder
    for session in ("leaving", "staying"):
        holder[session][state._id] = f"{session}'s translation"
    forget_session(demo, "leaving")
    assert "leaving" not in holder.session_data and "leaving" not in holder.time_last_used
    assert holder["staying"][state._id] == "staying's translation"
    forget_session(demo, "never seen")  # a session that kept nothing: nothing to do


def test_static_url_serves_a_registered_file(tmp_path):
    path = tmp_path / "lib.js"
    path.write_text("window.lib = 1;", encoding="utf-8")
    gr.set_static_paths(paths=[*STATIC_FILES, str(path)])  # for every app of this process: the page's own kept
    demo, _ = small_page()
    client = TestClient(App.create_app(demo))
    response = client.get(static_url(path))
    assert response.status_code == 200 and response.text == "window.lib = 1;"
    assert client.get(static_url(tmp_path / "not-registered.js")).status_code in (403, 404)


def test_the_front_end_still_exports_what_the_language_switch_uses():
    """LOCALE_JS (app/page/gradio-core.js) imports Gradio's front-end core module (assets/core-<hash>.js) for
    `changeLocale`, and the page relabels tab buttons found by `data-tab-id`: both must be in the installed front
    end, the core module once."""
    import re

    from app.gradio_adapter import LOCALE_JS, frontend_assets
    assets = frontend_assets()
    core = [p for p in assets if re.fullmatch(r"core-[\w-]+\.js", p.name)]
    assert len(core) == 1, f"one assets/core-<hash>.js expected in gradio {gr.__version__}: {[p.name for p in core]}"
    assert re.search(r"\bas changeLocale\b", core[0].read_text(encoding="utf-8"))
    assert any("data-tab-id" in p.read_text(encoding="utf-8", errors="ignore") for p in assets)
    assert "core-" in LOCALE_JS


def test_the_front_end_still_does_what_the_pages_scripts_expect():
    """Each of the page's scripts that patch Gradio's front end, or read what it writes (app/page/head.js setting
    the page's language between Gradio's i18n setup and its first drawing, relabelling its status lines and giving
    plotly its locale; the plot and status patches; the idle work), relies on facts of the installed front end's
    code (app/gradio_adapter.py FRONTEND_FACTS): a Gradio that lacks one fails here, naming it and the scripts
    that rely on it."""
    from app.gradio_adapter import missing_frontend_facts
    missing = missing_frontend_facts()
    assert not missing, ("the installed Gradio's front end no longer has what the page's scripts rely on; check each "
                         "script named against this Gradio, then change or remove it and its fact:\n"
                         + "\n".join(missing))


def test_every_fact_names_scripts_of_the_page_and_a_fact_missing_is_said():
    """A fact names the files that rely on it (so a failure says which script to look at), each a file of the page;
    every script that patches Gradio's front end has its facts; and a fact the front end lacks is said in a line
    that names it, where it was looked for, and the scripts."""
    from pathlib import Path

    import app.gradio_adapter as adapter
    root = Path(adapter.__file__).parent.parent
    named = {f for fact in adapter.FRONTEND_FACTS for f in fact.used_by}
    assert all((root / f).exists() for f in named), sorted(f for f in named if not (root / f).exists())
    patches = {"head", "gradio-core", "plotly-lazy", "plotly-resize", "phone-width", "quiet-statuses", "idle"}
    assert {f"app/page/{p}.js" for p in patches} <= named
    gone = adapter.Fact("a call Gradio dropped", r"Blocks-[\w-]+\.js", "no such code", ("app/page/idle.js",))
    facts = adapter.FRONTEND_FACTS
    try:
        adapter.FRONTEND_FACTS = (*facts, gone)
        (line,) = adapter.missing_frontend_facts()
    finally:
        adapter.FRONTEND_FACTS = facts
    assert "a call Gradio dropped" in line and "'no such code'" in line and "Blocks-" in line
    assert "app/page/idle.js" in line and gr.__version__ in line


def test_the_page_preloads_the_very_module_gradios_plot_imports():
    """idle_js imports the plot chunk by its file name beside the front end's entry script: that is the
    module Gradio's plot component imports (./PlotlyPlot-<hash>.js from the same folder), which sets
    window.Plotly as it runs, so the page's import and Gradio's are one module, loaded once."""
    from app.gradio_adapter import frontend_assets, idle_js, plotly_chunk
    name = plotly_chunk()
    assert name is not None and f'"{name}"' in idle_js()
    importers = [p for p in frontend_assets() if f"import(`./{name}`)" in p.read_text(encoding="utf-8", errors="ignore")]
    assert importers and all(p.name.startswith("Plot-") for p in importers)
    chunk = next(p for p in frontend_assets() if p.name == name)
    assert "window.Plotly=e" in chunk.read_text(encoding="utf-8", errors="ignore")


def test_an_output_left_skipped_keeps_its_component_and_the_answer_is_gradios_own():
    """Blocks.postprocess_data with skipped outputs taken out gives what Gradio's own gives (the skip as it writes
    it, a state's None, each value postprocessed); an output it skips keeps its component, where Gradio's own
    makes a new one, and an output it updates gets a new one as in Gradio's own."""
    import asyncio

    from gradio.blocks import Blocks, convert_component_dict_to_list
    from gradio.state_holder import SessionState
    leave_skipped_alone()
    fast, plain = Blocks.postprocess_data, Blocks.postprocess_data.plain
    with gr.Blocks() as demo:
        text, number, state, html = outputs = gr.Textbox(), gr.Number(), gr.State(), gr.HTML()
        gr.Button().click(lambda: None, None, list(outputs))
    fn = demo.fns[0]
    answers = ([gr.skip(), 3, gr.skip(), gr.skip()], {number: 3}, {text: "a", html: gr.update(visible=False)},
               gr.skip(), ["a", 1, "kept", "<b>b</b>"], [gr.skip()] * 4, [gr.update(visible=True), 2, None, "c"])
    for predictions in answers:
        ours, theirs = SessionState(demo), SessionState(demo)
        got = asyncio.run(fast(demo, fn, predictions, ours))
        assert got == asyncio.run(plain(demo, fn, predictions, theirs)), predictions
        each = (convert_component_dict_to_list(list(outputs), predictions) if isinstance(predictions, dict)
                and predictions != gr.skip() else [gr.skip()] * 4 if predictions == gr.skip() else predictions)
        for block, value in zip(outputs, each):
            if block.stateful:
                continue
            updated = isinstance(value, dict)
            assert (theirs.blocks_config.blocks[block._id] is not block) == updated, (predictions, block)
            assert (ours.blocks_config.blocks[block._id] is not block) == (updated and value != gr.skip())


# Gradio's own LoadingStatus class, patched by STATUS_JS (app/page/quiet-statuses.js) in a blank page: the statuses of two events' components
# as its `update` writes them, and what an enumeration outside `update` then lists (what Gradio applies again)
STATUS_RUN = """async (name) => {
  const m = await import('/assets/' + name);
  const LoadingStatus = Object.values(m).find((v) => v?.LoadingStatus).LoadingStatus;
  const plain = new LoadingStatus(), patched = new LoadingStatus();
  const steps = [[1, 'pending'], [1, 'complete'], [1, 'complete'], [2, 'pending'], [2, 'complete'], [1, 'pending']];
  const run = (s, after) => {
    s.register(1, [10, 11], [12], 'full');  // event 1 writes components 10 and 11 and reads 12
    s.register(2, [20], [12], 'full');      // event 2 writes 20 and reads 12 too
    return steps.map(([fn, status]) => { s.update({fn_index: fn, status}); return after(s); });
  };
  const statuses = (s) => Object.fromEntries([10, 11, 12, 20].filter((k) => k in s.current)
    .map((k) => [k, [s.current[k].fn_index, s.current[k].status]]));
  const before = run(plain, statuses);
  const installed = quietStatuses(m), again = quietStatuses(m);
  const listed = [];
  const after = run(patched, (s) => {
    const listedNow = Object.entries(s.current).map(([k]) => +k).sort((a, b) => a - b);
    listed.push(listedNow, Object.keys(s.current).map(Number));  // the second enumeration finds nothing new
    return statuses(s); });
  return {before, after, installed, again, listed};
}"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium not installed")
def test_a_loading_status_applied_already_is_not_listed_again():
    """STATUS_JS on Gradio's own LoadingStatus class: `update` keeps every status as Gradio's does, and an
    enumeration of them lists only those that changed since the last one, each once."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from app.gradio_adapter import STATUS_JS, status_chunk
    from tests.frontend import open_frontend
    from tools.bench_browser import CHROMIUM, LAUNCH_ARGS
    assert status_chunk() is not None
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            open_frontend(page)
            r = page.evaluate(f"(() => {{ const quietStatuses = {STATUS_JS};\nreturn {STATUS_RUN}; }})()",
                              status_chunk())
        finally:
            browser.close()
    assert r["installed"] is True and r["again"] is False
    assert r["after"] == r["before"]  # the same statuses, step by step
    # outputs get a status (an input only for a validation message, which these steps do not send)
    assert r["before"][-1] == {"10": [1, "pending"], "11": [1, "pending"], "20": [2, "complete"]}
    listed = r["listed"]
    changed, then = listed[0::2], listed[1::2]
    assert changed == [[10, 11],  # event 1 pending: its outputs
                       [10, 11],  # complete
                       [],        # complete again: nothing changed
                       [20],      # event 2 pending: its output alone (event 1's are as they were)
                       [20],      # complete
                       [10, 11]]  # event 1 again
    assert then == [[]] * len(r["before"])
