"""What the page needs from Gradio beyond its public API, in one place (tests/test_gradio_adapter.py runs each
against a real gr.Blocks, so that a Gradio upgrade that changes them fails there first).

- `forget_session`: Gradio has no public call that drops a session's state. It keeps a closed page's state for
  an hour in case the page reconnects, in the app's state holder (`demo.state_holder`: `delete_state`, and its
  `session_data` and `time_last_used` records), which its own hourly expiry empties the same way.
- `tab_nesting`: Gradio has no public list of a page's tabs. The page's blocks (`demo.blocks`, by id) and each
  block's `parent` give every tab and the tabs it sits in, which the page's links name.
- `static_url`: the address under which Gradio serves a file registered with gr.set_static_paths (its file
  route, /gradio_api/file=), which a page inside an iframe must write out itself.
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
