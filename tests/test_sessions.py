"""Pages come and go on a public Space: what a page keeps on the server lives while the page is open, and goes
when it closes. The app runs in this process (so its state holder can be read) and is driven by
tools.pageclient.PageSession, which sends the events a browser tab sends, heartbeat included."""
import time

import pytest

from app.shared import SESSIONS_KEPT
from app.tabs.translate import translate
from app.ui import build_demo
from core.translate import Inspection
from tests.conftest import needs_shipped
from tools.pageclient import AppConfig, PageSession

pytestmark = [pytest.mark.slow, needs_shipped]  # a server in this process, pages against it
DEADLINE_S = 60  # the longest a condition may take on a busy machine: a bound, never a pause


@pytest.fixture(scope="module")
def served():
    demo = build_demo()
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True,
                            state_session_capacity=SESSIONS_KEPT)
    yield demo, AppConfig.read(url)
    demo.close()


def wait_for(condition):
    end = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.05)


def inspections(demo, session):
    """The Inspections held in the states of `session` on the server."""
    held = demo.state_holder.session_data.get(session)
    return [] if held is None else [v for v in held.state_data.values() if isinstance(v, Inspection)]


def expected(app, text):
    """The English the Translate tab gives `text` with the page's first decoding settings, called directly."""
    return translate(text, *app.inputs(app.named("translate"))[1:7])[0]


def skipped(value):
    """Whether an output value is gr.skip() as it comes over the wire: an update that changes nothing (a view of
    one output may come as a list of one)."""
    if isinstance(value, list):
        return len(value) > 0 and all(skipped(v) for v in value)
    return isinstance(value, dict) and value.get("__type__") == "update" and \
        all(k == "__type__" or skipped(v) for k, v in value.items())


def test_a_page_draws_every_view_through_the_server(served):
    """Each tab opened after a translation draws its views; opened again for the same translation, none draws
    anything."""
    demo, app = served
    with PageSession(app) as page:
        english = page.translate("Ein Hund läuft im Park.")
        assert english == expected(app, "Ein Hund läuft im Park.") and "dog" in english.lower()
        drawn = {}
        for tab in app.tabs:
            out = page.open(tab)
            event = app.drawing(tab)
            assert len(out) == len(app.events[event]["outputs"]), app.components[tab]["props"].get("id")
            drawn[app.components[tab]["props"]["id"]] = [v for v in out if not skipped(v)]
        # nothing new on opening: the Learn tab (open at first, drawn with the translation) and the sub-tabs open
        # at first in their tabs (drawn when their tab opened)
        assert [name for name, values in drawn.items() if not values] == ["learn", "one-head", "models", "modules"]
        assert "▁dog" in str(drawn["why"][0]["choices"])  # the Why tab's menu: this translation's tokens
        assert all(skipped(v) for tab in app.tabs for v in page.open(tab))
        held = inspections(demo, page.session)
        assert len(held) == 1 and held[0].translation == english and held[0].source == "Ein Hund läuft im Park."


def test_a_closed_page_is_freed_at_once(served):
    demo, app = served
    page = PageSession(app).__enter__()
    english = page.translate("Zwei Kinder spielen am See.")
    session = page.session
    assert [ins.translation for ins in inspections(demo, session)] == [english]
    page.close()
    wait_for(lambda: session not in demo.state_holder.session_data)
    with PageSession(app) as other:  # the server goes on serving new pages, each with its own state
        cat = other.translate("Eine Katze schläft.")
        assert cat == expected(app, "Eine Katze schläft.") and "cat" in cat.lower()
        assert [ins.translation for ins in inspections(demo, other.session)] == [cat]
    assert session not in demo.state_holder.session_data  # the closed page's state is not brought back


def test_an_open_page_keeps_its_state(served):
    demo, app = served
    with PageSession(app) as keep, PageSession(app) as leave:
        english = keep.translate("Ein Mann fährt Fahrrad.")
        leave.translate("Eine Frau liest ein Buch.")
        leave.close()
        wait_for(lambda: leave.session not in demo.state_holder.session_data)
        assert [ins.source for ins in inspections(demo, keep.session)] == ["Ein Mann fährt Fahrrad."]
        why = next(t for t in app.tabs if app.components[t]["props"]["id"] == "why")
        menu = keep.open(why)[0]  # drawn from the kept translation, not the closed page's
        assert [label.split(" ", 1)[1] for label, _ in menu["choices"]] == \
            inspections(demo, keep.session)[0].out_tokens
        assert english == expected(app, "Ein Mann fährt Fahrrad.") and "▁woman" not in str(menu)


def test_pages_through_the_server_in_small(served_app):
    """`python -m tools.loadtest --pages` in small against `python app.py` (the run's, tests/conftest.py
    served_app): no failure."""
    from tools import loadtest
    r = loadtest.main(["--url", served_app.url, "--pid", str(served_app.proc.pid),
                       "--pages", "6", "--clients", "2", "--per-page", "3", "--warmup", "2"])
    assert r["failures"] == 0 and r["translations"] == 6 and r["pages"] == 2, r
