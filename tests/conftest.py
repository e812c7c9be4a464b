"""Shared fixtures: small synthetic parallel data (never the real dataset) and paths to the real one."""
import contextlib
import gzip
import json
import os
import random
import socket
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED_DATA = ROOT.parent / "shared" / "data" / "multi30k"
ASSETS = ROOT / "assets"

DE = {"man": "Mann", "woman": "Frau", "dog": "Hund", "child": "Kind", "cat": "Katze", "bird": "Vogel"}
VERB = {"runs": "läuft", "sits": "sitzt", "jumps": "springt", "sleeps": "schläft", "waits": "wartet"}
PLACE = {"on the street": "auf der Straße", "in the park": "im Park", "at the lake": "am See",
         "in the garden": "im Garten", "on the bench": "auf der Bank"}
COLOR = {"red": "rote", "small": "kleine", "old": "alte", "happy": "fröhliche", "": ""}


def synthetic_pairs(n, seed=0):
    """Made-up German/English scene descriptions with a word-for-word correspondence."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        noun, verb, place, adj = (rng.choice(list(d)) for d in (DE, VERB, PLACE, COLOR))
        en = f"A {adj + ' ' if adj else ''}{noun} {verb} {place}."
        de = f"Der {COLOR[adj] + ' ' if adj else ''}{DE[noun]} {VERB[verb]} {PLACE[place]}."
        out.append((de, en))
    return out


def write_split(directory, split, pairs, gz=True):
    for lang, k in (("de", 0), ("en", 1)):
        text = "".join(p[k] + "\n" for p in pairs)
        if gz:
            with gzip.open(directory / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (directory / f"{split}.{lang}").write_text(text, encoding="utf-8")


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory):
    """A data directory shaped like Multi30k's (train/val/test_2016_flickr, gzipped) with synthetic pairs."""
    d = tmp_path_factory.mktemp("multi30k_synthetic")
    write_split(d, "train", synthetic_pairs(400, 1))
    write_split(d, "val", synthetic_pairs(40, 2))
    write_split(d, "test_2016_flickr", synthetic_pairs(40, 3), gz=False)
    return d


@pytest.fixture(scope="session")
def tiny_spm(tiny_data, tmp_path_factory):
    from core.data import load_split, train_tokenizer
    pairs = load_split(tiny_data, "train")
    path = tmp_path_factory.mktemp("spm") / "spm.model"
    return train_tokenizer([s for p in pairs for s in p], path, vocab_size=64), path


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    random.seed(0)


