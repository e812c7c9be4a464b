"""sacreBLEU and chrF of a model on any parallel files (gzipped or plain).

    python -m core.evaluate --src test_2016_flickr.de.gz --ref test_2016_flickr.en.gz --beam 4 --json
"""
import argparse
import json
import time

import torch
from sacrebleu.metrics import BLEU, CHRF

from .data import read_lines
from .translate import Translator


def score(hyps, refs):
    """Detokenized, cased corpus BLEU and chrF, as sacreBLEU computes them by default."""
    bleu, chrf = BLEU(), CHRF()
    return {"bleu": bleu.corpus_score(hyps, [refs]).score, "chrf": chrf.corpus_score(hyps, [refs]).score,
            "bleu_signature": str(bleu.get_signature())}


def evaluate(translator, srcs, refs, beam=1, alpha=None, batch_size=64):
    t0 = time.perf_counter()
    hyps = translator.translate(srcs, beam=beam, alpha=alpha, batch_size=batch_size)
    seconds = time.perf_counter() - t0
    return hyps, dict(score(hyps, refs), sentences=len(srcs), seconds=round(seconds, 3), beam=beam,
                      alpha=translator.alpha if alpha is None else alpha, sentences_per_second=round(len(srcs) / seconds, 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description="BLEU and chrF of the shipped model on parallel files.")
    ap.add_argument("--src", required=True, help="German source file (.gz or plain)")
    ap.add_argument("--ref", required=True, help="English reference file (.gz or plain)")
    ap.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    ap.add_argument("--alpha", type=float, default=None, help="length penalty (beam search; default: the model's)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--model", default=None, help="model directory (default: assets/)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences")
    ap.add_argument("--out", default=None, help="write the translations to this file")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    srcs, refs = read_lines(args.src), read_lines(args.ref)
    if len(srcs) != len(refs):
        ap.error(f"{len(srcs)} source lines but {len(refs)} reference lines")
    if args.limit:
        srcs, refs = srcs[:args.limit], refs[:args.limit]
    hyps, result = evaluate(Translator.load(args.model), srcs, refs, args.beam, args.alpha, args.batch_size)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    print(f"BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  ({result['sentences']} sentences, "
          f"{result['seconds']:.1f} s, beam {args.beam})")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
