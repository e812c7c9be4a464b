"""What a tab will need from the model for a new translation, computed before it is asked for, while the model is
free.

Two views run the model for each sentence: Why (an attribution: one backward pass and a batched forward pass) and
What if (a recorded beam search). A tab that has such work gives its Tab a `warm(ins)` (app/views.py: `more`);
after a translation has been drawn, `WORK.after(ins, jobs)` hands the jobs to one thread of the server's, which
runs them a moment later, one at a time, each only once the model is free (app.shared.MODEL_LOCK, which every
event that runs the model holds). What a job computes goes into the tab's own cache (app/cache.py
PerTranslation), which an event asking for the same value meanwhile waits on rather than computing it twice.

Only the newest translations wait (PENDING): a job whose translation is gone (its session ended, or it was
dropped by a newer one) is skipped. A job that fails is dropped; its tab computes the value when it is opened and
says there what went wrong.
"""
import threading
import time
import weakref
from collections import deque

from .shared import MODEL_LOCK

PENDING = 8  # translations whose work waits; an older one is dropped
DELAY_S = 0.4  # after a translation is drawn: its page draws it meanwhile (the page and server may share the cores)


class IdleWork:
    def __init__(self, delay_s=DELAY_S, pending=PENDING):
        self.delay_s = delay_s
        self._waiting = deque(maxlen=pending)  # (when it may run, weak reference to the Inspection, jobs)
        self._wake = threading.Condition()
        self._thread = None
        self.done = 0  # jobs run (for the tests)

    def after(self, ins, jobs):
        """Run each of `jobs` (functions of the Inspection) for `ins`, soon, once the model is free."""
        if ins is None or not jobs:
            return
        with self._wake:
            self._waiting.append((time.monotonic() + self.delay_s, weakref.ref(ins), list(jobs)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="idle-work", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _next(self):
        with self._wake:
            while not self._waiting:
                self._wake.wait()
            when, ref, jobs = self._waiting[0]
            wait = when - time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                return None
            self._waiting.popleft()
            return ref, jobs

    def _run(self):
        while True:
            item = self._next()
            if item is None:
                continue
            ref, jobs = item
            for job in jobs:
                # wait until no reader uses the model or waits for it (the job takes the lock for its own passes,
                # each giving way to readers), and only then take the translation: one that went while the job
                # waited is not kept alive by the wait
                MODEL_LOCK.wait_free()
                ins = ref()
                if ins is None:
                    break
                try:
                    with MODEL_LOCK.idle():
                        job(ins)
                    self.done += 1
                except Exception:  # noqa: BLE001 (the tab computes it again when opened, and says why there)
                    pass
                del ins


WORK = IdleWork()
