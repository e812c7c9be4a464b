"""sacreBLEU's BLEU, chrF and TER of a model on any parallel text: the command line and the page's Score tab share
this one implementation (read and check the pairs, translate them in length-sorted batches, score them).

    python -m core.evaluate --src test_2016_flickr.de.gz --ref test_2016_flickr.en.gz --beam 4 --json
    python -m core.evaluate --tsv pairs.tsv             # one file: German <TAB> English on each line

    pairs = read_pairs(src_text, ref_text)              # or read_pairs(tsv_text); BadPairs says what is wrong
    hyps, result = evaluate(translator, *zip(*pairs))   # result: bleu, chrf, ter, their signatures, sentence_chrf

What is wrong with a set is said as a key of the locale tables and its fields (core.words), so that the page says it
in its language and the command line in English: mismatched line counts, an empty line, a line without its tab, a
file that is not text, too many pairs, no pair at all.
"""
import argparse
import gzip
import json
import time

import torch
from sacrebleu.metrics import BLEU, CHRF, TER

from .translate import Translator
from .words import said, say


def score(hyps, refs):
    """Detokenized, cased corpus BLEU and chrF, as sacreBLEU computes them by default (training's validation)."""
    bleu, chrf = BLEU(), CHRF()
    return {"bleu": bleu.corpus_score(hyps, [refs]).score, "chrf": chrf.corpus_score(hyps, [refs]).score,
            "bleu_signature": str(bleu.get_signature())}


def corpus_scores(hyps, refs):
    """Corpus BLEU, chrF and TER with sacreBLEU's defaults, each with its signature."""
    out = {}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF()), ("ter", TER())):
        out[name] = metric.corpus_score(hyps, [refs]).score
        out[f"{name}_signature"] = str(metric.get_signature())
    return out


def sentence_chrf(hyps, refs):
    """Each sentence's own chrF (sacreBLEU's sentence_score), in the order given."""
    chrf = CHRF()
    return [chrf.sentence_score(h, [r]).score for h, r in zip(hyps, refs)]


# ---- reading and checking a set --------------------------------------------------------------------------

class BadPairs(ValueError):
    """What is wrong with a parallel set, as core.words says it (`what`): its message is the English."""

    def __init__(self, what):
        super().__init__(say(what))
        self.what = what


def text_of(data, name="text"):
    """The text of a file's bytes: gunzipped if gzipped, UTF-8 (a byte-order mark dropped); BadPairs for a file
    that is not text (a NUL byte, or not UTF-8)."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            raise BadPairs(said("evaluate.bad.binary", name=name)) from None
    if b"\x00" in data:
        raise BadPairs(said("evaluate.bad.binary", name=name))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadPairs(said("evaluate.bad.binary", name=name)) from None


def lines_of(text):
    """A text's lines, trailing spaces and the empty lines at its end dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def read_pairs(src, ref=None, most=None, longest=None):
    """(German, English) pairs from two texts of as many lines, or from one TSV text (`ref` None: German, a tab,
    English on each line). Checked: the same number of lines, no empty line or side, no line longer than `longest`
    characters, at least one pair and at most `most`. BadPairs says the first thing wrong (its line, counted from
    1); nothing is translated before every line is read."""
    if ref is None:
        src_lines, ref_lines = [], []
        for i, line in enumerate(lines_of(src), 1):
            parts = line.split("\t")
            if len(parts) != 2:
                raise BadPairs(said("evaluate.bad.tsv", line=i, tabs=len(parts) - 1))
            src_lines.append(parts[0].strip())
            ref_lines.append(parts[1].strip())
    else:
        src_lines, ref_lines = lines_of(src), lines_of(ref)
        if len(src_lines) != len(ref_lines):
            raise BadPairs(said("evaluate.bad.count", src=len(src_lines), ref=len(ref_lines)))
    if not src_lines:
        raise BadPairs(said("evaluate.bad.none"))
    if most is not None and len(src_lines) > most:
        raise BadPairs(said("evaluate.bad.many", n=len(src_lines), most=most))
    for i, (s, r) in enumerate(zip(src_lines, ref_lines), 1):
        for side, line in (("evaluate.side.src", s), ("evaluate.side.ref", r)):
            if not line.strip():
                raise BadPairs(said("evaluate.bad.empty", line=i, side=said(side)))
            if longest is not None and len(line) > longest:
                raise BadPairs(said("evaluate.bad.long", line=i, side=said(side), n=len(line), most=longest))
    return list(zip(src_lines, ref_lines))


