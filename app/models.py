"""The models this server can open, by name, and the ones it holds, within a memory bound.

A model is a value (core/instrument.py: a recorded run leaves the modules as it found them), so any number of them
and of sessions share the process. This module names them and keeps the ones in use:

- the page's own model, `EXPLORER_MODEL_DIR` (the shipped one, assets/, by default), named "shipped" when it is the
  shipped one and by its directory's name otherwise;
- each point of that model's training run (its snapshots/), named "<its name>@<label>", e.g. "shipped@epoch-1";
- every model directory under the folder `EXPLORER_MODELS` (a directory with a config.json), by its name.

`MODELS.get(name)` loads a model the first time it is asked for and keeps it; past the memory bound
(`EXPLORER_MODELS_MB`, MEMORY_MB by default) the model used least recently goes first, the page's own model never.
A name not on the list is a ValueError that says which names there are.
"""
import os
import re
from collections import OrderedDict
from pathlib import Path

from core.checkpoint import read_config, read_snapshot_index
from core.data import ASSETS
from core.translate import Translator

from .cache import Once

MEMORY_MB = 2048  # the models held at most, their tensors counted (the opus-mt-de-en shape is about 300 MB)
NAME = re.compile(r"^[\w.@+-]{1,100}$")  # what a model's name may be (it comes from a link)


def model_bytes(tr):
    """The bytes of a Translator's tensors: its model's parameters and buffers, and its float16 decoder's own."""
    seen, total = set(), 0
    for module in (tr.model, tr.half_model):
        if module is None:
            continue
        for t in (*module.parameters(), *module.buffers()):
            if t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                total += t.numel() * t.element_size()
    return total


class Models:
    """The models a server can open (`names`) and those it holds (`held`), least recently used first out."""

    def __init__(self, default_dir=None, folder=None, memory_mb=None):
        self._default_dir, self._folder, self._memory_mb = default_dir, folder, memory_mb
        self._held = OrderedDict()  # (directory, point) -> (name, Translator, bytes)
        self._once = Once()  # one load per model, however many requests ask for it at once

    @property
    def default_dir(self):
        return Path(self._default_dir or os.environ.get("EXPLORER_MODEL_DIR") or ASSETS)

    @property
    def folder(self):
        folder = self._folder if self._folder is not None else os.environ.get("EXPLORER_MODELS")
        return Path(folder) if folder else None

    @property
    def memory(self):
        """The bound, in bytes."""
        mb = self._memory_mb if self._memory_mb is not None else os.environ.get("EXPLORER_MODELS_MB", MEMORY_MB)
        return int(float(mb) * 2 ** 20)

    @property
    def default(self):
        """The page's own model's name."""
        d = self.default_dir
        return "shipped" if d.resolve() == ASSETS.resolve() else d.name

    def sources(self):
        """{name: (directory, snapshot label or None)} of every model this server can open, the page's own first."""
        out = {self.default: (self.default_dir, None)}
        for entry in read_snapshot_index(self.default_dir):
            out[f"{self.default}@{entry['label']}"] = (self.default_dir, entry["label"])
        if self.folder is not None and self.folder.is_dir():
            for d in sorted(self.folder.iterdir()):
                if (d / "config.json").is_file() and NAME.match(d.name) and d.name not in out:
                    out[d.name] = (d, None)
        return out

    def names(self):
        return list(self.sources())

    def check(self, name):
        """`name` if this server can open it, else a ValueError naming the ones it can."""
        # (the page's own model keeps its directory's name, which NAME need not match: a name is looked up, never used)
        if not isinstance(name, str) or len(name) > 200 or name not in self.sources():
            shown = name if isinstance(name, str) and len(name) <= 100 else "that name"
            raise ValueError(f"There is no model named {shown!r} here; the models are: {', '.join(self.names())}.")
        return name

    def config(self, name=None):
        """The config.json of model `name` (the page's own by default; a point of a run: its model's), read without
        loading the model; {} where it cannot be read."""
        name = self.default if name is None else self.check(name)
        try:
            return read_config(self.sources()[name][0])
        except Exception:  # noqa: BLE001 (a missing or broken file: the model's own load says what is wrong)
            return {}

    def get(self, name=None):
        """The Translator of model `name` (the page's own by default), loaded the first time and then kept (known by
        its directory and point, so that a name that comes to mean another model is loaded afresh)."""
        name = self.default if name is None else self.check(name)
        directory, label = self.sources()[name]
        key = (str(Path(directory).resolve()), label)

        def look():
            if key in self._held:
                self._held.move_to_end(key)
                return True, self._held[key][1]
            return False, None

        def load():  # a point of a run is decoded by the float32 model alone, as Time-lapse does
            return Translator.load(directory, snapshot=label, half_rows=0 if label is not None else 4, kept=False)

        def keep(tr):
            tr.name = name  # each Inspection it makes says so (core.translate Inspection.model)
            self._held[key] = (name, tr, model_bytes(tr))
            self._evict()
        return self._once.get(key, look, load, keep)

    def _evict(self):
        """Drop the models used least recently, never the page's own, while the held ones exceed the bound."""
        own = (str(self.default_dir.resolve()), None)
        for key in list(self._held):
            if sum(b for _, _, b in self._held.values()) <= self.memory:
                break
            if key != own and len(self._held) > 1:
                del self._held[key]

    def held(self):
        """[(name, bytes)] of the models held, least recently used first."""
        with self._once.lock:
            return [(name, b) for name, _, b in self._held.values()]


MODELS = Models()


def model_label(name):
    """A model's name as a menu shows it, written in both languages ("shipped@epoch-1": the shipped model, after
    epoch 1; a directory's name as it is: app.figures.compare.model_name)."""
    from .figures.compare import model_name
    from .i18n import LANGS, speaking, written

    def said(lang):
        with speaking(lang):
            return model_name(name)
    return written("ui.compare.name.model", {lang: said(lang) for lang in LANGS})


def model_choices(names):
    """A menu's choices of models: (label, name), labelled by model_label."""
    return [(model_label(name), name) for name in names]
