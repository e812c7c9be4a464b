"""python -m core.convert SOURCE OUT_DIR | --random-opus-mt-de-en OUT_DIR (core/convert/__init__.py)."""
import argparse
import sys
import time

from . import DTYPES, ConvertError, convert


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m core.convert",
                                 description="Convert a Marian (OPUS-MT) model saved by transformers into this "
                                             "project's format, which the explorer opens.")
    ap.add_argument("source", nargs="?", help="a directory written by save_pretrained, or a Hub id")
    ap.add_argument("out_dir", nargs="?", help="where the converted model goes (new, empty or an earlier conversion)")
    ap.add_argument("--dtype", choices=DTYPES, default="float32",
                    help="how the weights are stored: float32 keeps them exactly (default), float16 halves the files")
    ap.add_argument("--random-opus-mt-de-en", metavar="OUT_DIR", dest="random_out",
                    help="build a randomly initialised model of opus-mt-de-en's shape (no download), with "
                         "SentencePiece models trained on the spot, and convert it into OUT_DIR")
    ap.add_argument("--seed", type=int, default=0, help="the random model's seed")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.random_out:
            if args.source or args.out_dir:
                ap.error("--random-opus-mt-de-en takes only its OUT_DIR")
            from .random_opus import make_random_opus
            summary = make_random_opus(args.random_out, seed=args.seed, dtype=args.dtype)
        else:
            if not (args.source and args.out_dir):
                ap.error("give SOURCE and OUT_DIR (or --random-opus-mt-de-en OUT_DIR)")
            summary = convert(args.source, args.out_dir, args.dtype)
    except ConvertError as e:
        print(f"core.convert: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {summary['out_dir']}: {summary['parameters']:,} parameters in {summary['dtype']}, "
          f"log-probabilities within {summary['max_logp_diff']:.1e} of transformers' "
          f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
