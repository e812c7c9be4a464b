"""The shipped Translator, loaded once per process and shared by every request, and the lock around it."""
import os
import threading
from functools import lru_cache
from pathlib import Path

from core.data import ASSETS, nonblank_lines
from core.translate import Translator

# Attention capture sets flags on the shared modules: one model call at a time.
MODEL_LOCK = threading.Lock()


def model_dir():
    return Path(os.environ.get("EXPLORER_MODEL_DIR", ASSETS))


@lru_cache(maxsize=1)
def get_translator():
    return Translator.load(model_dir())


@lru_cache(maxsize=1)
def examples():
    """German example sentences written for this project (assets/examples.txt)."""
    return nonblank_lines((ASSETS / "examples.txt").read_text(encoding="utf-8"))
