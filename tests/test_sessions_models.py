"""Two pages on two models at once (issue 54): each session's translations are made by the model its header's menu
names, and each keeps its own, through the server's events as a browser sends them (tools.pageclient)."""
import threading

import pytest

from app.i18n import speaking
from app.translating import translate
from app.ui import build_demo
from tests.conftest import needs_shipped, ships_history
from tools.pageclient import AppConfig, PageSession

pytestmark = [pytest.mark.slow, needs_shipped, pytest.mark.skipif(not ships_history(), reason="no run shipped")]
SENTENCE = "Ein Hund läuft über die Wiese."
POINT = "shipped@epoch-1"


@pytest.fixture(scope="module")
def served():
    demo = build_demo()
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
    yield demo, AppConfig.read(url)
    demo.close()


def held(demo, page):
    """The Inspection this page's session holds on the server (the page's state)."""
    from core.translate import Inspection
    data = demo.state_holder.session_data.get(page.session)
    return [v for v in data.state_data.values() if isinstance(v, Inspection)]


def test_two_pages_on_two_models_at_once_each_get_their_own(served):
    demo, app = served
    event = app.named("translate")
    box, menu = app.events[event]["inputs"][0], app.events[event]["inputs"][-1]
    settings = app.inputs(event)[1:7]
    english = {name: translate(SENTENCE, *settings, model=name)[0] for name in (POINT, "shipped")}
    assert english[POINT] != english["shipped"]
    pages = {name: PageSession(app).__enter__() for name in (POINT, "shipped")}
    try:
        got, start = {}, threading.Barrier(2)

        def session(name):
            start.wait()
            got[name] = pages[name].run(event, {box: SENTENCE, menu: name})[0]
        threads = [threading.Thread(target=session, args=(name,)) for name in pages]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == english  # each page's English is its model's
        for name, page in pages.items():
            (ins,) = held(demo, page)
            assert ins.model == name and ins.translation == english[name]
        # each page's status line is drawn from its own translation, naming a model other than the page's own
        from app.tabs.translate import status_view
        with speaking("en"):
            lines = {name: status_view(held(demo, page)[0]) for name, page in pages.items()}
        assert lines[POINT].startswith("model: the shipped model, after epoch 1") and "model:" not in lines["shipped"]
    finally:
        for page in pages.values():
            page.close()
