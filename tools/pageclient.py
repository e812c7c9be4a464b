"""A page of the app without a browser: the events a browser tab sends, in Gradio's own protocol, over HTTP.

gradio_client reaches only the public endpoints (`/translate`); the views are drawn by private events, which a
page triggers by their index in the app's config. `PageSession` does what an open tab does: it keeps the
heartbeat stream open (so the server knows the page is there), joins the queue with an event's inputs (a State
input is sent empty: the server reads its own copy; an event off the queue is posted directly), reads the answer
from the session's event stream, and then runs what the page runs after it: its `.then` followers and the
listeners of each state it changed. Opening a tab selects it in its tab bar and runs the listeners of its select
event, the tab's drawing among them; a drawing is told the tabs selected in every bar, as the page's script tells it
(app/page/open-tabs.js). Closing it ends the heartbeat, which is how the server learns that a tab was closed (its
unload events run and its session is marked closed).

    app = AppConfig.read(url)
    with PageSession(app) as page:
        page.translate("Ein Hund läuft.")   # /translate, then the views of the open tab
        for tab in app.tabs:                # every tab and sub-tab opened in turn: each draws its views
            page.open(tab)
"""
import json
import socket
import urllib.parse
import uuid
from dataclasses import dataclass

import httpx

API = "/gradio_api"


class EventFailed(RuntimeError):
    """An event came back with an error (its message is Gradio's)."""


def tab_bars(layout, components, bar=None, out=None):
    """{tab component id: the id of the tab bar it is in} from the app's layout tree."""
    out = {} if out is None else out
    for child in layout.get("children", []):
        kind = components.get(child["id"], {}).get("type")
        if kind == "tabitem" and bar is not None:
            out[child["id"]] = bar
        tab_bars(child, components, child["id"] if kind == "tabs" else bar, out)
    return out


@dataclass
class AppConfig:
    """What a page needs from the app's /config: its events and its components' first values."""
    url: str
    events: dict      # event id -> its config entry
    components: dict  # component id -> its config entry
    bars: dict = None  # tab (component id) -> the tab bar (component id) it is in, in the page's order

    @classmethod
    def read(cls, url):
        cfg = httpx.get(url.rstrip("/") + "/config", timeout=30).json()
        components = {c["id"]: c for c in cfg["components"]}
        return cls(url.rstrip("/"), {d["id"]: d for d in cfg["dependencies"]}, components,
                   tab_bars(cfg["layout"], components))

    def named(self, api_name):
        return next(i for i, d in self.events.items() if d.get("api_name") == api_name)

    def followers(self, event):
        """The events chained after `event` with .then / .success that run on the server, in order (an event
        with no Python function runs in the browser alone)."""
        return [i for i, d in self.events.items() if d.get("trigger_after") == event and d.get("backend_fn", True)]

    @property
    def tabs(self):
        """Every tab and sub-tab with events of its own (their component ids), in the order of the page."""
        found = [t[0] for d in self.events.values() if d.get("backend_fn", True) for t in d["targets"]
                 if t[1] == "select" and self.components[t[0]]["type"] == "tabitem"]
        return list(dict.fromkeys(found))

    def listeners(self, component, event_name):
        """The events the page runs on `event_name` of `component`, in the order they were added."""
        return [i for i, d in self.events.items() if d.get("backend_fn", True)
                and [component, event_name] in [list(t) for t in d["targets"]]]

    def drawing(self, tab):
        """The event that draws a tab's views when it opens: the listener of its select event that has outputs (the
        tab's one listener, app/views.py)."""
        return next(i for i in self.listeners(tab, "select") if self.events[i]["outputs"])

    def told_tabs(self, selected):
        """{component id: value} of the box through which a drawing is told the open tabs, for `selected` ({tab
        bar: tab component}): the tabs' ids, as app/page/open-tabs.js sends them."""
        box = next((i for i, c in self.components.items() if c["props"].get("elem_id") == "open-tabs"), None)
        ids = [self.components[t]["props"].get("id") for t in selected.values()]
        return {} if box is None else {box: json.dumps(ids)}

    def inputs(self, event, overrides=None):
        """An event's input values as a page sends them: a state empty, a control at its first value."""
        overrides = overrides or {}
        out = []
        for c in self.events[event]["inputs"]:
            comp = self.components[c]
            out.append(overrides.get(c, None if comp["type"] == "state" else comp["props"].get("value")))
        return out


