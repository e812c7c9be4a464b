"""The Lab's command line: python -m core.lab --help."""
import argparse
import json
import sys

from ..words import say
from . import __doc__ as LAB_DOC
from .breaks import BREAKS
from .run import ACCUM_CHOICES, Config, train
from .shipped import bench, precompute, summary
from .tasks import ASSET, MAX_LAYERS, MIN_LAYERS, SIZE, TASKS


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=LAB_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the tasks and the breaks")
    ap.add_argument("--task", default="copy", choices=list(TASKS))
    ap.add_argument("--break", dest="breaks", action="append", default=[], metavar="NAME", choices=list(BREAKS),
                    help="a break to apply (repeatable)")
    ap.add_argument("--smoothing", type=float, default=0.0, help="label smoothing eps, 0..0.3")
    ap.add_argument("--accum", type=int, default=1, help=f"micro-batches per step, one of {ACCUM_CHOICES}")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (0: the task's budget)")
    ap.add_argument("--seconds", type=float, default=0, help="seconds of training at most (0: the task's budget)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0, metavar="N",
                    help=f"layers in each stack, {MIN_LAYERS} to {MAX_LAYERS} (0: {SIZE['N']}); the seconds cap "
                         f"scales with it, the steps do not")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line")
    ap.add_argument("--progress", action="store_true", help="print the curve as JSON lines while training")
    ap.add_argument("--bench", action="store_true", help="the targets and every break (--task limits it)")
    ap.add_argument("--precompute", metavar="PATH", nargs="?", const=str(ASSET),
                    help=f"add the missing shipped results to PATH (default {ASSET})")
    ap.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS), help="for --precompute")
    return ap.parse_args(argv)


def progress_printer(every=20):
    """on_progress for --progress: the curve's new points as one JSON line."""
    sent = [0]

    def on_progress(curve):
        n = len(curve["step"])
        print(json.dumps({"progress": {k: v[sent[0]:n] for k, v in curve.items()}}), flush=True)
        sent[0] = n

    return on_progress


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        print("tasks:\n" + "".join(f"  {k:<24} {say(v)}\n" for k, v in TASKS.items()))
        print("breaks (--break NAME, repeatable):\n" + "".join(f"  {k:<24} {say(v)}\n" for k, v in BREAKS.items()))
        print(f"options: --smoothing EPS (0..0.3), --accum K (one of 1, 2, 4, 8), --layers N ({MIN_LAYERS}..{MAX_LAYERS}, "
              f"default {SIZE['N']}: layers in each stack; the seconds cap times N / {SIZE['N']}, the same steps)")
        return
    if args.precompute:
        precompute(args.precompute, tuple(args.tasks))
        return
    if args.bench:
        bench((args.task,) if "--task" in (sys.argv[1:] if argv is None else argv) else tuple(TASKS))
        return
    cfg = Config(args.task, tuple(args.breaks), args.smoothing, args.accum, args.steps, args.seconds, args.seed,
                 args.layers)
    try:
        cfg = cfg.checked()
    except ValueError as e:
        sys.exit(f"error: {e}")
    record = train(cfg, progress_printer() if args.progress else None)
    if args.json or args.progress:
        print(json.dumps(record, separators=(",", ":")))
    else:
        print(summary(record))
        if "gradient_check" in record:
            print(json.dumps(record["gradient_check"]))


if __name__ == "__main__":
    main()
