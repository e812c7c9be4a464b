"""Pages come and go on a public Space: what a page keeps on the server lives while the page is open, and goes
when it closes. The app runs in this process (so its state holder can be read) and is driven by
tools.pageclient.PageSession, which sends the events a browser tab sends, heartbeat included."""
import time

import pytest

from app.shared import SESSIONS_KEPT
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


def test_a_page_draws_every_view_through_the_server(served):
    demo, app = served
    with PageSession(app) as page:
        english = page.translate("Ein Hund läuft im Park.")
        assert english and "dog" in english.lower()
        for tab in app.tabs:
            assert page.open(tab) is not None
        held = inspections(demo, page.session)
        assert len(held) == 1 and held[0].translation == english


def test_a_closed_page_is_freed_at_once(served):
    demo, app = served
    page = PageSession(app).__enter__()
    page.translate("Zwei Kinder spielen am See.")
    session = page.session
    assert inspections(demo, session)
    page.close()
    wait_for(lambda: session not in demo.state_holder.session_data)
    with PageSession(app) as other:  # the server goes on serving new pages
        assert other.translate("Eine Katze schläft.")


def test_an_open_page_keeps_its_state(served):
    demo, app = served
    with PageSession(app) as keep, PageSession(app) as leave:
        keep.translate("Ein Mann fährt Fahrrad.")
        leave.translate("Eine Frau liest ein Buch.")
        leave.close()
        wait_for(lambda: leave.session not in demo.state_holder.session_data)
        assert inspections(demo, keep.session)
        assert keep.open(app.tabs[-1]) is not None


def test_pages_through_the_server_in_small():
    """`python -m tools.loadtest --pages` in small against `python app.py`: no failure."""
    from tools import loadtest
    r = loadtest.main(["--pages", "6", "--clients", "2", "--per-page", "3", "--warmup", "2"])
    assert r["failures"] == 0 and r["translations"] == 6 and r["pages"] == 2, r