def free_port():
    """A TCP port that was free a moment ago (the OS picks it), for a server that must be told its port
    in advance (the DDP test's MASTER_PORT); where a server can bind port 0 itself, let it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shipped_model_present():
    return (Path(os.environ.get("EXPLORER_MODEL_DIR", ASSETS)) / "config.json").exists()


needs_shipped = pytest.mark.skipif(not shipped_model_present(), reason="no trained model in assets/ yet")


def ships_history():
    """Whether the shipped model comes with its run's history (assets/snapshots): the page has a Time-lapse tab
    only then."""
    from app.figures.timelapse import run_points
    return bool(run_points(ASSETS))


# the page's top-level tabs (data-tab-id), in order, for the shipped model
TOP_TABS = ["learn", "overview", "translate", "attention", "heads", "why", "whatif", "compare", "score", "inside", "masks",
            "positional", "training", *(["timelapse"] if ships_history() else []), "lab", "engineering"]
needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(),
                                reason=f"Multi30k not found at {SHARED_DATA} (tests on the real data skipped)")


@pytest.fixture(scope="session")
def history(tmp_path_factory):
    """A model directory with a run's history beside it (tools.synthetic_history.make_history), made once for the
    run: the Time-lapse tests read it and write nothing into it."""
    from tools.synthetic_history import make_history
    return make_history(tmp_path_factory.mktemp("timelapse"))


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """Small tensors: one thread avoids oversubscription when the two cores are busy."""
    torch.set_num_threads(1)


def reordered_step(model, src, mask, tgt, index, keep=None):
    """Three cached decoder steps, the rows then reordered by `index` (as beam search reorders them) and one
    step more; returns (that step's output, the full decode of the reordered batch at that position). With
    `keep`, per-row cross-attention head masks that must follow their rows."""
    from contextlib import nullcontext

    from core.decode import IncrementalDecoder
    from core.instrument import switched_off
    from core.model import subsequent_mask

    def heads(k):
        return nullcontext() if keep is None else switched_off(model, keep={"cross": k})

    with torch.no_grad():
        memory = model.encode(src, mask)
        dec = IncrementalDecoder(model, memory, mask, tgt.size(1), keep=None if keep is None else {"cross": keep})
        for t in range(3):
            dec.step(tgt[:, t])
        dec.reorder(index)
        got = dec.step(tgt[index, 3])
    with torch.no_grad(), heads(None if keep is None else keep[index]):
        full = model.decode(memory[index], mask[index], tgt[index, :4], subsequent_mask(4))[:, -1]
    return got, full


@pytest.fixture
def english():
    """The test runs as an event whose page is in English (app.i18n.speaking): what it draws is written in
    English, and nothing is drawn in a language no one chose."""
    from app.i18n import speaking
    with speaking("en"):
        yield "en"



# what the shared app is started with: the Lab's runs short (its server cap lowered), and no ZeroGPU (the app as
# it serves locally and on a CPU Space), set for the child alone
SERVED_ENV = {"EXPLORER_LAB_MAX_STEPS": "40", "SPACES_ZERO_GPU": None}


@pytest.fixture(scope="session")
def served_app(tmp_path_factory):
    """One `python app.py` (tools.serve.AppProcess) for the whole run (for each of its pytest-xdist workers,
    scripts/test.sh), started when a test first asks for it: the browser tests (each in a browser context of its own, making whatever translation it reads) and the load tests
    share it, rather than each starting a server of its own. Its output: the fixture's directory, app.log."""
    from tools.serve import AppProcess
    with AppProcess(log=tmp_path_factory.mktemp("served_app") / "app.log", env=SERVED_ENV) as running:
        yield running


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium for a module's tests, each in a context of its own. Not the run's: while Playwright's
    sync API is started it holds an event loop running in this thread, in which neither another instance nor a
    test's asyncio.run can start."""
    from playwright.sync_api import sync_playwright

    from tools.bench_browser import CHROMIUM, LAUNCH_ARGS
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


@contextlib.contextmanager
def browser_page(browser, app, timeout_ms, viewport=None, **context_args):
    """A page (at 1400 x 1000 unless told) in a context of its own of `browser`, each condition waited on for at
    most `timeout_ms`: (page, errors), the page's script errors collected in `errors`. `app` is kept on the page."""
    context = browser.new_context(viewport=viewport or {"width": 1400, "height": 1000}, **context_args)
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.events, page.sent = [], []  # the events it sends (record_event), for failure messages
        page.on("request", lambda r: record_event(page, r) if "queue/join" in r.url else None)
        page.set_default_timeout(timeout_ms)
        page.app = app
        page.errors = errors
        try:
            yield page, errors
        except Exception as e:  # a failed wait or check: what the page and the server were doing, in its message
            if not getattr(e, "diagnosed", False):
                e.add_note(page_diagnostics(page))
            raise
    finally:
        context.close()


# JavaScript: what the page shows that says where it stands: the tabs selected, the progress trackers still shown,
# the error toasts, and each status line's text (an element whose id names a status)
PAGE_STATE = """() => ({
  tabs: [...document.querySelectorAll('[role=tab][aria-selected=true]')].map(t => t.textContent.trim()),
  trackers: [...document.querySelectorAll('[data-testid=status-tracker]:not(.hide)')]
            .map(t => (t.closest('[id]')?.id || '?') + ': ' + t.innerText.slice(0, 40)),
  toasts: [...document.querySelectorAll('.toast-body')].map(t => t.innerText.slice(0, 160)),
  statuses: Object.fromEntries([...document.querySelectorAll('[id*=status]')]
            .map(e => [e.id, e.innerText.trim().slice(0, 100)]).filter(([, t]) => t))})"""


def page_diagnostics(page, events=20, log_chars=1000):
    """What the page and its server were doing, compact enough for CI's tail of the output: the page's tabs,
    trackers, toasts and status lines, its script errors, the last `events` events it sent (timed, with the outputs
    each writes), the end of the app's log and the app's threads in app/ or core/ (tools.serve.AppProcess.stacks).
    Never raises: a page that cannot answer says so."""
    try:
        state = page.evaluate(PAGE_STATE)
        writes = page.evaluate("""(fns) => { const config = window.gradio_config || {components: [], dependencies: []};
            const name = Object.fromEntries(config.components.map(c => [c.id, c.props?.elem_id || c.type]));
            const deps = Object.fromEntries(config.dependencies.map(d => [d.id, d.outputs.map(o => name[o])]));
            return fns.map(fn => deps[fn] || []); }""", [fn for fn, _ in page.sent[-events:]])
    except Exception as e:  # noqa: BLE001 (a closed or crashed page)
        state, writes = f"(the page did not answer: {type(e).__name__})", [[] for _ in page.sent[-events:]]
    sent = "\n  ".join(f"{line} -> {', '.join(map(str, outs[:3]))}"
                       for line, outs in zip(page.events[-events:], writes))
    app = getattr(page, "app", None)
    log = app.tail(log_chars) if hasattr(app, "tail") else ""
    stacks = app.stacks() if hasattr(app, "stacks") else ""
    return (f"page: {state}\nscript errors: {getattr(page, 'errors', [])[-5:]}\n"
            f"the last {events} events sent (-> what they write):\n  {sent}\n"
            f"app log (end):\n{log}\nthe app's threads and Gradio queue:\n{stacks}")


def record_event(page, request):
    """Keep an event a page sends to the server (its function and inputs) in page.events (a line, timed) and
    page.sent ((function index, inputs))."""
    try:
        body = json.loads(request.post_data or "{}")
    except ValueError:
        body = {}
    now = time.time()
    page.events.append(f"{time.strftime('%X', time.localtime(now))}.{int(now * 1000) % 1000:03d} fn {body.get('fn_index')}: "
                       f"{str(body.get('data'))[:70]}")
    page.sent.append((body.get("fn_index"), body.get("data")))


# the functions (their indexes) of the page's events that write the component with this elem_id
WRITERS = """(id) => { const config = window.gradio_config;
    const component = config.components.find(c => c.props?.elem_id === id)?.id;
    return config.dependencies.filter(d => d.outputs.includes(component)).map(d => d.id); }"""


def sent_to(page, elem_id):
    """A predicate for page.expect_request: the request sends an event that writes the component `elem_id`."""
    writers = set(page.evaluate(WRITERS, elem_id))

    def sends(request):
        if "queue/join" not in request.url:
            return False
        try:
            return json.loads(request.post_data or "{}").get("fn_index") in writers
        except ValueError:
            return False
    return sends


# JavaScript: resolves once the page has drawn two more frames and run the tasks queued meanwhile. Gradio 6.31 mounts
# a tab's components when the tab is first opened and, at the frame after, hands each the value it holds on record
# (the front end's render_previously_invisible_children): text typed into a box in between is replaced by that
# value. A reader is never that quick; a test is (p14, p17, p21: German and dimensions typed into a tab just
# opened were replaced by the box's first value, the click then sending that).
MOUNTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done))))"


