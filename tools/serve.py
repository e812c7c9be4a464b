"""Run `python app.py` in a child process and learn its address from the server itself.

Used by the browser tests and the cold-start benchmark (`python -m tools.bench`):

    with AppProcess(log=path) as app:   # returns once the first page has been served
        open_in_browser(app.url)

No port is chosen here. Given no --port, app.py lets Gradio pick one: it binds the first free port from
$GRADIO_SERVER_PORT (default 7860) up, moving on when a bind fails, and prints
"Running on local URL:  http://HOST:PORT". Reserving a port here and releasing it for the server would race with
any other process that binds in between; reading the address the server printed does not.
"""
import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL_URL = re.compile(r"Running on local URL:\s+(https?://[^\s,]+)")
# app.py as __main__, its threads' stacks written to its output on SIGUSR1 and its Gradio queue's state on SIGUSR2
# (AppProcess.stacks, for failure messages)
STARTER = ("import faulthandler, runpy, signal, sys; sys.argv[0] = 'app.py'; "
           "hasattr(signal, 'SIGUSR1') and faulthandler.register(signal.SIGUSR1, all_threads=True); "
           "from tools.serve import report_queue; "
           "hasattr(signal, 'SIGUSR2') and signal.signal(signal.SIGUSR2, lambda *_: report_queue()); "
           "runpy.run_path('app.py', run_name='__main__')")
QUEUE_HEADER = "gradio queue:"


def report_queue():
    """Print what each Gradio queue of this process holds: the events its workers run, each concurrency group's
    running and waiting events (function, session, seconds since sent) and the messages each session has yet to
    fetch. For the failure message of a test whose page waits on an event while no thread of the app runs it."""
    import gc
    try:
        now, lines = time.monotonic(), [QUEUE_HEADER]

        def named(event):
            return f"{event.fn.name}#{event.fn._id} ({event.session_hash[:6]}, {now - event.enqueue_time:.1f} s)"
        for queue in [o for o in gc.get_objects() if type(o).__name__ == "Queue"
                      and type(o).__module__ == "gradio.queueing"]:
            for worker, job in enumerate(queue.active_jobs):
                if job:
                    lines.append(f"  worker {worker} runs: {', '.join(named(e) for e in job)}")
            for group, waiting in queue.event_queue_per_concurrency_id.items():
                if waiting.queue or waiting.current_concurrency:
                    lines.append(f"  group {group}: {waiting.current_concurrency} running (limit "
                                 f"{waiting.concurrency_limit}), waiting: {[named(e) for e in waiting.queue]}")
            unread = {session[:6]: messages.qsize() for session, messages in queue.pending_messages_per_session.items()
                      if messages.qsize()}
            lines.append(f"  messages not yet fetched, by session: {unread}")
            lines.append(f"  events sent and not ended, by session: "
                         f"{ {s[:6]: len(ids) for s, ids in queue.pending_event_ids_session.items() if ids} }")
        print("\n" + "\n".join(lines) + "\n", flush=True)
    except Exception as e:  # a failure message is being written: it says the queue could not be read
        print(f"\n{QUEUE_HEADER} not read ({type(e).__name__}: {e})\n", flush=True)


class AppProcess:
    """`python app.py` as a child process; its output goes to `log` (if given) and its last lines are kept. `env`
    sets variables for the child alone (None removes one), this process's environment left as it is."""

    def __init__(self, *args, log=None, timeout=120.0, env=None):
        self.args, self.log, self.timeout, self.env = args, log, timeout, dict(env or {})
        self.url = None  # the server's address, once it has printed it
        self.lines = collections.deque(maxlen=300)
        self.proc = self._reader = self._caught = None
        self._url_known = threading.Event()  # set when the address is printed or the process has ended

    def __enter__(self):
        env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        self.proc = subprocess.Popen([sys.executable, "-c", STARTER, *self.args], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, encoding="utf-8", errors="replace")
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        try:
            self.wait_until_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def _read_output(self):
        """Copy the child's output until it ends (reading it also keeps the pipe from filling up)."""
        with open(self.log, "w", encoding="utf-8") if self.log else contextlib.nullcontext() as out:
            for line in self.proc.stdout:
                self.lines.append(line)
                if self._caught is not None:
                    self._caught.append(line)
                if out:
                    out.write(line)
                    out.flush()
                found = LOCAL_URL.search(line)
                if found and self.url is None:
                    # a server bound to every interface (a Space) is reached here through the loopback one
                    self.url = found.group(1).replace("//0.0.0.0:", "//127.0.0.1:").rstrip("/") + "/"
                    self._url_known.set()
        self._url_known.set()

    def tail(self, chars=3000):
        """The end of the app's output, for error messages."""
        return "".join(self.lines)[-chars:]

    def stacks(self, wait=3.0):
        """What every thread of the app is doing (Python's faulthandler writes their stacks to its output), for a
        failure message: a test that waited in vain says where the server was (the threads in app/ or core/ in full,
        the others counted, and what Gradio's queue holds: report_queue). '' where it cannot be asked."""
        if self.proc is None or self.proc.poll() is not None or not hasattr(signal, "SIGUSR1"):
            return ""
        self._caught = caught = []
        self.proc.send_signal(signal.SIGUSR1)
        if hasattr(signal, "SIGUSR2"):
            self.proc.send_signal(signal.SIGUSR2)
        deadline, size = time.monotonic() + wait, -1
        while time.monotonic() < deadline and (not caught or len(caught) != size):
            size = len(caught)
            time.sleep(0.5)  # (a failure message is being written: the dump has no end to wait on)
        self._caught = None
        blocks = "".join(caught).strip().split("\n\n")
        ours = [b for b in blocks if str(ROOT / "app") in b or str(ROOT / "core") in b or QUEUE_HEADER in b]
        return "\n\n".join(ours) + f"\n({len(blocks) - len(ours)} other threads: none in app/ or core/)"

    def wait_until_serving(self):
        """Wait until the server has printed its address, then fetch the page once; fail with the log's tail."""
        deadline = time.monotonic() + self.timeout
        if not self._url_known.wait(self.timeout):
            raise RuntimeError(f"app.py printed no address within {self.timeout:.0f} s:\n{self.tail()}")
        if self.url is None:
            self.proc.wait(10)  # the output has ended, so has the process
            raise RuntimeError(f"app.py exited with code {self.proc.returncode}:\n{self.tail()}")
        try:  # Gradio prints the address once its server is listening, so one request suffices
            with urllib.request.urlopen(self.url, timeout=max(1.0, deadline - time.monotonic())) as page:
                page.read()
        except OSError as e:
            raise RuntimeError(f"app.py did not serve {self.url}: {e}\n{self.tail()}") from None

    def stop(self):
        """End the app (politely first) and close its output."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        if not self._reader.is_alive():
            self.proc.stdout.close()
