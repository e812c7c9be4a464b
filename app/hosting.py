"""Where the app runs: locally, on a CPU Space or on a ZeroGPU Space. The one module that knows of `spaces`.

On ZeroGPU (the platform sets SPACES_ZERO_GPU) a function decorated with `@spaces.GPU` is run in a worker
process that a GPU is attached to for the call; elsewhere the decorator gives the function back unchanged
(spaces.zero.decorator: `if not Config.zero_gpu: return task`), so locally and on a CPU Space nothing changes.

Which work goes there (the reasons are in docs/hosting.md): only the Lab's live training. A
translation and every view drawn from it take tens of milliseconds on the CPU, less than a GPU takes to be
attached, and would spend a visitor's daily GPU quota for nothing; they stay on the CPU in the server's process.
"""
import os
import queue
import threading
from dataclasses import replace

import spaces  # before anything initialises CUDA: on ZeroGPU it patches torch at import
import torch

from core.lab import Config, train

# ZeroGPU is on when the platform says so (the same variable the spaces package reads)
ZERO_GPU = os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")
# a Space, of any hardware: the platform names it in SPACE_ID
ON_SPACE = bool(os.environ.get("SPACE_ID")) or ZERO_GPU

# The Score tab's pairs at a time: on a public Space, where every visitor shares two CPU cores, 500 (greedy, about
# 10 s there); locally 20,000. EXPLORER_SCORE_MAX_PAIRS sets another number.
SCORE_PAIRS_SPACE, SCORE_PAIRS_LOCAL = 500, 20_000


def score_pairs_max(on_space=None):
    """The most pairs the Score tab scores at a time here (EXPLORER_SCORE_MAX_PAIRS where set)."""
    given = os.environ.get("EXPLORER_SCORE_MAX_PAIRS", "")
    if given.strip().isdigit() and int(given) > 0:
        return int(given)
    return SCORE_PAIRS_SPACE if (ON_SPACE if on_space is None else on_space) else SCORE_PAIRS_LOCAL

# A Lab step of the default depth (2 layers) on one CPU thread of this project's machine: 16 ms (copy, 450 steps
# in 7.4 s, measured in process); a deeper run's step costs about layers / 2 as much. On a GPU a step of a model
# this small is bound by its kernel launches, not by its arithmetic; until a ZeroGPU run is measured, the CPU's
# figure, doubled, is the estimate the duration asks for (scripts/device_check.sh measures a GPU's step).
STEP_S = 0.032
START_S = 15.0        # attaching the GPU, CUDA's first kernels, then the held-out evaluation (500 decodes)


def lab_duration(cfg):
    """Seconds of GPU the run of `cfg` asks ZeroGPU for: its steps times a step's estimate at its depth, plus
    the start and the evaluation, never beyond what the run itself may take (its seconds cap)."""
    cfg = cfg.checked()
    per_step = STEP_S * cfg.layers / 2
    return START_S + min(cfg.steps * per_step, cfg.seconds)


def within_duration(cfg, zero_gpu=None):
    """On ZeroGPU, `cfg` with its seconds cap lowered to the training time its GPU duration allows, so that the
    run ends (as a CPU run ends at its cap) before ZeroGPU takes the GPU back; the steps are unchanged. Elsewhere
    no duration is enforced, and `cfg` is kept as it is."""
    cfg = cfg.checked()
    if not (ZERO_GPU if zero_gpu is None else zero_gpu):
        return cfg
    return replace(cfg, seconds=lab_duration(cfg) - START_S)


def lab_device():
    """Where a Lab run trains inside the GPU function: the GPU ZeroGPU attached, else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@spaces.GPU(duration=lab_duration)
def lab_on_gpu(cfg: Config):
    """Train `cfg` in this process on `lab_device()`: yields the curve's new points ({"progress": {...}}, as
    `python -m core.lab --progress` prints them) every 20 steps, then the result record (plain Python
    values: nothing on the GPU leaves the function). On ZeroGPU this runs in the worker the GPU is attached to."""
    points = queue.Queue()
    sent = [0]

    def on_progress(curve):
        n = len(curve["step"])
        points.put({"progress": {k: v[sent[0]:n] for k, v in curve.items()}})
        sent[0] = n

    def work():
        threads = torch.get_num_threads()
        try:
            # one CPU thread, as in core.lab's process: on ZeroGPU this is the worker's own process, and on a GPU
            # the host thread only draws the batches and launches kernels
            points.put(train(within_duration(cfg), on_progress, device=lab_device(), threads=1))
        except BaseException as e:  # handed to the generator, raised there
            points.put(e)
        finally:
            torch.set_num_threads(threads)  # off ZeroGPU (tests, scripts/device_check.sh) this is the caller's process

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while True:
        msg = points.get()
        if isinstance(msg, BaseException):
            raise msg
        yield msg
        if "exact_match" in msg:
            break
    worker.join()
