"""Compute a view when it is shown.

Each session keeps a small page record (a gr.State): what each view last drew. A view is one or more output
components drawn together, in a tab (or a tab within a tab); it names the controls its drawing reads and the outputs
it draws.

Each tab draws its views through one event listener of its own (`Tab.wire`), and through nothing else. Its triggers
are everything that may change what the tab shows: opening it or one of its sub-tabs, its controls, the state it
reads (a new translation, or a tab's own results), the page's language, and the tab's `nudge`, a state any other
event may change to ask for a drawing. Gradio runs one listener of a page at most once at a time and, with
`trigger_mode="always_last"`, once more after a trigger that came meanwhile, reading the inputs as they are then.
Which tabs are open is one of those inputs, read from the page itself when the drawing is sent (the listener's
`js=`, app/page/open-tabs.js): the server keeps no record of openings that two requests arriving out of order
could leave behind. So a tab's drawings reach the browser in the order they began, each for the page as it was when
it was sent, and no stale drawing can follow a newer one. The listener draws the page as it is (`draw_views`):

- the views on screen that are not drawn already for the translation, the controls and the language are drawn;
- a view in a closed tab that shows an earlier translation is cleared, so that no tab keeps the old sentence's
  figures beside the new sentence's tokens;
- the rest is left as it is (`gr.skip()`): nothing is recomputed and nothing is sent.
"""
import functools
import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Callable

import gradio as gr

from . import page as page_js
from .i18n import LANGS, read_lang, speaking

ROOT = ""  # the page's top level of tabs


@dataclass(frozen=True)
class View:
    """A view: its name, where it is shown (tab ids from the top), how it is drawn, what it reads.

    `draw(ins, **used)` returns {output name: value} for the names in `outputs` (a view of one output may return
    the bare value), where `used` are the tab's controls named in `uses`, by name; a view that does not read the
    translation (`reads_translation=False`) is drawn as `draw(**used)`. Every view is drawn in the event's
    language (app.i18n.speaking), which is not one of its `uses`: a change of language redraws it all the same.
    `blank` gives the values that clear it ({output name: value}) once it shows an earlier translation, or is a
    function of the controls it uses, like `draw`, returning what the view shows, in the page's language, when its
    tab is on screen before the first translation (a placeholder that says what to do): such a view is cleared with
    None in each output (its placeholder would tell the reader to translate while its tab's opening draws the new
    sentence; and a plot given a figure while hidden draws it once shown, the new one then drawn anew). A fixed
    blank is its components' first value.
    `resolve(ins, **used)` (or `resolve(**used)`), if given, returns the controls' values the drawing stands for
    ({name: value}): what it is drawn with and known by. A view whose tab's drawing also sets one of its controls
    (a menu's choices and first value, for a new translation) says there which value that is: a value the browser
    still holds from the last sentence's menu then names the view's first one, and the same value chosen later
    finds the view drawn already."""
    name: str
    where: tuple
    draw: Callable
    outputs: tuple = ()
    uses: tuple = ()
    blank: dict | Callable = None
    reads_translation: bool = True
    resolve: Callable = None


def page_state():
    """A session's page record: what each view last drew. Beside it, as its `tabs`, the hidden box through which
    each drawing is told the tabs the page shows (app/page/open-tabs.js fills it in as the drawing is sent)."""
    page = gr.State({"drawn": {}})
    page.tabs = gr.Textbox(visible=False, elem_id="open-tabs")
    return page


def open_tabs(where, subtabs, said):
    """{level: tab open at that level} for a tab at `where` (its top-level path) and its sub-tabs (`subtabs`, in
    their order): from `said`, the ids of the tabs the page shows selected (a JSON list, or a list). A tab bar the
    page has not drawn yet (a tab never opened) shows its first tab; anything but a list of ids reads as no tab."""
    if isinstance(said, str):
        try:  # a list of a page's tab ids is short: a longer text is no such list
            said = json.loads(said) if len(said) <= 4096 else []
        except ValueError:
            said = []
    ids = set(said) if isinstance(said, list) and all(isinstance(i, str) for i in said) else set()
    top = where[0]
    opened = {ROOT: top if top in ids else None}
    if subtabs:
        opened[top] = next((sub for sub in subtabs if sub in ids), subtabs[0])
    return opened


