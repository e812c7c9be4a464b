"""What a tab computes per translation is kept (app/cache.py): least recently used dropped first, never handed to
another translation that took a freed one's id, and computed once when many ask at the same time."""
import gc
import threading
import time

from app.cache import PerTranslation


class Ins:
    """Stands in for an Inspection: any object a weak reference can point to."""


def counting(value):
    """A compute function that counts its calls."""
    def compute():
        compute.calls += 1
        return value
    compute.calls = 0
    return compute


def test_a_value_is_computed_once_and_kept():
    cache, ins = PerTranslation(4), Ins()
    compute = counting("tree")
    assert cache.get(ins, 4, compute) == "tree" and cache.get(ins, 4, compute) == "tree"
    assert compute.calls == 1
    assert cache.get(ins, 8, counting("other")) == "other"  # another key of the same translation
    assert cache.get(Ins(), 4, counting("new")) == "new"  # another translation, the same key


def test_the_least_recently_used_is_dropped_first():
    cache, a, b, c = PerTranslation(2), Ins(), Ins(), Ins()
    cache.get(a, 0, counting("a"))
    cache.get(b, 0, counting("b"))
    cache.get(a, 0, counting("a again"))  # a used: b is now the least recently used
    cache.get(c, 0, counting("c"))  # over the size: b goes
    assert len(cache) == 2
    assert cache.get(a, 0, counting("a again")) == "a" and cache.get(c, 0, counting("c again")) == "c"
    assert cache.get(b, 0, counting("b again")) == "b again"  # computed anew; a, the oldest now, went
    assert cache.get(a, 0, counting("a recomputed")) == "a recomputed"


def test_a_reused_id_is_not_taken_for_the_translation_that_had_it(monkeypatch):
    cache = PerTranslation(4)
    monkeypatch.setattr("app.cache.id", lambda obj: 42, raising=False)  # as when a freed id is handed out again
    old, new = Ins(), Ins()
    assert cache.get(old, 1, counting("old value")) == "old value"
    assert cache.get(new, 1, counting("new value")) == "new value"
    assert cache.get(new, 1, counting("again")) == "new value"
    del new
    gc.collect()
    assert cache.get(Ins(), 1, counting("after")) == "after"  # its reference is dead: never handed out


def test_callers_at_the_same_time_compute_once():
    cache, ins, start = PerTranslation(4), Ins(), threading.Barrier(8)
    calls, results = [], []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return "recorded"

    def ask():
        start.wait()
        results.append(cache.get(ins, "recording", slow))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["recorded"] * 8 and len(calls) == 1


def test_a_failed_computation_is_not_kept_and_others_may_try_again():
    cache, ins = PerTranslation(4), Ins()

    def fails():
        raise RuntimeError("no model")

    try:
        cache.get(ins, 0, fails)
    except RuntimeError:
        pass
    assert len(cache) == 0 and cache.get(ins, 0, counting("works")) == "works"
