"""The tabs of the page, one module each (see app/ui.py for their order on the page)."""
from . import (
    attention,
    compare,
    engineering,
    heads,
    inside,
    lab,
    learn,
    masks,
    overview,
    positional,
    score,
    timelapse,
    training,
    translate,
    whatif,
    why,
)

__all__ = ["attention", "compare", "engineering", "heads", "inside", "lab", "learn", "masks", "overview", "positional", "score", "timelapse", "training",
           "translate", "whatif", "why"]
