"""The recorded pass of the Inside tab and the Learn path: one teacher-forced pass of the float32 model over an
Inspection's source and decoder inputs, recorded by forward hooks (core/analysis/inside.py) the first time a view
needs it, and kept per Inspection with what is computed from it."""
from core.analysis import inside as core

from .cache import PerTranslation
from .shared import model_of

_RECORDINGS = PerTranslation(4)  # a recording of a 15-piece sentence is about 1.5 MB
_DERIVED = PerTranslation(4 * 2)  # what is computed from them: the logit lens and the other LayerNorm's effect


def recorded(ins):
    """The Recording of `ins` (one pass of the float32 model that made it, run the first time and kept)."""
    def record():
        return core.record_inspection(model_of(ins), ins)
    return _RECORDINGS.get(ins, "recording", record)


def derived(ins, name, fn):
    """fn(model, recording), computed once per Inspection (`model`: the one that made it)."""
    rec = recorded(ins)

    def compute():
        return fn(model_of(ins).model, rec)
    return _DERIVED.get(ins, name, compute)
