"""app/models.py: the names of the models a server can open, the message for a name not among them, the memory
bound on the ones it holds (least recently used first out, the page's own never), and one load for two requests
of the same model at once.

Most tests stand real loads in with `Translator.load` monkeypatched (a model of a chosen size in a few ms, its loads
counted); one loads the shipped model and two points of its run for real."""
import json
import shutil
import threading
import time
from types import SimpleNamespace

import pytest
import torch

from app import models as models_module
from app.models import Models, model_bytes
from core.data import ASSETS
from tests.conftest import needs_shipped, ships_history

MB = 2 ** 20
SHIPPED_POINTS = ["init", "step-25", "step-50", "step-100", "epoch-1", "step-200", "epoch-2", "step-400", "epoch-4",
                  "step-800", "epoch-7", "epoch-12", "epoch-20", "epoch-28"]
needs_history = pytest.mark.skipif(not ships_history(), reason="the shipped model ships no run history")


@pytest.fixture(autouse=True)
def _no_server_settings(monkeypatch):
    """The tests say every setting themselves: none comes from the machine's environment."""
    for name in ("EXPLORER_MODEL_DIR", "EXPLORER_MODELS", "EXPLORER_MODELS_MB"):
        monkeypatch.delenv(name, raising=False)


def model_dir(path, snapshots=()):
    """A model directory as far as the list of names reads one: a config.json, and a snapshots index naming
    `snapshots` (nothing is loaded from it)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    if snapshots:
        (path / "snapshots").mkdir()
        index = {"snapshots": [{"label": label, "step": step} for step, label in enumerate(snapshots)]}
        (path / "snapshots" / "index.json").write_text(json.dumps(index))
    return path


@pytest.fixture
def folder(tmp_path):
    """A folder of models as EXPLORER_MODELS names one: two model dirs, and four entries that are not models."""
    d = tmp_path / "models"
    model_dir(d / "opus-mt-de-en")
    model_dir(d / "small.v2")
    (d / "no-config").mkdir()  # a dir without config.json
    (d / "no-config" / "model.safetensors").write_bytes(b"")
    model_dir(d / "bad name")  # a name a link could not carry
    model_dir(d / "<script>")
    (d / "config.json").write_text("{}")  # a file, not a dir
    return d


class FakeLoads:
    """Translator.load stood in: a 'model' of `sizes[name]` MB in a few ms, each call recorded."""

    def __init__(self, sizes, pause=0.0):
        self.sizes, self.pause, self.calls = sizes, pause, []
        self._lock = threading.Lock()

    def __call__(self, directory, snapshot=None, half_rows=4, kept=True):
        with self._lock:
            self.calls.append((directory.name, snapshot, half_rows, kept))
        time.sleep(self.pause)
        name = snapshot or directory.name
        weights = torch.nn.Linear(1, int(self.sizes[name] * MB) // 4, bias=False)  # float32: 4 bytes a number
        return SimpleNamespace(model=weights, half_model=None, name=name)  # MODELS names it again


@pytest.fixture
def fake(monkeypatch):
    def install(sizes, pause=0.0):
        loads = FakeLoads(sizes, pause)
        monkeypatch.setattr(models_module.Translator, "load", loads)
        return loads
    return install


def held_names(models):
    return [name for name, _ in models.held()]


# ---- names -----------------------------------------------------------------------------------------------

@needs_shipped
@needs_history
def test_the_shipped_model_and_each_point_of_its_run_by_name(folder):
    models = Models(default_dir=ASSETS, folder=folder)
    assert models.default == "shipped"
    assert models.names() == ["shipped", *(f"shipped@{p}" for p in SHIPPED_POINTS), "opus-mt-de-en", "small.v2"]
    assert models.sources()["shipped@epoch-1"] == (ASSETS, "epoch-1")
    assert models.sources()["opus-mt-de-en"] == (folder / "opus-mt-de-en", None)
    assert Models(default_dir=ASSETS).names() == ["shipped", *(f"shipped@{p}" for p in SHIPPED_POINTS)]


def test_a_folder_lists_its_model_dirs_only(folder, tmp_path, monkeypatch):
    own = model_dir(tmp_path / "mine", snapshots=["init", "epoch-1"])
    models = Models(default_dir=own, folder=folder)
    assert models.default == "mine"  # a page's own model that is not the shipped one: its directory's name
    assert models.names() == ["mine", "mine@init", "mine@epoch-1", "opus-mt-de-en", "small.v2"]
    # no config.json, a name that is not a model's, a file: not listed; neither is a folder that is not there
    assert Models(default_dir=own, folder=tmp_path / "nowhere").names() == ["mine", "mine@init", "mine@epoch-1"]
    monkeypatch.setenv("EXPLORER_MODELS", str(folder))  # the server's setting, read when the names are asked for
    monkeypatch.setenv("EXPLORER_MODEL_DIR", str(folder / "small.v2"))
    assert Models().names() == ["small.v2", "opus-mt-de-en"]  # the page's own model first, and once


def test_a_name_not_on_the_list_says_which_names_there_are(folder, tmp_path):
    models = Models(default_dir=model_dir(tmp_path / "mine", snapshots=["epoch-1"]), folder=folder)
    names = models.names()
    for name in ("nope", "mine@epoch-2", "no-config", "bad name", "<script>", "x" * 500, "../mine", "", 7):
        with pytest.raises(ValueError) as caught:
            models.get(name)
        message = str(caught.value)
        assert all(n in message for n in names), message
        assert "x" * 101 not in message and "<script>" not in message.split(";")[-1], message
    assert models.check("mine@epoch-1") == "mine@epoch-1"
    assert models.held() == []  # nothing was loaded for any of them


# ---- the memory bound ------------------------------------------------------------------------------------

def test_past_the_bound_the_least_recently_used_goes_first(fake, tmp_path):
    loads = fake({"mine": 1, "a": 1, "b": 1, "c": 1})
    models = Models(default_dir=model_dir(tmp_path / "mine", snapshots=["a", "b", "c"]), memory_mb=3)
    own = models.get()
    models.get("mine@a")
    models.get("mine@b")
    assert held_names(models) == ["mine", "mine@a", "mine@b"]  # 3 MB: within the bound
    assert models.get("mine@a").name == "mine@a" and len(loads.calls) == 3  # held: used again, not loaded again
    models.get("mine@c")  # 4 MB: one must go, the least recently used but the page's own
    assert held_names(models) == ["mine", "mine@a", "mine@c"]
    assert sum(b for _, b in models.held()) <= models.memory == 3 * MB
    assert models.get() is own
    # a point is decoded by its float32 model alone, as Time-lapse does; the page's own model with its float16 decoder
    assert loads.calls[0] == ("mine", None, 4, False) and loads.calls[1] == ("mine", "a", 0, False)


def test_the_pages_own_model_is_never_dropped(fake, tmp_path, monkeypatch):
    loads = fake({"mine": 2, "a": 1, "b": 1})
    monkeypatch.setenv("EXPLORER_MODELS_MB", "0.5")  # the bound from the server's setting
    models = Models(default_dir=model_dir(tmp_path / "mine", snapshots=["a", "b"]))
    assert models.memory == MB // 2
    models.get("mine@a")  # a point first: then the page's own, over the bound alone
    own = models.get()
    assert held_names(models) == ["mine"]
    assert models.get("mine@b").name == "mine@b"  # served, and not kept
    assert held_names(models) == ["mine"] and models.get() is own and len(loads.calls) == 3


@needs_shipped
@needs_history
def test_the_bound_holds_on_the_shipped_model_and_two_points(monkeypatch):
    """Real loads: the page's own model (with its float16 decoder), then two points of its run (float32 alone,
    the shape of the page's own float32 model) under a bound room for one point only."""
    monkeypatch.setenv("EXPLORER_MODELS_MB", "100000")
    models = Models(default_dir=ASSETS)
    own = models.get()
    own_bytes = model_bytes(own)
    point_bytes = model_bytes(SimpleNamespace(model=own.model, half_model=None))
    assert models.held() == [("shipped", own_bytes)] and own_bytes > point_bytes > 0
    bound_mb = (own_bytes + 1.5 * point_bytes) / MB
    monkeypatch.setenv("EXPLORER_MODELS_MB", str(bound_mb))
    first = models.get("shipped@epoch-1")
    assert first.snapshot == "epoch-1" and model_bytes(first) == point_bytes
    second = models.get("shipped@epoch-28")
    assert second.snapshot == "epoch-28" and second.half_model is None
    assert models.held() == [("shipped", own_bytes), ("shipped@epoch-28", point_bytes)]
    assert sum(b for _, b in models.held()) <= models.memory
    monkeypatch.setenv("EXPLORER_MODELS_MB", "1")  # a bound under the page's own model alone
    models.get("shipped@epoch-1")
    assert models.held() == [("shipped", own_bytes)] and models.get() is own


# ---- requests at once ------------------------------------------------------------------------------------

def test_two_requests_for_one_model_at_once_load_it_once(fake, tmp_path):
    loads = fake({"mine": 1, "a": 1}, pause=0.3)  # a load long enough for the second request to come meanwhile
    models = Models(default_dir=model_dir(tmp_path / "mine", snapshots=["a"]), memory_mb=10)
    start, got = threading.Barrier(2), []

    def ask():
        start.wait()
        got.append(models.get("mine@a"))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(got) == 2 and got[0] is got[1]
    assert loads.calls == [("mine", "a", 0, False)]
    assert held_names(models) == ["mine@a"]


def test_a_failed_load_leaves_the_name_free(monkeypatch, tmp_path):
    own = model_dir(tmp_path / "mine")
    models = Models(default_dir=own, memory_mb=10)
    with pytest.raises(Exception):
        models.get()  # a config.json with nothing in it: no model
    assert models.held() == [] and models._once._computing == {}
    shutil.rmtree(own)
    with pytest.raises(Exception):
        models.get()  # asked again: tried again, not waited on for ever

