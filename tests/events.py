"""Calling the page's events as the browser does: by the names their inputs are wired under (inputs_kwargs), and
reading what they return by component."""
import gradio as gr


def dependency(demo, name):
    """The one event of the page whose callback is named `name`."""
    (dep,) = [d for d in demo.fns.values() if getattr(d.fn, "__name__", None) == name]
    return dep


def named_inputs(dep, **given):
    """An event's keyword inputs: each name's component's value as the page starts, or `given[name]`."""
    names = dep.input_parameter_names
    unknown = set(given) - set(names)
    assert not unknown, f"the event takes no {sorted(unknown)}"
    return {name: given[name] if name in given else getattr(c, "value", None) for name, c in zip(names, dep.inputs)}


def call(dep, **given):
    """Run an event's callback on its named inputs (`given` by name, the rest as the page starts); what it sends,
    {component: value} ({} when it sends nothing)."""
    out = dep.fn(**named_inputs(dep, **given))
    return {} if isinstance(out, dict) and out == gr.skip() else out


def by_id(out):
    """{elem_id: value} of what an event sent, for the components that have one."""
    return {c.elem_id: v for c, v in out.items() if getattr(c, "elem_id", None)}


def outputs_of(tab):
    """A tab's output components (a tab that names them, or one that lists them)."""
    return list(tab.outputs.values()) if isinstance(tab.outputs, dict) else list(tab.outputs)


def open_in(page, where):
    """A test page's tab bars as a reader leaves them on opening the tab at path `where` (tab ids from the top):
    `page["open"]` is the test's record of the tab selected in each bar ({"": top tab, parent tab: sub-tab})."""
    level = ""
    for tab in where:
        page.setdefault("open", {})[level] = tab
        level = tab


def selected(page):
    """What the page sends a drawing as its open tabs (app/page/open-tabs.js) for such a test page: the ids of the
    tabs selected in every bar."""
    return list(page.get("open", {}).values())
