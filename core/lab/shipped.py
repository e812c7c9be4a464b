"""The shipped runs (assets/lab.json) and the benchmark."""
import json
import math
from dataclasses import replace
from pathlib import Path

from .breaks import BREAKS
from .run import Config, budget, train
from .tasks import (
    ASSET,
    BATCH,
    BUDGET,
    DEEP,
    FACTOR,
    HELD_OUT,
    HIGH_LR_FACTOR,
    MAX_LAYERS,
    MAX_LEN,
    MIN_LAYERS,
    MIN_LEN,
    SIZE,
    SYMBOLS,
    TASKS,
    WARMUP,
)


def downsample(curve, points=120):
    """Every k-th point of a curve (and its last), at most about `points` of them."""
    n = len(curve["step"])
    k = max(1, math.ceil(n / points))
    idx = list(range(0, n, k)) + ([n - 1] if n and (n - 1) % k else [])
    return {name: [values[i] for i in idx] for name, values in curve.items()}


EXTRA = (("no_warmup", "post_norm"),)  # mixes of breaks also shipped: post-norm without its warmup
# also shipped at N = DEEP: post-norm against pre-norm, each with and without warm-up
DEEP_RUNS = ((), ("post_norm",), ("no_warmup",), ("no_warmup", "post_norm"))


def shipped_configs(tasks=tuple(TASKS)):
    """What the Lab tab opens with: the intact model and every single break (and the EXTRA mixes), every task;
    then the DEEP_RUNS at N = DEEP."""
    return ([Config(task, breaks) for task in tasks for breaks in [()] + [(b,) for b in BREAKS] + list(EXTRA)]
            + [Config(task, breaks, layers=DEEP) for breaks in DEEP_RUNS for task in tasks])


def compact(record):
    """A result for assets/lab.json: the curve downsampled, the rates rounded."""
    curve = downsample(record["curve"])
    curve["lr"] = [float(f"{r:.4g}") for r in curve["lr"]]
    return dict(record, curve=curve)


PRECOMPUTE_SECONDS_FACTOR = 20  # the shipped runs' seconds cap, times the task's: a safety net, never reached


def precompute(path=ASSET, tasks=tuple(TASKS), seconds_factor=PRECOMPUTE_SECONDS_FACTOR):
    """Train every shipped configuration missing from `path` and add it (the file is rewritten after each run,
    so an interrupted run resumes where it stopped). Runs are capped by the task's steps; the seconds cap is
    `seconds_factor` times the run's (`budget`), so that a busy machine does not change what is shipped."""
    path = Path(path)
    data = json.loads(path.read_text()) if path.exists() else {}
    data["settings"] = settings()
    runs = data.setdefault("runs", {})
    for cfg in shipped_configs(tasks):
        cfg = replace(cfg, seconds=budget(cfg.task, cfg.layers or SIZE["N"])[1] * seconds_factor)
        name = run_name(cfg)
        if name in runs and runs[name].get("key") == cfg.key():
            continue
        record = compact(train(cfg))
        runs[name] = dict(record, key=cfg.key())
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        tmp.replace(path)
        print(summary(record), flush=True)
    return data


def run_name(cfg):
    """"copy/intact", "copy/no_scale", "reverse/no_warmup+post_norm"; at another depth "copy/post_norm@6"."""
    return f"{cfg.task}/{row_name(cfg.breaks, cfg.layers)}"


def row_name(breaks, layers=0):
    """A configuration's name without its task: the breaks joined by '+' (or 'intact'), '@N' beyond SIZE's N."""
    depth = f"@{layers}" if layers and layers != SIZE["N"] else ""
    return ("+".join(breaks) or "intact") + depth


def settings():
    return {"size": SIZE, "batch": BATCH, "factor": FACTOR, "warmup": WARMUP, "high_lr_factor": HIGH_LR_FACTOR,
            "budget": BUDGET, "lengths": [MIN_LEN, MAX_LEN], "symbols": SYMBOLS, "held_out": HELD_OUT,
            "layers": [MIN_LAYERS, MAX_LAYERS], "deep": DEEP}


def summary(r):
    params = f"params {r['params_registered']:,} registered / {r['params_held']:,} held"
    return (f"{run_name(Config(r['task'], tuple(r['breaks']), layers=r.get('layers', 0))):<32} exact match {r['exact_match']:7.1%}  "
            f"loss {r['train_loss']:.4f}  held-out loss {r['held_out_loss']:.3f}  {r['steps']} steps "
            f"{r['seconds']:5.1f} s  {params}")


TARGETS = {"copy": 0.99, "reverse": 0.95}


def bench(tasks=tuple(TASKS)):
    """The targets (intact copy and reverse within their budgets, on one thread), then every break beside the
    intact model measured in the same run."""
    print(f"one thread; budgets {BUDGET} (steps, seconds), whichever comes first")
    for task in tasks:
        intact = train(Config(task))
        target = TARGETS.get(task)
        verdict = "" if target is None else (
            f"  target >= {target:.0%} within {BUDGET[task][1]:g} s: "
            f"{'met' if intact['exact_match'] >= target and intact['steps'] == BUDGET[task][0] else 'NOT met'}")
        print(f"\n{task}: intact {intact['exact_match']:.1%} exact match in {intact['steps']} steps, "
              f"{intact['seconds']:.1f} s ({intact['cpu_seconds']:.1f} s of CPU){verdict}")
        for b in BREAKS:
            r = train(Config(task, (b,)))
            print(f"  {b:<24} exact match {r['exact_match']:7.1%} (intact {intact['exact_match']:.1%})  "
                  f"loss {r['train_loss']:.4f} (intact {intact['train_loss']:.4f})  "
                  f"{r['steps']} steps {r['seconds']:.1f} s (intact {intact['seconds']:.1f} s)", flush=True)

