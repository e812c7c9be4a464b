"""Compute a view when it is shown.

Each session keeps a small page record (a gr.State): which tab is open at each level of the page, and what
each view last drew. A view is one or more output components drawn together, in a tab (or a tab within a tab);
it names the controls its drawing reads and the outputs it draws. Three kinds of event draw views, all through
`draw_views`:

- a new translation draws the views on screen; a view in a closed tab that shows an earlier translation is
  cleared, so no tab keeps the old sentence's figures beside the new sentence's tokens;
- opening a tab draws its views that are not already drawn for the same translation and controls;
- moving a control of an open tab redraws the views that read it.

The rest of the time a view is left as it is (`gr.skip()`): nothing is recomputed and nothing is sent.
"""
import functools
import itertools
import threading
from dataclasses import dataclass, field
from typing import Callable

import gradio as gr

from . import page as page_js
from .gradio_adapter import AHEAD_ID
from .i18n import LANGS, L, read_lang, speaking

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


def page_state(open_tabs):
    """A session's page record, given the tab open at first at each level ({ROOT: "overview", ...})."""
    return gr.State({"open": dict(open_tabs), "drawn": {}})


def open_tab(page, where):
    """Record that the tab at path `where` (tab ids from the top) is now the one shown at its level."""
    level = ROOT
    for tab in where:
        page["open"][level] = tab
        level = tab


def shown(page, where, ahead=False):
    """Whether the tab at path `where` is on screen: open at every level above it. `ahead`: whether it will be once
    its top-level tab is opened (open at every level below the top)."""
    level = ROOT
    for tab in where:
        if page["open"].get(level) != tab and not (ahead and level == ROOT):
            return False
        level = tab
    return True


def _fresh(page, v, ins, used):
    last = page["drawn"].get(v.name)
    return last, last is not None and last[0] is ins and last[1] == used


DRAWINGS = itertools.count(1)  # each drawing of a view, numbered in the order the drawings began


def _newer_one_sent(page, v, number):
    """Whether a drawing of `v` that began after drawing `number` has already been sent to the page.

    A page's events run two at a time (app/ui.py CONCURRENCY), and the browser shows each event's outputs as they
    come back. Where two events draw one view with different controls (a control moved while the tab's opening
    still draws), the one that began first may come back last: sent, it would replace the later figure on screen while the record names the later
    one, and the next event would find the view drawn already. So a drawing goes out unless a later one went out
    first; one that comes back before a later one still goes out (Play's ticks, each drawn slower than they come
    under load, show as they come rather than none of them until the last)."""
    return page.setdefault("sent", {}).get(v.name, 0) > number


def draw_views(page, ins, views, controls, lang, ahead=False):
    """{output name: value} of `views`: drawn, in `lang`, where shown and not drawn already for `ins`, the
    controls the view reads (`controls`: their values by name) and `lang`; cleared where hidden and drawn for an
    earlier translation. An output left out is left as it is (nothing is computed, nothing is sent). `ahead`:
    the views that read no sentence are drawn where their tab's opening will show them (`shown(..., ahead=True)`),
    those that read one are left as they are, and so is a view on screen drawn already: its controls' own events
    draw it,
    and the ahead event, which carries every control's value from the moment it was sent, may carry older values
    than a control event that began before it (under load the Lab's result was put back to an earlier choice)."""
    out, given = {}, ins
    if ahead:
        views = [v for v in views if not v.reads_translation]
    for v in views:
        ins = given if v.reads_translation else None  # a new translation leaves a view that does not read it
        used = {name: controls[name] for name in v.uses}
        if v.resolve is not None and (ins is not None or not v.reads_translation):
            used = v.resolve(ins, **used) if v.reads_translation else v.resolve(**used)
        key = (tuple(used.values()), read_lang(lang))
        last, fresh = _fresh(page, v, ins, key)
        if ahead and last is not None and shown(page, v.where):
            continue  # on screen and drawn: its own controls' events draw it
        if shown(page, v.where, ahead) and not fresh and (ins is not None or not v.reads_translation):
            page["drawn"][v.name] = (ins, key)
            number = next(DRAWINGS)
            with speaking(lang):
                values = v.draw(ins, **used) if v.reads_translation else v.draw(**used)
            if _newer_one_sent(page, v, number):
                continue  # a drawing begun after this one is on screen already: it stays, as the record says
            page["sent"][v.name] = number
            out.update(_named(v, values))
        elif shown(page, v.where) and not fresh and callable(v.blank):  # no translation yet: its placeholder
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


