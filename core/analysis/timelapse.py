"""Measures over the shipped model's own training run, one row per snapshot (issue 30's time-lapse).

    python -m core.analysis.timelapse --data DIR [--model assets] [--out assets/timelapse.json] [--threads 2]

For every snapshot that ships beside the model (core/checkpoint.py, `Translator.snapshots()`), from its weights
as stored and over the validation pairs:

- its loss, teacher-forced (nats per target token, no smoothing), and the same loss with the source hidden:
  every German sentence replaced by the empty one (<s> </s>). The gap is what the model takes from the source;
  the hidden-source loss alone is how good a language model of English it is;
- its greedy translations scored with sacreBLEU;
- the head atlas's statistics of every head (core/analysis/heads.py `attention_statistics`: entropy, distance,
  same, previous, next, first, eos, stop; for cross-attention diagonal, monotonic, agreement), which need no head
  switched off.

Each snapshot is one stage of a cache file, so an interrupted run resumes where it stopped. Numbers only, nothing
of the data.
"""
import argparse
import hashlib
import json
import time
from pathlib import Path

import torch

from ..checkpoint import SNAPSHOT_INDEX, SNAPSHOTS
from ..data import ASSETS, BOS, EOS, UNK, BatchLoader, default_data_dir, encode_pairs, load_split
from ..evaluate import score
from ..train import evaluate_loss
from ..translate import Translator
from .heads import Stages, _nested, attention_statistics, model_key, target_batches

MAX_TOKENS = 3000  # padded target positions per batch of the teacher-forced passes


def hidden_source(examples):
    """The pairs with every source replaced by the empty sentence."""
    return [([BOS, EOS], tgt) for _, tgt in examples]


def losses(model, examples, max_tokens=MAX_TOKENS):
    """(loss, loss with the source hidden), per target token, over `examples` (source ids, target ids)."""
    out = []
    for ex in (examples, hidden_source(examples)):
        batches = BatchLoader(ex, target_batches(ex, max_tokens), torch.device("cpu"))
        out.append(evaluate_loss(model, batches)["val_loss"])
    return tuple(out)


def measure(tr, pairs, examples, stop_ids):
    """One snapshot's row: losses, greedy BLEU and per-head statistics (rounded for the JSON)."""
    loss, hidden = losses(tr.model, examples)
    hyps = tr.translate([de for de, _ in pairs])
    stats = attention_statistics(tr.model, examples, target_batches(examples, MAX_TOKENS), stop_ids)
    return {"val_loss": round(loss, 4), "hidden_source_loss": round(hidden, 4),
            "bleu": round(score(hyps, [en for _, en in pairs])["bleu"], 2),
            "heads": {kind: {name: _nested(v) for name, v in d.items()} for kind, d in stats.items()}}


def compute(directory, pairs, cache=None, labels=None):
    """{"snapshots": [row per snapshot, oldest first]} for the model saved in `directory`."""
    base = Translator.load(directory, half_rows=0)
    if not base.snapshots():
        raise SystemExit(f"{directory} ships no snapshots: export them with core.train --snapshot-bits 8")
    tok = base.tokenizer
    examples = encode_pairs(tok, pairs, max_len=base.max_src_tokens)
    stop_ids = [i for i in (tok.piece_to_id(p) for p in (".", "▁.")) if i != UNK]
    index = Path(directory) / SNAPSHOTS / SNAPSHOT_INDEX  # a new export of the snapshots starts afresh
    stages = Stages(cache, {**model_key(directory, pairs, 0), "snapshots": hashlib.sha1(index.read_bytes()).hexdigest()})
    rows = []
    for snap in base.snapshots():
        if labels and snap["label"] not in labels:
            continue
        tr = Translator.load(directory, snapshot=snap["label"], half_rows=0)
        row = stages.run(snap["label"], lambda tr=tr: measure(tr, pairs, examples, stop_ids))
        rows.append({**snap, **row})
    return {"data": {"split": "val", "sentences": len(pairs)}, "seconds": round(stages.seconds(), 1),
            "snapshots": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Measures over the shipped model's training run, per snapshot.")
    ap.add_argument("--data", default=None, help="Multi30k directory (default: ../shared/data/multi30k or cache)")
    ap.add_argument("--model", default=None, help="model directory with its snapshots/ (default: assets/)")
    ap.add_argument("--out", default=None, help="where to write (default: MODEL/timelapse.json)")
    ap.add_argument("--cache", default=str(ASSETS.parent / "runs" / "timelapse" / "stages.json"),
                    help="finished snapshots, so that a rerun resumes ('' for none)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pairs (a quick look; not for shipping)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    directory = Path(args.model or ASSETS)
    pairs = load_split(args.data or default_data_dir(), "val")[:args.limit or None]
    t0 = time.perf_counter()
    result = compute(directory, pairs, cache=args.cache or None)
    out = Path(args.out) if args.out else directory / "timelapse.json"
    out.write_text(json.dumps(result, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(result['snapshots'])} snapshots over {len(pairs)} pairs in {time.perf_counter() - t0:.0f} s; "
          f"wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