# ---- translating and scoring -----------------------------------------------------------------------------

def translated_batches(translator, srcs, beam=1, alpha=None, batch_size=64):
    """Translate `srcs` in length-sorted batches of `batch_size`, the batches `Translator.translate_ids` makes for
    the whole list: yields (indices into srcs, output ids of each) after each batch, so that a caller can report
    its progress, or stop, between batches."""
    method = "beam" if beam > 1 else "greedy"
    order = sorted(range(len(srcs)), key=lambda i: len(translator.encode_source(srcs[i])[0]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        yield idx, translator.translate_ids([srcs[i] for i in idx], method=method, beam=beam, alpha=alpha,
                                            batch_size=batch_size)


def report(translator, hyps, refs, seconds, beam=1, alpha=None):
    """The figures of a set translated in `seconds`: corpus BLEU, chrF and TER with their signatures, each
    sentence's chrF, the settings and the speed."""
    return dict(corpus_scores(hyps, refs), sentence_chrf=sentence_chrf(hyps, refs), sentences=len(hyps),
                seconds=round(seconds, 3), beam=beam, alpha=translator.alpha if alpha is None else alpha,
                sentences_per_second=round(len(hyps) / max(seconds, 1e-9), 2))


def evaluate(translator, srcs, refs, beam=1, alpha=None, batch_size=64):
    """Translate `srcs` and score the translations against `refs`: (translations, report)."""
    t0 = time.perf_counter()
    ids = [None] * len(srcs)
    for idx, outs in translated_batches(translator, srcs, beam, alpha, batch_size):
        for i, out in zip(idx, outs):
            ids[i] = out
    hyps = [translator.tokenizer.decode(out) for out in ids]
    return hyps, report(translator, hyps, refs, time.perf_counter() - t0, beam, alpha)


def _read(path):
    """A file's text, gzipped or plain, checked as read_pairs' files are."""
    with open(path, "rb") as f:
        return text_of(f.read(), name=str(path))


def main(argv=None):
    ap = argparse.ArgumentParser(description="BLEU, chrF and TER of the shipped model on parallel files.")
    ap.add_argument("--src", help="German source file (.gz or plain)")
    ap.add_argument("--ref", help="English reference file (.gz or plain)")
    ap.add_argument("--tsv", help="one file of pairs instead: German <TAB> English on each line (.gz or plain)")
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
    if bool(args.tsv) == bool(args.src and args.ref):
        ap.error("give --src and --ref, or --tsv")
    try:
        if args.tsv:
            pairs = read_pairs(_read(args.tsv))
        else:
            pairs = read_pairs(_read(args.src), _read(args.ref))
    except BadPairs as e:
        ap.error(str(e))
    if args.limit:
        pairs = pairs[:args.limit]
    srcs, refs = (list(side) for side in zip(*pairs))
    hyps, result = evaluate(Translator.load(args.model), srcs, refs, args.beam, args.alpha, args.batch_size)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    print(f"BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  TER {result['ter']:.2f}  "
          f"({result['sentences']} sentences, {result['seconds']:.1f} s, beam {args.beam})")
    for name in ("bleu", "chrf", "ter"):
        print(f"  {name}: {result[f'{name}_signature']}")
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "sentence_chrf"}))


if __name__ == "__main__":
    main()
