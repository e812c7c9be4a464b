"""Score the shipped model on val and test_2016_flickr, greedy and beam 4, into assets/eval.json.

    python scripts/evaluate_shipped.py [--data-dir DIR] [--model DIR]
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.data import ASSETS, default_data_dir, load_split  # noqa: E402
from core.evaluate import evaluate  # noqa: E402
from core.translate import Translator  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--model", default=str(ASSETS))
    ap.add_argument("--alpha", type=float, default=None, help="default: the model's length_penalty")
    args = ap.parse_args()
    tr = Translator.load(args.model)
    rows = []
    for split in ("val", "test_2016_flickr"):
        pairs = load_split(args.data_dir or default_data_dir(), split)
        for beam in (1, 4):
            _, r = evaluate(tr, [p[0] for p in pairs], [p[1] for p in pairs], beam=beam, alpha=args.alpha)
            rows.append(dict(r, split=split))
            print(json.dumps(rows[-1]), flush=True)
    (Path(args.model) / "eval.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
