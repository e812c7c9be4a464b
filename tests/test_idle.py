"""app/idle.py: the model work a tab will need for a new translation, run before the tab is opened, one job at a
time, once the model is free; and the Why and What if tabs' jobs, whose results their views then find kept."""
import gc
import threading
import time

import pytest

from app import idle
from app.shared import MODEL_LOCK
from tests.conftest import needs_shipped

WAIT_S = 30  # a bound on a busy machine, never a pause


class Sentence:  # an Inspection stands in: IdleWork holds it weakly, as a session's state does
    pass


def test_jobs_run_in_order_once_the_model_is_free():
    work, ran, done = idle.IdleWork(delay_s=0), [], threading.Event()
    a, b = Sentence(), Sentence()
    with MODEL_LOCK:  # an event is running the model
        work.after(a, [lambda s: ran.append(("a1", s is a, MODEL_LOCK.locked())), lambda s: ran.append(("a2", True, False))])
        work.after(b, [lambda s: (ran.append(("b", s is b, False)), done.set())])
        assert ran == []  # nothing can have run: the model was not free
    assert done.wait(WAIT_S)
    assert [r[0] for r in ran] == ["a1", "a2", "b"]
    assert all(r[1] for r in ran)
    assert ran[0][2] is False  # the job ran with the model free (it takes the lock itself for its passes)


def test_a_reader_waits_for_one_pass_of_idle_work_at_most():
    """Idle work of many passes (each taking the model's lock, as Why's attribution does) meets a reader's event
    that asks for the model: the reader gets it as the pass under way ends, before the job's next pass, rather than
    after all of them (a plain lock may go back to the thread that released it, again and again)."""
    work, order = idle.IdleWork(delay_s=0), []
    first_pass, reader_waits, done = threading.Event(), threading.Event(), threading.Event()

    def job(s):
        for k in range(40):
            with MODEL_LOCK:
                order.append(f"idle {k}")
                if k == 0:
                    first_pass.set()
                    assert reader_waits.wait(WAIT_S)
                    end = time.monotonic() + WAIT_S
                    while MODEL_LOCK._readers == 0:  # the reader is counted before this pass lets go
                        assert time.monotonic() < end
                        time.sleep(0.001)
        done.set()

    s = Sentence()
    work.after(s, [job])
    assert first_pass.wait(WAIT_S)

    def reader():
        reader_waits.set()
        with MODEL_LOCK:
            order.append("reader")
    t = threading.Thread(target=reader)
    t.start()
    t.join(WAIT_S)
    assert done.wait(WAIT_S)
    assert order.index("reader") == 1, order[:5]  # right after the pass it waited on
    assert order.count("reader") == 1 and len(order) == 41


def test_the_work_of_a_translation_that_is_gone_is_skipped():
    work, ran, done = idle.IdleWork(delay_s=0), [], threading.Event()
    gone, kept = Sentence(), Sentence()
    with MODEL_LOCK:  # both wait
        work.after(gone, [lambda s: ran.append("gone")])
        # the thread has taken the first one's jobs and waits for the model with them (the race CI met: it must
        # not hold the translation itself while it waits)
        end = time.monotonic() + WAIT_S
        while work._waiting:
            assert time.monotonic() < end, "the idle thread never took the job"
            time.sleep(0.01)
        work.after(kept, [lambda s: (ran.append("kept"), done.set())])
        del gone
        gc.collect()
    assert done.wait(WAIT_S)
    assert ran == ["kept"]


def test_a_failing_job_is_dropped_and_the_next_one_runs():
    work, done = idle.IdleWork(delay_s=0), threading.Event()
    s = Sentence()
    work.after(s, [lambda s: 1 / 0, lambda s: done.set()])
    assert done.wait(WAIT_S)


def test_only_the_newest_translations_wait():
    work, ran, done = idle.IdleWork(delay_s=0, pending=2), [], threading.Event()
    sentences = [Sentence() for _ in range(4)]
    with MODEL_LOCK:
        for i, s in enumerate(sentences):
            work.after(s, [lambda s, i=i: (ran.append(i), i == 3 and done.set())])
    assert done.wait(WAIT_S)
    # the newest two ran, last; of the older ones, at most the one the thread had already taken when the others
    # came (it waits for the model with it) ran before them
    assert ran[-2:] == [2, 3] and len(ran) <= 3, ran


@needs_shipped
def test_why_and_what_if_find_their_first_drawing_computed(monkeypatch):
    from app.i18n import speaking
    from app.tabs import translate, whatif, why
    ins = translate.translate("Zwei Hunde laufen durch den Schnee.", "greedy")[2]
    why.warm(ins)
    whatif.search_tree(ins, whatif.BEAM.default)
    # drawn now, neither runs the model again
    monkeypatch.setattr(why, "attribute", lambda *a, **k: pytest.fail("Why ran the model again"))
    monkeypatch.setattr(whatif.searchtree, "search", lambda *a, **k: pytest.fail("What if searched again"))
    with speaking("en"):
        why.why_view(ins, None)
        whatif.tree_view(ins, whatif.BEAM.default)


def test_the_translation_shower_hands_on_the_translation_once_it_is_drawn():
    from app.views import translation_shower
    handed, s = [], Sentence()
    translation_shower([], then=handed.append)({"open": {}, "drawn": {}}, s, "en")
    translation_shower([], then=handed.append)({"open": {}, "drawn": {}}, None, "en")  # no translation: nothing
    assert handed == [s]


def test_the_page_gives_why_and_what_if_work_for_later():
    from app.ui import build_demo
    demo = build_demo()
    assert sorted("/".join(t.where) for t in demo.tab_views if "warm" in t.more) == ["whatif", "why"]
