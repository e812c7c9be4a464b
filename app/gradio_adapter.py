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
"""
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


def static_url(path):
    """The URL under which Gradio serves a file registered with gr.set_static_paths."""
    return f"/gradio_api/file={path}"


# In the page (app/i18n.py SWITCH_JS): `gradioCore()` resolves to Gradio's front-end core module, or null.
LOCALE_JS = """const gradioCore = async () => {
    const url = performance.getEntriesByType('resource').map((e) => e.name)
      .find((n) => /\\/assets\\/core-[\\w-]+\\.js$/.test(n));
    return url ? import(url) : null;
  };"""


def frontend_assets():
    """The installed Gradio front end's JavaScript files (for the test that checks what LOCALE_JS relies on)."""
    from pathlib import Path
    return sorted((Path(gr.__file__).parent / "templates" / "frontend" / "assets").glob("*.js"))