def shown(opened, where):
    """Whether the tab at path `where` (tab ids from the top) is on screen, given the tab open at each level."""
    level = ROOT
    for tab in where:
        if opened.get(level) != tab:
            return False
        level = tab
    return True


def _fresh(page, v, ins, used):
    last = page["drawn"].get(v.name)
    return last, last is not None and last[0] is ins and last[1] == used


def draw_views(opened, page, ins, views, controls, lang):
    """{output name: value} of `views`: drawn, in `lang`, where shown (`opened`: the tab open at each level) and
    not drawn already for `ins`, the controls the view reads (`controls`: their values by name) and `lang`; cleared
    where hidden and drawn for an earlier translation. An output left out is left as it is (nothing is computed,
    nothing is sent)."""
    out, given = {}, ins
    for v in views:
        ins = given if v.reads_translation else None  # a new translation leaves a view that does not read it
        used = {name: controls[name] for name in v.uses}
        if v.resolve is not None and (ins is not None or not v.reads_translation):
            used = v.resolve(ins, **used) if v.reads_translation else v.resolve(**used)
        key = (tuple(used.values()), read_lang(lang))
        last, fresh = _fresh(page, v, ins, key)
        if shown(opened, v.where) and not fresh and (ins is not None or not v.reads_translation):
            page["drawn"][v.name] = (ins, key)
            with speaking(lang):
                out.update(_named(v, v.draw(ins, **used) if v.reads_translation else v.draw(**used)))
        elif shown(opened, v.where) and not fresh and callable(v.blank):  # no translation yet: its placeholder
            page["drawn"][v.name] = (None, key)
            with speaking(lang):
                out.update(_named(v, v.blank(**used)))
        elif last is not None and last[0] is not None and last[0] is not ins and v.blank is not None:
            # cleared: a placeholder would say what to do where the tab's opening will draw the new sentence
            del page["drawn"][v.name]
            out.update(_named(v, {name: None for name in v.outputs} if callable(v.blank) else v.blank))
    return out


def _named(view, values):
    """A view's drawn values by output name, checked against the names it declares."""
    if len(view.outputs) == 1 and not (isinstance(values, dict) and set(values) == set(view.outputs)):
        values = {view.outputs[0]: values}
    assert set(values) == set(view.outputs), (view.name, sorted(values), view.outputs)
    return values


NUDGES = itertools.count(1)  # a new value for a tab's nudge: a state changes when its value does