def after_mounting(page):
    """Return once a tab just opened has been mounted and given its values (MOUNTED): what is typed then stays."""
    page.evaluate(MOUNTED)


def open_sending(page, tab_id, drawn):
    """Click the tab `tab_id` and return once it has sent its drawing of `drawn` (an elem_id), which a tab sends as
    it opens, and has been mounted (after_mounting); a tab already open: at once. The caller then waits for the
    drawing's answer before it types into the tab, as a reader does."""
    tab = page.locator(f"[role=tab][data-tab-id={tab_id}]")
    if tab.get_attribute("aria-selected") != "true":
        with page.expect_request(sent_to(page, drawn)):
            tab.click()
        after_mounting(page)


def click_sending(page, button, elem_id, index, expected):
    """Click `button` (a selector) and check the event it sends to write `elem_id` carries `expected` as its input
    `index`: where it does not, say what the page's box showed at that moment, at once, rather than wait for an
    answer that cannot come."""
    with page.expect_request(sent_to(page, elem_id)) as request:
        page.locator(button).click()
    sent = json.loads(request.value.post_data)["data"][index]
    if sent != expected:
        shown = page.evaluate("[...document.querySelectorAll('textarea')].map(t => [t.closest('[id]')?.id, t.value])")
        raise AssertionError(f"the click sent {sent!r}, not {expected!r}; the page's text boxes: {shown}")


@contextlib.contextmanager
def app_page(browser, log, timeout_ms):
    """A `python app.py` of its own (tools.serve.AppProcess, its output in `log`; for a test that needs the app
    started otherwise than `served_app`, as on another model) and a page of it (`browser_page`):
    (app, page, errors)."""
    from tools.serve import AppProcess
    with AppProcess(log=log) as app, browser_page(browser, app, timeout_ms) as (page, errors):
        yield app, page, errors


def clear_app_caches():
    """Forget every model, log, atlas and figure the app's modules keep (functools caches): they are the open
    model's, and a test opens another."""
    for name, module in list(sys.modules.items()):
        if name == "app" or name.startswith("app."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
