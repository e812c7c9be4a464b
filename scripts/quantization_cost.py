"""What fewer bits a weight cost the shipped model: every matrix quantized whole (as a snapshot far from the
shipped model is, its difference as large as its weights), then val translated greedily in float32 against the
model as it ships. Prints, per format, the share of identical translations and the largest difference of any
attention weight over the first --inspect sentences whose translation did not change (the evidence behind the
8 bits of the time-lapse's snapshots, core/checkpoint.py).

    python scripts/quantization_cost.py [--data-dir DIR] [--limit N] [--inspect 50]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.checkpoint import dequantize, quantize  # noqa: E402
from core.data import default_data_dir, load_split  # noqa: E402
from core.translate import Translator  # noqa: E402

FORMATS = (("8 bits, a scale per row", 8, 0), ("8 bits, a scale per 32", 8, 32), ("4 bits, a scale per 32", 4, 32))


def quantized(state, bits, group):
    """Every matrix of `state` rounded to `bits` with a scale per `group` weights of a row (0: per row)."""
    out = {}
    for k, w in state.items():
        if w.dim() == 2:
            q, scale = quantize(w, bits, group or w.shape[1])
            out[k] = dequantize(q, scale)
        else:
            out[k] = w.clone()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--inspect", type=int, default=50)
    args = ap.parse_args()
    src = [de for de, _ in load_split(args.data_dir or default_data_dir(), "val")][:args.limit or None]
    tr = Translator.load(half_rows=0)
    shipped = {k: v.clone() for k, v in tr.model.state_dict().items()}
    base = tr.translate(src)
    maps = [tr.inspect(s) for s in src[:args.inspect]]
    for name, bits, group in FORMATS:
        tr.model.load_state_dict(quantized(shipped, bits, group))
        same = sum(a == b for a, b in zip(tr.translate(src), base)) / len(src)
        gap = 0.0
        for s, old in zip(src, maps):
            new = tr.inspect(s)
            if new.out_tokens == old.out_tokens:
                gap = max([gap] + [float((getattr(new, k) - getattr(old, k)).abs().max()) for k in ("encoder", "decoder", "cross")])
        print(f"{name:26s} identical {same:6.1%}   largest attention difference {gap:.4f}")
    tr.model.load_state_dict(shipped)


if __name__ == "__main__":
    main()