@dataclass
class Tab:
    """What the build() of a tab with views returns: where it is, its views, its controls and outputs by name
    (components), and the page-wide components its events read: the page record, the page's language and, for a
    tab that shows a translation, the state holding the Inspection (or, for a tab whose views read results of its
    own, that tab's state). `more` holds what other parts of the page reach (the Translate tab's event, the Learn
    path's progress). `wire` gives it its `nudge`."""
    where: tuple
    views: list
    controls: dict
    outputs: dict
    page: object
    lang: object
    state: object = None
    more: dict = field(default_factory=dict)

    def __post_init__(self):
        names = [n for v in self.views for n in v.outputs]
        assert sorted(names) == sorted(self.outputs), (self.where, names, list(self.outputs))
        assert all(set(v.uses) <= set(self.controls) for v in self.views), self.where

    def __getattr__(self, name):
        more = self.__dict__.get("more", {})
        if name in more:
            return more[name]
        raise AttributeError(name)

    @property
    def shows_translation(self):
        return any(v.reads_translation for v in self.views)

    def inputs(self):
        """The components its events read, by the names `show` takes (inputs_kwargs=...)."""
        page = dict(page=self.page, lang=self.lang, tabs=self.page.tabs,
                    **({"ins": self.state} if self.shows_translation else {}))
        return dict(page, **self.controls)

    def show(self, page, lang, ins=None, *, tabs=(), **controls):
        """{component: value} of its views for the page as it is (draw_views), gr.skip() when nothing changes:
        `tabs`, the ids of the tabs the page shows (open_tabs). A control not given reads as its first value (a
        caller that knows nothing of it: the header's model menu)."""
        controls = {**{name: c.value for name, c in self.controls.items() if name not in controls}, **controls}
        opened = open_tabs(self.where, self.__dict__.get("subtabs", ()), tabs)
        values = draw_views(opened, page, ins, self.views, controls, lang)
        return {self.outputs[name]: value for name, value in values.items()} or gr.skip()

    def redraw(self):
        """The settings of an event that asks the tab to draw its views (its listener runs on the nudge's change):
        for another event's `.then`, or, with the nudge among an event's outputs, `{tab.nudge: next(NUDGES)}`. It
        goes through the queue: the page starts a state's change listeners only after a queued event (tests/
        test_views.py)."""
        return dict(fn=lambda: next(NUDGES), inputs=None, outputs=self.nudge, api_visibility="private",
                    show_progress="hidden")

    def wire(self, tab, subtabs=None, by_hand=(), relang=True, **event):
        """The tab's one listener (the module's docstring says why one): opening the tab or a tab within it
        (`subtabs`: {id: gr.Tab}, the first the one open at first), the tab's nudge, its controls, its state and the
        page's language (unless `relang` is False: the tab redraws itself in a new language) trigger `show`, told by
        the page which tabs it shows as the drawing is sent (app/page/open-tabs.js). A control named in `by_hand`
        redraws only when the reader moves it (its input event): one that the tab's own drawing sets (a menu's
        choices and first value) would otherwise send a second event after each drawing. `event`: more of Gradio's
        settings for the listener (concurrency_id="model" where drawing may run the model)."""
        with tab:  # inside the tab: a component beside the top-level tabs would shift the front end's count of them
            self.nudge = gr.State(0)
        self.subtabs = tuple(subtabs or ())
        triggers = [t.select for t in (tab, *(subtabs or {}).values())] + [self.nudge.change]
        triggers += [_moved(c) if name in by_hand else c.change for name, c in self.controls.items()]
        triggers += [self.state.change] if self.state is not None else []
        # the language switch's `said` (app.i18n.switch); a page built without the switch, its language component
        triggers += [getattr(self.lang, "said", self.lang).change] if relang else []
        # its progress shows on the views that read the sentence (they may wait for the model); one that reads none
        # comes from a cache, and is not covered meanwhile
        slow = [self.outputs[name] for v in self.views if v.reads_translation for name in v.outputs]
        progress = dict(show_progress_on=slow) if slow else dict(show_progress="hidden")
        inputs = self.inputs()
        gr.on(_unique(triggers), self.show, None, list(self.outputs.values()), inputs_kwargs=inputs,
              js=telling_tabs(inputs), trigger_mode="always_last",
              api_visibility="private", **{**progress, **event})
        return self


def _moved(control):
    """The event of a control that the reader's own move fires: a menu's choice (its input event comes twice for one
    choice, which sent the tab's drawing twice), any other control's input."""
    return control.select if isinstance(control, gr.Dropdown) else control.input


def telling_tabs(inputs):
    """The `js=` of an event that reads the page's open tabs (`inputs`: its inputs_kwargs, `tabs` among them):
    app/page/open-tabs.js, which sets `tabs` as the event is sent."""
    return page_js.function("open-tabs", list(inputs).index("tabs"))


def _unique(triggers):
    """Each trigger once (a control may also be the tab's state: the Compare tab's results)."""
    seen, out = set(), []
    for t in triggers:
        key = (t.__self__._id, t.event_name)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def warm(tabs, langs=LANGS):
    """Draw, in a thread of its own, each view of `tabs` that reads no sentence, with its controls' first values,
    in each of `langs`: those kept per language (app.cache.per_language) are ready before a tab first asks for
    them. Returns the thread (started)."""
    def draw_all():
        for lang in langs:
            for tab in tabs:
                for v in (v for v in tab.views if not v.reads_translation):
                    try:
                        with speaking(lang):
                            v.draw(**{name: tab.controls[name].value for name in v.uses})
                    except Exception:  # noqa: BLE001 (a view that fails here says why when its tab asks)
                        pass
    thread = threading.Thread(target=draw_all, name="warm-views", daemon=True)
    thread.start()
    return thread


def by_component(fn, outputs):
    """An event callback `fn` that returns {output name: value}, as Gradio takes it: {component: value}
    (`outputs`: the components by name). It keeps `fn`'s name and signature."""
    @functools.wraps(fn)
    def named(*args, **kwargs):
        return {outputs[name]: value for name, value in fn(*args, **kwargs).items()}
    return named
