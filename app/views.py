"""Compute a view when it is shown.

Each session keeps a small page record (a gr.State): which tab is open at each level of the page, and what
each view last drew. A view is one or more output components drawn together, in a tab (or a tab within a tab);
it names the controls its drawing reads. Three kinds of event draw views, all through `refresh`:

- a new translation draws the views on screen; a view in a closed tab that shows an earlier translation is
  cleared, so no tab keeps the old sentence's figures beside the new sentence's tokens;
- opening a tab draws its views that are not already drawn for the same translation and controls;
- moving a control of an open tab redraws the views that read it.

The rest of the time a view is left as it is (`gr.skip()`): nothing is recomputed and nothing is sent.
"""
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import gradio as gr

ROOT = ""  # the page's top level of tabs


@dataclass(frozen=True)
class View:
    """A view: its name, where it is shown (tab ids from the top), how it is drawn, what it reads.

    `draw(ins, *used)` returns the values of its `outputs` components (one value, or a tuple of them), where `used`
    are the values of its tab's controls named in `uses`, in that order; a view that does not read the translation
    (`reads_translation=False`) is drawn as `draw(*used)`. `blank` gives the values that clear it (a tuple, or a
    function of the controls it `uses`, like `draw`, returning one: a blank in the page's language) once it shows
    an earlier translation."""
    name: str
    where: tuple
    draw: Callable
    outputs: int = 1
    uses: tuple = ()
    blank: tuple | Callable = None
    reads_translation: bool = True


def page_state(open_tabs):
    """A session's page record, given the tab open at first at each level ({ROOT: "overview", ...})."""
    return gr.State({"open": dict(open_tabs), "drawn": {}})


def open_tab(page, where):
    """Record that the tab at path `where` (tab ids from the top) is now the one shown at its level."""
    level = ROOT
    for tab in where:
        page["open"][level] = tab
        level = tab


def shown(page, where):
    """Whether the tab at path `where` is on screen: open at every level above it."""
    level = ROOT
    for tab in where:
        if page["open"].get(level) != tab:
            return False
        level = tab
    return True


def refresh(page, ins, views, controls=None):
    """The output values of `views`, in order: drawn where shown and not drawn already for `ins` and the
    controls the view reads (`controls`: their values by name); cleared where hidden and drawn for an earlier
    translation; else skipped."""
    drawn, out = page["drawn"], []
    for v in views:
        used = tuple(controls[name] for name in v.uses)
        last = drawn.get(v.name)
        fresh = last is not None and last[0] is ins and last[1] == used
        if shown(page, v.where) and not fresh and (ins is not None or not v.reads_translation):
            drawn[v.name] = (ins, used)
            values = v.draw(ins, *used) if v.reads_translation else v.draw(*used)
            out.extend(values if v.outputs > 1 else (values,))
        elif last is not None and last[0] is not ins and v.blank is not None:
            del drawn[v.name]
            out.extend(v.blank(*used) if callable(v.blank) else v.blank)
        else:
            out.extend(gr.skip() for _ in range(v.outputs))
    return tuple(out)


def tab_views(show, views, controls, outputs, **more):
    """What the build() of a tab with views returns: its `show` (the page, the Inspection where the tab shows a
    translation, then the controls' values in the order of `controls`), its views, its controls by name, the
    outputs of `show`, and `more` that other tabs reach."""
    return SimpleNamespace(show=show, views=views, controls=dict(controls), outputs=list(outputs),
                           shows_translation=any(v.reads_translation for v in views), **more)


def translation_shower(tabs):
    """The callback that draws a new translation in every view that shows one: those on screen drawn, the
    others cleared. `tabs` are the tab_views of the tabs that show a translation; it takes the page, the
    Inspection, then each tab's controls in turn (those not given take their first values)."""
    def show_translation(page, ins, *controls):
        out = []
        for tab in tabs:
            n = len(tab.controls)
            out += tab.show(page, ins, *controls[:n])
            controls = controls[n:]
        return tuple(out)
    return show_translation


def opener(where, show):
    """The callback of a tab's select event: record the tab as open, then `show(page, *inputs)` its views."""
    def opened(page, *inputs):
        open_tab(page, where)
        return show(page, *inputs)
    opened.__name__ = f"open_{'_'.join(where)}".replace("-", "_")
    return opened


def control_changes(controls):
    """The change events of a tab's controls (by name), the page's language left out: app/ui.py redraws every
    tab for a new language in one event (`language_shower`)."""
    return [c.change for name, c in controls.items() if name != "lang"]


def language_shower(tabs):
    """The callback of the page's language switch: every tab's views on screen drawn again in the new language
    (their language is one of their controls), in one event rather than one a tab. It takes the page, the
    Inspection, then each tab's controls in turn, as `translation_shower` does; a view in a hidden tab is left,
    and drawn in the new language when its tab is next opened."""
    def show_language(page, ins, *controls):
        out = []
        for tab in tabs:
            n = len(tab.controls)
            out += tab.show(page, ins, *controls[:n]) if tab.shows_translation else tab.show(page, *controls[:n])
            controls = controls[n:]
        return tuple(out)
    return show_language
