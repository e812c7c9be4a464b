"""The page's own model (app/models.py holds every model this server opens), what the page says of it, and the
server's memory hygiene."""
import ctypes
import os
from functools import lru_cache
from pathlib import Path

from core.data import ASSETS, nonblank_lines

from .models import MODELS


def model_dir():
    return Path(os.environ.get("EXPLORER_MODEL_DIR", ASSETS))


def is_shipped(directory=None):
    """Whether the open model (or the one in `directory`) is the shipped one (assets/): the views that show its
    training run, its time-lapse, its measured figures read files that only its directory has."""
    return Path(directory or model_dir()).resolve() == ASSETS.resolve()


def is_converted(config):
    """Whether a model's config says core.convert wrote it (from a transformers model)."""
    return bool(config.get("converted_from"))


def logged_steps(directory=None):
    """How many steps the training log beside a model (train_log.jsonl, which core.train exports with it) records,
    or None where it has none or an unreadable one: whether the page may call the open model's weights trained."""
    import json
    path = Path(directory or model_dir()) / "train_log.jsonl"
    try:
        steps = [json.loads(line).get("step") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError, AttributeError):
        return None
    steps = [s for s in steps if isinstance(s, int) and not isinstance(s, bool)]
    return max(steps) if steps else None


def model_line(config, directory, point=None):
    """The page's line naming the open model: (its key, its values) for app.i18n.L. It says what the model's own
    files say of its training: the shipped model's (Multi30k), a converted model's source, a log's steps, or that
    nothing beside it says; for a point of a model's training run (`point`: its words, "the shipped model, after
    epoch 1"), that it is one. Names from the user's files are escaped (Markdown and HTML)."""
    from .common import md_literal
    values = dict(name=md_literal(Path(directory).resolve().name), layers=config["N"], heads=config["h"],
                  d_model=config["d_model"], vocab=f"{config['tgt_vocab']:,}")
    if point is not None:
        return "ui.model.point", dict(values, point=md_literal(point))
    if is_shipped(directory):
        return "ui.model.shipped", values
    if is_converted(config):
        origin = config["converted_from"]
        source = str(origin.get("source") or "?") if isinstance(origin, dict) else "?"
        return "ui.model.converted", dict(values, source=md_literal(Path(source).name or source))
    steps = logged_steps(directory)
    if steps is not None:
        return "ui.model.logged", dict(values, steps=f"{steps:,}")
    return "ui.model.other", values


def header_line(name):
    """The header's line naming the session's model (`name`, the header's menu), in the event's language."""
    from .figures.compare import model_name
    from .i18n import text
    tr = chosen(name)
    point = model_name(tr.name) if tr.snapshot is not None else None
    key, values = model_line(tr.config, tr.directory or model_dir(), point)
    return text(key, **values)


def batching_stats(directory=None):
    """The open model's (or the one in `directory`'s) training-set figures (the batching.json that core.train writes
    beside it: the padding of its batches, and in "source_pieces" how long its sources were), or None where its
    directory has none or an unreadable one (a converted model)."""
    import json
    path = Path(directory or model_dir()) / "batching.json"
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=8)
def training_lengths(directory=None):
    """How long the open model's (or the one in `directory`'s) training sources were (batching_stats'
    "source_pieces": sentences, median, p99, max, which core.train and `python -m core.data` write), or None where
    unknown; read once per process and directory."""
    return (batching_stats(directory) or {}).get("source_pieces")


def lengths_of(ins):
    """training_lengths of the model that made Inspection `ins` (model_of)."""
    return training_lengths(model_of(ins).directory)


def get_translator():
    """The page's own model's Translator (app.models.MODELS keeps it; any number of sessions share it). A view that
    reads a translation reads the model that made it (`model_of`), one that describes a model the session's
    (`chosen`)."""
    return MODELS.get()


def chosen(name):
    """The Translator of the model a session chose (the header's menu: a name of app.models.MODELS); the page's
    own for None or a name this server does not have (the menu's value comes from the browser)."""
    try:
        return MODELS.get(name or None)
    except ValueError:
        return MODELS.get()


def trained_here(tr):
    """Whether this project trained the model of Translator `tr` (the shipped model and the points of its run, or a
    model with core.train's log beside it): only then may the page say how it was trained."""
    from .models import MODELS
    directory = MODELS.sources().get(getattr(tr, "name", None) or MODELS.default, (model_dir(), None))[0]
    return is_shipped(directory) or logged_steps(directory) is not None


def model_of(ins):
    """The Translator that made Inspection `ins` (its `model`, a name of app.models.MODELS): what a view reads of
    the model for that translation (its tokenizer, its weights for a recorded pass). The page's own for one that
    names no model this server has (made outside the page, or read from a JSON file written before)."""
    return chosen(getattr(ins, "model", "") or None)


@lru_cache(maxsize=1)
def examples():
    """German example sentences written for this project (assets/examples.txt)."""
    return nonblank_lines((ASSETS / "examples.txt").read_text(encoding="utf-8"))


# Sessions whose state the server keeps at most (Gradio's launch option; its default is 10,000). A session
# whose page is closed is freed at once (`free_closed_sessions`); this bounds the rest: pages left open, and
# clients that never open the heartbeat stream. The least recently used go first.
SESSIONS_KEPT = 1000


def free_closed_sessions(demo):
    """Free a session's state as soon as its page is closed. Gradio keeps a closed page's state for an hour in
    case it reconnects; ours is not worth keeping (a page that comes back translates again when it loads)."""
    import gradio as gr

    from .gradio_adapter import forget_session

    def forget(request: gr.Request):
        forget_session(demo, request.session_hash)
        release_free_memory()

    demo.unload(forget)


M_ARENA_MAX = -8  # glibc's mallopt parameter for the number of malloc arenas (as MALLOC_ARENA_MAX sets it)


def limit_malloc_arenas(n=2):
    """Cap glibc's malloc arenas at `n` for this process (before its threads start). glibc gives threads that
    allocate at the same time arenas of their own, up to 8 per core, and memory freed in one arena serves only
    that arena: with Gradio running callbacks on a pool of threads, a server's resident memory kept growing
    with the translations it served (`python -m tools.loadtest --pages`). Returns whether it was set (not on a
    C library without mallopt)."""
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, n))
    except (OSError, AttributeError):
        return False


def release_free_memory():
    """Hand the C heap's free pages back to the system (glibc's malloc_trim), as a page closes: what its state
    held is free now, and would otherwise stay in the process's resident memory. Nothing happens where the C
    library has no malloc_trim."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