class PageSession:
    """One open tab of the app: a session of its own, its heartbeat, its events."""

    def __init__(self, app, timeout=600):
        self.app, self.timeout = app, timeout
        self.session = uuid.uuid4().hex[:11]
        self.sent = 0  # events sent so far
        self.answers = {}  # event id -> its outputs, the last time it ran
        self.selected = {}  # tab bar -> the tab selected in it (each bar's first tab, as the page opens)
        for tab, bar in (app.bars or {}).items():
            self.selected.setdefault(bar, tab)
        self.http = httpx.Client(base_url=app.url + API, timeout=timeout)
        self._heartbeat = None

    def __enter__(self):
        self.open_heartbeat()
        return self

    def __exit__(self, *exc):
        self.close()

    def open_heartbeat(self):
        """Open the heartbeat stream, as the page's EventSource does, and leave it open. Its few bytes (one line
        every 15 s) are not read: the connection only has to exist, and to end when the page closes."""
        u = urllib.parse.urlsplit(self.app.url)
        self._heartbeat = socket.create_connection((u.hostname, u.port or 80), timeout=self.timeout)
        path = f"{u.path.rstrip('/')}{API}/heartbeat/{self.session}"
        self._heartbeat.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nAccept: text/event-stream\r\n"
                                "\r\n".encode())

    def close(self):
        """Close the page: its heartbeat connection ends, and the server marks the session closed."""
        if self._heartbeat is not None:
            self._heartbeat.shutdown(socket.SHUT_RDWR)
            self._heartbeat.close()
            self._heartbeat = None
        self.http.close()

    def call(self, event, data):
        """Run event `event` with input values `data`: (its output values, the ids of the states it changed), or
        EventFailed."""
        body = {"data": data, "fn_index": event, "session_hash": self.session, "event_data": None,
                "trigger_id": None}
        self.sent += 1
        if not self.app.events[event].get("queue", True):  # off the queue: a direct call
            answer = self.http.post("/run/predict", json=body)
            out = answer.json()
            if answer.status_code != 200 or out.get("error"):
                raise EventFailed(out.get("error") or answer.text)
            return out.get("data"), out.get("changed_state_ids") or []
        joined = self.http.post("/queue/join", json=body)
        if joined.status_code != 200:
            raise EventFailed(joined.json().get("detail") or joined.text)
        event_id = joined.json()["event_id"]
        with self.http.stream("GET", "/queue/data", params={"session_hash": self.session}) as r:
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") != event_id or msg.get("msg") != "process_completed":
                    continue
                out = msg.get("output") or {}
                if not msg.get("success"):
                    raise EventFailed(out.get("error") or "the event failed")
                return out.get("data"), out.get("changed_state_ids") or []
        raise EventFailed("the event stream ended before the event completed")

    def run(self, event, overrides=None):
        """An event and what the page runs after it (its followers, the listeners of the states it changed, one
        after another here where the page sends them side by side): the first one's outputs. Every event's last
        outputs are kept in `answers`."""
        told = self.app.told_tabs(self.selected)
        out, changed = self.call(event, self.app.inputs(event, {**told, **(overrides or {})}))
        self.answers[event] = out
        for state in changed:
            for listener in self.app.listeners(state, "change"):
                self.run(listener)
        for follower in self.app.followers(event):
            self.run(follower)
        return out

    def translate(self, text):
        """The German `text` translated by /translate, then drawn in the open tab's views: the English."""
        event = self.app.named("translate")
        box = self.app.events[event]["inputs"][0]
        return self.run(event, {box: text})[0]

    def open(self, tab):
        """Open a tab (by its component id): selected in its bar, its select listeners run in order, the tab's
        drawing among them, which draws its views for the last translation. The drawing's outputs."""
        drawing = self.app.drawing(tab)
        self.answers.pop(drawing, None)
        self.selected[self.app.bars[tab]] = tab
        for event in self.app.listeners(tab, "select"):
            self.run(event)
        return self.answers.get(drawing)
