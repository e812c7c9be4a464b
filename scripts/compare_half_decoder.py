"""Translate test_2016_flickr one sentence at a time with the float16 decoder and with float32 only:
BLEU of each and how many outputs are identical (the check behind docs/performance.md's figures).

    python scripts/compare_half_decoder.py [--data-dir DIR] [--split test_2016_flickr] [--limit N]
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data import default_data_dir, load_split  # noqa: E402
from core.evaluate import score  # noqa: E402
from core.translate import Translator  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--split", default="test_2016_flickr")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    pairs = load_split(args.data_dir or default_data_dir(), args.split)
    pairs = pairs[:args.limit] if args.limit else pairs
    src, ref = [p[0] for p in pairs], [p[1] for p in pairs]
    tr = Translator.load()
    hyps = {}
    for beam in (1, 4):
        for name, half_rows in (("float16 decoder", 4), ("float32", 0)):
            tr.half_rows = half_rows
            t0 = time.perf_counter()
            hyps[name, beam] = tr.translate(src, beam=beam, batch_size=1)
            r = dict(score(hyps[name, beam], ref), decoder=name, beam=beam, split=args.split,
                     seconds=round(time.perf_counter() - t0, 1))
            print(json.dumps(r), flush=True)
        same = sum(a == b for a, b in zip(hyps["float16 decoder", beam], hyps["float32", beam]))
        print(json.dumps({"beam": beam, "identical_outputs": same, "sentences": len(src)}), flush=True)


if __name__ == "__main__":
    main()
