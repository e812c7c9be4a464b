"""What a tab computes from one translation, kept for the next time it is asked for; and what a view that reads
no sentence draws, kept per language (`per_language`).

An Inspection lives in a session's state; a cache holds it weakly (a session that is gone takes its translation
with it) and checks that the object behind a kept id is still the same one, since Python reuses the id of an
object once it is freed.
"""
import functools
import threading
import weakref
from collections import OrderedDict

from .i18n import speaking, spoken


class Once:
    """Values made once per key however many threads ask at once: the first caller computes it, outside the lock,
    and a caller asking meanwhile waits for it, then looks again. `lock` guards the caller's own store."""

    def __init__(self):
        self.lock = threading.Lock()
        self._computing = {}  # key -> a lock held while its value is computed

    def get(self, key, look, compute, keep):
        """look() -> (found?, value), called under `lock`; else compute() (by one caller) and keep(value), under
        `lock`. Returns the value."""
        while True:
            with self.lock:
                found, value = look()
                if found:
                    return value
                busy = self._computing.get(key)
                if busy is None:
                    busy = self._computing[key] = threading.Lock()
                    busy.acquire()
                    break
            with busy:  # another caller computes it: wait, then look again
                pass
        try:
            value = compute()
            with self.lock:
                keep(value)
            return value
        finally:
            with self.lock:
                del self._computing[key]
            busy.release()


class PerTranslation:
    """Values computed per (translation, key), the `size` most recently used kept, the least recently used
    dropped first. Safe to share between threads: each value is computed once (Once)."""

    def __init__(self, size):
        self.size = size
        self._kept = OrderedDict()  # (id of the Inspection, key) -> (a weak reference to it, the value)
        self._once = Once()

    def get(self, ins, key, compute):
        """The value kept for (`ins`, `key`); else compute() run, kept and returned."""
        k = (id(ins), key)

        def look():
            hit = self._kept.get(k)
            if hit is not None and hit[0]() is ins:
                self._kept.move_to_end(k)
                return True, hit[1]
            return False, None

        def keep(value):
            self._kept[k] = (weakref.ref(ins), value)
            self._kept.move_to_end(k)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return self._once.get(k, look, compute, keep)

    def __len__(self):
        return len(self._kept)


def per_language(maxsize=None):
    """A decorator: fn(*args, **kwargs) drawn once per process for each language it is drawn in (the event's:
    app.i18n) and its arguments, the `maxsize` most recently used kept (None: all). For views that read no sentence (the
    shipped logs, a schedule, a formula): every tab opens fast, and a figure kept is never changed after."""
    def keep(fn):
        @functools.lru_cache(maxsize=maxsize)
        def drawn_in(lang, *args, **kwargs):
            with speaking(lang):
                return fn(*args, **kwargs)

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            return drawn_in(spoken(), *args, **kwargs)
        cached.cache_clear, cached.cache_info = drawn_in.cache_clear, drawn_in.cache_info
        return cached
    return keep