@dataclass
class Tab:
    """What the build() of a tab with views returns: where it is, its views, its controls and outputs by name
    (components), and the page-wide components its events read: the page record, the page's language and, for a
    tab that shows a translation, the state holding the Inspection. `more` holds what other parts of the page
    reach (the Translate tab's event, the Learn path's progress)."""
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
        page = dict(page=self.page, lang=self.lang, **({"ins": self.state} if self.shows_translation else {}))
        return dict(page, **self.controls)

    def show(self, page, lang, ins=None, ahead=False, **controls):
        """{component: value} of its views for the page as it is (draw_views), gr.skip() when nothing changes."""
        values = draw_views(page, ins, self.views, controls, lang, ahead)
        return {self.outputs[name]: value for name, value in values.items()} or gr.skip()

    def opened(self, page, lang, ins=None, **controls):
        """The tab's select event: record it as open, then show its views."""
        open_tab(page, self.where)
        return self.show(page, lang, ins, **controls)

    def opener(self, where):
        """The select event of the tab (or a tab within it) at path `where`: record it as open, then show the
        views. Named after the path (open_attention_one_head), as the page's events are known by name."""
        def opened(page, lang, ins=None, **controls):
            open_tab(page, where)
            return self.show(page, lang, ins, **controls)
        opened.__name__ = f"open_{'_'.join(where)}".replace("-", "_")
        return opened

    def wire(self, tab, subtabs=None, by_hand=(), **event):
        """Wire the tab's select event, those of the tabs within it (`subtabs`: {id: gr.Tab}) and its controls'
        changes (the page's language is not among them: a new language is one event for the whole page,
        app/ui.py; nor is a gr.State, which the event that sets it follows with `show`). A control named in
        `by_hand` redraws only when the reader moves it (its input event): one that the tab's own drawing sets
        (a menu's choices and first value) would otherwise send a second event after each drawing, and where one
        event sets several controls, each change would be sent with the others' values from before. `event`:
        more of Gradio's settings for these events (concurrency_id="model" where drawing may run the model)."""
        outputs, event = list(self.outputs.values()), dict(api_visibility="private", **event)
        # an opening shows its progress on the views that read the sentence (they may wait for the model); one that
        # reads none was sent ahead (ahead_shower) or comes from a cache, and is not covered meanwhile
        slow = [self.outputs[name] for v in self.views if v.reads_translation for name in v.outputs]
        progress = dict(show_progress_on=slow) if slow else dict(show_progress="hidden")
        for where, t in [(self.where, tab), *(((*self.where, sub), t) for sub, t in (subtabs or {}).items())]:
            t.select(self.opener(where), None, outputs, inputs_kwargs=self.inputs(), **progress, **event)
        moved = [c.input if name in by_hand else c.change for name, c in self.controls.items()
                 if not isinstance(c, gr.State)]
        if moved:
            gr.on(moved, self.show, None, outputs, inputs_kwargs=self.inputs(), **event)
        return self


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


OWN_STATE = ":state"  # a tab's own state among an event's named inputs: "<tab id>/:state"


def page_inputs(tabs, page, state, lang):
    """The inputs by name of one event that reads every tab in `tabs`: the page, the state (unless None), the
    language, then each tab's controls under "<tab id>/<name>", and the state of a tab whose views read one of its
    own (the Compare tab's results) under "<tab id>/:state"."""
    named = dict(page=page, ins=state, lang=lang) if state is not None else dict(page=page, lang=lang)
    for tab in tabs:
        named.update({f"{_tab_id(tab)}/{n}": c for n, c in tab.controls.items() if c is not lang})
        if tab.state is not None and tab.state is not state:
            named[f"{_tab_id(tab)}/{OWN_STATE}"] = tab.state
    return named


def _tab_id(tab):
    return "/".join(tab.where)


def _show_all(tabs, page, ins, lang, named, ahead=False):
    out = {}
    for tab in tabs:
        prefix = f"{_tab_id(tab)}/"
        mine = {n[len(prefix):]: v for n, v in named.items() if n.startswith(prefix)}
        own = mine.pop(OWN_STATE, ins)  # a tab's own state, else the translation
        shown_now = tab.show(page, lang, own if tab.shows_translation else None, ahead=ahead, **mine)
        out.update(shown_now if isinstance(shown_now, dict) and not _skipped(shown_now) else {})
    return out or gr.skip()


def _skipped(value):
    return isinstance(value, dict) and value == gr.skip()


def translation_shower(tabs):
    """The callback that draws a new translation in every view that shows one: those on screen drawn, the
    others cleared. `tabs` are the tabs that show a translation; it takes the page, the Inspection, the language
    and each tab's controls by name (page_inputs)."""
    def show_translation(page, ins, lang, **named):
        return _show_all(tabs, page, ins, lang, named)
    return show_translation


def ahead_shower(tabs):
    """The callback of the page's idle event (wire_ahead): in every tab of `tabs`, each view that reads no sentence
    and that the tab's opening will show, drawn now unless drawn already for the controls it reads and the page's
    language. It takes the page, the language and each tab's controls by name (page_inputs with no state); the
    tab's opening then finds them drawn, and its page draws them at once."""
    def draw_ahead(page, lang, **named):
        return _show_all(tabs, page, None, lang, named, ahead=True)
    return draw_ahead


def wire_ahead(tabs, page, lang):
    """The page's idle event: a visually hidden button (app.gradio_adapter.AHEAD_ID), which the page clicks once it
    is quiet (app/page/idle.js), draws ahead (ahead_shower) the views of `tabs` that read no sentence;
    then <html> gets data-drawn-ahead. Returns the event's settings, for a new language to run it again."""
    quiet = [t for t in tabs if any(not v.reads_translation for v in t.views)]
    button = gr.Button(L("ui.ahead"), visible="hidden", elem_id=AHEAD_ID)
    # every page sends one: one at a time, beside the translations rather than in their line (the views come from
    # the caches that app.views.warm fills; the Masks tab's batch, drawn anew, takes the model's lock for its pass)
    event = dict(fn=ahead_shower(quiet), inputs=None, outputs=[o for t in quiet for o in t.outputs.values()],
                 inputs_kwargs=page_inputs(quiet, page, None, lang), api_visibility="private", show_progress="hidden",
                 concurrency_id="ahead", concurrency_limit=1)
    button.click(**event).then(None, js=page_js.function("drawn-ahead"), api_visibility="private")
    return event


def language_shower(tabs):
    """The callback of the page's language switch: every tab's views on screen drawn again in the new language,
    in one event rather than one a tab. It takes what `translation_shower` takes; a view in a hidden tab is left,
    and drawn in the new language when its tab is next opened."""
    def show_language(page, ins, lang, **named):
        return _show_all(tabs, page, ins, lang, named)
    return show_language
